//! Hand-written cases: exact errors and spans, fallbacks, struct fields, locals.

use pnet_bundle::{Code, Instr, OpTy, Slot, SlotKind, SourceFileId, SourceSpan};
use pnet_jit::Jit;
use pnet_stdlib::{BinOp, EvalError, StructType, Type, Value};
use pnet_vm::{Interpreter, RunErrorKind};
use std::sync::Arc;

fn span(i: u32) -> SourceSpan {
    SourceSpan {
        file: SourceFileId(0),
        start: 10 * i,
        end: 10 * i + 5,
    }
}

fn code(instrs: Vec<Instr>, consts: Vec<Value>, slots: Vec<(&str, Type)>) -> Code {
    Code {
        name: "expression of t".into(),
        spans: (0..instrs.len() as u32).map(span).collect(),
        instrs,
        consts,
        paths: vec![vec!["x".into()], vec!["y".into()]],
        slots: slots
            .into_iter()
            .map(|(n, ty)| Slot {
                name: n.into(),
                kind: SlotKind::Port,
                ty,
            })
            .collect(),
        reads: Vec::new(),
        result: Type::Any,
        span: span(99),
    }
}

/// Runs through the JIT (which must not fall back) and the interpreter; they must agree.
fn both(
    code: &Code,
    frame: &[Option<Value>],
) -> (Result<Value, pnet_vm::RunError>, Vec<Option<Value>>) {
    let mut jit = Jit::new().unwrap();
    let id = jit.compile(&[code])[0].expect("compiled");
    let mut fi = frame.to_vec();
    let want = Interpreter::new().run(code, &mut fi);
    let mut fj = frame.to_vec();
    let got = jit
        .run(id, code, &mut fj, &mut Vec::new())
        .expect("no fallback");
    assert_eq!(got, want);
    assert_eq!(fj, fi);
    (got, fj)
}

fn longs() -> Vec<(&'static str, Type)> {
    vec![("a", Type::Long), ("b", Type::Long)]
}

#[test]
fn division_by_zero_has_the_span_of_the_division() {
    let c = code(
        vec![
            Instr::Load(0),
            Instr::Load(1),
            Instr::Binary(BinOp::IntDiv, OpTy::Long),
        ],
        vec![],
        longs(),
    );
    let (r, _) = both(&c, &[Some(Value::Long(5)), Some(Value::Long(0))]);
    let e = r.unwrap_err();
    assert_eq!(e.kind, RunErrorKind::Eval(EvalError::DivisionByZero));
    assert_eq!(e.span, Some(span(2)));
    let (r, _) = both(&c, &[Some(Value::Long(i64::MIN)), Some(Value::Long(-1))]);
    assert_eq!(r.unwrap(), Value::Long(i64::MIN));
}

#[test]
fn unsigned_underflow_and_casts_fail_like_the_interpreter() {
    let c = code(
        vec![
            Instr::Load(0),
            Instr::Load(1),
            Instr::Binary(BinOp::Sub, OpTy::UInt),
        ],
        vec![],
        vec![("a", Type::UInt), ("b", Type::UInt)],
    );
    let (r, _) = both(&c, &[Some(Value::UInt(1)), Some(Value::UInt(2))]);
    assert_eq!(
        r.unwrap_err().kind,
        RunErrorKind::Eval(EvalError::UnsignedUnderflow)
    );
    let c = code(
        vec![Instr::Load(0), Instr::Call(pnet_stdlib::Builtin::ToInt)],
        vec![],
        vec![("d", Type::Double)],
    );
    let (r, _) = both(&c, &[Some(Value::Double(3e9))]);
    assert_eq!(
        r.unwrap_err().kind,
        RunErrorKind::Eval(EvalError::OutOfRange("int(3000000000.0)".into()))
    );
    let (r, _) = both(&c, &[Some(Value::Double(-2147483648.9))]);
    assert_eq!(r.unwrap(), Value::Int(i32::MIN));
}

#[test]
fn a_mistyped_or_empty_input_falls_back_without_changes() {
    let c = code(
        vec![
            Instr::Load(0),
            Instr::Load(1),
            Instr::Binary(BinOp::Lt, OpTy::Long),
        ],
        vec![],
        longs(),
    );
    let mut jit = Jit::new().unwrap();
    let id = jit.compile(&[&c])[0].unwrap();
    for f in [
        vec![Some(Value::Int(1)), Some(Value::Long(2))],
        vec![None, Some(Value::Long(2))],
    ] {
        let mut g = f.clone();
        assert!(jit.run(id, &c, &mut g, &mut Vec::new()).is_none());
        assert_eq!(g, f);
    }
}

#[test]
fn locals_are_written_back_and_unbound_locals_fail() {
    // ${z} := ${a} + 1L; ${z} * ${z}     (z is local slot 2)
    let mut slots = longs();
    slots.push(("z", Type::Long));
    let c = code(
        vec![
            Instr::Load(0),
            Instr::Const(0),
            Instr::Binary(BinOp::Add, OpTy::Long),
            Instr::Store(2),
            Instr::Load(2),
            Instr::Load(2),
            Instr::Binary(BinOp::Mul, OpTy::Long),
        ],
        vec![Value::Long(1)],
        slots.clone(),
    );
    let (r, f) = both(&c, &[Some(Value::Long(4)), Some(Value::Long(0)), None]);
    assert_eq!(r.unwrap(), Value::Long(25));
    assert_eq!(f[2], Some(Value::Long(5)));
    let c = code(vec![Instr::Load(2)], vec![], slots);
    let c = Code {
        instrs: vec![Instr::Load(2), Instr::Const(0), Instr::Store(2)],
        spans: (0..3).map(span).collect(),
        consts: vec![Value::Long(1)],
        ..c
    };
    let (r, _) = both(&c, &[Some(Value::Long(4)), Some(Value::Long(0)), None]);
    let e = r.unwrap_err();
    assert_eq!(e.kind, RunErrorKind::Unbound("z".into()));
    assert_eq!(e.span, Some(span(0)));
}

#[test]
fn struct_fields_are_loaded_and_assigned_in_registers() {
    let point = Type::Struct(Arc::new(StructType {
        name: Arc::from("p"),
        fields: vec![(Arc::from("x"), Type::ULong), (Arc::from("y"), Type::ULong)],
    }));
    // ${p.x} := ${p.x} div 2UL; ${p.y} := ${p.y} + 1UL
    let c = code(
        vec![
            Instr::LoadPath(0, 0),
            Instr::Const(0),
            Instr::Binary(BinOp::IntDiv, OpTy::ULong),
            Instr::StorePath(0, 0),
            Instr::LoadPath(0, 1),
            Instr::Const(1),
            Instr::Binary(BinOp::Add, OpTy::ULong),
            Instr::Dup,
            Instr::StorePath(0, 1),
        ],
        vec![Value::ULong(2), Value::ULong(1)],
        vec![("p", point)],
    );
    let mut jit = Jit::new().unwrap();
    let id = jit.compile(&[&c])[0].unwrap();
    let plan = jit.plan(id).unwrap();
    assert_eq!(plan.fields.len(), 2);
    assert_eq!(plan.dyn_ops, 0, "no calls out");
    let p = |x, y| {
        Some(Value::Struct(vec![
            (Arc::from("x"), Value::ULong(x)),
            (Arc::from("y"), Value::ULong(y)),
        ]))
    };
    let (r, f) = both(&c, &[p(27, 4)]);
    assert_eq!(r.unwrap(), Value::ULong(5));
    assert_eq!(f[0], p(13, 5));
}
