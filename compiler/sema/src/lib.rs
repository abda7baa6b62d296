//! Semantic analysis of xpnet files: include resolution, structs, templates and
//! `specialize`, `use`, inlining, all of the spec's checks, static typing of expressions and
//! conditions, and lowering to the IR and bytecode of `pnet-bundle`.
//!
//! Facts are salsa queries over source texts (inputs); the driver ([`compile_path`]) does the
//! file I/O and feeds the database.

pub mod checks;
pub mod cut;
pub mod db;
pub mod elab;
pub mod expr;
pub mod facts;
pub mod root;
pub mod signature;
mod warnings;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use warnings::{WARNINGS, apply as apply_warnings, canonical as canonical_warning};

use pnet_bundle::Bundle;
use pnet_syntax::{Diagnostic, FileId};

/// Which warnings are on, and whether they are errors.
#[derive(Clone, Debug, Default)]
pub struct WarningConfig {
    /// Explicit `--W<name>[=bool]` settings by warning name (dashed form); names not listed
    /// use their default.
    pub settings: Vec<(String, bool)>,
    /// `--Wall`
    pub all: bool,
    /// `--Werror`
    pub error: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `-I/--search-path`, in order.
    pub search_paths: Vec<PathBuf>,
    pub warnings: WarningConfig,
    /// `--no-inline`
    pub no_inline: bool,
    /// `--synthesize-virtual-places`
    pub synthesize_virtual_places: bool,
    /// Module code is generated (`pnetc --build-modules`): two modules with one function name
    /// and different bodies are then an error (`duplicate_external_function`), a warning
    /// (`duplicate-external-function`) otherwise, as in GPI-Space.
    pub build_modules: bool,
}

/// A source file the compilation read.
#[derive(Clone, Debug)]
pub struct LoadedFile {
    pub id: FileId,
    pub path: PathBuf,
    pub text: std::sync::Arc<str>,
}

/// Everything a compilation produced.
#[derive(Debug, Default)]
pub struct Output {
    /// Every file read, indexed by `FileId` (file `i` has id `FileId(i)`); the first is the
    /// root file. The bundle's `files` use the same numbering.
    pub files: Vec<LoadedFile>,
    /// The bundle, when there were no errors (warnings turned errors by `--Werror` included).
    pub bundle: Option<Bundle>,
    /// All diagnostics, in a stable order (by file, then position).
    pub diagnostics: Vec<Diagnostic>,
}

impl Output {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.is_error())
    }

    /// The root file's AST (for `--emit=ast`): parsed from its text when asked (the
    /// elaboration reads transitions parsed alone, [`db::source_tree`]).
    pub fn ast(&self) -> Option<pnet_syntax::xml::File> {
        let root = self.files.first()?;
        Some(pnet_syntax::xml::parse_file(root.id, &root.text).0)
    }

    /// The files the root file depends on (includes, transitively), without the root.
    pub fn dependencies(&self) -> impl Iterator<Item = &std::path::Path> {
        self.files.iter().skip(1).map(|f| f.path.as_path())
    }
}

/// Compiles the file at `path`: reads it and everything it includes, elaborates, checks.
pub fn compile_path(path: &Path, options: &Options) -> Output {
    match pnet_stdlib::input::read_text(path, pnet_stdlib::input::MAX_SOURCE_BYTES) {
        Ok(text) => compile_source(path, &text, options),
        Err(e) => Output {
            diagnostics: vec![Diagnostic::error(
                "file_not_found",
                format!("cannot read `{}`: {e}", path.display()),
            )],
            ..Output::default()
        },
    }
}

/// Compiles `text` as if it were the file at `path` (included files are read from disk,
/// relative to `path`'s folder and then the search paths).
pub fn compile_source(path: &Path, text: &str, options: &Options) -> Output {
    let mut db = db::Database::default();
    let ws = load(&mut db, path, text, options);
    output(&db, ws, options)
}

/// The driver: loads the root and, transitively, every included file as inputs, resolving
/// each `href` against the including file's folder first and then each search path.
pub fn load(db: &mut db::Database, path: &Path, text: &str, options: &Options) -> db::Workspace {
    let root = path.to_path_buf();
    let text: Arc<str> = Arc::from(text);
    let mut files = Files::default();
    reload(db, &mut files, None, path, options, &mut |p: &Path| {
        if p == root {
            Some(text.clone())
        } else {
            pnet_stdlib::input::read_text(p, pnet_stdlib::input::MAX_SOURCE_BYTES)
                .ok()
                .map(Arc::from)
        }
    })
}

/// The source files of a database, one input per path (the same file reached from several
/// roots is one input, parsed once): `FileId(i)` is the `i`-th path met. With one root
/// ([`load`]), the root is `FileId(0)` and the ids of a workspace are its files' positions.
#[derive(Debug, Default)]
pub struct Files {
    by_path: HashMap<PathBuf, db::SourceInput>,
    next: u32,
    /// The inputs of items no longer in a file ([`db::ItemInput`]).
    pool: cut::Pool,
    /// The edits made to a file's text since it was last read ([`Files::edited`]), by its
    /// canonical path: each range and its new text.
    pending: HashMap<PathBuf, Vec<(cut::Edit, String)>>,
}

impl Files {
    /// Notes that the text of `path` (the one its input has, or after the edits noted
    /// before) had `range` replaced by `new`: the next read of it updates the items of its
    /// root net from the ranges (see [`cut`]) instead of comparing the old text with the new
    /// to find what changed. Edits that do not give the next text read are ignored.
    pub fn edited(&mut self, path: &Path, range: std::ops::Range<usize>, new: &str) {
        let len = new.len();
        self.pending
            .entry(identity(path))
            .or_default()
            .push((cut::Edit { range, len }, new.to_string()));
    }

    /// The input of `path` (found by its canonical form) with `text`: the existing one, its
    /// text and items set only when it changed, or a new one with the next id.
    fn input(&mut self, db: &mut db::Database, path: &Path, text: Arc<str>) -> db::SourceInput {
        use salsa::Setter;
        let key = identity(path);
        let edits = self.pending.remove(&key);
        match self.by_path.get(&key) {
            Some(&f) => {
                let old = f.text(db).clone();
                if *old != *text {
                    let edits = edits
                        .filter(|e| cut::gives(&old, e, &text))
                        .map(|e| e.into_iter().map(|(e, _)| e).collect())
                        .unwrap_or_else(|| vec![cut::diff(&old, &text)]);
                    let previous = f.cut(db).clone();
                    let cut = cut::recut(db, &mut self.pool, previous.as_deref(), &edits, &text);
                    f.set_text(db).to(text);
                    f.set_cut(db).to(cut);
                }
                f
            }
            None => {
                let id = FileId(self.next);
                self.next += 1;
                let cut = cut::recut(db, &mut self.pool, None, &[], &text);
                let f = db::SourceInput::new(db, id, path.to_path_buf(), text, cut);
                self.by_path.insert(key, f);
                f
            }
        }
    }
}

/// The incremental driver (used by the language server): like [`load`], but file texts come
/// from `read` (an editor's unsaved buffers first, then the disk), the inputs come from
/// `files` (shared by every root of the database: a text is only set when it changed), and
/// the workspace `previous` is reused, its file list and links only set when they changed, so
/// that salsa re-runs only the queries that read what changed. `read` is asked for the root
/// as well. The root is the workspace's first file; its id is `FileId(0)` only for the first
/// path of `files`.
pub fn reload(
    db: &mut db::Database,
    table: &mut Files,
    previous: Option<db::Workspace>,
    path: &Path,
    options: &Options,
    read: &mut dyn FnMut(&Path) -> Option<Arc<str>>,
) -> db::Workspace {
    use salsa::Setter;
    let mut files: Vec<db::SourceInput> = Vec::new();
    let root_text = read(path).unwrap_or_default();
    let root = table.input(db, path, root_text);
    files.push(root);
    let mut by_path: HashMap<PathBuf, FileId> = HashMap::new();
    by_path.insert(identity(path), *root.id(db));
    let mut links = Vec::new();
    let mut next = 0;
    while next < files.len() {
        let file = files[next];
        next += 1;
        let from = *file.id(db);
        let base = file
            .path(db)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let hrefs = db::includes(db, file).clone();
        for (href, span) in hrefs {
            let candidates = std::iter::once(base.join(&href))
                .chain(options.search_paths.iter().map(|s| s.join(&href)));
            let mut target = None;
            for cand in candidates {
                if !cand.is_file() {
                    continue;
                }
                let key = identity(&cand);
                if let Some(&id) = by_path.get(&key) {
                    target = Some(id);
                    break;
                }
                if let Some(text) = read(&cand) {
                    let input = table.input(db, &cand, text);
                    let id = *input.id(db);
                    files.push(input);
                    by_path.insert(key, id);
                    target = Some(id);
                    break;
                }
            }
            links.push(db::Link {
                from,
                href,
                span,
                target,
            });
        }
    }
    match previous {
        Some(ws) => {
            if *ws.files(db) != files {
                ws.set_files(db).to(files);
            }
            if *ws.links(db) != links {
                ws.set_links(db).to(links);
            }
            if *ws.no_inline(db) != options.no_inline {
                ws.set_no_inline(db).to(options.no_inline);
            }
            if *ws.synthesize_virtual_places(db) != options.synthesize_virtual_places {
                ws.set_synthesize_virtual_places(db)
                    .to(options.synthesize_virtual_places);
            }
            if *ws.build_modules(db) != options.build_modules {
                ws.set_build_modules(db).to(options.build_modules);
            }
            ws
        }
        None => db::Workspace::new(
            db,
            files,
            links,
            options.no_inline,
            options.synthesize_virtual_places,
            options.build_modules,
        ),
    }
}

fn identity(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// Runs the queries of a loaded workspace and assembles the [`Output`].
pub fn output(db: &db::Database, ws: db::Workspace, options: &Options) -> Output {
    let inputs = ws.files(db);
    let files: Vec<LoadedFile> = inputs
        .iter()
        .map(|f| LoadedFile {
            id: *f.id(db),
            path: f.path(db).clone(),
            text: f.text(db).clone(),
        })
        .collect();
    let elaborated = elab::elaborate(db, ws);
    let diagnostics = warnings::apply(&options.warnings, elaborated.diagnostics.clone());
    let has_errors = diagnostics.iter().any(|d| d.is_error());
    let bundle = (!has_errors).then(|| elaborated.bundle.clone());
    Output {
        files,
        bundle,
        diagnostics,
    }
}
