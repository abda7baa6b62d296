//! The JSON control protocol (`docs/PROTOCOL.md`) from a client that is not Rust: a Python
//! script (standard library only: `socket`, `json`, `re`) reads the document's examples and
//! sends every request, in JSON framing, to a real `gspc boot` runtime and to `gspc-run
//! --control` runs; each answer must match the documented one. A second test checks that every
//! variant of the Rust request and answer types is named in the document.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn doc() -> PathBuf {
    pnet_tests::workspace_root().join("docs/PROTOCOL.md")
}

/// The net of the job examples: state += extra; a workflow response answers state + value.
const ASK: &str = r#"<defun name="ask">
  <out name="state" type="unsigned long" place="state"/>
  <net>
    <struct name="req"><field name="value" type="unsigned long"/>
      <field name="response_id" type="string"/></struct>
    <place name="state" type="unsigned long"><token><value>0UL</value></token></place>
    <place name="extra" type="unsigned long" put_token="true"/>
    <place name="ask" type="req" put_token="true"/>
    <transition name="add">
      <defun><inout name="s" type="unsigned long"/><in name="e" type="unsigned long"/>
        <expression>${s} := ${s} + ${e}</expression></defun>
      <connect-inout port="s" place="state"/><connect-in port="e" place="extra"/>
    </transition>
    <transition name="answer">
      <defun><inout name="s" type="unsigned long"/><in name="trigger" type="req"/>
        <out name="response" type="unsigned long"/>
        <expression>${response} := ${s} + ${trigger.value}</expression></defun>
      <connect-inout port="s" place="state"/><connect-in port="trigger" place="ask"/>
      <connect-response port="response" to="trigger"/>
    </transition>
  </net>
</defun>
"#;

/// The conformance client: `python3 - DOC RUNTIME_SOCKET SECRET BUNDLE JOB_SOCKET
/// JOB_SOCKET_2`. Prints one line per exchange; exits non-zero at the first mismatch.
const CLIENT: &str = r#"
import json, re, socket, sys

doc, rt_path, secret, bundle, job_path, job2_path = sys.argv[1:]
text = open(doc, encoding="utf-8").read()
blocks = re.findall(r"```pnet-control (\w+)\n(.*?)```", text, re.S)
HELLO = '{"protocol":"pnet-control","version":1,"encoding":"json"}'
EXACT = {"kind", "state", "value", "data", "tokens", "socket", "version", "protocol", "encoding"}
found = {"runtime": set(), "job": set()}
env = {"$SECRET": secret, "$BUNDLE": bundle}


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(20)
        self.s.connect(path)
        self.f = self.s.makefile("rb")

    def send(self, line):
        self.s.sendall(line.encode() + b"\n")
        answer = self.f.readline()
        if not answer.endswith(b"\n"):
            sys.exit("no answer to " + line)
        return json.loads(answer)

    def close(self):
        self.f.close()
        self.s.close()


def fail(msg):
    print("MISMATCH: " + msg)
    sys.exit(1)


def check(path, want, got):
    if isinstance(want, dict):
        if not isinstance(got, dict):
            fail(f"{path}: expected an object, got {got!r}")
        for k, v in want.items():
            if k not in got:
                fail(f"{path}: missing field {k!r} in {got!r}")
            if k in EXACT and not (isinstance(v, str) and v.startswith("$")):
                if got[k] != v:
                    fail(f"{path}.{k}: expected {v!r}, got {got[k]!r}")
            elif k == "message" and "..." in v:
                if not got[k].startswith(v.split("...")[0]):
                    fail(f"{path}.message: expected {v!r}, got {got[k]!r}")
            else:
                check(f"{path}.{k}", v, got[k])
    elif isinstance(want, list):
        if not isinstance(got, list):
            fail(f"{path}: expected an array, got {got!r}")
        if want and not got:
            fail(f"{path}: expected a non-empty array")
        if want and isinstance(want[0], dict):
            check(f"{path}[0]", want[0], got[0])
    elif want is not None and type(want) is not type(got) and not (
        isinstance(want, (int, float)) and isinstance(got, (int, float))
    ):
        fail(f"{path}: expected {type(want).__name__}, got {got!r}")


def subst(line):
    for k, v in env.items():
        line = line.replace(k, v)
    return line


# Beyond the examples: a line that is not JSON is answered with an error and the connection
# stays open; a hello of another version is refused with the version spoken.
c = Conn(rt_path)
got = c.send('{"protocol":"pnet-control","version":2,"encoding":"json"}')
if got["kind"] != "error" or "this runtime speaks version 1" not in got["message"]:
    fail(f"a version-2 hello: {got}")
c.close()
c = Conn(rt_path)
assert c.send(HELLO)["kind"] == "hello"
got = c.send("not json")
if got["kind"] != "error" or not got["message"].startswith("malformed request: not JSON"):
    fail(f"a line that is not JSON: {got}")
if c.send(json.dumps({"kind": "jobs", "secret": secret}))["kind"] != "jobs":
    fail("the connection did not stay open after an error")
# A request without its secret is malformed (not refused): the connection stays open.
got = c.send(json.dumps({"kind": "jobs"}))
if got["kind"] != "error" or 'missing field "secret"' not in got["message"]:
    fail(f"a request without a secret: {got}")
if c.send(json.dumps({"kind": "jobs", "secret": secret}))["kind"] != "jobs":
    fail("the connection did not stay open after a missing secret")
# A line that is not UTF-8 is answered with an error, then the connection is closed.
c.s.sendall(b"\xff\xfe{}\n")
got = json.loads(c.f.readline())
if got["kind"] != "error":
    fail(f"a line that is not UTF-8: {got}")
if c.f.readline() != b"":
    fail("the connection stayed open after a line that is not UTF-8")
c.close()

conns = {}
for sock, body in blocks:
    lines = [l for l in body.splitlines() if l.strip()]
    pairs = list(zip(lines[0::2], lines[1::2]))
    assert len(pairs) * 2 == len(lines), body
    for c, s in pairs:
        assert c.startswith("C: ") and s.startswith("S: "), (c, s)
        request, want = json.loads(subst(c[3:])), json.loads(s[3:])
        path = rt_path if sock == "runtime" else job_path
        if sock == "job" and request.get("kind") == "cancel":
            path = job2_path
        if "protocol" in request:
            conn = Conn(path)
        else:
            conn = conns.get(path)
            if conn is None:
                conn = Conn(path)
                hello = conn.send(HELLO)
                assert hello["kind"] == "hello", hello
            found[sock].add(request["kind"])
        got = conn.send(json.dumps(request))
        print(f"{sock}: {c[3:]}\n  -> {json.dumps(got)}")
        check(request.get("kind", "hello"), want, got)
        if "protocol" in request or got["kind"] == "refused":
            conn.close()
            conns.pop(path, None)
        else:
            conns[path] = conn
        if got["kind"] == "submitted":
            env["$JOB"] = str(got["job"])
        if got["kind"] == "allocated":
            env["$HANDLE"] = got["handle"]

need = {
    "runtime": {"status", "submit", "wait", "jobs", "tasks", "put-token", "close", "cancel",
                "logs", "mem-alloc", "mem-free", "mem-read", "mem-write", "mem-stats",
                "add-workers", "remove-workers", "stop"},
    "job": {"status", "put-token", "workflow-response", "tasks", "logs", "close", "cancel"},
}
for sock, kinds in need.items():
    missing = kinds - found[sock]
    if missing:
        fail(f"the document sends no {sorted(missing)} on the {sock} socket")
print("conformance: all exchanges match")
"#;

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Run(Child);

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(path: &Path) {
    let t = Instant::now();
    while !path.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn python() -> Option<PathBuf> {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("skipped: python3 is not installed");
    }
    ok.then(|| PathBuf::from("python3"))
}

#[test]
fn every_documented_request_gets_its_documented_answer_from_python() {
    let Some(python) = python() else {
        return;
    };
    let bin = pnet_tests::build_packages(&["pnet-gspc", "pnet-worker", "gspc-run", "pnetc"]);
    let gspc = pnet_tests::GspcScratch::new("protocol", "conformance", bin.join("gspc"));
    let dir = Scratch(gspc.dir.join("run"));
    std::fs::create_dir_all(&dir.0).unwrap();
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o700)).unwrap();
    let add = pnet_tests::workspace_root().join("tests/data/protocol/add.xpnet");
    let bundle = dir.0.join("add.pnet");
    let o = Command::new(bin.join("pnetc"))
        .arg(&add)
        .arg("-o")
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // The job sockets: two runs of `ask` (the second is cancelled).
    let ask = dir.0.join("ask.xpnet");
    std::fs::write(&ask, ASK).unwrap();
    let job = |sock: &Path| {
        Run(Command::new(bin.join("gspc-run"))
            .arg("--control")
            .arg(sock)
            .arg(&ask)
            .env_remove("PNET_MODULE_PATH")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start gspc-run"))
    };
    let (sock1, sock2) = (dir.0.join("job1.sock"), dir.0.join("job2.sock"));
    let mut run1 = job(&sock1);
    let mut run2 = job(&sock2);

    // The runtime: one worker with 1 MiB of global memory.
    gspc.ok(&["boot", "--topology", "worker:1,1048576", "--timeout", "30"]);
    let t = Instant::now();
    loop {
        let st: serde_json::Value = serde_json::from_str(&gspc.ok(&["status", "--json"])).unwrap();
        if st["memory"]["segments"] == 1 {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "no segment: {st:#}");
        std::thread::sleep(Duration::from_millis(20));
    }
    wait_for(&sock1);
    wait_for(&sock2);
    let secret = std::fs::read_to_string(gspc.state().join("secret")).unwrap();

    let mut py = Command::new(python)
        .arg("-")
        .arg(doc())
        .arg(gspc.state().join("control.sock"))
        .arg(secret.trim())
        .arg(&bundle)
        .arg(&sock1)
        .arg(&sock2)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    py.stdin
        .take()
        .unwrap()
        .write_all(CLIENT.as_bytes())
        .unwrap();
    let o = py.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    println!("{out}");
    assert!(out.contains("conformance: all exchanges match"), "{out}");

    // Both job runs ended: the first closed (its state is 10), the second cancelled.
    let o1 = std::mem::replace(&mut run1.0, Command::new("true").spawn().unwrap());
    let o1 = o1.wait_with_output().unwrap();
    assert!(
        o1.status.success(),
        "{}",
        String::from_utf8_lossy(&o1.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o1.stdout), "state = 10UL\n");
    let o2 = std::mem::replace(&mut run2.0, Command::new("true").spawn().unwrap());
    let o2 = o2.wait_with_output().unwrap();
    assert!(!o2.status.success(), "a cancelled run fails");
}

/// The Rust enum `name`'s variants, read from the source text (4-space indented capitalised
/// identifiers inside `pub enum NAME {`).
fn variants(source: &str, name: &str) -> Vec<String> {
    let start = source
        .find(&format!("pub enum {name} {{\n"))
        .unwrap_or_else(|| panic!("no enum {name}"));
    let body = &source[start..];
    let end = body.find("\n}\n").unwrap();
    body[..end]
        .lines()
        .skip(1)
        .filter_map(|l| {
            let rest = l.strip_prefix("    ")?;
            if !rest.starts_with(|c: char| c.is_ascii_uppercase()) {
                return None;
            }
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            Some(ident)
        })
        .collect()
}

#[test]
fn every_request_and_answer_variant_is_documented() {
    let source =
        std::fs::read_to_string(pnet_tests::workspace_root().join("runtime/agent/src/control.rs"))
            .unwrap();
    let doc = std::fs::read_to_string(doc()).unwrap();
    let mut missing = Vec::new();
    for name in ["RtRequest", "Request", "RtResponse", "Response"] {
        let vs = variants(&source, name);
        assert!(vs.len() >= 6, "{name}: {vs:?}");
        for v in vs {
            if !doc.contains(&format!("`{name}::{v}")) {
                missing.push(format!("{name}::{v}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/PROTOCOL.md does not name {missing:?}: document every request and answer"
    );
}
