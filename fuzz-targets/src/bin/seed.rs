//! Fills `target/fuzz-corpus/<target>/` with the seeds of every target (or of the targets
//! named on the command line), for `cargo +nightly fuzz run <target> target/fuzz-corpus/<target>`.
//! The corpus files are read in place; only the generated folder is written.

use std::process::ExitCode;

fn main() -> ExitCode {
    let names: Vec<String> = std::env::args().skip(1).collect();
    let root = fuzz_targets::seeds::repo_root().join("target/fuzz-corpus");
    for (target, _) in fuzz_targets::TARGETS {
        if !names.is_empty() && !names.iter().any(|n| n == target) {
            continue;
        }
        let dir = root.join(target);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("seed: cannot create {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
        let seeds = fuzz_targets::seeds::seeds(target);
        for s in &seeds {
            let path = dir.join(&s.name);
            if let Err(e) = std::fs::write(&path, &s.data) {
                eprintln!("seed: cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
        println!("{target}: {} seeds in {}", seeds.len(), dir.display());
    }
    for n in &names {
        if fuzz_targets::target(n).is_none() {
            eprintln!("seed: no target `{n}`");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
