//! `pnetput` and `pnetget`: GPI-Space's tools for tokens outside a run.
//!
//! - `pnetget` reads a result file ([`pnet_bundle::result::RunOutputs`], written by
//!   `gspc-run --result FILE` and `gspc wait JOB --result FILE`) and prints its output tokens in
//!   the literal syntax (`PORT = VALUE`, as `gspc-run` prints them) or as JSON (the typed JSON
//!   encoding of `pnet_stdlib::json`, the one modules see).
//! - `pnetput` puts input tokens into a bundle, so that it runs without `-p` arguments.

use pnet_bundle::result::RunOutputs;
use serde_json::{Map, Value as Json};

/// Which ports to print: all, or the named ones (each must exist).
fn select<'a>(
    outputs: &'a RunOutputs,
    ports: &[String],
) -> Result<Vec<(&'a str, Vec<&'a pnet_stdlib::Value>)>, String> {
    for p in ports {
        if outputs.port(p).is_none() {
            let names: Vec<&str> = outputs.ports.iter().map(|p| p.name.as_str()).collect();
            return Err(format!(
                "the net {} has no output port `{p}` (its output ports: {})",
                outputs.net,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
        }
    }
    Ok(outputs
        .sorted()
        .into_iter()
        .filter(|(name, _)| ports.is_empty() || ports.iter().any(|p| p == name))
        .collect())
}

/// `PORT = VALUE` lines, ports in alphabetical order, tokens in value order.
pub fn text(outputs: &RunOutputs, ports: &[String]) -> Result<String, String> {
    Ok(pnet_bundle::result::output_lines(&select(outputs, ports)?))
}

/// `{"net": ..., "outputs": {"PORT": {"type": "...", "tokens": [...]}}}`.
pub fn json(outputs: &RunOutputs, ports: &[String]) -> Result<Json, String> {
    let mut map = Map::new();
    for (name, tokens) in select(outputs, ports)? {
        let ty = outputs
            .port(name)
            .map(|p| p.ty.to_string())
            .unwrap_or_default();
        map.insert(
            name.to_string(),
            serde_json::json!({
                "type": ty,
                "tokens": tokens.into_iter().map(pnet_stdlib::json::to_json).collect::<Vec<_>>(),
            }),
        );
    }
    Ok(serde_json::json!({ "net": outputs.net, "outputs": map }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pnet_bundle::result::OutputPort;
    use pnet_stdlib::{Type, Value};

    fn outputs() -> RunOutputs {
        RunOutputs {
            net: "sum.pnet".into(),
            ports: vec![
                OutputPort {
                    name: "sum".into(),
                    ty: Type::Long,
                    tokens: vec![Value::Long(7), Value::Long(-2)],
                },
                OutputPort {
                    name: "done".into(),
                    ty: Type::Control,
                    tokens: vec![Value::Control],
                },
            ],
        }
    }

    #[test]
    fn prints_like_gspc_run() {
        assert_eq!(
            text(&outputs(), &[]).unwrap(),
            "done = []\nsum = -2L\nsum = 7L\n"
        );
        assert_eq!(
            text(&outputs(), &["sum".into()]).unwrap(),
            "sum = -2L\nsum = 7L\n"
        );
        let e = text(&outputs(), &["nope".into()]).unwrap_err();
        assert_eq!(
            e,
            "the net sum.pnet has no output port `nope` (its output ports: sum, done)"
        );
    }

    #[test]
    fn json_is_typed() {
        let j = json(&outputs(), &[]).unwrap();
        assert_eq!(
            j,
            serde_json::json!({
                "net": "sum.pnet",
                "outputs": {
                    "done": {"type": "control", "tokens": [null]},
                    "sum": {"type": "long", "tokens": [-2, 7]},
                }
            })
        );
    }
}

/// Where `pnetput` puts a token.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// An in (or inout) port of the root: the token goes on the place bound to it.
    Port(String),
    /// A place of the root net, by name.
    Place(String),
}

/// Puts `value` into `bundle` as an initial token, so that every run starts with it (after
/// the place's own initial tokens, before any `-p` of the run). The value must fit the type.
/// A bundle from [`pnet_bundle::format::decode`] is well-formed; one built otherwise is
/// refused when its root or the port's place does not exist, never a panic.
pub fn put(
    bundle: &mut pnet_bundle::Bundle,
    target: &Target,
    value: pnet_stdlib::Value,
) -> Result<(), String> {
    let root = bundle.root;
    let f = bundle
        .functions
        .get(root.index())
        .ok_or_else(|| format!("bad bundle: the root function {} does not exist", root.0))?;
    let pnet_bundle::Body::Net(net) = &f.body else {
        return Err("the net's root is not a net (it has no places to put tokens on)".into());
    };
    let (place, what) = match target {
        Target::Port(name) => {
            let port = pnet_bundle::inputs::in_port(f, name)?;
            let place = port
                .place
                .ok_or_else(|| format!("in port `{name}` is bound to no place"))?;
            (place.index(), format!("port `{name}`"))
        }
        Target::Place(name) => {
            let i = net
                .places
                .iter()
                .position(|p| p.name == *name)
                .ok_or_else(|| format!("the net has no place `{name}`"))?;
            (i, format!("place `{name}`"))
        }
    };
    let ty = &net
        .places
        .get(place)
        .ok_or_else(|| format!("bad bundle: {what} is bound to missing place {place}"))?
        .ty;
    pnet_bundle::inputs::check_value(&value, ty, &what)?;
    if let pnet_bundle::Body::Net(net) = &mut bundle.functions[root.index()].body {
        net.places[place].tokens.push(value);
    }
    Ok(())
}

/// The root's in ports with their types and the tokens already put on their places (none for
/// a root or place that does not exist).
pub fn listing(bundle: &pnet_bundle::Bundle) -> String {
    let mut out = String::new();
    let Some(f) = bundle.functions.get(bundle.root.index()) else {
        return out;
    };
    for p in f.ports.iter().filter(|p| p.dir.is_input()) {
        let tokens: Vec<String> = match (&f.body, p.place) {
            (pnet_bundle::Body::Net(net), Some(place)) => net
                .places
                .get(place.index())
                .map(|p| p.tokens.iter().map(ToString::to_string).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        out.push_str(&format!(
            "in {} : {} = [{}]\n",
            p.name,
            p.ty,
            tokens.join(", ")
        ));
    }
    out
}
