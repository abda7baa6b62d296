//! Result files: the output tokens of a finished run with their types (`gspc-run --result
//! FILE`, `gspc wait --result FILE`), read back by `pnetget`. The container is the bundle's
//! ([`crate::format::Container`]) with its own magic.

use pnet_stdlib::{Type, Value};
use serde::{Deserialize, Serialize};

use crate::Bundle;
use crate::format::{BundleError, Container};

pub const RESULT: Container = Container {
    magic: b"PNETRSLT",
    version: 2,
    what: "result file",
    fix: "run the net again with this version",
};

/// The output tokens of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOutputs {
    /// The net that ran (as given to the runner).
    pub net: String,
    /// The root's out ports in port order.
    pub ports: Vec<OutputPort>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputPort {
    pub name: String,
    pub ty: Type,
    pub tokens: Vec<Value>,
}

impl RunOutputs {
    /// The outputs of a run of `bundle` (its root's out ports, with their types; ports
    /// missing from `outputs` have no tokens).
    pub fn new(bundle: &Bundle, net: &str, outputs: &[(String, Vec<Value>)]) -> RunOutputs {
        RunOutputs::from_parts(net, &output_types(bundle), outputs)
    }

    /// The outputs from the root's out port types (see [`output_types`]) and the tokens.
    pub fn from_parts(
        net: &str,
        types: &[(String, Type)],
        outputs: &[(String, Vec<Value>)],
    ) -> RunOutputs {
        let ports = types
            .iter()
            .map(|(name, ty)| OutputPort {
                name: name.clone(),
                ty: ty.clone(),
                tokens: outputs
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, t)| t.clone())
                    .unwrap_or_default(),
            })
            .collect();
        RunOutputs {
            net: net.to_string(),
            ports,
        }
    }

    pub fn encode(&self) -> Result<Vec<u8>, BundleError> {
        RESULT.encode(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<RunOutputs, BundleError> {
        RESULT.decode(bytes)
    }

    pub fn port(&self, name: &str) -> Option<&OutputPort> {
        self.ports.iter().find(|p| p.name == name)
    }

    /// The ports in alphabetical order, each port's tokens in the value order of the
    /// language: the order `gspc-run` prints them in.
    pub fn sorted(&self) -> Vec<(&str, Vec<&Value>)> {
        sort_outputs(
            self.ports
                .iter()
                .map(|p| (p.name.as_str(), p.tokens.as_slice())),
        )
    }
}

/// Output tokens in printing order: ports in alphabetical order, each port's tokens in the
/// value order of the language.
pub fn sort_outputs<'a>(
    ports: impl IntoIterator<Item = (&'a str, &'a [Value])>,
) -> Vec<(&'a str, Vec<&'a Value>)> {
    let mut ports: Vec<(&str, Vec<&Value>)> = ports
        .into_iter()
        .map(|(name, tokens)| {
            let mut tokens: Vec<&Value> = tokens.iter().collect();
            tokens.sort();
            (name, tokens)
        })
        .collect();
    ports.sort_by(|a, b| a.0.cmp(b.0));
    ports
}

/// Sorted outputs (see [`sort_outputs`]) as text: one line `PORT = VALUE` per token, as
/// `gspc-run`, `gspc wait` and `pnetget` print them.
pub fn output_lines(sorted: &[(&str, Vec<&Value>)]) -> String {
    let mut out = String::new();
    for (name, tokens) in sorted {
        for t in tokens {
            out.push_str(&format!("{name} = {t}\n"));
        }
    }
    out
}

/// The names and types of the root's out (and inout) ports, in port order.
pub fn output_types(bundle: &Bundle) -> Vec<(String, Type)> {
    bundle
        .function(bundle.root)
        .ports
        .iter()
        .filter(|p| p.dir.is_output())
        .map(|p| (p.name.clone(), p.ty.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{BUNDLE, BundleError};

    fn outputs() -> RunOutputs {
        RunOutputs {
            net: "n.pnet".into(),
            ports: vec![OutputPort {
                name: "sum".into(),
                ty: Type::Long,
                tokens: vec![Value::Long(3), Value::Long(-1)],
            }],
        }
    }

    #[test]
    fn round_trips_and_refuses_other_files() {
        let bytes = outputs().encode().unwrap();
        assert_eq!(RunOutputs::decode(&bytes).unwrap(), outputs());
        assert_eq!(outputs().port("sum").unwrap().tokens.len(), 2);
        let e = RunOutputs::decode(b"PNETBNDL and more bytes than a header").unwrap_err();
        assert_eq!(e.to_string(), "not a pnet result file (bad magic number)");
        let mut bad = bytes.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(matches!(
            RunOutputs::decode(&bad),
            Err(BundleError::ChecksumMismatch { .. })
        ));
        let e = RunOutputs::decode(&bytes[..20]).unwrap_err();
        assert_eq!(e.to_string(), "result file is truncated");
        let e = BUNDLE.decode::<RunOutputs>(&bytes).unwrap_err();
        assert_eq!(e.to_string(), "not a pnet bundle (bad magic number)");
    }
}
