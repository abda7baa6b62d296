//! The JSON framing of the control sockets (`docs/PROTOCOL.md`): requests and answers as JSON
//! objects with a `"kind"` tag, values in the one JSON encoding of values
//! (`pnet_stdlib::json`, typed by the net's ports and places), bytes in base64. A client that
//! is not Rust speaks it: it sends the hello line [`HELLO`], then one request a line, and
//! reads one answer a line.
//!
//! The conversions here are the only place where the JSON names of the kinds and fields are
//! written; the server (`shell/control_socket.rs`) turns a JSON request into the same
//! [`RtRequest`] / [`Request`] a postcard client sends, and the answer back into JSON.

use std::path::Path;

use pnet_bundle::Bundle;
use pnet_stdlib::{Type, Value};
use serde_json::{Map, Value as Json, json};

use super::{JobOutcome, Request, Response, RtRequest, RtResponse};

/// The protocol's name in the hello.
pub const PROTOCOL: &str = "pnet-control";
/// The protocol version this release speaks.
pub const VERSION: u64 = 1;
/// The hello a JSON client sends first (one line).
pub const HELLO: &str = r#"{"protocol":"pnet-control","version":1,"encoding":"json"}"#;

/// The request kinds of a runtime's socket (`gspc`), in the order of `docs/PROTOCOL.md`.
pub const RUNTIME_KINDS: &[&str] = &[
    "status",
    "submit",
    "jobs",
    "put-token",
    "close",
    "tasks",
    "logs",
    "wait",
    "cancel",
    "mem-alloc",
    "mem-write",
    "mem-read",
    "mem-stats",
    "mem-free",
    "add-workers",
    "remove-workers",
    "stop",
];

/// The request kinds of a job's socket (`gspc-run --control`).
pub const JOB_KINDS: &[&str] = &[
    "status",
    "put-token",
    "workflow-response",
    "tasks",
    "logs",
    "close",
    "cancel",
];

/// The JSON kind of a runtime request (the three submit variants are one kind).
pub fn runtime_kind(r: &RtRequest) -> &'static str {
    match r {
        RtRequest::Status | RtRequest::StatusPage { .. } => "status",
        RtRequest::Submit { .. } | RtRequest::SubmitAt { .. } | RtRequest::SubmitNamed { .. } => {
            "submit"
        }
        RtRequest::Wait { .. } => "wait",
        RtRequest::Cancel { .. } => "cancel",
        RtRequest::PutToken { .. } | RtRequest::PutTokenJson { .. } => "put-token",
        RtRequest::Close { .. } => "close",
        RtRequest::Jobs => "jobs",
        RtRequest::AddWorkers { .. } => "add-workers",
        RtRequest::RemoveWorkers { .. } => "remove-workers",
        RtRequest::Stop { .. } => "stop",
        RtRequest::MemAlloc { .. } => "mem-alloc",
        RtRequest::MemFree { .. } => "mem-free",
        RtRequest::MemWrite { .. } => "mem-write",
        RtRequest::MemRead { .. } => "mem-read",
        RtRequest::MemStats => "mem-stats",
        RtRequest::Tasks { .. } => "tasks",
        RtRequest::Logs { .. } => "logs",
    }
}

/// The JSON kind of a job request.
pub fn job_kind(r: &Request) -> &'static str {
    match r {
        Request::PutToken { .. } | Request::PutTokenJson { .. } => "put-token",
        Request::WorkflowResponse { .. } | Request::WorkflowResponseJson { .. } => {
            "workflow-response"
        }
        Request::Status => "status",
        Request::Close => "close",
        Request::Cancel => "cancel",
        Request::Tasks => "tasks",
        Request::Logs { .. } => "logs",
    }
}

/// Checks a client's hello line: `{"protocol": "pnet-control", "version": N, "encoding":
/// "json"}` with a version this release speaks.
pub fn check_hello(line: &str) -> Result<(), String> {
    let j: Json = serde_json::from_str(line).map_err(|e| format!("the hello is not JSON: {e}"))?;
    if j.get("protocol").and_then(Json::as_str) != Some(PROTOCOL) {
        return Err(format!(
            "the hello must name the protocol: {HELLO} (got {line})"
        ));
    }
    match j.get("encoding").and_then(Json::as_str) {
        Some("json") => {}
        _ => {
            return Err(format!(
                "the hello must ask for the encoding \"json\": {HELLO}"
            ));
        }
    }
    match j.get("version").and_then(Json::as_u64) {
        Some(VERSION) => Ok(()),
        Some(v) => Err(format!(
            "protocol version {v} is not spoken here (this runtime speaks version {VERSION})"
        )),
        None => Err(format!("the hello must carry a version: {HELLO}")),
    }
}

/// The server's answer to a good hello (`socket`: `runtime` or `job`).
pub fn hello_answer(runtime: bool) -> Json {
    json!({
        "kind": "hello",
        "protocol": PROTOCOL,
        "version": VERSION,
        "encoding": "json",
        "socket": if runtime { "runtime" } else { "job" },
    })
}

/// `{"kind": "error", "message": M}`.
pub fn error(message: impl Into<String>) -> Json {
    json!({"kind": "error", "message": message.into()})
}

/// `{"kind": "refused", "message": M}`.
pub fn refused(message: impl Into<String>) -> Json {
    json!({"kind": "refused", "message": message.into()})
}

// ---------------------------------------------------------------------------------------------
// Requests

fn kind_of(j: &Json) -> Result<&str, String> {
    if !j.is_object() {
        return Err("a request must be a JSON object".into());
    }
    j.get("kind")
        .and_then(Json::as_str)
        .ok_or_else(|| "a request must have a \"kind\" (a string)".into())
}

fn field<'a>(j: &'a Json, name: &str) -> Result<&'a Json, String> {
    j.get(name)
        .filter(|v| !v.is_null())
        .ok_or_else(|| format!("missing field \"{name}\""))
}

fn u64_field(j: &Json, name: &str) -> Result<u64, String> {
    field(j, name)?
        .as_u64()
        .ok_or_else(|| format!("field \"{name}\" must be an unsigned integer"))
}

fn opt_u64(j: &Json, name: &str) -> Result<Option<u64>, String> {
    match j.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("field \"{name}\" must be an unsigned integer")),
    }
}

fn str_field(j: &Json, name: &str) -> Result<String, String> {
    field(j, name)?
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("field \"{name}\" must be a string"))
}

fn opt_str(j: &Json, name: &str) -> Result<Option<String>, String> {
    match j.get(name) {
        None | Some(Json::Null) => Ok(None),
        Some(v) => v
            .as_str()
            .map(|s| Some(s.to_string()))
            .ok_or_else(|| format!("field \"{name}\" must be a string")),
    }
}

fn strings(j: &Json, name: &str) -> Result<Vec<String>, String> {
    match j.get(name) {
        None | Some(Json::Null) => Ok(Vec::new()),
        Some(Json::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("field \"{name}\" must be an array of strings"))
            })
            .collect(),
        Some(_) => Err(format!("field \"{name}\" must be an array of strings")),
    }
}

/// A value in JSON as the text a job decodes against its place's type
/// ([`Request::PutTokenJson`]).
fn value_text(j: &Json) -> Result<String, String> {
    j.get("value")
        .map(Json::to_string)
        .ok_or_else(|| "missing field \"value\"".into())
}

/// The largest bundle file a submit reads (the largest frame).
const MAX_BUNDLE: u64 = pnet_protocol::frame::MAX_FRAME as u64;

/// Reads the bundle of a submit: `"bundle"` (an absolute path to a `.pnet` file the runtime
/// reads) or `"bundle_base64"` (the file's bytes in base64); the second value is the net's
/// name shown by `gspc jobs` (`"net"`, else the file name).
fn submit_bundle(j: &Json) -> Result<(Vec<u8>, String), String> {
    let net = opt_str(j, "net")?;
    if let Some(b64) = opt_str(j, "bundle_base64")? {
        let bytes = base64_decode(&b64).map_err(|e| format!("field \"bundle_base64\": {e}"))?;
        return Ok((bytes, net.unwrap_or_else(|| "bundle.pnet".into())));
    }
    let path = opt_str(j, "bundle")?
        .ok_or("a submit needs \"bundle\" (an absolute path to a .pnet) or \"bundle_base64\"")?;
    let p = Path::new(&path);
    if !p.is_absolute() {
        return Err(format!(
            "the bundle path {path} must be absolute (the runtime does not share the client's \
             working directory)"
        ));
    }
    let bytes = read_bundle_file(p)?;
    let name = net.unwrap_or_else(|| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.clone())
    });
    Ok((bytes, name))
}

/// Decodes a submitted bundle named `net`; an error says what to do with a net's source
/// (XML) sent instead of its bundle.
pub fn decode_bundle(bytes: &[u8], net: &str) -> Result<Bundle, String> {
    pnet_bundle::format::decode(bytes).map_err(|e| {
        let source = bytes.trim_ascii_start().starts_with(b"<");
        let hint = if source {
            " (it is a net's source: compile it with `pnetc NET.xpnet -o NET.pnet` and submit \
             the .pnet)"
        } else {
            ""
        };
        format!("{net}: not a valid bundle: {e}{hint}")
    })
}

/// Reads a bundle file (a regular file of at most 64 MiB).
pub fn read_bundle_file(p: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    let meta = f
        .metadata()
        .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", p.display()));
    }
    let mut bytes = Vec::new();
    f.take(MAX_BUNDLE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    if bytes.len() as u64 > MAX_BUNDLE {
        return Err(format!("{} is larger than 64 MiB", p.display()));
    }
    Ok(bytes)
}

/// The inputs of a submit, `{"PORT": [TOKEN, ...], ...}`, decoded against the types of the
/// root's in ports.
pub fn inputs_from_json(
    bundle: &Bundle,
    inputs: Option<&Json>,
) -> Result<Vec<(String, Vec<Value>)>, String> {
    let map = match inputs {
        None | Some(Json::Null) => return Ok(Vec::new()),
        Some(Json::Object(m)) => m,
        Some(_) => {
            return Err("field \"inputs\" must be an object: {\"PORT\": [TOKEN, ...], ...}".into());
        }
    };
    let root = bundle
        .functions
        .get(bundle.root.index())
        .ok_or("bad bundle: no root function")?;
    let mut out = Vec::with_capacity(map.len());
    for (port, tokens) in map {
        let p = pnet_bundle::inputs::in_port(root, port)?;
        let Json::Array(tokens) = tokens else {
            return Err(format!(
                "inputs.{port} must be an array of tokens (one token: [VALUE])"
            ));
        };
        let values = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| pnet_stdlib::json::from_json_at(t, &p.ty, &format!("inputs.{port}[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        out.push((port.clone(), values));
    }
    Ok(out)
}

/// A token for a `put_token` place of the root net, from its JSON text: decoded against the
/// place's type (for a workflow response, against the type of the field `value` of the
/// place's struct). A place that does not exist decodes as an unknown type (the job then
/// names the place in its error).
pub fn token_from_json(
    bundle: &Bundle,
    place: &str,
    text: &str,
    response: bool,
) -> Result<Value, String> {
    let j: Json = serde_json::from_str(text).map_err(|e| format!("value: not JSON: {e}"))?;
    let ty = root_place_type(bundle, place);
    let not_requests = |holds: String| {
        format!(
            "place `{place}` holds {holds}, not workflow-response requests (a struct with the \
             fields `value` and `response_id`): put its tokens with put-token"
        )
    };
    let ty = match (response, ty) {
        (true, Some(Type::Struct(s))) => s
            .fields
            .iter()
            .find(|(n, _)| &**n == "value")
            .map(|(_, t)| t.clone())
            .ok_or_else(|| not_requests("structs without a field `value`".into()))?,
        (true, None | Some(Type::Any)) => Type::Any,
        (true, Some(t)) => return Err(not_requests(format!("{t} tokens"))),
        (false, t) => t.unwrap_or(Type::Any),
    };
    pnet_stdlib::json::from_json_at(&j, &ty, "value")
}

fn root_place_type(bundle: &Bundle, place: &str) -> Option<Type> {
    let f = bundle.functions.get(bundle.root.index())?;
    let pnet_bundle::Body::Net(net) = &f.body else {
        return None;
    };
    net.places
        .iter()
        .find(|p| p.name == place && p.put_token)
        .map(|p| p.ty.clone())
}

/// A runtime request in JSON: the secret it carries (hex) and the request.
pub fn runtime_request(j: &Json) -> Result<(String, RtRequest), String> {
    let kind = kind_of(j)?;
    let secret = match j.get("secret").and_then(Json::as_str) {
        Some(s) => s.to_string(),
        None => {
            return Err(
                "missing field \"secret\" (the runtime's secret, 64 hex digits from the \
                        state directory's `secret` file)"
                    .into(),
            );
        }
    };
    let job = || u64_field(j, "job");
    let r = match kind {
        "status" => match (opt_u64(j, "workers_offset")?, opt_u64(j, "workers_limit")?) {
            (None, None) => RtRequest::Status,
            (offset, limit) => RtRequest::StatusPage {
                offset: offset.unwrap_or(0),
                limit: limit.unwrap_or(u64::MAX),
            },
        },
        "jobs" => RtRequest::Jobs,
        "submit" => {
            let (bytes, net) = submit_bundle(j)?;
            let bundle = decode_bundle(&bytes, &net)?;
            let inputs = inputs_from_json(&bundle, j.get("inputs"))?;
            RtRequest::SubmitNamed {
                name: opt_str(j, "name")?.unwrap_or_default(),
                net,
                bundle: bytes,
                inputs,
                module_path: strings(j, "module_path")?,
            }
        }
        "wait" => RtRequest::Wait { job: job()? },
        "cancel" => RtRequest::Cancel { job: job()? },
        "put-token" => RtRequest::PutTokenJson {
            job: job()?,
            place: str_field(j, "place")?,
            value: value_text(j)?,
        },
        "close" => RtRequest::Close { job: job()? },
        "tasks" => RtRequest::Tasks { job: job()? },
        "logs" => RtRequest::Logs {
            job: job()?,
            task: opt_u64(j, "task")?,
        },
        "add-workers" => RtRequest::AddWorkers {
            topology: str_field(j, "topology")?,
            hosts: strings(j, "hosts")?,
        },
        "remove-workers" => RtRequest::RemoveWorkers {
            names: strings(j, "names")?,
            class: opt_str(j, "class")?,
            count: opt_u64(j, "count")?
                .map(|c| u32::try_from(c).map_err(|_| "field \"count\" is too large".to_string()))
                .transpose()?,
        },
        "stop" => RtRequest::Stop {
            wait: match j.get("wait") {
                None | Some(Json::Null) => false,
                Some(Json::Bool(b)) => *b,
                Some(_) => return Err("field \"wait\" must be true or false".into()),
            },
        },
        "mem-alloc" => RtRequest::MemAlloc {
            size: u64_field(j, "size")?,
        },
        "mem-free" => RtRequest::MemFree {
            handle: str_field(j, "handle")?,
        },
        "mem-write" => RtRequest::MemWrite {
            handle: str_field(j, "handle")?,
            offset: opt_u64(j, "offset")?.unwrap_or(0),
            data: base64_decode(&str_field(j, "data")?)
                .map_err(|e| format!("field \"data\": {e}"))?,
        },
        "mem-read" => RtRequest::MemRead {
            handle: str_field(j, "handle")?,
            offset: opt_u64(j, "offset")?.unwrap_or(0),
            size: u64_field(j, "size")?,
        },
        "mem-stats" => RtRequest::MemStats,
        other => {
            return Err(format!(
                "unknown kind \"{other}\" (a runtime's socket takes: {})",
                RUNTIME_KINDS.join(", ")
            ));
        }
    };
    Ok((secret, r))
}

/// A job request in JSON (the socket of `gspc-run --control`).
pub fn job_request(j: &Json) -> Result<Request, String> {
    Ok(match kind_of(j)? {
        "status" => Request::Status,
        "close" => Request::Close,
        "cancel" => Request::Cancel,
        "tasks" => Request::Tasks,
        "logs" => Request::Logs {
            task: opt_u64(j, "task")?,
        },
        "put-token" => Request::PutTokenJson {
            place: str_field(j, "place")?,
            value: value_text(j)?,
        },
        "workflow-response" => Request::WorkflowResponseJson {
            place: str_field(j, "place")?,
            value: value_text(j)?,
        },
        other => {
            return Err(format!(
                "unknown kind \"{other}\" (a job's socket takes: {})",
                JOB_KINDS.join(", ")
            ));
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Answers

/// A serializable record (no values inside) as a JSON object, with `"kind"` first.
fn flat(kind: &str, record: &impl serde::Serialize) -> Json {
    let mut m = Map::new();
    m.insert("kind".into(), Json::String(kind.into()));
    if let Ok(Json::Object(fields)) = serde_json::to_value(record) {
        m.extend(fields);
    }
    Json::Object(m)
}

fn list(kind: &str, items: &impl serde::Serialize) -> Json {
    let mut m = Map::new();
    m.insert("kind".into(), Json::String(kind.into()));
    m.insert(
        kind.into(),
        serde_json::to_value(items).unwrap_or(Json::Array(Vec::new())),
    );
    Json::Object(m)
}

/// A job's answer in JSON.
pub fn response(r: &Response) -> Json {
    match r {
        Response::Ok => json!({"kind": "ok"}),
        Response::Value(v) => json!({"kind": "value", "value": pnet_stdlib::json::to_json(v)}),
        Response::Status(s) => flat("status", s),
        Response::Error(m) => error(m.clone()),
        Response::Tasks(t) => flat("tasks", t),
        Response::Logs(l) => list("logs", l),
    }
}

/// How a job ended, in JSON: `{"kind": "outcome", "job": J, "state": S, ...}` with, when it
/// is done, `outputs` (`{"PORT": {"type": T, "tokens": [...]}}`), `firings`, `tasks` and
/// `ending` (as `gspc wait --json` prints them); when it failed, `code` and `message`.
pub fn outcome(job: u64, o: &JobOutcome) -> Json {
    let mut m = Map::new();
    m.insert("kind".into(), json!("outcome"));
    m.insert("job".into(), json!(job));
    m.insert("state".into(), json!(o.state()));
    match o {
        JobOutcome::Done {
            outputs,
            firings,
            tasks,
            types,
            ending,
        } => {
            let file = pnet_bundle::result::RunOutputs::from_parts("", types, outputs);
            let ports = pnet_tokens::json(&file, &[])
                .map(|mut j| j["outputs"].take())
                .unwrap_or_default();
            m.insert("outputs".into(), ports);
            m.insert("firings".into(), json!(firings));
            m.insert("tasks".into(), json!(tasks));
            m.insert("ending".into(), ending.to_json());
        }
        JobOutcome::Failed { code, message } => {
            m.insert("code".into(), json!(code));
            m.insert("message".into(), json!(message));
        }
        JobOutcome::Cancelled => {}
    }
    Json::Object(m)
}

/// A runtime's answer in JSON.
pub fn runtime_response(r: &RtResponse) -> Json {
    match r {
        RtResponse::Ok => json!({"kind": "ok"}),
        RtResponse::Error(m) => error(m.clone()),
        RtResponse::Refused(m) => refused(m.clone()),
        RtResponse::Job(r) => response(r),
        RtResponse::Submitted { job } => json!({"kind": "submitted", "job": job}),
        RtResponse::Outcome { job, outcome: o } => outcome(*job, o),
        RtResponse::Jobs(j) => list("jobs", j),
        RtResponse::Status(s) => flat("status", s),
        RtResponse::Workers(w) => list("workers", w),
        RtResponse::Stopped(s) => flat("stopped", s),
        RtResponse::Allocated { handle, range } => json!({
            "kind": "allocated",
            "handle": handle,
            "range": pnet_stdlib::json::to_json(range),
            "range_literal": range.to_string(),
        }),
        RtResponse::Bytes(b) => json!({"kind": "bytes", "data": base64_encode(b)}),
        RtResponse::Memory(m) => flat("memory", m),
        RtResponse::Tasks(t) => flat("tasks", t),
        RtResponse::Logs(l) => list("logs", l),
    }
}

// ---------------------------------------------------------------------------------------------
// Base64 (RFC 4648, the standard alphabet, with padding): bytes in JSON.

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Base64 of `bytes` (standard alphabet, padded).
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The bytes of a base64 text (standard alphabet; padding optional; no white space).
pub fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let digits = text.trim_end_matches('=');
    if text.len() - digits.len() > 2 || digits.len() % 4 == 1 {
        return Err("not base64 (bad length or padding)".into());
    }
    let mut out = Vec::with_capacity(digits.len() / 4 * 3 + 2);
    let mut acc = 0u32;
    let mut bits = 0u32;
    for (i, c) in digits.bytes().enumerate() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(format!("not base64: byte {i} is {:?}", c as char)),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"\x00\xff\x10", "AP8Q"),
        ] {
            assert_eq!(base64_encode(bytes), text);
            assert_eq!(base64_decode(text).unwrap(), bytes);
        }
        assert_eq!(base64_decode("Zm8").unwrap(), b"fo");
        assert!(base64_decode("Z").is_err());
        assert!(base64_decode("Zm9v!A").unwrap_err().contains("byte 4"));
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(base64_decode(&base64_encode(&all)).unwrap(), all);
    }

    #[test]
    fn the_hello_names_protocol_version_and_encoding() {
        check_hello(HELLO).unwrap();
        let e = check_hello(r#"{"protocol":"pnet-control","version":2,"encoding":"json"}"#)
            .unwrap_err();
        assert!(e.contains("version 2 is not spoken here"), "{e}");
        assert!(check_hello(r#"{"protocol":"x","version":1,"encoding":"json"}"#).is_err());
        assert!(check_hello("hello").unwrap_err().contains("not JSON"));
        assert_eq!(hello_answer(true)["socket"], "runtime");
    }

    #[test]
    fn runtime_requests_from_json() {
        let secret = "ab".repeat(32);
        let (s, r) = runtime_request(&json!({"kind": "jobs", "secret": secret})).unwrap();
        assert_eq!((s.as_str(), r), (secret.as_str(), RtRequest::Jobs));
        let (_, r) = runtime_request(&json!({
            "kind": "put-token", "secret": secret, "job": 3, "place": "p", "value": [1, 2]
        }))
        .unwrap();
        assert_eq!(
            r,
            RtRequest::PutTokenJson {
                job: 3,
                place: "p".into(),
                value: "[1,2]".into()
            }
        );
        let (_, r) = runtime_request(&json!({
            "kind": "mem-write", "secret": secret, "handle": "0x1", "data": "AAEC"
        }))
        .unwrap();
        assert_eq!(
            r,
            RtRequest::MemWrite {
                handle: "0x1".into(),
                offset: 0,
                data: vec![0, 1, 2]
            }
        );
        let e = runtime_request(&json!({"kind": "jobs"})).unwrap_err();
        assert!(e.contains("missing field \"secret\""), "{e}");
        let e = runtime_request(&json!({"kind": "nope", "secret": secret})).unwrap_err();
        assert!(e.contains("unknown kind \"nope\""), "{e}");
        let e = runtime_request(&json!({"kind": "wait", "secret": secret})).unwrap_err();
        assert_eq!(e, "missing field \"job\"");
        let e = runtime_request(&json!({"kind": "submit", "secret": secret, "bundle": "x.pnet"}))
            .unwrap_err();
        assert!(e.contains("must be absolute"), "{e}");
        // A net's source instead of its bundle: how to compile it.
        let src = std::env::temp_dir().join(format!("pnet-json-src-{}.xpnet", std::process::id()));
        std::fs::write(&src, "\n<defun name=\"n\"/>\n").unwrap();
        let bundle = src.display().to_string();
        let e = runtime_request(&json!({"kind": "submit", "secret": secret, "bundle": bundle}))
            .unwrap_err();
        let _ = std::fs::remove_file(&src);
        assert!(
            e.ends_with(
                "not a valid bundle: not a pnet bundle (bad magic number) (it is a net's source: \
                 compile it with `pnetc NET.xpnet -o NET.pnet` and submit the .pnet)"
            ),
            "{e}"
        );
        // Every kind of the list parses to a request of that kind (given its fields).
        for kind in RUNTIME_KINDS.iter().filter(|k| **k != "submit") {
            let j = json!({
                "kind": kind, "secret": secret, "job": 1, "place": "p", "value": 1,
                "topology": "w:1", "size": 8, "handle": "h", "data": ""
            });
            let (_, r) = runtime_request(&j).unwrap();
            assert_eq!(runtime_kind(&r), *kind);
        }
        for kind in JOB_KINDS {
            let r = job_request(&json!({"kind": kind, "place": "p", "value": null})).unwrap();
            assert_eq!(job_kind(&r), *kind);
        }
    }

    /// Every kind is sent in an example of `docs/PROTOCOL.md` (which the conformance test
    /// `tests/tests/protocol.rs` runs).
    #[test]
    fn every_kind_has_an_example_in_the_document() {
        let doc = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/PROTOCOL.md"),
        )
        .unwrap();
        for (socket, kinds) in [("runtime", RUNTIME_KINDS), ("job", JOB_KINDS)] {
            let examples: String = doc
                .split(&format!("```pnet-control {socket}\n"))
                .skip(1)
                .filter_map(|b| b.split("```").next())
                .collect();
            for kind in kinds {
                assert!(
                    examples.contains(&format!("C: {{\"kind\":\"{kind}\"")),
                    "docs/PROTOCOL.md has no {socket} example of {kind}"
                );
            }
        }
    }

    #[test]
    fn a_workflow_response_to_a_place_of_plain_tokens_says_so() {
        let square = crate::core::tests::net("square_wait_for_output");
        assert_eq!(
            token_from_json(&square, "xs", "5", true).unwrap_err(),
            "place `xs` holds long tokens, not workflow-response requests (a struct with the \
             fields `value` and `response_id`): put its tokens with put-token"
        );
        assert_eq!(
            token_from_json(&square, "xs", "5", false),
            Ok(Value::Long(5))
        );
        // A place of `any` and an unknown place are left to the engine.
        let response = crate::core::tests::net("response");
        assert!(token_from_json(&response, "req", "5", true).is_ok());
        assert!(token_from_json(&square, "nope", "5", true).is_ok());
    }

    #[test]
    fn answers_in_json() {
        assert_eq!(
            runtime_response(&RtResponse::Job(Response::Value(Value::ULong(7)))),
            json!({"kind": "value", "value": 7})
        );
        assert_eq!(
            runtime_response(&RtResponse::Bytes(vec![0, 1, 2])),
            json!({"kind": "bytes", "data": "AAEC"})
        );
        assert_eq!(
            runtime_response(&RtResponse::Outcome {
                job: 2,
                outcome: JobOutcome::Failed {
                    code: "agent-job-failed".into(),
                    message: "boom".into()
                }
            }),
            json!({"kind": "outcome", "job": 2, "state": "failed", "code": "agent-job-failed",
                   "message": "boom"})
        );
        let j = runtime_response(&RtResponse::Outcome {
            job: 1,
            outcome: JobOutcome::Done {
                outputs: vec![("r".into(), vec![Value::Int(3)])],
                firings: 2,
                tasks: 0,
                types: vec![("r".into(), Type::Int)],
                ending: Default::default(),
            },
        });
        assert_eq!(j["outputs"], json!({"r": {"type": "int", "tokens": [3]}}));
        assert_eq!(j["state"], "done");
        let j = runtime_response(&RtResponse::Jobs(Vec::new()));
        assert_eq!(j, json!({"kind": "jobs", "jobs": []}));
    }
}
