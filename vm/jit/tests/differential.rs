//! Differential tests: random well-typed programs give the same value, the same frame and the
//! same error (kind and span) through the JIT and through the interpreter.
//!
//! `PNET_JIT_CASES=N` sets the number of (program, frame) cases (default 120,000);
//! `PNET_JIT_SEED=S` the seed. Every third module of programs is compiled by a JIT that hands
//! the frame over through its buffer ([`Jit::new_buffered`]), the others by one whose code
//! accesses the frame directly where it can.

mod common;

use common::{Gen, Rng, frame};
use pnet_bundle::{Code, Instr, OpTy, SourceSpan};
use pnet_engine::Interpreter;
use pnet_jit::Jit;
use pnet_stdlib::{BinOp, Type, Value};

const FRAMES_PER_CODE: usize = 24;
const CODES_PER_MODULE: usize = 250;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// Equality of values, where any NaN equals any NaN: Rust leaves the sign and payload of a NaN
/// result unspecified (the interpreter's depend on how LLVM orders operands), and the language
/// prints every NaN as `nan`. Everything else is compared exactly (`-0.0` differs from `0.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) if x.is_nan() && y.is_nan() => true,
        (Value::Double(x), Value::Double(y)) if x.is_nan() && y.is_nan() => true,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Struct(x), Value::Struct(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((n, a), (m, b))| n == m && same(a, b))
        }
        (Value::Shared(x), Value::Shared(y)) => x.place == y.place && same(&x.value, &y.value),
        _ => a == b,
    }
}

fn same_frame(a: &[Option<Value>], b: &[Option<Value>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(a, b)| match (a, b) {
            (Some(a), Some(b)) => same(a, b),
            (a, b) => a == b,
        })
}

#[test]
fn jit_and_interpreter_agree_on_random_programs() {
    let cases = env("PNET_JIT_CASES", 120_000);
    let seed = env("PNET_JIT_SEED", 0x5eed);
    let mut r = Rng::new(seed);
    let mut direct_jit = Jit::new().expect("a JIT for this host");
    assert!(
        direct_jit.direct(),
        "the layout of Value allows direct frame access"
    );
    let mut buffered_jit = Jit::new_buffered().expect("a JIT for this host");
    let mut interp = Interpreter::new();
    let mut buf = Vec::new();
    let (mut done, mut native, mut fallbacks, mut errors, mut not_compiled) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let (mut direct_codes, mut direct_runs, mut modules) = (0u64, 0u64, 0u64);
    let (mut native_ops, mut dyn_ops, mut field_codes, mut stored_field_codes) =
        (0u64, 0u64, 0u64, 0u64);
    while done < cases {
        let codes: Vec<_> = (0..CODES_PER_MODULE)
            .map(|_| {
                let depth = 1 + r.below(5) as u32;
                Gen::new(&mut r).program(depth)
            })
            .collect();
        let refs: Vec<&_> = codes.iter().collect();
        modules += 1;
        let jit = if modules % 3 == 0 {
            &mut buffered_jit
        } else {
            &mut direct_jit
        };
        let ids = jit.compile(&refs);
        let jit = &*jit;
        for (code, id) in codes.iter().zip(ids) {
            let Some(id) = id else {
                not_compiled += 1;
                continue;
            };
            let direct = jit.is_direct(id);
            direct_codes += u64::from(direct);
            if let Some(p) = jit.plan(id) {
                native_ops += p.native_ops as u64;
                dyn_ops += p.dyn_ops as u64;
                field_codes += u64::from(!p.fields.is_empty());
                stored_field_codes += u64::from(p.fields.iter().any(|f| f.stored));
            }
            for _ in 0..FRAMES_PER_CODE {
                let f0 = frame(&mut r);
                let mut fi = f0.clone();
                let want = interp.run(code, &mut fi);
                let mut fj = f0.clone();
                done += 1;
                // The condition and effect-only entries agree with `run` (same fallbacks,
                // same frame, the same error; the bool of `condition_value`).
                let mut fb = f0.clone();
                let got_bool = jit.run_bool(id, code, &mut fb, &mut buf);
                let want_bool = want
                    .clone()
                    .and_then(|v| pnet_engine::condition_value(code, v));
                match &got_bool {
                    None => assert_eq!(fb, f0, "a fallback changed the frame\n{code}"),
                    Some(b) => {
                        assert_eq!(b, &want_bool, "run_bool differs\n{code}\nframe {f0:?}");
                        assert!(
                            same_frame(&fb, &fi),
                            "frames differ after run_bool\n{code}\nframe {f0:?}"
                        );
                    }
                }
                let mut fe = f0.clone();
                let got_effect = jit.run_effect(id, code, &mut fe, &mut buf);
                assert_eq!(
                    got_effect.is_none(),
                    got_bool.is_none(),
                    "the entries fall back alike\n{code}"
                );
                if let Some(e) = &got_effect {
                    assert_eq!(
                        e,
                        &want.clone().map(drop),
                        "run_effect differs\n{code}\nframe {f0:?}"
                    );
                    assert!(
                        same_frame(&fe, &fi),
                        "frames differ after run_effect\n{code}\nframe {f0:?}"
                    );
                }
                match jit.run(id, code, &mut fj, &mut buf) {
                    None => {
                        fallbacks += 1;
                        assert_eq!(fj, f0, "a fallback changed the frame\n{code}");
                    }
                    Some(got) => {
                        native += 1;
                        direct_runs += u64::from(direct);
                        errors += u64::from(got.is_err());
                        let same_result = match (&got, &want) {
                            (Ok(a), Ok(b)) => same(a, b),
                            (a, b) => a == b,
                        };
                        assert!(
                            same_result,
                            "JIT and interpreter differ\n{code}\nframe {f0:?}\n{got:?}\n{want:?}"
                        );
                        assert!(
                            fj.len() == fi.len()
                                && fj.iter().zip(&fi).all(|(a, b)| match (a, b) {
                                    (Some(a), Some(b)) => same(a, b),
                                    (a, b) => a == b,
                                }),
                            "frames differ after the run\n{code}\nframe {f0:?}"
                        );
                    }
                }
            }
        }
    }
    eprintln!(
        "differential: {done} cases ({native} through compiled code, {direct_runs} of them \
         with direct frame access, {errors} errors; {fallbacks} fallbacks to the interpreter); \
         {not_compiled} programs not compiled, {direct_codes} compiled for direct access; \
         compile time {:?}; operations compiled natively {native_ops}, through the stdlib \
         {dyn_ops}; programs with struct fields in registers {field_codes} (assigned: \
         {stored_field_codes})",
        direct_jit.compile_time() + buffered_jit.compile_time()
    );
    assert!(
        direct_runs * 5 >= native,
        "too few runs with direct frame access: {direct_runs} of {native}"
    );
    assert!(
        direct_runs < native,
        "the buffered hand-over is exercised too"
    );
    assert!(native_ops > dyn_ops, "most operations are native");
    assert!(
        stored_field_codes > 0,
        "struct field assignments are compiled"
    );
    assert!(
        native * 10 >= done * 8,
        "too few cases ran compiled code: {native} of {done}"
    );
    assert!(
        errors > 0 && errors < native,
        "errors and values both occur"
    );
    assert_eq!(not_compiled, 0, "every generated program compiles");
}

/// Divisors of every sign and size for `bits`-bit integers: 1, -1, small ones, powers of two
/// and their neighbours and negatives, the extremes, and some random ones.
fn signed_divisors(bits: u32, r: &mut Rng) -> Vec<i64> {
    let (min, max) = (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1);
    let mut ds: Vec<i128> = vec![
        1, -1, 2, -2, 3, -3, 5, 6, 7, -7, 10, 12, 100, 641, 1000, -1000,
    ];
    ds.extend([
        12_345,
        1_000_000_007,
        0x5555_5555,
        min,
        min + 1,
        max,
        max - 1,
    ]);
    for k in 1..bits - 1 {
        let p = 1i128 << k;
        ds.extend([p, -p, p + 1, p - 1, -p + 1, -p - 1]);
    }
    for _ in 0..30 {
        let x = r.next() as i64 >> r.below(bits as usize);
        ds.push(i128::from(x));
    }
    let mut ds: Vec<i64> = ds
        .into_iter()
        .filter(|d| *d != 0 && (min..=max).contains(d))
        .map(|d| d as i64)
        .collect();
    ds.sort_unstable();
    ds.dedup();
    ds
}

fn unsigned_divisors(bits: u32, r: &mut Rng) -> Vec<u64> {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let mut ds: Vec<u64> = vec![
        1,
        2,
        3,
        5,
        6,
        7,
        10,
        12,
        100,
        641,
        1000,
        12_345,
        1_000_000_007,
    ];
    ds.extend([0x5555_5555, max, max - 1, max / 2, max / 3, max / 7]);
    for k in 1..bits {
        let p = 1u64 << k;
        ds.extend([p, p + 1, p - 1]);
    }
    for _ in 0..30 {
        ds.push(r.next() >> r.below(bits as usize));
    }
    let mut ds: Vec<u64> = ds
        .into_iter()
        .map(|d| d & max)
        .filter(|d| *d != 0)
        .collect();
    ds.sort_unstable();
    ds.dedup();
    ds
}

/// Dividends: the extremes and their neighbours, small ones, multiples of `d` and their
/// neighbours, random ones.
fn dividends(d: i128, min: i128, max: i128, r: &mut Rng) -> Vec<i128> {
    let mut xs = vec![
        0,
        1,
        -1,
        2,
        -2,
        3,
        7,
        999,
        1000,
        1001,
        min,
        min + 1,
        max,
        max - 1,
    ];
    for m in [1i128, 2, 3, 1000, -1, -2, -3] {
        let k = d * m;
        xs.extend([k, k - 1, k + 1]);
    }
    xs.extend([max / d.abs().max(1) * d, min / d.abs().max(1) * d]);
    for _ in 0..24 {
        xs.push(i128::from(r.next() as i64 >> r.below(64)));
        xs.push(i128::from(r.next()));
    }
    xs.into_iter().filter(|x| (min..=max).contains(x)).collect()
}

/// `${a} div d` and `${a} mod d` for constant divisors of every sign and size, for int, long,
/// unsigned int and unsigned long, agree with the interpreter on edge and random dividends
/// (including `MIN div -1` and `MIN mod -1`, which wrap; and division by a constant 0).
#[test]
fn constant_divisors_agree_with_the_interpreter() {
    let mut r = Rng::new(env("PNET_JIT_SEED", 0x5eed) ^ 0xd1f);
    let mut jit = Jit::new().expect("a JIT for this host");
    let mut interp = Interpreter::new();
    let mut buf = Vec::new();
    let mut cases = 0u64;
    let types = [
        (OpTy::Int, Type::Int, 32, true),
        (OpTy::Long, Type::Long, 64, true),
        (OpTy::UInt, Type::UInt, 32, false),
        (OpTy::ULong, Type::ULong, 64, false),
    ];
    for (op_ty, ty, bits, signed) in types {
        let (min, max) = if signed {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        let value = |x: i128| match op_ty {
            OpTy::Int => Value::Int(x as i32),
            OpTy::Long => Value::Long(x as i64),
            OpTy::UInt => Value::UInt(x as u32),
            _ => Value::ULong(x as u64),
        };
        let mut ds: Vec<i128> = if signed {
            signed_divisors(bits, &mut r)
                .into_iter()
                .map(i128::from)
                .collect()
        } else {
            unsigned_divisors(bits, &mut r)
                .into_iter()
                .map(i128::from)
                .collect()
        };
        ds.push(0);
        let mut codes = Vec::new();
        for &d in &ds {
            for op in [BinOp::IntDiv, BinOp::Mod] {
                codes.push((
                    d,
                    Code::with_slots(
                        "constant divisor",
                        &[("a", ty.clone())],
                        vec![Instr::Load(0), Instr::Const(0), Instr::Binary(op, op_ty)],
                        vec![value(d)],
                        SourceSpan::default(),
                    ),
                ));
            }
        }
        let refs: Vec<&Code> = codes.iter().map(|(_, c)| c).collect();
        let ids = jit.compile(&refs);
        for ((d, code), id) in codes.iter().zip(ids) {
            let id = id.expect("compiled");
            assert!(jit.is_direct(id));
            for x in dividends(*d, min, max, &mut r) {
                let f0 = vec![Some(value(x))];
                let mut fi = f0.clone();
                let want = interp.run(code, &mut fi);
                let mut fj = f0.clone();
                let got = jit.run(id, code, &mut fj, &mut buf).expect("no fallback");
                assert_eq!(got, want, "{x} by {d}\n{code}");
                assert_eq!(fj, fi);
                cases += 1;
            }
        }
    }
    eprintln!("constant divisors: {cases} cases");
    assert!(cases > 20_000, "{cases}");
}
