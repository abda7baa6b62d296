//! What the tools that take a net on the command line share: loading a `.pnet` bundle,
//! compiling an `.xpnet` file or lowering and compiling a `.workload` file, and the
//! `-p PORT=VALUE` syntax of input tokens.

use std::path::Path;

use pnet_bundle::Bundle;
use pnet_sema::{LoadedFile, Options};
use pnet_stdlib::Value;

use crate::{ColorMode, render_diagnostics};

/// Parses a value in the literal syntax; `what` names it in the message (`-p n`).
pub fn parse_value(what: &str, text: &str) -> Result<Value, String> {
    pnet_stdlib::literal::parse_value_of(what, text)
}

/// Parses `PORT=VALUE` (the argument of `-p`).
pub fn parse_put(s: &str) -> Result<(String, Value), String> {
    pnet_stdlib::literal::parse_binding("-p", "port", s)
}

/// Turns the contents of a net file into a bundle: `bytes` that start with the bundle magic
/// are decoded (a wrong version or checksum is refused); a path ending in `.workload` is a
/// workload description, lowered to xpnet and compiled (see [`lower_workload`]); anything
/// else is compiled as xpnet, `path` locating its includes, with the diagnostics rendered to
/// standard error. Returns the bundle and the source files that were compiled (none for a
/// bundle; the generated net for a workload), or the message to print.
pub fn load_net(
    path: &Path,
    bytes: &[u8],
    options: &Options,
    color: ColorMode,
) -> Result<(Bundle, Vec<LoadedFile>), String> {
    if bytes.starts_with(pnet_bundle::MAGIC) {
        return pnet_bundle::format::decode(bytes)
            .map(|b| (b, Vec::new()))
            .map_err(|e| format!("{}: {e}", path.display()));
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(format!(
            "{} is neither a .pnet bundle nor UTF-8 text",
            path.display()
        ));
    };
    if pnet_workload::is_workload_path(path) {
        let lowered = lower_workload(path, text, color)?;
        let out = compile_lowered(path, &lowered, options, color)?;
        return match out.bundle {
            Some(b) => Ok((b, out.files)),
            None => Err(internal_error(path)),
        };
    }
    let out = pnet_sema::compile_source(path, text, options);
    render_diagnostics(&out.files, &out.diagnostics, color);
    match out.bundle {
        Some(b) if !out.has_errors() => Ok((b, out.files)),
        _ => Err(format!("{} did not compile", path.display())),
    }
}

/// Parses and checks the workload description `text` (from `path`), renders its diagnostics
/// (codespan-reporting, `path:line:column`), and returns the generated xpnet text, or the
/// message to print when it has errors.
pub fn lower_workload(path: &Path, text: &str, color: ColorMode) -> Result<String, String> {
    let (workload, diagnostics) = pnet_workload::parse(text);
    let (files, converted) = workload_diagnostics(path, text, &diagnostics);
    render_diagnostics(&files, &converted, color);
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    if errors > 0 {
        return Err(format!(
            "{}: {errors} error{} in the workload description",
            path.display(),
            if errors == 1 { "" } else { "s" }
        ));
    }
    Ok(pnet_workload::lower(&workload))
}

/// The name under which the net generated from a workload file is compiled (it appears in
/// the bundle's source map): `fan.workload` gives `fan.workload.xpnet`.
pub fn lowered_path(path: &Path) -> std::path::PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".xpnet");
    std::path::PathBuf::from(name)
}

/// Compiles the net generated from the workload file `path`. Its diagnostics are rendered
/// against the generated text; an error there is a bug of the lowering, reported as an
/// internal error naming the workload file.
pub fn compile_lowered(
    path: &Path,
    lowered: &str,
    options: &Options,
    color: ColorMode,
) -> Result<pnet_sema::Output, String> {
    let out = pnet_sema::compile_source(&lowered_path(path), lowered, options);
    render_diagnostics(&out.files, &out.diagnostics, color);
    if out.has_errors() || out.bundle.is_none() {
        return Err(internal_error(path));
    }
    Ok(out)
}

fn internal_error(path: &Path) -> String {
    format!(
        "internal error [workload-internal]: the net generated from {} does not compile; this \
         is a bug of pnet-workload (see the net with `pnetc --emit=xpnet {}`)",
        path.display(),
        path.display()
    )
}

/// The workload's diagnostics with the workload file registered as file 0 (their file,
/// [`pnet_workload::FILE`]), to render them with [`render_diagnostics`].
pub fn workload_diagnostics(
    path: &Path,
    text: &str,
    diagnostics: &[pnet_workload::Diagnostic],
) -> (Vec<LoadedFile>, Vec<pnet_syntax::Diagnostic>) {
    let file = pnet_workload::FILE;
    let len = u32::try_from(text.len()).unwrap_or(u32::MAX);
    let converted = diagnostics
        .iter()
        .cloned()
        .map(|mut d| {
            // Spans past the end (e.g. "at the end of the file") are clamped to the text.
            for l in &mut d.labels {
                l.span.end = l.span.end.min(len);
                l.span.start = l.span.start.min(l.span.end);
            }
            d
        })
        .collect();
    let files = vec![LoadedFile {
        id: file,
        path: path.to_path_buf(),
        text: std::sync::Arc::from(text),
    }];
    (files, converted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_parse_or_explain() {
        assert_eq!(parse_put("n=3L"), Ok(("n".to_string(), Value::Long(3))));
        assert_eq!(
            parse_put(" s =\"a=b\""),
            Ok(("s".to_string(), Value::string("a=b")))
        );
        assert_eq!(parse_put("n").unwrap_err(), "-p 'n': expected PORT=VALUE");
        assert_eq!(parse_put("=1").unwrap_err(), "-p '=1': empty port name");
        let e = parse_put("n=1L +").unwrap_err();
        assert!(e.starts_with("-p n: '1L +' is not a value:"), "{e}");
    }

    #[test]
    fn bundles_are_checked_and_text_is_compiled() {
        let opts = Options::default();
        let mut bad = pnet_bundle::MAGIC.to_vec();
        bad.extend_from_slice(&99u32.to_le_bytes());
        let e = load_net(Path::new("x.pnet"), &bad, &opts, ColorMode::Never).unwrap_err();
        assert!(
            e.starts_with("x.pnet: bundle is truncated") || e.contains("version"),
            "{e}"
        );
        let e = load_net(Path::new("x.xpnet"), &[0xff, 0xfe], &opts, ColorMode::Never).unwrap_err();
        assert!(e.contains("neither a .pnet bundle nor UTF-8"), "{e}");
        let net = "<defun><in name=\"a\" type=\"long\" place=\"p\"/><net><place name=\"p\" type=\"long\"/></net></defun>";
        let (bundle, files) = load_net(
            Path::new("x.xpnet"),
            net.as_bytes(),
            &opts,
            ColorMode::Never,
        )
        .unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(bundle.functions.len(), 1);
        let bytes = pnet_bundle::format::encode(&bundle).unwrap();
        let (again, files) =
            load_net(Path::new("x.pnet"), &bytes, &opts, ColorMode::Never).unwrap();
        assert_eq!(again, bundle);
        assert!(files.is_empty());
    }

    #[test]
    fn workloads_are_lowered_and_their_errors_rendered() {
        let opts = Options::default();
        let text = "task a [2] { out x: INTEGER; EXECUTABLE = 'echo'; ARGUMENTS = '1'; }\n\
                    task b { in xs: INTEGER; out s: STRING; EXECUTABLE = 'echo'; }\n\
                    relation a.x -> b.xs (INPUT-OUTPUT);\n";
        let (bundle, files) = load_net(
            Path::new("w.workload"),
            text.as_bytes(),
            &opts,
            ColorMode::Never,
        )
        .unwrap();
        assert_eq!(files[0].path, Path::new("w.workload.xpnet"));
        assert!(files[0].text.contains("<module name=\"workload_exec\""));
        assert!(!bundle.functions.is_empty());
        let e = load_net(
            Path::new("bad.workload"),
            b"task a { EXECUTABLE = 'x'; }\nrelation a -> nope (SEQUENTIAL_END);\n",
            &opts,
            ColorMode::Never,
        )
        .unwrap_err();
        assert_eq!(e, "bad.workload: 1 error in the workload description");
        let (w, diags) = pnet_workload::parse("task a {}\n");
        assert_eq!(w.tasks.len(), 1);
        let (files, converted) =
            workload_diagnostics(Path::new("x.workload"), "task a {}\n", &diags);
        let rendered = crate::render::render_to_string(&files, &converted);
        assert!(
            rendered.contains("error[workload-missing-executable]: task `a` has no EXECUTABLE"),
            "{rendered}"
        );
        assert!(rendered.contains("x.workload:1:6"), "{rendered}");
    }
}
