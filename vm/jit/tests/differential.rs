//! Differential tests: random well-typed programs give the same value, the same frame and the
//! same error (kind and span) through the JIT and through the interpreter.
//!
//! `PNET_JIT_CASES=N` sets the number of (program, frame) cases (default 120,000);
//! `PNET_JIT_SEED=S` the seed.

mod common;

use common::{Gen, Rng, frame};
use pnet_jit::Jit;
use pnet_stdlib::Value;
use pnet_vm::Interpreter;

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
    let mut jit = Jit::new().expect("a JIT for this host");
    let mut interp = Interpreter::new();
    let mut buf = Vec::new();
    let (mut done, mut native, mut fallbacks, mut errors, mut not_compiled) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
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
        let ids = jit.compile(&refs);
        for (code, id) in codes.iter().zip(ids) {
            let Some(id) = id else {
                not_compiled += 1;
                continue;
            };
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
                let want_bool = want.clone().and_then(|v| pnet_vm::condition_value(code, v));
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
        "differential: {done} cases ({native} through compiled code, {errors} of them errors; \
         {fallbacks} fallbacks to the interpreter); {not_compiled} programs not compiled; \
         compile time {:?}; operations compiled natively {native_ops}, through the stdlib \
         {dyn_ops}; programs with struct fields in registers {field_codes} (assigned: \
         {stored_field_codes})",
        jit.compile_time()
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
