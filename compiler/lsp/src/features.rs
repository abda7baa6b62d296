//! The answers to requests, from sema's facts (resolution, types, scopes) and the AST.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use lsp_types::{
    CompletionItem, CompletionItemKind, DocumentSymbol, Position, Range, SymbolKind as LspKind,
};
use pnet_sema::facts::{Reference, Scope, Symbol, SymbolKind};
use pnet_stdlib::ty::BUILTIN_TYPE_NAMES as BUILTIN_TYPES;
use pnet_stdlib::{Builtin, Type};
use pnet_syntax::xml::{self, DefunBody, Root, TransitionBody};
use pnet_syntax::{FileId, Span};

use crate::analysis::{Analysis, Located};
use crate::line_index::LineIndex;

/// A location in some file, as a byte span.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    pub path: PathBuf,
    pub start: u32,
    pub end: u32,
}

fn contains(s: Span, file: FileId, offset: u32) -> bool {
    s.file == file && s.start <= offset && offset <= s.end
}

pub(crate) fn kind_word(k: SymbolKind) -> &'static str {
    match k {
        SymbolKind::Place => "place",
        SymbolKind::Port => "port",
        SymbolKind::Struct => "struct",
        SymbolKind::Field => "field",
        SymbolKind::Template => "template",
        SymbolKind::Specialize => "specialize",
        SymbolKind::Transition => "transition",
        SymbolKind::Defun => "defun",
        SymbolKind::File => "file",
    }
}

fn describe_type(ty: &Type) -> String {
    match ty {
        Type::Struct(st) => {
            let mut s = format!("struct {} {{", st.name);
            for (i, (n, t)) in st.fields.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s.push_str(&format!(" {n}: {t}"));
            }
            s.push_str(" }");
            s
        }
        t => t.to_string(),
    }
}

pub(crate) fn loc_of(a: &Analysis, l: Located, span: Span) -> Option<Loc> {
    Some(Loc {
        path: a.path_of(l.ws, span.file)?.to_path_buf(),
        start: span.start,
        end: span.end,
    })
}

/// The reference or declaration under the cursor, in the first workspace that has one.
pub(crate) fn item_at(a: &Analysis, path: &Path, offset: u32) -> Option<(Located, Item)> {
    for l in a.locate(path) {
        // the transition's facts when the offset is inside one (they hold every name there)
        let near = a.facts_at(l, offset);
        let facts = near.as_ref().unwrap_or_else(|| a.facts(l.ws));
        if let Some(r) = facts
            .references
            .iter()
            .filter(|r| contains(r.span, l.file, offset))
            .min_by_key(|r| r.span.end - r.span.start)
        {
            return Some((l, Item::Ref(r.clone())));
        }
        if let Some(s) = facts
            .symbols
            .iter()
            .find(|s| contains(s.span, l.file, offset))
        {
            return Some((l, Item::Sym(s.clone())));
        }
    }
    None
}

/// The innermost scope holding `offset` of a located file ([`pnet_sema::facts::Facts::scope_at`]):
/// from the facts of the transition around it ([`Analysis::facts_at`]) when one of its scopes
/// holds it, else from the whole facts (the root defun's scope, or outside the transitions).
pub(crate) fn scope_at(a: &Analysis, l: Located, offset: u32) -> Option<Cow<'_, Scope>> {
    let here = Span::new(l.file, offset, offset);
    if let Some(near) = a.facts_at(l, offset)
        && let Some(s) = near.scope_at(here)
    {
        return Some(Cow::Owned(s.clone()));
    }
    a.facts(l.ws).scope_at(here).map(Cow::Borrowed)
}

pub(crate) enum Item {
    Ref(Reference),
    Sym(Symbol),
}

/// The `${a.b.c}` reference around `offset`: the path up to and including the segment under
/// the cursor.
pub(crate) fn dollar_path_at(text: &str, offset: usize) -> Option<Vec<String>> {
    let before = &text[..offset.min(text.len())];
    let open = before.rfind("${")?;
    if before[open..].contains('}') {
        return None;
    }
    let rest = &text[open + 2..];
    let close = rest.find('}').unwrap_or(rest.len());
    let inner = &rest[..close];
    let rel = offset - (open + 2);
    if rel > inner.len() {
        return None;
    }
    let end = inner[rel..].find('.').map_or(inner.len(), |i| rel + i);
    Some(
        inner[..end]
            .split('.')
            .map(|s| s.trim().to_string())
            .collect(),
    )
}

fn word_at(text: &str, offset: usize) -> &str {
    let b = text.as_bytes();
    let ok = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut s = offset.min(b.len());
    while s > 0 && ok(b[s - 1]) {
        s -= 1;
    }
    let mut e = offset.min(b.len());
    while e < b.len() && ok(b[e]) {
        e += 1;
    }
    &text[s..e]
}

pub(crate) fn path_type(scope: &Scope, path: &[String]) -> Option<Type> {
    let port = scope.ports.iter().find(|p| Some(&p.name) == path.first())?;
    let mut ty = port.ty.clone()?;
    for seg in &path[1..] {
        ty = match &ty {
            Type::Struct(st) => st.fields.iter().find(|(n, _)| **n == **seg)?.1.clone(),
            _ => return None,
        };
    }
    Some(ty)
}

/// Hover text (markdown) and the span it is about.
pub fn hover(a: &Analysis, path: &Path, offset: u32) -> Option<(String, Option<(u32, u32)>)> {
    let doc = a.docs.get(path)?;
    let text = &*doc.text;
    if let Some((_, item)) = item_at(a, path, offset) {
        let (kind, name, ty, span) = match &item {
            Item::Ref(r) => (r.kind, &r.name, &r.ty, r.span),
            Item::Sym(s) => (s.kind, &s.name, &s.ty, s.span),
        };
        let body = match (kind, ty) {
            (SymbolKind::Struct, Some(t)) => describe_type(t),
            (_, Some(t)) => format!("{} {name}: {}", kind_word(kind), describe_type(t)),
            (_, None) => format!("{} {name}", kind_word(kind)),
        };
        return Some((format!("```\n{body}\n```"), Some((span.start, span.end))));
    }
    if let Some(p) = dollar_path_at(text, offset as usize) {
        for l in a.locate(path) {
            if let Some(scope) = scope_at(a, l, offset)
                && let Some(ty) = path_type(&scope, &p)
            {
                let what = if p.len() == 1 { "port" } else { "field" };
                return Some((
                    format!(
                        "```\n{what} ${{{}}}: {}\n```",
                        p.join("."),
                        describe_type(&ty)
                    ),
                    None,
                ));
            }
        }
        return None;
    }
    let w = word_at(text, offset as usize);
    if let Some(b) = Builtin::from_name(w) {
        return Some((
            format!("```\n{}\n```\nbuilt-in function", b.signature()),
            None,
        ));
    }
    None
}

/// Where the name under the cursor is declared.
pub fn definition(a: &Analysis, path: &Path, offset: u32) -> Vec<Loc> {
    match item_at(a, path, offset) {
        Some((l, Item::Ref(r))) => loc_of(a, l, r.target).into_iter().collect(),
        Some((l, Item::Sym(s))) => loc_of(a, l, s.span).into_iter().collect(),
        // a `${port}` or `${port.field}` inside an expression, or a local variable's first
        // assignment
        None => crate::rename::expression_declaration(a, path, offset)
            .or_else(|| crate::hints::local_definition(a, path, offset))
            .into_iter()
            .collect(),
    }
}

/// Every use of the declaration under the cursor (or that the name under it refers to),
/// across the open documents' workspaces.
pub fn references(a: &Analysis, path: &Path, offset: u32, include_decl: bool) -> Vec<Loc> {
    let Some((l, item)) = item_at(a, path, offset) else {
        return Vec::new();
    };
    let target = match &item {
        Item::Ref(r) => r.target,
        Item::Sym(s) => s.span,
    };
    let Some(decl) = loc_of(a, l, target) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if include_decl {
        out.push(decl.clone());
    }
    let paths: Vec<PathBuf> = a.docs.keys().cloned().collect();
    for p in paths {
        for l in a.locate(&p) {
            for r in &a.facts(l.ws).references {
                if loc_of(a, l, r.target).as_ref() == Some(&decl)
                    && let Some(x) = loc_of(a, l, r.span)
                    && !out.contains(&x)
                {
                    out.push(x);
                }
            }
        }
    }
    out
}

fn item(label: &str, kind: CompletionItemKind, detail: Option<String>) -> CompletionItem {
    CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail,
        ..CompletionItem::default()
    }
}

/// The attribute whose value the cursor is in (`place` in `place="p|`), if any.
fn attribute_at(text: &str, offset: usize) -> Option<&str> {
    let before = &text[..offset.min(text.len())];
    let lt = before.rfind('<')?;
    let tag = &before[lt..];
    if tag.contains('>') || tag.matches('"').count().is_multiple_of(2) {
        return None;
    }
    let q = tag.rfind('"')?;
    let eq = tag[..q].trim_end().strip_suffix('=')?;
    let name_start = eq.rfind(|c: char| c.is_whitespace()).map_or(0, |i| i + 1);
    Some(&eq[name_start..])
}

/// Whether the cursor is in the text of an element holding an expression.
fn in_expression(text: &str, offset: usize) -> bool {
    let before = &text[..offset.min(text.len())];
    let Some(lt) = before.rfind('<') else {
        return false;
    };
    let tag = &before[lt + 1..];
    let name: String = tag
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    matches!(
        name.as_str(),
        "expression" | "condition" | "value" | "size" | "alignment" | "global" | "local"
    ) && tag.contains('>')
}

/// The ports of the transition around `offset` (its inline defun), if any.
fn transition_ports(a: &Analysis, l: Located, offset: u32) -> Vec<Symbol> {
    // the transition at the offset only, parsed alone
    let Some(root) = a.root_in(l, Some((offset, offset))) else {
        return Vec::new();
    };
    let mut found: Option<Span> = None;
    if let Root::Defun(d) = &*root {
        find_transition_defun(d, offset, &mut found);
    }
    let Some(span) = found else {
        return Vec::new();
    };
    let span = Span::new(l.file, span.start, span.end);
    let find = |f: &pnet_sema::facts::Facts| {
        f.scopes
            .iter()
            .find(|s| s.span == span)
            .map(|s| s.ports.clone())
    };
    // the transition's facts hold its defun's scope (the whole facts when it is not found)
    a.facts_at(l, offset)
        .and_then(|f| find(&f))
        .or_else(|| find(a.facts(l.ws)))
        .unwrap_or_default()
}

fn find_transition_defun(d: &xml::Defun, offset: u32, out: &mut Option<Span>) {
    if let Some(DefunBody::Net(n)) = &d.body {
        for t in &n.transitions {
            if t.span.start <= offset
                && offset <= t.span.end
                && let Some(TransitionBody::Defun(inner)) = &t.body
            {
                if inner.span.start <= offset && offset <= inner.span.end {
                    find_transition_defun(inner, offset, out);
                } else {
                    *out = Some(inner.span);
                }
            }
        }
    }
}

pub fn completion(a: &Analysis, path: &Path, offset: u32) -> Vec<CompletionItem> {
    let Some(doc) = a.docs.get(path) else {
        return Vec::new();
    };
    let text = &*doc.text;
    let off = offset as usize;
    let mut out: Vec<CompletionItem> = Vec::new();
    let mut push = |c: CompletionItem| {
        if !out.iter().any(|x| x.label == c.label) {
            out.push(c)
        }
    };
    let located = a.locate(path);
    let here = |l: &Located| Span::new(l.file, offset, offset);
    if let Some(p) = dollar_path_at(text, off) {
        for l in &located {
            let Some(scope) = scope_at(a, *l, offset) else {
                continue;
            };
            if p.len() == 1 {
                for port in &scope.ports {
                    let detail = port.ty.as_ref().map(|t| t.to_string());
                    push(item(&port.name, CompletionItemKind::VARIABLE, detail));
                }
            } else if let Some(Type::Struct(st)) = path_type(&scope, &p[..p.len() - 1]) {
                for (n, t) in &st.fields {
                    push(item(n, CompletionItemKind::FIELD, Some(t.to_string())));
                }
            }
        }
        return out;
    }
    if let Some(attr) = attribute_at(text, off) {
        for l in &located {
            // the whole facts only for the attributes that need them
            let facts = || a.facts(l.ws);
            let scope = || facts().scope_at(here(l));
            match attr {
                "place" | "real" | "virtual" => {
                    for pl in scope().map(|s| s.places.as_slice()).unwrap_or_default() {
                        let detail = pl.ty.as_ref().map(|t| t.to_string());
                        push(item(&pl.name, CompletionItemKind::VARIABLE, detail));
                    }
                }
                "port" | "to" => {
                    for p in transition_ports(a, *l, offset) {
                        let detail = p.ty.as_ref().map(|t| t.to_string());
                        push(item(&p.name, CompletionItemKind::FIELD, detail));
                    }
                }
                "type" | "replace" | "with" => {
                    for t in BUILTIN_TYPES {
                        push(item(t, CompletionItemKind::KEYWORD, None));
                    }
                    for s in scope().map(|s| s.structs.as_slice()).unwrap_or_default() {
                        push(item(&s.name, CompletionItemKind::STRUCT, None));
                    }
                    for s in facts()
                        .symbols
                        .iter()
                        .filter(|s| s.kind == SymbolKind::Struct)
                    {
                        push(item(&s.name, CompletionItemKind::STRUCT, None));
                    }
                }
                "name" | "use" => {
                    for s in facts()
                        .symbols
                        .iter()
                        .filter(|s| matches!(s.kind, SymbolKind::Template | SymbolKind::Specialize))
                    {
                        push(item(
                            &s.name,
                            CompletionItemKind::FUNCTION,
                            Some(kind_word(s.kind).to_string()),
                        ));
                    }
                }
                _ => {}
            }
        }
        return out;
    }
    if in_expression(text, off) {
        for b in Builtin::ALL {
            push(item(
                b.name(),
                CompletionItemKind::FUNCTION,
                Some(b.signature().to_string()),
            ));
        }
        for l in &located {
            if let Some(scope) = scope_at(a, *l, offset) {
                for port in &scope.ports {
                    let mut c = item(
                        &format!("${{{}}}", port.name),
                        CompletionItemKind::VARIABLE,
                        port.ty.as_ref().map(|t| t.to_string()),
                    );
                    c.filter_text = Some(port.name.clone());
                    push(c);
                }
            }
        }
    }
    out
}

/// The outline: defuns, their ports, structs, places, transitions, templates.
pub fn document_symbols(a: &Analysis, path: &Path) -> Vec<DocumentSymbol> {
    let Some(doc) = a.docs.get(path) else {
        return Vec::new();
    };
    let Some(l) = a.locate(path).into_iter().next() else {
        return Vec::new();
    };
    let Some(root) = a.root_in(l, None) else {
        return Vec::new();
    };
    let cx = Cx {
        text: &doc.text,
        index: &doc.index,
    };
    match &*root {
        Root::Defun(d) => vec![cx.defun(d, "defun")],
        Root::Template(t) => cx.template(t).into_iter().collect(),
        _ => Vec::new(),
    }
}

struct Cx<'a> {
    text: &'a str,
    index: &'a LineIndex,
}

impl Cx<'_> {
    fn range(&self, s: Span) -> Range {
        self.index.range(self.text, s.start, s.end)
    }

    #[allow(deprecated)]
    fn sym(
        &self,
        name: &str,
        detail: Option<String>,
        kind: LspKind,
        whole: Span,
        sel: Span,
        children: Vec<DocumentSymbol>,
    ) -> DocumentSymbol {
        let range = self.range(whole);
        let mut selection_range = self.range(sel);
        if !(range.start <= selection_range.start && selection_range.end <= range.end) {
            selection_range = range;
        }
        DocumentSymbol {
            name: if name.is_empty() {
                "?".into()
            } else {
                name.into()
            },
            detail,
            kind,
            tags: None,
            deprecated: None,
            range,
            selection_range,
            children: (!children.is_empty()).then_some(children),
        }
    }

    fn defun(&self, d: &xml::Defun, fallback: &str) -> DocumentSymbol {
        let mut children = Vec::new();
        for p in &d.ports {
            children.push(self.sym(
                &p.name.text,
                Some(p.ty.text.clone()),
                LspKind::FIELD,
                p.span,
                p.name.span,
                Vec::new(),
            ));
        }
        if let Some(DefunBody::Net(n)) = &d.body {
            for t in &n.templates {
                if let xml::TemplateItem::Inline(t) = t {
                    children.extend(self.template(t));
                }
            }
            for s in &n.specializes {
                children.push(self.sym(
                    &s.name.text,
                    Some(format!("use {}", s.use_.text)),
                    LspKind::FUNCTION,
                    s.span,
                    s.name.span,
                    Vec::new(),
                ));
            }
            for p in &n.places {
                children.push(self.sym(
                    &p.name.text,
                    Some(p.ty.text.clone()),
                    LspKind::VARIABLE,
                    p.span,
                    p.name.span,
                    Vec::new(),
                ));
            }
            for t in &n.transitions {
                let inner = match &t.body {
                    Some(TransitionBody::Defun(d)) => vec![self.defun(d, "defun")],
                    _ => Vec::new(),
                };
                children.push(self.sym(
                    &t.name.text,
                    None,
                    LspKind::EVENT,
                    t.span,
                    t.name.span,
                    inner,
                ));
            }
        }
        let name = d.name.as_ref().map_or(fallback, |n| n.text.as_str());
        let sel = d.name.as_ref().map_or(d.tag, |n| n.span);
        self.sym(name, None, LspKind::FUNCTION, d.span, sel, children)
    }

    fn template(&self, t: &xml::Template) -> Option<DocumentSymbol> {
        let d = t.defun.as_ref()?;
        let name = t.name.as_ref().map_or("template", |n| n.text.as_str());
        let sel = t.name.as_ref().map_or(t.tag, |n| n.span);
        let inner = self.defun(d, "defun");
        Some(self.sym(
            name,
            Some("template".into()),
            LspKind::CLASS,
            t.span,
            sel,
            vec![inner],
        ))
    }
}

/// LSP range of a byte span of an open document.
pub fn range_in(a: &Analysis, path: &Path, start: u32, end: u32) -> Range {
    match a.docs.get(path) {
        Some(d) => d.index.range(&d.text, start, end),
        None => {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            LineIndex::new(&text).range(&text, start, end)
        }
    }
}

/// The byte offset of an LSP position in an open document.
pub fn offset_in(a: &Analysis, path: &Path, pos: Position) -> Option<u32> {
    let d = a.docs.get(path)?;
    Some(d.index.offset(&d.text, pos))
}

fn lsp_kind(k: SymbolKind) -> LspKind {
    match k {
        SymbolKind::Place => LspKind::VARIABLE,
        SymbolKind::Port => LspKind::FIELD,
        SymbolKind::Struct => LspKind::STRUCT,
        SymbolKind::Field => LspKind::FIELD,
        SymbolKind::Template => LspKind::CLASS,
        SymbolKind::Specialize => LspKind::FUNCTION,
        SymbolKind::Transition => LspKind::EVENT,
        SymbolKind::Defun => LspKind::FUNCTION,
        SymbolKind::File => LspKind::FILE,
    }
}

/// Whether `query`'s characters appear in `name` in order (ignoring case), as editors
/// filter workspace symbols.
fn fuzzy_match(name: &str, query: &str) -> bool {
    let mut chars = name.chars().map(|c| c.to_ascii_lowercase());
    query
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .all(|q| chars.any(|c| c == q))
}

/// A declaration found by [`workspace_symbols`].
#[derive(Clone, Debug, PartialEq)]
pub struct WorkspaceSymbol {
    pub name: String,
    pub kind: LspKind,
    /// What it is (`place`, `struct`, ...), and in which file.
    pub container: String,
    pub loc: Loc,
}

/// The declarations of every open document's workspace (its included files too) whose name
/// matches `query`, each once, sorted by name then file.
pub fn workspace_symbols(a: &Analysis, query: &str) -> Vec<WorkspaceSymbol> {
    let mut out: Vec<WorkspaceSymbol> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let paths: Vec<PathBuf> = a.docs.keys().cloned().collect();
    for p in paths {
        for l in a.locate(&p) {
            for s in &a.facts(l.ws).symbols {
                if s.kind == SymbolKind::File || s.name.is_empty() || !fuzzy_match(&s.name, query) {
                    continue;
                }
                let Some(loc) = loc_of(a, l, s.span) else {
                    continue;
                };
                if !seen.insert(loc.clone()) {
                    continue;
                }
                let file = loc
                    .path
                    .file_name()
                    .map_or(String::new(), |f| f.to_string_lossy().into_owned());
                out.push(WorkspaceSymbol {
                    name: s.name.clone(),
                    kind: lsp_kind(s.kind),
                    container: format!("{} in {file}", kind_word(s.kind)),
                    loc,
                });
            }
        }
    }
    out.sort_by(|x, y| {
        (&x.name, &x.loc.path, x.loc.start).cmp(&(&y.name, &y.loc.path, y.loc.start))
    });
    out
}

/// The built-in call around `offset` in an expression: the function, and which argument the
/// cursor is in (0-based).
pub fn call_at(text: &str, offset: usize) -> Option<(Builtin, usize)> {
    let before = &text[..offset.min(text.len())];
    // the expression's text only: back to the end of its element's start tag
    let start = before.rfind('>').map_or(0, |i| i + 1);
    let b = before.as_bytes();
    let mut depth = 0usize;
    let mut commas = 0usize;
    let mut i = before.len();
    while i > start {
        i -= 1;
        match b[i] {
            b')' => depth += 1,
            b'(' if depth > 0 => depth -= 1,
            b'(' => {
                let name = before[..i].trim_end();
                let word_start = name
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .map_or(0, |j| j + 1);
                match Builtin::from_name(&name[word_start..]) {
                    Some(f) => return Some((f, commas)),
                    // a parenthesised sub-expression: the call may be further out
                    None => commas = 0,
                }
            }
            b',' if depth == 0 => commas += 1,
            _ => {}
        }
    }
    None
}

/// The byte ranges of the parameters in a built-in's signature (`max (T, T) -> T, ...`).
pub fn parameter_ranges(signature: &str) -> Vec<(u32, u32)> {
    let Some(open) = signature.find('(') else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut s = open + 1;
    for (i, c) in signature.char_indices().skip(open + 1) {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            ',' | ')' if depth == 0 => {
                let part = &signature[s..i];
                let lead = part.len() - part.trim_start().len();
                out.push(((s + lead) as u32, (s + lead + part.trim().len()) as u32));
                s = i + 1;
                if c == ')' {
                    break;
                }
            }
            _ => {}
        }
    }
    out
}

/// [`pnet_sema::facts::Facts::scope_at`] for many look-ups in one file: the scopes sorted by
/// start with their parents, so a look-up is a binary search and a walk up the nesting
/// (instead of a scan of every scope).
pub struct ScopeIndex<'f> {
    scopes: Vec<&'f Scope>,
    parent: Vec<Option<usize>>,
}

impl<'f> ScopeIndex<'f> {
    pub fn new(facts: &'f pnet_sema::facts::Facts, file: FileId) -> ScopeIndex<'f> {
        let mut scopes: Vec<&Scope> = facts
            .scopes
            .iter()
            .filter(|s| s.span.file == file)
            .collect();
        scopes.sort_by_key(|s| (s.span.start, std::cmp::Reverse(s.span.end)));
        let mut parent = Vec::with_capacity(scopes.len());
        let mut stack: Vec<usize> = Vec::new();
        for (i, s) in scopes.iter().enumerate() {
            while let Some(&top) = stack.last() {
                if scopes[top].span.end >= s.span.end {
                    break;
                }
                stack.pop();
            }
            parent.push(stack.last().copied());
            stack.push(i);
        }
        ScopeIndex { scopes, parent }
    }

    /// The innermost scope holding `start..end`.
    pub fn at(&self, start: u32, end: u32) -> Option<&'f Scope> {
        let mut i = self
            .scopes
            .partition_point(|s| s.span.start <= start)
            .checked_sub(1);
        while let Some(j) = i {
            let s = self.scopes[j];
            if s.span.start <= start && end <= s.span.end {
                return Some(s);
            }
            i = self.parent[j];
        }
        None
    }
}

/// Scope look-ups ([`ScopeIndex::at`]) in `start..=end` of a located file: from the facts of
/// the root net's transitions there ([`Analysis::facts_in`]) when one of their scopes holds
/// the text, else from the whole facts (indexed at the first such look-up).
pub(crate) struct NearScopes<'a> {
    a: &'a Analysis,
    l: Located,
    near: Option<pnet_sema::facts::Facts>,
    whole: OnceCell<ScopeIndex<'a>>,
}

impl<'a> NearScopes<'a> {
    pub(crate) fn new(a: &'a Analysis, l: Located, start: u32, end: u32) -> NearScopes<'a> {
        NearScopes {
            a,
            l,
            near: a.facts_in(l, start, end),
            whole: OnceCell::new(),
        }
    }

    /// The innermost scope holding `start..end`.
    pub(crate) fn at(&self, start: u32, end: u32) -> Option<&Scope> {
        let span = Span::new(self.l.file, start, end);
        let holds = |s: &&Scope| {
            s.span.file == span.file && s.span.start <= span.start && span.end <= s.span.end
        };
        if let Some(near) = &self.near
            && let Some(s) = near
                .scopes
                .iter()
                .filter(holds)
                .min_by_key(|s| s.span.end - s.span.start)
        {
            return Some(s);
        }
        self.whole
            .get_or_init(|| ScopeIndex::new(self.a.facts(self.l.ws), self.l.file))
            .at(start, end)
    }
}
