//! Nodefiles (one host a line, as in `$PBS_NODEFILE` or `hostname > nodefile`) and the local
//! host name.

use crate::Diagnostic;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Parses a nodefile: one host name or IP address a line; white space around it is trimmed,
/// blank lines and `#` comments (whole lines or after the host) are ignored. Returns the
/// distinct hosts in file order. A host listed again (as batch systems do, once per slot) is
/// a warning `nodefile-duplicate-host` and counts once; a line that is not a host name
/// (RFC 1123: labels of letters, digits and `-`, dot separated, at most 253 characters) nor an
/// IP address is an error `nodefile-bad-host`; a file without hosts is an error
/// `nodefile-empty`. Spans are byte offsets into `text`.
///
/// ```
/// let (hosts, diagnostics) = pnet_topology::parse_nodefile("# cluster\nnode1\n node2 # GPU\n");
/// assert_eq!(hosts, ["node1", "node2"]);
/// assert!(diagnostics.is_empty());
/// ```
pub fn parse_nodefile(text: &str) -> (Vec<String>, Vec<Diagnostic>) {
    let mut hosts: Vec<(String, std::ops::Range<usize>)> = Vec::new();
    let mut diagnostics = Vec::new();
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let content = line.split('#').next().unwrap_or("");
        let trimmed_start = content.len() - content.trim_start().len();
        let host = content.trim();
        let span = line_start + trimmed_start..line_start + trimmed_start + host.len();
        line_start += line.len();
        if host.is_empty() {
            continue;
        }
        if let Some(problem) = host_problem(host) {
            let mut d = Diagnostic::error_at(
                "nodefile-bad-host",
                span,
                format!("`{host}` is not a host name: {problem}"),
            );
            if host.contains(char::is_whitespace) {
                d = d.with_note("a nodefile has one host a line, without further fields");
            }
            diagnostics.push(d.with_note(
                "host names are dot-separated labels of letters, digits and `-` \
                 (RFC 1123), or IP addresses",
            ));
            continue;
        }
        if let Some((_, first)) = hosts.iter().find(|(h, _)| h.eq_ignore_ascii_case(host)) {
            diagnostics.push(
                Diagnostic::warning_at(
                    "nodefile-duplicate-host",
                    span,
                    format!("host `{host}` is listed again; it counts once"),
                )
                .with_note(format!(
                    "first listed at bytes {}..{}",
                    first.start, first.end
                )),
            );
            continue;
        }
        hosts.push((host.to_string(), span));
    }
    if hosts.is_empty() && !crate::has_errors(&diagnostics) {
        diagnostics.push(
            Diagnostic::error_at(
                "nodefile-empty",
                0..text.len(),
                "the nodefile lists no hosts",
            )
            .with_note("write one host a line, e.g. with `hostname > nodefile`"),
        );
    }
    (hosts.into_iter().map(|(h, _)| h).collect(), diagnostics)
}

/// Why `host` is not a host name or IP address, if it is not.
fn host_problem(host: &str) -> Option<String> {
    if host.parse::<Ipv4Addr>().is_ok() || host.parse::<Ipv6Addr>().is_ok() {
        return None;
    }
    if let Some(c) = host
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '.'))
    {
        return Some(format!("`{c}` is not allowed"));
    }
    if host.len() > 253 {
        return Some(format!(
            "it has {} characters, at most 253 are allowed",
            host.len()
        ));
    }
    // a fully qualified name may end with a dot
    let name = host.strip_suffix('.').unwrap_or(host);
    for label in name.split('.') {
        if label.is_empty() {
            return Some("it has an empty label (two dots, or a dot at the start)".into());
        }
        if label.len() > 63 {
            return Some(format!("the label `{label}` is longer than 63 characters"));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Some(format!("the label `{label}` starts or ends with `-`"));
        }
    }
    None
}

/// The name of this host: `gethostname(2)`, else `/proc/sys/kernel/hostname`, else
/// `localhost`.
pub fn local_hostname() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the pointer and length describe `buffer`, which gethostname writes at most
    // `len` bytes into.
    let rc = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if rc == 0 {
        let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
        if let Ok(name) = std::str::from_utf8(&buffer[..end])
            && !name.trim().is_empty()
        {
            return name.trim().to_string();
        }
    }
    match std::fs::read_to_string("/proc/sys/kernel/hostname") {
        Ok(name) if !name.trim().is_empty() => name.trim().to_string(),
        _ => "localhost".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn render(text: &str) -> String {
        let (hosts, diagnostics) = parse_nodefile(text);
        let mut out = format!("hosts: {}\n", hosts.join(" "));
        for d in diagnostics {
            out.push_str(&format!("{}\n", crate::tests::brief(&d)));
        }
        out
    }

    #[test]
    fn hosts_comments_blank_lines_and_white_space() {
        expect![[r#"
            hosts: node1 node-2.example.org 10.0.0.7 ::1 fqdn.example.
        "#]]
        .assert_eq(&render(
            "# the cluster\n\nnode1\n  node-2.example.org  \r\n10.0.0.7 # rack 3\n::1\nfqdn.example.",
        ));
    }

    #[test]
    fn duplicates_are_warnings() {
        expect![[r#"
            hosts: a b
            warning nodefile-duplicate-host@4..5: host `a` is listed again; it counts once
            warning nodefile-duplicate-host@6..7: host `A` is listed again; it counts once
        "#]]
        .assert_eq(&render("a\nb\na\nA\n"));
    }

    #[test]
    fn bad_hosts_are_errors() {
        expect![[r#"
            hosts: ok
            error nodefile-bad-host@0..7: `my_host` is not a host name: `_` is not allowed
            error nodefile-bad-host@8..20: `host slots=4` is not a host name: ` ` is not allowed
            error nodefile-bad-host@21..24: `-ab` is not a host name: the label `-ab` starts or ends with `-`
            error nodefile-bad-host@25..29: `a..b` is not a host name: it has an empty label (two dots, or a dot at the start)
            error nodefile-bad-host@33..36: `hö` is not a host name: `ö` is not allowed
        "#]]
        .assert_eq(&render("my_host\nhost slots=4\n-ab\na..b\nok\nhö\n"));
        let long = "a".repeat(64);
        let (_, d) = parse_nodefile(&long);
        assert_eq!(d[0].code, "nodefile-bad-host");
        assert_eq!(d[0].range(), 0..64);
        let (_, d) = parse_nodefile("host slots=4");
        assert_eq!(
            d[0].notes[0],
            "a nodefile has one host a line, without further fields"
        );
    }

    #[test]
    fn empty_nodefile() {
        expect![[r#"
            hosts: 
            error nodefile-empty@0..12: the nodefile lists no hosts
        "#]]
        .assert_eq(&render("# nothing\n\n "));
        // only bad hosts: the errors say enough
        let (hosts, d) = parse_nodefile("a_b");
        assert!(hosts.is_empty());
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn local_hostname_is_a_valid_host() {
        let name = local_hostname();
        assert!(!name.is_empty());
        let (hosts, d) = parse_nodefile(&name);
        assert_eq!(hosts, [name], "{d:?}");
    }
}
