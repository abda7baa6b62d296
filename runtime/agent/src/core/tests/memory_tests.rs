//! Module calls with memory buffers and transfers: the implicit `GPI` requirement, planning
//! at dispatch, plan errors failing the job with the transition's location, statistics.

use pnet_memory::SegmentInfo;

use super::*;

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
    let b = net("memory_get_16");
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
    let b = net("memory_getput_100");
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
    let b = net("memory_get_16");
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
    let b = net("memory_get_16");
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
