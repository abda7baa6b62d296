//! Printing a job's output tokens (`gspc-run` and `gspc wait` print them the same way).

use pnet_engine::Ending;
use pnet_stdlib::Value;

/// The output tokens as text: one line `PORT = VALUE` per token, ports in alphabetical
/// order, the tokens of a port in the value order of the language; with `json`, one JSON
/// object `{"outputs": {PORT: [VALUE, ...]}, "firings": N, "tasks": N, "ending": {...}}` on
/// one line (`ending` as [`Ending::to_json`]). The text form leaves the ending out: see
/// [`ending_warning`].
pub fn format_outputs(
    outputs: &[(String, Vec<Value>)],
    firings: u64,
    tasks: u64,
    ending: &Ending,
    json: bool,
) -> String {
    let sorted = pnet_bundle::result::sort_outputs(
        outputs
            .iter()
            .map(|(name, tokens)| (name.as_str(), tokens.as_slice())),
    );
    if json {
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
            format_outputs(&outs, 5, 2, &Ending::default(), false),
            "a = []\nys = 1L\nys = 3L\n"
        );
        let j: serde_json::Value =
            serde_json::from_str(&format_outputs(&outs, 5, 2, &Ending::default(), true)).unwrap();
        assert_eq!(j["outputs"]["ys"], serde_json::json!(["1L", "3L"]));
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
