//! Edit-to-answer latency of the language server's features on a generated net with 5,000
//! transitions, through the analysis the server runs: an edit (one character in an
//! expression, as a byte range), the diagnostics the server publishes after it, then one
//! request (hover, completion, go to definition, inlay hints of a screen, semantic tokens,
//! document symbols), as an editor asks right after typing.
//!
//! `cargo bench -p pnet-lsp --bench feature_latency [-- N ROUNDS [ROW]]` (ROW: only the rows
//! whose name holds it). Each row: ROUNDS edits alternating between the generated text and
//! the edited one; the median of the time from the edit to the feature's answer ("edit +
//! answer"), of the feature's part alone ("answer") and of the thread's CPU time for the
//! whole, and of the edit's part (to the diagnostics). The row "diagnostics only" is the edit
//! without a request. The requests sit in a
//! transition before the edited one (their offsets do not move). Then (not timed) each
//! answer after the last edit is checked against a fresh analysis of the same text that
//! reads the whole file's parse (`Analysis::whole_parse`).

mod common;

use std::ops::Range;
use std::path::Path;
use std::time::Instant;

use common::{Args, cpu, median, ms};
use pnet_lsp::analysis::Analysis;
use pnet_lsp::{features, hints, tokens};

/// One request: its row name and what it answers (as text, to compare with a fresh
/// analysis).
type Request = (&'static str, Box<dyn Fn(&Analysis, &Path) -> String>);

fn requests(text: &str, n: usize) -> Vec<Request> {
    let at = n / 2 - 5;
    let t = text
        .find(&format!("<transition name=\"t{at}\">"))
        .expect("transition");
    let find = |needle: &str| (t + text[t..].find(needle).expect("needle")) as u32;
    let place = find(&format!("place=\"p{at}\"")) + "place=\"p".len() as u32;
    let port = find("port=\"x\"") + "port=\"".len() as u32;
    let dollar = find("${x} +") + 2;
    let expression = find(" + ") + 1;
    let end = find("</transition>") + "</transition>".len() as u32;
    let (t, end) = (t as u32, end);
    vec![
        ("diagnostics only", Box::new(|_, _| String::new())),
        (
            "hover (place of a connection)",
            Box::new(move |a, p| format!("{:?}", features::hover(a, p, place))),
        ),
        (
            "hover (${x} in an expression)",
            Box::new(move |a, p| format!("{:?}", features::hover(a, p, dollar))),
        ),
        (
            "completion (port=\")",
            Box::new(move |a, p| format!("{:?}", features::completion(a, p, port))),
        ),
        (
            "completion (in an expression)",
            Box::new(move |a, p| format!("{:?}", features::completion(a, p, expression))),
        ),
        (
            "definition (${x})",
            Box::new(move |a, p| format!("{:?}", features::definition(a, p, dollar))),
        ),
        (
            "inlay hints (one transition)",
            Box::new(move |a, p| {
                let mut h = tokens::inlay_hints(a, p, t, end);
                h.extend(hints::local_hints(a, p, t, end));
                format!("{h:?}")
            }),
        ),
        (
            "semantic tokens (whole file)",
            Box::new(|a, p| format!("{:?}", tokens::semantic_tokens(a, p).len())),
        ),
        (
            "document symbols",
            Box::new(|a, p| format!("{:?}", features::document_symbols(a, p).len())),
        ),
        ("diagnostics only, again", Box::new(|_, _| String::new())),
    ]
}

fn main() {
    let Args {
        n,
        rounds,
        only,
        text,
        path,
    } = Args::read();
    let mut rows = requests(&text, n);
    if let Some(only) = &only {
        rows.retain(|r| r.0.contains(only.as_str()));
    }
    // `+ {mid}L` becomes `+ {mid}` and back
    let mid = n / 2;
    let needle = format!("${{x}} + {mid}L<");
    let at = text.find(&needle).expect("needle") + needle.len() - 2;
    let forward: (Range<usize>, &str) = (at..at + 1, "");
    let back: (Range<usize>, &str) = (at..at, "L");
    let mut edited = text.clone();
    edited.replace_range(forward.0.clone(), forward.1);

    let mut a = Analysis::default();
    let t0 = Instant::now();
    a.open(path.clone(), &text, 0);
    a.diagnostics();
    println!(
        "transitions: {n}, file: {} bytes, first analysis {:.1} ms",
        text.len(),
        ms(t0.elapsed())
    );
    let mut version = 1;
    for (name, request) in &rows {
        let (mut whole, mut part, mut cpus) = (Vec::new(), Vec::new(), Vec::new());
        let mut edit = Vec::new();
        // the answers after the edited text, checked against a fresh analysis
        let mut last = String::new();
        for r in 0..rounds {
            let fwd = r % 2 == 0;
            let (t1, c1) = (Instant::now(), cpu());
            a.edit(
                path.clone(),
                &[if fwd { forward.clone() } else { back.clone() }],
                version,
            );
            version += 1;
            a.diagnostics();
            let t2 = Instant::now();
            edit.push(t2 - t1);
            let answer = request(&a, &path);
            part.push(t2.elapsed());
            whole.push(t1.elapsed());
            cpus.push(cpu().saturating_sub(c1));
            if fwd {
                last = answer;
            }
        }
        println!(
            "{name:<32} edit + answer median {:>7.2} ms  edit {:>7.2} ms  answer {:>7.2} ms  cpu median {:>7.2} ms  ({rounds} edits)",
            ms(median(whole)),
            ms(median(edit)),
            ms(median(part)),
            ms(median(cpus)),
        );
        let mut fresh = Analysis::default();
        // the features as they were: from the whole file's parse
        fresh.whole_parse = true;
        fresh.open(path.clone(), &edited, 0);
        fresh.diagnostics();
        assert_eq!(last, request(&fresh, &path), "{name}");
        // back to the generated text
        if a.docs[&path].text.as_ref() != text.as_str() {
            a.edit(path.clone(), std::slice::from_ref(&back), version);
            version += 1;
        }
    }
    println!("every answer equals a fresh analysis's on the same text");
}
