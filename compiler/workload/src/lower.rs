//! Lowering a checked workload to an xpnet net (see `grammar/workload.md`, "Lowering").

use std::fmt::Write as _;

use crate::ast::*;
use crate::check::{Event, Resolved, check, net_port_name};

/// The command module that runs a task's program (`runtime/worker/src/bin/workload_exec.rs`).
pub const MODULE: &str = "workload_exec";
/// The name of the struct type holding a task's static description.
pub const SPEC_STRUCT: &str = "workload_task";

/// Lowers `w` to the text of an xpnet file (a `defun` with a `net`). Meant for a workload
/// without errors (see [`crate::parse`]); relations that do not resolve are left out.
pub fn lower(w: &Workload) -> String {
    let (resolved, _) = check(w);
    let mut l = Lowering::new(w);
    l.relations(&resolved);
    l.tasks(&resolved);
    l.finish()
}

/// How the start step of an instance takes one input.
struct StartInput {
    port: String,
    ty: String,
    place: String,
    read: bool,
}

#[derive(Default)]
struct TaskParts {
    /// The start step's inputs (besides the instance number).
    inputs: Vec<StartInput>,
    /// Conditions of the start step.
    conditions: Vec<String>,
    /// Control places the start step reads (SEQUENTIAL_END / SEQUENTIAL_START).
    waits: Vec<String>,
    /// Places that get a token when an instance passes its start step.
    started: Vec<String>,
    /// Control places the call reads (CONCURRENT / COMMUNICATION).
    syncs: Vec<String>,
    /// Per output port, the places that get its value.
    outputs: Vec<Vec<String>>,
    /// Places that get a token when an instance ends.
    done: Vec<String>,
    /// SEQUENTIAL_END between the instances: only instance 0 is there at first.
    sequential: bool,
}

struct Lowering<'a> {
    w: &'a Workload,
    parts: Vec<TaskParts>,
    /// Places and transitions of the relations.
    net: String,
    /// The net's ports.
    ports: String,
    /// Whether each task is lowered (duplicates are not).
    live: Vec<bool>,
    /// The struct types of the start steps' results.
    ports_structs: Vec<String>,
}

fn prefix(i: usize, t: &Task) -> String {
    format!("t{}_{}", i + 1, t.name.mangled())
}

/// Escapes text for XML content and attribute values.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            _ => out.push(c),
        }
    }
    out
}

/// A string literal of the expression language (escapes `\` and `"`).
fn expr_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if c == '\\' || c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Text safe inside an XML comment.
fn comment(s: &str) -> String {
    let mut s = s.replace("--", "- -");
    if s.ends_with('-') {
        s.push(' ');
    }
    s
}

/// A literal of the expression language for a port value.
fn literal(ty: PortType, v: &str) -> String {
    match ty {
        PortType::Integer => format!("{}L", v.trim().parse::<i64>().unwrap_or(0)),
        PortType::Uri | PortType::String => expr_string(v),
    }
}

impl<'a> Lowering<'a> {
    fn new(w: &'a Workload) -> Self {
        let mut live = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for t in &w.tasks {
            live.push(seen.insert(t.name.mangled()));
        }
        Lowering {
            w,
            parts: w
                .tasks
                .iter()
                .map(|t| TaskParts {
                    outputs: vec![Vec::new(); t.outputs.len()],
                    ..TaskParts::default()
                })
                .collect(),
            net: String::new(),
            ports: String::new(),
            live,
            ports_structs: Vec::new(),
        }
    }

    fn place(&mut self, name: &str, ty: &str, tokens: &[String]) {
        if tokens.is_empty() {
            let _ = writeln!(self.net, "    <place name=\"{name}\" type=\"{ty}\"/>");
            return;
        }
        let _ = writeln!(self.net, "    <place name=\"{name}\" type=\"{ty}\">");
        for t in tokens {
            let _ = writeln!(self.net, "      <token><value>{}</value></token>", xml(t));
        }
        let _ = writeln!(self.net, "    </place>");
    }

    /// An expression transition: `ins`/`outs` are (port, type, place), `reads` are
    /// (port, type, place) read without consuming.
    fn expression(
        &mut self,
        name: &str,
        ins: &[(&str, &str, &str)],
        outs: &[(&str, &str, &str)],
        expression: &str,
        condition: Option<&str>,
    ) {
        let n = &mut self.net;
        let _ = writeln!(n, "    <transition name=\"{name}\">");
        let _ = writeln!(n, "      <defun>");
        for (p, ty, _) in ins {
            let _ = writeln!(n, "        <in name=\"{p}\" type=\"{ty}\"/>");
        }
        for (p, ty, _) in outs {
            let _ = writeln!(n, "        <out name=\"{p}\" type=\"{ty}\"/>");
        }
        let _ = writeln!(n, "        <expression>{}</expression>", xml(expression));
        if let Some(c) = condition {
            let _ = writeln!(n, "        <condition>{}</condition>", xml(c));
        }
        let _ = writeln!(n, "      </defun>");
        for (p, _, place) in ins {
            let _ = writeln!(n, "      <connect-in port=\"{p}\" place=\"{place}\"/>");
        }
        for (p, _, place) in outs {
            let _ = writeln!(n, "      <connect-out port=\"{p}\" place=\"{place}\"/>");
        }
        let _ = writeln!(n, "    </transition>");
    }

    /// A place that holds a token once every instance of task `src` has reached `event`
    /// (named `{name}_go`); with several instances, a counter joins their events.
    fn channel(&mut self, src: usize, event: Event, name: &str) -> String {
        let go = format!("{name}_go");
        let n = self.w.tasks[src].instances();
        let target = if n == 1 {
            go.clone()
        } else {
            let events = format!("{name}_events");
            let count = format!("{name}_count");
            self.place(&events, "control", &[]);
            self.place(&count, "long", &["0L".to_string()]);
            self.place(&go, "control", &[]);
            self.expression(
                &format!("{name}_count"),
                &[("e", "control", &events), ("n", "long", &count)],
                &[("m", "long", &count)],
                "${m} := ${n} + 1L",
                None,
            );
            self.expression(
                &format!("{name}_release"),
                &[("n", "long", &count)],
                &[("go", "control", &go)],
                "${go} := []",
                Some(&format!("${{n}} == {n}L")),
            );
            events
        };
        if n == 1 {
            self.place(&go, "control", &[]);
        }
        match event {
            Event::Started => self.parts[src].started.push(target),
            Event::Ended => self.parts[src].done.push(target),
        }
        go
    }

    fn relations(&mut self, resolved: &[Resolved]) {
        let w = self.w;
        for r in resolved {
            if !self.live[r.tail] || !self.live[r.head] {
                continue;
            }
            let rel = &w.relations[r.relation];
            let name = format!("r{}", r.relation + 1);
            let (tt, ht) = (&w.tasks[r.tail], &w.tasks[r.head]);
            let _ = writeln!(
                self.net,
                "    <!-- relation {}: {} -> {}{} -->",
                r.relation + 1,
                comment(&endpoint_text(&rel.tail)),
                comment(&endpoint_text(&rel.head)),
                properties_comment(&rel.properties)
            );
            if let Some((tp, hp)) = r.data {
                let (o, i) = (&tt.outputs[tp], &ht.inputs[hp]);
                let ty = o.ty.or(i.ty).unwrap_or(PortType::String).xpnet();
                let value = format!("{name}_value");
                self.place(&value, ty, &[]);
                self.parts[r.tail].outputs[tp].push(value.clone());
                let (n, m) = (tt.instances(), ht.instances());
                let port = format!("in_{}", i.name.mangled());
                let input = if n > 1 && m == 1 {
                    // fan-in: gather the N values into a list
                    let acc = format!("{name}_acc");
                    self.place(&acc, "list", &["List ()".to_string()]);
                    self.expression(
                        &format!("{name}_gather"),
                        &[("x", ty, &value), ("acc", "list", &acc)],
                        &[("more", "list", &acc)],
                        "${more} := stack_push (${acc}, ${x})",
                        None,
                    );
                    self.parts[r.head]
                        .conditions
                        .push(format!("stack_size (${{{port}}}) == {n}UL"));
                    StartInput {
                        port,
                        ty: "list".into(),
                        place: acc,
                        read: false,
                    }
                } else {
                    // 1 -> M: every instance reads the value; N -> N: one value each
                    StartInput {
                        port,
                        ty: ty.into(),
                        place: value,
                        read: n == 1 && m > 1,
                    }
                };
                self.parts[r.head].inputs.push(input);
            }
            if let Some(ev) = r.order {
                let go = self.channel(r.tail, ev, &name);
                self.parts[r.head].waits.push(go);
            }
            if r.concurrent {
                let go_tail = self.channel(r.tail, Event::Started, &format!("{name}_tail"));
                let go_head = self.channel(r.head, Event::Started, &format!("{name}_head"));
                self.parts[r.head].syncs.push(go_tail);
                self.parts[r.tail].syncs.push(go_head);
            }
        }
    }

    fn tasks(&mut self, resolved: &[Resolved]) {
        let w = self.w;
        for (i, t) in w.tasks.iter().enumerate() {
            if !self.live[i] {
                continue;
            }
            let pfx = prefix(i, t);
            let n = t.instances();
            let _ = writeln!(
                self.net,
                "    <!-- task {}: {} instance{}{} -->",
                comment(&t.name.text),
                n,
                if n == 1 { "" } else { "s" },
                properties_comment(
                    &t.properties
                        .iter()
                        .filter(|p| !matches!(p.key.text.as_str(), "EXECUTABLE" | "ARGUMENTS"))
                        .cloned()
                        .collect::<Vec<_>>()
                )
            );
            // inputs nothing feeds: a value, or a port of the net
            for (j, p) in t.inputs.iter().enumerate() {
                let fed = resolved
                    .iter()
                    .any(|r| r.head == i && r.data.is_some_and(|(_, h)| h == j));
                if fed {
                    continue;
                }
                let ty = p.ty.unwrap_or(PortType::String);
                let place = format!("{pfx}_in_{}", p.name.mangled());
                match &p.value {
                    Some(v) => self.place(&place, ty.xpnet(), &[literal(ty, &v.value)]),
                    None => {
                        self.place(&place, ty.xpnet(), &[]);
                        let _ = writeln!(
                            self.ports,
                            "  <in name=\"{}\" type=\"{}\" place=\"{place}\"/>",
                            net_port_name(t, p),
                            ty.xpnet()
                        );
                    }
                }
                self.parts[i].inputs.push(StartInput {
                    port: format!("in_{}", p.name.mangled()),
                    ty: ty.xpnet().into(),
                    place,
                    read: true,
                });
            }
            // outputs no relation takes: ports of the net
            for (j, p) in t.outputs.iter().enumerate() {
                if !self.parts[i].outputs[j].is_empty() {
                    continue;
                }
                let ty = p.ty.unwrap_or(PortType::String).xpnet();
                let place = format!("{pfx}_out_{}", p.name.mangled());
                self.place(&place, ty, &[]);
                let _ = writeln!(
                    self.ports,
                    "  <out name=\"{}\" type=\"{ty}\" place=\"{place}\"/>",
                    net_port_name(t, p)
                );
                self.parts[i].outputs[j].push(place);
            }
            // relations between the instances
            if n > 1 {
                if t.kinds.time == TimeKind::SequentialEnd {
                    // Instance k+1 is released when instance k ended; after the last one,
                    // `_finish` clears the counter (so that no token is left over).
                    let (turn, next, instance) = (
                        format!("{pfx}_turn"),
                        format!("{pfx}_next"),
                        format!("{pfx}_instance"),
                    );
                    self.place(&turn, "control", &[]);
                    self.place(&next, "long", &["1L".to_string()]);
                    self.expression(
                        &format!("{pfx}_advance"),
                        &[("ended", "control", &turn), ("k", "long", &next)],
                        &[("instance", "long", &instance), ("more", "long", &next)],
                        "${instance} := ${k}; ${more} := ${k} + 1L",
                        Some(&format!("${{k}} < {n}L")),
                    );
                    self.expression(
                        &format!("{pfx}_finish"),
                        &[("ended", "control", &turn), ("k", "long", &next)],
                        &[],
                        "",
                        Some(&format!("${{k}} == {n}L")),
                    );
                    self.parts[i].done.push(turn);
                    self.parts[i].sequential = true;
                }
                if t.kinds.time == TimeKind::Concurrent || t.kinds.space == SpaceKind::Communication
                {
                    let go = self.channel(i, Event::Started, &format!("{pfx}_all"));
                    self.parts[i].syncs.push(go);
                }
            }
            self.task(i, t, &pfx);
        }
    }

    fn task(&mut self, i: usize, t: &Task, pfx: &str) {
        let parts = std::mem::take(&mut self.parts[i]);
        let n = t.instances();
        let instance = format!("{pfx}_instance");
        let first = if parts.sequential { 1 } else { n };
        let tokens: Vec<String> = (0..first).map(|k| format!("{k}L")).collect();
        self.place(&instance, "long", &tokens);
        let spec = format!("{pfx}_spec");
        let outputs: Vec<String> = t
            .outputs
            .iter()
            .map(|p| format!("{}:{}", p.name.mangled(), p.ty.unwrap_or(PortType::String)))
            .collect();
        let value = |k: &str| t.property(k).map_or("", |p| p.value.value.as_str());
        let spec_value = format!(
            "Struct [task := {}, instances := {n}L, executable := {}, arguments := {}, outputs := {}, done := {}]",
            expr_string(&t.name.text),
            expr_string(value("EXECUTABLE")),
            expr_string(value("ARGUMENTS")),
            expr_string(&outputs.join(" ")),
            !parts.done.is_empty()
        );
        self.place(&spec, SPEC_STRUCT, &[spec_value]);
        let ready = format!("{pfx}_ready");
        let args_ty = format!("{pfx}_args");
        self.place(&ready, &args_ty, &[]);

        // the start step
        let x = &mut self.net;
        let _ = writeln!(x, "    <transition name=\"{pfx}_start\">");
        let _ = writeln!(x, "      <defun>");
        let _ = writeln!(x, "        <in name=\"instance\" type=\"long\"/>");
        for inp in &parts.inputs {
            let _ = writeln!(x, "        <in name=\"{}\" type=\"{}\"/>", inp.port, inp.ty);
        }
        for (k, _) in parts.waits.iter().enumerate() {
            let _ = writeln!(x, "        <in name=\"wait{}\" type=\"control\"/>", k + 1);
        }
        let _ = writeln!(x, "        <out name=\"args\" type=\"{args_ty}\"/>");
        if !parts.started.is_empty() {
            let _ = writeln!(x, "        <out name=\"started\" type=\"control\"/>");
        }
        let mut e = String::from("${args.instance} := ${instance}");
        for inp in &parts.inputs {
            let _ = write!(e, "; ${{args.{0}}} := ${{{0}}}", inp.port);
        }
        if !parts.started.is_empty() {
            e.push_str("; ${started} := []");
        }
        let _ = writeln!(x, "        <expression>{}</expression>", xml(&e));
        if !parts.conditions.is_empty() {
            let _ = writeln!(
                x,
                "        <condition>{}</condition>",
                xml(&parts.conditions.join(" && "))
            );
        }
        let _ = writeln!(x, "      </defun>");
        let _ = writeln!(
            x,
            "      <connect-in port=\"instance\" place=\"{instance}\"/>"
        );
        for inp in &parts.inputs {
            let kind = if inp.read { "read" } else { "in" };
            let _ = writeln!(
                x,
                "      <connect-{kind} port=\"{}\" place=\"{}\"/>",
                inp.port, inp.place
            );
        }
        for (k, place) in parts.waits.iter().enumerate() {
            let _ = writeln!(
                x,
                "      <connect-read port=\"wait{}\" place=\"{place}\"/>",
                k + 1
            );
        }
        let _ = writeln!(x, "      <connect-out port=\"args\" place=\"{ready}\"/>");
        for place in &parts.started {
            let _ = writeln!(x, "      <connect-out port=\"started\" place=\"{place}\"/>");
        }
        let _ = writeln!(x, "    </transition>");

        // the call
        let _ = writeln!(x, "    <transition name=\"{pfx}\">");
        let _ = writeln!(x, "      <defun>");
        let _ = writeln!(x, "        <in name=\"spec\" type=\"{SPEC_STRUCT}\"/>");
        let _ = writeln!(x, "        <in name=\"args\" type=\"{args_ty}\"/>");
        for (k, _) in parts.syncs.iter().enumerate() {
            let _ = writeln!(x, "        <in name=\"sync{}\" type=\"control\"/>", k + 1);
        }
        for p in &t.outputs {
            let _ = writeln!(
                x,
                "        <out name=\"out_{}\" type=\"{}\"/>",
                p.name.mangled(),
                p.ty.unwrap_or(PortType::String).xpnet()
            );
        }
        if !parts.done.is_empty() {
            let _ = writeln!(x, "        <out name=\"done\" type=\"control\"/>");
        }
        // One function name per task: the module serves them all (xpnet warns about one
        // external function defined with different ports).
        let _ = writeln!(x, "        <module name=\"{MODULE}\" function=\"{pfx}\"/>");
        let _ = writeln!(x, "      </defun>");
        let _ = writeln!(x, "      <connect-read port=\"spec\" place=\"{spec}\"/>");
        let _ = writeln!(x, "      <connect-in port=\"args\" place=\"{ready}\"/>");
        for (k, place) in parts.syncs.iter().enumerate() {
            let _ = writeln!(
                x,
                "      <connect-read port=\"sync{}\" place=\"{place}\"/>",
                k + 1
            );
        }
        for (p, places) in t.outputs.iter().zip(&parts.outputs) {
            for place in places {
                let _ = writeln!(
                    x,
                    "      <connect-out port=\"out_{}\" place=\"{place}\"/>",
                    p.name.mangled()
                );
            }
        }
        for place in &parts.done {
            let _ = writeln!(x, "      <connect-out port=\"done\" place=\"{place}\"/>");
        }
        let _ = writeln!(x, "    </transition>");

        // the struct of the start step's result
        let mut s = format!("  <struct name=\"{args_ty}\">\n");
        let _ = writeln!(s, "    <field name=\"instance\" type=\"long\"/>");
        for inp in &parts.inputs {
            let _ = writeln!(s, "    <field name=\"{}\" type=\"{}\"/>", inp.port, inp.ty);
        }
        s.push_str("  </struct>\n");
        self.ports_structs.push(s);
    }

    fn finish(self) -> String {
        let mut out = String::new();
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        out.push_str(
            "<!-- Generated from a workload description by pnet-workload (grammar/workload.md).\n     \
             Each task instance is a start step (an expression) and then a call of the command\n     \
             module workload_exec, which runs the task's EXECUTABLE with its ARGUMENTS. -->\n",
        );
        out.push_str("<defun name=\"workload\">\n");
        out.push_str(&self.ports);
        let _ = writeln!(out, "  <struct name=\"{SPEC_STRUCT}\">");
        for (f, ty) in [
            ("task", "string"),
            ("instances", "long"),
            ("executable", "string"),
            ("arguments", "string"),
            ("outputs", "string"),
            ("done", "bool"),
        ] {
            let _ = writeln!(out, "    <field name=\"{f}\" type=\"{ty}\"/>");
        }
        out.push_str("  </struct>\n");
        for s in &self.ports_structs {
            out.push_str(s);
        }
        out.push_str("  <net>\n");
        out.push_str(&self.net);
        out.push_str("  </net>\n</defun>\n");
        out
    }
}

fn endpoint_text(e: &Endpoint) -> String {
    match &e.port {
        Some(p) => format!("{}.{}", e.task.text, p.text),
        None => e.task.text.clone(),
    }
}

fn properties_comment(props: &[Property]) -> String {
    let mut s = String::new();
    for p in props {
        let _ = write!(
            s,
            "; {} = {:?}",
            comment(&p.key.text),
            comment(&p.value.value)
        );
    }
    s
}
