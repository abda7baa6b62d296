//! The element-by-element reader: a roxmltree document to the AST of `ast.rs`.
//!
//! roxmltree checks well-formedness and resolves attribute values; texts of expression-like
//! elements are re-scanned from the source here so that every byte of the unescaped text maps
//! back to its file offset (see [`MappedText`]).

use roxmltree::{Document, Node, ParsingOptions};

use super::ast::*;
use super::recover;
use crate::span::MappedText;
use crate::{Diagnostic, FileId, Span};

/// Deeper element nesting than this is reported and skipped (keeps the recursion bounded).
const MAX_DEPTH: usize = 256;

pub(super) fn parse(file: FileId, text: &str) -> (File, Vec<Diagnostic>) {
    let opts = || ParsingOptions {
        allow_dtd: false,
        ..ParsingOptions::default()
    };
    let err = match Document::parse_with_options(text, opts()) {
        Ok(doc) => {
            let mut p = Parser::new(file, text, None);
            let root = p.root(doc.root_element());
            return (File { file, root }, p.diags);
        }
        Err(e) => e,
    };
    // Malformed: read the repaired text (see `recover.rs`), the damage reported; if even that
    // is rejected, the first error of the file and no root.
    if let Some(mut fix) = recover::repair(file, text) {
        let diags = std::mem::take(&mut fix.diags);
        if let Ok(doc) = Document::parse_with_options(&fix.text, opts()) {
            let mut p = Parser::new(file, &fix.text, Some(&fix));
            p.diags = diags;
            let root = p.root(doc.root_element());
            return (File { file, root }, p.diags);
        }
    }
    let mut p = Parser::new(file, text, None);
    p.xml_error(&err);
    (File { file, root: None }, p.diags)
}

pub(super) struct Parser<'s> {
    file: FileId,
    /// The text roxmltree read: the file's, or its repair.
    src: &'s str,
    /// The repair read instead of the file, mapping offsets back to the file.
    fix: Option<&'s recover::Repaired>,
    diags: Vec<Diagnostic>,
    depth: usize,
}

/// The attributes of one element, unknown ones already reported.
struct Attrs<'a, 'i> {
    node: Node<'a, 'i>,
}

/// Attributes the parser accepts on every element without a warning.
fn is_namespace_attr(a: &roxmltree::Attribute) -> bool {
    a.namespace().is_some()
}

impl<'s> Parser<'s> {
    /// Starts at nesting depth `depth` (for an element read alone, see `items.rs`).
    pub(super) fn set_depth(&mut self, depth: usize) {
        self.depth = depth;
    }

    pub(super) fn into_diags(self) -> Vec<Diagnostic> {
        self.diags
    }

    pub(super) fn new(file: FileId, src: &'s str, fix: Option<&'s recover::Repaired>) -> Self {
        Parser {
            file,
            src,
            fix,
            diags: Vec::new(),
            depth: 0,
        }
    }

    // ----------------------------------------------------------------- spans & diagnostics

    /// The file offset of an offset of the text read.
    fn orig(&self, off: usize) -> usize {
        self.fix.map_or(off, |f| f.orig(off))
    }

    fn span(&self, start: usize, end: usize) -> Span {
        let (start, end) = (self.orig(start), self.orig(end));
        Span::new(self.file, start as u32, end as u32)
    }

    /// The mapped text of `b`, its offsets mapped back to the file.
    /// With a repair, blanked bytes are left out of the text.
    fn finish(&self, mut b: Builder) -> MappedText {
        let Some(fix) = self.fix else {
            return b.finish(self.file);
        };
        let mut map: Vec<(u32, u32)> = Vec::with_capacity(b.map.len());
        for &(t, f) in &b.map {
            let f = fix.orig(f as usize) as u32;
            if map.last().is_none_or(|&(_, lf)| lf < f) {
                map.push((t, f));
            }
        }
        b.map = map;
        let t = b.finish(self.file);
        let mut out = Builder::default();
        for (i, c) in t.text.char_indices() {
            let f = t.file_offset(i as u32) as usize;
            if !fix.blanked(f) {
                out.mark(f);
                out.text.push(c);
            }
        }
        if out.map.is_empty() {
            out.mark(t.file_offset(0) as usize);
        }
        out.finish(self.file)
    }

    fn node_span(&self, n: Node) -> Span {
        let r = n.range();
        self.span(r.start, r.end)
    }

    /// The span of the start tag's name (`<name`).
    fn tag_span(&self, n: Node) -> Span {
        let start = n.range().start + 1;
        let bytes = self.src.as_bytes();
        let mut end = start;
        while end < bytes.len() && !matches!(bytes[end], b' ' | b'\t' | b'\r' | b'\n' | b'/' | b'>')
        {
            end += 1;
        }
        self.span(start.min(bytes.len()), end)
    }

    fn xml_error(&mut self, e: &roxmltree::Error) {
        let offset = match e {
            roxmltree::Error::UnclosedRootNode => self.src.len(),
            _ => {
                let pos = e.pos();
                offset_of(self.src, pos.row, pos.col)
            }
        };
        let msg = strip_position(&e.to_string());
        let span = self.span(offset, offset);
        self.diags.push(
            Diagnostic::error("xml_syntax", format!("malformed XML: {msg}"))
                .with_primary(span, "here"),
        );
    }

    fn unexpected_element(&mut self, n: Node, parent: Node) {
        let span = self.tag_span(n);
        let msg = format!(
            "unexpected element `{}` in `{}`",
            n.tag_name().name(),
            parent.tag_name().name()
        );
        self.diags.push(
            Diagnostic::warning("unexpected-element", msg)
                .with_primary(span, "ignored")
                .with_secondary(self.tag_span(parent), "in this element"),
        );
    }

    fn error(&mut self, code: &'static str, span: Span, msg: String, label: &str) {
        // An element kept from a broken start tag (reported) lacks what was not typed yet:
        // no news. `span` is its tag name, right after the `<`.
        let incomplete = matches!(
            code,
            "missing_attribute" | "missing_body" | "missing_element"
        );
        if incomplete
            && let Some(fix) = self.fix
            && let Some(lt) = (span.start as usize).checked_sub(1)
            && fix.broken_tag(lt)
        {
            return;
        }
        self.diags
            .push(Diagnostic::error(code, msg).with_primary(span, label));
    }

    // ----------------------------------------------------------------- attributes

    /// Reports attributes not in `known` (namespaced ones such as `xsi:schemaLocation` are
    /// accepted silently) and gives access to the known ones.
    fn attrs<'a, 'i>(&mut self, n: Node<'a, 'i>, known: &[&str]) -> Attrs<'a, 'i> {
        for a in n.attributes() {
            if is_namespace_attr(&a) || known.contains(&a.name()) {
                continue;
            }
            let r = a.range_qname();
            let span = self.span(r.start, r.end);
            let msg = format!(
                "unexpected attribute `{}` on `{}`",
                a.name(),
                n.tag_name().name()
            );
            self.diags.push(
                Diagnostic::warning("unexpected-element", msg)
                    .with_primary(span, "ignored")
                    .with_secondary(self.tag_span(n), "on this element"),
            );
        }
        Attrs { node: n }
    }

    fn opt(&self, a: &Attrs, name: &str) -> Option<Name> {
        let attr = a
            .node
            .attributes()
            .find(|x| x.name() == name && x.namespace().is_none())?;
        let r = attr.range_value();
        Some(Name {
            text: attr.value().to_string(),
            span: self.span(r.start, r.end),
        })
    }

    fn req(&mut self, a: &Attrs, name: &str) -> Option<Name> {
        let v = self.opt(a, name);
        if v.is_none() {
            let span = self.tag_span(a.node);
            let msg = format!(
                "element `{}` needs the attribute `{name}`",
                a.node.tag_name().name()
            );
            self.error("missing_attribute", span, msg, "attribute missing");
        }
        v
    }

    fn opt_bool(&mut self, a: &Attrs, name: &str) -> Option<bool> {
        let v = self.opt(a, name)?;
        match parse_bool(&v.text) {
            Some(b) => Some(b),
            None => {
                let msg = format!(
                    "attribute `{name}` must be a boolean (`true` or `false`), not `{}`",
                    v.text
                );
                self.error("invalid_bool", v.span, msg, "not a boolean");
                None
            }
        }
    }

    fn bool_or(&mut self, a: &Attrs, name: &str, default: bool) -> bool {
        self.opt_bool(a, name).unwrap_or(default)
    }

    // ----------------------------------------------------------------- children & texts

    /// The element children; stray non-whitespace text is reported, comments and processing
    /// instructions are skipped.
    fn elements<'a, 'i>(&mut self, n: Node<'a, 'i>) -> Vec<Node<'a, 'i>> {
        let mut out = Vec::new();
        for c in n.children() {
            if c.is_element() {
                out.push(c);
            } else if c.is_text() && !c.text().unwrap_or("").trim().is_empty() {
                let r = c.range();
                let (s, e) = trim_range(self.src, r.start, r.end.min(self.src.len()));
                let span = self.span(s, e);
                let msg = format!("unexpected text in `{}`", n.tag_name().name());
                self.diags.push(
                    Diagnostic::warning("unexpected-element", msg).with_primary(span, "ignored"),
                );
            }
        }
        out
    }

    /// The offset where the element's content ends (the start of its end tag), `None` for
    /// an empty-element tag.
    fn content_end(&self, n: Node) -> Option<usize> {
        let r = n.range();
        let end = r.end.min(self.src.len());
        self.src
            .get(r.start..end)
            .and_then(|s| s.rfind("</"))
            .map(|i| r.start + i)
    }

    /// The element's text content (text and CDATA children, comments skipped), unescaped and
    /// mapped back to the file. Child elements are reported and skipped.
    fn mapped_text(&mut self, n: Node) -> MappedText {
        let mut b = Builder::default();
        let content_end = self.content_end(n);
        for c in n.children() {
            if c.is_element() {
                self.unexpected_element(c, n);
                continue;
            }
            if !c.is_text() {
                continue;
            }
            let expected = c.text().unwrap_or("");
            let start = c.range().start;
            let end = c
                .next_sibling()
                .map(|s| s.range().start)
                .or(content_end)
                .unwrap_or(start);
            let (len, map_len) = (b.text.len(), b.map.len());
            let ok = start <= end && scan(self.src, start, end, false, &mut b);
            if !ok || b.text.get(len..) != Some(expected) {
                // Not expected to happen: fall back to the text mapped to the node start.
                b.text.truncate(len);
                b.map.truncate(map_len);
                b.push_verbatim(expected, start);
            }
        }
        if b.map.is_empty() {
            // No text: offset 0 maps to where the content would be.
            let at = n
                .first_child()
                .map(|c| c.range().start)
                .or(content_end)
                .unwrap_or_else(|| n.range().start);
            b.mark(at);
        }
        self.finish(b)
    }

    /// The text of an `<expression>` (`sep` = `;`) or `<condition>` (`sep` = `&&`, the same
    /// operator as `:and:`), read as GPI-Space reads it: every piece of character data (a text
    /// run, or a CDATA section) on its own, pieces that are only whitespace dropped, comments
    /// and processing instructions separating pieces; the pieces joined with `sep`. The
    /// separator maps to where the previous piece ends (a `<` or the `]]>` of a CDATA
    /// section). Without pieces (only whitespace), the text is as [`Self::mapped_text`] reads it.
    fn joined_text(&mut self, n: Node, sep: &str) -> MappedText {
        let content_end = self.content_end(n);
        // The raw ranges of the pieces: `(start, end, end of the piece's data, glued)`; a text
        // run right after a (reported, skipped) child element continues the piece before it.
        let mut pieces: Vec<(usize, usize, usize, bool)> = Vec::new();
        for c in n.children() {
            if !c.is_text() {
                continue;
            }
            let start = c.range().start;
            let end = c
                .next_sibling()
                .map(|s| s.range().start)
                .or(content_end)
                .unwrap_or(start);
            let Some(raw) = self.src.get(start..end) else {
                return self.mapped_text(n);
            };
            let after_element = c.prev_sibling().is_some_and(|s| s.is_element());
            let mut i = 0;
            while i < raw.len() {
                let glued = after_element && i == 0;
                let next = ["<![CDATA[", "<!--", "<?"]
                    .iter()
                    .filter_map(|m| raw[i..].find(m))
                    .min();
                let Some(p) = next.map(|p| i + p) else {
                    pieces.push((start + i, end, end, glued));
                    break;
                };
                if p > i {
                    pieces.push((start + i, start + p, start + p, glued));
                }
                let rest = &raw[p..];
                let (close, len) = if rest.starts_with("<![CDATA[") {
                    (rest.find("]]>"), 3)
                } else if rest.starts_with("<!--") {
                    (rest.find("-->"), 3)
                } else {
                    (rest.find("?>"), 2)
                };
                let Some(close) = close else {
                    return self.mapped_text(n);
                };
                if rest.starts_with("<![CDATA[") {
                    let data_end = start + p + close;
                    pieces.push((start + p, start + p + close + len, data_end, false));
                }
                i = p + close + len;
            }
        }
        let mut b = Builder::default();
        let mut last_end = None;
        for (start, end, data_end, glued) in pieces {
            let mut pb = Builder::default();
            if !scan(self.src, start, end, false, &mut pb) {
                return self.mapped_text(n);
            }
            if pb.text.trim().is_empty() {
                continue;
            }
            if let Some(at) = last_end.filter(|_| !glued) {
                b.mark(at);
                b.text.push_str(sep);
            }
            for (k, &(t, f)) in pb.map.iter().enumerate() {
                let until = pb
                    .map
                    .get(k + 1)
                    .map_or(pb.text.len(), |&(t, _)| t as usize);
                b.mark(f as usize);
                b.text.push_str(&pb.text[t as usize..until]);
            }
            last_end = Some(data_end);
        }
        if last_end.is_none() {
            return self.mapped_text(n);
        }
        for c in n.children().filter(|c| c.is_element()) {
            self.unexpected_element(c, n);
        }
        self.finish(b)
    }

    /// An attribute value as a mapped text (for `eureka-group="..."`).
    fn attr_text(&self, a: &Attrs, name: &str) -> Option<MappedText> {
        let attr = a
            .node
            .attributes()
            .find(|x| x.name() == name && x.namespace().is_none())?;
        let r = attr.range_value();
        let mut b = Builder::default();
        if !(r.end <= self.src.len() && scan(self.src, r.start, r.end, true, &mut b))
            || b.text != attr.value()
        {
            b = Builder::default();
            b.mark(r.start);
            b.text.push_str(attr.value());
        }
        if b.map.is_empty() {
            b.mark(r.start);
        }
        Some(self.finish(b))
    }

    /// The trimmed text content as a name (`property` values, `preferences/target`).
    fn text_name(&mut self, n: Node) -> Name {
        let t = self.mapped_text(n);
        let lead = t.text.len() - t.text.trim_start().len();
        let trimmed = t.text.trim();
        let span = if trimmed.is_empty() {
            self.tag_span(n)
        } else {
            t.span(lead as u32, (lead + trimmed.len()) as u32)
        };
        Name {
            text: trimmed.to_string(),
            span,
        }
    }

    fn enter(&mut self, n: Node) -> bool {
        if self.depth >= MAX_DEPTH {
            let span = self.tag_span(n);
            self.error(
                "nesting_too_deep",
                span,
                format!("elements nested deeper than {MAX_DEPTH} levels"),
                "skipped",
            );
            return false;
        }
        self.depth += 1;
        true
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ----------------------------------------------------------------- elements

    fn root(&mut self, n: Node) -> Option<Root> {
        match n.tag_name().name() {
            "defun" => self.defun(n).map(|d| Root::Defun(Box::new(d))),
            "template" => self.template(n).map(|t| Root::Template(Box::new(t))),
            "structs" => {
                self.attrs(n, &[]);
                let mut items = Vec::new();
                for c in self.elements(n) {
                    if !self.struct_item(c, &mut items) {
                        self.unexpected_element(c, n);
                    }
                }
                Some(Root::Structs(items))
            }
            "props" => {
                self.attrs(n, &[]);
                let items = self.properties_items(n);
                Some(Root::Props(Properties {
                    name: None,
                    items,
                    span: self.node_span(n),
                }))
            }
            other => {
                let span = self.tag_span(n);
                let msg = format!(
                    "unknown root element `{other}` (expected `defun`, `template`, `structs` or `props`)"
                );
                self.error("unknown_root", span, msg, "unknown root element");
                None
            }
        }
    }

    fn defun(&mut self, n: Node) -> Option<Defun> {
        if !self.enter(n) {
            return None;
        }
        let a = self.attrs(n, &["name"]);
        let mut d = Defun {
            name: self.opt(&a, "name"),
            ports: Vec::new(),
            memory_buffers: Vec::new(),
            memory_transfers: Vec::new(),
            structs: Vec::new(),
            properties: Vec::new(),
            requires: Vec::new(),
            conditions: Vec::new(),
            body: None,
            span: self.node_span(n),
            tag: self.tag_span(n),
        };
        let mut first_body: Option<Span> = None;
        for c in self.elements(n) {
            let tag = c.tag_name().name();
            let body = match tag {
                "in" | "out" | "inout" | "tunnel" => {
                    d.ports.extend(self.port(c));
                    continue;
                }
                "memory-buffer" => {
                    d.memory_buffers.extend(self.memory_buffer(c));
                    continue;
                }
                "memory-get" | "memory-put" | "memory-getput" => {
                    d.memory_transfers.push(self.memory_transfer(c));
                    continue;
                }
                "condition" => {
                    self.attrs(c, &[]);
                    d.conditions.push(self.joined_text(c, "&&"));
                    continue;
                }
                "require" => {
                    d.requires.extend(self.require(c));
                    continue;
                }
                "expression" => {
                    self.attrs(c, &[]);
                    Some(DefunBody::Expression(self.joined_text(c, ";")))
                }
                "module" => self.module(c).map(DefunBody::Module),
                "modules" => Some(DefunBody::Modules(self.modules(c))),
                "net" => self.net(c).map(DefunBody::Net),
                _ => {
                    if !(self.struct_item(c, &mut d.structs)
                        || self.properties_item(c, &mut d.properties))
                    {
                        self.unexpected_element(c, n);
                    }
                    continue;
                }
            };
            let span = self.tag_span(c);
            match first_body {
                None => {
                    first_body = Some(span);
                    d.body = body;
                }
                Some(first) => self.diags.push(
                    Diagnostic::error(
                        "multiple_bodies",
                        format!("a `defun` has exactly one body; this `{tag}` is a second one"),
                    )
                    .with_primary(span, "second body (ignored)")
                    .with_secondary(first, "first body"),
                ),
            }
        }
        if first_body.is_none() {
            self.error(
                "missing_body",
                d.tag,
                "a `defun` needs a body: `expression`, `module`, `modules` or `net`".into(),
                "no body",
            );
        }
        self.leave();
        Some(d)
    }

    fn port(&mut self, n: Node) -> Option<PortDecl> {
        let dir = match n.tag_name().name() {
            "in" => PortDirDecl::In,
            "out" => PortDirDecl::Out,
            "inout" => PortDirDecl::InOut,
            _ => PortDirDecl::Tunnel,
        };
        let a = self.attrs(n, &["name", "type", "place"]);
        let name = self.req(&a, "name");
        let ty = self.req(&a, "type");
        let place = self.opt(&a, "place");
        let properties = self.only_properties(n);
        Some(PortDecl {
            dir,
            name: name?,
            ty: ty?,
            place,
            properties,
            span: self.node_span(n),
        })
    }

    /// Children that may only be `properties` / `include-properties`.
    fn only_properties(&mut self, n: Node) -> Vec<PropertiesItem> {
        let mut items = Vec::new();
        for c in self.elements(n) {
            if !self.properties_item(c, &mut items) {
                self.unexpected_element(c, n);
            }
        }
        items
    }

    /// `struct` or `include-structs`; false if `n` is neither.
    fn struct_item(&mut self, n: Node, out: &mut Vec<StructItem>) -> bool {
        match n.tag_name().name() {
            "struct" => {
                out.extend(self.struct_def(n).map(StructItem::Def));
                true
            }
            "include-structs" => {
                out.extend(self.href(n).map(StructItem::Include));
                true
            }
            _ => false,
        }
    }

    fn href(&mut self, n: Node) -> Option<Href> {
        let a = self.attrs(n, &["href"]);
        let path = self.req(&a, "href");
        for c in self.elements(n) {
            self.unexpected_element(c, n);
        }
        Some(Href {
            path: path?,
            span: self.node_span(n),
        })
    }

    fn struct_def(&mut self, n: Node) -> Option<StructDef> {
        if !self.enter(n) {
            return None;
        }
        let a = self.attrs(n, &["name"]);
        let name = self.req(&a, "name");
        let mut fields = Vec::new();
        for c in self.elements(n) {
            match c.tag_name().name() {
                "field" => {
                    let a = self.attrs(c, &["name", "type"]);
                    let name = self.req(&a, "name");
                    let ty = self.req(&a, "type");
                    for cc in self.elements(c) {
                        self.unexpected_element(cc, c);
                    }
                    if let (Some(name), Some(ty)) = (name, ty) {
                        fields.push(FieldDecl::Field {
                            name,
                            ty,
                            span: self.node_span(c),
                        });
                    }
                }
                "struct" => fields.extend(self.struct_def(c).map(FieldDecl::Struct)),
                _ => self.unexpected_element(c, n),
            }
        }
        self.leave();
        Some(StructDef {
            name: name?,
            fields,
            span: self.node_span(n),
        })
    }

    /// `properties` or `include-properties`; false if `n` is neither.
    fn properties_item(&mut self, n: Node, out: &mut Vec<PropertiesItem>) -> bool {
        match n.tag_name().name() {
            "properties" => {
                out.extend(self.properties(n).map(PropertiesItem::Group));
                true
            }
            "include-properties" => {
                out.extend(self.href(n).map(PropertiesItem::Include));
                true
            }
            _ => false,
        }
    }

    fn properties(&mut self, n: Node) -> Option<Properties> {
        if !self.enter(n) {
            return None;
        }
        let a = self.attrs(n, &["name"]);
        let name = self.req(&a, "name");
        let items = self.properties_items(n);
        self.leave();
        Some(Properties {
            name: Some(name?),
            items,
            span: self.node_span(n),
        })
    }

    fn properties_items(&mut self, n: Node) -> Vec<PropertiesItem> {
        let mut items = Vec::new();
        for c in self.elements(n) {
            if c.tag_name().name() == "property" {
                items.extend(self.property(c));
            } else if !self.properties_item(c, &mut items) {
                self.unexpected_element(c, n);
            }
        }
        items
    }

    fn property(&mut self, n: Node) -> Option<PropertiesItem> {
        let a = self.attrs(n, &["key", "value"]);
        let key = self.req(&a, "key");
        let attr_value = self.opt(&a, "value");
        let text = self.text_name(n);
        let value = match attr_value {
            Some(v) => {
                if !text.text.is_empty() {
                    self.diags.push(
                        Diagnostic::warning(
                            "unexpected-element",
                            "`property` has both a `value` attribute and a text; the text is ignored",
                        )
                        .with_primary(text.span, "ignored"),
                    );
                }
                Some(v)
            }
            None if !text.text.is_empty() => Some(text),
            None => None,
        };
        Some(PropertiesItem::Property {
            key: key?,
            value,
            span: self.node_span(n),
        })
    }

    fn require(&mut self, n: Node) -> Option<RequireDecl> {
        let a = self.attrs(n, &["key", "mandatory"]);
        let key = self.req(&a, "key");
        let mandatory = self.bool_or(&a, "mandatory", true);
        for c in self.elements(n) {
            self.unexpected_element(c, n);
        }
        Some(RequireDecl {
            key: key?,
            mandatory,
            span: self.node_span(n),
        })
    }

    /// A child holding a single expression text (`size`, `global`, `code`, ...): the first one
    /// wins, a repetition is an error.
    fn single_text(&mut self, c: Node, slot: &mut Option<MappedText>, parent: Node) {
        self.attrs(c, &[]);
        let t = self.mapped_text(c);
        if slot.is_some() {
            let span = self.tag_span(c);
            let msg = format!(
                "`{}` may appear only once in `{}`",
                c.tag_name().name(),
                parent.tag_name().name()
            );
            self.error("duplicate_element", span, msg, "repeated (ignored)");
        } else {
            *slot = Some(t);
        }
    }

    fn memory_buffer(&mut self, n: Node) -> Option<MemoryBufferDecl> {
        let a = self.attrs(n, &["name", "read-only"]);
        let name = self.req(&a, "name");
        let read_only = self.bool_or(&a, "read-only", false);
        let (mut size, mut alignment) = (None, None);
        for c in self.elements(n) {
            match c.tag_name().name() {
                "size" => self.single_text(c, &mut size, n),
                "alignment" => self.single_text(c, &mut alignment, n),
                _ => self.unexpected_element(c, n),
            }
        }
        if size.is_none() {
            let span = self.tag_span(n);
            self.error(
                "missing_element",
                span,
                "`memory-buffer` needs a `size`".into(),
                "no `size`",
            );
        }
        Some(MemoryBufferDecl {
            name: name?,
            read_only,
            size,
            alignment,
            span: self.node_span(n),
        })
    }

    fn memory_transfer(&mut self, n: Node) -> MemoryTransferDecl {
        let kind = match n.tag_name().name() {
            "memory-get" => TransferKindDecl::Get,
            "memory-put" => TransferKindDecl::Put,
            _ => TransferKindDecl::GetPut,
        };
        let a = self.attrs(n, &["allow-empty-ranges", "not-modified-in-module-call"]);
        let allow_empty_ranges = self.bool_or(&a, "allow-empty-ranges", false);
        let not_modified_in_module_call = self.bool_or(&a, "not-modified-in-module-call", false);
        let (mut global, mut local) = (None, None);
        for c in self.elements(n) {
            match c.tag_name().name() {
                "global" => self.single_text(c, &mut global, n),
                "local" => self.single_text(c, &mut local, n),
                _ => self.unexpected_element(c, n),
            }
        }
        for (slot, what) in [(global.is_none(), "global"), (local.is_none(), "local")] {
            if slot {
                let span = self.tag_span(n);
                let msg = format!("`{}` needs a `{what}`", n.tag_name().name());
                self.error("missing_element", span, msg, "incomplete transfer");
            }
        }
        MemoryTransferDecl {
            kind,
            global,
            local,
            allow_empty_ranges,
            not_modified_in_module_call,
            span: self.node_span(n),
        }
    }

    fn module(&mut self, n: Node) -> Option<ModuleDecl> {
        let a = self.attrs(
            n,
            &[
                "name",
                "function",
                "pass_context",
                "require_function_unloads_without_rest",
                "require_module_unloads_without_rest",
                "eureka-group",
                "target",
            ],
        );
        let name = self.req(&a, "name");
        let function = self.req(&a, "function");
        let mut m = ModuleDecl {
            name: Name {
                text: String::new(),
                span: Span::default(),
            },
            function: Name {
                text: String::new(),
                span: Span::default(),
            },
            target: self.opt(&a, "target"),
            pass_context: self.bool_or(&a, "pass_context", false),
            require_function_unloads_without_rest: self.bool_or(
                &a,
                "require_function_unloads_without_rest",
                true,
            ),
            require_module_unloads_without_rest: self.bool_or(
                &a,
                "require_module_unloads_without_rest",
                true,
            ),
            eureka_group: self.attr_text(&a, "eureka-group"),
            cincludes: Vec::new(),
            ld: Vec::new(),
            cxx: Vec::new(),
            code: None,
            span: self.node_span(n),
            tag: self.tag_span(n),
        };
        for c in self.elements(n) {
            match c.tag_name().name() {
                "cinclude" => m.cincludes.extend(self.href(c)),
                "ld" | "cxx" => {
                    let a = self.attrs(c, &["flag"]);
                    let flag = self.req(&a, "flag");
                    for cc in self.elements(c) {
                        self.unexpected_element(cc, c);
                    }
                    let list = if c.tag_name().name() == "ld" {
                        &mut m.ld
                    } else {
                        &mut m.cxx
                    };
                    list.extend(flag);
                }
                "code" => self.single_text(c, &mut m.code, n),
                "eureka-group" => self.single_text(c, &mut m.eureka_group, n),
                _ => self.unexpected_element(c, n),
            }
        }
        m.name = name?;
        m.function = function?;
        Some(m)
    }

    fn modules(&mut self, n: Node) -> ModulesDecl {
        self.attrs(n, &[]);
        let mut preferences = Vec::new();
        let mut modules = Vec::new();
        for c in self.elements(n) {
            match c.tag_name().name() {
                "preferences" => {
                    self.attrs(c, &[]);
                    for t in self.elements(c) {
                        if t.tag_name().name() == "target" {
                            self.attrs(t, &[]);
                            preferences.push(self.text_name(t));
                        } else {
                            self.unexpected_element(t, c);
                        }
                    }
                }
                "module" => modules.extend(self.module(c)),
                _ => self.unexpected_element(c, n),
            }
        }
        ModulesDecl {
            preferences,
            modules,
            span: self.node_span(n),
        }
    }

    fn net(&mut self, n: Node) -> Option<NetDecl> {
        if !self.enter(n) {
            return None;
        }
        self.attrs(n, &[]);
        let mut net = NetDecl {
            places: Vec::new(),
            transitions: Vec::new(),
            templates: Vec::new(),
            specializes: Vec::new(),
            structs: Vec::new(),
            properties: Vec::new(),
            span: self.node_span(n),
        };
        for c in self.elements(n) {
            match c.tag_name().name() {
                "place" => net.places.extend(self.place(c).map(std::sync::Arc::new)),
                "transition" => net
                    .transitions
                    .extend(self.transition(c).map(std::sync::Arc::new)),
                "template" => net
                    .templates
                    .extend(self.template(c).map(TemplateItem::Inline)),
                "include-template" => net
                    .templates
                    .extend(self.href(c).map(TemplateItem::Include)),
                "specialize" => net.specializes.extend(self.specialize(c)),
                _ => {
                    if !(self.struct_item(c, &mut net.structs)
                        || self.properties_item(c, &mut net.properties))
                    {
                        self.unexpected_element(c, n);
                    }
                }
            }
        }
        self.leave();
        Some(net)
    }

    pub(super) fn place(&mut self, n: Node) -> Option<PlaceDecl> {
        let a = self.attrs(
            n,
            &[
                "name",
                "type",
                "virtual",
                "put_token",
                "shared_sink",
                "generator",
            ],
        );
        let name = self.req(&a, "name");
        let ty = self.req(&a, "type");
        let is_virtual = self.bool_or(&a, "virtual", false);
        let put_token = self.bool_or(&a, "put_token", false);
        let shared_sink = self.bool_or(&a, "shared_sink", false);
        let generator = self.bool_or(&a, "generator", false);
        let mut tokens = Vec::new();
        let mut properties = Vec::new();
        for c in self.elements(n) {
            if c.tag_name().name() == "token" {
                tokens.push(self.token(c));
            } else if !self.properties_item(c, &mut properties) {
                self.unexpected_element(c, n);
            }
        }
        Some(PlaceDecl {
            name: name?,
            ty: ty?,
            is_virtual,
            put_token,
            shared_sink,
            generator,
            tokens,
            properties,
            span: self.node_span(n),
        })
    }

    fn token(&mut self, n: Node) -> TokenDecl {
        self.attrs(n, &[]);
        let mut values = Vec::new();
        let has_elements = n.children().any(|c| c.is_element());
        if has_elements {
            for c in self.elements(n) {
                if c.tag_name().name() == "value" {
                    self.attrs(c, &[]);
                    values.push(self.mapped_text(c));
                } else {
                    self.unexpected_element(c, n);
                }
            }
        } else {
            // `<token>3L</token>`: the text is the value (as in GPI-Space).
            let t = self.mapped_text(n);
            if !t.text.trim().is_empty() {
                values.push(t);
            }
        }
        TokenDecl {
            values,
            span: self.node_span(n),
        }
    }

    pub(super) fn transition(&mut self, n: Node) -> Option<TransitionDecl> {
        if !self.enter(n) {
            return None;
        }
        let a = self.attrs(
            n,
            &[
                "name",
                "priority",
                "inline",
                "produce_shared",
                "consume_shared",
                "passthrough_shared",
            ],
        );
        let name = self.req(&a, "name");
        let mut t = TransitionDecl {
            name: Name {
                text: String::new(),
                span: Span::default(),
            },
            priority: self.opt(&a, "priority"),
            inline: self.opt_bool(&a, "inline"),
            produce_shared: self.bool_or(&a, "produce_shared", false),
            consume_shared: self.bool_or(&a, "consume_shared", false),
            passthrough_shared: self.bool_or(&a, "passthrough_shared", false),
            body: None,
            connections: Vec::new(),
            place_maps: Vec::new(),
            conditions: Vec::new(),
            requires: Vec::new(),
            properties: Vec::new(),
            span: self.node_span(n),
            tag: self.tag_span(n),
        };
        let mut first_body: Option<Span> = None;
        for c in self.elements(n) {
            let tag = c.tag_name().name();
            let body = match tag {
                "defun" => self.defun(c).map(|d| TransitionBody::Defun(Box::new(d))),
                "include-function" => self.href(c).map(TransitionBody::Include),
                "use" => {
                    let a = self.attrs(c, &["name"]);
                    let name = self.req(&a, "name");
                    for cc in self.elements(c) {
                        self.unexpected_element(cc, c);
                    }
                    name.map(TransitionBody::Use)
                }
                "connect-in"
                | "connect-out"
                | "connect-inout"
                | "connect-read"
                | "connect-out-many"
                | "connect-number-of-tokens"
                | "connect-response"
                | "connect-eureka" => {
                    t.connections.extend(self.connect(c));
                    continue;
                }
                "place-map" => {
                    let a = self.attrs(c, &["virtual", "real"]);
                    let virtual_ = self.req(&a, "virtual");
                    let real = self.req(&a, "real");
                    for cc in self.elements(c) {
                        self.unexpected_element(cc, c);
                    }
                    if let (Some(virtual_), Some(real)) = (virtual_, real) {
                        t.place_maps.push(PlaceMapDecl {
                            virtual_,
                            real,
                            span: self.node_span(c),
                        });
                    }
                    continue;
                }
                "condition" => {
                    self.attrs(c, &[]);
                    t.conditions.push(self.joined_text(c, "&&"));
                    continue;
                }
                "require" => {
                    t.requires.extend(self.require(c));
                    continue;
                }
                _ => {
                    if !self.properties_item(c, &mut t.properties) {
                        self.unexpected_element(c, n);
                    }
                    continue;
                }
            };
            let span = self.tag_span(c);
            match first_body {
                None => {
                    first_body = Some(span);
                    t.body = body;
                }
                Some(first) => self.diags.push(
                    Diagnostic::error(
                        "multiple_bodies",
                        format!(
                            "a `transition` has exactly one of `defun`, `include-function`, `use`; this `{tag}` is a second one"
                        ),
                    )
                    .with_primary(span, "second body (ignored)")
                    .with_secondary(first, "first body"),
                ),
            }
        }
        if first_body.is_none() {
            self.error(
                "missing_body",
                t.tag,
                "a `transition` needs a `defun`, an `include-function` or a `use`".into(),
                "no body",
            );
        }
        self.leave();
        t.name = name?;
        Some(t)
    }

    fn connect(&mut self, n: Node) -> Option<ConnectDecl> {
        let kind = match n.tag_name().name() {
            "connect-in" => ConnectKindDecl::In,
            "connect-out" => ConnectKindDecl::Out,
            "connect-inout" => ConnectKindDecl::InOut,
            "connect-read" => ConnectKindDecl::Read,
            "connect-out-many" => ConnectKindDecl::OutMany,
            "connect-number-of-tokens" => ConnectKindDecl::NumberOfTokens,
            "connect-response" => ConnectKindDecl::Response,
            _ => ConnectKindDecl::Eureka,
        };
        let (port, place) = match kind {
            ConnectKindDecl::Eureka => {
                let a = self.attrs(n, &["port"]);
                (self.req(&a, "port"), None)
            }
            ConnectKindDecl::Response => {
                let a = self.attrs(n, &["port", "to"]);
                let port = self.req(&a, "port");
                (port, Some(self.req(&a, "to")))
            }
            _ => {
                let a = self.attrs(n, &["port", "place"]);
                let port = self.req(&a, "port");
                (port, Some(self.req(&a, "place")))
            }
        };
        let properties = self.only_properties(n);
        let place = match place {
            None => None,
            Some(p) => Some(p?),
        };
        Some(ConnectDecl {
            kind,
            port: port?,
            place,
            properties,
            span: self.node_span(n),
        })
    }

    fn template(&mut self, n: Node) -> Option<Template> {
        if !self.enter(n) {
            return None;
        }
        let a = self.attrs(n, &["name"]);
        let mut t = Template {
            name: self.opt(&a, "name"),
            params: Vec::new(),
            defun: None,
            span: self.node_span(n),
            tag: self.tag_span(n),
        };
        let mut saw_defun = false;
        for c in self.elements(n) {
            match c.tag_name().name() {
                "template-parameter" => {
                    let a = self.attrs(c, &["type"]);
                    t.params.extend(self.req(&a, "type"));
                    for cc in self.elements(c) {
                        self.unexpected_element(cc, c);
                    }
                }
                "defun" => {
                    saw_defun = true;
                    let d = self.defun(c);
                    if t.defun.is_some() {
                        let span = self.tag_span(c);
                        self.error(
                            "multiple_bodies",
                            span,
                            "a `template` has exactly one `defun`".into(),
                            "second defun (ignored)",
                        );
                    } else {
                        t.defun = d.map(Box::new);
                    }
                }
                _ => self.unexpected_element(c, n),
            }
        }
        if !saw_defun {
            self.error(
                "missing_body",
                t.tag,
                "a `template` needs a `defun`".into(),
                "no defun",
            );
        }
        self.leave();
        Some(t)
    }

    fn specialize(&mut self, n: Node) -> Option<Specialize> {
        let a = self.attrs(n, &["name", "use"]);
        let name = self.req(&a, "name");
        let use_ = self.req(&a, "use");
        let mut type_maps = Vec::new();
        let mut type_gets = Vec::new();
        for c in self.elements(n) {
            match c.tag_name().name() {
                "type-map" => {
                    let a = self.attrs(c, &["replace", "with"]);
                    let replace = self.req(&a, "replace");
                    let with = self.req(&a, "with");
                    for cc in self.elements(c) {
                        self.unexpected_element(cc, c);
                    }
                    if let (Some(r), Some(w)) = (replace, with) {
                        type_maps.push((r, w));
                    }
                }
                "type-get" => {
                    let a = self.attrs(c, &["name"]);
                    type_gets.extend(self.req(&a, "name"));
                    for cc in self.elements(c) {
                        self.unexpected_element(cc, c);
                    }
                }
                _ => self.unexpected_element(c, n),
            }
        }
        Some(Specialize {
            name: name?,
            use_: use_?,
            type_maps,
            type_gets,
            span: self.node_span(n),
        })
    }
}

/// GPI-Space reads booleans case-insensitively as `true`/`yes`/`on`/`1` or
/// `false`/`no`/`off`/`0`; the corpus only uses `true`/`false`.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// The byte offset of 1-based `row`/`col` (col counted in characters, as roxmltree does).
pub(crate) fn offset_of(src: &str, row: u32, col: u32) -> usize {
    let mut line_start = 0;
    for _ in 1..row {
        match src[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => return src.len(),
        }
    }
    let line = &src[line_start..];
    let skip = (col.max(1) - 1) as usize;
    match line.char_indices().nth(skip) {
        Some((i, _)) => line_start + i,
        None => src.len(),
    }
}

/// Removes roxmltree's " at ROW:COL" from a message (the label carries the position).
fn strip_position(msg: &str) -> String {
    let mut out = msg.to_string();
    let mut from = 0;
    while let Some(i) = out[from..].find(" at ").map(|i| i + from) {
        let tail = &out[i + 4..];
        let len = tail
            .find(|c: char| !(c.is_ascii_digit() || c == ':'))
            .unwrap_or(tail.len());
        let pos = &tail[..len];
        if pos.contains(':') && pos.split(':').all(|p| !p.is_empty()) {
            out.replace_range(i..i + 4 + len, "");
        } else {
            from = i + 4;
        }
    }
    out
}

fn trim_range(src: &str, start: usize, end: usize) -> (usize, usize) {
    let s = src.get(start..end).unwrap_or("");
    let lead = s.len() - s.trim_start().len();
    let t = s.trim();
    (start + lead, start + lead + t.len())
}

/// Builds a [`MappedText`]: the text plus map pairs at every change of the offset relation.
#[derive(Default)]
struct Builder {
    text: String,
    map: Vec<(u32, u32)>,
}

impl Builder {
    /// Records that the next text byte comes from file offset `file_off`.
    fn mark(&mut self, file_off: usize) {
        let t = self.text.len() as u32;
        let f = file_off as u32;
        if let Some(&mut (lt, ref mut lf)) = self.map.last_mut() {
            if lt == t {
                *lf = f;
                // Drop the pair if the previous one already implies it.
                let n = self.map.len();
                if n >= 2 {
                    let (pt, pf) = self.map[n - 2];
                    if pf + (t - pt) == f {
                        self.map.pop();
                    }
                }
                return;
            }
            if *lf + (t - lt) == f {
                return;
            }
        }
        self.map.push((t, f));
    }

    fn push_verbatim(&mut self, s: &str, file_off: usize) {
        self.mark(file_off);
        self.text.push_str(s);
    }

    fn finish(self, file: FileId) -> MappedText {
        MappedText {
            text: self.text,
            file,
            map: self.map,
        }
    }
}

/// Unescapes `src[start..end]` (XML character data: entities, CDATA sections, comments,
/// processing instructions, line-end normalization; in attribute mode whitespace becomes a
/// space) into `b`. Returns false on anything it does not understand.
fn scan(src: &str, start: usize, end: usize, attr: bool, b: &mut Builder) -> bool {
    let Some(raw) = src.get(start..end) else {
        return false;
    };
    let bytes = raw.as_bytes();
    let mut i = 0;
    b.mark(start);
    while i < bytes.len() {
        // The longest run of plain characters.
        let run = bytes[i..]
            .iter()
            .position(|&c| matches!(c, b'<' | b'&' | b'\r') || (attr && matches!(c, b'\n' | b'\t')))
            .map_or(bytes.len(), |p| i + p);
        if run > i {
            b.push_verbatim(&raw[i..run], start + i);
            i = run;
            continue;
        }
        let rest = &raw[i..];
        if let Some(body) = rest.strip_prefix("<![CDATA[") {
            let Some(close) = body.find("]]>") else {
                return false;
            };
            let body_start = start + i + 9;
            // CDATA keeps everything but still normalizes line ends.
            let mut j = 0;
            let cb = &body.as_bytes()[..close];
            while j < close {
                let p = cb[j..]
                    .iter()
                    .position(|&c| c == b'\r')
                    .map_or(close, |p| j + p);
                if p > j {
                    b.push_verbatim(&body[j..p], body_start + j);
                }
                if p < close {
                    b.mark(body_start + p);
                    b.text.push('\n');
                    j = if cb.get(p + 1) == Some(&b'\n') {
                        p + 2
                    } else {
                        p + 1
                    };
                } else {
                    j = p;
                }
            }
            i += 9 + close + 3;
        } else if let Some(comment) = rest.strip_prefix("<!--") {
            let Some(close) = comment.find("-->") else {
                return false;
            };
            i += 4 + close + 3;
        } else if let Some(pi) = rest.strip_prefix("<?") {
            let Some(close) = pi.find("?>") else {
                return false;
            };
            i += 2 + close + 2;
        } else if rest.starts_with('<') {
            return false;
        } else if rest.starts_with('&') {
            let Some(semi) = rest.find(';') else {
                return false;
            };
            let Some(c) = entity(&rest[1..semi]) else {
                return false;
            };
            b.mark(start + i);
            b.text.push(c);
            i += semi + 1;
        } else {
            // `\r`, or `\n`/`\t` in attribute mode.
            b.mark(start + i);
            let c = bytes[i];
            b.text.push(if attr { ' ' } else { '\n' });
            i += if c == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
        }
    }
    true
}

fn entity(name: &str) -> Option<char> {
    Some(match name {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        "apos" => '\'',
        _ => {
            let n = if let Some(h) = name.strip_prefix("#x") {
                u32::from_str_radix(h, 16).ok()?
            } else if let Some(d) = name.strip_prefix('#') {
                d.parse().ok()?
            } else {
                return None;
            };
            char::from_u32(n)?
        }
    })
}
