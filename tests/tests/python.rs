//! The Python package `pnet` (python/): a venv in `target/python-venv`, maturin and pytest
//! installed into it from PyPI, `pip install ./python` (maturin builds the crate
//! `pnet-python` in this workspace's target folder, in the profile of this test: `dev` under
//! `cargo test`, so the workspace's own dependencies are reused), then pytest runs
//! `python/tests` (compile, run, boot, 20 jobs from threads, put_token, cancel, futures,
//! asyncio, modules written in Python on workers, a runtime booted by `gspc boot`).
//!
//! Without Python 3.11+ with `venv`, or when PyPI cannot be reached, the test says
//! "skipped: ..." and passes. `PNET_PYTHON_PROFILE=release` builds the package as a plain
//! `pip install ./python` does.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

fn skipped(why: &str) {
    println!("skipped: {why}");
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `PATH` with the venv's `bin` first (pip runs the build backend `maturin` from there).
fn path_with(bin: &Path) -> std::ffi::OsString {
    let mut paths = vec![bin.to_path_buf()];
    if let Some(p) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(paths).expect("PATH")
}

#[test]
fn the_python_package_passes_its_tests() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let check = Command::new(&python)
        .args([
            "-c",
            "import sys, venv, ensurepip; sys.exit(0 if sys.version_info >= (3, 11) else 1)",
        ])
        .output();
    if !check.is_ok_and(|o| o.status.success()) {
        return skipped(&format!(
            "`{python}` is not a Python 3.11+ with venv and ensurepip (Debian: apt-get install \
             python3-venv)"
        ));
    }
    // The workers: gspc-worker of this test's profile; gspc boots a runtime that the package
    // connects to.
    let profile_dir = pnet_tests::build_packages(&["pnet-worker", "pnet-gspc"]);
    let worker = profile_dir.join("gspc-worker");
    let target = profile_dir.parent().expect("target folder").to_path_buf();
    let venv = target.join("python-venv");
    let bin = venv.join("bin");
    let t0 = Instant::now();
    if !bin.join("python").exists() {
        let o = run(Command::new(&python).arg("-m").arg("venv").arg(&venv));
        if !o.status.success() {
            return skipped(&format!("cannot create a venv: {}", text(&o)));
        }
    }
    let have = Command::new(bin.join("python"))
        .args(["-c", "import maturin, pytest"])
        .output();
    if !have.is_ok_and(|o| o.status.success()) {
        let o = run(Command::new(bin.join("pip")).args([
            "install",
            "-q",
            "--disable-pip-version-check",
            "maturin>=1.9.4,<2",
            "pytest",
        ]));
        if !o.status.success() {
            return skipped(&format!(
                "cannot install maturin and pytest from PyPI into {}: {}",
                venv.display(),
                text(&o)
            ));
        }
    }
    let setup = t0.elapsed();
    // pip install ./python: maturin builds pnet-python into this target folder.
    let profile = std::env::var("PNET_PYTHON_PROFILE").unwrap_or_else(|_| {
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev".into(),
            Some(p) => p.to_string(),
        }
    });
    let root = pnet_tests::workspace_root();
    let t1 = Instant::now();
    let o = run(Command::new(bin.join("pip"))
        .args([
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-build-isolation",
            "--force-reinstall",
            "--no-deps",
        ])
        .arg(root.join("python"))
        .current_dir(&root)
        .env("PATH", path_with(&bin))
        .env("CARGO_TARGET_DIR", &target)
        .env(
            "MATURIN_PEP517_ARGS",
            format!("--profile {profile} --strip"),
        ));
    assert!(
        o.status.success(),
        "pip install ./python failed:\n{}",
        text(&o)
    );
    let build = t1.elapsed();
    // pytest, from outside the source folder (so that `import pnet` is the installed one).
    let t2 = Instant::now();
    let o = run(Command::new(bin.join("pytest"))
        .args([
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "--durations=5",
        ])
        .arg(root.join("python/tests"))
        .current_dir(&target)
        .env("PATH", path_with(&bin))
        .env("GSPC_WORKER", &worker)
        .env("PNET_GSPC", profile_dir.join("gspc"))
        .env("PYTHONDONTWRITEBYTECODE", "1"));
    let out = text(&o);
    println!("{out}");
    println!(
        "venv and tools {:.1} s, pip install ./python ({profile}) {:.1} s, pytest {:.1} s",
        setup.as_secs_f64(),
        build.as_secs_f64(),
        t2.elapsed().as_secs_f64()
    );
    assert!(o.status.success(), "pytest failed:\n{out}");
    assert!(out.contains(" passed"), "pytest ran no test:\n{out}");
    assert!(!out.contains("skipped"), "pytest skipped tests:\n{out}");
}
