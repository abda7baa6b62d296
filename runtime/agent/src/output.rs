//! Printing a job's output tokens (`gspc-run` and `gspc wait` print them the same way).

use pnet_engine::Ending;
use pnet_stdlib::{Type, Value};

/// How to print the output tokens.
#[derive(Clone, Copy, Debug)]
pub enum Form<'a> {
    /// `PORT = VALUE` lines.
    Text,
    /// JSON with the tokens in the JSON encoding of values (the module protocol's and
    /// `pnetget --json`'s, `pnet_stdlib::json`), each port with its type: the root's out
    /// ports and their types.
    Json(&'a [(String, Type)]),
    /// JSON with the tokens as strings in the literal syntax (`--values=literal`).
    JsonLiteral,
}

/// The output tokens as text: one line `PORT = VALUE` per token, ports in alphabetical
/// order, the tokens of a port in the value order of the language. As JSON, one object on
/// one line: `{"outputs": OUTPUTS, "firings": N, "tasks": N, "ending": {...}}` (`ending` as
/// [`Ending::to_json`]), OUTPUTS as `pnetget --json` prints them (`{PORT: {"type": T,
/// "tokens": [...]}}`, [`pnet_tokens::json`]) or, literal, `{PORT: ["VALUE", ...]}`. The text
/// form leaves the ending out: see [`ending_warning`].
pub fn format_outputs(
    outputs: &[(String, Vec<Value>)],
    firings: u64,
    tasks: u64,
    ending: &Ending,
    form: Form<'_>,
) -> String {
    let sorted = pnet_bundle::result::sort_outputs(
        outputs
            .iter()
            .map(|(name, tokens)| (name.as_str(), tokens.as_slice())),
    );
    if let Form::Json(types) = form {
        let file = pnet_bundle::result::RunOutputs::from_parts("", types, outputs);
        let ports = pnet_tokens::json(&file, &[])
            .map(|mut j| j["outputs"].take())
            .unwrap_or_default();
        let doc = serde_json::json!({
            "outputs": ports,
            "firings": firings,
            "tasks": tasks,
            "ending": ending.to_json(),
        });
        return format!("{doc}\n");
    }
    if matches!(form, Form::JsonLiteral) {
        let ports: serde_json::Map<String, serde_json::Value> = sorted
            .iter()
            .map(|(p, ts)| {
                (
                    p.to_string(),
                    ts.iter()
                        .map(|t| serde_json::Value::String(t.to_string()))
                        .collect(),
                )
            })
            .collect();
        let doc = serde_json::json!({
            "outputs": ports,
            "firings": firings,
            "tasks": tasks,
            "ending": ending.to_json(),
        });
        format!("{doc}\n")
    } else {
        pnet_bundle::result::output_lines(&sorted)
    }
}

/// The warning a job that stopped early gets on stderr (`PROGRAM: warning: the net stopped
/// with tokens left on: p (2); out port `r` is empty; ...`), or `None` when it ended complete.
pub fn ending_warning(program: &str, ending: &Ending) -> Option<String> {
    (!ending.is_complete()).then(|| format!("{program}: warning: {ending}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_lines_and_json() {
        let outs = vec![
            ("ys".to_string(), vec![Value::Long(3), Value::Long(1)]),
            ("a".to_string(), vec![Value::Control]),
        ];
        assert_eq!(
            format_outputs(&outs, 5, 2, &Ending::default(), Form::Text),
            "a = []\nys = 1L\nys = 3L\n"
        );
        let j: serde_json::Value = serde_json::from_str(&format_outputs(
            &outs,
            5,
            2,
            &Ending::default(),
            Form::JsonLiteral,
        ))
        .unwrap();
        assert_eq!(j["outputs"]["ys"], serde_json::json!(["1L", "3L"]));
        // The JSON encoding of values, as pnetget --json prints them, with the types.
        let types = vec![
            ("a".to_string(), Type::Control),
            ("ys".to_string(), Type::Long),
        ];
        let plain: serde_json::Value = serde_json::from_str(&format_outputs(
            &outs,
            5,
            2,
            &Ending::default(),
            Form::Json(&types),
        ))
        .unwrap();
        assert_eq!(
            plain["outputs"],
            serde_json::json!({
                "a": {"type": "control", "tokens": [null]},
                "ys": {"type": "long", "tokens": [1, 3]},
            })
        );
        assert_eq!(plain["tasks"], 2);
        assert_eq!(j["firings"], 5);
        assert_eq!(j["tasks"], 2);
        assert_eq!(j["ending"]["complete"], true);
        assert_eq!(ending_warning("gspc-run", &Ending::default()), None);
        let e = Ending {
            empty_outputs: vec!["r".into()],
            ..Ending::default()
        };
        assert_eq!(
            ending_warning("gspc-run", &e).as_deref(),
            Some("gspc-run: warning: the net stopped: out port `r` is empty")
        );
    }
}
