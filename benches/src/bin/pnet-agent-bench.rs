//! Throughput and latency of the agent with real local `gspc-worker`s running the native
//! no-op module (`libnoop.so`, function `run`: in `x: control`, out `y: control`).
//!
//! Throughput: a hand-built net feeds N tokens to a transition calling `noop.run` and counts
//! the results; reported as tasks/s with the agent's peak RSS (VmHWM of this process; the
//! workers are other processes). Latency: a net that runs one task at a time; the median and
//! the 99th percentile of the dispatch-to-result times are read from the agent's trace.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use pnet_agent::{AgentConfig, JobOptions, SchedConfig, run_job_with};
use pnet_bundle::{
    Body, Bundle, Code, CodeId, ConnectKind, Connection, Function, FunctionId, Instr, Module, Net,
    OpTy, Place, PlaceId, Port, PortDir, PortId, Slot, SlotKind, SourceFile, SourceFileId,
    SourceSpan, Transition,
};
use pnet_stdlib::{BinOp, Type, Value};

const HELP: &str = "\
pnet-agent-bench: throughput and latency of the agent with local gspc-workers

USAGE: pnet-agent-bench [OPTIONS]

OPTIONS:
  --tasks N[,N...]     numbers of no-op tasks to run, one job each (default 10000,100000)
  --workers N          local workers (default 2)
  --latency-tasks N    sequential tasks for the latency measurement (default 2000; 0: skip)
  --window N           a fixed window of tasks in flight per worker (default: adaptive)
  --worker PATH        the gspc-worker program (default: next to this program)
  --module-path DIR    where libnoop.so is (default: the worker program's directory)
  --json               print one JSON object per measurement instead of text
  -h, --help           this help
";

struct Args {
    tasks: Vec<u64>,
    workers: u32,
    latency_tasks: u64,
    window: Option<u32>,
    worker: Option<PathBuf>,
    module_path: Option<PathBuf>,
    json: bool,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut a = Args {
        tasks: vec![10_000, 100_000],
        workers: 2,
        latency_tasks: 2000,
        window: None,
        worker: None,
        module_path: None,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        let num = |name: &str, v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{name}: `{v}` is not a number"))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--tasks" => {
                let v = value("--tasks")?;
                a.tasks = v
                    .split(',')
                    .map(|s| num("--tasks", s.trim().to_string()))
                    .collect::<Result<_, _>>()?;
            }
            "--workers" => {
                let v = value("--workers")?;
                a.workers = u32::try_from(num("--workers", v)?)
                    .map_err(|_| "--workers: too large".to_string())?;
            }
            "--latency-tasks" => {
                let v = value("--latency-tasks")?;
                a.latency_tasks = num("--latency-tasks", v)?;
            }
            "--window" => {
                let v = value("--window")?;
                a.window = Some(
                    u32::try_from(num("--window", v)?)
                        .map_err(|_| "--window: too large".to_string())?,
                );
            }
            "--worker" => a.worker = Some(PathBuf::from(value("--worker")?)),
            "--module-path" => a.module_path = Some(PathBuf::from(value("--module-path")?)),
            "--json" => a.json = true,
            other => return Err(format!("unknown argument `{other}` (see --help)")),
        }
    }
    if a.workers == 0 {
        return Err("--workers must be at least 1".into());
    }
    Ok(Some(a))
}

// ---------------------------------------------------------------------------------------------
// The nets.

fn sp() -> SourceSpan {
    SourceSpan {
        file: SourceFileId(0),
        start: 0,
        end: 1,
    }
}

fn port(name: &str, dir: PortDir, ty: Type, place: Option<u32>) -> Port {
    Port::new(name, dir, ty, place, sp())
}

fn place(name: &str, ty: Type, tokens: Vec<Value>) -> Place {
    Place::new(name, ty, tokens, sp())
}

fn conn(kind: ConnectKind, port: u32, place: u32) -> Connection {
    Connection {
        kind,
        port: PortId(port),
        place: PlaceId(place),
        span: sp(),
    }
}

fn transition(
    name: &str,
    function: u32,
    priority: u16,
    condition: Option<u32>,
    connections: Vec<Connection>,
) -> Transition {
    Transition {
        priority,
        condition: condition.map(CodeId),
        ..Transition::new(name, FunctionId(function), connections, sp())
    }
}

fn function(name: &str, ports: Vec<Port>, body: Body) -> Function {
    Function::new(name, ports, body, sp())
}

fn code(
    name: &str,
    ports: &Function,
    instrs: Vec<Instr>,
    consts: Vec<Value>,
    reads: Vec<u16>,
) -> Code {
    Code {
        name: name.into(),
        spans: vec![sp(); instrs.len()],
        instrs,
        consts,
        paths: Vec::new(),
        slots: ports
            .ports
            .iter()
            .map(|p| Slot {
                name: p.name.clone(),
                kind: SlotKind::Port,
                ty: p.ty.clone(),
            })
            .collect(),
        reads,
        result: Type::Any,
        span: sp(),
    }
}

fn noop() -> Function {
    function(
        "noop",
        vec![
            port("x", PortDir::In, Type::Control, None),
            port("y", PortDir::Out, Type::Control, None),
        ],
        Body::Module(Module::new(
            "noop",
            "run",
            vec!["x".into(), "y".into()],
            sp(),
        )),
    )
}

/// The net: in port `n` (long). `gen` (priority 0, while n > 0) counts n down and puts a
/// control token on `xs` (when `sequential`, it also needs the `turn` token); `call`
/// (priority 1) runs noop.run from `xs` to `ys`; `count` (priority 1) adds each result to
/// `total` (and gives the turn back). Out port `done` = the count.
fn bench_net(sequential: bool) -> Bundle {
    // Places: 0 left (long), 1 xs, 2 ys, 3 total (ulong), 4 turn (control).
    let mut gen_ports = vec![
        port("n", PortDir::In, Type::Long, None),
        port("m", PortDir::Out, Type::Long, None),
        port("x", PortDir::Out, Type::Control, None),
    ];
    if sequential {
        gen_ports.push(port("t", PortDir::In, Type::Control, None));
    }
    let gen_f = function("gen", gen_ports, Body::Expression(CodeId(0)));
    let count_f = function(
        "count",
        vec![
            port("y", PortDir::In, Type::Control, None),
            port("c", PortDir::In, Type::ULong, None),
            port("d", PortDir::Out, Type::ULong, None),
            port("t", PortDir::Out, Type::Control, None),
        ],
        Body::Expression(CodeId(2)),
    );
    let gen_code = code(
        "expression of gen",
        &gen_f,
        vec![
            Instr::Load(0),
            Instr::Const(0),
            Instr::Binary(BinOp::Sub, OpTy::Long),
            Instr::Store(1),
            Instr::Const(1),
            Instr::Store(2),
        ],
        vec![Value::Long(1), Value::Control],
        vec![],
    );
    let cond = code(
        "condition of gen",
        &gen_f,
        vec![
            Instr::Load(0),
            Instr::Const(0),
            Instr::Binary(BinOp::Gt, OpTy::Long),
        ],
        vec![Value::Long(0)],
        vec![0],
    );
    let count_code = code(
        "expression of count",
        &count_f,
        vec![
            Instr::Load(1),
            Instr::Const(0),
            Instr::Binary(BinOp::Add, OpTy::ULong),
            Instr::Store(2),
            Instr::Const(1),
            Instr::Store(3),
        ],
        vec![Value::ULong(1), Value::Control],
        vec![],
    );
    let mut gen_conns = vec![
        conn(ConnectKind::In, 0, 0),
        conn(ConnectKind::Out, 1, 0),
        conn(ConnectKind::Out, 2, 1),
    ];
    let mut count_conns = vec![
        conn(ConnectKind::In, 0, 2),
        conn(ConnectKind::In, 1, 3),
        conn(ConnectKind::Out, 2, 3),
    ];
    if sequential {
        gen_conns.push(conn(ConnectKind::In, 3, 4));
        count_conns.push(conn(ConnectKind::Out, 3, 4));
    }
    let root = function(
        "bench",
        vec![
            port("n", PortDir::In, Type::Long, Some(0)),
            port("done", PortDir::Out, Type::ULong, Some(3)),
        ],
        Body::Net(Net {
            places: vec![
                place("left", Type::Long, vec![]),
                place("xs", Type::Control, vec![]),
                place("ys", Type::Control, vec![]),
                place("total", Type::ULong, vec![Value::ULong(0)]),
                place(
                    "turn",
                    Type::Control,
                    if sequential {
                        vec![Value::Control]
                    } else {
                        vec![]
                    },
                ),
            ],
            transitions: vec![
                transition("gen", 1, 0, Some(1), gen_conns),
                transition(
                    "call",
                    2,
                    1,
                    None,
                    vec![conn(ConnectKind::In, 0, 1), conn(ConnectKind::Out, 1, 2)],
                ),
                transition("count", 3, 1, None, count_conns),
            ],
        }),
    );
    Bundle {
        root: FunctionId(0),
        functions: vec![root, gen_f, noop(), count_f],
        codes: vec![gen_code, cond, count_code],
        structs: Vec::new(),
        files: vec![SourceFile::new("bench.xpnet", "<bench/>\n")],
    }
}

// ---------------------------------------------------------------------------------------------

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn run(args: &Args, cfg: &AgentConfig, n: u64, sequential: bool) -> Result<f64, String> {
    let b = bench_net(sequential);
    let inputs = vec![("n".to_string(), vec![Value::Long(n as i64)])];
    let options = JobOptions {
        sched: match args.window {
            Some(w) => SchedConfig::fixed(w),
            None => SchedConfig::default(),
        },
        ..JobOptions::default()
    };
    let t = Instant::now();
    let r = run_job_with(&b, &inputs, cfg, options).map_err(|e| e.to_string())?;
    let secs = t.elapsed().as_secs_f64();
    let done = r
        .outputs
        .iter()
        .find(|(p, _)| p == "done")
        .and_then(|(_, v)| v.first().cloned());
    if done != Some(Value::ULong(n)) {
        return Err(format!("expected {n} tasks done, the net says {done:?}"));
    }
    Ok(secs)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("pnet-agent-bench: {e}");
            return ExitCode::from(2);
        }
    };
    let worker = match &args.worker {
        Some(w) => w.clone(),
        None => match std::env::current_exe() {
            Ok(p) => p.with_file_name("gspc-worker"),
            Err(e) => {
                eprintln!("pnet-agent-bench: cannot find this program's directory: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    if !worker.is_file() {
        eprintln!(
            "pnet-agent-bench: the worker program {} does not exist (build it: cargo build --release -p pnet-worker -p pnet-example-noop, or pass --worker)",
            worker.display()
        );
        return ExitCode::FAILURE;
    }
    let module_dir = args
        .module_path
        .clone()
        .or_else(|| worker.parent().map(PathBuf::from))
        .unwrap_or_default();
    if !module_dir.join("libnoop.so").is_file() {
        eprintln!(
            "pnet-agent-bench: {} has no libnoop.so (build it: cargo build --release -p pnet-example-noop, or pass --module-path)",
            module_dir.display()
        );
        return ExitCode::FAILURE;
    }
    let plan = pnet_topology::plan(
        &pnet_topology::default_topology(args.workers),
        &[pnet_topology::local_hostname()],
    );
    let mut cfg = AgentConfig::new(plan, worker);
    cfg.module_path = vec![module_dir];
    for &n in &args.tasks {
        match run(&args, &cfg, n, false) {
            Ok(secs) => {
                let rate = n as f64 / secs;
                let rss = vm_hwm_kib();
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({"measure": "throughput", "tasks": n, "workers": args.workers,
                                           "seconds": secs, "tasks_per_second": rate, "agent_max_rss_kib": rss})
                    );
                } else {
                    println!(
                        "throughput: {n} no-op tasks on {} workers in {secs:.3} s = {rate:.0} tasks/s; agent max RSS {:.1} MiB",
                        args.workers,
                        rss as f64 / 1024.0
                    );
                }
            }
            Err(e) => {
                eprintln!("pnet-agent-bench: {n} tasks: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if args.latency_tasks > 0 {
        let dir = std::env::temp_dir().join(format!("pnet-agent-bench-{}", std::process::id()));
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("pnet-agent-bench: cannot create {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
        let trace = dir.join("trace.json");
        let mut lcfg = cfg.clone();
        lcfg.trace = Some(trace.clone());
        let n = args.latency_tasks;
        let res = run(&args, &lcfg, n, true).and_then(|secs| {
            let text = std::fs::read_to_string(&trace).map_err(|e| e.to_string())?;
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            let mut durs: Vec<f64> = v["traceEvents"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter(|e| e["ph"] == "X")
                        .filter_map(|e| {
                            Some(
                                e["args"]["answered_us"].as_f64()?
                                    - e["args"]["sent_us"].as_f64()?,
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            durs.sort_by(f64::total_cmp);
            if durs.is_empty() {
                return Err("the trace has no tasks".into());
            }
            let q = |p: f64| durs[((durs.len() as f64 - 1.0) * p).round() as usize];
            Ok((secs, q(0.5), q(0.99)))
        });
        let _ = std::fs::remove_dir_all(&dir);
        match res {
            Ok((secs, p50, p99)) => {
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({"measure": "latency", "tasks": n, "seconds": secs,
                                           "median_us": p50, "p99_us": p99})
                    );
                } else {
                    println!(
                        "latency: {n} sequential tasks in {secs:.3} s; round trip median {p50:.1} µs, p99 {p99:.1} µs"
                    );
                }
            }
            Err(e) => {
                eprintln!("pnet-agent-bench: latency: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
