//! The cost of `--isolate-modules`: no-op native calls (`libnoop.so`) run by the executor in
//! process and in the module host, side by side in one run (interleaved rounds).
//!
//!     cargo bench -p pnet-worker --bench isolated [-- CALLS ROUNDS]
//!
//! Prints the median time per call of each mode, and one command-module call (a `/bin/true`-
//! like script under the supervisor) for scale.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pnet_protocol::{ModuleDef, TaskRun, WorkerMsg};
use pnet_stdlib::{Type, Value};
use pnet_worker::exec::{Executor, Shared};

fn def(id: u32, module: &str, function: &str, inputs: &[&str], outputs: &[&str]) -> ModuleDef {
    ModuleDef {
        id,
        module: module.into(),
        function: function.into(),
        target: None,
        inputs: inputs
            .iter()
            .map(|n| (n.to_string(), Type::Control))
            .collect(),
        outputs: outputs
            .iter()
            .map(|n| (n.to_string(), Type::Control))
            .collect(),
        pass_context: false,
        location: "bench:1:1".into(),
    }
}

/// Runs `calls` tasks of implementation 0 on an executor; the time per call.
fn per_call(
    defs: &[ModuleDef],
    dirs: &[std::path::PathBuf],
    isolate: bool,
    supervised: bool,
    calls: u64,
) -> Duration {
    let mut exec = Executor::new("bench".into(), defs.to_vec(), dirs.to_vec());
    let helper = supervised.then(|| env!("CARGO_BIN_EXE_gspc-worker").into());
    exec.set_helper(helper, isolate);
    let shared = Arc::new(Shared::default());
    let (tx, rx) = std::sync::mpsc::channel();
    let s = shared.clone();
    let thread = std::thread::spawn(move || exec.run_loop(&s, |m| tx.send(m).is_ok()));
    let inputs = vec![Value::Control; defs[0].inputs.len()];
    let task = |task| TaskRun {
        task,
        module: 0,
        inputs: inputs.clone(),
        memory: None,
    };
    // One call first: loading the library, starting the host.
    shared.push(vec![task(0)]);
    assert!(matches!(rx.recv().unwrap(), WorkerMsg::DoneAt { .. }));
    let start = Instant::now();
    // One at a time, as a worker with a window of one runs them.
    for t in 1..=calls {
        shared.push(vec![task(t)]);
        match rx.recv().unwrap() {
            WorkerMsg::DoneAt { .. } => {}
            other => panic!("unexpected answer {other:?}"),
        }
    }
    let elapsed = start.elapsed();
    shared.stop(Duration::from_secs(1));
    thread.join().unwrap();
    elapsed / u32::try_from(calls).unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let calls = args.first().copied().unwrap_or(20_000);
    let rounds = args.get(1).copied().unwrap_or(5);
    let native = pnet_tests::build_packages(&["pnet-example-noop"]);
    let noop = [def(0, "noop", "run", &["x"], &["y"])];
    let dir = std::env::temp_dir().join(format!("pnet-isolated-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("nothing.run");
    std::fs::write(&script, "#!/bin/sh\ncat > /dev/null\necho '{}'\n").unwrap();
    std::fs::set_permissions(
        &script,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();
    let command = [def(0, "nothing", "run", &[], &[])];
    let (mut inproc, mut isolated) = (Vec::new(), Vec::new());
    let (mut supervised, mut bare) = (Vec::new(), Vec::new());
    let cmd_calls = calls / 200 + 1;
    for _ in 0..rounds {
        let native = std::slice::from_ref(&native);
        inproc.push(per_call(&noop, native, false, true, calls));
        isolated.push(per_call(&noop, native, true, true, calls));
        let dir = std::slice::from_ref(&dir);
        supervised.push(per_call(&command, dir, false, true, cmd_calls));
        bare.push(per_call(&command, dir, false, false, cmd_calls));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let (a, b) = (us(median(inproc)), us(median(isolated)));
    let (c, d) = (us(median(supervised)), us(median(bare)));
    println!("median time per call of {rounds} rounds, calls one at a time:");
    println!("  no-op native, in process ({calls} calls)      {a:>9.2} us");
    println!(
        "  no-op native, isolated ({calls} calls)        {b:>9.2} us  (+{:.2} us)",
        b - a
    );
    println!("  sh command, supervised ({cmd_calls} calls)          {c:>9.0} us");
    println!(
        "  sh command, not supervised ({cmd_calls} calls)      {d:>9.0} us  (supervisor: +{:.0} us)",
        c - d
    );
}
