//! Structural validation of a bundle: every index and reference in range, every code
//! well-formed, so that no reader (the engine, the interpreter, the JIT, `pnetput`,
//! `pnet2dot`, the text form) indexes out of bounds on a malformed bundle.
//!
//! [`crate::format::decode`] runs it on every bundle it decodes, so a decoded [`Bundle`] is
//! always well-formed; the engine runs it again on bundles built in memory. The checks, per
//! item:
//!
//! - source files: line starts begin at 0 and are in order (`line_col` relies on it);
//! - spans: the file exists and `start <= end` (the default span, "no location", is allowed
//!   in bundles built by hand);
//! - the root and every transition's function exist;
//! - codes: one span per instruction; constants, slots, field paths and jump targets in
//!   range; `MakeShared` names a string constant; the slots a code reads exist;
//! - functions: a body's codes (expression, eureka group, memory buffer sizes and
//!   alignments, memory transfers) exist and have a slot for every port of the function; a
//!   `modules` body has a module; a port is bound to a place only in a net, and to a place
//!   of that net;
//! - nets: generator places have a type with a generator; a transition's connections name
//!   a port of its function (of the right direction) and a place of the net; responses and
//!   eureka connections name ports of its function; its condition exists and has a slot per
//!   port; its place-map pairs a place of its child net with a place of the net (and is
//!   empty when the function is not a net).
//!
//! Messages say what is wrong and where, as in "function 0 (`main`): transition 3 (`t`):
//! connection 2 names place 17, the net has 5 places".

use pnet_stdlib::{Type, Value};

use crate::{Body, Bundle, Code, CodeId, ConnectKind, Function, Instr, Net, PortDir, SourceSpan};

/// Checks a bundle. The message names the offending item.
pub fn validate(bundle: &Bundle) -> Result<(), String> {
    for (i, file) in bundle.files.iter().enumerate() {
        let ls = &file.line_starts;
        if ls.first() != Some(&0) || ls.windows(2).any(|w| w[0] > w[1]) {
            return Err(format!(
                "source file {i} (`{}`): its line starts do not begin at 0 in increasing order",
                file.path
            ));
        }
    }
    if bundle.root.index() >= bundle.functions.len() {
        return Err(format!(
            "the root function {} does not exist, the bundle has {}",
            bundle.root.0,
            count(bundle.functions.len(), "function")
        ));
    }
    for (i, code) in bundle.codes.iter().enumerate() {
        validate_code(bundle, code).map_err(|e| format!("code {i} ({}): {e}", code.name))?;
    }
    for (i, f) in bundle.functions.iter().enumerate() {
        let name = match &f.name {
            Some(n) => format!("`{n}`"),
            None => "anonymous".to_string(),
        };
        validate_function(bundle, f).map_err(|e| format!("function {i} ({name}): {e}"))?;
    }
    Ok(())
}

/// `n things`.
fn count(n: usize, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// Types a generator place may have.
pub fn generator_type(ty: &Type) -> bool {
    matches!(
        ty,
        Type::Int
            | Type::Long
            | Type::UInt
            | Type::ULong
            | Type::Char
            | Type::String
            | Type::Bigint
    )
}

/// A span names an existing file and `start <= end`; the default span stands for "no
/// location".
fn span(bundle: &Bundle, s: SourceSpan, what: &str) -> Result<(), String> {
    if s == SourceSpan::default() {
        return Ok(());
    }
    if s.file.index() >= bundle.files.len() {
        return Err(format!(
            "{what} names source file {}, the bundle has {}",
            s.file.0,
            count(bundle.files.len(), "file")
        ));
    }
    if s.start > s.end {
        return Err(format!(
            "{what} starts at {} after its end {}",
            s.start, s.end
        ));
    }
    Ok(())
}

/// Code `id` of function `f`'s item `what`: it exists and has a slot per port of `f`.
fn code_for(bundle: &Bundle, id: CodeId, f: &Function, what: &str) -> Result<(), String> {
    let Some(code) = bundle.codes.get(id.index()) else {
        return Err(format!(
            "{what} is code {}, the bundle has {}",
            id.0,
            count(bundle.codes.len(), "code")
        ));
    };
    if code.slots.len() < f.ports.len() {
        return Err(format!(
            "{what} is code {} ({}) with {}, the function has {}",
            id.0,
            code.name,
            count(code.slots.len(), "slot"),
            count(f.ports.len(), "port")
        ));
    }
    Ok(())
}

fn validate_function(bundle: &Bundle, f: &Function) -> Result<(), String> {
    span(bundle, f.span, "the span")?;
    let places = match &f.body {
        Body::Net(net) => Some(net.places.len()),
        _ => None,
    };
    for (i, p) in f.ports.iter().enumerate() {
        let ctx = |e: String| format!("port {i} (`{}`): {e}", p.name);
        span(bundle, p.span, "the span").map_err(ctx)?;
        match (p.place, places) {
            (None, _) => {}
            (Some(pl), None) => {
                return Err(ctx(format!(
                    "is bound to place {}, the function is not a net",
                    pl.0
                )));
            }
            (Some(pl), Some(n)) if pl.index() >= n => {
                return Err(ctx(format!(
                    "is bound to place {}, the net has {}",
                    pl.0,
                    count(n, "place")
                )));
            }
            (Some(_), Some(_)) => {}
        }
    }
    let module = |m: &crate::Module, what: &str| -> Result<(), String> {
        span(bundle, m.span, &format!("the span of {what}"))?;
        if let Some(c) = m.eureka_group {
            code_for(bundle, c, f, &format!("the eureka group of {what}"))?;
        }
        Ok(())
    };
    match &f.body {
        Body::Expression(c) => code_for(bundle, *c, f, "the expression")?,
        Body::Module(m) => module(m, &format!("module `{}`", m.name))?,
        Body::Modules { modules, .. } => {
            if modules.is_empty() {
                return Err("its `modules` body has no module".into());
            }
            for (i, m) in modules.iter().enumerate() {
                module(m, &format!("module {i} (`{}`)", m.name))?;
            }
        }
        Body::Net(net) => validate_net(bundle, net)?,
    }
    for (i, b) in f.memory_buffers.iter().enumerate() {
        let what = format!("memory buffer {i} (`{}`)", b.name);
        span(bundle, b.span, &format!("the span of {what}"))?;
        code_for(bundle, b.size, f, &format!("the size of {what}"))?;
        if let Some(a) = b.alignment {
            code_for(bundle, a, f, &format!("the alignment of {what}"))?;
        }
    }
    for (i, t) in f.memory_transfers.iter().enumerate() {
        let what = format!("memory transfer {i}");
        span(bundle, t.span, &format!("the span of {what}"))?;
        code_for(bundle, t.global, f, &format!("the global range of {what}"))?;
        code_for(bundle, t.local, f, &format!("the local range of {what}"))?;
    }
    Ok(())
}

fn validate_net(bundle: &Bundle, net: &Net) -> Result<(), String> {
    let places = net.places.len();
    for (i, place) in net.places.iter().enumerate() {
        let ctx = |e: String| format!("place {i} (`{}`): {e}", place.name);
        span(bundle, place.span, "the span").map_err(ctx)?;
        if place.generator && !generator_type(&place.ty) {
            return Err(ctx(format!(
                "is a generator of type {}, which has no generator",
                place.ty
            )));
        }
    }
    for (ti, t) in net.transitions.iter().enumerate() {
        let ctx = |e: String| format!("transition {ti} (`{}`): {e}", t.name);
        span(bundle, t.span, "the span").map_err(ctx)?;
        let Some(tf) = bundle.functions.get(t.function.index()) else {
            return Err(ctx(format!(
                "its function is function {}, the bundle has {}",
                t.function.0,
                count(bundle.functions.len(), "function")
            )));
        };
        let ports = tf.ports.len();
        let port = |p: crate::PortId, what: &str| {
            if p.index() < ports {
                Ok(&tf.ports[p.index()])
            } else {
                Err(ctx(format!(
                    "{what} names port {}, its function has {}",
                    p.0,
                    count(ports, "port")
                )))
            }
        };
        for (ci, c) in t.connections.iter().enumerate() {
            let what = format!("connection {ci}");
            span(bundle, c.span, &format!("the span of {what}")).map_err(ctx)?;
            let p = port(c.port, &what)?;
            if c.place.index() >= places {
                return Err(ctx(format!(
                    "{what} names place {}, the net has {}",
                    c.place.0,
                    count(places, "place")
                )));
            }
            let ok = match c.kind {
                ConnectKind::In | ConnectKind::Read | ConnectKind::NumberOfTokens => {
                    p.dir.is_input() || p.dir == PortDir::Tunnel
                }
                ConnectKind::Out | ConnectKind::OutMany => {
                    p.dir.is_output() || p.dir == PortDir::Tunnel
                }
            };
            if !ok {
                return Err(ctx(format!(
                    "{what} ({:?}) names port {} (`{}`), whose direction is {:?}",
                    c.kind, c.port.0, p.name, p.dir
                )));
            }
        }
        for (ri, r) in t.responses.iter().enumerate() {
            let what = format!("response {ri}");
            span(bundle, r.span, &format!("the span of {what}")).map_err(ctx)?;
            port(r.port, &what)?;
            port(r.to, &format!("{what} (`to`)"))?;
        }
        for (ei, &p) in t.eureka_ports.iter().enumerate() {
            port(p, &format!("eureka connection {ei}"))?;
        }
        if let Some(c) = t.condition {
            code_for(bundle, c, tf, "the condition").map_err(ctx)?;
        }
        let child = match &tf.body {
            Body::Net(child) => Some(child.places.len()),
            _ => None,
        };
        for (mi, (v, r)) in t.place_map.iter().enumerate() {
            let what = format!("place-map {mi}");
            match child {
                None => {
                    return Err(ctx(format!(
                        "{what} maps a virtual place, its function is not a net"
                    )));
                }
                Some(n) if v.index() >= n => {
                    return Err(ctx(format!(
                        "{what} names virtual place {}, the child net has {}",
                        v.0,
                        count(n, "place")
                    )));
                }
                Some(_) => {}
            }
            if r.index() >= places {
                return Err(ctx(format!(
                    "{what} names place {}, the net has {}",
                    r.0,
                    count(places, "place")
                )));
            }
        }
    }
    Ok(())
}

fn validate_code(bundle: &Bundle, code: &Code) -> Result<(), String> {
    span(bundle, code.span, "the span")?;
    if code.spans.len() != code.instrs.len() {
        return Err(format!(
            "{} spans for {} instructions",
            code.spans.len(),
            code.instrs.len()
        ));
    }
    let n = code.instrs.len();
    let slot = |s: u16| {
        if (s as usize) < code.slots.len() {
            Ok(())
        } else {
            Err(format!(
                "slot {s}, the code has {}",
                count(code.slots.len(), "slot")
            ))
        }
    };
    let path = |p: u32| {
        if (p as usize) < code.paths.len() {
            Ok(())
        } else {
            Err(format!(
                "field path {p}, the code has {}",
                count(code.paths.len(), "path")
            ))
        }
    };
    let constant = |c: u32| match code.consts.get(c as usize) {
        Some(v) => Ok(v),
        None => Err(format!(
            "constant {c}, the code has {}",
            count(code.consts.len(), "constant")
        )),
    };
    for (pc, i) in code.instrs.iter().enumerate() {
        let r = match *i {
            Instr::Const(c) => constant(c).map(|_| ()),
            Instr::Load(s) | Instr::Store(s) => slot(s),
            Instr::LoadPath(s, p) | Instr::StorePath(s, p) => slot(s).and_then(|()| path(p)),
            Instr::MakeShared(c) => constant(c).and_then(|v| match v {
                Value::String(_) => Ok(()),
                v => Err(format!(
                    "constant {c} = {v} as a shared place name, not a string"
                )),
            }),
            Instr::Jump(t) | Instr::JumpIfFalseElsePop(t) | Instr::JumpIfTrueElsePop(t) => {
                if (t as usize) <= n {
                    Ok(())
                } else {
                    Err(format!(
                        "jump target {t}, the code has {}",
                        count(n, "instruction")
                    ))
                }
            }
            Instr::Dup | Instr::Pop | Instr::Unary(..) | Instr::Binary(..) | Instr::Call(_) => {
                Ok(())
            }
        };
        r.map_err(|e| format!("instruction {pc} ({i:?}) names {e}"))?;
        span(
            bundle,
            code.spans[pc],
            &format!("the span of instruction {pc}"),
        )?;
    }
    for &s in &code.reads {
        slot(s).map_err(|e| format!("it reads {e}"))?;
    }
    Ok(())
}
