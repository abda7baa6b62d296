//! The cases of `../shared/corpus/gpispace/ORACLE.toml` (GPI-Space nets with inputs and the
//! outputs GPI-Space gives), read once for every test that runs them: the `gspc-run` runner
//! (`tests/tests/oracle.rs`), the engine-against-explorer test and pnetv's coloured corpus
//! test. Values stay literal strings; each test reads them as it needs.

use std::collections::BTreeMap;

use crate::gpispace;

/// One `[[case]]`.
pub struct Case {
    pub name: String,
    /// The net, relative to the GPI-Space corpus.
    pub net: String,
    /// Per in port, its tokens (literals).
    pub inputs: Vec<(String, Vec<String>)>,
    /// Per out port, the expected tokens (literals, a multiset).
    pub outputs: BTreeMap<String, Vec<String>>,
    /// Per out port, the expected number of tokens (long outputs, described by `rule`).
    pub token_count: BTreeMap<String, usize>,
    /// The expected tokens in words (for ports listed only in `token_count`).
    pub rule: Option<String>,
    /// Whether ports not listed in `outputs` must stay empty.
    pub exact: bool,
    /// What running the case needs beyond inputs (`put_token`, `plugin`).
    pub needs: Option<String>,
    /// `put_token` steps.
    pub steps: Vec<String>,
}

/// Whether the ORACLE file is there (it is not on a laptop without `../shared`); when it is
/// not, prints why the calling test does nothing.
pub fn available() -> bool {
    if crate::corpus_absent() {
        return false;
    }
    let there = gpispace().join("ORACLE.toml").exists();
    if !there {
        println!(
            "skipped: {} is absent",
            gpispace().join("ORACLE.toml").display()
        );
    }
    there
}

fn strings(v: &toml::Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Every case, in the file's order. Panics when the file is absent or malformed (check
/// [`available`] first).
pub fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(gpispace().join("ORACLE.toml")).expect("ORACLE.toml");
    let doc: toml::Table = text.parse().expect("ORACLE.toml parses");
    let table = |c: &toml::Value, key: &str| -> Vec<(String, toml::Value)> {
        c.get(key)
            .and_then(|t| t.as_table())
            .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    };
    doc["case"]
        .as_array()
        .expect("[[case]]")
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().unwrap().to_string(),
            net: c["net"].as_str().unwrap().to_string(),
            inputs: table(c, "inputs")
                .into_iter()
                .map(|(k, v)| (k, strings(&v)))
                .collect(),
            outputs: table(c, "outputs")
                .into_iter()
                .map(|(k, v)| (k, strings(&v)))
                .collect(),
            token_count: table(c, "token_count")
                .into_iter()
                .map(|(k, v)| (k, v.as_integer().unwrap() as usize))
                .collect(),
            rule: c.get("rule").and_then(|r| r.as_str()).map(str::to_string),
            exact: c.get("exact").and_then(|e| e.as_bool()).unwrap_or(true),
            needs: c.get("needs").and_then(|n| n.as_str()).map(str::to_string),
            steps: c.get("steps").map(strings).unwrap_or_default(),
        })
        .collect()
}
