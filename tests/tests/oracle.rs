//! Runs the cases of `../shared/corpus/gpispace/ORACLE.toml` through the real `pnetc` and
//! `gspc-run` binaries, and compares the output tokens as multisets (or, for long outputs, by
//! the case's rule and token count). Every case runs twice: interpreted (`--jit=off`) and
//! JIT-compiled (`--jit=on`). Cases with `needs = "put_token"` run with a control socket
//! (`gspc-run --control`), and their `steps` are performed by the client subcommand
//! `gspc-run put-token`. Cases that need an expression plugin (a C++ library) are not run.
//! Prints the tally; fails on any case that does not pass.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use pnet_stdlib::Value;
use pnet_stdlib::literal::parse_literal;
use pnet_tests::oracle::{self, Case, cases};
use pnet_tests::{bin, gpispace, gpispace_lib};

fn parse(lit: &str) -> Value {
    parse_literal(lit).unwrap_or_else(|e| panic!("oracle literal {lit:?} does not parse: {e:?}"))
}

/// The expected tokens of a port described by the case's rule (for ports listed only in
/// `token_count`). Implements the rules the oracle states in words.
fn tokens_by_rule(rule: &str, count: usize) -> Option<Vec<Value>> {
    let rhs = rule.split_once(" = ")?.1;
    if rhs.starts_with("the first") && rhs.contains("strings over a-z") {
        // Length-then-alphabetical order: a..z, aa..zz, aaa...
        let mut out = Vec::with_capacity(count);
        let mut len = 1;
        while out.len() < count {
            let total = 26usize.pow(len as u32);
            for i in 0..total {
                if out.len() == count {
                    break;
                }
                let mut s = vec![b'a'; len];
                let mut k = i;
                for pos in (0..len).rev() {
                    s[pos] = b'a' + (k % 26) as u8;
                    k /= 26;
                }
                out.push(Value::string(std::str::from_utf8(&s).unwrap()));
            }
            len += 1;
        }
        return Some(out);
    }
    // `v0, v1, ..., vN (each value exactly once)`: an arithmetic sequence of literals.
    let items: Vec<&str> = rhs.split(" (").next()?.split(", ").collect();
    if items.len() == 4 && items[2] == "..." {
        let (first, last) = (items[0], items[3]);
        let suffix: String = first.chars().skip_while(|c| c.is_ascii_digit()).collect();
        let lo: u64 = first.trim_end_matches(suffix.as_str()).parse().ok()?;
        let hi: u64 = last.trim_end_matches(suffix.as_str()).parse().ok()?;
        return Some((lo..=hi).map(|i| parse(&format!("{i}{suffix}"))).collect());
    }
    None
}

fn run_case(case: &Case, work: &std::path::Path, jit: &str) -> Result<(), String> {
    let net = gpispace().join(&case.net);
    let bundle = work.join(format!("{}-{jit}.pnet", case.name));
    let o = Command::new(bin("pnetc"))
        .arg("-I")
        .arg(gpispace_lib())
        .arg(&net)
        .arg("-o")
        .arg(&bundle)
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(format!(
            "pnetc failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let mut run = Command::new(bin("gspc-run"));
    // The tokens as literals: they are compared as values of the language.
    run.arg(&bundle)
        .args(["--json", "--values=literal"])
        .arg(format!("--jit={jit}"));
    for (port, tokens) in &case.inputs {
        for t in tokens {
            run.arg("-p").arg(format!("{port}={t}"));
        }
    }
    let o = if case.needs.as_deref() == Some("put_token") {
        run_with_client(case, work, jit, run)?
    } else {
        run.output().map_err(|e| e.to_string())?
    };
    if !o.status.success() {
        return Err(format!(
            "gspc-run failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let doc: serde_json::Value =
        serde_json::from_slice(&o.stdout).map_err(|e| format!("gspc-run --json output: {e}"))?;
    let mut got: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    if let Some(ports) = doc["outputs"].as_object() {
        for (port, tokens) in ports {
            let mut vs: Vec<Value> = tokens
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| parse(t.as_str().unwrap_or("?")))
                .map(|v| if case.exact { v } else { sort_lists(v) })
                .collect();
            vs.sort();
            got.insert(port.clone(), vs);
        }
    }
    let empty = Vec::new();
    for (port, want) in &case.outputs {
        let mut want: Vec<Value> = want
            .iter()
            .map(|s| parse(s))
            .map(|v| if case.exact { v } else { sort_lists(v) })
            .collect();
        want.sort();
        let have = got.get(port).unwrap_or(&empty);
        if *have != want {
            return Err(format!(
                "port {port}: expected {}, got {}",
                show(&want),
                show(have)
            ));
        }
    }
    for (port, &count) in &case.token_count {
        let have = got.get(port).unwrap_or(&empty);
        if have.len() != count {
            return Err(format!(
                "port {port}: expected {count} tokens, got {}",
                have.len()
            ));
        }
        let rule = case.rule.as_deref().unwrap_or_default();
        let Some(mut want) = tokens_by_rule(rule, count) else {
            return Err(format!(
                "port {port}: the runner cannot evaluate the rule {rule:?}"
            ));
        };
        want.sort();
        if *have != want {
            return Err(format!("port {port}: tokens differ from the rule {rule:?}"));
        }
    }
    if case.exact {
        for (port, have) in &got {
            if !have.is_empty()
                && !case.outputs.contains_key(port)
                && !case.token_count.contains_key(port)
            {
                return Err(format!("port {port} must stay empty, got {}", show(have)));
            }
        }
    }
    Ok(())
}

/// For cases that are not exact because list order is not fixed: lists compared as multisets.
fn sort_lists(v: Value) -> Value {
    match v {
        Value::List(mut xs) => {
            xs.sort();
            Value::List(xs)
        }
        other => other,
    }
}

/// The client actions of a step such as `put_token on place 'value' the tokens 5UL, 7UL (one
/// call each)`: (place, literal) pairs; `None` for steps that are not put_token actions.
fn put_token_step(step: &str) -> Option<Vec<(String, String)>> {
    let rest = step.strip_prefix("put_token on place '")?;
    let (place, rest) = rest.split_once('\'')?;
    let values = if let Some(v) = rest.strip_prefix(" the tokens ") {
        v.split(" (")
            .next()?
            .split(", ")
            .map(str::to_string)
            .collect()
    } else {
        vec![rest.strip_prefix(" the token ")?.to_string()]
    };
    Some(
        values
            .into_iter()
            .map(|v| (place.to_string(), v.trim().to_string()))
            .collect(),
    )
}

/// Starts the run with a control socket, performs the case's put_token steps with the
/// `gspc-run put-token` client, and waits for the run's output.
fn run_with_client(
    case: &Case,
    work: &std::path::Path,
    jit: &str,
    mut run: Command,
) -> Result<std::process::Output, String> {
    let socket = work.join(format!("{}-{jit}.sock", case.name));
    let _ = std::fs::remove_file(&socket);
    run.arg("--control")
        .arg(&socket)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = run.spawn().map_err(|e| e.to_string())?;
    let mut actions = 0;
    for step in &case.steps {
        let Some(puts) = put_token_step(step) else {
            continue;
        };
        for (place, value) in puts {
            let o = Command::new(bin("gspc-run"))
                .args(["put-token", "--control"])
                .arg(&socket)
                .arg("--wait-for-socket=10")
                .arg(format!("{place}={value}"))
                .output()
                .map_err(|e| e.to_string())?;
            if !o.status.success() {
                return Err(format!(
                    "gspc-run put-token {place}={value} failed:\n{}",
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
            actions += 1;
        }
    }
    if actions == 0 {
        return Err(format!("no put_token step understood in {:?}", case.steps));
    }
    child.wait_with_output().map_err(|e| e.to_string())
}

fn show(vs: &[Value]) -> String {
    let items: Vec<String> = vs.iter().take(12).map(|v| v.to_string()).collect();
    let more = if vs.len() > 12 {
        format!(", ... ({} in all)", vs.len())
    } else {
        String::new()
    };
    format!("[{}{more}]", items.join(", "))
}

#[test]
fn oracle_cases_pass() {
    if !oracle::available() {
        return;
    }
    let all = cases();
    assert!(all.len() >= 35, "ORACLE.toml has {} cases", all.len());
    let work: PathBuf = std::env::temp_dir().join(format!("pnet-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let (mut passed, mut skipped) = (0, Vec::new());
    let mut failed = Vec::new();
    for case in &all {
        if let Some(needs) = case.needs.as_deref().filter(|n| *n != "put_token") {
            skipped.push(format!("{} (needs {needs})", case.name));
            continue;
        }
        for jit in ["off", "on"] {
            match run_case(case, &work, jit) {
                Ok(()) => passed += 1,
                Err(e) => failed.push(format!("{} (--jit={jit}): {e}", case.name)),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    println!(
        "oracle: {} cases, each run with --jit=off and --jit=on: {passed} runs passed, {} failed, {} cases not run here ({})",
        all.len(),
        failed.len(),
        skipped.len(),
        skipped.join(", ")
    );
    assert!(failed.is_empty(), "oracle failures:\n{}", failed.join("\n"));
}
