//! Bundle validation: every index in range, every code well-formed, so that the engine and
//! the interpreter never index out of bounds on a malformed bundle.

use pnet_bundle::{Body, Bundle, Code, CodeId, ConnectKind, Function, Instr, Net};
use pnet_stdlib::{Type, Value};

/// Checks a bundle once at load. The message names the offending item.
pub fn validate(bundle: &Bundle) -> Result<(), String> {
    if bundle.root.index() >= bundle.functions.len() {
        return Err(format!("root function {} does not exist", bundle.root.0));
    }
    for (i, code) in bundle.codes.iter().enumerate() {
        validate_code(code).map_err(|e| format!("code {i} ({}): {e}", code.name))?;
    }
    for (i, f) in bundle.functions.iter().enumerate() {
        let name = f.name.as_deref().unwrap_or("<anonymous>");
        validate_function(bundle, f).map_err(|e| format!("function {i} ({name}): {e}"))?;
    }
    Ok(())
}

fn code_for<'b>(bundle: &'b Bundle, id: CodeId, f: &Function) -> Result<&'b Code, String> {
    let code = bundle
        .codes
        .get(id.index())
        .ok_or_else(|| format!("code {} does not exist", id.0))?;
    if code.slots.len() < f.ports.len() {
        return Err(format!(
            "code {} has {} slots for {} ports",
            id.0,
            code.slots.len(),
            f.ports.len()
        ));
    }
    Ok(code)
}

fn validate_function(bundle: &Bundle, f: &Function) -> Result<(), String> {
    match &f.body {
        Body::Expression(c) => {
            code_for(bundle, *c, f)?;
        }
        Body::Module(m) => {
            if let Some(c) = m.eureka_group {
                code_for(bundle, c, f)?;
            }
        }
        Body::Modules { modules, .. } => {
            if modules.is_empty() {
                return Err("no module in `modules`".into());
            }
            for m in modules {
                if let Some(c) = m.eureka_group {
                    code_for(bundle, c, f)?;
                }
            }
        }
        Body::Net(net) => validate_net(bundle, f, net)?,
    }
    Ok(())
}

fn validate_net(bundle: &Bundle, f: &Function, net: &Net) -> Result<(), String> {
    for p in &f.ports {
        if let Some(pl) = p.place
            && pl.index() >= net.places.len()
        {
            return Err(format!(
                "port `{}` is bound to missing place {}",
                p.name, pl.0
            ));
        }
    }
    for place in &net.places {
        if place.generator && !generator_type(&place.ty) {
            return Err(format!(
                "generator place `{}` has a type without a generator",
                place.name
            ));
        }
    }
    for t in &net.transitions {
        let ctx = |e: String| format!("transition `{}`: {e}", t.name);
        let tf = bundle
            .functions
            .get(t.function.index())
            .ok_or_else(|| ctx(format!("function {} does not exist", t.function.0)))?;
        for c in &t.connections {
            if c.port.index() >= tf.ports.len() {
                return Err(ctx(format!("connection to missing port {}", c.port.0)));
            }
            if c.place.index() >= net.places.len() {
                return Err(ctx(format!("connection to missing place {}", c.place.0)));
            }
            let port = &tf.ports[c.port.index()];
            let ok = match c.kind {
                ConnectKind::In | ConnectKind::Read | ConnectKind::NumberOfTokens => {
                    port.dir.is_input() || matches!(port.dir, pnet_bundle::PortDir::Tunnel)
                }
                ConnectKind::Out | ConnectKind::OutMany => {
                    port.dir.is_output() || matches!(port.dir, pnet_bundle::PortDir::Tunnel)
                }
            };
            if !ok {
                return Err(ctx(format!(
                    "{:?} connection to port `{}` of the wrong direction",
                    c.kind, port.name
                )));
            }
        }
        for r in &t.responses {
            if r.port.index() >= tf.ports.len() || r.to.index() >= tf.ports.len() {
                return Err(ctx("response with a missing port".into()));
            }
        }
        for p in &t.eureka_ports {
            if p.index() >= tf.ports.len() {
                return Err(ctx("eureka connection to a missing port".into()));
            }
        }
        if let Some(c) = t.condition {
            code_for(bundle, c, tf).map_err(ctx)?;
        }
        if let Body::Net(child) = &tf.body {
            for (v, r) in &t.place_map {
                if v.index() >= child.places.len() || r.index() >= net.places.len() {
                    return Err(ctx("place-map with a missing place".into()));
                }
            }
        }
    }
    Ok(())
}

/// Types a generator place may have.
pub(crate) fn generator_type(ty: &Type) -> bool {
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

fn validate_code(code: &Code) -> Result<(), String> {
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
            Err(format!("slot {s} out of range"))
        }
    };
    let path = |p: u32| {
        if (p as usize) < code.paths.len() {
            Ok(())
        } else {
            Err(format!("path {p} out of range"))
        }
    };
    for (pc, i) in code.instrs.iter().enumerate() {
        let r = match *i {
            Instr::Const(c) => {
                if (c as usize) < code.consts.len() {
                    Ok(())
                } else {
                    Err(format!("constant {c} out of range"))
                }
            }
            Instr::Load(s) | Instr::Store(s) => slot(s),
            Instr::LoadPath(s, p) | Instr::StorePath(s, p) => slot(s).and_then(|()| path(p)),
            Instr::MakeShared(c) => match code.consts.get(c as usize) {
                Some(Value::String(_)) => Ok(()),
                _ => Err(format!("shared place constant {c} is not a string")),
            },
            Instr::Jump(t) | Instr::JumpIfFalseElsePop(t) | Instr::JumpIfTrueElsePop(t) => {
                if (t as usize) <= n {
                    Ok(())
                } else {
                    Err(format!("jump target {t} out of range"))
                }
            }
            Instr::Dup | Instr::Pop | Instr::Unary(..) | Instr::Binary(..) | Instr::Call(_) => {
                Ok(())
            }
        };
        r.map_err(|e| format!("instruction {pc}: {e}"))?;
    }
    for &s in &code.reads {
        slot(s)?;
    }
    Ok(())
}
