use std::sync::atomic::AtomicUsize;

use pnet_stdlib::{Type, Value};

use super::*;

fn def(id: u32, module: &str, function: &str, outputs: Vec<(&str, Type)>) -> ModuleDef {
    ModuleDef {
        id,
        module: module.into(),
        function: function.into(),
        target: None,
        inputs: vec![("s".into(), Type::String)],
        outputs: outputs.into_iter().map(|(n, t)| (n.into(), t)).collect(),
        pass_context: false,
        location: "net.xpnet:3:5".into(),
    }
}

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "pnet-worker-unit-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn script(&self, name: &str, text: &str) {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run_one(exec: &mut Executor, module: u32, input: &str) -> Result<Vec<Value>, String> {
    let shared = Shared::default();
    let task = TaskRun {
        task: 7,
        module,
        inputs: vec![Value::string(input)],
        memory: None,
    };
    shared.push(vec![task]);
    let (task, _) = shared.next().unwrap();
    let r = exec.run(&shared, &task);
    assert!(!shared.finish());
    r
}

#[test]
fn outputs_are_checked_against_the_ports() {
    let d = def(1, "m", "f", vec![("r", Type::Long), ("c", Type::Control)]);
    assert_eq!(
        decode_outputs(&d, br#" {"r": 3, "c": null} "#),
        Ok(vec![Value::Long(3), Value::Control])
    );
    assert_eq!(
        decode_outputs(&d, br#"{"r": 3}"#),
        Err("outputs: missing output port `c` (control)".into())
    );
    assert_eq!(
        decode_outputs(&d, br#"{"r": 3, "c": null, "z": 1}"#),
        Err("outputs: unknown output port `z` (the output ports are: r, c)".into())
    );
    assert_eq!(
        decode_outputs(&d, br#"{"r": "x", "c": null}"#),
        Err("outputs.r: expected an integer (long), found the string \"x\"".into())
    );
    assert_eq!(
        decode_outputs(&d, b"[1]"),
        Err("outputs: expected a JSON object of the output ports, found [1]".into())
    );
    let e = decode_outputs(&d, b"hello").unwrap_err();
    assert!(
        e.starts_with("outputs: not JSON (expected value at line 1 column 1): hello"),
        "{e}"
    );
    let none = def(2, "m", "f", vec![]);
    assert_eq!(decode_outputs(&none, b"\n"), Ok(vec![]));
    assert_eq!(decode_outputs(&none, b"{}"), Ok(vec![]));
}

#[test]
fn command_modules_by_module_and_function() {
    let dir = TempDir::new();
    dir.script(
        "shout.upper",
        "#!/bin/sh\nread -r line\necho \"{\\\"r\\\": $(echo \"$line\" | sed 's/.*\"s\":\\(\"[^\"]*\"\\).*/\\1/' | tr a-z A-Z), \\\"env\\\": \\\"$PNET_MODULE.$PNET_FUNCTION.$PNET_TASK.$PNET_WORKER\\\"}\"\n",
    );
    dir.script(
        "multi",
        "#!/bin/sh\ncat > /dev/null\necho \"{\\\"r\\\": \\\"$1\\\"}\"\n",
    );
    let defs = vec![
        def(
            1,
            "shout",
            "upper",
            vec![("r", Type::String), ("env", Type::String)],
        ),
        def(2, "multi", "first", vec![("r", Type::String)]),
        def(3, "absent", "f", vec![]),
        def(4, "shuot", "upper", vec![("r", Type::String)]),
    ];
    let mut exec = Executor::new("w1".into(), defs, vec![dir.0.clone()]);
    assert_eq!(
        run_one(&mut exec, 1, "hello"),
        Ok(vec![
            Value::string("HELLO"),
            Value::string("shout.upper.7.w1")
        ])
    );
    assert_eq!(run_one(&mut exec, 2, "x"), Ok(vec![Value::string("first")]));
    assert_eq!(
        run_one(&mut exec, 3, "x"),
        Err(format!(
            "net.xpnet:3:5: module absent.f: not found: no libabsent.so, executable absent.f or \
             executable absent; searched {}",
            dir.0.display()
        ))
    );
    // A misspelt module: the nearest one found is suggested.
    assert_eq!(
        run_one(&mut exec, 4, "x"),
        Err(format!(
            "net.xpnet:3:5: module shuot.upper: not found: no libshuot.so, executable \
             shuot.upper or executable shuot; searched {}; did you mean `shout` ({})?",
            dir.0.display(),
            dir.0.join("shout.upper").display()
        ))
    );
    assert_eq!(
        run_one(&mut exec, 9, "x"),
        Err("task 7 names module implementation 9, which the agent did not announce".into())
    );
}

#[test]
fn failing_commands_report_status_and_stderr() {
    let dir = TempDir::new();
    dir.script(
        "bad.f",
        "#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo line $i >&2; done\nexit 3\n",
    );
    let mut exec = Executor::new(
        "w".into(),
        vec![def(1, "bad", "f", vec![])],
        vec![dir.0.clone()],
    );
    let program = dir.0.join("bad.f");
    assert_eq!(
        run_one(&mut exec, 1, "x"),
        Err(format!(
            "net.xpnet:3:5: module bad.f: {} exited with status 3; stderr:\n{}",
            program.display(),
            (3..=12)
                .map(|i| format!("line {i}"))
                .collect::<Vec<_>>()
                .join("\n")
        ))
    );
}

#[test]
fn cancel_drops_queued_tasks() {
    let shared = Shared::default();
    let t = |task| TaskRun {
        task,
        module: 0,
        inputs: vec![],
        memory: None,
    };
    shared.push(vec![t(1), t(2), t(3)]);
    assert_eq!(shared.cancel(2), CancelOutcome::Dropped);
    assert_eq!(shared.next().map(|(t, _)| t.task), Some(1));
    assert_eq!(shared.running(), Some(1));
    assert_eq!(shared.cancel(1), CancelOutcome::Signalled);
    assert!(shared.finish());
    assert_eq!(shared.running(), None);
    assert_eq!(shared.cancel(1), CancelOutcome::Unknown);
    assert_eq!(shared.next().map(|(t, _)| t.task), Some(3));
    assert!(!shared.finish());
    shared.stop(std::time::Duration::from_secs(1));
    assert!(shared.next().is_none());
}

/// A stop while a command module is being started (its process group not yet known) waits
/// until the executor has recorded the group, which kills it, and the task has ended; a stop
/// before the start keeps the command from starting at all.
#[test]
fn stop_while_a_command_starts_waits_for_it() {
    let t = |task| TaskRun {
        task,
        module: 0,
        inputs: vec![],
        memory: None,
    };
    let shared = Arc::new(Shared::default());
    shared.push(vec![t(1)]);
    assert_eq!(shared.next().map(|(t, _)| t.task), Some(1));
    assert!(shared.starting_command());
    // Timed from before the stopper's thread exists (a thread that starts late must not
    // shorten the wait it sees: the executor's 200 ms below begin after this instant).
    let start = std::time::Instant::now();
    let stopper = {
        let shared = shared.clone();
        std::thread::spawn(move || {
            shared.stop(std::time::Duration::from_secs(20));
            start.elapsed()
        })
    };
    // The executor's side: the command runs, its group is recorded (and killed: a child in
    // its own group that would otherwise sleep for a minute), then it is reaped.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut child = std::process::Command::new("sleep")
        .arg("60")
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    shared.set_child(Some(pid));
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    shared.set_child(None);
    assert!(shared.finish());
    let waited = stopper.join().unwrap();
    assert!(
        waited >= std::time::Duration::from_millis(200),
        "{waited:?}"
    );

    // Stopped before the start: nothing starts.
    let shared = Shared::default();
    shared.push(vec![t(2)]);
    assert_eq!(shared.next().map(|(t, _)| t.task), Some(2));
    shared.cancel(2);
    assert!(!shared.starting_command());
}

#[test]
fn a_command_answer_after_log_lines() {
    assert_eq!(
        split_answer(b"{\"a\": 1}\n"),
        (&b"{\"a\": 1}\n"[..], &b""[..])
    );
    assert_eq!(
        split_answer(b"{\n \"a\": 1\n}\n"),
        (&b"{\n \"a\": 1\n}\n"[..], &b""[..])
    );
    assert_eq!(
        split_answer(b"working\n50%\n{\"a\": 1}\n\n"),
        (&b"{\"a\": 1}"[..], &b"working\n50%\n"[..])
    );
    // Not an answer: all of it goes to the check (which says it is not JSON).
    assert_eq!(split_answer(b"oops\nno"), (&b"oops\nno"[..], &b""[..]));
    assert_eq!(split_answer(b"x\n[1]"), (&b"x\n[1]"[..], &b""[..]));
}

#[test]
fn stderr_tail_keeps_the_end() {
    let text: Vec<u8> = (0..100_000u32)
        .flat_map(|i| (i % 10).to_string().into_bytes())
        .collect();
    let (tail, cut) = read_tail(text.as_slice(), 100);
    assert_eq!(tail, &text[text.len() - 100..]);
    assert_eq!(cut, text.len() as u64 - 100);
    assert_eq!(stderr_tail_message(b""), "");
    assert_eq!(stderr_tail_message(b"a\nb\n"), "; stderr:\na\nb");
    assert_eq!(
        read_limited(&b"abcdef"[..], 3),
        Err("its output is larger than 3 bytes".into())
    );
    assert_eq!(read_limited(&b"abc"[..], 3), Ok(b"abc".to_vec()));
}

#[test]
fn modules_announced_later_are_found_and_forgotten_ones_are_not() {
    let dir = TempDir::new();
    dir.script(
        "late.f",
        "#!/bin/sh\ncat > /dev/null\necho '{\"r\": \"ok\"}'\n",
    );
    let mut exec = Executor::new("w".into(), Vec::new(), vec![dir.0.clone()]);
    let table = exec.module_table();
    assert!(table.is_empty());
    assert!(run_one(&mut exec, 40, "x").is_err());
    // What the connection loop does on AgentMsg::Modules / ForgetModules.
    table.add(vec![def(40, "late", "f", vec![("r", Type::String)])]);
    assert_eq!(table.len(), 1);
    assert_eq!(run_one(&mut exec, 40, "x"), Ok(vec![Value::string("ok")]));
    table.forget(&[40]);
    assert_eq!(
        run_one(&mut exec, 40, "x"),
        Err("task 7 names module implementation 40, which the agent did not announce".into())
    );
}
