//! Edit-to-diagnostics latency on a generated net with 5,000 transitions, through the
//! analysis the server runs (`Analysis::change` then `Analysis::diagnostics`).
//!
//! `cargo bench -p pnet-lsp --bench edit_latency [-- N ROUNDS [KIND]]` (KIND: only the kinds whose
//! name holds it, e.g. `place`, for a profile): every edit goes through the
//! database alone (salsa's queries; the server has no other path). The first full
//! analysis, then, for each kind of edit, ROUNDS edits alternating between the generated
//! text and the edited one (so every other edit undoes the previous one), each timed from
//! the new text to the diagnostics the server would publish, and the CPU time the thread
//! spent on it (the median of each: on a loaded machine the CPU time is the steadier
//! figure). The kinds: one character in an expression, renaming a place (its declaration
//! and its two connections), adding a port, changing a place's type attribute, adding a
//! transition, adding a place in the middle of the places and a connection to it from one
//! transition (every other round removes them: the row times both). The process's memory (VmRSS, VmHWM of /proc/self/status) is printed before
//! the server exists, after the first analysis and after the edits; then (not timed) each
//! edited text's diagnostics are checked against a fresh analysis of the same text.

mod common;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::{Args, cpu, median, ms};
use pnet_lsp::analysis::Analysis;
use pnet_syntax::Diagnostic;

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

/// An edit as an editor sends it: a byte range of the text and what replaces it.
type Edit = (Range<usize>, String);

/// One kind of edit: its name, the edited text, and the edits from the text to the edited
/// one and back (each list in the order an editor sends them: each range in the text as
/// the edits before it left it).
struct Kind {
    name: &'static str,
    edited: String,
    forward: Vec<Edit>,
    back: Vec<Edit>,
}

/// `sites` (non-overlapping byte ranges of `text` and their replacements, in order) as a
/// [`Kind`]: applied from the last to the first, so that each range stays where it is, and
/// undone the same way.
fn kind(name: &'static str, text: &str, sites: Vec<Edit>) -> Kind {
    let mut edited = text.to_string();
    let mut forward = sites.clone();
    forward.reverse();
    for (r, t) in &forward {
        edited.replace_range(r.clone(), t);
    }
    let mut back = Vec::new();
    let mut moved: isize = 0;
    for (r, t) in &sites {
        let start = (r.start as isize + moved) as usize;
        back.push((start..start + t.len(), text[r.clone()].to_string()));
        moved += t.len() as isize - r.len() as isize;
    }
    back.reverse();
    Kind {
        name,
        edited,
        forward,
        back,
    }
}

/// The edits, each applied to (and undone back to) `text`.
fn edits(text: &str, n: usize) -> Vec<Kind> {
    let mid = n / 2;
    let t_mid = text
        .find(&format!("<transition name=\"t{mid}\">"))
        .expect("middle transition");
    let after = |anchor: &str| t_mid + text[t_mid..].find(anchor).expect("anchor") + anchor.len();
    // `+ {mid}L` becomes `+ {mid}` (long + int: an error)
    let needle = format!("${{x}} + {mid}L<");
    let at = text.find(&needle).expect("needle") + needle.len() - 2;
    let character = vec![(at..at + 1, String::new())];
    // `p{mid}` becomes `q{mid}`: the place and both connections (`"p{mid}"` occurs nowhere else)
    let old = format!("\"p{mid}\"");
    let rename: Vec<Edit> = text
        .match_indices(&old)
        .map(|(i, _)| (i..i + old.len(), format!("\"q{mid}\"")))
        .collect();
    assert_eq!(rename.len(), 3, "the place and its two connections");
    let at = after("<in name=\"x\" type=\"long\"/>\n");
    let port = vec![(
        at..at,
        "        <in name=\"z\" type=\"long\"/>\n".to_string(),
    )];
    let place = format!("<place name=\"p{mid}\" type=\"long\"/>");
    let at = text.find(&place).expect("place") + place.len() - "long\"/>".len();
    let ty = vec![(at..at + 4, "int".to_string())];
    let at = after("</transition>\n");
    let transition = vec![(
        at..at,
        format!(
            "    <transition name=\"extra\">\n      <defun>\n        <in name=\"x\" type=\"long\"/>\n        <out name=\"y\" type=\"long\"/>\n        <expression>${{y}} := ${{x}} * 2L</expression>\n      </defun>\n      <connect-in port=\"x\" place=\"p{mid}\"/>\n      <connect-out port=\"y\" place=\"p{}\"/>\n    </transition>\n",
            mid + 1
        ),
    )];
    // a place after `p{mid}`, read by transition `t{mid}` (its `x` port, read and consumed)
    let at = text.find(&place).expect("place") + place.len() + 1;
    let mut add_place = vec![(
        at..at,
        "    <place name=\"pextra\" type=\"long\"/>\n".to_string(),
    )];
    let at = after("<connect-in port=\"x\"");
    let at = at + text[at..].find('\n').expect("line") + 1;
    add_place.push((
        at..at,
        "      <connect-read port=\"x\" place=\"pextra\"/>\n".to_string(),
    ));
    vec![
        kind("character in an expression", text, character),
        kind("rename a place (+ connections)", text, rename),
        kind("add a port", text, port),
        kind("change a type attribute", text, ty),
        kind("add a transition", text, transition),
        kind("add/remove a place (+ connect)", text, add_place),
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
    let Args {
        n,
        rounds,
        only,
        text,
        path,
    } = Args::read();
    let mut kinds = edits(&text, n);
    if let Some(only) = &only {
        kinds.retain(|k| k.name.contains(only.as_str()));
    }

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
    for k in &kinds {
        // as an editor with incremental sync sends them (byte ranges), then whole texts
        for ranges in [true, false] {
            let mut times = Vec::new();
            let mut cpus = Vec::new();
            let mut after = None;
            for r in 0..rounds {
                let forward = r % 2 == 0;
                let (t1, c1) = (Instant::now(), cpu());
                if ranges {
                    let edits = if forward { &k.forward } else { &k.back };
                    let edits: Vec<(Range<usize>, &str)> =
                        edits.iter().map(|(r, t)| (r.clone(), t.as_str())).collect();
                    a.edit(path.clone(), &edits, version);
                } else {
                    a.change(
                        path.clone(),
                        if forward { &k.edited } else { &text },
                        version,
                    );
                }
                let d = a.diagnostics();
                times.push(t1.elapsed());
                cpus.push(cpu().saturating_sub(c1));
                version += 1;
                let now = &a.docs[&path].text;
                if forward {
                    assert_eq!(**now, *k.edited, "{}, round {r}", k.name);
                    assert!(
                        after.as_ref().is_none_or(|a| *a == d),
                        "{}, round {r}",
                        k.name
                    );
                    after = Some(d);
                } else {
                    assert_eq!(**now, *text, "{}, round {r}", k.name);
                    assert_eq!(d, base, "{}, round {r}", k.name);
                }
            }
            let after = after.expect("at least one round");
            let how = if ranges { "range" } else { "full text" };
            println!(
                "{:<32} {how:<9}  median {:>7.2} ms  min {:>7.2} ms  max {:>7.2} ms  cpu median {:>7.2} ms  ({rounds} edits, {} errors after)",
                k.name,
                ms(median(times.clone())),
                ms(*times.iter().min().unwrap()),
                ms(*times.iter().max().unwrap()),
                ms(median(cpus)),
                errors(&after),
            );
            got.push((k, after));
        }
    }
    let (rss2, hwm) = memory();
    println!(
        "memory (VmRSS): {rss0:.1} MiB before the server, {rss1:.1} MiB after the first analysis, {rss2:.1} MiB after the edits; peak (VmHWM) {hwm:.1} MiB"
    );
    drop(a);
    // each edit's diagnostics equal those of a fresh analysis of the same text (not timed)
    assert_eq!(base, fresh(&path, &text), "the generated text");
    for k in &kinds {
        let want = fresh(&path, &k.edited);
        for (_, d) in got.iter().filter(|(g, _)| std::ptr::eq(*g, k)) {
            assert_eq!(*d, want, "{}", k.name);
        }
    }
    println!("every edit's diagnostics equal a fresh analysis of the same text");
}
