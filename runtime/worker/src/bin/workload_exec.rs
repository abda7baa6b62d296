//! `workload_exec`: the command module that runs the tasks of workload descriptions
//! (`.workload` files, see `grammar/workload.md`).
//!
//! The worker starts it as `workload_exec FUNCTION` (the generated net names one function
//! per task, e.g. `t2_square`; the name does not matter here) with a JSON object on
//! standard input:
//!
//! - `spec`: `{"task", "instances", "executable", "arguments", "outputs", "done"}`, the task's
//!   static description (`outputs` lists the output ports as `name:TYPE`, space-separated;
//!   `done` says whether the net wants a control output `done`);
//! - `args`: `{"instance": N, "in_PORT": value, ...}`, the instance number and the input
//!   ports (a list for a port that gathers the values of several instances);
//! - `sync1`, `sync2`, ...: control tokens (ignored).
//!
//! It runs `executable` with `arguments` split into words like a shell does (`'...'`
//! literally, `"..."` with `\"`, `\\`, `\$` escapes, `\` outside quotes escapes the next
//! character), after replacing `${PORT}` outside single quotes by the port's value (a list:
//! its values separated by spaces; a word that is exactly `${PORT}` becomes one word per
//! value). The environment has one variable per input port (its name with `-` as `_`; a list
//! as values separated by spaces), `WORKLOAD_TASK`, `WORKLOAD_INSTANCE` and
//! `WORKLOAD_INSTANCES`.
//!
//! The program's standard output gives the output ports: with one output port, all of it
//! (leading and trailing white space removed); with several, one line `PORT=VALUE` per port
//! (other lines are ignored). INTEGER values are 64-bit signed numbers. A failure (the
//! program cannot start, exits with a non-zero status or a signal, prints no value for a
//! port or an INTEGER that is not a number) is reported on standard error and exits with
//! status 1, which fails the task.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};

use serde_json::{Map, Value as Json};

/// workload_exec: runs one instance of a workload task (a command module for gspc-worker)
///
/// Generated nets (from .workload files) call it as module `workload_exec`, with one function
/// name per task (any name is accepted); the worker finds it in its own folder. Standard
/// input: a JSON object with `spec` (task, instances, executable, arguments, outputs, done)
/// and `args` (instance, in_PORT...). Standard output: a JSON object with `out_PORT` for each
/// output port (and `done`). See grammar/workload.md for the rules (substitutions,
/// environment, output parsing).
#[derive(clap::Parser)]
#[command(
    name = "workload_exec",
    override_usage = "workload_exec FUNCTION < INPUTS.json",
    after_help = "Example:\n  echo '{\"spec\": {...}, \"args\": {...}}' | workload_exec t1_square"
)]
struct Cli {
    /// The task's function name (any name is accepted)
    #[arg(value_name = "FUNCTION")]
    _function: std::ffi::OsString,
}

fn main() -> ExitCode {
    let _: Cli = pnet_stdlib::parse_args!(Cli, "workload_exec");
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        pnet_stdlib::errln!("workload_exec: cannot read standard input: {e}");
        return ExitCode::from(1);
    }
    match run(&input) {
        Ok(out) => {
            let mut stdout = std::io::stdout();
            if let Err(e) = writeln!(stdout, "{out}").and_then(|()| stdout.flush()) {
                pnet_stdlib::errln!("workload_exec: cannot write to standard output: {e}");
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(msg) => {
            pnet_stdlib::errln!("workload_exec: {msg}");
            ExitCode::from(1)
        }
    }
}

/// The parsed inputs of one call.
#[derive(Debug)]
struct Call {
    task: String,
    instance: i64,
    instances: i64,
    executable: String,
    arguments: String,
    /// (name, type) of the output ports
    outputs: Vec<(String, String)>,
    done: bool,
    /// Input ports by name (`-` written as `_`), in name order.
    inputs: BTreeMap<String, Vec<String>>,
}

fn run(input: &str) -> Result<String, String> {
    let call = parse_call(input)?;
    let argv = split_arguments(&call.arguments, &call)
        .map_err(|e| format!("task `{}`: ARGUMENTS: {e}", call.task))?;
    let who = format!("task `{}` instance {}", call.task, call.instance);
    let mut cmd = Command::new(&call.executable);
    cmd.args(&argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .env("WORKLOAD_TASK", &call.task)
        .env("WORKLOAD_INSTANCE", call.instance.to_string())
        .env("WORKLOAD_INSTANCES", call.instances.to_string());
    for (name, values) in &call.inputs {
        cmd.env(name, values.join(" "));
    }
    let out = cmd
        .output()
        .map_err(|e| format!("{who}: cannot run `{}`: {e}", call.executable))?;
    if !out.status.success() {
        use std::os::unix::process::ExitStatusExt;
        let how = match (out.status.code(), out.status.signal()) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            (None, None) => "failed".to_string(),
        };
        return Err(format!(
            "{who}: `{}` {how} (its standard error is above)",
            call.executable
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    outputs(&call, &stdout)
        .map(|o| Json::Object(o).to_string())
        .map_err(|e| format!("{who}: {e}"))
}

fn field<'a>(obj: &'a Json, path: &str, key: &str) -> Result<&'a Json, String> {
    obj.get(key).ok_or_else(|| {
        format!("the inputs have no `{path}{key}` (is this net generated from a .workload file?)")
    })
}

fn string_field(obj: &Json, path: &str, key: &str) -> Result<String, String> {
    match field(obj, path, key)? {
        Json::String(s) => Ok(s.clone()),
        other => Err(format!("`{path}{key}` is not a string: {other}")),
    }
}

fn int_field(obj: &Json, path: &str, key: &str) -> Result<i64, String> {
    field(obj, path, key)?
        .as_i64()
        .ok_or_else(|| format!("`{path}{key}` is not an integer"))
}

/// The text of one value given to the program.
fn text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    }
}

fn parse_call(input: &str) -> Result<Call, String> {
    let json: Json = serde_json::from_str(input)
        .map_err(|e| format!("the inputs are not a JSON object: {e}"))?;
    let spec = field(&json, "", "spec")?;
    let args = field(&json, "", "args")?;
    let outputs = string_field(spec, "spec.", "outputs")?
        .split_whitespace()
        .map(|o| match o.split_once(':') {
            Some((n, t)) => (n.to_string(), t.to_string()),
            None => (o.to_string(), "STRING".to_string()),
        })
        .collect();
    let mut inputs = BTreeMap::new();
    if let Json::Object(m) = args {
        for (k, v) in m {
            if let Some(name) = k.strip_prefix("in_") {
                let values = match v {
                    Json::Array(items) => items.iter().map(text).collect(),
                    other => vec![text(other)],
                };
                inputs.insert(name.to_string(), values);
            }
        }
    }
    Ok(Call {
        task: string_field(spec, "spec.", "task")?,
        instance: int_field(args, "args.", "instance")?,
        instances: int_field(spec, "spec.", "instances")?,
        executable: string_field(spec, "spec.", "executable")?,
        arguments: string_field(spec, "spec.", "arguments")?,
        outputs,
        done: field(spec, "spec.", "done")?.as_bool().unwrap_or(false),
        inputs,
    })
}

/// The values of `${name}`: an input port (`-` and `_` alike) or a WORKLOAD_ variable.
fn lookup(call: &Call, name: &str) -> Option<Vec<String>> {
    match name {
        "WORKLOAD_TASK" => return Some(vec![call.task.clone()]),
        "WORKLOAD_INSTANCE" => return Some(vec![call.instance.to_string()]),
        "WORKLOAD_INSTANCES" => return Some(vec![call.instances.to_string()]),
        _ => {}
    }
    call.inputs.get(&name.replace('-', "_")).cloned()
}

/// Splits ARGUMENTS into words, substituting `${PORT}` outside single quotes.
fn split_arguments(args: &str, call: &Call) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let chars: Vec<char> = args.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                i += 1;
            }
            '\'' => {
                in_word = true;
                let end = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '\'')
                    .ok_or("a single quote is not closed")?;
                word.extend(&chars[i + 1..i + 1 + end]);
                i += end + 2;
            }
            '"' => {
                in_word = true;
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("a double quote is not closed".into()),
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some('\\') if matches!(chars.get(i + 1), Some('"' | '\\' | '$')) => {
                            word.push(chars[i + 1]);
                            i += 2;
                        }
                        Some('$') if chars.get(i + 1) == Some(&'{') => {
                            let (values, next) = substitution(&chars, i, call)?;
                            word.push_str(&values.join(" "));
                            i = next;
                        }
                        Some(&c) => {
                            word.push(c);
                            i += 1;
                        }
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(&n) = chars.get(i + 1) {
                    word.push(n);
                }
                i += 2;
            }
            '$' if chars.get(i + 1) == Some(&'{') => {
                let (values, next) = substitution(&chars, i, call)?;
                let alone = !in_word && chars.get(next).is_none_or(|c| c.is_whitespace());
                if alone {
                    // `${PORT}` as a whole word: one word per value
                    words.extend(values);
                } else {
                    in_word = true;
                    word.push_str(&values.join(" "));
                }
                i = next;
            }
            c => {
                in_word = true;
                word.push(c);
                i += 1;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// `${name}` at `chars[i]`: the values and the index after the `}`.
fn substitution(chars: &[char], i: usize, call: &Call) -> Result<(Vec<String>, usize), String> {
    let close = chars[i..]
        .iter()
        .position(|&c| c == '}')
        .ok_or("`${` without `}`")?;
    let name: String = chars[i + 2..i + close].iter().collect();
    match lookup(call, &name) {
        Some(v) => Ok((v, i + close + 1)),
        None => {
            let ports: Vec<&str> = call.inputs.keys().map(String::as_str).collect();
            Err(format!(
                "`${{{name}}}` is not an input port (the task has {}; also WORKLOAD_TASK, WORKLOAD_INSTANCE, WORKLOAD_INSTANCES); quote it with '...' to pass it on unchanged",
                if ports.is_empty() {
                    "none".to_string()
                } else {
                    ports.join(", ")
                }
            ))
        }
    }
}

/// The JSON object of the outputs from the program's standard output.
fn outputs(call: &Call, stdout: &str) -> Result<Map<String, Json>, String> {
    let mut found: BTreeMap<&str, String> = BTreeMap::new();
    if let [(name, _)] = call.outputs.as_slice() {
        found.insert(name, stdout.trim().to_string());
    } else if !call.outputs.is_empty() {
        for line in stdout.lines() {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            let key = k.trim().replace('-', "_");
            if let Some((name, _)) = call.outputs.iter().find(|(n, _)| *n == key)
                && found
                    .insert(name, v.trim_end_matches('\r').to_string())
                    .is_some()
            {
                return Err(format!("the output `{name}` is printed twice"));
            }
        }
    }
    let mut out = Map::new();
    for (name, ty) in &call.outputs {
        let Some(v) = found.get(name.as_str()) else {
            return Err(format!(
                "the program printed no line `{name}=VALUE` for the output port `{name}`"
            ));
        };
        let json = if ty == "INTEGER" {
            let n: i64 = v.trim().parse().map_err(|_| {
                format!("the output `{name}` is INTEGER but the program printed `{v}`")
            })?;
            Json::from(n)
        } else {
            Json::String(v.clone())
        };
        out.insert(format!("out_{name}"), json);
    }
    if call.done {
        out.insert("done".to_string(), Json::Null);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(inputs: &[(&str, &[&str])], outputs: &str) -> Call {
        Call {
            task: "t".into(),
            instance: 2,
            instances: 3,
            executable: "/bin/sh".into(),
            arguments: String::new(),
            outputs: outputs
                .split_whitespace()
                .filter_map(|o| o.split_once(':'))
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            done: false,
            inputs: inputs
                .iter()
                .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
                .collect(),
        }
    }

    #[test]
    fn arguments_split_and_substitute() {
        let c = call(&[("x", &["4"]), ("xs", &["1", "2"]), ("a_b", &["q r"])], "");
        let split = |s: &str| split_arguments(s, &c);
        assert_eq!(
            split("-c 'echo ${x}' ${xs}").unwrap(),
            ["-c", "echo ${x}", "1", "2"]
        );
        assert_eq!(
            split("\"${xs}\" v=${x} ${a-b}").unwrap(),
            ["1 2", "v=4", "q r"]
        );
        assert_eq!(
            split(r#"a\ b "c\"d" ${WORKLOAD_INSTANCE}"#).unwrap(),
            ["a b", "c\"d", "2"]
        );
        assert_eq!(split("").unwrap(), Vec::<String>::new());
        assert!(split("'open").unwrap_err().contains("single quote"));
        assert!(split("\"open").unwrap_err().contains("double quote"));
        let e = split("${nope}").unwrap_err();
        assert!(
            e.contains("`${nope}` is not an input port (the task has a_b, x, xs"),
            "{e}"
        );
        assert!(split("${x").unwrap_err().contains("without `}`"));
    }

    #[test]
    fn stdout_becomes_outputs() {
        let one = call(&[], "n:INTEGER");
        assert_eq!(outputs(&one, " 42\n").unwrap()["out_n"], Json::from(42));
        assert!(
            outputs(&one, "4x")
                .unwrap_err()
                .contains("is INTEGER but the program printed `4x`")
        );
        let two = call(&[], "a:STRING b-c:INTEGER");
        let two = Call {
            outputs: vec![
                ("a".into(), "STRING".into()),
                ("b_c".into(), "INTEGER".into()),
            ],
            ..two
        };
        let o = outputs(&two, "noise\na= x y\nb-c=7\n").unwrap();
        assert_eq!(o["out_a"], Json::from(" x y"));
        assert_eq!(o["out_b_c"], Json::from(7));
        assert!(
            outputs(&two, "a=1\n")
                .unwrap_err()
                .contains("no line `b_c=VALUE`")
        );
        assert!(
            outputs(&two, "a=1\na=2\nb_c=1")
                .unwrap_err()
                .contains("printed twice")
        );
        let none = Call {
            done: true,
            ..call(&[], "")
        };
        assert_eq!(
            Json::Object(outputs(&none, "chatter").unwrap()).to_string(),
            r#"{"done":null}"#
        );
    }

    #[test]
    fn runs_a_program_end_to_end() {
        let input = r#"{"spec": {"task": "t", "instances": 1, "executable": "/bin/sh",
            "arguments": "-c 'echo $((x * 2))'", "outputs": "y:INTEGER", "done": true},
            "args": {"instance": 0, "in_x": 21}, "sync1": null}"#;
        let out: Json = serde_json::from_str(&run(input).unwrap()).unwrap();
        assert_eq!(out, serde_json::json!({"done": null, "out_y": 42}));
        let failing = input.replace("echo $((x * 2))", "echo oops >&2; exit 3");
        let e = run(&failing).unwrap_err();
        assert_eq!(
            e,
            "task `t` instance 0: `/bin/sh` exited with status 3 (its standard error is above)"
        );
        let missing = input.replace("/bin/sh", "/nonexistent/program");
        assert!(
            run(&missing)
                .unwrap_err()
                .contains("cannot run `/nonexistent/program`")
        );
        assert!(run("[]").unwrap_err().contains("no `spec`"));
    }
}
