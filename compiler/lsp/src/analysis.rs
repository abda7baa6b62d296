//! The server's state: one salsa database shared by every open document, one sema
//! `Workspace` per open document (that document as the root), and the editor's buffers as
//! an overlay over the disk. An edit sets one input text; salsa re-runs what reads it.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pnet_sema::db::{self, Database, Workspace};
use pnet_sema::facts::Facts;
use pnet_sema::{Options, WarningConfig};
use pnet_syntax::xml::items::Shift;
use pnet_syntax::xml::{DefunBody, Root};
use pnet_syntax::{Diagnostic, FileId, Span};

use crate::line_index::LineIndex;

/// An open document.
#[derive(Debug)]
pub struct Doc {
    pub text: Arc<str>,
    pub index: LineIndex,
    pub version: i32,
}

pub struct Analysis {
    db: Database,
    pub options: Options,
    pub docs: BTreeMap<PathBuf, Doc>,
    roots: HashMap<PathBuf, Workspace>,
    /// The source files, one input per path, shared by every root.
    files: pnet_sema::Files,
    /// [`Analysis::root_in`] gives the whole file's parse ([`db::parse`]) instead of the
    /// items parsed alone, and [`Analysis::facts_at`] and [`Analysis::facts_in`] give
    /// nothing (the features read the whole workspace's facts): the features' answers as
    /// before the items (for tests and comparisons; off by default).
    pub whole_parse: bool,
}

/// A diagnostic located in one file.
#[derive(Clone, Debug, PartialEq)]
pub struct FileDiagnostic {
    pub path: PathBuf,
    pub diagnostic: Diagnostic,
}

/// Where a file sits in some analysed workspace.
#[derive(Clone, Copy, Debug)]
pub struct Located {
    pub ws: Workspace,
    pub file: FileId,
}

impl Default for Analysis {
    fn default() -> Self {
        Analysis::new(Options::default())
    }
}

impl Analysis {
    pub fn new(options: Options) -> Analysis {
        Analysis {
            db: Database::default(),
            options,
            docs: BTreeMap::new(),
            roots: HashMap::new(),
            files: pnet_sema::Files::default(),
            whole_parse: false,
        }
    }

    pub fn db(&self) -> &Database {
        &self.db
    }

    /// Salsa's own counts (`memory_usage`): the memos of each query and the instances of each
    /// salsa struct, by name (for tests and logs: what a long session keeps alive).
    pub fn salsa_counts(&mut self) -> BTreeMap<String, usize> {
        let usage = (&mut self.db as &mut dyn salsa::Database).memory_usage();
        let structs = usage.structs.iter().map(|s| (s.debug_name(), s.count()));
        let queries = usage.queries.iter().map(|(n, q)| (*n, q.count()));
        structs
            .chain(queries)
            .map(|(n, c)| (n.to_string(), c))
            .collect()
    }

    pub fn set_options(&mut self, options: Options) {
        self.options = options;
        self.refresh();
    }

    pub fn open(&mut self, path: PathBuf, text: &str, version: i32) {
        self.set_doc(path, text, version);
    }

    /// A new text for an open document: its input is set, and salsa re-runs what reads it.
    pub fn change(&mut self, path: PathBuf, text: &str, version: i32) {
        self.set_doc(path, text, version);
    }

    /// Edits of an open document as an editor sends them: each replaces a byte range of the
    /// text (as it is after the edits before it) by a new text. The database is told the
    /// ranges, so that it scans again only the items they touch ([`pnet_sema::cut`]).
    /// Ranges are clamped to the text and to character boundaries.
    pub fn edit(&mut self, path: PathBuf, edits: &[(Range<usize>, &str)], version: i32) {
        let (old, mut index) = match self.docs.get_mut(&path) {
            Some(d) => (d.text.clone(), std::mem::take(&mut d.index)),
            None => (Arc::from(""), LineIndex::new("")),
        };
        let extra: usize = edits.iter().map(|(_, t)| t.len()).sum();
        let mut text = String::new();
        for (k, (range, new)) in edits.iter().enumerate() {
            let current: &str = if k == 0 { &old } else { &text };
            let floor = |mut i: usize| {
                i = i.min(current.len());
                while !current.is_char_boundary(i) {
                    i -= 1;
                }
                i
            };
            let (s, e) = (floor(range.start), floor(range.end));
            let e = e.max(s);
            if k == 0 {
                // the first edit builds the new text in one pass
                text.reserve(old.len() + extra);
                text.push_str(&old[..s]);
                text.push_str(new);
                text.push_str(&old[e..]);
            } else {
                text.replace_range(s..e, new);
            }
            index.edit(s..e, new);
            self.files.edited(&path, s..e, new);
        }
        if edits.is_empty() {
            text.push_str(&old);
        }
        self.docs.insert(
            path,
            Doc {
                text: Arc::from(text),
                index,
                version,
            },
        );
        self.refresh();
    }

    fn set_doc(&mut self, path: PathBuf, text: &str, version: i32) {
        self.docs.insert(
            path,
            Doc {
                text: Arc::from(text),
                index: LineIndex::new(text),
                version,
            },
        );
        self.refresh();
    }

    pub fn close(&mut self, path: &Path) {
        self.docs.remove(path);
        self.roots.remove(path);
        self.refresh();
    }

    /// Re-loads every open document's workspace (texts from the open buffers, else the
    /// disk). Unchanged inputs are left alone, so salsa keeps what they derived.
    pub fn refresh(&mut self) {
        let paths: Vec<PathBuf> = self.docs.keys().cloned().collect();
        for path in paths {
            let previous = self.roots.get(&path).copied();
            let docs = &self.docs;
            let mut read = |p: &Path| -> Option<Arc<str>> {
                match docs.get(p) {
                    Some(d) => Some(d.text.clone()),
                    None => std::fs::read_to_string(p).ok().map(Arc::from),
                }
            };
            let ws = pnet_sema::reload(
                &mut self.db,
                &mut self.files,
                previous,
                &path,
                &self.options,
                &mut read,
            );
            self.roots.insert(path, ws);
        }
    }

    /// Every place an open file appears in: as a root of its own workspace, and inside the
    /// workspaces of the open documents that include it (those first).
    pub fn locate(&self, path: &Path) -> Vec<Located> {
        let mut out = Vec::new();
        let mut own = None;
        for (root, &ws) in &self.roots {
            for (i, f) in ws.files(&self.db).iter().enumerate() {
                // a root is its workspace's first file (whichever path its input was met by)
                let this = if root == path {
                    i == 0
                } else {
                    f.path(&self.db) == path
                };
                if this {
                    let l = Located {
                        ws,
                        file: *f.id(&self.db),
                    };
                    if root == path {
                        own = Some(l);
                    } else {
                        out.push(l);
                    }
                }
            }
        }
        out.extend(own);
        out
    }

    /// The path of a file of `ws` (a root: the path it was opened by).
    pub fn path_of(&self, ws: Workspace, file: FileId) -> Option<&Path> {
        if file == root_file(&self.db, ws)
            && let Some((root, _)) = self.roots.iter().find(|(_, w)| **w == ws)
        {
            return Some(root.as_path());
        }
        ws_file(&self.db, ws, file).map(|f| f.path(&self.db).as_path())
    }

    pub fn text_of(&self, ws: Workspace, file: FileId) -> Option<Arc<str>> {
        ws_file(&self.db, ws, file).map(|f| f.text(&self.db).clone())
    }

    pub fn facts(&self, ws: Workspace) -> &Facts {
        pnet_sema::elab::facts(&self.db, ws)
    }

    /// The facts of the root net's transition around `offset` (strictly inside its item),
    /// [`pnet_sema::elab::facts_at`]: every reference and symbol of [`Analysis::facts`] whose
    /// span holds `offset`, and every scope holding it but the root defun's, without the
    /// walk over every item that [`Analysis::facts`] makes after an edit. `None` when the
    /// whole facts must answer (outside the root net's transitions, and see
    /// [`Analysis::whole_parse`]).
    pub fn facts_at(&self, l: Located, offset: u32) -> Option<Facts> {
        if self.whole_parse {
            return None;
        }
        pnet_sema::elab::facts_at(&self.db, l.ws, l.file, offset)
    }

    /// The facts of the root net's transitions whose items meet `start..=end`
    /// ([`pnet_sema::elab::facts_in`]): every scope of [`Analysis::facts`] holding a text
    /// strictly inside one of them but the root defun's. `None` as for
    /// [`Analysis::facts_at`].
    pub fn facts_in(&self, l: Located, start: u32, end: u32) -> Option<Facts> {
        if self.whole_parse {
            return None;
        }
        pnet_sema::elab::facts_in(&self.db, l.ws, l.file, start, end)
    }

    pub fn parsed(&self, l: Located) -> Option<&db::Parsed> {
        let f = *ws_file(&self.db, l.ws, l.file)?;
        Some(db::parse(&self.db, f))
    }

    /// The root of a file's tree with the file's offsets, from the tree the elaboration reads
    /// ([`db::source_tree`]: its root net's places and transitions parsed alone, kept through
    /// edits), not a parse of the whole file: the places and transitions of the root net are
    /// only those that meet `range` (inclusive; all for `None`), each moved by its item's
    /// start. Its spans keep their items' file ids: compare offsets, not files.
    pub fn root_in(&self, l: Located, range: Option<(u32, u32)>) -> Option<Cow<'_, Root>> {
        let f = *ws_file(&self.db, l.ws, l.file)?;
        if self.whole_parse {
            return db::parse(&self.db, f).ast.root.as_ref().map(Cow::Borrowed);
        }
        let parsed = db::source_tree(&self.db, f);
        let root = parsed.ast.root.as_ref()?;
        if parsed.items.is_empty() {
            return Some(Cow::Borrowed(root));
        }
        let Root::Defun(d) = root else {
            return Some(Cow::Borrowed(root));
        };
        let Some(DefunBody::Net(net)) = &d.body else {
            return Some(Cow::Borrowed(root));
        };
        let at: HashMap<FileId, u32> = parsed.items.iter().map(|i| (i.id, i.at)).collect();
        // the item's start when it meets the range (an item not found is kept as it is)
        let keep = |s: Span| -> Option<u32> {
            let Some(&a) = at.get(&s.file) else {
                return Some(0);
            };
            match range {
                Some((start, end)) => (a + s.start <= end && start <= a + s.end).then_some(a),
                None => Some(a),
            }
        };
        fn moved<T: Shift + Clone>(
            list: &[Arc<T>],
            span: impl Fn(&T) -> Span,
            keep: impl Fn(Span) -> Option<u32>,
        ) -> Vec<Arc<T>> {
            list.iter()
                .filter_map(|x| {
                    let a = keep(span(x))?;
                    let mut x = x.clone();
                    if a > 0 {
                        x.shift(a);
                    }
                    Some(x)
                })
                .collect()
        }
        let places = moved(&net.places, |p| p.span, keep);
        let transitions = moved(&net.transitions, |t| t.span, keep);
        let mut d = d.clone();
        if let Some(DefunBody::Net(net)) = &mut d.body {
            net.places = places;
            net.transitions = transitions;
        }
        Some(Cow::Owned(Root::Defun(d)))
    }

    /// The diagnostics of each open document: those found in it by the workspaces it is
    /// part of (its own and those of the open documents including it), without duplicates.
    pub fn diagnostics(&self) -> BTreeMap<PathBuf, Vec<Diagnostic>> {
        let mut out: BTreeMap<PathBuf, Vec<Diagnostic>> =
            self.docs.keys().map(|p| (p.clone(), Vec::new())).collect();
        // the open documents by their canonical paths: an input keeps the path it was first
        // met by (`sub/../a.xpnet`), which may not be the one the editor opened
        let by_identity: HashMap<PathBuf, &PathBuf> = self
            .docs
            .keys()
            .map(|p| (p.canonicalize().unwrap_or_else(|_| p.clone()), p))
            .collect();
        for (root, &ws) in &self.roots {
            let mut paths: HashMap<FileId, Option<&Path>> = HashMap::new();
            let raw = pnet_sema::elab::diagnostics(&self.db, ws);
            let root_is_defun = ws
                .files(&self.db)
                .first()
                .map(|f| {
                    matches!(
                        db::source_tree(&self.db, *f).ast.root,
                        Some(pnet_syntax::xml::Root::Defun(_)) | None
                    )
                })
                .unwrap_or(true);
            let diags = pnet_sema::apply_warnings(&self.options.warnings, raw.clone());
            for d in diags {
                if d.code == "root_not_defun" && !root_is_defun {
                    continue;
                }
                let file = d
                    .primary_span()
                    .map_or_else(|| root_file(&self.db, ws), |s| s.file);
                let path = *paths.entry(file).or_insert_with(|| {
                    let path = self.path_of(ws, file)?;
                    if path == root.as_path() || self.docs.contains_key(path) {
                        return Some(path);
                    }
                    let canonical = path.canonicalize().ok()?;
                    by_identity.get(&canonical).map(|p| p.as_path())
                });
                // a file only included by this root reports through its own document only
                // when it is open
                let Some(path) = path else {
                    continue;
                };
                if let Some(list) = out.get_mut(path)
                    && !list.contains(&d)
                {
                    list.push(d);
                }
            }
        }
        out
    }
}

/// The input of file `file` of `ws` (ids are shared by every root: not positions).
fn ws_file(db: &Database, ws: Workspace, file: FileId) -> Option<&db::SourceInput> {
    ws.files(db).iter().find(|f| *f.id(db) == file)
}

/// The id of a workspace's root (its first file).
fn root_file(db: &Database, ws: Workspace) -> FileId {
    ws.files(db).first().map_or(FileId(0), |f| *f.id(db))
}

/// Options from the LSP `initializationOptions` (also accepted as the `pnet` section of a
/// `workspace/didChangeConfiguration`):
/// `{ "searchPaths": ["..."], "warnings": ["all", "error", "no-unused-field", "unused-field=false"] }`.
pub fn options_from_json(v: &serde_json::Value) -> Options {
    let v = v.get("pnet").unwrap_or(v);
    let mut options = Options::default();
    if let Some(paths) = v.get("searchPaths").and_then(|p| p.as_array()) {
        options.search_paths = paths
            .iter()
            .filter_map(|p| p.as_str())
            .map(PathBuf::from)
            .collect();
    }
    let mut w = WarningConfig::default();
    if let Some(flags) = v.get("warnings").and_then(|p| p.as_array()) {
        for f in flags.iter().filter_map(|f| f.as_str()) {
            let f = f
                .trim_start_matches("--")
                .trim_start_matches("-W")
                .trim_start_matches('W');
            match f {
                "all" => w.all = true,
                "error" => w.error = true,
                _ => {
                    let (name, on) = match f.split_once('=') {
                        Some((n, b)) => (n, matches!(b, "true" | "1" | "yes" | "on")),
                        None => match f.strip_prefix("no-") {
                            Some(n) => (n, false),
                            None => (f, true),
                        },
                    };
                    let name = pnet_sema::canonical_warning(name).unwrap_or(name);
                    w.settings.push((name.to_string(), on));
                }
            }
        }
    }
    options.warnings = w;
    options.no_inline = v.get("noInline").and_then(|b| b.as_bool()).unwrap_or(false);
    options.synthesize_virtual_places = v
        .get("synthesizeVirtualPlaces")
        .and_then(|b| b.as_bool())
        .unwrap_or(false);
    options
}
