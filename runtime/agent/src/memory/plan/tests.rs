//! The memory plan: range shapes (end to end: plan, then the worker's `run_gets` and
//! `run_puts` against a byte-by-byte model) and the plan's errors.

use std::sync::Arc;

use pnet_bundle::{Bundle, FunctionId, SourceFile, TransferKind};
use pnet_memory::{
    GlobalTable, LocalBuffers, Peers, range_value, read_global, run_gets, run_puts, write_global,
};
use pnet_stdlib::Value;

use super::*;
use pnet_memory::testing::{World, pattern, spec};

// ---- a function with memory buffers and transfers, for `plan`

const SOURCE: &str =
    "<defun name=\"f\">\n  <memory-get/>\n  <memory-get/>\n  <memory-get/>\n  <memory-get/>\n";

/// Buffers `(name, size, alignment)`; transfers `(kind, allow empty, global, local)`.
/// Transfer k sits at line k + 2, column 3 of `SOURCE`. The function is read from the IR's
/// text form; the ranges (what its global and local expressions would give) are the task's.
struct Call {
    bundle: Bundle,
    mem: pnet_engine::TaskMemory,
}

fn call(buffers: &[(&str, u64, u64)], transfers: Vec<(TransferKind, bool, Value, Value)>) -> Call {
    let file = SourceFile::new("t.xpnet", SOURCE);
    let lines: Vec<String> = file.line_starts.iter().map(u32::to_string).collect();
    let mut text = format!(
        "bundle root f0 f\nfile 0 \"t.xpnet\" lines {}\nfunction f0 f\n",
        lines.join(" ")
    );
    for (name, _, _) in buffers {
        text += &format!("  memory-buffer {name} size c0\n");
    }
    for (k, (kind, allow, _, _)) in transfers.iter().enumerate() {
        let kind = match kind {
            TransferKind::Get => "memory-get",
            TransferKind::Put => "memory-put",
            TransferKind::GetPut => "memory-getput",
        };
        let allow = if *allow { " allow_empty_ranges" } else { "" };
        text += &format!(
            "  {kind} global c0 local c0{allow}  @ t.xpnet:{}:3-4\n",
            k + 2
        );
    }
    text += "  expression c0\n\ncode c0 \"ranges\" : any\n  const 0 0UL\n  0  const       0UL\n";
    let bundle = pnet_bundle::text::parse(&text).unwrap_or_else(|e| panic!("{text}\n{e:?}"));
    Call {
        bundle,
        mem: pnet_engine::TaskMemory {
            buffers: buffers.iter().map(|&(_, s, a)| (s, a)).collect(),
            transfers: transfers.into_iter().map(|(_, _, g, l)| (g, l)).collect(),
        },
    }
}

fn globals(rs: &[(&str, u64, u64)]) -> Value {
    Value::List(rs.iter().map(|&(h, o, s)| range_value(h, o, s)).collect())
}

fn locals(rs: &[(&str, u64, u64)]) -> Value {
    Value::List(
        rs.iter()
            .map(|&(b, o, s)| {
                Value::Struct(vec![
                    (Arc::from("buffer"), Value::string(b)),
                    (Arc::from("offset"), Value::ULong(o)),
                    (Arc::from("size"), Value::ULong(s)),
                ])
            })
            .collect(),
    )
}

fn plan_err(c: &Call, t: &GlobalTable) -> String {
    match plan(&c.bundle, FunctionId(0), &c.mem, t) {
        Ok(task) => panic!("expected an error, got {task:?}"),
        Err(e) => e.message,
    }
}

/// The reference model of one transfer: the streams byte by byte. Returns, per stream byte,
/// ((handle, offset), (buffer, offset)).
fn reference(
    g: &[(&str, u64, u64)],
    l: &[(&str, u64, u64)],
) -> Vec<((String, u64), (String, u64))> {
    let gs = g
        .iter()
        .flat_map(|&(h, o, s)| (o..o + s).map(move |x| (h.to_string(), x)));
    let ls = l
        .iter()
        .flat_map(|&(b, o, s)| (o..o + s).map(move |x| (b.to_string(), x)));
    gs.zip(ls).collect()
}

/// Runs one get transfer of the given shape end to end (plan, run_gets) against the model,
/// then a put of the same shape back into fresh global memory; both through `peers`.
fn check_shape(
    w: &World,
    peers: &mut Peers,
    allocs: &[u64],
    buffers: &[(&str, u64, u64)],
    g: &[(&str, u64, u64)],
    l: &[(&str, u64, u64)],
) {
    let mut table = w.table();
    let handles: Vec<String> = allocs.iter().map(|&s| table.alloc(s).unwrap()).collect();
    let name = |h: &str| -> String {
        // ranges name allocations "a0", "a1", ... in the shape
        let i: usize = h[1..].parse().unwrap();
        handles[i].clone()
    };
    let g_real: Vec<(String, u64, u64)> = g.iter().map(|&(h, o, s)| (name(h), o, s)).collect();
    let g_ref: Vec<(&str, u64, u64)> = g_real
        .iter()
        .map(|(h, o, s)| (h.as_str(), *o, *s))
        .collect();
    // global contents
    let mut contents = std::collections::HashMap::new();
    for (i, h) in handles.iter().enumerate() {
        let data = pattern(allocs[i] as usize, i as u8 * 7 + 1);
        write_global(&table, peers, h, 0, &data).unwrap();
        contents.insert(h.clone(), data);
    }
    // get
    let c = call(
        buffers,
        vec![(TransferKind::Get, true, globals(&g_ref), locals(l))],
    );
    let task = plan(&c.bundle, FunctionId(0), &c.mem, &table).unwrap();
    assert!(task.puts.is_empty());
    let mut touched: Vec<u32> = task.gets.iter().map(|c| c.segment).collect();
    touched.sort();
    touched.dedup();
    assert_eq!(
        task.segments.iter().map(|s| s.id).collect::<Vec<_>>(),
        touched
    );
    let mut bufs = LocalBuffers::allocate(&task.buffers, u64::MAX).unwrap();
    let n = run_gets(&task, &mut bufs, peers).unwrap();
    let model = reference(&g_ref, l);
    assert_eq!(n, model.len() as u64);
    let bindex = |b: &str| buffers.iter().position(|x| x.0 == b).unwrap();
    let mut expected: Vec<Vec<u8>> = buffers.iter().map(|b| vec![0u8; b.1 as usize]).collect();
    for ((h, go), (b, lo)) in &model {
        expected[bindex(b)][*lo as usize] = contents[h][*go as usize];
    }
    for (i, e) in expected.iter().enumerate() {
        assert_eq!(bufs.bytes(i), &e[..], "buffer {}", buffers[i].0);
    }
    bufs.check_guards().unwrap();
    // put: fresh buffers with other bytes, into zeroed global memory
    for (h, data) in &contents {
        write_global(&table, peers, h, 0, &vec![0u8; data.len()]).unwrap();
    }
    let c = call(
        buffers,
        vec![(TransferKind::Put, true, globals(&g_ref), locals(l))],
    );
    let task = plan(&c.bundle, FunctionId(0), &c.mem, &table).unwrap();
    assert!(task.gets.is_empty());
    let mut bufs = LocalBuffers::allocate(&task.buffers, u64::MAX).unwrap();
    for (i, b) in buffers.iter().enumerate() {
        bufs.bytes_mut(i)
            .copy_from_slice(&pattern(b.1 as usize, 100 + i as u8));
    }
    assert_eq!(run_puts(&task, &bufs, peers).unwrap(), model.len() as u64);
    let mut expected_g: std::collections::HashMap<String, Vec<u8>> = contents
        .iter()
        .map(|(h, d)| (h.clone(), vec![0u8; d.len()]))
        .collect();
    for ((h, go), (b, lo)) in &model {
        let i = bindex(b);
        expected_g.get_mut(h).unwrap()[*go as usize] = bufs.bytes(i)[*lo as usize];
    }
    for (h, e) in &expected_g {
        let mut got = vec![0u8; e.len()];
        read_global(&table, peers, h, 0, &mut got).unwrap();
        assert_eq!(&got, e, "allocation {h}");
    }
}

// ---- range shapes

#[test]
fn shape_one_range() {
    let w = World::new(1, 1 << 16, "h");
    let mut p = w.peers("h");
    check_shape(
        &w,
        &mut p,
        &[100],
        &[("b", 100, 1)],
        &[("a0", 0, 100)],
        &[("b", 0, 100)],
    );
    // and the plan is a single copy
    let mut t = w.table();
    let h = t.alloc(100).unwrap();
    let c = call(
        &[("b", 100, 1)],
        vec![(
            TransferKind::Get,
            false,
            globals(&[(&h, 0, 100)]),
            locals(&[("b", 0, 100)]),
        )],
    );
    let task = plan(&c.bundle, FunctionId(0), &c.mem, &t).unwrap();
    assert_eq!(
        task.gets,
        vec![Copy {
            buffer: 0,
            buffer_offset: 0,
            segment: 1,
            segment_offset: 0,
            len: 100
        }]
    );
    assert_eq!(task.segments, vec![w.infos[0].clone()]);
}

#[test]
fn shape_many_ranges_different_cut_points() {
    let w = World::new(1, 1 << 16, "h");
    let mut p = w.peers("h");
    // global cuts at 10, 40, 45; local cuts at 7, 27, 45 over two buffers
    check_shape(
        &w,
        &mut p,
        &[200, 50],
        &[("x", 64, 8), ("y", 30, 1)],
        &[("a0", 5, 10), ("a1", 0, 30), ("a0", 150, 5)],
        &[("x", 1, 7), ("y", 10, 20), ("x", 40, 18)],
    );
}

#[test]
fn shape_many_small_ranges_coalesce() {
    let w = World::new(1, 1 << 16, "h");
    let mut t = w.table();
    let h = t.alloc(1000).unwrap();
    // 100 contiguous global ranges of 10 bytes into one local range: one copy
    let g: Vec<(&str, u64, u64)> = (0..100).map(|i| (h.as_str(), i * 10, 10)).collect();
    let c = call(
        &[("b", 1000, 1)],
        vec![(
            TransferKind::Get,
            false,
            globals(&g),
            locals(&[("b", 0, 1000)]),
        )],
    );
    let task = plan(&c.bundle, FunctionId(0), &c.mem, &t).unwrap();
    assert_eq!(task.gets.len(), 1);
    assert_eq!(task.gets[0].len, 1000);
    // and a strided shape end to end
    let mut p = w.peers("h");
    let g: Vec<(&str, u64, u64)> = (0..50).map(|i| ("a0", i * 20 + 3, 7)).collect();
    check_shape(&w, &mut p, &[1000], &[("b", 350, 1)], &g, &[("b", 0, 350)]);
}

#[test]
fn shape_unaligned_offsets() {
    let w = World::new(1, 1 << 16, "h");
    let mut p = w.peers("h");
    check_shape(
        &w,
        &mut p,
        &[10000],
        &[("b", 9100, 64)],
        &[("a0", 3, 4090), ("a0", 4093, 5000)],
        &[("b", 4093, 4000), ("b", 3, 4090), ("b", 8093, 1000)],
    );
}

#[test]
fn shape_empty_ranges_allowed_and_refused() {
    let w = World::new(1, 1 << 16, "h");
    let mut p = w.peers("h");
    check_shape(
        &w,
        &mut p,
        &[64],
        &[("b", 64, 1)],
        &[("a0", 0, 0), ("a0", 0, 32), ("a0", 64, 0), ("a0", 32, 32)],
        &[("b", 10, 0), ("b", 0, 64), ("b", 64, 0)],
    );
    // no ranges at all
    check_shape(&w, &mut p, &[64], &[("b", 64, 1)], &[], &[]);
    let mut t = w.table();
    let h = t.alloc(64).unwrap();
    let c = call(
        &[("b", 64, 1)],
        vec![
            (
                TransferKind::Get,
                false,
                globals(&[(&h, 0, 64)]),
                locals(&[("b", 0, 64)]),
            ),
            (
                TransferKind::Put,
                false,
                globals(&[(&h, 0, 64), (&h, 0, 0)]),
                locals(&[("b", 0, 64)]),
            ),
        ],
    );
    let e = plan_err(&c, &t);
    assert!(
        e.starts_with("t.xpnet:3:3: memory-put: global range 2 is empty"),
        "{e}"
    );
    let c = call(
        &[("b", 64, 1)],
        vec![(
            TransferKind::GetPut,
            false,
            globals(&[(&h, 0, 64)]),
            locals(&[("b", 0, 0), ("b", 0, 64)]),
        )],
    );
    let e = plan_err(&c, &t);
    assert!(
        e.starts_with("t.xpnet:2:3: memory-getput: local range 1 is empty"),
        "{e}"
    );
}

#[test]
fn shape_across_segments() {
    // 3 segments; an allocation of 300 bytes has parts of 100 in each: ranges crossing the
    // part boundaries at 100 and 200
    let w = World::new(3, 1 << 12, "h");
    let mut t = w.table();
    let h = t.alloc(300).unwrap();
    assert_eq!(
        t.locate(&h, 90, 120).unwrap(),
        vec![
            Piece {
                segment: 1,
                offset: 90,
                len: 10
            },
            Piece {
                segment: 2,
                offset: 0,
                len: 100
            },
            Piece {
                segment: 3,
                offset: 0,
                len: 10
            },
        ]
    );
    let mut p = w.peers("h");
    check_shape(
        &w,
        &mut p,
        &[300],
        &[("b", 300, 8), ("c", 17, 1)],
        &[
            ("a0", 95, 110),
            ("a0", 0, 95),
            ("a0", 205, 95),
            ("a0", 199, 17),
        ],
        &[("b", 0, 300), ("c", 0, 17)],
    );
}

#[test]
fn shape_across_hosts_via_tcp() {
    // the same shapes when every segment is on another host: through the memory servers
    let w = World::new(3, 1 << 12, "other");
    let mut p = w.peers("me");
    check_shape(
        &w,
        &mut p,
        &[300, 50],
        &[("b", 400, 64)],
        &[("a0", 3, 290), ("a1", 1, 49), ("a0", 293, 7)],
        &[("b", 4, 100), ("b", 200, 200), ("b", 104, 46)],
    );
}

#[test]
fn getput_runs_both_halves_in_order() {
    let w = World::new(2, 1 << 12, "h");
    let mut p = w.peers("h");
    let mut t = w.table();
    let a = t.alloc(100).unwrap();
    let b = t.alloc(100).unwrap();
    let c = call(
        &[("x", 100, 1), ("y", 50, 1)],
        vec![
            (
                TransferKind::Put,
                false,
                globals(&[(&b, 0, 50)]),
                locals(&[("y", 0, 50)]),
            ),
            (
                TransferKind::GetPut,
                false,
                globals(&[(&a, 0, 100)]),
                locals(&[("x", 0, 100)]),
            ),
            (
                TransferKind::Get,
                false,
                globals(&[(&b, 50, 50)]),
                locals(&[("y", 0, 50)]),
            ),
        ],
    );
    let task = plan(&c.bundle, FunctionId(0), &c.mem, &t).unwrap();
    // gets: the getput (x), then the get (y); puts: the put (y), then the getput (x)
    assert_eq!(
        task.gets.iter().map(|c| c.buffer).collect::<Vec<_>>(),
        vec![0, 0, 1]
    );
    assert_eq!(
        task.puts.iter().map(|c| c.buffer).collect::<Vec<_>>(),
        vec![1, 0, 0]
    );
    assert_eq!(task.buffer_bytes(), 150);
    write_global(&t, &mut p, &a, 0, &pattern(100, 9)).unwrap();
    let mut bufs = LocalBuffers::allocate(&task.buffers, 150).unwrap();
    assert_eq!(run_gets(&task, &mut bufs, &mut p).unwrap(), 150);
    assert_eq!(bufs.bytes(0), &pattern(100, 9)[..]);
    bufs.bytes_mut(0).reverse();
    assert_eq!(run_puts(&task, &bufs, &mut p).unwrap(), 150);
    let mut back = vec![0u8; 100];
    read_global(&t, &mut p, &a, 0, &mut back).unwrap();
    let mut rev = pattern(100, 9);
    rev.reverse();
    assert_eq!(back, rev);
    t.count_transfer(&task);
    let s = t.stats();
    assert_eq!((s.bytes_got, s.bytes_put), (150, 150));
}

// ---- plan errors

#[test]
fn plan_total_size_mismatch_names_the_transfer() {
    let w = World::new(1, 1 << 12, "h");
    let mut t = w.table();
    let h = t.alloc(100).unwrap();
    let c = call(
        &[("b", 100, 1)],
        vec![
            (
                TransferKind::Get,
                false,
                globals(&[(&h, 0, 10)]),
                locals(&[("b", 0, 10)]),
            ),
            (
                TransferKind::Get,
                false,
                globals(&[(&h, 0, 60), (&h, 60, 40)]),
                locals(&[("b", 0, 99)]),
            ),
        ],
    );
    assert_eq!(
        plan_err(&c, &t),
        "t.xpnet:3:3: memory-get: the global ranges total 100 bytes but the local ranges 99 bytes; they must be equal."
    );
}

#[test]
fn plan_local_range_outside_buffer() {
    let w = World::new(1, 1 << 12, "h");
    let mut t = w.table();
    let h = t.alloc(100).unwrap();
    let c = call(
        &[("b", 100, 1)],
        vec![(
            TransferKind::Get,
            false,
            globals(&[(&h, 0, 10)]),
            locals(&[("b", 95, 10)]),
        )],
    );
    assert_eq!(
        plan_err(&c, &t),
        "t.xpnet:2:3: memory-get: local range 1 (offset 95, size 10) lies outside memory buffer `b` of 100 bytes."
    );
    // offset + size overflowing
    let c = call(
        &[("b", 100, 1)],
        vec![(
            TransferKind::Get,
            false,
            globals(&[(&h, 0, 10)]),
            locals(&[("b", u64::MAX, 10)]),
        )],
    );
    assert!(plan_err(&c, &t).contains("lies outside memory buffer `b`"));
}

#[test]
fn plan_global_range_outside_allocation() {
    let w = World::new(2, 1 << 12, "h");
    let mut t = w.table();
    let h = t.alloc(100).unwrap();
    let c = call(
        &[("b", 100, 1)],
        vec![(
            TransferKind::Put,
            false,
            globals(&[(&h, 0, 10), (&h, 91, 10)]),
            locals(&[("b", 0, 20)]),
        )],
    );
    assert_eq!(
        plan_err(&c, &t),
        format!(
            "t.xpnet:2:3: memory-put: global range 2: The range of 10 bytes at offset 91 is outside the global allocation {h} of 100 bytes."
        )
    );
}

#[test]
fn plan_unknown_handle_and_buffer() {
    let w = World::new(1, 1 << 12, "h");
    let mut t = w.table();
    let h = t.alloc(100).unwrap();
    let c = call(
        &[("b", 100, 1)],
        vec![(
            TransferKind::Get,
            false,
            globals(&[("0xdeadbeef", 0, 10)]),
            locals(&[("b", 0, 10)]),
        )],
    );
    assert_eq!(
        plan_err(&c, &t),
        "t.xpnet:2:3: memory-get: global range 1 names the handle `0xdeadbeef`, which is not a global allocation."
    );
    let c = call(
        &[("b", 100, 1)],
        vec![(
            TransferKind::Get,
            false,
            globals(&[(&h, 0, 10)]),
            locals(&[("nope", 0, 10)]),
        )],
    );
    assert_eq!(
        plan_err(&c, &t),
        "t.xpnet:2:3: memory-get: local range 1 names the memory buffer `nope`, which does not exist (the buffers are: b)."
    );
    // a freed handle is unknown too
    t.free(&h).unwrap();
    let c = call(
        &[("b", 100, 1)],
        vec![(
            TransferKind::Get,
            false,
            globals(&[(&h, 0, 10)]),
            locals(&[("b", 0, 10)]),
        )],
    );
    assert!(plan_err(&c, &t).contains("which is not a global allocation"));
}

#[test]
fn plan_wrong_shapes() {
    let t = GlobalTable::new();
    let cases: Vec<(Value, Value, &str)> = vec![
        (
            Value::ULong(3),
            locals(&[]),
            "the global ranges must be a list",
        ),
        (
            globals(&[]),
            Value::string("x"),
            "the local ranges must be a list",
        ),
        (
            Value::List(vec![Value::Int(1)]),
            locals(&[]),
            "global range 1 (1) is not a struct",
        ),
        (
            Value::List(vec![Value::Struct(vec![(
                Arc::from("offset"),
                Value::ULong(0),
            )])]),
            locals(&[]),
            "has no field `handle`",
        ),
        (
            globals(&[]),
            Value::List(vec![Value::Struct(vec![
                (Arc::from("buffer"), Value::string("b")),
                (Arc::from("offset"), Value::Double(1.0)),
                (Arc::from("size"), Value::ULong(1)),
            ])]),
            "has a field `offset` that is not an unsigned long",
        ),
        (
            globals(&[]),
            Value::List(vec![Value::Struct(vec![
                (Arc::from("buffer"), Value::string("b")),
                (Arc::from("offset"), Value::Long(-1)),
                (Arc::from("size"), Value::ULong(1)),
            ])]),
            "has a field `offset` that is not an unsigned long",
        ),
    ];
    for (g, l, want) in cases {
        let c = call(&[("b", 8, 1)], vec![(TransferKind::Get, true, g, l)]);
        let e = plan_err(&c, &t);
        assert!(e.starts_with("t.xpnet:2:3: memory-get: "), "{e}");
        assert!(e.contains(want), "{e} lacks {want}");
    }
    // fields in any order, other integer types
    let c = call(
        &[("b", 8, 1)],
        vec![(
            TransferKind::Get,
            true,
            Value::List(vec![]),
            Value::List(vec![Value::Struct(vec![
                (Arc::from("size"), Value::UInt(0)),
                (Arc::from("offset"), Value::Int(8)),
                (Arc::from("buffer"), Value::string("b")),
            ])]),
        )],
    );
    let task = plan(&c.bundle, FunctionId(0), &c.mem, &t).unwrap();
    assert!(task.gets.is_empty() && task.segments.is_empty());
}

#[test]
fn plan_alignment_must_be_a_power_of_two() {
    let t = GlobalTable::new();
    for a in [0u64, 3, 12, 4097] {
        let c = call(&[("b", 8, a)], vec![]);
        assert_eq!(
            plan_err(&c, &t),
            format!("t.xpnet:1:1: the alignment {a} of memory buffer `b` is not a power of two.")
        );
        let e = LocalBuffers::allocate(&[spec("b", 8, a)], 100).unwrap_err();
        assert_eq!(
            e.message,
            format!("The alignment {a} of memory buffer `b` is not a power of two.")
        );
    }
    let c = call(&[("b", 8, 4096)], vec![]);
    let task = plan(&c.bundle, FunctionId(0), &c.mem, &t).unwrap();
    assert_eq!(task.buffers, vec![spec("b", 8, 4096)]);
}

#[test]
fn plan_mismatched_call_and_function() {
    let t = GlobalTable::new();
    let mut c = call(&[("b", 8, 1)], vec![]);
    c.mem.buffers.clear();
    assert!(
        plan_err(&c, &t)
            .contains("has 1 memory buffer(s) and 0 transfer(s), but the call evaluated 0 and 0")
    );
    let e = plan(&c.bundle, FunctionId(7), &c.mem, &t).unwrap_err();
    assert_eq!(e.message, "The bundle has no function 7 (it has 1).");
}
