//! The whole compiler (XML front end, expression parser, sema, lowering) never panics: random
//! inputs and mutated corpus nets give diagnostics, never a crash.

use std::path::Path;
use std::sync::OnceLock;

use pnet_sema::Options;
use pnet_tests::{gpispace, net_files, workspace_root};
use proptest::prelude::*;

/// The nets to mutate: GPI-Space's examples, or the workspace's own `examples/` on a machine
/// without the corpus.
fn corpus_texts() -> &'static Vec<String> {
    static TEXTS: OnceLock<Vec<String>> = OnceLock::new();
    TEXTS.get_or_init(|| {
        let dir = if pnet_tests::corpus_absent() {
            println!("mutating the workspace's examples/ instead");
            workspace_root().join("examples")
        } else {
            gpispace().join("share/doc/example")
        };
        net_files(&dir)
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .collect()
    })
}

fn compile(text: &str) {
    let out = pnet_sema::compile_source(Path::new("fuzz.xpnet"), text, &Options::default());
    // A bundle exists exactly when there is no error.
    assert_eq!(out.bundle.is_some(), !out.has_errors());
    for d in &out.diagnostics {
        for l in &d.labels {
            let f = &out.files[l.span.file.0 as usize];
            assert!(
                l.span.start <= l.span.end && l.span.end as usize <= f.text.len(),
                "{d:?}"
            );
        }
    }
}

#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize, usize),
    Insert(usize, String),
    Duplicate(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let fragment = prop_oneof![
        Just("<".to_string()),
        Just("\"".to_string()),
        Just("${".to_string()),
        Just("</net>".to_string()),
        Just("<transition name=\"x\">".to_string()),
        Just(" := ".to_string()),
        Just("&amp;".to_string()),
        "[ -~]{0,12}",
    ];
    prop_oneof![
        (any::<usize>(), 0usize..40).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (any::<usize>(), fragment).prop_map(|(a, s)| Mutation::Insert(a, s)),
        (any::<usize>(), 0usize..80).prop_map(|(a, n)| Mutation::Duplicate(a, n)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(text: &str, ms: &[Mutation]) -> String {
    let mut b = text.as_bytes().to_vec();
    for m in ms {
        let len = b.len().max(1);
        match m {
            Mutation::Delete(a, n) => {
                let a = a % len;
                let e = (a + n).min(b.len());
                if a < e {
                    b.drain(a..e);
                }
            }
            Mutation::Insert(a, s) => {
                let a = (a % len).min(b.len());
                b.splice(a..a, s.bytes());
            }
            Mutation::Duplicate(a, n) => {
                let a = (a % len).min(b.len());
                let e = (a + n).min(b.len());
                let piece = b[a..e].to_vec();
                b.splice(e..e, piece);
            }
            Mutation::Truncate(a) => b.truncate(a % len),
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(s in "\\PC{0,300}") {
        compile(&s);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        compile(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn mutated_corpus_nets_never_panic(i in any::<usize>(), ms in proptest::collection::vec(mutation(), 1..6)) {
        let texts = corpus_texts();
        prop_assume!(!texts.is_empty());
        compile(&apply(&texts[i % texts.len()], &ms));
    }
}

/// A reader that stops early (`pnetc --emit=ir net | head -1`) ends the tools quietly, as it
/// does other Unix filters, instead of a "failed printing to stdout" panic (exit 101).
#[test]
fn tools_end_quietly_when_the_reader_of_their_output_stops() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};

    let dir = pnet_tests::build_packages(&["pnetc", "pnet2dot", "pnetv", "pnet-dds"]);
    let net = pnet_tests::workspace_root().join("examples/collatz/collatz.xpnet");
    let topology = pnet_tests::workspace_root().join("tests/data/topology/groups.xml");
    let net = net.display().to_string();
    let runs: [(&str, Vec<&str>); 3] = [
        ("pnetc", vec!["--emit=ir", &net]),
        ("pnet2dot", vec![&net]),
        ("gspc-topology", vec!["expand", topology.to_str().unwrap()]),
    ];
    for (tool, args) in runs {
        let mut child = Command::new(dir.join(tool))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, then close the pipe while the tool is still writing.
        let mut out = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        out.read_exact(&mut first).unwrap();
        drop(out);
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(!err.contains("panicked"), "{tool}: {err}");
        assert!(
            status.success() || status.signal() == Some(libc::SIGPIPE),
            "{tool}: {status:?} {err}"
        );
    }
}

/// An endless input (`/dev/zero`) is refused at the input size limit, in well under a second
/// of work and without reading until memory runs out: pnetc, pnet2dot and pnetv (and the
/// compiler's library entry, which every tool that takes `.xpnet` uses).
#[test]
fn endless_inputs_stop_at_the_size_limit() {
    let out = pnet_sema::compile_path(Path::new("/dev/zero"), &Options::default());
    assert!(out.has_errors());
    let msg = format!("{:?}", out.diagnostics);
    assert!(msg.contains("larger than 256 MiB"), "{msg}");
    for tool in ["pnetc", "pnet2dot", "pnetv"] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 1500000; exec \"$0\" /dev/zero")
            .arg(pnet_tests::bin(tool))
            .output()
            .expect("run the tool");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{tool}: {err}");
        assert!(err.contains("larger than"), "{tool}: {err}");
        assert!(!err.contains("panicked"), "{tool}: {err}");
    }
}
