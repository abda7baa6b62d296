//! Fuzz targets: one plain function per parser and reader of the project, each taking
//! arbitrary bytes and going through the entry point the tools use. None of them may panic,
//! hang or blow up memory on any input; they may (and mostly do) return errors.
//!
//! The functions are called by the cargo-fuzz project in `fuzz/` (nightly, libFuzzer) and by
//! this crate's stable test `tests/fuzz.rs` (every seed plus deterministic mutations under a
//! time budget, each input under a watchdog). [`seeds`] collects the seeds of each target
//! from the repository's examples and, when it exists, the shared corpus; the `seed` binary
//! writes them to `target/fuzz-corpus/<target>/` for cargo-fuzz.

use std::path::Path;

use pnet_stdlib::{Type, Value};

pub mod mutate;
pub mod seeds;

/// A fuzz target: its name (as in `fuzz/fuzz_targets/<name>.rs`) and its function.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, in a stable order.
pub const TARGETS: &[Target] = &[
    ("xpnet", xpnet),
    ("expression", expression),
    ("literal", literal),
    ("topology_string", topology_string),
    ("dds_topology", dds_topology),
    ("workload", workload),
    ("pnml", pnml),
    ("bundle", bundle),
    ("result_file", result_file),
    ("token_file", token_file),
    ("protocol_frame", protocol_frame),
    ("json_value", json_value),
];

/// The target named `name`.
pub fn target(name: &str) -> Option<fn(&[u8])> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// The path a fuzzed net is compiled as: in a folder that does not exist, so that relative
/// includes find nothing on disk.
const NET_PATH: &str = "/nonexistent-fuzz-dir/fuzz.xpnet";

/// Firings of the engine on a decoded bundle (a few, to reach initialisation and the
/// expressions of the first transitions).
const ENGINE_STEPS: u64 = 8;

/// Renders diagnostics of a compilation with the one renderer (as `pnetc` does).
fn render_compiled(out: &pnet_sema::Output) -> String {
    let names: Vec<String> = out
        .files
        .iter()
        .map(|f| f.path.display().to_string())
        .collect();
    let files: Vec<pnet_syntax::render::RenderFile> = out
        .files
        .iter()
        .zip(&names)
        .map(|(f, name)| pnet_syntax::render::RenderFile {
            name,
            text: &f.text,
        })
        .collect();
    pnet_syntax::render::render_to_string(&files, &out.diagnostics)
}

/// Compiles `text` as `pnetc` does ([`pnet_sema::compile_source`]) and renders the
/// diagnostics; a bundle it produced is encoded and decoded again (decoding validates it).
fn compile_net(path: &Path, text: &str) {
    let out = pnet_sema::compile_source(path, text, &pnet_sema::Options::default());
    std::hint::black_box(render_compiled(&out));
    if let Some(bundle) = &out.bundle
        && let Ok(bytes) = pnet_bundle::format::encode(bundle)
    {
        // A compiled bundle must read back: a failure here is a bug of the compiler or
        // of the container.
        if let Err(e) = pnet_bundle::format::decode(&bytes) {
            panic!("a compiled bundle does not decode: {e}");
        }
    }
}

/// An xpnet file, compiled like `pnetc` compiles it, diagnostics rendered.
pub fn xpnet(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    compile_net(Path::new(NET_PATH), text);
}

/// An expression (the text of `<expression>` and `<condition>`): parsed, the diagnostics
/// rendered, the tree printed back (source and s-expression) and the printed source parsed
/// again.
pub fn expression(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (expr, diagnostics) = pnet_syntax::expr::parse_str(text);
    let file = pnet_syntax::render::RenderFile {
        name: "expression",
        text,
    };
    std::hint::black_box(pnet_syntax::render::render_to_string(&[file], &diagnostics));
    std::hint::black_box(pnet_syntax::expr::printer::to_sexpr(&expr));
    let printed = pnet_syntax::expr::printer::to_source(&expr);
    std::hint::black_box(pnet_syntax::expr::parse_str(&printed));
}

/// The types values are checked against by [`literal`] and [`json_value`].
pub fn sample_types() -> Vec<Type> {
    let point = Type::Struct(std::sync::Arc::new(pnet_stdlib::ty::StructType {
        name: "point".into(),
        fields: vec![("x".into(), Type::Double), ("y".into(), Type::Long)],
    }));
    vec![
        Type::Control,
        Type::Bool,
        Type::Int,
        Type::Long,
        Type::UInt,
        Type::ULong,
        Type::Float,
        Type::Double,
        Type::Char,
        Type::String,
        Type::Bitset,
        Type::Bytearray,
        Type::Bigint,
        Type::Shared("cleanup".into()),
        Type::List(Box::new(Type::Any)),
        Type::List(Box::new(Type::Long)),
        Type::Set(Box::new(Type::String)),
        Type::Map(
            Box::new(Type::Long),
            Box::new(Type::List(Box::new(Type::Any))),
        ),
        point.clone(),
        Type::List(Box::new(point)),
        Type::Any,
    ]
}

/// A value in literal syntax, as `-p PORT=VALUE` reads it: parsed alone, as a binding and
/// as a number; a value read is printed, checked against a few types and read back.
pub fn literal(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    std::hint::black_box(pnet_stdlib::literal::parse_binding("-p", "port", text).ok());
    std::hint::black_box(pnet_stdlib::literal::parse_number(text).ok());
    if let Ok(v) = pnet_stdlib::literal::parse_literal(text) {
        exercise_value(&v);
    }
}

/// What the tools do with a value read from outside: print it (literal syntax and JSON),
/// check it against types, read the printed form back.
fn exercise_value(v: &Value) {
    let printed = v.to_string();
    std::hint::black_box(pnet_stdlib::literal::parse_literal(&printed).ok());
    let json = pnet_stdlib::json::to_json(v);
    for ty in sample_types() {
        if v.fits(&ty) {
            std::hint::black_box(pnet_stdlib::json::from_json(&json, &ty).ok());
        }
    }
}

/// A topology string (`gspc-run --topology`, `gspc start`): parsed, diagnostics rendered,
/// checked against a host's sockets and planned on two hosts.
pub fn topology_string(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (topology, diagnostics) = pnet_topology::parse_topology(text);
    for d in &diagnostics {
        std::hint::black_box(d.render_short("--topology", text));
    }
    if pnet_topology::has_errors(&diagnostics) {
        return;
    }
    std::hint::black_box(pnet_topology::check_sockets(&topology, 2));
    let hosts = ["node1".to_string(), "node2".to_string()];
    std::hint::black_box(pnet_topology::worker_count(&topology, hosts.len()));
    std::hint::black_box(pnet_topology::plan_with_limit(&topology, &hosts, 1000));
}

/// The most task instances [`dds_topology`] expands (more are only counted).
const DDS_EXPAND_LIMIT: u64 = 10_000;

/// A DDS topology file: parsed from bytes (variables substituted), diagnostics rendered,
/// the instances counted and, when there are few, expanded.
pub fn dds_topology(data: &[u8]) {
    let (topology, diagnostics) = pnet_dds::parse_bytes(data, &pnet_dds::ParseOptions::default());
    let text = String::from_utf8_lossy(data);
    for d in &diagnostics {
        std::hint::black_box(d.render_short("topology.xml", &text));
    }
    let Some(topology) = topology else {
        return;
    };
    let counts = pnet_dds::count(&topology);
    if counts.tasks.saturating_add(counts.collections) <= DDS_EXPAND_LIMIT {
        std::hint::black_box(pnet_dds::expand(&topology));
    }
}

/// A workload description: parsed and checked, diagnostics rendered (clamped to the text as
/// `pnetc` does), and when it has no errors lowered to xpnet and compiled like `pnetc`.
pub fn workload(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (w, diagnostics) = pnet_workload::parse(text);
    let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
    let clamped: Vec<pnet_syntax::Diagnostic> = diagnostics
        .iter()
        .cloned()
        .map(|mut d| {
            for l in &mut d.labels {
                l.span.end = l.span.end.min(len);
                l.span.start = l.span.start.min(l.span.end);
            }
            d
        })
        .collect();
    let file = pnet_syntax::render::RenderFile {
        name: "fuzz.workload",
        text,
    };
    std::hint::black_box(pnet_syntax::render::render_to_string(&[file], &clamped));
    if diagnostics.iter().any(|d| d.is_error()) {
        return;
    }
    let lowered = pnet_workload::lower(&w);
    let out = pnet_sema::compile_source(
        Path::new("/nonexistent-fuzz-dir/fuzz.workload.xpnet"),
        &lowered,
        &pnet_sema::Options::default(),
    );
    std::hint::black_box(render_compiled(&out));
}

/// A PNML file (`pnetv` on a Model Checking Contest net).
pub fn pnml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match pnet_verify::parse_pnml(text) {
        Ok(net) => {
            std::hint::black_box(&net);
        }
        Err(errors) => {
            for e in &errors {
                std::hint::black_box(e.to_string());
            }
        }
    }
}

/// The length of a container header (magic, version, CRC-32, payload length), as in
/// `pnet_bundle::format`.
const CONTAINER_HEADER: usize = 8 + 4 + 4 + 8;

/// `data` with the payload length and CRC-32 of its container header set to match its
/// payload (`None` when it is shorter than a header): without this, almost every mutation
/// of a bundle or result file stops at the checksum, and the decoding and validation behind
/// it go untested.
pub fn fix_container(data: &[u8]) -> Option<Vec<u8>> {
    if data.len() < CONTAINER_HEADER {
        return None;
    }
    let mut out = data.to_vec();
    let payload = &data[CONTAINER_HEADER..];
    out[12..16].copy_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    Some(out)
}

/// `data` as it is, then with its container header fixed (when that changes it).
fn as_is_and_fixed(data: &[u8], mut f: impl FnMut(&[u8])) {
    f(data);
    if let Some(fixed) = fix_container(data)
        && fixed != data
    {
        f(&fixed);
    }
}

/// Runs a few engine steps on a decoded bundle (its own initial tokens, no inputs).
fn run_a_little(bundle: &pnet_bundle::Bundle) {
    let config = pnet_engine::RunConfig {
        max_firings: Some(ENGINE_STEPS),
        ..pnet_engine::RunConfig::default()
    };
    if let Ok(mut engine) = pnet_engine::Engine::new(bundle, &config) {
        std::hint::black_box(engine.run_steps(ENGINE_STEPS).ok());
        std::hint::black_box(engine.ending());
    }
}

/// A `.pnet` bundle, as `gspc-run`, `pnetv`, `pnetput` and `pnet2dot` read it: decoded
/// (which validates it; tried as it is and with its container header fixed by
/// [`fix_container`]), listed (bytecode and in ports), and run for a few steps.
pub fn bundle(data: &[u8]) {
    as_is_and_fixed(data, bundle_once);
}

fn bundle_once(data: &[u8]) {
    let Ok(b) = pnet_bundle::format::decode(data) else {
        return;
    };
    std::hint::black_box(pnet_bundle::text::bytecode_listing(&b));
    std::hint::black_box(pnet_tokens::listing(&b));
    std::hint::black_box(pnet_bundle::result::output_types(&b));
    run_a_little(&b);
}

/// A result file, as `pnetget` reads it (as it is and with its header fixed): decoded and printed as text and as JSON.
pub fn result_file(data: &[u8]) {
    as_is_and_fixed(data, result_file_once);
}

fn result_file_once(data: &[u8]) {
    let Ok(outputs) = pnet_bundle::result::RunOutputs::decode(data) else {
        return;
    };
    std::hint::black_box(pnet_tokens::text(&outputs, &[]).ok());
    std::hint::black_box(pnet_tokens::json(&outputs, &[]).ok());
    if let Some(first) = outputs.ports.first() {
        std::hint::black_box(pnet_tokens::text(&outputs, std::slice::from_ref(&first.name)).ok());
    }
    std::hint::black_box(pnet_tokens::text(&outputs, &["no such port".to_string()]).ok());
}

/// What `pnetput` reads: the first line is a `PORT=VALUE` binding, the rest a bundle. The
/// bundle (its container header fixed as in [`bundle`]) is decoded, the value put on the port (and on the place of that name), the bundle
/// listed, encoded and decoded again.
pub fn token_file(data: &[u8]) {
    let (line, rest) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(line) = std::str::from_utf8(line) else {
        return;
    };
    let Ok((name, value)) = pnet_stdlib::literal::parse_binding("--port", "port", line) else {
        return;
    };
    as_is_and_fixed(rest, |rest| put_tokens(&name, &value, rest));
}

fn put_tokens(name: &str, value: &Value, rest: &[u8]) {
    let Ok(mut b) = pnet_bundle::format::decode(rest) else {
        return;
    };
    for target in [
        pnet_tokens::Target::Port(name.to_string()),
        pnet_tokens::Target::Place(name.to_string()),
    ] {
        std::hint::black_box(pnet_tokens::put(&mut b, &target, value.clone()).ok());
    }
    std::hint::black_box(pnet_tokens::listing(&b));
    if let Ok(bytes) = pnet_bundle::format::encode(&b) {
        // A bundle with a token that fits its place must read back.
        if let Err(e) = pnet_bundle::format::decode(&bytes) {
            panic!("a bundle with put tokens does not decode: {e}");
        }
    }
}

/// Frames of the runtime's protocols, in both directions: a length-prefixed frame read as
/// each message type (agent to worker, worker to agent, property requests and replies),
/// the leading protocol version of a hello; a message read is written and read again.
pub fn protocol_frame(data: &[u8]) {
    use pnet_protocol::property::{PropertyReply, PropertyRequest, property_hello_protocol};
    use pnet_protocol::{AgentMsg, WorkerMsg, hello_protocol, read_msg, write_msg};

    fn again<T>(msg: &T)
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        let mut buf = Vec::new();
        if write_msg(&mut buf, msg).is_ok() {
            // What we wrote must read back.
            if let Err(e) = read_msg::<_, T>(&mut buf.as_slice()) {
                panic!("a written message does not read back: {e}");
            }
        }
    }

    std::hint::black_box(hello_protocol(data));
    std::hint::black_box(property_hello_protocol(data));
    if let Ok(m) = read_msg::<_, AgentMsg>(&mut &data[..]) {
        again(&m);
    }
    if let Ok(m) = read_msg::<_, WorkerMsg>(&mut &data[..]) {
        again(&m);
    }
    if let Ok(m) = read_msg::<_, PropertyRequest>(&mut &data[..]) {
        again(&m);
    }
    if let Ok(m) = read_msg::<_, PropertyReply>(&mut &data[..]) {
        again(&m);
    }
    // A stream of several frames (a connection), read until the first error.
    let mut stream = data;
    for _ in 0..16 {
        if read_msg::<_, WorkerMsg>(&mut stream).is_err() {
            break;
        }
    }
}

/// JSON as modules hand back their outputs (`pnet_stdlib::json`): parsed, then read against
/// each sample type; a value read is printed and encoded again.
pub fn json_value(data: &[u8]) {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    for ty in sample_types() {
        if let Ok(v) = pnet_stdlib::json::from_json(&json, &ty) {
            std::hint::black_box(v.to_string());
            std::hint::black_box(pnet_stdlib::json::to_json(&v));
        }
    }
}
