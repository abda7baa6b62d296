//! The one check of a job's inputs against the root's in ports, for every tool that takes them
//! (the engine, `gspc-run -p` before workers start, pnetv's explorer, `pnetput`), with the
//! suggestions users need: the nearest port and the list of in ports for an unknown one, the
//! literal to write or the missing field for a value of another type.

use pnet_stdlib::suggest::{mismatch_hint, nearest};
use pnet_stdlib::{Type, Value};

use crate::{Function, Port};

/// The in port `name` of `f`, or why there is none (with the nearest name and the in ports).
pub fn in_port<'f>(f: &'f Function, name: &str) -> Result<&'f Port, String> {
    let ins: Vec<&Port> = f.ports.iter().filter(|p| p.dir.is_input()).collect();
    if let Some(port) = ins.iter().find(|p| p.name == name) {
        return Ok(port);
    }
    let mut msg = format!("the net has no in port `{name}`");
    if let Some(near) = nearest(name, ins.iter().map(|p| p.name.as_str())) {
        msg.push_str(&format!("; did you mean `{near}`?"));
    }
    let listed: Vec<String> = ins
        .iter()
        .map(|p| format!("{} ({})", p.name, p.ty))
        .collect();
    msg.push_str(&format!(
        " (its in ports: {})",
        if listed.is_empty() {
            "none".to_string()
        } else {
            listed.join(", ")
        }
    ));
    Err(msg)
}

/// Whether `value` may go where `ty` is expected (`what`: "port `n`", "place `p`"), or why
/// not, with a hint where one is known (`write 100L`, the missing field).
pub fn check_value(value: &Value, ty: &Type, what: &str) -> Result<(), String> {
    if value.fits(ty) {
        return Ok(());
    }
    let mut msg = format!("value {value} for {what} is not of type {ty}");
    if let Some(hint) = mismatch_hint(value, ty) {
        msg.push_str(&format!(": {hint}"));
    }
    Err(msg)
}
