//! The run command: compile (if needed), plan the workers, run the job through the agent,
//! print the output tokens.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use pnet_bundle::Bundle;
use pnet_driver::args::{
    COMPILER_OPTIONS_HELP, option_value, parse_number, split_flag, take_compiler_option,
};
use pnet_driver::{ColorMode, load_net, parse_put};
use pnet_stdlib::Value;

use crate::{topo, usage_error};

const USAGE: &str = "\
gspc-run: run a Petri net on workers and print its output tokens

Usage: gspc-run [OPTIONS] NET
       gspc-run put-token|workflow-response|status|close|cancel --control SOCKET ...  (see
       `gspc-run put-token --help`)

NET is a bundle written by pnetc (.pnet) or an .xpnet file, compiled on the fly.
Expression transitions fire inside the agent; module calls run on workers started from the
topology. A net without module calls runs without starting workers.

Options:
  -p, --put PORT=VALUE     put a token on input port PORT before the run; VALUE in the
                           expression language's literal syntax (3L, \"s\", Struct [a := 1], ...);
                           repeatable, also for several tokens on one port
      --json               print the result as JSON (with \"ending\": {\"complete\": BOOL,
                           \"tokens_left\": [{\"place\", \"tokens\"}], \"empty_outputs\": [PORT],
                           \"starved\": [{\"transition\", \"place\"}], \"more_starved\": N})
      --require-outputs    exit with 3 when the net stopped with an out port empty or tokens
                           left on inner places (without it: a warning, exit 0)
      --result FILE        also write the output tokens, with their types, to FILE (a result
                           file: `pnetget FILE` prints them, as literals or JSON)
      --seed N             seed of the random choice among enabled transitions (a fixed
                           default; the same seed repeats a run exactly)
      --max-firings N      stop with an error after N firings (a guard against runaway nets)
      --jit MODE           how to run expressions and conditions: auto (default: compile to
                           native code what pays off once it is hot, interpret the rest), on
                           (compile everything at load), off (interpret everything); without
                           this option, the environment variable PNET_JIT, if set
      --emit jit-stats     print what the JIT compiled and ran to stderr after the run

Workers:
      --topology DESC      the workers to start, GPI-Space's worker description string, e.g.
                           \"compute+CPU:2 reduce:1x1\" (default: \"worker:N\", one worker per core;
                           when the net has memory buffers or transfers, or with --alloc, each
                           default worker gets 64 MiB of working memory: \"worker:N,67108864\")
      --nodefile FILE      hosts to start workers on, one a line (default: this host)
      --launcher NAME      local (default), ssh (OpenSSH to each host of the nodefile) or slurm
                           (srun, inside an allocation)
      --ssh-option OPT     an option for ssh (repeatable), e.g. --ssh-option=-p2222
      --listen ADDR        the agent's address (default 127.0.0.1:0, loopback only)
      --module-path DIR    where workers look for native modules (lib<module>.so) and command
                           modules (<module>.<function> or <module>); repeatable, searched in
                           order, then the net's folder, then gspc-worker's folder, then
                           $PNET_MODULE_PATH
      --max-retries N      re-run a task whose worker died at most N times (default: the
                           net's fhg.drts.schedule.maximum_number_of_retries, else unlimited)
      --dry-run            print which workers would start where, and exit
      --isolate-modules    run native modules in a child process of their worker: a crash
                           (SIGSEGV, abort) fails the task, the worker survives (costs
                           about a pipe round trip per call; no memory buffers)
      --fake-hosts N       testing aid: the i-th worker started gets the host identity
                           `local-<i mod N>` (gspc-worker --host-id), so that workers on this
                           machine move global memory between them over TCP (loopback), as
                           between hosts

Global memory (workers with working memory, a shm size in the topology, offer it; module
calls with memory transfers run only on them):
      --alloc PORT=SIZE    allocate SIZE bytes of global memory (a number, or with a unit:
                           4096, 64K, 16M, 1GiB; zeros: the workers are fresh) once they joined,
                           and put its `global_memory_range` token ([handle := [name := ...],
                           offset := 0UL, size := SIZE]) on input port PORT; repeatable
      --alloc PORT=@FILE   the same, the size of FILE, filled with its bytes
      --dump PORT=FILE     after a successful run, write the bytes of the allocation of
                           --alloc PORT to FILE; repeatable
                           (allocations are freed when the run ends)

Seeing and controlling the run:
      --control SOCKET     accept clients on this Unix socket (`gspc-run put-token ...`); the
                           job then also waits for tokens while nothing else can happen
      --trace FILE         write a Chrome trace-event JSON (open it in Perfetto or
                           chrome://tracing: one lane per worker, one slice per task)
      --log FILE           write the worker event log (joins, losses, retries) to FILE
  -v, --verbose            print worker events on stderr
      --progress           show a progress line on stderr (default when stderr is a terminal)
      --no-progress        do not
  -V, --version            print the version
  -h, --help               print this help

Output: one line `PORT = VALUE` per output token, ports in alphabetical order, the tokens of
a port in the value order of the language. A net that stops early gets a warning on stderr
after them: `gspc-run: warning: the net stopped with tokens left on: p (2), q (1); out port
`r` is empty; transition `t` lacked a token on `x`` (inner places of the root net only; a
place that transitions only read keeps its tokens silently). Before the run, every in port
that got no -p value and that nothing in the net puts a token on is named on stderr.

Exit codes: 0 success, 1 the net did not compile or the run failed, 2 usage errors, 3 the
net stopped with an out port empty or tokens left (only with --require-outputs), 130
cancelled.
";

struct Args {
    net: Option<String>,
    puts: Vec<(String, Value)>,
    json: bool,
    require_outputs: bool,
    result: Option<PathBuf>,
    config: pnet_vm::RunConfig,
    compile: pnet_sema::Options,
    jit: pnet_jit::JitMode,
    jit_stats: bool,
    topology: Option<String>,
    nodefile: Option<PathBuf>,
    launcher: String,
    ssh_options: Vec<String>,
    listen: Option<String>,
    module_path: Vec<PathBuf>,
    max_retries: Option<u32>,
    dry_run: bool,
    control: Option<PathBuf>,
    trace: Option<PathBuf>,
    log: Option<PathBuf>,
    verbose: bool,
    progress: Option<bool>,
    fake_hosts: u32,
    isolate_modules: bool,
    allocs: Vec<AllocArg>,
    dumps: Vec<(String, PathBuf)>,
}

/// `--alloc PORT=SIZE` or `--alloc PORT=@FILE`.
struct AllocArg {
    port: String,
    size: u64,
    file: Option<PathBuf>,
}

/// Splits `PORT=REST` of `flag`.
fn port_value<'a>(flag: &str, v: &'a str, what: &str) -> Result<(&'a str, &'a str), String> {
    match v.split_once('=') {
        Some((p, r)) if !p.trim().is_empty() && !r.is_empty() => Ok((p.trim(), r)),
        _ => Err(format!("{flag}: '{v}' is not PORT={what}")),
    }
}

fn parse_alloc(v: &str) -> Result<AllocArg, String> {
    let (port, rest) = port_value("--alloc", v, "SIZE or PORT=@FILE")?;
    if let Some(file) = rest.strip_prefix('@') {
        let path = PathBuf::from(file);
        let size = std::fs::metadata(&path)
            .map_err(|e| format!("--alloc {v}: cannot read {}: {e}", path.display()))?
            .len();
        return Ok(AllocArg {
            port: port.to_string(),
            size,
            file: Some(path),
        });
    }
    let size = pnet_agent::memory::parse_size(rest).map_err(|e| format!("--alloc {v}: {e}"))?;
    Ok(AllocArg {
        port: port.to_string(),
        size,
        file: None,
    })
}

fn parse_args(argv: &[String]) -> Result<Args, ExitCode> {
    let mut a = Args {
        net: None,
        puts: Vec::new(),
        json: false,
        require_outputs: false,
        result: None,
        config: pnet_vm::RunConfig::default(),
        compile: pnet_sema::Options::default(),
        jit: match std::env::var("PNET_JIT") {
            Ok(v) => pnet_jit::JitMode::parse(&v).ok_or_else(|| {
                usage_error(&format!("PNET_JIT: '{v}' is not one of auto, on, off"))
            })?,
            Err(_) => pnet_jit::JitMode::Auto,
        },
        jit_stats: false,
        topology: None,
        nodefile: None,
        launcher: "local".into(),
        ssh_options: Vec::new(),
        listen: None,
        module_path: Vec::new(),
        max_retries: None,
        dry_run: false,
        control: None,
        trace: None,
        log: None,
        verbose: false,
        progress: None,
        fake_hosts: 0,
        isolate_modules: false,
        allocs: Vec::new(),
        dumps: Vec::new(),
    };
    let mut i = 0;
    while i < argv.len() {
        match take_compiler_option(argv, i, &mut a.compile) {
            Err(msg) => return Err(usage_error(&msg)),
            Ok(n) if n > 0 => {
                i += n;
                continue;
            }
            Ok(_) => {}
        }
        let arg = argv[i].as_str();
        let (flag, inline_value) = split_flag(arg);
        let take_value = |i: &mut usize| -> Result<String, ExitCode> {
            option_value(argv, i, flag, inline_value).map_err(|m| usage_error(&m))
        };
        let number = |v: &str| -> Result<u64, ExitCode> {
            parse_number(flag, v).map_err(|m| usage_error(&m))
        };
        match flag {
            "-h" | "--help" => {
                pnet_stdlib::outln!("{USAGE}\n{COMPILER_OPTIONS_HELP}");
                return Err(ExitCode::SUCCESS);
            }
            "-V" | "--version" => {
                pnet_stdlib::outln!("gspc-run {}", env!("CARGO_PKG_VERSION"));
                return Err(ExitCode::SUCCESS);
            }
            "-p" | "--put" => {
                let v = take_value(&mut i)?;
                a.puts.push(parse_put(&v).map_err(|m| usage_error(&m))?);
            }
            "--json" => a.json = true,
            "--require-outputs" => a.require_outputs = true,
            "--result" => a.result = Some(PathBuf::from(take_value(&mut i)?)),
            "--seed" => a.config.seed = number(&take_value(&mut i)?)?,
            "--max-firings" => a.config.max_firings = Some(number(&take_value(&mut i)?)?),
            "--jit" => {
                let v = take_value(&mut i)?;
                a.jit = pnet_jit::JitMode::parse(&v).ok_or_else(|| {
                    usage_error(&format!("--jit: '{v}' is not one of auto, on, off"))
                })?;
            }
            "--emit" => {
                let v = take_value(&mut i)?;
                if v != "jit-stats" {
                    return Err(usage_error(&format!("--emit: '{v}' is not jit-stats")));
                }
                a.jit_stats = true;
            }
            "--topology" => a.topology = Some(take_value(&mut i)?),
            "--nodefile" => a.nodefile = Some(PathBuf::from(take_value(&mut i)?)),
            "--launcher" => a.launcher = take_value(&mut i)?,
            "--ssh-option" => a.ssh_options.push(take_value(&mut i)?),
            "--listen" => a.listen = Some(take_value(&mut i)?),
            "--module-path" => a.module_path.push(PathBuf::from(take_value(&mut i)?)),
            "--max-retries" => {
                let n = number(&take_value(&mut i)?)?;
                a.max_retries = Some(u32::try_from(n).unwrap_or(u32::MAX));
            }
            "--dry-run" => a.dry_run = true,
            "--isolate-modules" => a.isolate_modules = true,
            "--fake-hosts" => {
                let n = number(&take_value(&mut i)?)?;
                a.fake_hosts = u32::try_from(n)
                    .map_err(|_| usage_error(&format!("--fake-hosts: {n} is too many")))?;
            }
            "--alloc" => {
                let v = take_value(&mut i)?;
                let alloc = parse_alloc(&v).map_err(|m| usage_error(&m))?;
                if a.allocs.iter().any(|x| x.port == alloc.port) {
                    return Err(usage_error(&format!(
                        "--alloc: port `{}` is given twice",
                        alloc.port
                    )));
                }
                a.allocs.push(alloc);
            }
            "--dump" => {
                let v = take_value(&mut i)?;
                let (port, file) = port_value("--dump", &v, "FILE").map_err(|m| usage_error(&m))?;
                a.dumps.push((port.to_string(), PathBuf::from(file)));
            }
            "--control" => a.control = Some(PathBuf::from(take_value(&mut i)?)),
            "--trace" => a.trace = Some(PathBuf::from(take_value(&mut i)?)),
            "--log" => a.log = Some(PathBuf::from(take_value(&mut i)?)),
            "-v" | "--verbose" => a.verbose = true,
            "--progress" => a.progress = Some(true),
            "--no-progress" => a.progress = Some(false),
            _ if arg.starts_with("-p") && arg.len() > 2 => {
                a.puts
                    .push(parse_put(&arg[2..]).map_err(|m| usage_error(&m))?);
            }
            _ if arg.starts_with('-') => {
                return Err(usage_error(&format!("unknown option '{arg}'")));
            }
            _ => {
                if a.net.is_some() {
                    return Err(usage_error(&format!("more than one net ('{arg}')")));
                }
                a.net = Some(arg.to_string());
            }
        }
        i += 1;
    }
    if a.net.is_none() && !a.dry_run {
        return Err(usage_error("no net given"));
    }
    for (port, file) in &a.dumps {
        if !a.allocs.iter().any(|x| &x.port == port) {
            return Err(usage_error(&format!(
                "--dump {port}={}: there is no --alloc {port}=...",
                file.display()
            )));
        }
    }
    Ok(a)
}

fn load(net: &str, compile: &pnet_sema::Options) -> Result<Bundle, ExitCode> {
    let path = Path::new(net);
    let loaded = std::fs::read(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))
        .and_then(|bytes| load_net(path, &bytes, compile, ColorMode::Auto));
    loaded.map(|(bundle, _)| bundle).map_err(|msg| {
        eprintln!("gspc-run: {msg}");
        ExitCode::from(1)
    })
}

pub fn main(argv: &[String]) -> ExitCode {
    let args = match parse_args(argv) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let bundle = match &args.net {
        Some(net) => match load(net, &args.compile) {
            Ok(b) => Some(b),
            Err(code) => return code,
        },
        None => None,
    };
    // Nets with memory transfers need workers with working memory.
    let uses_memory =
        !args.allocs.is_empty() || bundle.as_ref().is_some_and(pnet_agent::uses_memory);
    let default_shm = if uses_memory {
        pnet_agent::DEFAULT_WORKER_SHM
    } else {
        0
    };
    let plan = match topo::plan(
        args.topology.as_deref(),
        args.nodefile.as_deref(),
        &args.launcher,
        default_shm,
    ) {
        Ok(p) => p,
        Err(code) => return code,
    };
    if args.dry_run {
        pnet_stdlib::out!("{plan}");
        if bundle
            .as_ref()
            .is_some_and(|b| !pnet_agent::calls_modules(b))
        {
            pnet_stdlib::outln!("(the net has no module calls: it would run without workers)");
        }
        return ExitCode::SUCCESS;
    }
    let Some(bundle) = bundle else {
        return usage_error("no net given");
    };
    let launcher = match topo::launcher(&args.launcher, &args.ssh_options) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let listen = match args.listen.as_deref().unwrap_or("127.0.0.1:0").parse() {
        Ok(a) => a,
        Err(_) => {
            return usage_error(&format!(
                "--listen: '{}' is not an address like 127.0.0.1:0",
                args.listen.as_deref().unwrap_or_default()
            ));
        }
    };
    let net = args.net.clone().unwrap_or_default();
    // Group the puts by port, keeping their order.
    let mut inputs: Vec<(String, Vec<Value>)> = Vec::new();
    for (port, v) in &args.puts {
        match inputs.iter_mut().find(|(p, _)| p == port) {
            Some((_, vs)) => vs.push(v.clone()),
            None => inputs.push((port.clone(), vec![v.clone()])),
        }
    }
    // In ports that nothing will ever fill (a forgotten -p).
    let given: Vec<String> = (inputs.iter().map(|(p, _)| p.clone()))
        .chain(args.allocs.iter().map(|a| a.port.clone()))
        .collect();
    for port in pnet_vm::unfed_in_ports(&bundle, &given) {
        eprintln!(
            "gspc-run: warning: in port `{port}` got no value (-p {port}=...) and nothing in \
             the net puts a token on it"
        );
    }
    let jit = std::sync::Arc::new(pnet_jit::JitFactory::new(args.jit));
    let mut run = args.config.clone();
    if args.jit != pnet_jit::JitMode::Off {
        run.runner = Some(jit.clone());
    }
    let mut module_path = args.module_path.clone();
    if let Some(dir) = Path::new(&net).parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        module_path.push(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()));
    }
    // Last: the folder of gspc-worker, where cargo also puts the example native modules.
    let worker = pnet_agent::worker_program();
    if let Some(dir) = worker.parent().filter(|d| !d.as_os_str().is_empty()) {
        module_path.push(dir.to_path_buf());
    }
    let config = pnet_agent::AgentConfig {
        run,
        plan,
        launcher,
        worker_program: worker,
        module_path,
        listen,
        trace: args.trace.clone(),
        log: args.log.clone(),
        verbose: args.verbose,
        progress: args
            .progress
            .unwrap_or_else(|| std::io::stderr().is_terminal()),
        control: args.control.clone(),
        max_retries: args.max_retries,
        start_workers: pnet_agent::StartWorkers::IfModules,
        fake_hosts: args.fake_hosts,
        isolate_modules: args.isolate_modules,
    };
    let mut options = pnet_agent::JobOptions::default();
    for a in &args.allocs {
        let data = match &a.file {
            Some(path) => match std::fs::read(path) {
                Ok(d) => Some(d),
                Err(e) => {
                    eprintln!(
                        "gspc-run: error: --alloc {}=@{}: cannot read it: {e}",
                        a.port,
                        path.display()
                    );
                    return ExitCode::from(1);
                }
            },
            None => None,
        };
        options.allocs.push(pnet_agent::MemAlloc {
            port: a.port.clone(),
            size: data.as_ref().map_or(a.size, |d| d.len() as u64),
            data,
        });
    }
    options.dumps = args.dumps.clone();
    let result = pnet_agent::run_job_with(&bundle, &inputs, &config, options);
    if args.jit_stats {
        let mut stats = jit.stats();
        stats.mode = Some(args.jit);
        eprint!("{stats}");
    }
    let result = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("gspc-run: error: {e}");
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(1));
        }
    };
    if let Some(path) = &args.result {
        let file = pnet_bundle::result::RunOutputs::new(&bundle, &net, &result.outputs);
        let written = file
            .encode()
            .map_err(|e| e.to_string())
            .and_then(|b| std::fs::write(path, b).map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!(
                "gspc-run: cannot write the result file {}: {e}",
                path.display()
            );
            return ExitCode::from(1);
        }
    }
    print_result(result, args.json, args.require_outputs)
}

fn print_result(result: pnet_vm::RunResult, json: bool, require_outputs: bool) -> ExitCode {
    let text = pnet_agent::output::format_outputs(
        &result.outputs,
        result.stats.firings,
        result.stats.tasks,
        &result.ending,
        json,
    );
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if let Some(w) = pnet_agent::output::ending_warning("gspc-run", &result.ending) {
        eprintln!("{w}");
    }
    match written {
        Ok(()) if require_outputs && !result.ending.is_complete() => ExitCode::from(3),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gspc-run: cannot write the result: {e}");
            ExitCode::from(1)
        }
    }
}
