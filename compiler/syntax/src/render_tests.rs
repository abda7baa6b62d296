//! The renderer (in `pnet-diagnostics`) on diagnostics of this crate's parsers.

use crate::FileId;
use crate::render::{MAX_PER_FILE, RenderFile, render_to_string};
use crate::span::MappedText;

/// A generated net with a 100 KB expression line holding thousands of errors, through the
/// expression parser and the renderer: the output is bounded (it was quadratic: every
/// diagnostic printed the whole line).
#[test]
fn a_net_with_a_100_kb_line_and_thousands_of_errors_renders_bounded() {
    let body = "${x} := nope; ".repeat(8000);
    let text = format!(
        "<defun name=\"f\">\n  <out name=\"x\" type=\"long\"/>\n  <expression>{body}</expression>\n</defun>\n"
    );
    let start = text.find("${x}").unwrap();
    let (_, diags) = crate::expr::parse(&MappedText::verbatim(
        body.as_str(),
        FileId(0),
        start as u32,
    ));
    assert_eq!(diags.len(), 8000);
    let got = render_to_string(
        &[RenderFile {
            name: "big.xpnet",
            text: &text,
        }],
        &diags,
    );
    assert!(got.len() < 100_000, "{} bytes", got.len());
    assert_eq!(got.matches("error[unknown_function]").count(), MAX_PER_FILE);
    assert!(got.contains("... and 7950 more errors in big.xpnet"));
    // The last one shown is the 50th `nope`, at its own column.
    let col = start + 14 * 49 + "${x} := ".len() - text[..start].rfind('\n').unwrap();
    assert!(got.contains(&format!("big.xpnet:3:{col}")), "{got}");
}
