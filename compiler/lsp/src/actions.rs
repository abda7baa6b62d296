//! Code actions: quick fixes for diagnostics, from the diagnostic's code and span, the text
//! and sema's scopes: `=` where `:=` is meant, a misspelled place (the nearest names of the
//! net), a missing place (declared in the net, with the type of what it connects to), an
//! unconnected port (connected to a place of its type), and what a `help:` note spells.

use std::path::Path;

use pnet_sema::facts::SymbolKind;
use pnet_syntax::Span;
use pnet_syntax::xml::{self, DefunBody, Root, TransitionBody};

use crate::analysis::Analysis;

/// One replacement in the document.
#[derive(Clone, Debug, PartialEq)]
pub struct Replace {
    pub start: u32,
    pub end: u32,
    pub text: String,
}

/// A quick fix: its title and edits (in the document the diagnostic is in).
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    pub title: String,
    pub edits: Vec<Replace>,
    pub preferred: bool,
}

/// Edit distance (insertions, deletions, substitutions), on chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(cur)
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// The names among `candidates` close to `name` (nearest first, at most three).
pub fn nearest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    let mut v: Vec<(usize, &str)> = candidates
        .filter(|c| *c != name)
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .collect();
    v.sort();
    v.dedup();
    v.into_iter().take(3).map(|(_, c)| c).collect()
}

/// The first `` `...` `` in `s`.
fn backticked(s: &str) -> Option<&str> {
    let a = s.find('`')? + 1;
    let len = s[a..].find('`')?;
    Some(&s[a..a + len])
}

fn is_word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The fixes the diagnostic's own `help:` notes spell out (in `message`, as the server
/// sends them: `note: help: did you mean `x`?`, `note: help: write `1L``).
fn help_fixes(text: &str, message: &str, start: u32, end: u32) -> Vec<Fix> {
    let range = &text[start as usize..end as usize];
    let mut out = Vec::new();
    for line in message.lines() {
        let Some(help) = line.trim_start_matches("note: ").strip_prefix("help: ") else {
            continue;
        };
        if let Some(rest) = help.strip_prefix("did you mean")
            && let Some(name) = backticked(rest)
            && is_word(range)
        {
            // `${a}` offered for the name inside `${aa}`
            let name = name
                .strip_prefix("${")
                .and_then(|n| n.strip_suffix('}'))
                .unwrap_or(name);
            out.push(Fix {
                title: format!("Change to `{name}`"),
                edits: vec![Replace {
                    start,
                    end,
                    text: name.to_string(),
                }],
                preferred: true,
            });
        }
        if let Some(rest) = help.strip_prefix("write ")
            && let Some(lit) = backticked(rest)
            && let Some(fix) = literal_fix(text, start, end, lit)
        {
            out.push(fix);
        }
    }
    out
}

/// "Write `1L`": the one number literal in `start..end` that `lit` spells with a suffix.
fn literal_fix(text: &str, start: u32, end: u32, lit: &str) -> Option<Fix> {
    let b = text.as_bytes();
    let (s, e) = (start as usize, end as usize);
    let unsigned = lit.strip_prefix('-').unwrap_or(lit);
    let mut found = Vec::new();
    let mut i = s;
    while i < e {
        let starts_number = b[i].is_ascii_digit()
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.'));
        if !starts_number {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < e && (b[j].is_ascii_alphanumeric() || b[j] == b'.' || b[j] == b'_') {
            j += 1;
        }
        let word = &text[i..j];
        if unsigned.len() > word.len() && unsigned.starts_with(word) {
            found.push((i, j));
        }
        i = j;
    }
    let [(i, j)] = found[..] else {
        return None;
    };
    Some(Fix {
        title: format!("Write `{lit}`"),
        edits: vec![Replace {
            start: i as u32,
            end: j as u32,
            text: unsigned.to_string(),
        }],
        preferred: true,
    })
}

/// The quick fixes for the diagnostic `code` (with `message`, whose `help:` notes may
/// spell a fix) at `start..end` of the open document `path`.
pub fn quick_fixes(
    a: &Analysis,
    path: &Path,
    code: &str,
    message: &str,
    start: u32,
    end: u32,
) -> Vec<Fix> {
    let Some(doc) = a.docs.get(path) else {
        return Vec::new();
    };
    let text = &*doc.text;
    let (s, e) = (start as usize, (end as usize).min(text.len()));
    if s > e || !text.is_char_boundary(s) || !text.is_char_boundary(e) {
        return Vec::new();
    }
    let mut out = help_fixes(text, message, start, end);
    match code {
        "unexpected_character" if &text[s..e] == "=" => {
            let prev = text[..s].trim_end().chars().last();
            let next = text[e..].chars().next();
            if !matches!(prev, Some('<' | '>' | '!' | '=' | ':')) && next != Some('=') {
                out.push(Fix {
                    title: "Replace `=` by `:=`".into(),
                    edits: vec![Replace {
                        start,
                        end,
                        text: ":=".into(),
                    }],
                    preferred: true,
                });
            }
        }
        "unknown_place" => {
            let name = &text[s..e];
            for l in a.locate(path) {
                let facts = a.facts(l.ws);
                let Some(scope) = facts.scope_at(Span::new(l.file, start, end)) else {
                    continue;
                };
                for (i, n) in nearest(name, scope.places.iter().map(|p| p.name.as_str()))
                    .into_iter()
                    .enumerate()
                {
                    out.push(Fix {
                        title: format!("Change to `{n}`"),
                        edits: vec![Replace {
                            start,
                            end,
                            text: n.to_string(),
                        }],
                        preferred: i == 0,
                    });
                }
                if let Some(fix) = declare_place(a, l, text, name, start) {
                    out.push(fix);
                }
                break;
            }
        }
        "port-not-connected" | "output_port_not_connected" => {
            if let Some(l) = a.locate(path).into_iter().next() {
                out.extend(connect_port(a, l, text, message, start));
            }
        }
        _ => {}
    }
    // the same fix from a help note and from the scope: once, preferred if either is
    let mut unique: Vec<Fix> = Vec::new();
    for f in out {
        match unique.iter_mut().find(|u| u.edits == f.edits) {
            Some(u) => u.preferred |= f.preferred,
            None => unique.push(f),
        }
    }
    unique
}

/// The value of attribute `name` in the tag around `offset`.
fn tag_attribute<'t>(text: &'t str, offset: usize, name: &str) -> Option<&'t str> {
    let lt = text[..offset].rfind('<')?;
    let gt = offset + text[offset..].find('>')?;
    let tag = &text[lt..gt];
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    let len = tag[at..].find('"')?;
    Some(&tag[at..at + len])
}

/// "Declare place `name`": a `<place>` in the net holding `offset`, after its last place
/// (or before its first transition), typed as the port it connects to.
fn declare_place(
    a: &Analysis,
    l: crate::analysis::Located,
    text: &str,
    name: &str,
    offset: u32,
) -> Option<Fix> {
    let parsed = a.parsed(l)?;
    let Some(Root::Defun(d)) = &parsed.ast.root else {
        return None;
    };
    let net = innermost_net(d, offset)?;
    let off = offset as usize;
    let ty = match tag_attribute(text, off, "type") {
        Some(t) => t.to_string(),
        // a connection: the type of the port it names (resolved by sema)
        None => {
            let lt = text[..off].rfind('<').unwrap_or(0) as u32;
            let gt = text[off..].find('>').map_or(text.len(), |i| off + i) as u32;
            a.facts(l.ws)
                .references
                .iter()
                .find(|r| {
                    r.kind == SymbolKind::Port
                        && r.span.file == l.file
                        && lt <= r.span.start
                        && r.span.end <= gt
                })
                .and_then(|r| r.ty.as_ref())
                .map_or("control".to_string(), pnet_stdlib::ty::attribute_name)
        }
    };
    let decl = format!("<place name=\"{name}\" type=\"{ty}\"/>");
    let indent_of = |at: u32| {
        let line_start = text[..at as usize].rfind('\n').map_or(0, |i| i + 1);
        text[line_start..at as usize]
            .chars()
            .take_while(|c| c.is_whitespace())
            .collect::<String>()
    };
    let edit = if let Some(last) = net.places.last() {
        let at = last.span.end;
        Replace {
            start: at,
            end: at,
            text: format!("\n{}{decl}", indent_of(last.span.start)),
        }
    } else {
        let first = net.transitions.first()?;
        let at = first.span.start;
        Replace {
            start: at,
            end: at,
            text: format!("{decl}\n{}", indent_of(at)),
        }
    };
    Some(Fix {
        title: format!("Declare place `{name}` of type `{ty}`"),
        edits: vec![edit],
        preferred: false,
    })
}

/// "Connect port `p` to place `q`": for a transition's unconnected port (the diagnostic's
/// first line names it), a `connect-in`/`connect-out` to each place of the net of the port's
/// type (the place of the port's name first, then the nearest names; at most three).
fn connect_port(
    a: &Analysis,
    l: crate::analysis::Located,
    text: &str,
    message: &str,
    offset: u32,
) -> Vec<Fix> {
    let first = message.lines().next().unwrap_or_default();
    let kind = if first.starts_with("input port") {
        "connect-in"
    } else if first.starts_with("output port") {
        "connect-out"
    } else {
        return Vec::new();
    };
    let Some(port) = backticked(first) else {
        return Vec::new();
    };
    let Some(parsed) = a.parsed(l) else {
        return Vec::new();
    };
    let Some(Root::Defun(d)) = &parsed.ast.root else {
        return Vec::new();
    };
    let Some(net) = innermost_net(d, offset) else {
        return Vec::new();
    };
    let Some(t) = net
        .transitions
        .iter()
        .find(|t| t.span.start <= offset && offset <= t.span.end)
    else {
        return Vec::new();
    };
    // the port's type as written, when the transition's defun is inline
    let ty = match &t.body {
        Some(TransitionBody::Defun(inner)) => inner
            .ports
            .iter()
            .find(|p| p.name.text == port)
            .map(|p| p.ty.text.clone()),
        _ => None,
    };
    let mut places: Vec<(usize, &str)> = net
        .places
        .iter()
        .filter(|p| match &ty {
            Some(ty) => p.ty.text == *ty,
            None => p.name.text == port,
        })
        .map(|p| (edit_distance(port, &p.name.text), p.name.text.as_str()))
        .collect();
    places.sort();
    let Some(close) = text[..t.span.end as usize].rfind("</transition>") else {
        return Vec::new();
    };
    let line_start = text[..close].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..close];
    let (at, insert) = if indent.chars().all(char::is_whitespace) {
        (line_start, format!("{indent}  "))
    } else {
        (close, String::new())
    };
    places
        .into_iter()
        .take(3)
        .enumerate()
        .map(|(i, (_, place))| Fix {
            title: format!("Connect port `{port}` to place `{place}`"),
            edits: vec![Replace {
                start: at as u32,
                end: at as u32,
                text: if insert.is_empty() {
                    format!("<{kind} port=\"{port}\" place=\"{place}\"/>")
                } else {
                    format!("{insert}<{kind} port=\"{port}\" place=\"{place}\"/>\n")
                },
            }],
            preferred: i == 0,
        })
        .collect()
}

/// A type as written in a `type` attribute (a struct by its name).
/// The net of the innermost defun holding `offset` that has a net (`d` holds it).
fn innermost_net(d: &xml::Defun, offset: u32) -> Option<&xml::NetDecl> {
    let Some(DefunBody::Net(n)) = &d.body else {
        return None;
    };
    for t in &n.transitions {
        if let Some(TransitionBody::Defun(inner)) = &t.body
            && inner.span.start <= offset
            && offset <= inner.span.end
            && let Some(found) = innermost_net(inner, offset)
        {
            return Some(found);
        }
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_and_nearest_names() {
        assert_eq!(edit_distance("countr", "counter"), 1);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let names = ["counter", "count", "done", "counters"];
        assert_eq!(
            nearest("countr", names.iter().copied()),
            ["count", "counter", "counters"]
        );
        assert_eq!(nearest("x", names.iter().copied()), Vec::<&str>::new());
    }
}
