//! Module calls with memory buffers and transfers: the implicit `GPI` requirement, planning
//! at dispatch, plan errors failing the job with the transition's location, statistics.

use pnet_bundle::{MemoryBuffer, MemoryTransfer, TransferKind};
use pnet_memory::SegmentInfo;

use super::*;

fn ulong(v: u64) -> Value {
    Value::ULong(v)
}

fn local_range(buffer: &str, offset: u64, size: u64) -> Value {
    Value::Struct(vec![
        ("buffer".into(), Value::string(buffer)),
        ("offset".into(), ulong(offset)),
        ("size".into(), ulong(size)),
    ])
}

/// `xs` -> `square(n) -> r` -> `ys`, where `n` is a list of global ranges: the function has a
/// buffer `buf` of `size` bytes and a `memory-get` of `n` into all of `buf`, and (with `put`)
/// a `memory-put` of `buf` back to `n`.
pub(crate) fn memory_net(size: u64, put: bool) -> Bundle {
    let any = Type::Any;
    let root = function(
        "main",
        vec![
            port("xs", PortDir::In, any.clone(), Some(0)),
            port("ys", PortDir::Out, any.clone(), Some(1)),
        ],
        Body::Net(Net {
            places: vec![place("xs", any.clone()), place("ys", any.clone())],
            transitions: vec![transition(
                "square",
                1,
                vec![conn(ConnectKind::In, 0, 0), conn(ConnectKind::Out, 1, 1)],
            )],
        }),
    );
    let mut sq = function(
        "square",
        vec![
            port("n", PortDir::In, any.clone(), None),
            port("r", PortDir::Out, any.clone(), None),
        ],
        arith(),
    );
    let slots = [("n", any.clone()), ("r", any.clone())];
    let codes = vec![
        code("size", &slots, vec![Instr::Const(0)], vec![ulong(size)]),
        code("global", &slots, vec![Instr::Load(0)], vec![]),
        code(
            "local",
            &slots,
            vec![Instr::Const(0)],
            vec![Value::List(vec![local_range("buf", 0, size)])],
        ),
    ];
    sq.memory_buffers.push(MemoryBuffer {
        name: "buf".into(),
        read_only: false,
        size: CodeId(0),
        alignment: None,
        span: sp(4),
    });
    let kinds: &[TransferKind] = if put {
        &[TransferKind::Get, TransferKind::Put]
    } else {
        &[TransferKind::Get]
    };
    for &kind in kinds {
        sq.memory_transfers.push(MemoryTransfer {
            kind,
            global: CodeId(1),
            local: CodeId(2),
            allow_empty_ranges: false,
            not_modified_in_module_call: false,
            span: sp(3),
        });
    }
    bundle(vec![root, sq], codes)
}

fn segment(id: u32, size: u64) -> SegmentInfo {
    SegmentInfo {
        id,
        host: "h".into(),
        shm_path: format!("/dev/shm/test-{id}"),
        server: "127.0.0.1:9".into(),
        size,
    }
}

/// A list with the global range of all of `handle`.
fn ranges(handle: &str, size: u64) -> Vec<(String, Vec<Value>)> {
    vec![(
        "xs".to_string(),
        vec![Value::List(vec![pnet_memory::range_value(handle, 0, size)])],
    )]
}

fn mem_answer(_: &ModuleDef, _: &[Value]) -> Result<Vec<Value>, String> {
    Ok(vec![Value::Long(1)])
}

#[test]
fn memory_calls_need_the_gpi_capability() {
    let b = memory_net(16, false);
    let mut h = Harness::new(&b, &ranges("0x1", 16), cfg(1, 2));
    // The one planned worker joined: the task cannot be placed.
    h.join(0, "plain", &["CPU"]);
    let e = h.error();
    assert_eq!(e.code(), "agent-no-worker");
    assert!(
        e.to_string()
            .contains("it needs the capabilities `GPI`; the workers have: `plain` [CPU]"),
        "{e}"
    );
}

#[test]
fn memory_tasks_are_planned_at_dispatch_and_go_to_gpi_workers() {
    let b = memory_net(100, true);
    let c = cfg(2, 2);
    let handle = {
        let mut t = c.memory.lock();
        t.add_segment(segment(1, 1 << 20));
        t.alloc(100).unwrap()
    };
    let table = c.memory.clone();
    let mut h = Harness::new(&b, &ranges(&handle, 100), c);
    h.answer = Box::new(mem_answer);
    h.join(0, "plain", &["CPU"]);
    h.join(1, "gpi", &["CPU", "GPI"]);
    h.run();
    let r = h.result();
    assert_eq!(r.stats.tasks, 1);
    assert!(
        h.workers[&0].received.is_empty(),
        "not on the worker without GPI"
    );
    let mem = h.workers[&1].memory[0]
        .clone()
        .expect("a planned memory task");
    assert_eq!(mem.buffers.len(), 1);
    assert_eq!((mem.buffers[0].size, mem.buffers[0].alignment), (100, 1));
    let total = |c: &[pnet_protocol::memory::Copy]| c.iter().map(|c| c.len).sum::<u64>();
    assert_eq!((total(&mem.gets), total(&mem.puts)), (100, 100));
    assert!(mem.segments.iter().any(|s| s.id == 1));
    // Dispatching counted the transfer.
    let s = table.lock().stats();
    assert_eq!((s.bytes_got, s.bytes_put), (100, 100));
}

#[test]
fn a_plan_error_fails_the_job_with_the_transition_s_location() {
    // The transfer names a handle that was never allocated.
    let b = memory_net(16, false);
    let c = cfg(1, 2);
    c.memory.lock().add_segment(segment(0, 1 << 20));
    let mut h = Harness::new(&b, &ranges("0xdeadbeef", 16), c);
    h.join(0, "gpi", &["GPI"]);
    h.run();
    let e = h.error();
    assert_eq!(e.code(), "agent-job-failed");
    let msg = e.to_string();
    assert!(
        msg.starts_with("in transition `square` (test.xpnet:2:3): module call `arith` failed: "),
        "{msg}"
    );
    assert!(msg.contains("0xdeadbeef"), "{msg}");
    // Nothing went to the worker, and the failure is logged.
    assert!(h.workers[&0].received.is_empty());
    assert!(
        h.logs
            .iter()
            .any(|l| l.contains("memory transfers are wrong")),
        "{:#?}",
        h.logs
    );
}

#[test]
fn a_range_of_the_wrong_size_fails_the_job() {
    // A 16-byte buffer, but the global range has 8 bytes.
    let b = memory_net(16, false);
    let c = cfg(1, 2);
    let handle = {
        let mut t = c.memory.lock();
        t.add_segment(segment(0, 1 << 20));
        t.alloc(8).unwrap()
    };
    let mut h = Harness::new(&b, &ranges(&handle, 8), c);
    h.join(0, "gpi", &["GPI"]);
    h.run();
    let msg = h.error().to_string();
    assert!(msg.contains("(test.xpnet:2:3)"), "{msg}");
    assert!(
        msg.contains("failed: test.xpnet:3:3: memory-get:"),
        "names the transfer: {msg}"
    );
    assert!(msg.contains("8 bytes") && msg.contains("16 bytes"), "{msg}");
}
