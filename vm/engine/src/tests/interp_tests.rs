//! One test per instruction (and the error paths) of the interpreter, on codes in the IR
//! text form.

use expect_test::expect;

use super::{check_code, code_of};

#[test]
fn empty_program_is_control() {
    check_code(
        r#"
code c0 "test" : any
"#,
        &[],
        expect![[r#"
        value: []
    "#]],
    );
}

#[test]
fn const_load_store_dup_pop() {
    check_code(
        r#"
code c0 "test" : any
  slot 0 port x : any
  slot 1 local y : any
  const 0 5L
  reads x
  0  const       5L
  1  dup
  2  store       y
  3  pop
  4  load        x
"#,
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
        r#"
code c0 "test" : any  @ test:1:1-2
  slot 0 port x : any
  reads x
  0  load        x  @ 1:1-2
"#,
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
        r#"
code c0 "test" : any
  slot 0 port s : any
  const 0 1L
  const 1 2
  const 2 3
  path 0 a b
  path 1 c
  path 2 a b
  path 3 a
  reads s
  0  const       1L
  1  store       s.a.b
  2  const       2
  3  store       s.c
  4  const       3
  5  store       s path#2
  6  load        s.a
"#,
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
        r#"
code c0 "test" : any  @ test:1:1-2
  slot 0 port s : any
  const 0 1L
  path 0 a
  path 1 b c
  reads s
  0  const       1L  @ 1:1-2
  1  store       s.a  @ 1:11-12
  2  load        s.b.c  @ 1:22-23
"#,
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
        r#"
code c0 "test" : any  @ test:1:1-2
  slot 0 port s : any
  const 0 1L
  path 0 a b
  0  const       1L  @ 1:1-2
  1  store       s.a.b  @ 1:11-12
"#,
        &[("s", Some("3"))],
        expect![[r#"
        error: type error: cannot assign to field `a` of ${s}: not a struct (byte 10)
        s: 3
    "#]],
    );
}

/// A field assignment may not build a value deeper than `MAX_VALUE_DEPTH` (200) levels: a
/// list 199 levels deep fits under a field, one 200 levels deep does not.
#[test]
fn store_path_deeper_than_the_value_limit_fails() {
    let code = |depth: usize| {
        let deep = format!("{}1{}", "List (".repeat(depth), ")".repeat(depth));
        format!(
            "code c0 \"test\" : any  @ test:1:1-2\n  slot 0 port s : any\n  const 0 {deep}\n  path 0 a\n  0  const       {deep}  @ 1:1-2\n  1  store       s.a  @ 1:11-12\n"
        )
    };
    check_code(
        &code(199),
        &[("s", None)],
        expect![[r#"
        value: []
        s: Struct [a := List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (List (1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))]
    "#]],
    );
    check_code(
        &code(200),
        &[("s", None)],
        expect![[r#"
        error: cannot assign to ${s.a}: the result would nest deeper than 200 levels (byte 10)
        s: Struct []
    "#]],
    );
}

#[test]
fn fast_paths_on_integers() {
    check_code(
        r#"
code c0 "test" : any
  slot 0 port a : any
  slot 1 port b : any
  slot 2 local lt : any
  slot 3 local d : any
  slot 4 local n : any
  const 0 9223372036854775807L
  const 1 1L
  reads a b
   0  load        a
   1  load        b
   2  lt
   3  store       lt
   4  load        a
   5  load        b
   6  sub
   7  store       d
   8  load        a
   9  neg
  10  store       n
  11  const       9223372036854775807L
  12  const       1L
  13  add
"#,
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
        r#"
code c0 "test" : any  @ test:1:1-2
  const 0 1UL
  const 1 2UL
  0  const       1UL  @ 1:1-2
  1  const       2UL  @ 1:12-13
  2  sub  @ 1:23-24
"#,
        &[],
        expect![[r#"
        error: unsigned subtraction below zero (byte 22)
    "#]],
    );
}

#[test]
fn not_on_bool() {
    check_code(
        r#"
code c0 "test" : any
  const 0 true
  0  const       true
  1  not
"#,
        &[],
        expect![[r#"
        value: false
    "#]],
    );
}

#[test]
fn and_short_circuits() {
    // `a && b` with b unbound: false && _ never looks at b.
    let and = r#"
code c0 "test" : any  @ test:1:1-2
  slot 0 port a : any
  slot 1 port b : any
  reads a b
  0  load        a  @ 1:1-2
  1  jump_if_false_else_pop -> 3  @ 1:9-10
  2  load        b  @ 1:15-16
"#;
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
    let or = r#"
code c0 "test" : any  @ test:1:1-2
  slot 0 port a : any
  slot 1 port b : any
  reads a b
  0  load        a  @ 1:1-2
  1  jump_if_true_else_pop -> 3  @ 1:9-10
  2  load        b  @ 1:15-16
"#;
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
        r#"
code c0 "test" : any  @ test:1:1-2
  const 0 1L
  const 1 true
  0  const       1L  @ 1:1-2
  1  jump_if_false_else_pop -> 3  @ 1:11-12
  2  const       true  @ 1:17-18
"#,
        &[],
        expect![[r#"
        error: an operand of && is not a bool (byte 10)
    "#]],
    );
}

#[test]
fn jump_skips() {
    check_code(
        r#"
code c0 "test" : any
  const 0 1L
  const 1 2L
  0  const       1L
  1  jump        -> 3
  2  const       2L
"#,
        &[],
        expect![[r#"
        value: 1L
    "#]],
    );
}

#[test]
fn make_shared_wraps() {
    check_code(
        r#"
code c0 "test" : any
  const 0 "x"
  const 1 "cleanup"
  0  const       "x"
  1  make_shared shared_cleanup
"#,
        &[],
        expect![[r#"
        value: shared_cleanup ("x")
    "#]],
    );
}

#[test]
fn stack_underflow_is_an_error_not_a_panic() {
    check_code(
        r#"
code c0 "test" : any  @ test:1:1-2
  0  pop  @ 1:1-2
"#,
        &[],
        expect![[r#"
        error: bad bytecode: stack underflow at 0 (byte 0)
    "#]],
    );
    check_code(
        r#"
code c0 "test" : any  @ test:1:1-2
  const 0 1L
  0  const       1L  @ 1:1-2
  1  add  @ 1:11-12
"#,
        &[],
        expect![[r#"
        error: bad bytecode: stack underflow at 1 (byte 10)
    "#]],
    );
}

#[test]
fn short_frame_is_an_error() {
    let code = code_of(
        r#"
code c0 "c" : any
  slot 0 port x : long
  reads x
  0  load        x
"#,
    );
    let e = crate::eval(&code, &mut []).unwrap_err();
    expect![[r#"bad bytecode: c needs 1 slots, the frame has 0"#]].assert_eq(&e.to_string());
}

#[test]
fn condition_must_be_bool() {
    let code = code_of(
        r#"
code c0 "condition of t" : any
  0  const       1L
"#,
    );
    let e = Interpreter::new().run_bool(&code, &mut []).unwrap_err();
    expect![[r#"the value of condition of t is not a bool"#]].assert_eq(&e.to_string());
    // An empty program's value is control, not a bool; the stack is left empty either way.
    let empty = code_of(
        r#"
code c0 "condition of u" : any
"#,
    );
    let mut interp = Interpreter::new();
    let e = interp.run_bool(&empty, &mut []).unwrap_err();
    expect![[r#"the value of condition of u is not a bool"#]].assert_eq(&e.to_string());
    let yes = code_of(
        r#"
code c0 "condition of v" : any
  0  const       true
"#,
    );
    assert!(interp.run_bool(&yes, &mut []).unwrap());
}

/// `run_effect` leaves the same frame as `run` and reports the same errors.
#[test]
fn run_effect_matches_run() {
    let code = code_of(
        r#"
code c0 "e" : any
  slot 0 port x : long
  reads x
  0  load        x
  1  const       2L
  2  add
  3  dup
  4  store       x
"#,
    );
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
        r#"
code c0 "test" : any
  slot 0 port l : any
  const 0 1L
  const 1 2L
  reads l
  0  load        l
  1  const       1L
  2  call        stack_push
  3  const       2L
  4  call        stack_push
  5  dup
  6  store       l
  7  call        stack_size
"#,
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
        r#"
code c0 "test" : any
  const 0 "a"
  const 1 "b"
  const 2 7
  const 3 2
  0  const       "a"
  1  const       "b"
  2  add
  3  const       7
  4  const       2
  5  mod
  6  pop
"#,
        &[],
        expect![[r#"
        value: "ab"
    "#]],
    );
    check_code(
        r#"
code c0 "test" : any  @ test:1:1-2
  const 0 7
  const 1 0
  0  const       7  @ 1:1-2
  1  const       0  @ 1:10-11
  2  int_div  @ 1:19-20
"#,
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
