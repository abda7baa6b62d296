//! The salsa database: source files and the include graph are inputs; parsing and include
//! collection are tracked queries (elaboration: [`crate::elab::elaborate`]). No I/O happens
//! in here.

use std::path::PathBuf;
use std::sync::Arc;

use pnet_syntax::xml::{
    self, DefunBody, PropertiesItem, Root, StructItem, TemplateItem, TransitionBody,
};
use pnet_syntax::{Diagnostic, FileId, Span};

/// One source file: its id (`FileId(i)` is the `i`-th file loaded), path and text.
#[salsa::input(debug)]
pub struct SourceInput {
    pub id: FileId,
    #[returns(ref)]
    pub path: PathBuf,
    #[returns(ref)]
    pub text: Arc<str>,
}

/// A resolved (or not) `href` of an include element.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Link {
    /// The file holding the include element.
    pub from: FileId,
    /// The `href` as written.
    pub href: String,
    /// The span of the `href` value.
    pub span: Span,
    /// The file it resolved to; `None` if no candidate exists.
    pub target: Option<FileId>,
}

/// Everything one compilation works on: the loaded files (indexed by `FileId`), the include
/// links the driver resolved, and the options that change the elaboration.
#[salsa::input(debug)]
pub struct Workspace {
    #[returns(ref)]
    pub files: Vec<SourceInput>,
    #[returns(ref)]
    pub links: Vec<Link>,
    pub no_inline: bool,
    pub synthesize_virtual_places: bool,
    pub build_modules: bool,
}

/// A parsed file.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub ast: xml::File,
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses one file.
#[salsa::tracked(returns(ref))]
pub fn parse(db: &dyn salsa::Database, file: SourceInput) -> Parsed {
    let id = file.id(db);
    let text = file.text(db);
    let (ast, diagnostics) = xml::parse_file(*id, text);
    Parsed { ast, diagnostics }
}

/// The `href`s of a file's include elements (`include-structs`, `-function`, `-template`,
/// `-properties`; not `cinclude`), in document order: `(href, span of the value)`.
#[salsa::tracked(returns(ref))]
pub fn includes(db: &dyn salsa::Database, file: SourceInput) -> Vec<(String, Span)> {
    let mut out = Vec::new();
    if let Some(root) = &parse(db, file).ast.root {
        match root {
            Root::Defun(d) => defun_hrefs(d, &mut out),
            Root::Template(t) => template_hrefs(t, &mut out),
            Root::Structs(items) => struct_hrefs(items, &mut out),
            Root::Props(p) => prop_hrefs(&p.items, &mut out),
        }
    }
    out
}

fn push(h: &xml::Href, out: &mut Vec<(String, Span)>) {
    out.push((h.path.text.clone(), h.path.span));
}

fn struct_hrefs(items: &[StructItem], out: &mut Vec<(String, Span)>) {
    for i in items {
        if let StructItem::Include(h) = i {
            push(h, out)
        }
    }
}

fn prop_hrefs(items: &[PropertiesItem], out: &mut Vec<(String, Span)>) {
    for i in items {
        match i {
            PropertiesItem::Include(h) => push(h, out),
            PropertiesItem::Group(g) => prop_hrefs(&g.items, out),
            PropertiesItem::Property { .. } => {}
        }
    }
}

fn template_hrefs(t: &xml::Template, out: &mut Vec<(String, Span)>) {
    if let Some(d) = &t.defun {
        defun_hrefs(d, out)
    }
}

fn defun_hrefs(d: &xml::Defun, out: &mut Vec<(String, Span)>) {
    struct_hrefs(&d.structs, out);
    prop_hrefs(&d.properties, out);
    for p in &d.ports {
        prop_hrefs(&p.properties, out);
    }
    if let Some(DefunBody::Net(n)) = &d.body {
        struct_hrefs(&n.structs, out);
        prop_hrefs(&n.properties, out);
        for t in &n.templates {
            match t {
                TemplateItem::Inline(t) => template_hrefs(t, out),
                TemplateItem::Include(h) => push(h, out),
            }
        }
        for p in &n.places {
            prop_hrefs(&p.properties, out);
        }
        for t in &n.transitions {
            match &t.body {
                Some(TransitionBody::Defun(d)) => defun_hrefs(d, out),
                Some(TransitionBody::Include(h)) => push(h, out),
                Some(TransitionBody::Use(_)) | None => {}
            }
            prop_hrefs(&t.properties, out);
            for c in &t.connections {
                prop_hrefs(&c.properties, out);
            }
        }
    }
}

/// The database.
#[salsa::db]
#[derive(Clone, Default)]
pub struct Database {
    storage: salsa::Storage<Self>,
}

#[salsa::db]
impl salsa::Database for Database {}
