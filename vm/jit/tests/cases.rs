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
fn integer_casts_wrap_like_the_interpreter() {
    use pnet_stdlib::Builtin::{ToInt, ToLong, ToUInt, ToULong};
    let ints = [
        Value::Int(-1),
        Value::Int(i32::MIN),
        Value::Int(i32::MAX),
        Value::UInt(4127196168),
        Value::UInt(u32::MAX),
        Value::Long(-2147483649),
        Value::Long(i64::MIN),
        Value::Long(4294967296),
        Value::ULong(9234292475781033193),
        Value::ULong(u64::MAX),
    ];
    for v in ints {
        let ty = match v {
            Value::Int(_) => Type::Int,
            Value::UInt(_) => Type::UInt,
            Value::Long(_) => Type::Long,
            _ => Type::ULong,
        };
        for f in [ToInt, ToLong, ToUInt, ToULong] {
            let c = code(
                vec![Instr::Load(0), Instr::Call(f)],
                vec![],
                vec![("a", ty.clone())],
            );
            let (r, _) = both(&c, &[Some(v.clone())]);
            let want = pnet_stdlib::builtins::cast(f, &v).unwrap();
            assert_eq!(r.unwrap(), want, "{f:?} {v}");
        }
    }
    // The spec's examples.
    let one = |f, v: Value, ty| {
        let c = code(
            vec![Instr::Load(0), Instr::Call(f)],
            vec![],
            vec![("a", ty)],
        );
        both(&c, &[Some(v)]).0.unwrap()
    };
    assert_eq!(
        one(ToInt, Value::UInt(4127196168), Type::UInt),
        Value::Int(-167771128)
    );
    assert_eq!(
        one(ToUInt, Value::Int(-1), Type::Int),
        Value::UInt(4294967295)
    );
    assert_eq!(
        one(ToLong, Value::ULong(9234292475781033193), Type::ULong),
        Value::Long(-9212451597928518423)
    );
    // Float-to-integer casts out of range stay errors.
    let c = code(
        vec![Instr::Load(0), Instr::Call(ToUInt)],
        vec![],
        vec![("d", Type::Double)],
    );
    let (r, _) = both(&c, &[Some(Value::Double(-1.0))]);
    assert_eq!(
        r.unwrap_err().kind,
        RunErrorKind::Eval(EvalError::OutOfRange("uint(-1.0)".into()))
    );
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

/// The countdown's expression and condition, `${n} := ${n} - 1L` and `${n} :gt: 0L`, with
/// direct frame access: the local goes back into its slot, whatever the slot held before (a
/// long, nothing); a slot of another type (a scalar, a string) falls back with the frame
/// unchanged.
#[test]
fn direct_code_reads_and_writes_the_frame_itself() {
    let step = code(
        vec![
            Instr::Load(0),
            Instr::Const(0),
            Instr::Binary(BinOp::Sub, OpTy::Long),
            Instr::Store(0),
        ],
        vec![Value::Long(1)],
        vec![("n", Type::Long)],
    );
    let cond = code(
        vec![
            Instr::Load(0),
            Instr::Const(0),
            Instr::Binary(BinOp::Gt, OpTy::Long),
        ],
        vec![Value::Long(0)],
        vec![("n", Type::Long)],
    );
    let mut jit = Jit::new().unwrap();
    assert!(jit.direct());
    let ids = jit.compile(&[&step, &cond]);
    let (step_id, cond_id) = (ids[0].unwrap(), ids[1].unwrap());
    assert!(jit.is_direct(step_id) && jit.is_direct(cond_id));
    let mut buf = Vec::new();
    let mut f = vec![Some(Value::Long(3)), Some(Value::string("untouched"))];
    let mut steps = 0;
    while jit.run_bool(cond_id, &cond, &mut f, &mut buf) == Some(Ok(true)) {
        assert_eq!(
            jit.run_effect(step_id, &step, &mut f, &mut buf),
            Some(Ok(()))
        );
        steps += 1;
    }
    assert_eq!(steps, 3);
    assert_eq!(
        f,
        vec![Some(Value::Long(0)), Some(Value::string("untouched"))]
    );
    // `${n}` is read before it is assigned: an empty slot is an unbound local, and nothing is
    // written.
    let mut f = vec![None];
    let r = jit
        .run(step_id, &step, &mut f, &mut buf)
        .expect("no fallback");
    assert_eq!(r.unwrap_err().kind, RunErrorKind::Unbound("n".into()));
    assert_eq!(f, vec![None]);
    for other in [Value::Int(3), Value::string("x"), Value::Double(1.0)] {
        let f0 = vec![Some(other)];
        let mut f = f0.clone();
        assert!(jit.run(step_id, &step, &mut f, &mut buf).is_none());
        assert!(jit.run_bool(cond_id, &cond, &mut f, &mut buf).is_none());
        assert_eq!(f, f0);
    }
    // A short frame falls back too.
    assert!(jit.run(step_id, &step, &mut [], &mut buf).is_none());
}

/// A local that starts empty is assigned (written into the `None` slot), locals of every
/// native type round-trip through their slots, and a failing run still writes back what it
/// assigned before the failure (as the interpreter does).
#[test]
fn direct_code_writes_every_scalar_type() {
    let cases = [
        (Type::Bool, OpTy::Bool, Value::Bool(true)),
        (Type::Int, OpTy::Int, Value::Int(-7)),
        (Type::Long, OpTy::Long, Value::Long(i64::MIN)),
        (Type::UInt, OpTy::UInt, Value::UInt(u32::MAX)),
        (Type::ULong, OpTy::ULong, Value::ULong(u64::MAX - 3)),
        (Type::Float, OpTy::Float, Value::Float(-2.5)),
        (Type::Double, OpTy::Double, Value::Double(1e300)),
        (Type::Char, OpTy::Char, Value::Char(-5)),
    ];
    for (ty, _, v) in &cases {
        // ${z} := ${a}; ${z}        (a: slot 0, z: slot 1)
        let c = code(
            vec![Instr::Load(0), Instr::Store(1), Instr::Load(1)],
            vec![],
            vec![("a", ty.clone()), ("z", ty.clone())],
        );
        let (r, f) = both(&c, &[Some(v.clone()), None]);
        assert_eq!(r.unwrap(), *v);
        assert_eq!(f, vec![Some(v.clone()), Some(v.clone())]);
    }
    // ${z} := 5L; ${a} div 0L: z is written back although the division fails.
    let c = code(
        vec![
            Instr::Const(0),
            Instr::Store(1),
            Instr::Load(0),
            Instr::Const(1),
            Instr::Binary(BinOp::IntDiv, OpTy::Long),
        ],
        vec![Value::Long(5), Value::Long(0)],
        vec![("a", Type::Long), ("z", Type::Long)],
    );
    let (r, f) = both(&c, &[Some(Value::Long(9)), None]);
    assert_eq!(r.unwrap_err().span, Some(span(4)));
    assert_eq!(f[1], Some(Value::Long(5)));
}

/// Division by a constant compiles to no division instruction (Cranelift turns it into
/// shifts and a multiplication by the divisor's "magic" reciprocal), for every integer type;
/// the same code with the divisor in a slot does divide.
#[test]
fn constant_divisors_compile_to_multiplications() {
    let mut jit = Jit::new().unwrap();
    for (ty, op_ty, d) in [
        (Type::Long, OpTy::Long, Value::Long(7)),
        (Type::Long, OpTy::Long, Value::Long(-1000)),
        (Type::Long, OpTy::Long, Value::Long(i64::MIN)),
        (Type::Int, OpTy::Int, Value::Int(1000)),
        (Type::UInt, OpTy::UInt, Value::UInt(7)),
        (Type::ULong, OpTy::ULong, Value::ULong(1000)),
        (Type::ULong, OpTy::ULong, Value::ULong(u64::MAX)),
    ] {
        for op in [BinOp::IntDiv, BinOp::Mod] {
            let c = code(
                vec![Instr::Load(0), Instr::Const(0), Instr::Binary(op, op_ty)],
                vec![d.clone()],
                vec![("a", ty.clone())],
            );
            let asm = jit.machine_code(&c).expect("compiled");
            assert!(!divides(&asm), "{op:?} by {d}:\n{asm}");
        }
    }
    let c = code(
        vec![
            Instr::Load(0),
            Instr::Load(1),
            Instr::Binary(BinOp::IntDiv, OpTy::Long),
        ],
        vec![],
        longs(),
    );
    let asm = jit.machine_code(&c).expect("compiled");
    assert!(divides(&asm), "{asm}");
}

/// Whether a machine code listing has a division instruction.
fn divides(asm: &str) -> bool {
    asm.lines().any(|l| {
        let l = l.trim();
        [
            "div",
            "idiv",
            "sdiv",
            "udiv",
            "checked_srem",
            "checked_sdiv",
        ]
        .iter()
        .any(|i| l.starts_with(i))
    })
}

#[test]
fn floor_ceil_and_round_leave_integers_unchanged() {
    use pnet_stdlib::Builtin::{Ceil, Floor, Round};
    for (ty, v) in [
        (Type::Int, Value::Int(-7)),
        (Type::Long, Value::Long(i64::MIN)),
        (Type::UInt, Value::UInt(u32::MAX)),
        (Type::ULong, Value::ULong(u64::MAX)),
    ] {
        for f in [Floor, Ceil, Round] {
            let c = code(
                vec![Instr::Load(0), Instr::Call(f)],
                vec![],
                vec![("a", ty.clone())],
            );
            let (r, _) = both(&c, &[Some(v.clone())]);
            assert_eq!(r.unwrap(), v, "{f:?} ({v})");
        }
    }
}

#[test]
fn bitsets_with_elements_up_to_the_largest_unsigned_long_agree() {
    use pnet_stdlib::Bitset;
    use pnet_stdlib::Builtin::{
        BitsetAnd, BitsetCount, BitsetDelete, BitsetFromHex, BitsetInsert, BitsetIsElement,
        BitsetOr, BitsetToHex, BitsetXor,
    };
    let slots = || vec![("bs", Type::Bitset), ("e", Type::ULong), ("f", Type::ULong)];
    let edges = [0, 63, 64, (1u64 << 32) - 1, 1 << 63, u64::MAX];
    let start = Bitset::from_elements([1, 64 * 70_000, u64::MAX - 64]);
    // bs := bitset_insert (bitset_insert (bs, e), f); bitset_count (bs)
    let insert = code(
        vec![
            Instr::Load(0),
            Instr::Load(1),
            Instr::Call(BitsetInsert),
            Instr::Load(2),
            Instr::Call(BitsetInsert),
            Instr::Store(0),
            Instr::Load(0),
            Instr::Call(BitsetCount),
        ],
        vec![],
        slots(),
    );
    // bitset_tohex (bitset_delete (bitset_insert (bs, e), f))
    let hex = code(
        vec![
            Instr::Load(0),
            Instr::Load(1),
            Instr::Call(BitsetInsert),
            Instr::Load(2),
            Instr::Call(BitsetDelete),
            Instr::Call(BitsetToHex),
        ],
        vec![],
        slots(),
    );
    // bitset_is_element (bitset_xor (bitset_fromhex (bitset_tohex (bs)), bitset_or (bs,
    // bitset_and (bs, bs))), e)
    let ops = code(
        vec![
            Instr::Load(0),
            Instr::Call(BitsetToHex),
            Instr::Call(BitsetFromHex),
            Instr::Load(0),
            Instr::Load(0),
            Instr::Load(0),
            Instr::Call(BitsetAnd),
            Instr::Call(BitsetOr),
            Instr::Call(BitsetXor),
            Instr::Load(1),
            Instr::Call(BitsetIsElement),
        ],
        vec![],
        slots(),
    );
    for &e in &edges {
        for &f in &edges {
            let frame = [
                Some(Value::Bitset(start.clone())),
                Some(Value::ULong(e)),
                Some(Value::ULong(f)),
            ];
            let (r, after) = both(&insert, &frame);
            let elements: std::collections::BTreeSet<u64> =
                start.elements().chain([e, f]).collect();
            assert_eq!(r.unwrap(), Value::ULong(elements.len() as u64), "{e} {f}");
            let Some(Value::Bitset(bs)) = &after[0] else {
                panic!("{after:?}")
            };
            assert!(bs.contains(e) && bs.contains(f), "{e} {f}");
            // Memory stays small: a handful of nonzero words, whatever the elements.
            assert!(bs.nonzero_words().len() <= 5);
            let (r, _) = both(&hex, &frame);
            let Ok(Value::String(h)) = r else {
                panic!("{r:?}")
            };
            assert!(h.len() < 200, "{h}");
            let (r, _) = both(&ops, &frame);
            assert_eq!(r.unwrap(), Value::Bool(false), "{e} {f}");
        }
    }
}
