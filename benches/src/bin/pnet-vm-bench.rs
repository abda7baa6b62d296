//! Benchmarks of the interpreter and the engine, with hand-built bytecode (no compiler).
//!
//! `cargo run --release -p pnet-benches --bin pnet-vm-bench [-- quick]`
//!
//! Prints one line per figure: `name value unit`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use pnet_bundle::{
    Body, Bundle, Code, CodeId, ConnectKind, Connection, Function, FunctionId, Instr, Net, OpTy,
    Place, PlaceId, Port, PortDir, PortId, SourceSpan, Transition,
};
use pnet_engine::{CodeRunner, CodeRunnerFactory, Engine, Interpreter, RunConfig, RunError, Step};
use pnet_stdlib::{BinOp, Type, Value};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed)
                    + (new_size - layout.size());
                // A moving realloc holds both blocks for a moment.
                PEAK.fetch_max(now + layout.size(), Ordering::Relaxed);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn code(name: &str, instrs: Vec<Instr>, consts: Vec<Value>, slots: &[(&str, Type)]) -> Code {
    Code::with_slots(name, slots, instrs, consts, SourceSpan::default())
}

fn function(name: &str, ports: Vec<Port>, body: Body) -> Function {
    Function::new(name, ports, body, SourceSpan::default())
}

fn port(name: &str, dir: PortDir, place: Option<u32>) -> Port {
    Port::new(name, dir, Type::Long, place, SourceSpan::default())
}

fn place(name: &str, tokens: Vec<Value>) -> Place {
    Place::new(name, Type::Long, tokens, SourceSpan::default())
}

fn conn(kind: ConnectKind, port: u32, place: u32) -> Connection {
    Connection {
        kind,
        port: PortId(port),
        place: PlaceId(place),
        span: SourceSpan::default(),
    }
}

fn transition(
    name: &str,
    function: u32,
    connections: Vec<Connection>,
    condition: u32,
) -> Transition {
    Transition {
        condition: Some(CodeId(condition)),
        ..Transition::new(
            name,
            FunctionId(function),
            connections,
            SourceSpan::default(),
        )
    }
}

/// One place `n` of long; `dec` consumes n > 0 and puts n - 1. If `spill`, it also puts n on
/// place `out` (to fill a place with tokens).
fn countdown(n: i64, spill: bool) -> Bundle {
    let slots = [("n", Type::Long), ("o", Type::Long)];
    let cond = code(
        "condition of dec",
        vec![
            Instr::Load(0),
            Instr::Const(0),
            Instr::Binary(BinOp::Gt, OpTy::Long),
        ],
        vec![Value::Long(0)],
        &slots,
    );
    let mut body = vec![
        Instr::Load(0),
        Instr::Const(0),
        Instr::Binary(BinOp::Sub, OpTy::Long),
    ];
    if spill {
        body.extend([Instr::Load(0), Instr::Store(1)]);
    }
    body.push(Instr::Store(0));
    let expr = code("expression of dec", body, vec![Value::Long(1)], &slots);
    let mut connections = vec![conn(ConnectKind::In, 0, 0), conn(ConnectKind::Out, 0, 0)];
    if spill {
        connections.push(conn(ConnectKind::Out, 1, 1));
    }
    let root = function(
        "main",
        vec![
            port("n", PortDir::Out, Some(0)),
            port("out", PortDir::Out, Some(1)),
        ],
        Body::Net(Net {
            places: vec![place("n", vec![Value::Long(n)]), place("out", Vec::new())],
            transitions: vec![transition("dec", 1, connections, 0)],
        }),
    );
    let dec = function(
        "dec",
        vec![
            port("n", PortDir::InOut, None),
            port("o", PortDir::Out, None),
        ],
        Body::Expression(CodeId(1)),
    );
    Bundle {
        root: FunctionId(0),
        functions: vec![root, dec],
        codes: vec![cond, expr],
        structs: Vec::new(),
        files: Vec::new(),
    }
}

/// The net of `examples/countdown/countdown.xpnet`: `step` (priority 1, inout `n` on
/// `counter`, condition `${n} :gt: 0L`, expression `${n} := ${n} - 1L`) and `finish` (in `n`
/// from `counter`, out `result` to `done`, expression `${result} := ${n}`).
fn countdown_xpnet() -> Bundle {
    let slots = [("n", Type::Long)];
    let cond = code(
        "condition of step",
        vec![
            Instr::Load(0),
            Instr::Const(0),
            Instr::Binary(BinOp::Gt, OpTy::Long),
        ],
        vec![Value::Long(0)],
        &slots,
    );
    let dec = code(
        "expression of step",
        vec![
            Instr::Load(0),
            Instr::Const(0),
            Instr::Binary(BinOp::Sub, OpTy::Long),
            Instr::Store(0),
        ],
        vec![Value::Long(1)],
        &slots,
    );
    let copy = code(
        "expression of finish",
        vec![Instr::Load(0), Instr::Store(1)],
        Vec::new(),
        &[("n", Type::Long), ("result", Type::Long)],
    );
    let mut step = transition(
        "step",
        1,
        vec![conn(ConnectKind::In, 0, 0), conn(ConnectKind::Out, 0, 0)],
        0,
    );
    step.priority = 1;
    let finish = Transition {
        condition: None,
        ..transition(
            "finish",
            2,
            vec![conn(ConnectKind::In, 0, 0), conn(ConnectKind::Out, 1, 1)],
            0,
        )
    };
    let root = function(
        "countdown",
        vec![
            port("n", PortDir::In, Some(0)),
            port("done", PortDir::Out, Some(1)),
        ],
        Body::Net(Net {
            places: vec![place("counter", Vec::new()), place("done", Vec::new())],
            transitions: vec![step, finish],
        }),
    );
    let stepf = function(
        "step",
        vec![port("n", PortDir::InOut, None)],
        Body::Expression(CodeId(1)),
    );
    let finishf = function(
        "finish",
        vec![
            port("n", PortDir::In, None),
            port("result", PortDir::Out, None),
        ],
        Body::Expression(CodeId(2)),
    );
    Bundle {
        root: FunctionId(0),
        functions: vec![root, stepf, finishf],
        codes: vec![cond, dec, copy],
        structs: Vec::new(),
        files: Vec::new(),
    }
}

/// A runner doing the codes of [`countdown_xpnet`] natively (a stand-in for an ideal JIT), so
/// that the engine's own per-firing cost shows.
#[derive(Debug)]
struct Native;

impl CodeRunnerFactory for Native {
    fn runner(&self, _: &Bundle) -> Box<dyn CodeRunner> {
        Box::new(Native)
    }
}

impl CodeRunner for Native {
    fn run(
        &mut self,
        _: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<Value, RunError> {
        interp.run(code, frame)
    }

    fn run_bool(
        &mut self,
        id: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<bool, RunError> {
        match (id.0, frame.first()) {
            (0, Some(Some(Value::Long(n)))) => Ok(*n > 0),
            _ => interp.run_bool(code, frame),
        }
    }

    fn run_effect(
        &mut self,
        id: CodeId,
        code: &Code,
        frame: &mut [Option<Value>],
        interp: &mut Interpreter,
    ) -> Result<(), RunError> {
        match id.0 {
            1 => {
                if let Some(Some(Value::Long(n))) = frame.first_mut() {
                    *n -= 1;
                    return Ok(());
                }
            }
            2 => {
                if let [Some(Value::Long(n)), r, ..] = frame {
                    *r = Some(Value::Long(*n));
                    return Ok(());
                }
            }
            _ => {}
        }
        interp.run(code, frame).map(drop)
    }
}

/// On-CPU time of this thread in seconds (Linux `schedstat`), to see through a loaded machine.
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map(|ns| ns / 1e9)
        .unwrap_or(f64::NAN)
}

fn run_to_end(engine: &mut Engine) {
    loop {
        // Matched in place, as a driver does (no copy of the result).
        match engine.step() {
            Ok(Step::Fired) => {}
            Ok(Step::Done) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// As [`run_to_end`], in batches of [`Engine::run_steps`] (as the runtime's agent drives it).
fn run_batched(engine: &mut Engine) {
    loop {
        match engine.run_steps(1024) {
            Ok((_, Step::Fired)) => {}
            Ok((_, Step::Done)) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    // `xpnet`: only (b2), one round of each (for instruction counts under valgrind).
    // `xpnet-interpreted`, `xpnet-native` (single steps), `xpnet-interpreted-batched`,
    // `xpnet-native-batched` (`Engine::run_steps`): only that one.
    if let Some(a) = std::env::args().find(|a| a.starts_with("xpnet")) {
        let n = std::env::var("PNET_BENCH_N")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(100_000);
        countdown_xpnet_rounds(n, 1, a.strip_prefix("xpnet-").unwrap_or(""));
        return;
    }

    // (a) The condition `${a} :lt: ${b}` on longs.
    let lt = code(
        "a < b",
        vec![
            Instr::Load(0),
            Instr::Load(1),
            Instr::Binary(BinOp::Lt, OpTy::Long),
        ],
        Vec::new(),
        &[("a", Type::Long), ("b", Type::Long)],
    );
    let mut interp = Interpreter::new();
    let mut frame = vec![Some(Value::Long(0)), Some(Value::Long(500))];
    let n: i64 = if quick { 1_000_000 } else { 50_000_000 };
    let mut trues = 0u64;
    let before = CURRENT.load(Ordering::Relaxed);
    let t = Instant::now();
    let c = cpu_seconds();
    for i in 0..n {
        frame[0] = Some(Value::Long(i & 1023));
        if interp.run_bool(&lt, &mut frame).expect("eval") {
            trues += 1;
        }
    }
    let dt = t.elapsed().as_secs_f64();
    let dc = cpu_seconds() - c;
    let leaked = CURRENT.load(Ordering::Relaxed) as isize - before as isize;
    println!(
        "interp_lt_evals_per_sec {:.0} evals/s wall, {:.0} evals/s cpu (n={n}, true={trues}, bytes_allocated_delta={leaked})",
        n as f64 / dt,
        n as f64 / dc
    );

    // (b) Countdown firings.
    let sizes: &[i64] = if quick {
        &[100_000]
    } else {
        &[100_000, 1_000_000, 10_000_000]
    };
    for &n in sizes {
        let bundle = countdown(n, false);
        let mut engine = Engine::new(&bundle, &RunConfig::default()).expect("engine");
        let t = Instant::now();
        let c = cpu_seconds();
        run_to_end(&mut engine);
        let dt = t.elapsed().as_secs_f64();
        let dc = cpu_seconds() - c;
        let firings = engine.stats().firings;
        assert_eq!(firings, n as u64);
        println!(
            "countdown_firings_per_sec n={n} {:.0} firings/s wall, {:.0} firings/s cpu ({:.3} s wall, {:.3} s cpu)",
            firings as f64 / dt,
            firings as f64 / dc,
            dt,
            dc
        );
    }

    // (b2) The net of examples/countdown (two transitions, priorities), interpreted and with
    // a native runner (the engine's own cost per firing). Best of 3 rounds.
    countdown_xpnet_rounds(if quick { 200_000 } else { 2_000_000 }, 3, "");

    // (c) Memory of 10^6 long tokens on one place (made by the net itself).
    let tokens: i64 = if quick { 100_000 } else { 1_000_000 };
    let bundle = countdown(tokens, true);
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut engine = Engine::new(&bundle, &RunConfig::default()).expect("engine");
    run_to_end(&mut engine);
    let live = CURRENT.load(Ordering::Relaxed) - base;
    let peak = PEAK.load(Ordering::Relaxed) - base;
    let on_place = engine.tokens(PlaceId(1)).len();
    assert_eq!(on_place as i64, tokens);
    println!(
        "memory_long_tokens n={tokens} live {:.1} bytes/token, peak {:.1} bytes/token",
        live as f64 / tokens as f64,
        peak as f64 / tokens as f64
    );
}

fn countdown_xpnet_rounds(n: i64, rounds: usize, only: &str) {
    let bundle = countdown_xpnet();
    let native = || Some(std::sync::Arc::new(Native) as std::sync::Arc<dyn CodeRunnerFactory>);
    for (label, runner, batched) in [
        ("interpreted", None, false),
        ("native", native(), false),
        ("interpreted-batched", None, true),
        ("native-batched", native(), true),
    ] {
        if !only.is_empty() && only != label {
            continue;
        }
        let config = RunConfig {
            runner,
            ..RunConfig::default()
        };
        let mut best = f64::INFINITY;
        for _ in 0..rounds {
            let mut engine = Engine::new(&bundle, &config).expect("engine");
            engine
                .put_inputs(&[("n".into(), vec![Value::Long(n)])])
                .expect("inputs");
            let c = cpu_seconds();
            if batched {
                run_batched(&mut engine);
            } else {
                run_to_end(&mut engine);
            }
            best = best.min(cpu_seconds() - c);
            assert_eq!(engine.stats().firings, n as u64 + 1);
            assert_eq!(engine.tokens(PlaceId(1)), vec![Value::Long(0)]);
        }
        println!(
            "countdown_xpnet_ns_per_firing {label} n={n} {:.1} ns/firing cpu (best of {rounds})",
            best * 1e9 / (n + 1) as f64
        );
    }
}
