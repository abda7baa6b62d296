//! Rename (and `prepareRename`) of places, ports, structs, fields, templates and
//! specializations: the declaration, every use sema resolved to it (connections, `type=`,
//! `use name=`, across included files), and, for ports and fields, the `${port.field}`
//! references inside expressions and conditions (found by their scope and type).

use std::path::Path;

use pnet_sema::facts::{Facts, SymbolKind};
use pnet_stdlib::Type;
use pnet_syntax::{FileId, Span};

use crate::analysis::{Analysis, Located};
use crate::features::{Item, Loc, ScopeIndex, dollar_path_at, item_at, loc_of, path_type};

/// One segment of a `${a.b.c}` reference: its text and byte span.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub name: String,
    pub start: u32,
    pub end: u32,
}

/// Every `${...}` reference of a text, as its segments.
pub fn dollar_refs(text: &str) -> Vec<Vec<Segment>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("${") {
        let open = from + i + 2;
        let Some(len) = text[open..].find(['}', '<', '\n']) else {
            break;
        };
        if text.as_bytes()[open + len] != b'}' {
            from = open;
            continue;
        }
        let mut segs = Vec::new();
        let mut s = open;
        for part in text[open..open + len].split('.') {
            let lead = part.len() - part.trim_start().len();
            let name = part.trim();
            segs.push(Segment {
                name: name.to_string(),
                start: (s + lead) as u32,
                end: (s + lead + name.len()) as u32,
            });
            s += part.len() + 1;
        }
        out.push(segs);
        from = open + len + 1;
    }
    out
}

/// The `${...}` references of `text` on the line of `offset` between the `<` around it
/// (those [`dollar_refs`] finds there: a reference spans neither a line break nor a `<`),
/// without a scan of the whole text.
fn dollar_refs_near(text: &str, offset: usize) -> Vec<Vec<Segment>> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind(['\n', '<']).unwrap_or(0);
    let end = text[offset..]
        .find(['\n', '<'])
        .map_or(text.len(), |i| offset + i);
    let mut refs = dollar_refs(&text[start..end]);
    for seg in refs.iter_mut().flatten() {
        seg.start += start as u32;
        seg.end += start as u32;
    }
    refs
}

/// What a rename is about.
struct Target {
    kind: SymbolKind,
    name: String,
    decl: Loc,
    /// For a field: the name of its struct.
    of_struct: Option<String>,
    /// The name under the cursor.
    here: (u32, u32),
}

fn renameable(k: SymbolKind) -> bool {
    matches!(
        k,
        SymbolKind::Place
            | SymbolKind::Port
            | SymbolKind::Struct
            | SymbolKind::Field
            | SymbolKind::Template
            | SymbolKind::Specialize
    )
}

/// The struct a field symbol belongs to: sema records a struct's fields, then the struct.
fn struct_of_field(facts: &Facts, index: usize) -> Option<&str> {
    facts.symbols[index + 1..]
        .iter()
        .find(|s| s.kind == SymbolKind::Struct)
        .map(|s| s.name.as_str())
}

fn field_decl(facts: &Facts, of_struct: &str, field: &str) -> Option<Span> {
    facts
        .symbols
        .iter()
        .enumerate()
        .find(|(i, s)| {
            s.kind == SymbolKind::Field
                && s.name == field
                && struct_of_field(facts, *i) == Some(of_struct)
        })
        .map(|(_, s)| s.span)
}

fn target_at(a: &Analysis, path: &Path, offset: u32) -> Option<Target> {
    if let Some((l, item)) = item_at(a, path, offset) {
        let (kind, name, decl_span, here) = match &item {
            Item::Ref(r) => (r.kind, r.name.clone(), r.target, r.span),
            Item::Sym(s) => (s.kind, s.name.clone(), s.span, s.span),
        };
        if !renameable(kind) {
            return None;
        }
        let of_struct = match kind {
            SymbolKind::Field => {
                let facts = a.facts(l.ws);
                facts
                    .symbols
                    .iter()
                    .position(|s| s.kind == SymbolKind::Field && s.span == decl_span)
                    .and_then(|i| struct_of_field(facts, i))
                    .map(str::to_string)
            }
            _ => None,
        };
        return Some(Target {
            kind,
            name,
            decl: loc_of(a, l, decl_span)?,
            of_struct,
            here: (here.start, here.end),
        });
    }
    // a `${port.field}` inside an expression
    let text = a.docs.get(path)?.text.clone();
    dollar_path_at(&text, offset as usize)?;
    let segs = dollar_refs_near(&text, offset as usize)
        .into_iter()
        .find(|s| {
            s.first().is_some_and(|f| f.start <= offset)
                && s.last().is_some_and(|l| l.end >= offset)
        })?;
    let i = segs
        .iter()
        .position(|s| s.start <= offset && offset <= s.end)?;
    let names: Vec<String> = segs.iter().map(|s| s.name.clone()).collect();
    for l in a.locate(path) {
        let Some(scope) = crate::features::scope_at(a, l, offset) else {
            continue;
        };
        let here = (segs[i].start, segs[i].end);
        if i == 0 {
            let port = scope.ports.iter().find(|p| p.name == names[0])?;
            return Some(Target {
                kind: SymbolKind::Port,
                name: port.name.clone(),
                decl: loc_of(a, l, port.span)?,
                of_struct: None,
                here,
            });
        }
        if let Some(Type::Struct(st)) = path_type(&scope, &names[..i]) {
            let span = field_decl(a.facts(l.ws), &st.name, &names[i])?;
            return Some(Target {
                kind: SymbolKind::Field,
                name: names[i].clone(),
                decl: loc_of(a, l, span)?,
                of_struct: Some(st.name.to_string()),
                here,
            });
        }
    }
    None
}

/// The declaration of the port or field a `${port.field}` inside an expression names, at
/// `offset` (go to definition, when the name is no recorded reference).
pub(crate) fn expression_declaration(a: &Analysis, path: &Path, offset: u32) -> Option<Loc> {
    target_at(a, path, offset).map(|t| t.decl)
}

/// `prepareRename`: the span of the name under the cursor and the name, if it can be renamed.
pub fn prepare(a: &Analysis, path: &Path, offset: u32) -> Option<((u32, u32), String)> {
    let t = target_at(a, path, offset)?;
    Some((t.here, t.name))
}

fn valid_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `new_name` is declared beside the target already (a place of the same net, a port
/// of the same defun, a field of the same struct, a struct or template of the workspace):
/// what it is, then.
fn taken(a: &Analysis, path: &Path, t: &Target, new_name: &str) -> Option<&'static str> {
    for l in a.locate(path) {
        let facts = a.facts(l.ws);
        let is_decl = |span: Span| loc_of(a, l, span).as_ref() == Some(&t.decl);
        match t.kind {
            SymbolKind::Place => {
                for scope in &facts.scopes {
                    if scope.places.iter().any(|p| is_decl(p.span))
                        && scope.places.iter().any(|p| p.name == new_name)
                    {
                        return Some("a place of this net");
                    }
                }
            }
            SymbolKind::Port => {
                for scope in &facts.scopes {
                    if scope.ports.iter().any(|p| is_decl(p.span))
                        && scope.ports.iter().any(|p| p.name == new_name)
                    {
                        return Some("a port of this defun");
                    }
                }
            }
            SymbolKind::Field => {
                if let Some(st) = &t.of_struct
                    && field_decl(facts, st, new_name).is_some()
                {
                    return Some("a field of this struct");
                }
            }
            k => {
                if facts
                    .symbols
                    .iter()
                    .any(|s| s.kind == k && s.name == new_name)
                {
                    return Some(match k {
                        SymbolKind::Struct => "a struct",
                        SymbolKind::Template => "a template",
                        _ => "a specialization",
                    });
                }
            }
        }
    }
    None
}

/// The spans to replace by the new name (the declaration first), or why not.
pub fn rename(a: &Analysis, path: &Path, offset: u32, new_name: &str) -> Result<Vec<Loc>, String> {
    let t = target_at(a, path, offset).ok_or("no place, port, struct, field or template here")?;
    if !valid_name(new_name) {
        return Err(format!(
            "`{new_name}` is not a valid name (names match [A-Za-z_][A-Za-z0-9_]*)"
        ));
    }
    if new_name != t.name
        && let Some(what) = taken(a, path, &t, new_name)
    {
        return Err(format!("`{new_name}` is already {what}"));
    }
    let mut out = vec![t.decl.clone()];
    let mut push = |l: Option<Loc>| {
        if let Some(l) = l
            && !out.contains(&l)
        {
            out.push(l);
        }
    };
    let mut seen = Vec::new();
    let paths: Vec<_> = a.docs.keys().cloned().collect();
    for p in paths {
        for l in a.locate(&p) {
            if seen.contains(&l.ws) {
                continue;
            }
            seen.push(l.ws);
            let facts = a.facts(l.ws);
            for r in &facts.references {
                if loc_of(a, l, r.target).as_ref() == Some(&t.decl) {
                    push(loc_of(a, l, r.span));
                }
            }
            if !matches!(t.kind, SymbolKind::Port | SymbolKind::Field) {
                continue;
            }
            let files: Vec<FileId> = l.ws.files(a.db()).iter().map(|f| *f.id(a.db())).collect();
            for file in files {
                let Some(text) = a.text_of(l.ws, file) else {
                    continue;
                };
                let here = Located { ws: l.ws, file };
                let scopes = ScopeIndex::new(facts, file);
                for segs in dollar_refs(&text) {
                    // the name first: a scope look-up only for the references that may match
                    let names: Vec<String> = segs.iter().map(|s| s.name.clone()).collect();
                    let may_match = match t.kind {
                        SymbolKind::Port => names[0] == t.name,
                        _ => names[1..].contains(&t.name),
                    };
                    if !may_match {
                        continue;
                    }
                    let Some(scope) = scopes.at(segs[0].start, segs[0].end) else {
                        continue;
                    };
                    let seg_loc = |s: &Segment| loc_of(a, here, Span::new(file, s.start, s.end));
                    match t.kind {
                        SymbolKind::Port => {
                            if names[0] == t.name
                                && scope.ports.iter().any(|p| {
                                    p.name == t.name
                                        && loc_of(a, here, p.span).as_ref() == Some(&t.decl)
                                })
                            {
                                push(seg_loc(&segs[0]));
                            }
                        }
                        _ => {
                            for i in 1..segs.len() {
                                if names[i] == t.name
                                    && let Some(Type::Struct(st)) = path_type(scope, &names[..i])
                                    && Some(&*st.name) == t.of_struct.as_deref()
                                {
                                    push(seg_loc(&segs[i]));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollar_references_and_their_segments() {
        let text = "${a} + ${ p . x }.${b";
        let refs = dollar_refs(text);
        assert_eq!(refs.len(), 2);
        assert_eq!(
            refs[0],
            [Segment {
                name: "a".into(),
                start: 2,
                end: 3
            }]
        );
        let names: Vec<(&str, &str)> = refs[1]
            .iter()
            .map(|s| (s.name.as_str(), &text[s.start as usize..s.end as usize]))
            .collect();
        assert_eq!(names, [("p", "p"), ("x", "x")]);
    }
}
