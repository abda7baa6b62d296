//! Generated nets for the benchmark and the tests.

use std::fmt::Write;

/// A net with `n` expression transitions in a chain `p0 -> t0 -> p1 -> ... -> pn`, each with
/// a condition, plus a struct type used by one port.
pub fn chain_net(n: usize) -> String {
    let mut s = String::with_capacity(n * 400);
    s.push_str("<defun name=\"chain\">\n  <in name=\"start\" type=\"long\" place=\"p0\"/>\n");
    let _ = writeln!(s, "  <out name=\"done\" type=\"long\" place=\"p{n}\"/>");
    s.push_str("  <net>\n");
    s.push_str("    <struct name=\"pair\"><field name=\"a\" type=\"long\"/><field name=\"b\" type=\"string\"/></struct>\n");
    for i in 0..=n {
        let _ = writeln!(s, "    <place name=\"p{i}\" type=\"long\"/>");
    }
    for i in 0..n {
        let _ = write!(
            s,
            "    <transition name=\"t{i}\">\n      <defun>\n        <in name=\"x\" type=\"long\"/>\n        <out name=\"y\" type=\"long\"/>\n        <expression>${{y}} := ${{x}} + {i}L</expression>\n        <condition>${{x}} :ge: 0L</condition>\n      </defun>\n      <connect-in port=\"x\" place=\"p{i}\"/>\n      <connect-out port=\"y\" place=\"p{}\"/>\n    </transition>\n",
            i + 1
        );
    }
    s.push_str("  </net>\n</defun>\n");
    s
}
