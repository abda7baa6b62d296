//! Edit-to-diagnostics latency on a generated net with 5,000 transitions, through the
//! analysis the server runs (`Analysis::change` then `Analysis::diagnostics`).
//!
//! `cargo bench -p pnet-lsp --bench edit_latency [-- N ROUNDS]`: every edit goes through the
//! database alone (salsa's queries; the server has no other path). The first full
//! analysis, then, for each kind of edit, ROUNDS edits alternating between the generated
//! text and the edited one (so every other edit undoes the previous one), each timed from
//! the new text to the diagnostics the server would publish, and the CPU time the thread
//! spent on it (the median of each: on a loaded machine the CPU time is the steadier
//! figure). The kinds: one character in an expression, renaming a place (its declaration
//! and its two connections), adding a port, changing a place's type attribute, adding a
//! transition. The process's memory (VmRSS, VmHWM of /proc/self/status) is printed before
//! the server exists, after the first analysis and after the edits; then (not timed) each
//! edited text's diagnostics are checked against a fresh analysis of the same text.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pnet_lsp::analysis::Analysis;
use pnet_syntax::Diagnostic;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The CPU time this thread has run (`/proc/thread-self/schedstat`, nanoseconds; zero where
/// it is absent): on a loaded machine, the time an edit costs without the time it waited.
fn cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}

/// `VmRSS` and `VmHWM` of this process in MiB (0 where /proc is absent).
fn memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> f64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn insert_after(text: &str, anchor: &str, from: usize, insert: &str) -> String {
    let at = from + text[from..].find(anchor).expect("anchor") + anchor.len();
    format!("{}{insert}{}", &text[..at], &text[at..])
}

/// The edits: `(name, edited text)`, each applied to (and undone back to) `text`.
fn edits(text: &str, n: usize) -> Vec<(&'static str, String)> {
    let mid = n / 2;
    let t_mid = text
        .find(&format!("<transition name=\"t{mid}\">"))
        .expect("middle transition");
    // `+ {mid}L` becomes `+ {mid}` (long + int: an error)
    let needle = format!("${{x}} + {mid}L<");
    let at = text.find(&needle).expect("needle") + needle.len() - 2;
    let character = format!("{}{}", &text[..at], &text[at + 1..]);
    // `p{mid}` becomes `q{mid}`: the place and both connections (`"p{mid}"` occurs nowhere else)
    let rename = text.replace(&format!("\"p{mid}\""), &format!("\"q{mid}\""));
    assert_eq!(
        text.matches(&format!("\"p{mid}\"")).count(),
        3,
        "the place and its two connections"
    );
    let port = insert_after(
        text,
        "<in name=\"x\" type=\"long\"/>\n",
        t_mid,
        "        <in name=\"z\" type=\"long\"/>\n",
    );
    let place = format!("<place name=\"p{mid}\" type=\"long\"/>");
    let ty = text.replace(&place, &format!("<place name=\"p{mid}\" type=\"int\"/>"));
    let transition = insert_after(
        text,
        "</transition>\n",
        t_mid,
        &format!(
            "    <transition name=\"extra\">\n      <defun>\n        <in name=\"x\" type=\"long\"/>\n        <out name=\"y\" type=\"long\"/>\n        <expression>${{y}} := ${{x}} * 2L</expression>\n      </defun>\n      <connect-in port=\"x\" place=\"p{mid}\"/>\n      <connect-out port=\"y\" place=\"p{}\"/>\n    </transition>\n",
            mid + 1
        ),
    );
    vec![
        ("character in an expression", character),
        ("rename a place (+ connections)", rename),
        ("add a port", port),
        ("change a type attribute", ty),
        ("add a transition", transition),
    ]
}

fn fresh(path: &Path, text: &str) -> BTreeMap<PathBuf, Vec<Diagnostic>> {
    let mut a = Analysis::default();
    a.open(path.to_path_buf(), text, 0);
    a.diagnostics()
}

fn errors(d: &BTreeMap<PathBuf, Vec<Diagnostic>>) -> usize {
    d.values().flatten().filter(|d| d.is_error()).count()
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(5000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let text = pnet_lsp::generate::chain_net(n);
    let path = PathBuf::from("/nonexistent/bench/chain.xpnet");
    let kinds = edits(&text, n);

    let (rss0, _) = memory();
    let mut a = Analysis::default();
    let (t0, c0) = (Instant::now(), cpu());
    a.open(path.clone(), &text, 0);
    let d = a.diagnostics();
    let first = t0.elapsed();
    let first_cpu = cpu().saturating_sub(c0);
    let base = d;
    let (rss1, _) = memory();
    println!(
        "transitions: {n}, file: {} bytes, errors before any edit: {}",
        text.len(),
        errors(&base)
    );
    println!(
        "first analysis: {:.1} ms (cpu {:.1} ms)",
        ms(first),
        ms(first_cpu)
    );

    let mut version = 1;
    // the diagnostics of each edited text, checked against a fresh analysis at the end
    let mut got = Vec::new();
    for (name, edited) in &kinds {
        let mut times = Vec::new();
        let mut cpus = Vec::new();
        let mut after = None;
        for r in 0..rounds {
            let t = if r % 2 == 0 { edited } else { &text };
            let (t1, c1) = (Instant::now(), cpu());
            a.change(path.clone(), t, version);
            let d = a.diagnostics();
            times.push(t1.elapsed());
            cpus.push(cpu().saturating_sub(c1));
            version += 1;
            if r % 2 == 0 {
                assert!(after.as_ref().is_none_or(|a| *a == d), "{name}, round {r}");
                after = Some(d);
            } else {
                assert_eq!(d, base, "{name}, round {r}");
            }
        }
        let after = after.expect("at least one round");
        println!(
            "{name:<32} median {:>7.2} ms  min {:>7.2} ms  max {:>7.2} ms  cpu median {:>7.2} ms  ({rounds} edits, {} errors after)",
            ms(median(times.clone())),
            ms(*times.iter().min().unwrap()),
            ms(*times.iter().max().unwrap()),
            ms(median(cpus)),
            errors(&after),
        );
        got.push(after);
    }
    let (rss2, hwm) = memory();
    println!(
        "memory (VmRSS): {rss0:.1} MiB before the server, {rss1:.1} MiB after the first analysis, {rss2:.1} MiB after the edits; peak (VmHWM) {hwm:.1} MiB"
    );
    drop(a);
    // each edit's diagnostics equal those of a fresh analysis of the same text (not timed)
    assert_eq!(base, fresh(&path, &text), "the generated text");
    for ((name, edited), d) in kinds.iter().zip(&got) {
        assert_eq!(*d, fresh(&path, edited), "{name}");
    }
    println!("every edit's diagnostics equal a fresh analysis of the same text");
}
