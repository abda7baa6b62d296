//! Hand-written cases: exact errors and spans, fallbacks, struct fields, locals. The codes are
//! written in the IR text form (`pnet_bundle::text`): a `code c0` block, read in a bundle of
//! one function whose source file `t` has one line (so `@ 1:21-26` is bytes 20..25).

use pnet_bundle::{Code, SourceFileId, SourceSpan};
use pnet_engine::{Interpreter, RunErrorKind};
use pnet_jit::Jit;
use pnet_stdlib::{EvalError, Type, Value};
use std::sync::Arc;

/// The location `@ 1:{10i+1}-{10i+6}`: bytes `10i..10i+5` of the file.
fn span(i: u32) -> SourceSpan {
    SourceSpan {
        file: SourceFileId(0),
        start: 10 * i,
        end: 10 * i + 5,
    }
}

/// Reads `code c0 "expression of t" : any` followed by `body` (slots and instructions);
/// `struct` lines at the start of `body` go to the bundle's struct table.
fn code(body: &str) -> Code {
    let (structs, body): (Vec<&str>, Vec<&str>) =
        body.lines().partition(|l| l.starts_with("struct "));
    let text = format!(
        "bundle root f0 t\nfile 0 \"t\" lines 0\n{}\nfunction f0 t\n  expression c0\n\n\
         code c0 \"expression of t\" : any\n{}\n",
        structs.join("\n"),
        body.join("\n")
    );
    let mut bundle = pnet_bundle::text::parse(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    bundle.codes.swap_remove(0)
}

/// Runs through the JIT (which must not fall back) and the interpreter; they must agree.
fn both(
    code: &Code,
    frame: &[Option<Value>],
) -> (Result<Value, pnet_engine::RunError>, Vec<Option<Value>>) {
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

/// `${a} OP ${b}` over two longs.
fn longs(op: &str) -> Code {
    code(&format!(
        "  slot 0 port a : long
  slot 1 port b : long
  0  load a
  1  load b
  2  {op}.long  @ 1:21-26"
    ))
}

/// `FUNCTION (${a})` over one slot of type `ty`.
fn call(f: pnet_stdlib::Builtin, ty: &Type) -> Code {
    code(&format!(
        "  slot 0 port a : {ty}\n  0  load a\n  1  call {}",
        f.name()
    ))
}

#[test]
fn division_by_zero_has_the_span_of_the_division() {
    let c = longs("int_div");
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
        "  slot 0 port a : unsigned int
  slot 1 port b : unsigned int
  0  load a
  1  load b
  2  sub.uint",
    );
    let (r, _) = both(&c, &[Some(Value::UInt(1)), Some(Value::UInt(2))]);
    assert_eq!(
        r.unwrap_err().kind,
        RunErrorKind::Eval(EvalError::UnsignedUnderflow)
    );
    let c = call(pnet_stdlib::Builtin::ToInt, &Type::Double);
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
            let c = call(f, &ty);
            let (r, _) = both(&c, &[Some(v.clone())]);
            let want = pnet_stdlib::builtins::cast(f, &v).unwrap();
            assert_eq!(r.unwrap(), want, "{f:?} {v}");
        }
    }
    // The spec's examples.
    let one = |f, v: Value, ty| both(&call(f, &ty), &[Some(v)]).0.unwrap();
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
    let c = call(ToUInt, &Type::Double);
    let (r, _) = both(&c, &[Some(Value::Double(-1.0))]);
    assert_eq!(
        r.unwrap_err().kind,
        RunErrorKind::Eval(EvalError::OutOfRange("uint(-1.0)".into()))
    );
}

#[test]
fn a_mistyped_or_empty_input_falls_back_without_changes() {
    let c = longs("lt");
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
    // ${z} := ${a} + 1L; ${z} * ${z}     (z is slot 2)
    let slots = "  slot 0 port a : long
  slot 1 port b : long
  slot 2 port z : long";
    let c = code(&format!(
        "{slots}
  0  load a
  1  const 1L
  2  add.long
  3  store z
  4  load z
  5  load z
  6  mul.long"
    ));
    let (r, f) = both(&c, &[Some(Value::Long(4)), Some(Value::Long(0)), None]);
    assert_eq!(r.unwrap(), Value::Long(25));
    assert_eq!(f[2], Some(Value::Long(5)));
    let c = code(&format!(
        "{slots}
  0  load z  @ 1:1-6
  1  const 1L
  2  store z"
    ));
    let (r, _) = both(&c, &[Some(Value::Long(4)), Some(Value::Long(0)), None]);
    let e = r.unwrap_err();
    assert_eq!(e.kind, RunErrorKind::Unbound("z".into()));
    assert_eq!(e.span, Some(span(0)));
}

#[test]
fn struct_fields_are_loaded_and_assigned_in_registers() {
    // ${p.x} := ${p.x} div 2UL; ${p.y} := ${p.y} + 1UL
    let c = code(
        "struct p { x: unsigned long, y: unsigned long }
  slot 0 port p : p
  0  load p.x
  1  const 2UL
  2  int_div.ulong
  3  store p.x
  4  load p.y
  5  const 1UL
  6  add.ulong
  7  dup
  8  store p.y",
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
        "  slot 0 port n : long
  0  load n
  1  const 1L
  2  sub.long
  3  store n",
    );
    let cond = code(
        "  slot 0 port n : long
  0  load n
  1  const 0L
  2  gt.long",
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
        (Type::Bool, Value::Bool(true)),
        (Type::Int, Value::Int(-7)),
        (Type::Long, Value::Long(i64::MIN)),
        (Type::UInt, Value::UInt(u32::MAX)),
        (Type::ULong, Value::ULong(u64::MAX - 3)),
        (Type::Float, Value::Float(-2.5)),
        (Type::Double, Value::Double(1e300)),
        (Type::Char, Value::Char(-5)),
    ];
    for (ty, v) in &cases {
        // ${z} := ${a}; ${z}        (a: slot 0, z: slot 1)
        let c = code(&format!(
            "  slot 0 port a : {ty}
  slot 1 port z : {ty}
  0  load a
  1  store z
  2  load z"
        ));
        let (r, f) = both(&c, &[Some(v.clone()), None]);
        assert_eq!(r.unwrap(), *v);
        assert_eq!(f, vec![Some(v.clone()), Some(v.clone())]);
    }
    // ${z} := 5L; ${a} div 0L: z is written back although the division fails.
    let c = code(
        "  slot 0 port a : long
  slot 1 port z : long
  0  const 5L
  1  store z
  2  load a
  3  const 0L
  4  int_div.long  @ 1:41-46",
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
    // The divisor as the IR text writes it (`i64::MIN` has no literal: postcard bytes).
    for (ty, op_ty, d, text) in [
        (Type::Long, "long", Value::Long(7), "7L"),
        (Type::Long, "long", Value::Long(-1000), "-1000L"),
        (
            Type::Long,
            "long",
            Value::Long(i64::MIN),
            "postcard(03ffffffffffffffffff01)",
        ),
        (Type::Int, "int", Value::Int(1000), "1000"),
        (Type::UInt, "uint", Value::UInt(7), "7U"),
        (Type::ULong, "ulong", Value::ULong(1000), "1000UL"),
        (
            Type::ULong,
            "ulong",
            Value::ULong(u64::MAX),
            "18446744073709551615UL",
        ),
    ] {
        for op in ["int_div", "mod"] {
            let c = code(&format!(
                "  slot 0 port a : {ty}\n  0  load a\n  1  const {text}\n  2  {op}.{op_ty}"
            ));
            assert_eq!(c.consts, std::slice::from_ref(&d));
            let asm = jit.machine_code(&c).expect("compiled");
            assert!(!divides(&asm), "{op:?} by {d}:\n{asm}");
        }
    }
    let c = longs("int_div");
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
            let (r, _) = both(&call(f, &ty), &[Some(v.clone())]);
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
    let slots = "  slot 0 port bs : bitset
  slot 1 port e : unsigned long
  slot 2 port f : unsigned long";
    let edges = [0, 63, 64, (1u64 << 32) - 1, 1 << 63, u64::MAX];
    let start = Bitset::from_elements([1, 64 * 70_000, u64::MAX - 64]);
    // bs := bitset_insert (bitset_insert (bs, e), f); bitset_count (bs)
    let insert = code(&format!(
        "{slots}
  0  load bs
  1  load e
  2  call {}
  3  load f
  4  call {}
  5  store bs
  6  load bs
  7  call {}",
        BitsetInsert.name(),
        BitsetInsert.name(),
        BitsetCount.name()
    ));
    // bitset_tohex (bitset_delete (bitset_insert (bs, e), f))
    let hex = code(&format!(
        "{slots}
  0  load bs
  1  load e
  2  call {}
  3  load f
  4  call {}
  5  call {}",
        BitsetInsert.name(),
        BitsetDelete.name(),
        BitsetToHex.name()
    ));
    // bitset_is_element (bitset_xor (bitset_fromhex (bitset_tohex (bs)), bitset_or (bs,
    // bitset_and (bs, bs))), e)
    let ops = code(&format!(
        "{slots}
  0  load bs
  1  call {}
  2  call {}
  3  load bs
  4  load bs
  5  load bs
  6  call {}
  7  call {}
  8  call {}
  9  load e
  10 call {}",
        BitsetToHex.name(),
        BitsetFromHex.name(),
        BitsetAnd.name(),
        BitsetOr.name(),
        BitsetXor.name(),
        BitsetIsElement.name()
    ));
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
