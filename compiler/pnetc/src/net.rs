//! What the tools that take a net on the command line share: loading a `.pnet` bundle or
//! compiling an `.xpnet` file, and the `-p PORT=VALUE` syntax of input tokens.

use std::path::Path;

use pnet_bundle::Bundle;
use pnet_sema::{LoadedFile, Options};
use pnet_stdlib::Value;

use crate::{ColorMode, render_diagnostics};

/// Parses a value in the literal syntax; `what` names it in the message (`-p n`).
pub fn parse_value(what: &str, text: &str) -> Result<Value, String> {
    pnet_stdlib::literal::parse_literal(text).map_err(|e| {
        format!(
            "{what}: '{text}' is not a value: {} (at character {})",
            e.message,
            e.offset + 1
        )
    })
}

/// Parses `PORT=VALUE` (the argument of `-p`).
pub fn parse_put(s: &str) -> Result<(String, Value), String> {
    let Some((port, value)) = s.split_once('=') else {
        return Err(format!("-p '{s}': expected PORT=VALUE"));
    };
    let port = port.trim();
    if port.is_empty() {
        return Err(format!("-p '{s}': empty port name"));
    }
    Ok((port.to_string(), parse_value(&format!("-p {port}"), value)?))
}

/// Turns the contents of a net file into a bundle: `bytes` that start with the bundle magic
/// are decoded (a wrong version or checksum is refused); anything else is compiled as xpnet,
/// `path` locating its includes, with the diagnostics rendered to standard error. Returns the
/// bundle and the source files that were compiled (none for a bundle), or the message to print.
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
    let out = pnet_sema::compile_source(path, text, options);
    render_diagnostics(&out.files, &out.diagnostics, color);
    match out.bundle {
        Some(b) if !out.has_errors() => Ok((b, out.files)),
        _ => Err(format!("{} did not compile", path.display())),
    }
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
}
