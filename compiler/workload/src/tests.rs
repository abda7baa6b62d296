//! Tests of the whole crate: parsing every construct, each diagnostic with its span, the
//! lowering (snapshots), and a property test that no text panics the parser.

use expect_test::{Expect, expect};
use proptest::prelude::*;

use crate::ast::*;
use crate::{lower, parse};

/// The diagnostics of `text`, one per line: `severity code@start..end 'spanned text': message`.
fn diags(text: &str) -> String {
    let (_, ds) = parse(text);
    ds.iter()
        .map(|d| {
            let at = crate::diag::primary_range(d);
            let severity = match d.severity {
                crate::Severity::Error => "error",
                crate::Severity::Warning => "warning",
            };
            format!(
                "{severity} {}@{}..{}: {} '{}': {}\n",
                d.code,
                at.start,
                at.end,
                d.message,
                text.get(at.clone()).unwrap_or("?"),
                d.labels
                    .iter()
                    .filter(|l| !l.primary)
                    .map(|l| format!(
                        "[{} '{}']",
                        l.message,
                        text.get(l.span.start as usize..l.span.end as usize)
                            .unwrap_or("?")
                    ))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        })
        .collect()
}

fn check_diags(text: &str, expect: Expect) {
    expect.assert_eq(&diags(text));
}

const FAN: &str = include_str!("../../../examples/workload/fan.workload");

#[test]
fn every_construct_parses() {
    let text = "# comment\n\
        task step-1 [4] (CONCURRENT, COMMUNICATION) {\n\
        in a: URI = 'file:///x';\n\
        in b: INTEGER;\n\
        out c: STRING; // another comment\n\
        EXECUTABLE = \"/bin/echo\";\n\
        ARGUMENTS = \"say \\\"hi\\\"\\n\";\n\
        COST = '3';\n\
        }\n\
        task sink { in c: STRING; EXECUTABLE = 'cat'; }\n\
        relation step-1.c -> sink.c (INPUT-OUTPUT, SEQUENTIAL_END) { weight = '2'; };\n\
        relation step-1 -> sink (NONE, SEQUENTIAL_START);\n";
    let (w, ds) = parse(text);
    assert!(ds.is_empty(), "{ds:?}");
    assert_eq!(w.tasks.len(), 2);
    let t = &w.tasks[0];
    assert_eq!(t.name.text, "step-1");
    assert_eq!(t.name.mangled(), "step_1");
    assert_eq!(&text[t.name.span.clone()], "step-1");
    assert_eq!((t.cardinality, t.instances()), (4, 4));
    assert_eq!(t.kinds.time, TimeKind::Concurrent);
    assert_eq!(t.kinds.space, SpaceKind::Communication);
    assert_eq!(t.inputs.len(), 2);
    assert_eq!(t.inputs[0].ty, Some(PortType::Uri));
    assert_eq!(
        t.inputs[0].value.as_ref().map(|v| v.value.as_str()),
        Some("file:///x")
    );
    assert_eq!(&text[t.inputs[0].span.clone()], "in a: URI = 'file:///x';");
    assert_eq!(t.inputs[1].ty, Some(PortType::Integer));
    assert_eq!(t.outputs[0].ty, Some(PortType::String));
    assert_eq!(t.property("ARGUMENTS").unwrap().value.value, "say \"hi\"\n");
    assert_eq!(t.property("COST").unwrap().value.value, "3");
    assert_eq!(w.tasks[1].instances(), 1);
    assert_eq!(w.relations.len(), 2);
    let r = &w.relations[0];
    assert_eq!(r.tail.task.text, "step-1");
    assert_eq!(r.tail.port.as_ref().unwrap().text, "c");
    assert_eq!(r.head.port.as_ref().unwrap().text, "c");
    assert_eq!(
        (r.kinds.time, r.kinds.space),
        (TimeKind::SequentialEnd, SpaceKind::InputOutput)
    );
    assert_eq!(r.properties[0].key.text, "weight");
    assert!(text[r.span.clone()].starts_with("relation step-1.c"));
    assert!(text[r.span.clone()].ends_with("'2'; };"));
    let r = &w.relations[1];
    assert_eq!(
        (r.kinds.time, r.kinds.space),
        (TimeKind::SequentialStart, SpaceKind::None)
    );
    assert!(r.tail.port.is_none());
}

#[test]
fn examples_have_no_diagnostics() {
    for text in [
        FAN,
        include_str!("../../../examples/workload/pipeline.workload"),
        include_str!("../../../examples/workload/ensemble.workload"),
    ] {
        let (w, ds) = parse(text);
        assert!(ds.is_empty(), "{ds:?}");
        assert!(!w.tasks.is_empty());
    }
}

#[test]
fn syntax_errors_recover() {
    check_diags(
        "task a { in x INTEGER; EXECUTABLE = 'e'; }\ntask b { EXECUTABLE = 'e' }\n@ relation a -> b (SEQUENTIAL_END);\ntask c [-2] { out y: FLOAT = 'v'; EXECUTABLE = \"\\q\"; }\ntask d (LATER, NONE, CONCURRENT, SEQUENTIAL_END) { EXECUTABLE = 'x",
        expect![[r#"
            error workload-syntax@14..21: expected `:` and the port's type, found `INTEGER` 'INTEGER': 
            error workload-missing-executable@48..49: task `b` has no EXECUTABLE 'b': 
            error workload-syntax@69..70: expected `;`, found `}` '}': 
            error workload-unknown-character@71..72: unexpected character `@`; expected `task` or `relation` '@': 
            error workload-invalid-cardinality@115..117: the cardinality `-2` is not a number of instances '-2': 
            error workload-unknown-type@128..133: unknown port type `FLOAT` 'FLOAT': 
            error workload-output-value@134..139: an output port has no value '= 'v'': 
            error workload-invalid-escape@155..157: unknown escape `\q` '\q': 
            error workload-missing-executable@167..168: task `d` has no EXECUTABLE 'd': 
            error workload-unknown-kind@170..175: unknown kind `LATER` 'LATER': 
            error workload-duplicate-kind@195..209: more than one time kind 'SEQUENTIAL_END': [the first time kind 'CONCURRENT']
            error workload-unterminated-string@226..228: this string has no closing quote ''x': 
            error workload-syntax@228..228: expected `;`, found the end of the file '': 
        "#]],
    );
}

#[test]
fn semantic_errors_point_at_their_cause() {
    check_diags(
        "task a [2] { out x: INTEGER; out x: STRING; EXECUTABLE = 'e'; EXECUTABLE = 'f'; }\n\
         task a-b { in i: STRING; in n: INTEGER = 'ten'; }\n\
         task a_b { EXECUTABLE = ' '; }\n\
         task c [3] { in i: STRING; in j: INTEGER; out o: INTEGER; EXECUTABLE = 'e'; }\n\
         relation a.x -> c.i (INPUT-OUTPUT);\n\
         relation a.x -> c.j (INPUT-OUTPUT);\n\
         relation a.z -> c.j (INPUT-OUTPUT);\n\
         relation a -> c (INPUT-OUTPUT);\n\
         relation a -> nope (SEQUENTIAL_END);\n\
         relation c.o -> a-b (NONE);\n",
        expect![[r#"
            error workload-duplicate-port@33..34: port `x` is defined twice 'x': [first defined here 'x']
            error workload-duplicate-property@62..72: property `EXECUTABLE` is defined twice 'EXECUTABLE': [first defined here 'EXECUTABLE']
            error workload-missing-executable@87..90: task `a-b` has no EXECUTABLE 'a-b': 
            error workload-invalid-value@123..128: `ten` is not an INTEGER (a 64-bit signed number) ''ten'': 
            error workload-duplicate-task@137..140: task `a_b` has the same name in the net as `a-b` 'a_b': [first defined here 'a-b']
            error workload-missing-executable@156..159: EXECUTABLE is empty '' '': 
            error workload-cardinality-mismatch@241..276: 2 instances of `a` cannot feed 3 instances of `c` 'relation a.x -> c.i (INPUT-OUTPUT);': 
            error workload-type-mismatch@250..260: `a.x` is INTEGER but `c.i` is STRING 'a.x -> c.i': [INTEGER here 'out x: INTEGER;'] [STRING here 'in i: STRING;']
            error workload-cardinality-mismatch@277..312: 2 instances of `a` cannot feed 3 instances of `c` 'relation a.x -> c.j (INPUT-OUTPUT);': 
            error workload-unknown-port@324..325: task `a` has no output port `z` 'z': 
            error workload-missing-port@358..359: which output port of `a` does this INPUT-OUTPUT relation use? 'a': 
            error workload-missing-port@363..364: which input port of `c` does this INPUT-OUTPUT relation use? 'c': 
            error workload-unknown-task@395..399: there is no task `nope` 'nope': 
            warning workload-no-effect@418..445: this relation has neither a time nor a space kind: it has no effect 'relation c.o -> a-b (NONE);': 
            warning workload-port-ignored@429..430: ports only matter for INPUT-OUTPUT relations 'o': 
        "#]],
    );
}

#[test]
fn relation_checks() {
    check_diags(
        "task a { out x: INTEGER; EXECUTABLE = 'e'; }\n\
         task b { in y: INTEGER = '1'; out z: INTEGER; EXECUTABLE = 'e'; }\n\
         task c (INPUT-OUTPUT) { in y: INTEGER; EXECUTABLE = 'e'; }\n\
         relation a.x -> b.y (INPUT-OUTPUT);\n\
         relation a -> b.y (INPUT-OUTPUT);\n\
         relation b -> c (INPUT-OUTPUT);\n\
         relation c -> a (SEQUENTIAL_START);\n",
        expect![[r#"
            warning workload-value-ignored@70..73: the value of `b.y` is not used: a relation feeds the port ''1'': [the relation 'relation a.x -> b.y (INPUT-OUTPUT);']
            warning workload-unsupported-kind@119..131: INPUT-OUTPUT between the instances of one task has no effect 'INPUT-OUTPUT': 
            error workload-cycle@170..205: these relations make tasks wait for each other forever (a -> b -> c -> a) 'relation a.x -> b.y (INPUT-OUTPUT);': [also on the cycle 'relation b -> c (INPUT-OUTPUT);'] [also on the cycle 'relation c -> a (SEQUENTIAL_START);']
            error workload-port-fed-twice@220..223: input port `b.y` is already fed by another relation 'b.y': [the first relation 'relation a.x -> b.y (INPUT-OUTPUT);']
        "#]],
    );
    // CONCURRENT together with INPUT-OUTPUT can never run.
    check_diags(
        "task a { out x: STRING; EXECUTABLE = 'e'; }\ntask b { in y: STRING; EXECUTABLE = 'e'; }\n\
         relation a.x -> b.y (INPUT-OUTPUT, CONCURRENT);\n",
        expect![[r#"
            error workload-cycle@87..134: these relations make tasks wait for each other forever (a -> b -> a) 'relation a.x -> b.y (INPUT-OUTPUT, CONCURRENT);': 
        "#]],
    );
    // Net ports are TASK_PORT: a_b + c and a + b_c clash.
    check_diags(
        "task a_b { in c: STRING; EXECUTABLE = 'e'; }\ntask a { out b_c: STRING; EXECUTABLE = 'e'; }\n",
        expect![[r#"
            error workload-name-clash@58..61: two ports of the net would be named `a_b_c` 'b_c': [this port has the same name in the net 'c']
        "#]],
    );
}

fn check_lower(text: &str, expect: Expect) {
    let (w, ds) = parse(text);
    assert!(ds.is_empty(), "{ds:?}");
    expect.assert_eq(&lower(&w));
}

#[test]
fn lowers_a_single_task() {
    check_lower(
        "task hello { in who: STRING; out greeting: STRING; EXECUTABLE = 'echo'; ARGUMENTS = 'hello ${who}'; }",
        expect![[r#"
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- Generated from a workload description by pnet-workload (grammar/workload.md).
                 Each task instance is a start step (an expression) and then a call of the command
                 module workload_exec, which runs the task's EXECUTABLE with its ARGUMENTS. -->
            <defun name="workload">
              <in name="hello_who" type="string" place="t1_hello_in_who"/>
              <out name="hello_greeting" type="string" place="t1_hello_out_greeting"/>
              <struct name="workload_task">
                <field name="task" type="string"/>
                <field name="instances" type="long"/>
                <field name="executable" type="string"/>
                <field name="arguments" type="string"/>
                <field name="outputs" type="string"/>
                <field name="done" type="bool"/>
              </struct>
              <struct name="t1_hello_args">
                <field name="instance" type="long"/>
                <field name="in_who" type="string"/>
              </struct>
              <net>
                <!-- task hello: 1 instance -->
                <place name="t1_hello_in_who" type="string"/>
                <place name="t1_hello_out_greeting" type="string"/>
                <place name="t1_hello_instance" type="long">
                  <token><value>0L</value></token>
                </place>
                <place name="t1_hello_spec" type="workload_task">
                  <token><value>Struct [task := &quot;hello&quot;, instances := 1L, executable := &quot;echo&quot;, arguments := &quot;hello ${who}&quot;, outputs := &quot;greeting:STRING&quot;, done := false]</value></token>
                </place>
                <place name="t1_hello_ready" type="t1_hello_args"/>
                <transition name="t1_hello_start">
                  <defun>
                    <in name="instance" type="long"/>
                    <in name="in_who" type="string"/>
                    <out name="args" type="t1_hello_args"/>
                    <expression>${args.instance} := ${instance}; ${args.in_who} := ${in_who}</expression>
                  </defun>
                  <connect-in port="instance" place="t1_hello_instance"/>
                  <connect-read port="in_who" place="t1_hello_in_who"/>
                  <connect-out port="args" place="t1_hello_ready"/>
                </transition>
                <transition name="t1_hello">
                  <defun>
                    <in name="spec" type="workload_task"/>
                    <in name="args" type="t1_hello_args"/>
                    <out name="out_greeting" type="string"/>
                    <module name="workload_exec" function="t1_hello"/>
                  </defun>
                  <connect-read port="spec" place="t1_hello_spec"/>
                  <connect-in port="args" place="t1_hello_ready"/>
                  <connect-out port="out_greeting" place="t1_hello_out_greeting"/>
                </transition>
              </net>
            </defun>
        "#]],
    );
}

#[test]
fn lowers_fan_out_and_fan_in() {
    check_lower(
        FAN,
        expect![[r#"
        <?xml version="1.0" encoding="UTF-8"?>
        <!-- Generated from a workload description by pnet-workload (grammar/workload.md).
             Each task instance is a start step (an expression) and then a call of the command
             module workload_exec, which runs the task's EXECUTABLE with its ARGUMENTS. -->
        <defun name="workload">
          <out name="total_sum" type="long" place="t3_total_out_sum"/>
          <struct name="workload_task">
            <field name="task" type="string"/>
            <field name="instances" type="long"/>
            <field name="executable" type="string"/>
            <field name="arguments" type="string"/>
            <field name="outputs" type="string"/>
            <field name="done" type="bool"/>
          </struct>
          <struct name="t1_seed_args">
            <field name="instance" type="long"/>
            <field name="in_base" type="long"/>
          </struct>
          <struct name="t2_square_args">
            <field name="instance" type="long"/>
            <field name="in_n" type="long"/>
          </struct>
          <struct name="t3_total_args">
            <field name="instance" type="long"/>
            <field name="in_squares" type="list"/>
          </struct>
          <net>
            <!-- relation 1: seed.n -> square.n -->
            <place name="r1_value" type="long"/>
            <!-- relation 2: square.sq -> total.squares; note = "fan-in: a list of 3 values" -->
            <place name="r2_value" type="long"/>
            <place name="r2_acc" type="list">
              <token><value>List ()</value></token>
            </place>
            <transition name="r2_gather">
              <defun>
                <in name="x" type="long"/>
                <in name="acc" type="list"/>
                <out name="more" type="list"/>
                <expression>${more} := stack_push (${acc}, ${x})</expression>
              </defun>
              <connect-in port="x" place="r2_value"/>
              <connect-in port="acc" place="r2_acc"/>
              <connect-out port="more" place="r2_acc"/>
            </transition>
            <!-- task seed: 1 instance -->
            <place name="t1_seed_in_base" type="long">
              <token><value>10L</value></token>
            </place>
            <place name="t1_seed_instance" type="long">
              <token><value>0L</value></token>
            </place>
            <place name="t1_seed_spec" type="workload_task">
              <token><value>Struct [task := &quot;seed&quot;, instances := 1L, executable := &quot;/bin/sh&quot;, arguments := &quot;-c &apos;echo $base&apos;&quot;, outputs := &quot;n:INTEGER&quot;, done := false]</value></token>
            </place>
            <place name="t1_seed_ready" type="t1_seed_args"/>
            <transition name="t1_seed_start">
              <defun>
                <in name="instance" type="long"/>
                <in name="in_base" type="long"/>
                <out name="args" type="t1_seed_args"/>
                <expression>${args.instance} := ${instance}; ${args.in_base} := ${in_base}</expression>
              </defun>
              <connect-in port="instance" place="t1_seed_instance"/>
              <connect-read port="in_base" place="t1_seed_in_base"/>
              <connect-out port="args" place="t1_seed_ready"/>
            </transition>
            <transition name="t1_seed">
              <defun>
                <in name="spec" type="workload_task"/>
                <in name="args" type="t1_seed_args"/>
                <out name="out_n" type="long"/>
                <module name="workload_exec" function="t1_seed"/>
              </defun>
              <connect-read port="spec" place="t1_seed_spec"/>
              <connect-in port="args" place="t1_seed_ready"/>
              <connect-out port="out_n" place="r1_value"/>
            </transition>
            <!-- task square: 3 instances -->
            <place name="t2_square_instance" type="long">
              <token><value>0L</value></token>
              <token><value>1L</value></token>
              <token><value>2L</value></token>
            </place>
            <place name="t2_square_spec" type="workload_task">
              <token><value>Struct [task := &quot;square&quot;, instances := 3L, executable := &quot;/bin/sh&quot;, arguments := &quot;-c &apos;echo $(( (n + WORKLOAD_INSTANCE) * (n + WORKLOAD_INSTANCE) ))&apos;&quot;, outputs := &quot;sq:INTEGER&quot;, done := false]</value></token>
            </place>
            <place name="t2_square_ready" type="t2_square_args"/>
            <transition name="t2_square_start">
              <defun>
                <in name="instance" type="long"/>
                <in name="in_n" type="long"/>
                <out name="args" type="t2_square_args"/>
                <expression>${args.instance} := ${instance}; ${args.in_n} := ${in_n}</expression>
              </defun>
              <connect-in port="instance" place="t2_square_instance"/>
              <connect-read port="in_n" place="r1_value"/>
              <connect-out port="args" place="t2_square_ready"/>
            </transition>
            <transition name="t2_square">
              <defun>
                <in name="spec" type="workload_task"/>
                <in name="args" type="t2_square_args"/>
                <out name="out_sq" type="long"/>
                <module name="workload_exec" function="t2_square"/>
              </defun>
              <connect-read port="spec" place="t2_square_spec"/>
              <connect-in port="args" place="t2_square_ready"/>
              <connect-out port="out_sq" place="r2_value"/>
            </transition>
            <!-- task total: 1 instance -->
            <place name="t3_total_out_sum" type="long"/>
            <place name="t3_total_instance" type="long">
              <token><value>0L</value></token>
            </place>
            <place name="t3_total_spec" type="workload_task">
              <token><value>Struct [task := &quot;total&quot;, instances := 1L, executable := &quot;/bin/sh&quot;, arguments := &quot;-c &apos;echo $(($1 + $2 + $3))&apos; total ${squares}&quot;, outputs := &quot;sum:INTEGER&quot;, done := false]</value></token>
            </place>
            <place name="t3_total_ready" type="t3_total_args"/>
            <transition name="t3_total_start">
              <defun>
                <in name="instance" type="long"/>
                <in name="in_squares" type="list"/>
                <out name="args" type="t3_total_args"/>
                <expression>${args.instance} := ${instance}; ${args.in_squares} := ${in_squares}</expression>
                <condition>stack_size (${in_squares}) == 3UL</condition>
              </defun>
              <connect-in port="instance" place="t3_total_instance"/>
              <connect-in port="in_squares" place="r2_acc"/>
              <connect-out port="args" place="t3_total_ready"/>
            </transition>
            <transition name="t3_total">
              <defun>
                <in name="spec" type="workload_task"/>
                <in name="args" type="t3_total_args"/>
                <out name="out_sum" type="long"/>
                <module name="workload_exec" function="t3_total"/>
              </defun>
              <connect-read port="spec" place="t3_total_spec"/>
              <connect-in port="args" place="t3_total_ready"/>
              <connect-out port="out_sum" place="t3_total_out_sum"/>
            </transition>
          </net>
        </defun>
    "#]],
    );
}

#[test]
fn lowers_time_relations() {
    check_lower(
        "task a [2] (SEQUENTIAL_END) { EXECUTABLE = 'true'; }\n\
         task b { EXECUTABLE = 'true'; }\n\
         task c { EXECUTABLE = 'true'; }\n\
         relation a -> b (SEQUENTIAL_START) { why = 'a \"quote\" -- and <xml>'; }\n\
         relation b -> c (CONCURRENT);\n",
        expect![[r#"
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- Generated from a workload description by pnet-workload (grammar/workload.md).
                 Each task instance is a start step (an expression) and then a call of the command
                 module workload_exec, which runs the task's EXECUTABLE with its ARGUMENTS. -->
            <defun name="workload">
              <struct name="workload_task">
                <field name="task" type="string"/>
                <field name="instances" type="long"/>
                <field name="executable" type="string"/>
                <field name="arguments" type="string"/>
                <field name="outputs" type="string"/>
                <field name="done" type="bool"/>
              </struct>
              <struct name="t1_a_args">
                <field name="instance" type="long"/>
              </struct>
              <struct name="t2_b_args">
                <field name="instance" type="long"/>
              </struct>
              <struct name="t3_c_args">
                <field name="instance" type="long"/>
              </struct>
              <net>
                <!-- relation 1: a -> b; why = "a \"quote\" - - and <xml>" -->
                <place name="r1_events" type="control"/>
                <place name="r1_count" type="long">
                  <token><value>0L</value></token>
                </place>
                <place name="r1_go" type="control"/>
                <transition name="r1_count">
                  <defun>
                    <in name="e" type="control"/>
                    <in name="n" type="long"/>
                    <out name="m" type="long"/>
                    <expression>${m} := ${n} + 1L</expression>
                  </defun>
                  <connect-in port="e" place="r1_events"/>
                  <connect-in port="n" place="r1_count"/>
                  <connect-out port="m" place="r1_count"/>
                </transition>
                <transition name="r1_release">
                  <defun>
                    <in name="n" type="long"/>
                    <out name="go" type="control"/>
                    <expression>${go} := []</expression>
                    <condition>${n} == 2L</condition>
                  </defun>
                  <connect-in port="n" place="r1_count"/>
                  <connect-out port="go" place="r1_go"/>
                </transition>
                <!-- relation 2: b -> c -->
                <place name="r2_tail_go" type="control"/>
                <place name="r2_head_go" type="control"/>
                <!-- task a: 2 instances -->
                <place name="t1_a_turn" type="control"/>
                <place name="t1_a_next" type="long">
                  <token><value>1L</value></token>
                </place>
                <transition name="t1_a_advance">
                  <defun>
                    <in name="ended" type="control"/>
                    <in name="k" type="long"/>
                    <out name="instance" type="long"/>
                    <out name="more" type="long"/>
                    <expression>${instance} := ${k}; ${more} := ${k} + 1L</expression>
                    <condition>${k} &lt; 2L</condition>
                  </defun>
                  <connect-in port="ended" place="t1_a_turn"/>
                  <connect-in port="k" place="t1_a_next"/>
                  <connect-out port="instance" place="t1_a_instance"/>
                  <connect-out port="more" place="t1_a_next"/>
                </transition>
                <transition name="t1_a_finish">
                  <defun>
                    <in name="ended" type="control"/>
                    <in name="k" type="long"/>
                    <expression></expression>
                    <condition>${k} == 2L</condition>
                  </defun>
                  <connect-in port="ended" place="t1_a_turn"/>
                  <connect-in port="k" place="t1_a_next"/>
                </transition>
                <place name="t1_a_instance" type="long">
                  <token><value>0L</value></token>
                </place>
                <place name="t1_a_spec" type="workload_task">
                  <token><value>Struct [task := &quot;a&quot;, instances := 2L, executable := &quot;true&quot;, arguments := &quot;&quot;, outputs := &quot;&quot;, done := true]</value></token>
                </place>
                <place name="t1_a_ready" type="t1_a_args"/>
                <transition name="t1_a_start">
                  <defun>
                    <in name="instance" type="long"/>
                    <out name="args" type="t1_a_args"/>
                    <out name="started" type="control"/>
                    <expression>${args.instance} := ${instance}; ${started} := []</expression>
                  </defun>
                  <connect-in port="instance" place="t1_a_instance"/>
                  <connect-out port="args" place="t1_a_ready"/>
                  <connect-out port="started" place="r1_events"/>
                </transition>
                <transition name="t1_a">
                  <defun>
                    <in name="spec" type="workload_task"/>
                    <in name="args" type="t1_a_args"/>
                    <out name="done" type="control"/>
                    <module name="workload_exec" function="t1_a"/>
                  </defun>
                  <connect-read port="spec" place="t1_a_spec"/>
                  <connect-in port="args" place="t1_a_ready"/>
                  <connect-out port="done" place="t1_a_turn"/>
                </transition>
                <!-- task b: 1 instance -->
                <place name="t2_b_instance" type="long">
                  <token><value>0L</value></token>
                </place>
                <place name="t2_b_spec" type="workload_task">
                  <token><value>Struct [task := &quot;b&quot;, instances := 1L, executable := &quot;true&quot;, arguments := &quot;&quot;, outputs := &quot;&quot;, done := false]</value></token>
                </place>
                <place name="t2_b_ready" type="t2_b_args"/>
                <transition name="t2_b_start">
                  <defun>
                    <in name="instance" type="long"/>
                    <in name="wait1" type="control"/>
                    <out name="args" type="t2_b_args"/>
                    <out name="started" type="control"/>
                    <expression>${args.instance} := ${instance}; ${started} := []</expression>
                  </defun>
                  <connect-in port="instance" place="t2_b_instance"/>
                  <connect-read port="wait1" place="r1_go"/>
                  <connect-out port="args" place="t2_b_ready"/>
                  <connect-out port="started" place="r2_tail_go"/>
                </transition>
                <transition name="t2_b">
                  <defun>
                    <in name="spec" type="workload_task"/>
                    <in name="args" type="t2_b_args"/>
                    <in name="sync1" type="control"/>
                    <module name="workload_exec" function="t2_b"/>
                  </defun>
                  <connect-read port="spec" place="t2_b_spec"/>
                  <connect-in port="args" place="t2_b_ready"/>
                  <connect-read port="sync1" place="r2_head_go"/>
                </transition>
                <!-- task c: 1 instance -->
                <place name="t3_c_instance" type="long">
                  <token><value>0L</value></token>
                </place>
                <place name="t3_c_spec" type="workload_task">
                  <token><value>Struct [task := &quot;c&quot;, instances := 1L, executable := &quot;true&quot;, arguments := &quot;&quot;, outputs := &quot;&quot;, done := false]</value></token>
                </place>
                <place name="t3_c_ready" type="t3_c_args"/>
                <transition name="t3_c_start">
                  <defun>
                    <in name="instance" type="long"/>
                    <out name="args" type="t3_c_args"/>
                    <out name="started" type="control"/>
                    <expression>${args.instance} := ${instance}; ${started} := []</expression>
                  </defun>
                  <connect-in port="instance" place="t3_c_instance"/>
                  <connect-out port="args" place="t3_c_ready"/>
                  <connect-out port="started" place="r2_head_go"/>
                </transition>
                <transition name="t3_c">
                  <defun>
                    <in name="spec" type="workload_task"/>
                    <in name="args" type="t3_c_args"/>
                    <in name="sync1" type="control"/>
                    <module name="workload_exec" function="t3_c"/>
                  </defun>
                  <connect-read port="spec" place="t3_c_spec"/>
                  <connect-in port="args" place="t3_c_ready"/>
                  <connect-read port="sync1" place="r2_tail_go"/>
                </transition>
              </net>
            </defun>
        "#]],
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(text in "\\PC{0,200}") {
        let (w, _) = parse(&text);
        let _ = lower(&w);
    }

    #[test]
    fn token_soup_never_panics(parts in proptest::collection::vec(prop_oneof![
        Just("task"), Just("relation"), Just("in"), Just("out"), Just("a"), Just("b-c"),
        Just("x"), Just("["), Just("]"), Just("3"), Just("0"), Just("-"), Just("->"),
        Just("."), Just(":"), Just(";"), Just(","), Just("="), Just("{"), Just("}"), Just("("),
        Just(")"), Just("'v'"), Just("\"w\\\""), Just("INTEGER"), Just("STRING"), Just("URI"),
        Just("INPUT-OUTPUT"), Just("CONCURRENT"), Just("SEQUENTIAL_END"), Just("SEQUENTIAL_START"),
        Just("COMMUNICATION"), Just("NONE"), Just("EXECUTABLE"), Just("#c\n"), Just(" "),
    ], 0..60)) {
        let text = parts.join(" ");
        let (w, ds) = parse(&text);
        for d in &ds {
            let at = crate::diag::primary_range(d);
            prop_assert!(at.start <= at.end && at.end <= text.len());
        }
        let _ = lower(&w);
    }
}

/// Compiles lowered xpnet with pnet-sema and returns the rendered diagnostics (none expected).
fn sema_diagnostics(xpnet: &str) -> Vec<String> {
    let out = pnet_sema::compile_source(
        std::path::Path::new("generated.xpnet"),
        xpnet,
        &pnet_sema::Options::default(),
    );
    let mut found: Vec<String> = out
        .diagnostics
        .iter()
        .map(|d| format!("{}: {}", d.code, d.message))
        .collect();
    if out.bundle.is_none() {
        found.push("no bundle".to_string());
    }
    found
}

#[test]
fn lowered_examples_compile_without_diagnostics() {
    for text in [
        FAN,
        include_str!("../../../examples/workload/pipeline.workload"),
        include_str!("../../../examples/workload/ensemble.workload"),
    ] {
        let (w, _) = parse(text);
        let xpnet = lower(&w);
        assert_eq!(sema_diagnostics(&xpnet), Vec::<String>::new(), "{xpnet}");
    }
}

/// A random workload: tasks with random cardinalities, ports and kinds, and relations
/// between earlier and later tasks (so most are acyclic).
fn workload_text(
    tasks: &[(u32, u8, u8, u8)],
    relations: &[(usize, usize, u8, u8, bool)],
) -> String {
    let times = ["NONE", "CONCURRENT", "SEQUENTIAL_START", "SEQUENTIAL_END"];
    let spaces = ["NONE", "COMMUNICATION", "INPUT-OUTPUT"];
    let types = ["INTEGER", "STRING", "URI"];
    let mut s = String::new();
    for (i, &(card, ins, outs, kind)) in tasks.iter().enumerate() {
        s.push_str(&format!(
            "task t-{i} [{card}] ({}) {{\n",
            times[kind as usize % 4]
        ));
        for p in 0..ins % 3 {
            s.push_str(&format!("  in i{p}: {};\n", types[p as usize % 3]));
        }
        for p in 0..outs % 3 {
            s.push_str(&format!("  out o{p}: {};\n", types[p as usize % 3]));
        }
        s.push_str("  EXECUTABLE = 'true';\n}\n");
    }
    let n = tasks.len();
    for &(a, b, time, space, ports) in relations {
        let (a, b) = (a % n, b % n);
        let (a, b) = (a.min(b), a.max(b));
        if a == b {
            continue;
        }
        let p = if ports { ".i0" } else { "" };
        let q = if ports { ".o0" } else { "" };
        s.push_str(&format!(
            "relation t-{a}{q} -> t-{b}{p} ({}, {});\n",
            times[time as usize % 4],
            spaces[space as usize % 3]
        ));
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Whatever the parser accepts without errors lowers to a net that compiles cleanly.
    #[test]
    fn accepted_workloads_compile_cleanly(
        tasks in proptest::collection::vec((0u32..4, 0u8..3, 0u8..3, 0u8..4), 1..5),
        relations in proptest::collection::vec((0usize..5, 0usize..5, 0u8..4, 0u8..3, any::<bool>()), 0..6),
    ) {
        let text = workload_text(&tasks, &relations);
        let (w, ds) = parse(&text);
        if ds.iter().all(|d| !d.is_error()) {
            let xpnet = lower(&w);
            prop_assert_eq!(sema_diagnostics(&xpnet), Vec::<String>::new(), "{}\n{}", text, xpnet);
        }
    }
}

/// A generated chain of 5,000 tasks, each waiting for the previous one, closed into a cycle:
/// the cycle search is iterative (no recursion per task) and reports one diagnostic; the
/// open chain checks and lowers.
#[test]
fn a_long_chain_of_relations_is_checked_without_recursion() {
    let n = 5000;
    let mut text: String = (0..n)
        .map(|i| format!("task t{i} {{ EXECUTABLE = 'e'; }}\n"))
        .collect();
    for i in 0..n - 1 {
        text.push_str(&format!(
            "relation t{i} -> t{} (NONE, SEQUENTIAL_END);\n",
            i + 1
        ));
    }
    let (w, ds) = parse(&text);
    assert!(ds.is_empty(), "{}", diags(&text));
    let lowered = lower(&w);
    assert!(lowered.contains("t4999"));
    text.push_str(&format!(
        "relation t{} -> t0 (NONE, SEQUENTIAL_END);\n",
        n - 1
    ));
    let (_, ds) = parse(&text);
    let codes: Vec<_> = ds.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["workload-cycle"]);
}
