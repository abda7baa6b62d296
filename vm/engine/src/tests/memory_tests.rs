//! Memory buffers and transfers of module functions: evaluated when the transition fires.

use expect_test::expect;
use pnet_bundle::{CodeId, MemoryBuffer, MemoryTransfer, TransferKind};
use pnet_stdlib::{Type, Value};

use super::{asm, build, show};
use crate::{Engine, RunConfig, Step};

const NET: &str = "
net main
  place p ulong = 16UL
  place g long = 7L
  trans work
    in n ulong <- p
    in h long <- g
    module mymod compute
end
";

/// Adds a code over the transition function's ports to the bundle.
fn add_code(bundle: &mut pnet_bundle::Bundle, src: &str) -> CodeId {
    let f = &bundle.functions[1];
    let ports: Vec<(String, Type)> = f
        .ports
        .iter()
        .map(|p| (p.name.clone(), p.ty.clone()))
        .collect();
    let offset = NET.find("module").unwrap();
    bundle.codes.push(asm("memory code", src, &ports, offset));
    CodeId((bundle.codes.len() - 1) as u32)
}

fn first_task(bundle: &pnet_bundle::Bundle) -> Result<crate::Task, crate::RunError> {
    let mut engine = Engine::new(bundle, &RunConfig::default())?;
    loop {
        match engine.step()? {
            Step::Task(t) => return Ok(t),
            Step::Fired => {}
            other => panic!("expected a task, got {other:?}"),
        }
    }
}

#[test]
fn buffers_and_transfers_are_evaluated_over_the_input_frame() {
    let mut bundle = build(NET);
    let size = add_code(&mut bundle, "load n; const 2UL; mul");
    let align = add_code(&mut bundle, "const 8UL");
    let small = add_code(&mut bundle, "const 4UL");
    let global = add_code(&mut bundle, "load h");
    let local = add_code(&mut bundle, "load n");
    let span = bundle.functions[1].span;
    let f = &mut bundle.functions[1];
    f.memory_buffers.push(MemoryBuffer {
        name: "buf".into(),
        read_only: false,
        size,
        alignment: Some(align),
        span,
    });
    f.memory_buffers.push(MemoryBuffer {
        name: "other".into(),
        read_only: true,
        size: small,
        alignment: None,
        span,
    });
    for kind in [TransferKind::Get, TransferKind::Put] {
        f.memory_transfers.push(MemoryTransfer {
            kind,
            global,
            local,
            allow_empty_ranges: false,
            not_modified_in_module_call: false,
            span,
        });
    }
    let t = first_task(&bundle).unwrap();
    let mem = t.memory.expect("memory of a function with buffers");
    assert_eq!(mem.buffers, vec![(32, 8), (4, 1)]);
    let shown: Vec<String> = mem
        .transfers
        .iter()
        .map(|(g, l)| format!("{} {}", show(g), show(l)))
        .collect();
    expect![[r#"["7L 16UL", "7L 16UL"]"#]].assert_eq(&format!("{shown:?}"));
    // The inputs are still the task's.
    assert_eq!(t.inputs.len(), 2);
    assert!(t.inputs.iter().any(|(_, v)| *v == Value::ULong(16)));
}

#[test]
fn functions_without_memory_have_none() {
    let bundle = build(NET);
    let t = first_task(&bundle).unwrap();
    assert!(t.memory.is_none());
}

#[test]
fn a_transfer_without_buffers_is_evaluated() {
    let mut bundle = build(NET);
    let global = add_code(&mut bundle, "load n");
    let span = bundle.functions[1].span;
    bundle.functions[1].memory_transfers.push(MemoryTransfer {
        kind: TransferKind::GetPut,
        global,
        local: global,
        allow_empty_ranges: true,
        not_modified_in_module_call: true,
        span,
    });
    let mem = first_task(&bundle).unwrap().memory.expect("memory");
    assert!(mem.buffers.is_empty());
    assert_eq!(mem.transfers, vec![(Value::ULong(16), Value::ULong(16))]);
}

#[test]
fn evaluation_errors_carry_the_codes_span() {
    let mut bundle = build(NET);
    let bad = add_code(&mut bundle, "load n; const 0UL; idiv");
    let span = bundle.functions[1].span;
    bundle.functions[1].memory_buffers.push(MemoryBuffer {
        name: "buf".into(),
        read_only: false,
        size: bad,
        alignment: None,
        span,
    });
    let e = first_task(&bundle).unwrap_err();
    assert!(e.span.is_some(), "{e:?}");
    expect!["in transition `work` (test.xpnet:5:3): division by zero at test.xpnet:8:24"]
        .assert_eq(&e.to_string());
}

#[test]
fn a_size_that_is_not_an_unsigned_long_is_an_error() {
    let mut bundle = build(NET);
    let bad = add_code(&mut bundle, "load h; neg");
    let span = bundle.functions[1].span;
    bundle.functions[1].memory_buffers.push(MemoryBuffer {
        name: "buf".into(),
        read_only: false,
        size: bad,
        alignment: None,
        span,
    });
    let e = first_task(&bundle).unwrap_err();
    expect!["in transition `work` (test.xpnet:5:3): the size of memory buffer `buf` is -7L, not an unsigned long at test.xpnet:8:5"]
        .assert_eq(&e.to_string());
}
