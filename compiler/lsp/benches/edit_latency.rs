//! Edit-to-diagnostics latency on a generated net with 5,000 transitions.
//!
//! `cargo bench -p pnet-lsp --bench edit_latency [-- N ROUNDS]`: the first full analysis,
//! then ROUNDS one-character edits (alternately introducing and fixing an error in one
//! transition's expression), each timed from the new text to the diagnostics the server
//! would publish.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use pnet_lsp::analysis::Analysis;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(5000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let text = pnet_lsp::generate::chain_net(n);
    let path = PathBuf::from("/nonexistent/bench/chain.xpnet");
    let mut a = Analysis::default();
    let t0 = Instant::now();
    a.open(path.clone(), &text, 0);
    let d = a.diagnostics();
    let first = t0.elapsed();
    let errors0 = d.values().flatten().filter(|d| d.is_error()).count();
    // the edit: in the middle transition, `+ {i}L` becomes `+ {i}` (long + int: an error)
    let mid = n / 2;
    let needle = format!("${{x}} + {mid}L<");
    let at = text.find(&needle).expect("needle") + needle.len() - 2;
    let broken = format!("{}{}", &text[..at], &text[at + 1..]);
    let mut times = Vec::new();
    let mut errs = Vec::new();
    for r in 0..rounds {
        let t = if r % 2 == 0 { &broken } else { &text };
        let t1 = Instant::now();
        a.change(path.clone(), t, r as i32 + 1);
        let d = a.diagnostics();
        times.push(t1.elapsed());
        errs.push(d.values().flatten().filter(|d| d.is_error()).count());
    }
    assert!(
        errs.iter().step_by(2).all(|&e| e == errors0 + 1),
        "{errs:?}"
    );
    assert!(errs.iter().skip(1).step_by(2).all(|&e| e == errors0));
    let fast_edits = a.fast_edits;
    // the same edits without the fast path (salsa re-use only), for comparison
    a.fast_path = false;
    let mut full_times = Vec::new();
    for r in 0..rounds.min(10) {
        let t = if r % 2 == 0 { &broken } else { &text };
        let t1 = Instant::now();
        a.change(path.clone(), t, (rounds + r) as i32 + 1);
        let d = a.diagnostics();
        full_times.push(t1.elapsed());
        let e = d.values().flatten().filter(|d| d.is_error()).count();
        assert_eq!(e, errors0 + usize::from(r % 2 == 0));
    }
    println!(
        "transitions: {n}, file: {} bytes, errors before edit: {errors0}",
        text.len()
    );
    println!("first full analysis: {:.1} ms", first.as_secs_f64() * 1e3);
    println!(
        "one-character edit -> diagnostics: median {:.2} ms, min {:.2} ms, max {:.2} ms ({rounds} edits)",
        median(times.clone()).as_secs_f64() * 1e3,
        times.iter().min().unwrap().as_secs_f64() * 1e3,
        times.iter().max().unwrap().as_secs_f64() * 1e3,
    );
    println!("edits that took the fast path: {fast_edits} of {rounds}");
    println!(
        "without the fast path (full re-analysis with salsa re-use): median {:.2} ms ({} edits)",
        median(full_times.clone()).as_secs_f64() * 1e3,
        full_times.len()
    );
}
