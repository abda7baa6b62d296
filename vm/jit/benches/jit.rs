//! Evaluations per second of two expressions through the interpreter, the JIT and a
//! hand-written Rust closure doing the same work (reading the frame, the same checks), side by
//! side; and the JIT's compile time per expression.
//!
//! `cargo bench -p pnet-jit --bench jit` (release build). `PNET_BENCH_SCALE=0.1` for a quick
//! run. Each variant runs in 10 interleaved rounds of about 0.2 s each; the best round of each
//! is printed. Rounds are timed by the thread's CPU time (`/proc/thread-self/schedstat`, where
//! there is one, which counts in scheduler ticks of a few ms, hence the long rounds; else by the
//! clock), so that other work on a shared machine slows the bench without skewing it.

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Instant;

use pnet_bundle::{Code, Instr, OpTy, SourceSpan};
use pnet_engine::Interpreter;
use pnet_jit::Jit;
use pnet_stdlib::{BinOp, Builtin, Type, Value};

fn code(instrs: Vec<Instr>, consts: Vec<Value>, slots: &[(&str, Type)]) -> Code {
    Code::with_slots("bench", slots, instrs, consts, SourceSpan::default())
}

/// `${a} :lt: ${b}` on longs.
fn lt_code() -> Code {
    code(
        vec![
            Instr::Load(0),
            Instr::Load(1),
            Instr::Binary(BinOp::Lt, OpTy::Long),
        ],
        Vec::new(),
        &[("a", Type::Long), ("b", Type::Long)],
    )
}

/// `double (((${a} * 3L + ${b}) - ${a} div 7L) mod 1000L) * ${x} + ${y} * ${y}
///  - ${x} / (${y} + 1.5)`: twelve operations on long and double.
fn arith_code() -> Code {
    use BinOp::*;
    use Instr::*;
    let l = OpTy::Long;
    let d = OpTy::Double;
    code(
        vec![
            Load(0),
            Const(0),
            Binary(Mul, l),
            Load(1),
            Binary(Add, l),
            Load(0),
            Const(1),
            Binary(IntDiv, l),
            Binary(Sub, l),
            Const(2),
            Binary(Mod, l),
            Call(Builtin::ToDouble),
            Load(2),
            Binary(Mul, d),
            Load(3),
            Load(3),
            Binary(Mul, d),
            Binary(Add, d),
            Load(2),
            Load(3),
            Const(3),
            Binary(Add, d),
            Binary(Div, d),
            Binary(Sub, d),
        ],
        vec![
            Value::Long(3),
            Value::Long(7),
            Value::Long(1000),
            Value::Double(1.5),
        ],
        &[
            ("a", Type::Long),
            ("b", Type::Long),
            ("x", Type::Double),
            ("y", Type::Double),
        ],
    )
}

#[derive(Debug)]
enum Fail {
    Unbound,
    DivisionByZero,
}

/// The closure for `lt_code`: the same reads of the frame, no interpretation.
fn lt_closure(f: &[Option<Value>]) -> Result<Value, Fail> {
    match (&f[0], &f[1]) {
        (Some(Value::Long(a)), Some(Value::Long(b))) => Ok(Value::Bool(a < b)),
        _ => Err(Fail::Unbound),
    }
}

/// The closure for `arith_code`, with the language's checks.
fn arith_closure(f: &[Option<Value>]) -> Result<Value, Fail> {
    let (
        Some(Value::Long(a)),
        Some(Value::Long(b)),
        Some(Value::Double(x)),
        Some(Value::Double(y)),
    ) = (&f[0], &f[1], &f[2], &f[3])
    else {
        return Err(Fail::Unbound);
    };
    let (a, b, x, y) = (*a, *b, *x, *y);
    let t = a
        .wrapping_mul(3)
        .wrapping_add(b)
        .wrapping_sub(a.wrapping_div(7));
    let m = t.wrapping_rem(1000) as f64;
    let den = y + 1.5;
    if den.abs() < f64::MIN_POSITIVE {
        return Err(Fail::DivisionByZero);
    }
    Ok(Value::Double(m * x + y * y - x / den))
}

fn scale() -> f64 {
    std::env::var("PNET_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

fn frames(n: usize, arith: bool) -> Vec<Vec<Option<Value>>> {
    let mut r = common::Rng::new(7);
    (0..n)
        .map(|_| {
            let a = Value::Long((r.next() % 100_000) as i64 - 50_000);
            let b = Value::Long((r.next() % 100_000) as i64 - 50_000);
            if arith {
                let x = Value::Double((r.next() % 10_000) as f64 / 7.0);
                let y = Value::Double((r.next() % 10_000) as f64 / 3.0);
                vec![Some(a), Some(b), Some(x), Some(y)]
            } else {
                vec![Some(a), Some(b)]
            }
        })
        .collect()
}

/// Each variant is timed in this many interleaved rounds and its best round counts (the
/// machine is shared: a burst of other work then spoils one round, not a whole variant).
const ROUNDS: usize = 10;

/// Hands an evaluation's value (if it succeeded) to the optimizer as used, the same way for
/// every variant: by reference, where it lies (moving or copying a freshly built
/// `Result<..>` through `black_box` stalls on store-to-load forwarding after the callee's
/// narrow stores, which would time the copy, not the evaluation); whether it succeeded.
#[inline(always)]
fn used<T, E>(r: &Result<T, E>) -> bool {
    match r {
        Ok(v) => {
            black_box(v);
            true
        }
        Err(_) => false,
    }
}

/// The CPU time this thread has run, in nanoseconds (`None` where the kernel does not say).
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// A stopwatch of the thread's CPU time, or of the clock.
struct Stopwatch {
    cpu: Option<u64>,
    wall: Instant,
}

impl Stopwatch {
    fn start() -> Stopwatch {
        Stopwatch {
            cpu: thread_cpu_ns(),
            wall: Instant::now(),
        }
    }

    fn secs(&self) -> f64 {
        match (self.cpu, thread_cpu_ns()) {
            (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
            _ => self.wall.elapsed().as_secs_f64(),
        }
    }
}

/// Runs `f` over the frames, in chunks of a frame each, until `secs` of wall-clock time have
/// passed; evaluations per second (of CPU time, where there is a measure of it).
fn measure(
    secs: f64,
    frames: &mut [Vec<Option<Value>>],
    mut f: impl FnMut(&mut [Option<Value>]) -> bool,
) -> f64 {
    let watch = Stopwatch::start();
    let (mut n, mut ok) = (0usize, 0usize);
    while n == 0 || watch.wall.elapsed().as_secs_f64() < secs {
        for frame in frames.iter_mut() {
            ok += usize::from(f(frame));
        }
        n += frames.len();
    }
    let secs = watch.secs();
    assert_eq!(ok, n, "every evaluation succeeds");
    n as f64 / secs
}

fn row(
    name: &str,
    round: f64,
    arith: bool,
    code: &Code,
    closure: fn(&[Option<Value>]) -> Result<Value, Fail>,
) {
    if !selected(name) {
        return;
    }
    let mut fs = frames(256, arith);
    // The three agree on every frame.
    let mut jit = Jit::new().expect("jit");
    let id = jit.compile(&[code])[0].expect("compiled");
    let mut interp = Interpreter::new();
    let mut buf = Vec::new();
    for f in &mut fs {
        let i = interp.run(code, f).expect("interpreter");
        let j = jit
            .run(id, code, f, &mut buf)
            .expect("native")
            .expect("jit");
        let c = closure(f).expect("closure");
        assert!(i == j && j == c, "{i} {j} {c}");
    }
    let (mut interp_rate, mut jit_rate, mut closure_rate) = (0f64, 0f64, 0f64);
    for _ in 0..ROUNDS {
        interp_rate = interp_rate.max(measure(round, &mut fs, |f| used(&interp.run(code, f))));
        jit_rate = jit_rate.max(measure(round, &mut fs, |f| {
            jit.run(id, code, f, &mut buf).as_ref().is_some_and(used)
        }));
        closure_rate = closure_rate.max(measure(round, &mut fs, |f| used(&closure(f))));
    }
    println!(
        "{name:<34} interpreter {:>7.1} M/s | JIT {:>7.1} M/s | Rust closure {:>7.1} M/s | JIT/interp {:>5.1}x | closure/JIT {:>4.2}x",
        interp_rate / 1e6,
        jit_rate / 1e6,
        closure_rate / 1e6,
        jit_rate / interp_rate,
        closure_rate / jit_rate,
    );
}

/// The closure for `lt_code` run as a condition (a bool, no `Value`).
fn lt_cond_closure(f: &[Option<Value>]) -> Result<bool, Fail> {
    match (&f[0], &f[1]) {
        (Some(Value::Long(a)), Some(Value::Long(b))) => Ok(a < b),
        _ => Err(Fail::Unbound),
    }
}

/// `${a} :lt: ${b}` as the engine runs a condition: `Interpreter::run_bool`, `Jit::run_bool`,
/// a closure giving the bool.
fn cond_row(name: &str, round: f64) {
    if !selected(name) {
        return;
    }
    let code = lt_code();
    let mut fs = frames(256, false);
    let mut jit = Jit::new().expect("jit");
    let id = jit.compile(&[&code])[0].expect("compiled");
    let mut interp = Interpreter::new();
    let mut buf = Vec::new();
    for f in &mut fs {
        let i = interp.run_bool(&code, f).expect("interpreter");
        let j = jit
            .run_bool(id, &code, f, &mut buf)
            .expect("native")
            .expect("jit");
        let c = lt_cond_closure(f).expect("closure");
        assert!(i == j && j == c, "{i} {j} {c}");
    }
    let (mut interp_rate, mut jit_rate, mut closure_rate) = (0f64, 0f64, 0f64);
    for _ in 0..ROUNDS {
        interp_rate = interp_rate.max(measure(round, &mut fs, |f| {
            used(&interp.run_bool(&code, f))
        }));
        jit_rate = jit_rate.max(measure(round, &mut fs, |f| {
            jit.run_bool(id, &code, f, &mut buf)
                .as_ref()
                .is_some_and(used)
        }));
        closure_rate = closure_rate.max(measure(round, &mut fs, |f| used(&lt_cond_closure(f))));
    }
    println!(
        "{name:<34} interpreter {:>7.1} M/s | JIT {:>7.1} M/s | Rust closure {:>7.1} M/s | JIT/interp {:>5.1}x | closure/JIT {:>4.2}x",
        interp_rate / 1e6,
        jit_rate / 1e6,
        closure_rate / 1e6,
        jit_rate / interp_rate,
        closure_rate / jit_rate,
    );
}

fn compile_times() {
    if !selected("compile time") {
        return;
    }
    // One expression per compile call (a module finalization each), and random programs
    // compiled 250 to a module.
    let mut jit = Jit::new().expect("jit");
    let codes = [lt_code(), arith_code()];
    for c in &codes {
        let n = 200;
        let start = Instant::now();
        for _ in 0..n {
            black_box(jit.compile(&[c]));
        }
        let us = start.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!(
            "compile time, {:>2} instructions, one per call:   {us:>7.1} us",
            c.instrs.len()
        );
    }
    let mut r = common::Rng::new(11);
    let programs: Vec<Code> = (0..1000)
        .map(|_| common::Gen::new(&mut r).program(4))
        .collect();
    let instrs: usize = programs.iter().map(|c| c.instrs.len()).sum();
    let start = Instant::now();
    for chunk in programs.chunks(250) {
        let refs: Vec<&Code> = chunk.iter().collect();
        black_box(jit.compile(&refs));
    }
    let us = start.elapsed().as_secs_f64() * 1e6 / programs.len() as f64;
    println!(
        "compile time, random programs (avg {:.1} instructions), 250 per module: {us:>7.1} us each",
        instrs as f64 / programs.len() as f64
    );
}

/// Whether the row `name` runs (`PNET_BENCH_ONLY=text`: only rows whose name contains it).
fn selected(name: &str) -> bool {
    std::env::var("PNET_BENCH_ONLY").map_or(true, |only| name.contains(&only))
}

fn main() {
    let round = 0.2 * scale();
    println!(
        "pnet-jit bench (evaluations per second of {} time, one thread)",
        if thread_cpu_ns().is_some() {
            "CPU"
        } else {
            "wall-clock"
        }
    );
    row(
        "${a} :lt: ${b} (long)",
        round,
        false,
        &lt_code(),
        lt_closure,
    );
    cond_row("${a} :lt: ${b} as a condition", round);
    row(
        "arithmetic, 12 ops on long/double",
        round,
        true,
        &arith_code(),
        arith_closure,
    );
    compile_times();
}
