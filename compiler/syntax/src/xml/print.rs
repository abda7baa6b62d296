//! A stable, compact, indented text form of the xpnet AST (`pnetc --emit=ast`, snapshot tests).
//!
//! One line per element: the element kind, its names and set attributes, then `@line:col` of
//! the element (1-based, columns in characters). Expression texts are trimmed, whitespace runs
//! collapsed to one space, and quoted with backticks; module `code` is shortened.

use std::fmt::Write;

use super::ast::*;
use crate::Span;
use crate::span::MappedText;

/// Prints the AST of `file`; `source` is the file's text (for line/column numbers).
pub fn print_ast(file: &File, source: &str) -> String {
    let mut p = Printer {
        out: String::new(),
        lines: LineIndex::new(source),
        indent: 0,
    };
    match &file.root {
        None => p.line("<no root>", None),
        Some(Root::Defun(d)) => p.defun(d),
        Some(Root::Template(t)) => p.template(t),
        Some(Root::Structs(items)) => {
            p.line("structs", None);
            p.nested(|p| p.structs(items));
        }
        Some(Root::Props(props)) => {
            p.line("props", Some(props.span));
            p.nested(|p| p.properties_items(&props.items));
        }
    }
    p.out
}

/// 1-based line and column (in characters) of byte offsets of one source (the shared
/// [`pnet_diagnostics::LineIndex`] with its text).
pub(crate) struct LineIndex<'s> {
    src: &'s str,
    index: pnet_diagnostics::LineIndex,
}

impl<'s> LineIndex<'s> {
    pub(crate) fn new(src: &'s str) -> Self {
        LineIndex {
            src,
            index: pnet_diagnostics::LineIndex::new(src),
        }
    }

    pub(crate) fn line_col(&self, offset: u32) -> (usize, usize) {
        self.index.line_col(self.src, offset as usize)
    }
}

struct Printer<'s> {
    out: String,
    lines: LineIndex<'s>,
    indent: usize,
}

/// A text trimmed, on one line (whitespace runs become one space).
fn one_line(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn quote(t: &MappedText) -> String {
    format!("`{}`", one_line(&t.text))
}

impl Printer<'_> {
    fn line(&mut self, text: &str, at: Option<Span>) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        if let Some(span) = at {
            let (l, c) = self.lines.line_col(span.start);
            let _ = write!(self.out, " @{l}:{c}");
        }
        self.out.push('\n');
    }

    fn text_line(&mut self, kind: &str, t: &MappedText) {
        let at = t.file_offset(0);
        let text = format!("{kind} {}", quote(t));
        self.line(&text, Some(Span::new(t.file, at, at)));
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self)) {
        self.indent += 1;
        f(self);
        self.indent -= 1;
    }

    fn defun(&mut self, d: &Defun) {
        let head = match &d.name {
            Some(n) => format!("defun {}", n.text),
            None => "defun".to_string(),
        };
        self.line(&head, Some(d.span));
        self.nested(|p| {
            for port in &d.ports {
                p.port(port);
            }
            for m in &d.memory_buffers {
                let mut s = format!("memory-buffer {}", m.name.text);
                if m.read_only {
                    s.push_str(" read-only");
                }
                p.line(&s, Some(m.span));
                p.nested(|p| {
                    if let Some(t) = &m.size {
                        p.text_line("size", t);
                    }
                    if let Some(t) = &m.alignment {
                        p.text_line("alignment", t);
                    }
                });
            }
            for m in &d.memory_transfers {
                let mut s = match m.kind {
                    TransferKindDecl::Get => "memory-get",
                    TransferKindDecl::Put => "memory-put",
                    TransferKindDecl::GetPut => "memory-getput",
                }
                .to_string();
                if m.allow_empty_ranges {
                    s.push_str(" allow-empty-ranges");
                }
                if m.not_modified_in_module_call {
                    s.push_str(" not-modified-in-module-call");
                }
                p.line(&s, Some(m.span));
                p.nested(|p| {
                    if let Some(t) = &m.global {
                        p.text_line("global", t);
                    }
                    if let Some(t) = &m.local {
                        p.text_line("local", t);
                    }
                });
            }
            p.structs(&d.structs);
            p.properties_items(&d.properties);
            p.requires(&d.requires);
            for c in &d.conditions {
                p.text_line("condition", c);
            }
            match &d.body {
                None => p.line("<no body>", None),
                Some(DefunBody::Expression(t)) => p.text_line("expression", t),
                Some(DefunBody::Module(m)) => p.module(m),
                Some(DefunBody::Modules(m)) => {
                    p.line("modules", Some(m.span));
                    p.nested(|p| {
                        if !m.preferences.is_empty() {
                            let names: Vec<_> =
                                m.preferences.iter().map(|n| n.text.as_str()).collect();
                            let s = format!("preferences {}", names.join(" "));
                            p.line(&s, Some(m.preferences[0].span));
                        }
                        for m in &m.modules {
                            p.module(m);
                        }
                    });
                }
                Some(DefunBody::Net(n)) => p.net(n),
            }
        });
    }

    fn port(&mut self, port: &PortDecl) {
        let kind = match port.dir {
            PortDirDecl::In => "in",
            PortDirDecl::Out => "out",
            PortDirDecl::InOut => "inout",
            PortDirDecl::Tunnel => "tunnel",
        };
        let mut s = format!("{kind} {}: {}", port.name.text, port.ty.text);
        if let Some(pl) = &port.place {
            let _ = write!(s, " place={}", pl.text);
        }
        self.line(&s, Some(port.span));
        self.nested(|p| p.properties_items(&port.properties));
    }

    fn structs(&mut self, items: &[StructItem]) {
        for item in items {
            match item {
                StructItem::Def(d) => self.struct_def(d),
                StructItem::Include(h) => self.href("include-structs", h),
            }
        }
    }

    fn struct_def(&mut self, d: &StructDef) {
        self.line(&format!("struct {}", d.name.text), Some(d.span));
        self.nested(|p| {
            for f in &d.fields {
                match f {
                    FieldDecl::Field { name, ty, span } => {
                        p.line(&format!("field {}: {}", name.text, ty.text), Some(*span))
                    }
                    FieldDecl::Struct(s) => p.struct_def(s),
                }
            }
        });
    }

    fn href(&mut self, kind: &str, h: &Href) {
        self.line(&format!("{kind} {:?}", h.path.text), Some(h.span));
    }

    fn properties_items(&mut self, items: &[PropertiesItem]) {
        for item in items {
            match item {
                PropertiesItem::Property { key, value, span } => {
                    let s = match value {
                        Some(v) => format!("property {} = {:?}", key.text, v.text),
                        None => format!("property {}", key.text),
                    };
                    self.line(&s, Some(*span));
                }
                PropertiesItem::Group(g) => {
                    let s = match &g.name {
                        Some(n) => format!("properties {}", n.text),
                        None => "properties".to_string(),
                    };
                    self.line(&s, Some(g.span));
                    self.nested(|p| p.properties_items(&g.items));
                }
                PropertiesItem::Include(h) => self.href("include-properties", h),
            }
        }
    }

    fn requires(&mut self, rs: &[RequireDecl]) {
        for r in rs {
            let mut s = format!("require {}", r.key.text);
            if !r.mandatory {
                s.push_str(" mandatory=false");
            }
            self.line(&s, Some(r.span));
        }
    }

    fn module(&mut self, m: &ModuleDecl) {
        let mut s = format!("module {} function={:?}", m.name.text, m.function.text);
        if let Some(t) = &m.target {
            let _ = write!(s, " target={}", t.text);
        }
        if m.pass_context {
            s.push_str(" pass_context");
        }
        if !m.require_function_unloads_without_rest {
            s.push_str(" require_function_unloads_without_rest=false");
        }
        if !m.require_module_unloads_without_rest {
            s.push_str(" require_module_unloads_without_rest=false");
        }
        self.line(&s, Some(m.span));
        self.nested(|p| {
            if let Some(t) = &m.eureka_group {
                p.text_line("eureka-group", t);
            }
            for h in &m.cincludes {
                p.href("cinclude", h);
            }
            for f in &m.ld {
                p.line(&format!("ld {:?}", f.text), Some(f.span));
            }
            for f in &m.cxx {
                p.line(&format!("cxx {:?}", f.text), Some(f.span));
            }
            if let Some(code) = &m.code {
                let text = one_line(&code.text);
                let short: String = text.chars().take(40).collect();
                let s = if short.len() < text.len() {
                    format!(
                        "code `{short}...` ({} lines)",
                        code.text.trim().lines().count()
                    )
                } else {
                    format!("code `{short}`")
                };
                let at = code.file_offset(0);
                p.line(&s, Some(Span::new(code.file, at, at)));
            }
        });
    }

    fn net(&mut self, n: &NetDecl) {
        self.line("net", Some(n.span));
        self.nested(|p| {
            p.structs(&n.structs);
            p.properties_items(&n.properties);
            for t in &n.templates {
                match t {
                    TemplateItem::Inline(t) => p.template(t),
                    TemplateItem::Include(h) => p.href("include-template", h),
                }
            }
            for s in &n.specializes {
                p.line(
                    &format!("specialize {} use={}", s.name.text, s.use_.text),
                    Some(s.span),
                );
                p.nested(|p| {
                    for (r, w) in &s.type_maps {
                        p.line(&format!("type-map {} -> {}", r.text, w.text), Some(r.span));
                    }
                    for g in &s.type_gets {
                        p.line(&format!("type-get {}", g.text), Some(g.span));
                    }
                });
            }
            for pl in &n.places {
                p.place(pl);
            }
            for t in &n.transitions {
                p.transition(t);
            }
        });
    }

    fn place(&mut self, pl: &PlaceDecl) {
        let mut s = format!("place {}: {}", pl.name.text, pl.ty.text);
        for (set, name) in [
            (pl.is_virtual, "virtual"),
            (pl.put_token, "put_token"),
            (pl.shared_sink, "shared_sink"),
            (pl.generator, "generator"),
        ] {
            if set {
                s.push(' ');
                s.push_str(name);
            }
        }
        self.line(&s, Some(pl.span));
        self.nested(|p| {
            for t in &pl.tokens {
                let vals: Vec<_> = t.values.iter().map(quote).collect();
                p.line(&format!("token {}", vals.join(" ")), Some(t.span));
            }
            p.properties_items(&pl.properties);
        });
    }

    fn transition(&mut self, t: &TransitionDecl) {
        let mut s = format!("transition {}", t.name.text);
        if let Some(pr) = &t.priority {
            let _ = write!(s, " priority={}", pr.text);
        }
        if let Some(i) = t.inline {
            let _ = write!(s, " inline={i}");
        }
        for (set, name) in [
            (t.produce_shared, "produce_shared"),
            (t.consume_shared, "consume_shared"),
            (t.passthrough_shared, "passthrough_shared"),
        ] {
            if set {
                s.push(' ');
                s.push_str(name);
            }
        }
        self.line(&s, Some(t.span));
        self.nested(|p| {
            for c in &t.connections {
                let kind = match c.kind {
                    ConnectKindDecl::In => "connect-in",
                    ConnectKindDecl::Out => "connect-out",
                    ConnectKindDecl::InOut => "connect-inout",
                    ConnectKindDecl::Read => "connect-read",
                    ConnectKindDecl::OutMany => "connect-out-many",
                    ConnectKindDecl::NumberOfTokens => "connect-number-of-tokens",
                    ConnectKindDecl::Response => "connect-response",
                    ConnectKindDecl::Eureka => "connect-eureka",
                };
                let s = match &c.place {
                    Some(pl) => format!("{kind} {} {}", c.port.text, pl.text),
                    None => format!("{kind} {}", c.port.text),
                };
                p.line(&s, Some(c.span));
                p.nested(|p| p.properties_items(&c.properties));
            }
            for m in &t.place_maps {
                p.line(
                    &format!("place-map {} -> {}", m.virtual_.text, m.real.text),
                    Some(m.span),
                );
            }
            for c in &t.conditions {
                p.text_line("condition", c);
            }
            p.requires(&t.requires);
            p.properties_items(&t.properties);
            match &t.body {
                None => p.line("<no body>", None),
                Some(TransitionBody::Defun(d)) => p.defun(d),
                Some(TransitionBody::Include(h)) => p.href("include-function", h),
                Some(TransitionBody::Use(n)) => p.line(&format!("use {}", n.text), Some(n.span)),
            }
        });
    }

    fn template(&mut self, t: &Template) {
        let mut s = match &t.name {
            Some(n) => format!("template {}", n.text),
            None => "template".to_string(),
        };
        if !t.params.is_empty() {
            let ps: Vec<_> = t.params.iter().map(|n| n.text.as_str()).collect();
            let _ = write!(s, " <{}>", ps.join(", "));
        }
        self.line(&s, Some(t.span));
        self.nested(|p| match &t.defun {
            Some(d) => p.defun(d),
            None => p.line("<no defun>", None),
        });
    }
}
