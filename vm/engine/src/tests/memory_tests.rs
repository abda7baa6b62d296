//! Memory buffers and transfers of module functions: evaluated when the transition fires.

use expect_test::expect;
use pnet_stdlib::Value;

use super::{parse_net, show};
use crate::{Engine, RunConfig, Step};

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
    let bundle = parse_net(
        r#"
bundle root f0 main

function f0 main
  net
    place p0 p : unsigned long
      token 16UL
    place p1 g : long
      token 7L
    transition t0 work priority 0 -> f1 work
      in n <- p0 p
      in h <- p1 g

function f1 work
  in n : unsigned long
  in h : long
  memory-buffer buf size c0 alignment c1
  memory-buffer other size c2 read_only
  memory-get global c3 local c4
  memory-put global c3 local c4
  module mymod "compute ()"

code c0 "memory code" : any
  slot 0 port n : unsigned long
  slot 1 port h : long
  const 0 2UL
  reads n
  0  load        n
  1  const       2UL
  2  mul

code c1 "memory code" : any
  slot 0 port n : unsigned long
  slot 1 port h : long
  const 0 8UL
  0  const       8UL

code c2 "memory code" : any
  slot 0 port n : unsigned long
  slot 1 port h : long
  const 0 4UL
  0  const       4UL

code c3 "memory code" : any
  slot 0 port n : unsigned long
  slot 1 port h : long
  reads h
  0  load        h

code c4 "memory code" : any
  slot 0 port n : unsigned long
  slot 1 port h : long
  reads n
  0  load        n
"#,
    );
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
    let bundle = parse_net(
        r#"
bundle root f0 main

function f0 main
  net
    place p0 p : unsigned long
      token 16UL
    place p1 g : long
      token 7L
    transition t0 work priority 0 -> f1 work
      in n <- p0 p
      in h <- p1 g

function f1 work
  in n : unsigned long
  in h : long
  module mymod "compute ()"
"#,
    );
    let t = first_task(&bundle).unwrap();
    assert!(t.memory.is_none());
}

#[test]
fn a_transfer_without_buffers_is_evaluated() {
    let bundle = parse_net(
        r#"
bundle root f0 main

function f0 main
  net
    place p0 p : unsigned long
      token 16UL
    place p1 g : long
      token 7L
    transition t0 work priority 0 -> f1 work
      in n <- p0 p
      in h <- p1 g

function f1 work
  in n : unsigned long
  in h : long
  memory-getput global c0 local c0 allow_empty_ranges not_modified_in_module_call
  module mymod "compute ()"

code c0 "memory code" : any
  slot 0 port n : unsigned long
  slot 1 port h : long
  reads n
  0  load        n
"#,
    );
    let mem = first_task(&bundle).unwrap().memory.expect("memory");
    assert!(mem.buffers.is_empty());
    assert_eq!(mem.transfers, vec![(Value::ULong(16), Value::ULong(16))]);
}

#[test]
fn evaluation_errors_carry_the_codes_span() {
    let bundle = parse_net(
        r#"
bundle root f0 main
file 0 "test.xpnet" lines 0 1 10 33 53 66 86 105 130 134

function f0 main  @ test.xpnet:2:1-2
  net
    place p0 p : unsigned long  @ test.xpnet:3:3-4
      token 16UL
    place p1 g : long  @ test.xpnet:4:3-4
      token 7L
    transition t0 work priority 0 -> f1 work  @ test.xpnet:5:3-4
      in n <- p0 p  @ 6:5-6
      in h <- p1 g  @ 7:5-6

function f1 work  @ test.xpnet:5:3-4
  in n : unsigned long  @ 6:5-6
  in h : long  @ 7:5-6
  memory-buffer buf size c0  @ 5:3-4
  module mymod "compute ()"  @ 8:5-6

code c0 "memory code" : any  @ test.xpnet:8:5-6
  slot 0 port n : unsigned long
  slot 1 port h : long
  const 0 0UL
  reads n
  0  load        n  @ 8:5-6
  1  const       0UL  @ 8:13-14
  2  int_div  @ 8:24-25
"#,
    );
    let e = first_task(&bundle).unwrap_err();
    assert!(e.span.is_some(), "{e:?}");
    expect!["in transition `work` (test.xpnet:5:3): division by zero at test.xpnet:8:24"]
        .assert_eq(&e.to_string());
}

#[test]
fn a_size_that_is_not_an_unsigned_long_is_an_error() {
    let bundle = parse_net(
        r#"
bundle root f0 main
file 0 "test.xpnet" lines 0 1 10 33 53 66 86 105 130 134

function f0 main  @ test.xpnet:2:1-2
  net
    place p0 p : unsigned long  @ test.xpnet:3:3-4
      token 16UL
    place p1 g : long  @ test.xpnet:4:3-4
      token 7L
    transition t0 work priority 0 -> f1 work  @ test.xpnet:5:3-4
      in n <- p0 p  @ 6:5-6
      in h <- p1 g  @ 7:5-6

function f1 work  @ test.xpnet:5:3-4
  in n : unsigned long  @ 6:5-6
  in h : long  @ 7:5-6
  memory-buffer buf size c0  @ 5:3-4
  module mymod "compute ()"  @ 8:5-6

code c0 "memory code" : any  @ test.xpnet:8:5-6
  slot 0 port n : unsigned long
  slot 1 port h : long
  reads h
  0  load        h  @ 8:5-6
  1  neg  @ 8:13-14
"#,
    );
    let e = first_task(&bundle).unwrap_err();
    expect!["in transition `work` (test.xpnet:5:3): the size of memory buffer `buf` is -7L, not an unsigned long at test.xpnet:8:5"]
        .assert_eq(&e.to_string());
}
