//! The conformance suite of the expression language: the cases in `tests/conformance/*.cases`
//! (format described in `tests/conformance/README.md`) run through
//! (a) the compiler (`pnet_sema::expr::lower`: typing, constant folding, bytecode) and the
//!     VM's interpreter,
//! (b) the JIT (every code of the suite compiled into one module),
//! (c) `pnetv`'s coloured explorer, on a net whose transition assigns the case's expression to
//!     an out port (or has it as its condition, or as its expression; a token case puts the
//!     value on a place); the tokens read from the end state.
//! Token cases run through the compiler's `eval_const` and (c). Besides the expectation, every
//! value must read back from its printed form and every expected compile-time error must carry
//! a code, a message and a span. Every failing case of every file is reported at once, with
//! `file:line`, the expectation and what each engine gave.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pnet_bundle::{Code, PortDir, SlotKind};
use pnet_engine::Interpreter;
use pnet_jit::{FnId, Jit};
use pnet_sema::expr::{Env, Mode, PortSig, eval_const, lower};
use pnet_stdlib::literal::parse_literal;
use pnet_stdlib::{Type, Value};
use pnet_syntax::expr::parse_str;
use pnet_verify::coloured::{ColouredOptions, Tok, explore_bundle};

/// A port of a case: an input with its value, or (`@expression` cases) an output.
#[derive(Debug)]
struct Input {
    name: String,
    ty: Type,
    /// `None` for an out port.
    value: Option<Value>,
    /// An `inout` port (`@expression` cases): an input that is also read after the run.
    inout: bool,
}

impl Input {
    /// Whether the port's value after the run is a result (out and inout ports).
    fn is_result(&self) -> bool {
        self.value.is_none() || self.inout
    }
}

/// How a case's expression is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CaseMode {
    /// A value (`Mode::Value`): the expression's value.
    Value,
    /// `@condition`: a transition's condition; its bool.
    Condition,
    /// `@expression`: a transition's expression; the values of its out ports.
    Expression,
    /// `@token`: a token `<value>` of a place whose type is the case's one `out` port's: a
    /// constant expression evaluated by the compiler.
    Token,
}

/// What a case expects.
#[derive(Debug)]
enum Expect {
    /// The printed value, and optionally the static type of the expression.
    Value { text: String, ty: Option<String> },
    /// A compile-time error with this diagnostic code.
    CompileError(String),
    /// A run-time error whose message contains this text.
    RunError(String),
}

#[derive(Debug)]
struct Case {
    at: String,
    mode: CaseMode,
    expr: String,
    inputs: Vec<Input>,
    expect: Expect,
}

/// What an engine gave.
#[derive(Debug)]
enum Outcome {
    /// The value, printed (for `@expression` cases: the out ports' values, `, `-separated).
    Value(String),
    RunError(String),
    /// Not run (the engine could not take the case): why.
    Broken(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Value(v) => f.write_str(v),
            Outcome::RunError(e) => write!(f, "fails: {e}"),
            Outcome::Broken(e) => write!(f, "broken: {e}"),
        }
    }
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expect::Value { text, ty: None } => f.write_str(text),
            Expect::Value { text, ty: Some(t) } => write!(f, "{text} :: {t}"),
            Expect::CompileError(c) => write!(f, "error {c}"),
            Expect::RunError(m) => write!(f, "fails {m}"),
        }
    }
}

fn suite_dir() -> PathBuf {
    pnet_tests::workspace_root().join("tests/conformance")
}

/// The byte offset of the first `needle` outside string and char literals and comments.
fn find_outside_literals(s: &str, needle: &str) -> Option<usize> {
    scan(s, needle, true)
}

/// The byte offset of the first `needle` outside string and char literals, and, if
/// `comments`, outside comments.
fn scan(s: &str, needle: &str, comments: bool) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut comment = 0usize;
    while i < b.len() {
        if comment > 0 {
            if b[i..].starts_with(b"*/") {
                comment -= 1;
                i += 2;
            } else if b[i..].starts_with(b"/*") {
                comment += 1;
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if b[i..].starts_with(needle.as_bytes()) {
            return Some(i);
        }
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'\'' if i + 2 < b.len() && b[i + 2] == b'\'' => i += 3,
            b'/' if comments && b.get(i + 1) == Some(&b'*') => {
                comment = 1;
                i += 2;
            }
            _ => i += 1,
        }
    }
    None
}

/// The text with its comments (outside literals) removed.
fn without_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = find_outside_literals(rest, "/*") {
        out.push_str(&rest[..i]);
        // The end of the (nested) comment: scan from its start.
        let mut depth = 0usize;
        let b = rest.as_bytes();
        let mut j = i;
        while j < b.len() {
            if b[j..].starts_with(b"/*") {
                depth += 1;
                j += 2;
            } else if b[j..].starts_with(b"*/") {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    break;
                }
            } else {
                j += 1;
            }
        }
        out.push(' ');
        rest = &rest[j.min(rest.len())..];
    }
    out.push_str(rest);
    out
}

/// Splits a program into its statements before the last non-empty one and that one.
fn split_last_statement(s: &str) -> (String, String) {
    let mut parts = Vec::new();
    let mut rest = s;
    while let Some(i) = find_outside_literals(rest, ";") {
        parts.push(rest[..i].to_string());
        rest = &rest[i + 1..];
    }
    parts.push(rest.to_string());
    while parts.len() > 1 && parts.last().is_some_and(|p| p.trim().is_empty()) {
        parts.pop();
    }
    let last = parts.pop().unwrap_or_default();
    (parts.join(";"), last)
}

fn parse_file(path: &Path, errors: &mut Vec<String>) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap();
    let file = path
        .strip_prefix(suite_dir())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned();
    parse_text(&file, &text, errors)
}

/// The cases of one file's text (`file` names it in messages).
fn parse_text(file: &str, text: &str, errors: &mut Vec<String>) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("tests/conformance/{file}:{}", i + 1);
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            // An input of the case above: `name: type = value`.
            let Some(case) = cases.last_mut() else {
                errors.push(format!("{at}: an input line before any case"));
                continue;
            };
            match parse_input(trimmed) {
                Ok(input) => case.inputs.push(input),
                Err(e) => errors.push(format!("{at}: {e}")),
            }
            continue;
        }
        // Outside comments, unless one is unterminated (a case may test that).
        let Some(arrow) = find_outside_literals(line, "=>").or_else(|| scan(line, "=>", false))
        else {
            errors.push(format!("{at}: expected `EXPRESSION => EXPECTATION`"));
            continue;
        };
        let (mode, expr) = if let Some(e) = line.strip_prefix("@condition ") {
            (CaseMode::Condition, e)
        } else if let Some(e) = line.strip_prefix("@expression ") {
            (CaseMode::Expression, e)
        } else if let Some(e) = line.strip_prefix("@token ") {
            (CaseMode::Token, e)
        } else if line.starts_with('@') {
            errors.push(format!(
                "{at}: unknown mode (`@condition`, `@expression`, `@token`)"
            ));
            continue;
        } else {
            (CaseMode::Value, line)
        };
        let want = line[arrow + 2..].trim();
        let expr = expr[..arrow - (line.len() - expr.len())].trim().to_string();
        let expect = if want == "fails" || want == "error" {
            errors.push(format!("{at}: `{want}` needs a message or a code"));
            continue;
        } else if let Some(code) = want.strip_prefix("error ") {
            Expect::CompileError(code.trim().to_string())
        } else if let Some(msg) = want.strip_prefix("fails ") {
            Expect::RunError(msg.trim().to_string())
        } else if let Some(j) = find_outside_literals(want, "::") {
            Expect::Value {
                text: want[..j].trim().to_string(),
                ty: Some(want[j + 2..].trim().to_string()),
            }
        } else {
            Expect::Value {
                text: want.to_string(),
                ty: None,
            }
        };
        if matches!(&expect, Expect::Value { text, .. } if text.is_empty()) {
            errors.push(format!("{at}: empty expectation"));
            continue;
        }
        cases.push(Case {
            at,
            mode,
            expr,
            inputs: Vec::new(),
            expect,
        });
    }
    cases
}

fn parse_input(line: &str) -> Result<Input, String> {
    if let Some(inout) = line.strip_prefix("inout ") {
        return parse_input(inout).map(|i| Input { inout: true, ..i });
    }
    if let Some(out) = line.strip_prefix("out ") {
        let (name, ty) = out.split_once(':').ok_or("expected `out name: type`")?;
        let ty = ty.trim();
        return Ok(Input {
            name: name.trim().to_string(),
            ty: Type::from_name(ty).ok_or_else(|| format!("unknown type `{ty}`"))?,
            value: None,
            inout: false,
        });
    }
    let (name, rest) = line
        .split_once(':')
        .ok_or("expected an input `name: type = value`")?;
    let (ty, value) = rest
        .split_once('=')
        .ok_or("expected an input `name: type = value`")?;
    let value = parse_literal(value.trim()).map_err(|e| format!("bad input value: {e}"))?;
    let ty = match ty.trim() {
        "_" => value.ty(),
        t => Type::from_name(t).ok_or_else(|| format!("unknown input type `{t}`"))?,
    };
    if !value.fits(&ty) {
        return Err(format!("input value {value} is not a {ty}"));
    }
    Ok(Input {
        name: name.trim().to_string(),
        ty,
        value: Some(value),
        inout: false,
    })
}

/// Whether an outcome meets the expectation.
fn meets(expect: &Expect, got: &Outcome) -> bool {
    match (expect, got) {
        (Expect::Value { text, .. }, Outcome::Value(v)) => v == text,
        (Expect::RunError(m), Outcome::RunError(e)) => e.contains(m.as_str()),
        _ => false,
    }
}

/// The out ports' values after an `@expression` case ran, `, `-separated.
fn outputs(case: &Case, frame: &[Option<Value>]) -> Outcome {
    let mut out = Vec::new();
    for (i, p) in case.inputs.iter().enumerate() {
        if p.is_result() {
            match &frame[i] {
                Some(v) => out.push(v.to_string()),
                None => return Outcome::RunError(format!("out port `{}` unassigned", p.name)),
            }
        }
    }
    Outcome::Value(out.join(", "))
}

fn interpret(case: &Case, code: &Code, frame: &[Option<Value>]) -> Outcome {
    let mut frame = frame.to_vec();
    let mut interp = Interpreter::new();
    let r = match case.mode {
        CaseMode::Value | CaseMode::Token => interp.run(code, &mut frame),
        CaseMode::Condition => interp.run_bool(code, &mut frame).map(Value::Bool),
        CaseMode::Expression => interp.run_effect(code, &mut frame).map(|()| Value::Control),
    };
    match r {
        Ok(_) if case.mode == CaseMode::Expression => outputs(case, &frame),
        Ok(v) => Outcome::Value(v.to_string()),
        Err(e) => Outcome::RunError(e.kind.to_string()),
    }
}

fn jit_run(
    jit: &Jit,
    id: FnId,
    case: &Case,
    code: &Code,
    frame: &[Option<Value>],
) -> Option<Outcome> {
    let mut f = frame.to_vec();
    let mut buf = Vec::new();
    let r = match case.mode {
        CaseMode::Value | CaseMode::Token => jit.run(id, code, &mut f, &mut buf)?,
        CaseMode::Condition => jit.run_bool(id, code, &mut f, &mut buf)?.map(Value::Bool),
        CaseMode::Expression => jit
            .run_effect(id, code, &mut f, &mut buf)?
            .map(|()| Value::Control),
    };
    Some(match r {
        Ok(_) if case.mode == CaseMode::Expression => outputs(case, &f),
        Ok(v) => Outcome::Value(v.to_string()),
        Err(e) => Outcome::RunError(e.kind.to_string()),
    })
}

fn frame_of(case: &Case, code: &Code) -> Vec<Option<Value>> {
    let mut frame: Vec<Option<Value>> = case.inputs.iter().map(|i| i.value.clone()).collect();
    frame.resize(code.slots.len().max(frame.len()), None);
    frame
}

// ---------------------------------------------------------------------------------------------
// pnetv: a one-transition net.

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The xpnet name of a type; struct types get declarations (`structs`), shared types a clean-up
/// place (`sinks`).
fn xpnet_type(ty: &Type, structs: &mut Vec<String>, sinks: &mut BTreeSet<String>) -> String {
    match ty {
        Type::List(_) => "list".into(),
        Type::Set(_) => "set".into(),
        Type::Map(..) => "map".into(),
        Type::Any => "control".into(),
        Type::Shared(p) => {
            sinks.insert(p.to_string());
            format!("shared_{p}")
        }
        Type::Struct(st) => {
            let name = format!("conformance_struct_{}", structs.len());
            structs.push(String::new());
            let at = structs.len() - 1;
            let decl = struct_decl(&name, &st.fields, structs, sinks);
            structs[at] = decl;
            name
        }
        t => t.to_string(),
    }
}

fn struct_decl(
    name: &str,
    fields: &[(Arc<str>, Type)],
    structs: &mut Vec<String>,
    sinks: &mut BTreeSet<String>,
) -> String {
    let mut s = format!("<struct name=\"{name}\">");
    for (f, t) in fields {
        match t {
            Type::Struct(inner) => s.push_str(&struct_decl(f, &inner.fields, structs, sinks)),
            t => {
                let tn = xpnet_type(t, structs, sinks);
                let _ = write!(s, "<field name=\"{f}\" type=\"{}\"/>", xml_escape(&tn));
            }
        }
    }
    s.push_str("</struct>");
    s
}

/// The net of a case: the root's in ports hold the inputs (and a control token, so that a
/// case without inputs fires too), its out ports are the results. A value case assigns the
/// expression's value to the out port `conformance_result` (of type `out_ty`); a condition
/// case has two transitions writing `true` and `false` to it, the first one with the condition
/// and a higher priority; an expression case is the transition's expression as it is.
fn net_of(case: &Case, out_ty: &Type) -> String {
    let mut structs = Vec::new();
    let mut sinks = BTreeSet::new();
    let ports: Vec<(String, String, &Input)> = case
        .inputs
        .iter()
        .map(|i| {
            let t = xpnet_type(&i.ty, &mut structs, &mut sinks);
            (i.name.clone(), xml_escape(&t), i)
        })
        .collect();
    let ins: Vec<&(String, String, &Input)> =
        ports.iter().filter(|p| p.2.value.is_some()).collect();
    // Out ports, and (named apart) the out sides of inout ports.
    let mut outs: Vec<(String, String)> = ports
        .iter()
        .filter(|p| p.2.is_result())
        .map(|p| (result_place(p.2), p.1.clone()))
        .collect();
    let mut transitions: Vec<(String, Option<u16>, Option<String>, String)> = Vec::new();
    match case.mode {
        CaseMode::Value => {
            let out = xpnet_type(out_ty, &mut structs, &mut sinks);
            outs.push(("conformance_result".into(), xml_escape(&out)));
            let (prefix, last) = split_last_statement(&case.expr);
            let last = if without_comments(&last).trim().is_empty() {
                "[]".to_string()
            } else {
                last
            };
            let body = if prefix.trim().is_empty() {
                format!("${{conformance_result}} := ({last})")
            } else {
                format!("{prefix}; ${{conformance_result}} := ({last})")
            };
            transitions.push(("t".into(), None, None, body));
        }
        CaseMode::Condition => {
            outs.push(("conformance_result".into(), "bool".into()));
            transitions.push((
                "t".into(),
                Some(1),
                Some(case.expr.clone()),
                "${conformance_result} := true".into(),
            ));
            transitions.push((
                "otherwise".into(),
                Some(0),
                None,
                "${conformance_result} := false".into(),
            ));
        }
        CaseMode::Expression => transitions.push(("t".into(), None, None, case.expr.clone())),
        // The place of the out port holds the token from the start.
        CaseMode::Token => {}
    }
    let mut x = String::from("<defun name=\"main\">");
    for s in &structs {
        x.push_str(s);
    }
    x.push_str("<in name=\"conformance_go\" type=\"control\" place=\"conformance_go\"/>");
    for (n, t, _) in &ins {
        let _ = write!(x, "<in name=\"{n}\" type=\"{t}\" place=\"{n}\"/>");
    }
    for (n, t) in &outs {
        let _ = write!(x, "<out name=\"{n}\" type=\"{t}\" place=\"{n}\"/>");
    }
    x.push_str("<net><place name=\"conformance_go\" type=\"control\"/>");
    for (n, t, _) in &ins {
        let _ = write!(x, "<place name=\"{n}\" type=\"{t}\"/>");
    }
    for (n, t) in &outs {
        if case.mode == CaseMode::Token {
            let _ = write!(
                x,
                "<place name=\"{n}\" type=\"{t}\"><token><value>{}</value></token></place>",
                xml_escape(&case.expr)
            );
        } else {
            let _ = write!(x, "<place name=\"{n}\" type=\"{t}\"/>");
        }
    }
    for p in &sinks {
        let _ = write!(
            x,
            "<place name=\"{p}\" type=\"control\" shared_sink=\"true\"/>"
        );
    }
    for (name, priority, condition, body) in &transitions {
        let _ = write!(x, "<transition name=\"{name}\"");
        if let Some(p) = priority {
            let _ = write!(x, " priority=\"{p}\"");
        }
        x.push_str("><defun><in name=\"conformance_go\" type=\"control\"/>");
        for (n, t, i) in &ports {
            let dir = match (i.value.is_some(), i.inout) {
                (true, true) => "inout",
                (true, false) => "in",
                (false, _) => "out",
            };
            let _ = write!(x, "<{dir} name=\"{n}\" type=\"{t}\"/>");
        }
        if case.mode != CaseMode::Expression {
            for (n, t) in &outs {
                let _ = write!(x, "<out name=\"{n}\" type=\"{t}\"/>");
            }
        }
        if let Some(c) = condition {
            let _ = write!(x, "<condition>{}</condition>", xml_escape(c));
        }
        let _ = write!(x, "<expression>{}</expression></defun>", xml_escape(body));
        x.push_str("<connect-in port=\"conformance_go\" place=\"conformance_go\"/>");
        for (n, _, _) in &ins {
            let _ = write!(x, "<connect-in port=\"{n}\" place=\"{n}\"/>");
        }
        if case.mode == CaseMode::Expression {
            for (n, _, i) in ports.iter().filter(|p| p.2.is_result()) {
                let _ = write!(
                    x,
                    "<connect-out port=\"{n}\" place=\"{}\"/>",
                    result_place(i)
                );
            }
        } else {
            for (n, _) in &outs {
                let _ = write!(x, "<connect-out port=\"{n}\" place=\"{n}\"/>");
            }
        }
        x.push_str("</transition>");
    }
    x.push_str("</net></defun>");
    x
}

/// The root's out port (and place) of a result port: its name, or for an inout port a name of
/// its own (its in side has the port's name).
fn result_place(i: &Input) -> String {
    if i.inout {
        format!("conformance_out_{}", i.name)
    } else {
        i.name.clone()
    }
}

fn pnetv(case: &Case, out_ty: &Type) -> Outcome {
    let net = net_of(case, out_ty);
    let out = pnet_sema::compile_source(
        Path::new("/conformance/case.xpnet"),
        &net,
        &pnet_sema::Options::default(),
    );
    let has_errors = out.has_errors();
    let Some(bundle) = out.bundle.filter(|_| !has_errors) else {
        let diags: Vec<String> = out
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{}: {}", d.code, d.message))
            .collect();
        return Outcome::Broken(format!("the net does not compile: {}", diags.join("; ")));
    };
    let mut inputs = vec![("conformance_go".to_string(), vec![Value::Control])];
    inputs.extend(
        case.inputs
            .iter()
            .filter_map(|i| Some((i.name.clone(), vec![i.value.clone()?]))),
    );
    let opts = ColouredOptions {
        max_states: 100,
        scc: false,
        ..ColouredOptions::default()
    };
    let (report, res) = match explore_bundle(&bundle, "case", &inputs, &opts) {
        Ok(r) => r,
        Err(e) => return Outcome::Broken(format!("explore: {e}")),
    };
    if let Some(t) = report.traces.iter().find(|t| t.kind == "error") {
        return Outcome::RunError(t.note.clone());
    }
    let [one] = res.end_outputs.as_slice() else {
        return Outcome::Broken(format!("{} proper ends", res.end_outputs.len()));
    };
    let names: Vec<String> = match case.mode {
        CaseMode::Expression | CaseMode::Token => case
            .inputs
            .iter()
            .filter(|i| i.is_result())
            .map(result_place)
            .collect(),
        _ => vec!["conformance_result".to_string()],
    };
    let mut values = Vec::new();
    for name in names {
        match one
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, toks)| toks.as_slice())
        {
            Some([Tok::Val(v)]) => values.push(v.to_string()),
            other => return Outcome::Broken(format!("end tokens of {name}: {other:?}")),
        }
    }
    Outcome::Value(values.join(", "))
}

// ---------------------------------------------------------------------------------------------

/// Whether a value's printed form reads back as the same value (`Err`: why not). By design
/// (as in GPI-Space) values holding an infinity or a NaN do not, nor the smallest int and long:
/// the sign of `-2147483648` applies after the range check.
fn reads_back(v: &Value) -> Result<(), String> {
    let text = v.to_string();
    if ["inf", "nan", "-2147483648", "-9223372036854775808"]
        .iter()
        .any(|t| text.contains(t))
    {
        return Ok(());
    }
    match parse_literal(&text) {
        Ok(back) if back.to_string() == text && back.ty() == v.ty() => Ok(()),
        Ok(back) => Err(format!("`{text}` reads back as `{back}`")),
        Err(e) => Err(format!("`{text}` does not read back: {e}")),
    }
}

/// Every error diagnostic carries a code, a message and a primary span.
fn spanned(case: &Case, diags: &[pnet_syntax::Diagnostic], errors: &mut Vec<String>) {
    for d in diags.iter().filter(|d| d.is_error()) {
        if d.code.is_empty() || d.message.is_empty() || d.primary_span().is_none() {
            errors.push(format!(
                "{}: `{}`\n    diagnostic without a code, a message or a span: {d:?}",
                case.at, case.expr
            ));
        }
    }
}

/// Adds a message to `errors` unless every engine's outcome meets the case's expectation.
fn report(case: &Case, results: &[(&str, Outcome)], errors: &mut Vec<String>) {
    if results.iter().all(|(_, r)| meets(&case.expect, r)) {
        return;
    }
    let mut msg = format!(
        "{}: `{}`\n    expected: {}",
        case.at, case.expr, case.expect
    );
    for (name, r) in results {
        let mark = if meets(&case.expect, r) {
            "ok"
        } else {
            "WRONG"
        };
        let _ = write!(msg, "\n    {name:<11} {mark}: {r}");
    }
    errors.push(msg);
}

#[test]
fn conformance_suite() {
    let mut errors = Vec::new();
    let mut dirs = vec![suite_dir()];
    if std::env::var_os("CONFORMANCE_PENDING").is_some() {
        dirs.push(suite_dir().join("pending"));
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in &dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        files.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "cases")),
        );
    }
    files.sort();
    let only = std::env::var("CONFORMANCE_FILE").ok();
    let mut cases = Vec::new();
    for f in &files {
        if only
            .as_deref()
            .is_some_and(|o| !f.to_string_lossy().contains(o))
        {
            continue;
        }
        cases.extend(parse_file(f, &mut errors));
    }
    assert!(
        only.is_some() || cases.len() >= 300,
        "only {} cases",
        cases.len()
    );

    // (a) compile every case (a token: evaluate it).
    let mut compiled: Vec<Option<Code>> = Vec::new();
    let mut tokens: Vec<Option<Value>> = Vec::new();
    for case in &cases {
        if case.mode == CaseMode::Token {
            compiled.push(None);
            tokens.push(None);
            let place_ty = match case.inputs.as_slice() {
                [
                    Input {
                        ty, value: None, ..
                    },
                ] => ty.clone(),
                _ => {
                    errors.push(format!("{}: a token case needs one `out` line", case.at));
                    continue;
                }
            };
            let (expr, parse_diags) = parse_str(&case.expr);
            let r = if parse_diags.iter().any(|d| d.is_error()) {
                Err(parse_diags)
            } else {
                eval_const(&expr, &place_ty)
            };
            match (&case.expect, r) {
                (Expect::CompileError(c), Err(diags)) if diags.iter().any(|d| d.code == c) => {
                    spanned(case, &diags, &mut errors)
                }
                (_, Err(diags)) => errors.push(format!(
                    "{}: `{}`\n    expected: {}\n    compiler: {}",
                    case.at,
                    case.expr,
                    case.expect,
                    diags
                        .iter()
                        .filter(|d| d.is_error())
                        .map(|d| format!("error {} ({})", d.code, d.message))
                        .collect::<Vec<_>>()
                        .join("; ")
                )),
                (_, Ok(v)) => *tokens.last_mut().unwrap() = Some(v),
            }
            continue;
        }
        tokens.push(None);
        let ports: Vec<PortSig> = case
            .inputs
            .iter()
            .map(|i| PortSig {
                name: i.name.clone(),
                dir: match (i.value.is_some(), i.inout) {
                    (true, true) => PortDir::InOut,
                    (true, false) => PortDir::In,
                    (false, _) => PortDir::Out,
                },
                ty: i.ty.clone(),
            })
            .collect();
        let (expr, mut diags) = parse_str(&case.expr);
        let env = Env {
            ports: &ports,
            mode: match case.mode {
                CaseMode::Value => Mode::Value,
                CaseMode::Condition => Mode::Condition,
                CaseMode::Expression | CaseMode::Token => Mode::Expression,
            },
            name: "conformance case".into(),
            expected: None,
        };
        let (code, more) = lower(&expr, &env);
        diags.extend(more);
        let errs: Vec<_> = diags.iter().filter(|d| d.is_error()).collect();
        let summary = || {
            errs.iter()
                .map(|d| format!("error {} ({})", d.code, d.message))
                .collect::<Vec<_>>()
                .join("; ")
        };
        match (&case.expect, errs.is_empty()) {
            (Expect::CompileError(c), false) if errs.iter().any(|d| d.code == c) => {
                spanned(case, &diags, &mut errors);
                compiled.push(None)
            }
            (_, false) => {
                errors.push(format!(
                    "{}: `{}`\n    expected: {}\n    compiler: {}",
                    case.at,
                    case.expr,
                    case.expect,
                    summary()
                ));
                compiled.push(None);
            }
            (Expect::Value { ty: Some(t), .. }, true) if code.result.to_string() != *t => {
                errors.push(format!(
                    "{}: `{}`\n    expected: {}\n    compiler: static type {}",
                    case.at, case.expr, case.expect, code.result
                ));
                compiled.push(None);
            }
            (_, true) => compiled.push(Some(code)),
        }
    }

    // (b) the JIT: every code into one module.
    let mut jit = Jit::new().expect("a JIT for this host");
    let codes: Vec<&Code> = compiled.iter().flatten().collect();
    let mut ids = jit.compile(&codes).into_iter();

    let mut fallbacks = 0usize;
    for ((case, code), token) in cases.iter().zip(&compiled).zip(&tokens) {
        if let Some(v) = token {
            let results = [
                ("compiler", Outcome::Value(v.to_string())),
                ("pnetv", pnetv(case, &Type::Any)),
            ];
            report(case, &results, &mut errors);
            continue;
        }
        let Some(code) = code else {
            continue;
        };
        let jit_id = ids.next().flatten();
        let frame = frame_of(case, code);
        let interp = interpret(case, code, &frame);
        let jitted = match jit_id {
            None => Outcome::Broken("not compiled by the JIT".into()),
            Some(id) => match jit_run(&jit, id, case, code, &frame) {
                Some(outcome) => outcome,
                // The JIT may leave a frame to the interpreter when a slot does not hold what
                // the code was compiled for: locals start empty.
                None if code.slots.iter().any(|s| s.kind == SlotKind::Local) => {
                    fallbacks += 1;
                    interpret(case, code, &frame)
                }
                None => Outcome::Broken("the JIT fell back".into()),
            },
        };
        // The out port of a value case has the type of the interpreter's value.
        let value = Interpreter::new().run(code, &mut frame.clone());
        let out_ty = match &value {
            Ok(v) if case.mode == CaseMode::Value => v.ty(),
            _ => code.result.clone(),
        };
        // Printing reads back exactly, but for infinities and NaN.
        if let Ok(v) = &value
            && let Err(e) = reads_back(v)
        {
            errors.push(format!("{}: `{}`\n    {e}", case.at, case.expr));
        }
        let verified = pnetv(case, &out_ty);
        let results = [
            ("interpreter", interp),
            ("jit", jitted),
            ("pnetv", verified),
        ];
        report(case, &results, &mut errors);
    }
    eprintln!(
        "{} conformance cases; the JIT left {fallbacks} with locals to the interpreter",
        cases.len()
    );
    assert!(
        errors.is_empty(),
        "{} of {} conformance cases fail:\n\n{}\n",
        errors.len(),
        cases.len(),
        errors.join("\n\n")
    );
}

#[test]
fn the_case_format_is_read() {
    let text = r#"# a comment
"a => b" + "=>" => "a => b=>"
@condition ${a} /* => */ < 2 => true
    a: int = 1
@expression ${r} := 1L => error missing_binding
    out r: long
    out s: long
${x} := 1; ${x} div 0 => fails division by zero
'c' => 'c' :: char
1 +
"#;
    let mut errors = Vec::new();
    let cases = parse_text("t.cases", text, &mut errors);
    assert_eq!(
        errors,
        ["tests/conformance/t.cases:10: expected `EXPRESSION => EXPECTATION`"]
    );
    let got: Vec<String> = cases
        .iter()
        .map(|c| {
            let ports: Vec<String> = c
                .inputs
                .iter()
                .map(|i| match &i.value {
                    Some(v) => format!("{}: {} = {v}", i.name, i.ty),
                    None => format!("out {}: {}", i.name, i.ty),
                })
                .collect();
            format!(
                "{} {:?} `{}` [{}] {}",
                c.at,
                c.mode,
                c.expr,
                ports.join("; "),
                c.expect
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            r#"tests/conformance/t.cases:2 Value `"a => b" + "=>"` [] "a => b=>""#,
            "tests/conformance/t.cases:3 Condition `${a} /* => */ < 2` [a: int = 1] true",
            "tests/conformance/t.cases:5 Expression `${r} := 1L` [out r: long; out s: long] \
             error missing_binding",
            "tests/conformance/t.cases:8 Value `${x} := 1; ${x} div 0` [] fails division by zero",
            "tests/conformance/t.cases:9 Value `'c'` [] 'c' :: char",
        ]
    );
    assert_eq!(
        split_last_statement("${x} := ';'; /* ; */ \"a;b\"; "),
        ("${x} := ';'".to_string(), " /* ; */ \"a;b\"".to_string())
    );
    assert_eq!(
        without_comments("1 /* a /* b */ c */ + 2").trim(),
        "1   + 2"
    );
}
