//! The stable, bounded fuzz run of CI: for each target, every seed and then deterministic
//! mutations of the seeds (fixed generator seed) until the target's time budget is spent.
//! Each input runs under a watchdog of [`TIMEOUT`]; an input that panics or hangs is written
//! to `target/fuzz-failures/<target>-<n>` and named in the failure message (replay it with
//! `cargo +nightly fuzz run <target> <file>`).

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fuzz_targets::mutate::{Rng, mutate};

/// The longest an input may take (debug build).
const TIMEOUT: Duration = Duration::from_secs(2);

/// Time spent on mutations per target, after the seeds.
const MUTATION_BUDGET: Duration = Duration::from_millis(1500);

/// At most this many mutations per target (the budget usually ends the run first).
const MAX_MUTATIONS: usize = 20_000;

/// The longest mutated input.
const MAX_LEN: usize = 1 << 16;

/// Saves a failing input and returns its path.
fn save(target: &str, data: &[u8]) -> String {
    let dir = fuzz_targets::seeds::repo_root().join("target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let hash = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let path = dir.join(format!("{target}-{hash:016x}"));
    let _ = std::fs::write(&path, data);
    path.display().to_string()
}

/// Runs every input `inputs` yields on a worker thread, each under the watchdog.
fn run_all(
    target: &'static str,
    f: fn(&[u8]),
    mut next: impl FnMut() -> Option<(String, Vec<u8>)>,
) {
    let (to_worker, inbox) = mpsc::channel::<Vec<u8>>();
    let (to_main, results) = mpsc::channel::<Result<(), String>>();
    let worker = std::thread::Builder::new()
        .name(format!("fuzz-{target}"))
        .stack_size(64 << 20)
        .spawn(move || {
            for data in inbox {
                let r = std::panic::catch_unwind(AssertUnwindSafe(|| f(&data))).map_err(|e| {
                    e.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                });
                if to_main.send(r).is_err() {
                    return;
                }
            }
        })
        .unwrap();
    let mut count = 0usize;
    while let Some((name, data)) = next() {
        count += 1;
        to_worker.send(data.clone()).unwrap();
        match results.recv_timeout(TIMEOUT) {
            Ok(Ok(())) => {}
            Ok(Err(message)) => {
                let path = save(target, &data);
                panic!("{target}: input {name} (saved as {path}) panics: {message}");
            }
            Err(_) => {
                let path = save(target, &data);
                panic!("{target}: input {name} (saved as {path}) takes more than {TIMEOUT:?}");
            }
        }
    }
    drop(to_worker);
    worker.join().unwrap();
    assert!(count > 0, "{target}: no input ran");
}

fn fuzz(target: &'static str) {
    let f = fuzz_targets::target(target).unwrap();
    let seeds = fuzz_targets::seeds::seeds(target);
    assert!(!seeds.is_empty(), "{target}: no seeds");
    let mut i = 0;
    let mut rng = Rng::new(0x5eed_0000 + target.len() as u64);
    let mut mutations = 0;
    let mut start = None;
    run_all(target, f, || {
        if let Some(s) = seeds.get(i) {
            i += 1;
            return Some((format!("seed {}", s.name), s.data.clone()));
        }
        let start = *start.get_or_insert_with(Instant::now);
        if mutations >= MAX_MUTATIONS || start.elapsed() > MUTATION_BUDGET {
            return None;
        }
        mutations += 1;
        let a = &seeds[rng.below(seeds.len())];
        let b = &seeds[rng.below(seeds.len())];
        let data = mutate(&mut rng, &a.data, &b.data, MAX_LEN);
        Some((format!("mutation {mutations} of seed {}", a.name), data))
    });
    eprintln!("{target}: {} seeds, {mutations} mutations", seeds.len());
}

macro_rules! targets {
    ($($name:ident)*) => {$(
        #[test]
        fn $name() {
            fuzz(stringify!($name));
        }
    )*};
}

targets! {
    xpnet expression literal topology_string dds_topology workload pnml bundle result_file
    token_file protocol_frame json_value
}

#[test]
fn every_target_is_tested_and_has_a_cargo_fuzz_target() {
    let dir = fuzz_targets::seeds::repo_root().join("fuzz/fuzz_targets");
    for (name, _) in fuzz_targets::TARGETS {
        let file = dir.join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            text.contains(&format!("fuzz_targets::{name}(")),
            "{} does not call fuzz_targets::{name}",
            file.display()
        );
    }
    assert_eq!(fuzz_targets::TARGETS.len(), 12);
}

#[test]
fn a_fixed_container_header_gets_mutations_past_the_checksum() {
    use pnet_bundle::format::{BundleError, decode};
    let seeds = fuzz_targets::seeds::seeds("bundle");
    let mut data = seeds.first().expect("a compiled example").data.clone();
    assert!(decode(&data).is_ok());
    // One more payload byte: refused at the length, then (length fixed) at the checksum.
    data.push(0);
    assert!(matches!(
        decode(&data),
        Err(BundleError::TrailingBytes { .. })
    ));
    let fixed = fuzz_targets::fix_container(&data).unwrap();
    match decode(&fixed) {
        Err(BundleError::ChecksumMismatch { .. }) => panic!("the checksum was not fixed"),
        Err(BundleError::TrailingBytes { .. } | BundleError::Decode { .. }) => {}
        other => panic!("expected the payload to be decoded and refused, got {other:?}"),
    }
    assert_eq!(fuzz_targets::fix_container(&data[..10]), None);
}
