//! One test per instruction (and the error paths) of the interpreter.

use expect_test::expect;

use super::check_code;

#[test]
fn empty_program_is_control() {
    check_code(
        "",
        &[],
        expect![[r#"
        value: []
    "#]],
    );
}

#[test]
fn const_load_store_dup_pop() {
    check_code(
        "const 5L; dup; store y; pop; load x",
        &[("x", Some("1L"))],
        expect![[r#"
            value: 1L
            x: 1L
            y: 5L
        "#]],
    );
}

#[test]
fn load_of_empty_slot_is_an_error() {
    check_code(
        "load x",
        &[("x", None)],
        expect![[r#"
        error: ${x} has no value (byte 0)
        x: -
    "#]],
    );
}

#[test]
fn store_path_creates_root_and_fields() {
    check_code(
        "const 1L; store s.a.b; const 2; store s.c; const 3; store s.a.b; load s.a",
        &[("s", None)],
        expect![[r#"
            value: Struct [b := 3]
            s: Struct [a := Struct [b := 3], c := 2]
        "#]],
    );
}

#[test]
fn load_path_of_missing_field() {
    check_code(
        "const 1L; store s.a; load s.b.c",
        &[("s", None)],
        expect![[r#"
        error: ${s} has no field `b` (byte 21)
        s: Struct [a := 1L]
    "#]],
    );
}

#[test]
fn store_path_through_a_scalar_fails() {
    check_code(
        "const 1L; store s.a.b",
        &[("s", Some("3"))],
        expect![[r#"
        error: type error: cannot assign to field `a` of ${s}: not a struct (byte 10)
        s: 3
    "#]],
    );
}

#[test]
fn fast_paths_on_integers() {
    check_code(
        "load a; load b; lt; store lt; load a; load b; sub; store d; load a; neg; store n; const 9223372036854775807L; const 1L; add",
        &[("a", Some("3L")), ("b", Some("5L"))],
        expect![[r#"
            value: -9223372036854775808L
            a: 3L
            b: 5L
            lt: true
            d: -2L
            n: -3L
        "#]],
    );
}

#[test]
fn unsigned_subtraction_below_zero() {
    check_code(
        "const 1UL; const 2UL; sub",
        &[],
        expect![[r#"
        error: unsigned subtraction below zero (byte 22)
    "#]],
    );
}

#[test]
fn not_on_bool() {
    check_code(
        "const true; not",
        &[],
        expect![[r#"
        value: false
    "#]],
    );
}

#[test]
fn and_short_circuits() {
    // `a && b` with b unbound: false && _ never looks at b.
    let and = "load a; jf 3; load b";
    check_code(
        and,
        &[("a", Some("false")), ("b", None)],
        expect![[r#"
        value: false
        a: false
        b: -
    "#]],
    );
    check_code(
        and,
        &[("a", Some("true")), ("b", Some("false"))],
        expect![[r#"
        value: false
        a: true
        b: false
    "#]],
    );
    check_code(
        and,
        &[("a", Some("true")), ("b", None)],
        expect![[r#"
        error: ${b} has no value (byte 14)
        a: true
        b: -
    "#]],
    );
}

#[test]
fn or_short_circuits() {
    let or = "load a; jt 3; load b";
    check_code(
        or,
        &[("a", Some("true")), ("b", None)],
        expect![[r#"
        value: true
        a: true
        b: -
    "#]],
    );
    check_code(
        or,
        &[("a", Some("false")), ("b", Some("true"))],
        expect![[r#"
        value: true
        a: false
        b: true
    "#]],
    );
}

#[test]
fn short_circuit_operand_must_be_bool() {
    check_code(
        "const 1L; jf 3; const true",
        &[],
        expect![[r#"
        error: an operand of && is not a bool (byte 10)
    "#]],
    );
}

#[test]
fn jump_skips() {
    check_code(
        "const 1L; jmp 3; const 2L",
        &[],
        expect![[r#"
        value: 1L
    "#]],
    );
}

#[test]
fn make_shared_wraps() {
    check_code(
        "const \"x\"; shared cleanup",
        &[],
        expect![[r#"
        value: shared_cleanup ("x")
    "#]],
    );
}

#[test]
fn stack_underflow_is_an_error_not_a_panic() {
    check_code(
        "pop",
        &[],
        expect![[r#"
        error: bad bytecode: stack underflow at 0 (byte 0)
    "#]],
    );
    check_code(
        "const 1L; add",
        &[],
        expect![[r#"
        error: bad bytecode: stack underflow at 1 (byte 10)
    "#]],
    );
}

#[test]
fn short_frame_is_an_error() {
    let code = super::asm(
        "c",
        "load x",
        &[("x".to_string(), pnet_stdlib::Type::Long)],
        0,
    );
    let e = crate::eval(&code, &mut []).unwrap_err();
    expect![[r#"bad bytecode: c needs 1 slots, the frame has 0"#]].assert_eq(&e.to_string());
}

#[test]
fn condition_must_be_bool() {
    let code = super::asm("condition of t", "const 1L", &[], 0);
    let e = Interpreter::new().run_bool(&code, &mut []).unwrap_err();
    expect![[r#"the value of condition of t is not a bool"#]].assert_eq(&e.to_string());
    // An empty program's value is control, not a bool; the stack is left empty either way.
    let empty = super::asm("condition of u", "", &[], 0);
    let mut interp = Interpreter::new();
    let e = interp.run_bool(&empty, &mut []).unwrap_err();
    expect![[r#"the value of condition of u is not a bool"#]].assert_eq(&e.to_string());
    let yes = super::asm("condition of v", "const true", &[], 0);
    assert!(interp.run_bool(&yes, &mut []).unwrap());
}

/// `run_effect` leaves the same frame as `run` and reports the same errors.
#[test]
fn run_effect_matches_run() {
    let slots = [("x".to_string(), pnet_stdlib::Type::Long)];
    let code = super::asm("e", "load x; const 2L; add; dup; store x", &slots, 0);
    let mut a = vec![Some(pnet_stdlib::Value::Long(40))];
    let mut b = a.clone();
    let mut interp = Interpreter::new();
    interp.run_effect(&code, &mut a).unwrap();
    let v = interp.run(&code, &mut b).unwrap();
    assert_eq!(a, vec![Some(pnet_stdlib::Value::Long(42))]);
    assert_eq!(a, b);
    assert_eq!(v, pnet_stdlib::Value::Long(42));
    let mut unbound = vec![None];
    let e1 = interp.run_effect(&code, &mut unbound).unwrap_err();
    let e2 = interp.run(&code, &mut unbound).unwrap_err();
    assert_eq!(e1, e2);
    expect![[r#"${x} has no value"#]].assert_eq(&e1.to_string());
}

use crate::Interpreter;

#[test]
fn call_takes_its_arity_from_the_stack() {
    check_code(
        "load l; const 1L; call stack_push; const 2L; call stack_push; dup; store l; call stack_size",
        &[("l", Some("List()"))],
        expect![[r#"
            value: 2UL
            l: List (1L, 2L)
        "#]],
    );
}

#[test]
fn generic_operators_fall_back_to_the_stdlib() {
    check_code(
        "const \"a\"; const \"b\"; add; const 7; const 2; mod; pop",
        &[],
        expect![[r#"
        value: "ab"
    "#]],
    );
    check_code(
        "const 7; const 0; idiv",
        &[],
        expect![[r#"
        error: division by zero (byte 18)
    "#]],
    );
}

mod fast_paths_agree_with_the_stdlib {
    use pnet_bundle::{Code, Instr, OpTy};
    use pnet_stdlib::ops::eval_binary;
    use pnet_stdlib::{BinOp, Type, Value};
    use proptest::prelude::*;

    const OPS: [BinOp; 9] = [
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
    ];

    fn agree(op: BinOp, a: Value, b: Value) {
        let code = Code {
            name: "op".into(),
            instrs: vec![
                Instr::Const(0),
                Instr::Const(1),
                Instr::Binary(op, OpTy::Dyn),
            ],
            spans: vec![Default::default(); 3],
            consts: vec![a.clone(), b.clone()],
            paths: Vec::new(),
            slots: Vec::new(),
            reads: Vec::new(),
            result: Type::Any,
            span: Default::default(),
        };
        let fast = crate::eval(&code, &mut []).map_err(|e| e.kind.clone());
        let slow = eval_binary(op, &a, &b).map_err(crate::RunErrorKind::Eval);
        assert_eq!(
            format!("{fast:?}"),
            format!("{slow:?}"),
            "{op:?} {a:?} {b:?}"
        );
    }

    proptest! {
        #[test]
        fn on_every_integer_type(op in 0..OPS.len(), a: i64, b: i64, small: bool) {
            let (a, b) = if small { (a % 4, b % 4) } else { (a, b) };
            let op = OPS[op];
            agree(op, Value::Long(a), Value::Long(b));
            agree(op, Value::Int(a as i32), Value::Int(b as i32));
            agree(op, Value::ULong(a as u64), Value::ULong(b as u64));
            agree(op, Value::UInt(a as u32), Value::UInt(b as u32));
        }
    }
}
