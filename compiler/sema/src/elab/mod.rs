//! Elaboration: from the parsed files of a workspace to the typed net IR.
//!
//! One recursive pass over the root `defun`: struct scopes are built per defun/net (lazily
//! resolved, so that order does not matter), templates and specializations are scoped per
//! net, `use`/`include-function` are instantiated where they are used, nets are inlined into
//! their parents when the spec says so, and every check is made on the way.

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::Arc;

use pnet_bundle::{
    Body, Bundle, Code, CodeId, ConnectKind, Connection, Function, FunctionId, MemoryBuffer,
    MemoryTransfer, Module, Net, Place, PlaceId, Port, PortDir, PortId, Property, Require,
    Response, SourceFile, SourceFileId, SourceSpan, TransferKind, Transition,
};
use pnet_stdlib::{StructType, Type, Value};
use pnet_syntax::expr::Expr;
use pnet_syntax::span::MappedText;
use pnet_syntax::xml::{
    ConnectKindDecl, Defun, DefunBody, FieldDecl, Href, ModuleDecl, Name, NetDecl, PlaceDecl,
    PortDirDecl, PropertiesItem, Root, StructDef, StructItem, Template, TemplateItem,
    TransferKindDecl, TransitionBody, TransitionDecl,
};
use pnet_syntax::{Diagnostic, FileId, Span};

use crate::checks::{join_conditions, lower_diags, panic_message, parse_expr_diags};
use crate::db::{self, Parsed, Workspace};
use crate::expr::{Mode, PortSig};
use crate::facts::{Facts, Reference, Scope, Symbol, SymbolKind};
use crate::warnings::canonical;

mod defun;
mod exprs;
mod modules;
mod net;
mod resolve;
mod transition;
mod types;

type Subst = HashMap<String, String>;

/// A net's declared places by name (their index), hashed by [`db::IdHasher`]: every
/// transition's names are looked up in it on every edit.
type PlaceNames = HashMap<String, usize, std::hash::BuildHasherDefault<db::IdHasher>>;

/// Nesting limit for functions in functions (inline `<defun>`s in nets, `<use>`d functions
/// and templates; guards against a function using itself). Elaboration recurses through
/// `transition`, `defun` and `net` once per level, about 42 KB of stack per level in a debug
/// build: 32 levels fit a 2 MiB thread with room for the rest of the pipeline (GPI-Space's
/// examples nest 2 levels). Test: tests/deep_expressions.rs.
const MAX_DEPTH: usize = 32;

/// Nesting limit for struct types (fields of struct type, inline or by name). Resolution
/// recurses once per level, and so do later walks over the type: a chain of 2,000 structs
/// each naming the next overflowed a 2 MiB stack. GPI-Space's structs nest a few levels.
const MAX_STRUCT_DEPTH: usize = 64;

/// The result of elaborating a workspace: the bundle (built even when there are errors; the
/// caller drops it then) and every diagnostic, each with the scoped warning override
/// (`pnetc.warning.<name>`) in force where it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct Elaborated {
    pub bundle: pnet_bundle::Bundle,
    pub diagnostics: Vec<(Diagnostic, Option<bool>)>,
    /// Name-resolution facts for tools.
    pub facts: crate::facts::Facts,
}

/// Elaborates the root file (file 0) of the workspace.
#[salsa::tracked(returns(ref))]
pub fn elaborate(db: &dyn salsa::Database, ws: Workspace) -> Elaborated {
    run(db, ws, db::source_tree)
}

/// The diagnostics of [`elaborate`] (the same, in the same order), without building the
/// bundle or the facts: the root net's transitions elaborated by their own
/// queries give only what the checks after them read (their diagnostics and their effect
/// on the net), not copies of their functions. For the language server's diagnostics.
#[salsa::tracked(returns(ref))]
pub fn diagnostics(db: &dyn salsa::Database, ws: Workspace) -> Vec<(Diagnostic, Option<bool>)> {
    let mut e = start(db, ws, db::source_tree);
    e.lite = true;
    e.root();
    e.check_externals();
    let mut diags = e.diags;
    if !e.resolver.is_empty() {
        for (d, _) in &mut diags {
            e.resolver.diagnostic(d);
        }
    }
    diags
}

/// The file trees to elaborate: [`db::source_tree`] (items parsed alone) or, in tests,
/// [`db::parse`] (whole files).
pub(crate) type Trees = for<'d> fn(&'d dyn salsa::Database, db::SourceInput) -> &'d Parsed;

pub use net::{GroupPlaces, place_group};
pub use transition::{facts_at, facts_in};

pub(crate) fn run(db: &dyn salsa::Database, ws: Workspace, trees: Trees) -> Elaborated {
    let inputs = ws.files(db);
    let mut e = start(db, ws, trees);
    let files = inputs
        .iter()
        .map(|f| SourceFile::new(f.path(db).display().to_string(), f.text(db)))
        .collect();
    let root = e.root();
    e.check_externals();
    let mut out = Elaborated {
        bundle: Bundle {
            root,
            functions: e.functions,
            codes: e.codes,
            structs: e.structs,
            files,
        },
        diagnostics: e.diags,
        facts: e.facts,
    };
    resolve::elaborated(&e.resolver, &mut out);
    out
}

/// The facts of [`elaborate`] (the same), without building the bundle or the checks, as
/// [`diagnostics`] does. For the language server's features.
#[salsa::tracked(returns(ref))]
pub fn facts(db: &dyn salsa::Database, ws: Workspace) -> Facts {
    let mut e = start(db, ws, db::source_tree);
    e.lite = true;
    e.keep_facts = true;
    e.root();
    let mut facts = e.facts;
    resolve::facts(&e.resolver, &mut facts);
    facts
}

/// The elaboration of a workspace before its root: the files' diagnostics, the links.
fn start<'a>(db: &'a dyn salsa::Database, ws: Workspace, trees: Trees) -> Elab<'a> {
    let inputs = ws.files(db);
    let parsed: HashMap<FileId, &Parsed> =
        inputs.iter().map(|f| (*f.id(db), trees(db, *f))).collect();
    let mut resolver = db::Resolver::default();
    for p in parsed.values() {
        resolver.add(p);
    }
    let mut links = HashMap::new();
    let mut diags = Vec::new();
    let mut facts = Facts::default();
    for f in inputs {
        let p = parsed[f.id(db)];
        diags.extend(p.diagnostics.iter().cloned().map(|d| (d, None)));
    }
    for l in ws.links(db) {
        links.insert((l.from, l.href.as_str()), l.target);
        if let Some(t) = l.target {
            facts.references.push(Reference {
                kind: SymbolKind::File,
                name: l.href.clone(),
                span: l.span,
                target: Span::new(t, 0, 0),
                ty: None,
            });
        }
        if l.target.is_none() {
            diags.push((
                Diagnostic::error("file_not_found", format!("cannot find file `{}`", l.href))
                    .with_primary(
                        l.span,
                        "not found relative to this file or in a search path",
                    ),
                None,
            ));
        }
    }
    let root_file = inputs.first().map_or(FileId(0), |f| *f.id(db));
    // the root net's transitions parsed alone are elaborated by their own queries
    let root_items = parsed.get(&root_file).and_then(|p| {
        if p.keys.is_empty() {
            return None;
        }
        let Some(Root::Defun(d)) = &p.ast.root else {
            return None;
        };
        let Some(DefunBody::Net(net)) = &d.body else {
            return None;
        };
        Some(RootItems {
            db,
            ws,
            net,
            keys: &p.keys,
        })
    });
    let mut e = Elab::new(
        db,
        ws,
        Rc::new(parsed),
        Rc::new(resolver),
        root_file,
        Rc::new(links),
        diags,
        facts,
    );
    e.root_items = root_items;
    e
}

impl<'a> Elab<'a> {
    /// An elaboration of items of the root file of `ws` apart from the rest (the items'
    /// file ids `items`), reading the other files as the whole elaboration does: for the
    /// queries of the root net's places and transitions.
    fn detached(db: &'a dyn salsa::Database, ws: Workspace, items: &[FileId]) -> Option<Elab<'a>> {
        let inputs = ws.files(db);
        let root_file = *inputs.first()?.id(db);
        // the other files (included ones), read as the whole elaboration reads them
        let parsed: HashMap<FileId, &Parsed> = inputs
            .iter()
            .skip(1)
            .map(|f| (*f.id(db), db::source_tree(db, *f)))
            .collect();
        let mut resolver = db::Resolver::default();
        for &i in items {
            resolver.add_item(i, root_file);
        }
        for p in parsed.values() {
            resolver.add(p);
        }
        let links = db::link_targets(db, ws)
            .iter()
            .map(|((f, h), t)| ((*f, h.as_str()), *t))
            .collect();
        Some(Elab::new(
            db,
            ws,
            Rc::new(parsed),
            Rc::new(resolver),
            root_file,
            Rc::new(links),
            Vec::new(),
            Facts::default(),
        ))
    }
}

/// The root net of a file cut into items, its transitions' item keys (in order), and what
/// their queries need.
struct RootItems<'a> {
    db: &'a dyn salsa::Database,
    ws: Workspace,
    net: &'a NetDecl,
    keys: &'a [salsa::Id],
}

struct Elab<'a> {
    /// The root net's transitions elaborated by queries ([`transition::transition_query`]).
    root_items: Option<RootItems<'a>>,
    /// Only the diagnostics are wanted ([`diagnostics`]): the results of the transitions'
    /// queries are not copied into the bundle, the facts and the checks.
    lite: bool,
    /// With `lite`: the facts are kept too ([`facts`]).
    keep_facts: bool,
    /// The parsed files by id.
    parsed: Rc<HashMap<FileId, &'a Parsed>>,
    /// The file of each item parsed alone (spans are mapped to files at the end: [`resolve`]).
    resolver: Rc<db::Resolver>,
    /// The root file (the workspace's first).
    root_file: FileId,
    links: Rc<HashMap<(FileId, &'a str), Option<FileId>>>,
    no_inline: bool,
    synthesize: bool,
    /// Module code is generated: a `duplicate_external_function` is an error.
    build_modules: bool,
    functions: Vec<Function>,
    codes: Vec<Code>,
    structs: Vec<StructType>,
    diags: Vec<(Diagnostic, Option<bool>)>,
    /// The module functions met, in order; duplicates are found once the whole workspace
    /// is elaborated ([`Elab::check_externals`]), so that a transition's elaboration does
    /// not depend on the transitions before it.
    externals: Vec<External>,
    facts: Facts,
    /// The place symbols of the net elaborated last.
    net_places: Vec<Symbol>,
    /// Structs being resolved inside each other (inline or by name), for the limit
    /// [`MAX_STRUCT_DEPTH`]; whether `struct_too_deep` was reported (once is enough).
    struct_depth: usize,
    struct_depth_reported: bool,
    /// Transitions with an unknown name in their connections, and places an unknown place
    /// name probably meant: no "not connected" or "independent" warning follows for them
    /// (the unknown name is the one error to fix).
    misnamed: Vec<SourceSpan>,
    /// With `lite`: the places the root net's transitions taken by [`Elab::absorb_lite`]
    /// connect to (made the net's), and for each such transition its index in the net and
    /// its run of these places: what the checks after the net read instead of copies of its
    /// connections and place map (one allocation per transition on every edit).
    lite_places: Vec<PlaceId>,
    lite_runs: Vec<(usize, std::ops::Range<usize>)>,
}

/// A module function met, to find duplicates.
#[derive(Clone, Debug, PartialEq)]
struct External {
    module: String,
    /// The key of the function (its name, target and type substitution).
    function: String,
    /// Its name, for messages.
    name: String,
    fingerprint: String,
    span: Span,
    /// The scoped setting of `duplicate-external-function` where it was met.
    warning: Option<bool>,
}

/// The lexical context of an element.
#[derive(Clone)]
struct Ctx<'a> {
    structs: Rc<StructScope<'a>>,
    subst: Rc<Subst>,
    fns: Option<Rc<FnScope<'a>>>,
    /// Scoped warning settings from `pnetc.warning.<name>` properties, innermost last.
    overrides: Rc<Vec<(&'static str, bool)>>,
    /// Files being included, for cycle detection.
    includes: Rc<Vec<FileId>>,
    depth: usize,
}

impl<'a> Ctx<'a> {
    fn override_for(&self, code: &str) -> Option<bool> {
        self.overrides
            .iter()
            .rev()
            .find(|(n, _)| *n == code)
            .map(|(_, b)| *b)
    }

    fn with_include(&self, file: FileId) -> Ctx<'a> {
        let mut c = self.clone();
        let mut inc = (*self.includes).clone();
        inc.push(file);
        c.includes = Rc::new(inc);
        c
    }
}

#[derive(Default)]
struct StructScope<'a> {
    parent: Option<Rc<StructScope<'a>>>,
    entries: Vec<StructEntry<'a>>,
}

struct StructEntry<'a> {
    name: String,
    def: &'a StructDef,
    subst: Rc<Subst>,
    state: RefCell<Resolve>,
}

enum Resolve {
    Todo,
    Busy,
    Done(Type),
}

struct FnScope<'a> {
    parent: Option<Rc<FnScope<'a>>>,
    templates: Vec<TemplateEntry<'a>>,
    specializes: Vec<SpecEntry<'a>>,
    /// The struct scope of the net holding these.
    structs: Rc<StructScope<'a>>,
}

#[derive(Clone)]
struct TemplateEntry<'a> {
    name: String,
    template: &'a Template,
    includes: Rc<Vec<FileId>>,
}

struct SpecEntry<'a> {
    name: String,
    span: Span,
    template: Option<TemplateEntry<'a>>,
    subst: Rc<Subst>,
}

/// A function being elaborated, with what its user needs besides the IR.
struct ElabFn<'a> {
    function: Function,
    conditions: Vec<Expr>,
    overrides: Rc<Vec<(&'static str, bool)>>,
    /// `(port, binds its input side, binds its output side, place)` of the function's net.
    bindings: Vec<(PortId, bool, bool, PlaceId)>,
    /// The span of each port's name (same order as the function's ports).
    port_names: Vec<Span>,
    _ctx: std::marker::PhantomData<&'a ()>,
}

fn sspan(s: Span) -> SourceSpan {
    SourceSpan {
        file: SourceFileId(s.file.0),
        start: s.start,
        end: s.end,
    }
}

fn valid_name(s: &str) -> bool {
    let mut cs = s.chars();
    matches!(cs.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_blank(t: &MappedText) -> bool {
    t.text.trim().is_empty()
}

/// A comparable description of a struct definition (names and type names), to tell
/// identical re-definitions from different ones.
fn shape(d: &StructDef) -> String {
    let mut s = format!("{}{{", d.name.text);
    for f in &d.fields {
        match f {
            FieldDecl::Field { name, ty, .. } => s.push_str(&format!("{}:{};", name.text, ty.text)),
            FieldDecl::Struct(sd) => s.push_str(&shape(sd)),
        }
    }
    s.push('}');
    s
}

fn port_sigs(ports: &[Port]) -> Vec<PortSig> {
    ports
        .iter()
        .map(|p| PortSig {
            name: p.name.clone(),
            dir: p.dir,
            ty: p.ty.clone(),
        })
        .collect()
}

impl<'a> Elab<'a> {
    /// An elaboration of workspace `ws` with the files `parsed`.
    #[allow(clippy::too_many_arguments)]
    fn new(
        db: &'a dyn salsa::Database,
        ws: Workspace,
        parsed: Rc<HashMap<FileId, &'a Parsed>>,
        resolver: Rc<db::Resolver>,
        root_file: FileId,
        links: Rc<HashMap<(FileId, &'a str), Option<FileId>>>,
        diags: Vec<(Diagnostic, Option<bool>)>,
        facts: Facts,
    ) -> Elab<'a> {
        Elab {
            root_items: None,
            lite: false,
            keep_facts: false,
            parsed,
            resolver,
            root_file,
            links,
            no_inline: *ws.no_inline(db),
            synthesize: *ws.synthesize_virtual_places(db),
            build_modules: *ws.build_modules(db),
            functions: Vec::new(),
            codes: Vec::new(),
            structs: Vec::new(),
            diags,
            externals: Vec::new(),
            facts,
            net_places: Vec::new(),
            struct_depth: 0,
            struct_depth_reported: false,
            misnamed: Vec::new(),
            lite_places: Vec::new(),
            lite_runs: Vec::new(),
        }
    }

    /// Whether the facts are wanted (not in a [`diagnostics`] elaboration).
    fn wants_facts(&self) -> bool {
        !self.lite || self.keep_facts
    }

    /// The scope of the root function.
    fn root_ctx(&self) -> Ctx<'a> {
        Ctx {
            structs: Rc::new(StructScope::default()),
            subst: Rc::new(Subst::new()),
            fns: None,
            overrides: Rc::new(Vec::new()),
            includes: Rc::new(vec![self.root_file]),
            depth: 0,
        }
    }

    pub(super) fn error(&mut self, d: Diagnostic) {
        self.diags.push((d, None));
    }

    pub(super) fn warn(&mut self, ctx: &Ctx<'a>, d: Diagnostic) {
        let o = ctx.override_for(d.code);
        self.diags.push((d, o));
    }

    /// Warns `code` when `name` repeats a name in `seen` (labelled `again` and `first`) and
    /// returns true; otherwise adds it to `seen` and returns false.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn warn_repeated<'n>(
        &mut self,
        ctx: &Ctx<'a>,
        seen: &mut Vec<&'n Name>,
        name: &'n Name,
        code: &'static str,
        message: impl FnOnce() -> String,
        again: &str,
        first: &str,
    ) -> bool {
        let Some(f) = seen.iter().find(|q| q.text == name.text) else {
            seen.push(name);
            return false;
        };
        let fs = f.span;
        self.warn(
            ctx,
            Diagnostic::warning(code, message())
                .with_primary(name.span, again)
                .with_secondary(fs, first),
        );
        true
    }

    pub(super) fn ast(&self, file: FileId) -> Option<&'a Root> {
        let p: &'a Parsed = self.parsed.get(&file)?;
        p.ast.root.as_ref()
    }

    /// The file an include element refers to, or `None` (the error was reported already, or
    /// is reported here for a cycle).
    pub(super) fn include(&mut self, ctx: &Ctx<'a>, href: &'a Href) -> Option<(FileId, &'a Root)> {
        let from = self.resolver.file(href.path.span.file);
        let target = (*self.links.get(&(from, href.path.text.as_str()))?)?;
        if ctx.includes.contains(&target) || from == target {
            self.include_cycle(href);
            return None;
        }
        Some((target, self.ast(target)?))
    }

    /// Reports that the include element `href` closes a cycle of includes.
    pub(super) fn include_cycle(&mut self, href: &Href) {
        self.error(
            Diagnostic::error(
                "include_cycle",
                format!("`{}` includes itself", href.path.text),
            )
            .with_primary(href.path.span, "this include closes a cycle"),
        );
    }

    // ---------------------------------------------------------------- root

    pub(super) fn root(&mut self) -> FunctionId {
        let ctx = self.root_ctx();
        let root = self.ast(self.root_file);
        let f = match root {
            Some(Root::Defun(d)) => {
                let label = d
                    .name
                    .as_ref()
                    .map_or("the root function".to_string(), |n| n.text.clone());
                let ef = self.defun(&ctx, d, &label);
                let condition = self.condition(&ef, Vec::new(), &format!("condition of {label}"));
                if crate::root::needs_wrapper(&ef.function) {
                    crate::root::wrap(&mut self.functions, &mut self.codes, ef.function, condition)
                } else {
                    ef.function
                }
            }
            Some(other) => {
                let what = match other {
                    Root::Template(_) => "template",
                    Root::Structs(_) => "structs",
                    Root::Props(_) => "props",
                    Root::Defun(_) => "defun",
                };
                self.error(
                    Diagnostic::error(
                        "root_not_defun",
                        format!(
                            "the root element is a `{what}`; a net to compile must be a `defun`"
                        ),
                    )
                    .with_primary(Span::new(self.root_file, 0, 0), "in this file"),
                );
                empty_function()
            }
            None => empty_function(),
        };
        self.functions.push(f);
        FunctionId::from(self.functions.len() - 1)
    }
}

/// `help: did you mean `NAME`?` for the nearest of `candidates`, if one is near.
fn did_you_mean<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<String> {
    pnet_stdlib::suggest::did_you_mean(name, candidates).map(|s| format!("help: {s}"))
}

/// The built-in type names and the struct names in `scope` (innermost first).
fn type_names(scope: &Rc<StructScope<'_>>) -> Vec<String> {
    let mut names: Vec<String> = pnet_stdlib::ty::BUILTIN_TYPE_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut s = Some(scope.clone());
    while let Some(sc) = s {
        names.extend(sc.entries.iter().map(|e| e.name.clone()));
        s = sc.parent.clone();
    }
    names
}

/// The names of the templates in scope (innermost first).
fn template_names<'s>(scope: Option<&'s Rc<FnScope<'_>>>) -> Vec<&'s str> {
    let mut names = Vec::new();
    let mut s = scope;
    while let Some(sc) = s {
        names.extend(sc.templates.iter().map(|t| t.name.as_str()));
        s = sc.parent.as_ref();
    }
    names
}

/// The names of the specializations and templates in scope (innermost first).
fn function_names<'s>(scope: Option<&'s Rc<FnScope<'_>>>) -> Vec<&'s str> {
    let mut names = Vec::new();
    let mut s = scope;
    while let Some(sc) = s {
        names.extend(sc.specializes.iter().map(|t| t.name.as_str()));
        names.extend(sc.templates.iter().map(|t| t.name.as_str()));
        s = sc.parent.as_ref();
    }
    names
}

fn find_struct<'a>(
    scope: &Rc<StructScope<'a>>,
    name: &str,
) -> Option<(Rc<StructScope<'a>>, usize)> {
    let mut s = Some(scope.clone());
    while let Some(sc) = s {
        if let Some(i) = sc.entries.iter().position(|e| e.name == name) {
            return Some((sc, i));
        }
        s = sc.parent.clone();
    }
    None
}

fn lookup_template<'a>(scope: Option<&Rc<FnScope<'a>>>, name: &str) -> Option<TemplateEntry<'a>> {
    let mut s = scope.cloned();
    while let Some(sc) = s {
        if let Some(t) = sc.templates.iter().find(|t| t.name == name) {
            return Some(t.clone());
        }
        s = sc.parent.clone();
    }
    None
}

fn lookup_spec(scope: Option<&Rc<FnScope<'_>>>, name: &str) -> bool {
    let mut s = scope.cloned();
    while let Some(sc) = s {
        if sc.specializes.iter().any(|t| t.name == name) {
            return true;
        }
        s = sc.parent.clone();
    }
    false
}

fn empty_function() -> Function {
    Function {
        name: None,
        ports: Vec::new(),
        body: Body::Net(Net::default()),
        requires: Vec::new(),
        properties: Vec::new(),
        memory_buffers: Vec::new(),
        memory_transfers: Vec::new(),
        span: SourceSpan::default(),
    }
}

/// The requirements of a defun or transition as the bundle keeps them.
pub(super) fn requires(decls: &[pnet_syntax::xml::ast::RequireDecl]) -> Vec<Require> {
    decls
        .iter()
        .map(|r| Require {
            key: r.key.text.clone(),
            mandatory: r.mandatory,
        })
        .collect()
}
