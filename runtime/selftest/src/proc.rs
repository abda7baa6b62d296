//! Running an installed binary with a time limit and capturing what it says.

use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a finished (or stopped) command did.
#[derive(Debug)]
pub struct Output {
    /// `None` when it was killed after the time limit.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Output {
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// "exit status 1", "killed by signal 9", "no answer within 60 s".
    pub fn describe_status(&self, timeout: Duration) -> String {
        match self.status {
            None => format!("no answer within {} s (killed)", timeout.as_secs()),
            Some(s) => describe_exit(s),
        }
    }

    /// The last non-empty lines of standard error (at most `n`), joined with " | ", or
    /// "(nothing on standard error)".
    pub fn stderr_tail(&self, n: usize) -> String {
        tail(&self.stderr, n).unwrap_or_else(|| "(nothing on standard error)".into())
    }
}

/// The last non-empty lines of `text` (at most `n`), joined with " | ".
pub fn tail(text: &str, n: usize) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let start = lines.len().saturating_sub(n);
    Some(lines[start..].join(" | "))
}

pub fn describe_exit(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => "an unknown exit status".into(),
    }
}

/// The command line as a shell would read it (for logs).
pub fn show(program: &Path, args: &[String]) -> String {
    let mut s = quote(&program.display().to_string());
    for a in args {
        s.push(' ');
        s.push_str(&quote(a));
    }
    s
}

/// Quotes `s` for a POSIX shell when it needs it.
pub fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Runs `program args` with standard input closed, in `cwd`, with `env` set and
/// `env_remove` removed, for at most `timeout` (then it is killed).
pub fn run(
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(&str, &str)],
    env_remove: &[&str],
    timeout: Duration,
) -> Result<Output, String> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    for k in env_remove {
        cmd.env_remove(k);
    }
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let (tx, rx) = mpsc::channel::<(bool, Vec<u8>)>();
    let mut readers = 0;
    if let Some(mut out) = child.stdout.take() {
        let tx = tx.clone();
        readers += 1;
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = out.read_to_end(&mut buf);
            let _ = tx.send((true, buf));
        });
    }
    if let Some(mut err) = child.stderr.take() {
        let tx = tx.clone();
        readers += 1;
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = err.read_to_end(&mut buf);
            let _ = tx.send((false, buf));
        });
    }
    drop(tx);
    let deadline = start + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("cannot wait for {}: {e}", program.display()));
            }
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Children of the program (workers) may hold the pipes a little longer; they go away
    // with it. Do not wait for them forever.
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let grace = Instant::now() + Duration::from_secs(5);
    for _ in 0..readers {
        let left = grace.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((true, b)) => stdout = b,
            Ok((false, b)) => stderr = b,
            Err(_) => break,
        }
    }
    Ok(Output {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        elapsed: start.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_tails() {
        assert_eq!(quote("a/b-c.pnet"), "a/b-c.pnet");
        assert_eq!(quote("n=5L"), "n=5L");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(tail("a\n\nb\nc\n  \n", 2).as_deref(), Some("b | c"));
        assert_eq!(tail("\n \n", 2), None);
    }

    #[test]
    fn runs_captures_and_times_out() {
        let dir = std::env::temp_dir();
        let sh = Path::new("/bin/sh");
        let out = run(
            sh,
            &["-c".into(), "echo out; echo err >&2; exit 3".into()],
            &dir,
            &[],
            &[],
            Duration::from_secs(20),
        )
        .expect("sh runs");
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr_tail(3), "err");
        assert!(!out.success());
        assert_eq!(
            out.describe_status(Duration::from_secs(20)),
            "exit status 3"
        );

        let slow = run(
            sh,
            &["-c".into(), "exec sleep 10".into()],
            &dir,
            &[],
            &[],
            Duration::from_millis(200),
        )
        .expect("sh runs");
        assert!(slow.status.is_none());
        assert!(slow.elapsed < Duration::from_secs(5), "{:?}", slow.elapsed);

        let missing = run(
            Path::new("/nonexistent/selftest-binary"),
            &[],
            &dir,
            &[],
            &[],
            Duration::from_secs(1),
        );
        let err = missing.expect_err("cannot start a missing program");
        assert!(err.contains("/nonexistent/selftest-binary"), "{err}");
    }
}
