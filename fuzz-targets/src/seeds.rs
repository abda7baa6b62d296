//! The seeds of each target: files of the repository (examples, tests), files of the shared
//! corpus when it exists (read in place, never copied into the repository), inputs derived
//! from them (expressions cut out of nets, bundles compiled from the examples, result files
//! and token files made from those bundles) and a few inputs written here.

use std::path::{Path, PathBuf};

use pnet_stdlib::Value;

/// One seed: a name (for messages and file names) and its bytes.
#[derive(Clone, Debug)]
pub struct Seed {
    pub name: String,
    pub data: Vec<u8>,
}

/// The repository's root (the parent of this crate's folder).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The shared corpus, if it exists: the folder named by `PNET_CORPUS`, else `../shared/corpus`
/// from the repository's root (the rule of `pnet_tests::corpus()`, which this library, not
/// only its tests, cannot depend on). Without it the seeds are the repository's own.
pub fn corpus_root() -> Option<PathBuf> {
    let p = match std::env::var_os("PNET_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join("../shared/corpus"),
    };
    p.is_dir().then_some(p)
}

/// Files under `dir` (recursively, in sorted order) whose name ends with one of `suffixes`.
fn files(dir: &Path, suffixes: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let Ok(ty) = e.file_type() else { continue };
            if ty.is_dir() {
                if path
                    .file_name()
                    .is_some_and(|n| n != "target" && n != ".git")
                {
                    stack.push(path);
                }
            } else if ty.is_file()
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| suffixes.iter().any(|s| n.ends_with(s)))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Seeds from the files under the repository's `dirs` and the corpus's `corpus_dirs`.
fn file_seeds(dirs: &[&str], corpus_dirs: &[&str], suffixes: &[&str]) -> Vec<Seed> {
    let root = repo_root();
    let mut paths = Vec::new();
    for d in dirs {
        paths.extend(files(&root.join(d), suffixes));
    }
    if let Some(corpus) = corpus_root() {
        for d in corpus_dirs {
            paths.extend(files(&corpus.join(d), suffixes));
        }
    }
    paths
        .into_iter()
        .filter_map(|p| {
            let data = std::fs::read(&p).ok()?;
            let name = p
                .strip_prefix(&root)
                .unwrap_or(&p)
                .display()
                .to_string()
                .replace(['/', '\\'], "_");
            Some(Seed { name, data })
        })
        .collect()
}

fn inline(prefix: &str, items: &[&str]) -> Vec<Seed> {
    items
        .iter()
        .enumerate()
        .map(|(i, s)| Seed {
            name: format!("{prefix}-{i}"),
            data: s.as_bytes().to_vec(),
        })
        .collect()
}

/// Values in literal syntax, one of each kind.
const LITERALS: &[&str] = &[
    "[]",
    "true",
    "false",
    "3",
    "-3L",
    "3UL",
    "4294967295U",
    "123456789012345678901234567890A",
    "1.5f",
    "-2.5e-3",
    "0x1fL",
    "'c'",
    "'\\n'",
    "\"a string with \\\"quotes\\\"\"",
    "{ 1 2}",
    "y( 0 127 0x41)",
    "List (1, 2L, \"x\")",
    "Set {1, 2, 3}",
    "Map [1 -> \"a\", 2 -> \"b\"]",
    "Struct [x := 1.0, y := 2L]",
    "Struct [p := Struct [x := List (), y := Set {}]]",
    "shared_cleanup (5L)",
    "List (List (List (Map [\"k\" -> Set {'a'}])))",
];

/// Topology strings, from the topology crate's tests.
const TOPOLOGIES: &[&str] = &[
    "compute:4",
    "compute+CPU#0:2,1024/9000 compute+GPU:1 init:1x1",
    "work:2 init:1x1 io:1x2,10",
    "small:1 huge:4294967295",
    "a:3/65533",
    "work#1:3x2,5/9000 a+GPI:1,7 GPI:2,3 b+GPI",
    "work#0:12 work#1:12 io:2x4,16777216/9000",
    "a:2#1",
    "",
];

const EXPRESSIONS: &[&str] = &[
    "${a} := ${b} + 1",
    "${x} :lt: 10L && !${done}",
    "${s} := stack_push (${s}, ${v}); ${n} := ${n} - 1L",
    "${m} := map_assign (${m}, ${k}, Struct [a := 1, b := \"x\"])",
    "if ${a} > 0 then ${b} := ${a} ** 2 else ${b} := -${a} endif",
    "${p.x} := sin (${p.y}) * 2.0 / 3",
    "bitset_insert (${bs}, 5UL)",
];

/// A minimal PNML net.
const PNML: &str = r#"<?xml version="1.0"?>
<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">
  <net id="n" type="http://www.pnml.org/version-2009/grammar/ptnet">
    <page id="pg">
      <place id="p1"><initialMarking><text>2</text></initialMarking></place>
      <place id="p2"/>
      <transition id="t"/>
      <arc id="a1" source="p1" target="t"><inscription><text>1</text></inscription></arc>
      <arc id="a2" source="t" target="p2"/>
    </page>
  </net>
</pnml>
"#;

const JSON: &[&str] = &[
    "null",
    "true",
    "-12",
    "18446744073709551615",
    "1.5e300",
    "\"text\"",
    "[1, 2, 3]",
    "{\"x\": 1.0, \"y\": 2}",
    "[[\"k\", [1, \"a\"]]]",
    "{\"bigint\": \"-123456789012345678901234567890\"}",
];

/// The values of [`LITERALS`].
pub fn sample_values() -> Vec<Value> {
    LITERALS
        .iter()
        .filter_map(|s| pnet_stdlib::literal::parse_literal(s).ok())
        .collect()
}

/// Texts of `<tag>...</tag>` elements in `text`.
fn elements<'a>(text: &'a str, tag: &str, out: &mut Vec<&'a str>) {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut rest = text;
    while let Some(i) = rest.find(&open) {
        rest = &rest[i + open.len()..];
        let Some(j) = rest.find(&close) else { break };
        out.push(&rest[..j]);
        rest = &rest[j + close.len()..];
    }
}

/// The bundles compiled from the repository's example nets (name, bundle).
pub fn example_bundles() -> Vec<(String, pnet_bundle::Bundle)> {
    file_seeds(&["examples"], &[], &[".xpnet"])
        .into_iter()
        .filter_map(|s| {
            let text = String::from_utf8(s.data).ok()?;
            let path = repo_root().join("examples").join(&s.name);
            let out = pnet_sema::compile_source(&path, &text, &pnet_sema::Options::default());
            if out.has_errors() {
                return None;
            }
            Some((s.name, out.bundle?))
        })
        .collect()
}

/// A sample value that fits `ty`, if there is one.
fn value_of(values: &[Value], ty: &pnet_stdlib::Type) -> Option<Value> {
    values.iter().find(|v| v.fits(ty)).cloned()
}

fn protocol_seeds() -> Vec<Seed> {
    use pnet_protocol::property::{PropertyReply, PropertyRequest};
    use pnet_protocol::{AgentMsg, TaskRun, WorkerMsg, write_msg};

    fn frame<T: serde::Serialize>(name: &str, msg: &T) -> Option<Seed> {
        let mut data = Vec::new();
        write_msg(&mut data, msg).ok()?;
        Some(Seed {
            name: name.to_string(),
            data,
        })
    }
    let values = sample_values();
    let mut out = Vec::new();
    out.extend(frame("agent-heartbeat", &AgentMsg::Heartbeat));
    out.extend(frame("agent-cancel", &AgentMsg::Cancel { task: 300 }));
    out.extend(frame(
        "agent-refused",
        &AgentMsg::Refused {
            reason: "wrong secret".into(),
        },
    ));
    out.extend(frame(
        "agent-run",
        &AgentMsg::Run(vec![TaskRun {
            task: 7,
            module: 1,
            inputs: values.clone(),
            memory: None,
        }]),
    ));
    out.extend(frame(
        "agent-steal",
        &AgentMsg::Steal {
            tasks: vec![1, 2, 1 << 40],
        },
    ));
    out.extend(frame(
        "worker-done",
        &WorkerMsg::Done {
            task: 7,
            outputs: values,
        },
    ));
    out.extend(frame(
        "worker-heartbeat",
        &WorkerMsg::Heartbeat { running: Some(3) },
    ));
    out.extend(frame("worker-cancelled", &WorkerMsg::Cancelled { task: 3 }));
    out.extend(frame("property-setup", &PropertyRequest::Setup));
    out.extend(frame(
        "property-wait",
        &PropertyRequest::Wait {
            key: "k".into(),
            timeout_ms: Some(100),
        },
    ));
    out.extend(frame(
        "property-value",
        &PropertyReply::Value(Some("v".into())),
    ));
    // Two frames in a row (a connection).
    if out.len() >= 2 {
        let mut data = out[0].data.clone();
        data.extend_from_slice(&out[1].data);
        out.push(Seed {
            name: "two-frames".into(),
            data,
        });
    }
    out
}

/// The seeds of `target` (empty for an unknown target).
pub fn seeds(target: &str) -> Vec<Seed> {
    match target {
        "xpnet" => {
            let mut s = file_seeds(&["examples", "tests"], &["gpispace"], &[".xpnet"]);
            s.extend(file_seeds(&[], &["gpispace"], &[".xml"]));
            s
        }
        "expression" => {
            let nets = file_seeds(&["examples", "tests"], &["gpispace"], &[".xpnet", ".xml"]);
            let mut exprs: Vec<String> = EXPRESSIONS.iter().map(|s| s.to_string()).collect();
            for n in &nets {
                let text = String::from_utf8_lossy(&n.data);
                let mut found = Vec::new();
                elements(&text, "expression", &mut found);
                elements(&text, "condition", &mut found);
                exprs.extend(found.into_iter().map(str::to_string));
            }
            exprs.sort();
            exprs.dedup();
            exprs
                .into_iter()
                .enumerate()
                .map(|(i, e)| Seed {
                    name: format!("expr-{i}"),
                    data: e.into_bytes(),
                })
                .collect()
        }
        "literal" => {
            let mut s = inline("literal", LITERALS);
            s.extend(inline(
                "binding",
                &["n=5L", "p = List (1, 2)", "=3", "x=1L +"],
            ));
            s
        }
        "topology_string" => inline("topology", TOPOLOGIES),
        "dds_topology" => file_seeds(&["examples/dds"], &["dds"], &[".xml"]),
        "workload" => file_seeds(&["examples", "tests"], &[], &[".workload"]),
        "pnml" => {
            let mut s = inline("pnml", &[PNML]);
            s.extend(file_seeds(&[], &["mcc"], &[".pnml"]));
            s
        }
        "bundle" => example_bundles()
            .into_iter()
            .filter_map(|(name, b)| {
                Some(Seed {
                    name: format!("{name}.pnet"),
                    data: pnet_bundle::format::encode(&b).ok()?,
                })
            })
            .collect(),
        "result_file" => {
            let values = sample_values();
            example_bundles()
                .into_iter()
                .filter_map(|(name, b)| {
                    let outputs: Vec<(String, Vec<Value>)> = pnet_bundle::result::output_types(&b)
                        .into_iter()
                        .map(|(port, ty)| (port, value_of(&values, &ty).into_iter().collect()))
                        .collect();
                    let r = pnet_bundle::result::RunOutputs::new(&b, &name, &outputs);
                    Some(Seed {
                        name: format!("{name}.result"),
                        data: r.encode().ok()?,
                    })
                })
                .collect()
        }
        "token_file" => {
            let values = sample_values();
            let mut out = Vec::new();
            for (name, b) in example_bundles() {
                let Ok(bytes) = pnet_bundle::format::encode(&b) else {
                    continue;
                };
                let Some(root) = b.functions.get(b.root.index()) else {
                    continue;
                };
                for p in root.ports.iter().filter(|p| p.dir.is_input()) {
                    let v = value_of(&values, &p.ty).unwrap_or(Value::Long(1));
                    let mut data = format!("{}={v}\n", p.name).into_bytes();
                    data.extend_from_slice(&bytes);
                    out.push(Seed {
                        name: format!("{name}-{}.tokens", p.name),
                        data,
                    });
                }
            }
            out
        }
        "protocol_frame" => protocol_seeds(),
        "json_value" => {
            let mut s = inline("json", JSON);
            for (i, v) in sample_values().iter().enumerate() {
                s.push(Seed {
                    name: format!("value-{i}.json"),
                    data: pnet_stdlib::json::to_json(v).to_string().into_bytes(),
                });
            }
            s
        }
        _ => Vec::new(),
    }
}
