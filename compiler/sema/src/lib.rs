//! Semantic analysis of xpnet files: include resolution, structs, templates and
//! `specialize`, `use`, inlining, all of the spec's checks, static typing of expressions and
//! conditions, and lowering to the IR and bytecode of `pnet-bundle`.
//!
//! Facts are salsa queries over source texts (inputs); the driver ([`compile_path`]) does the
//! file I/O and feeds the database.

pub mod expr;

use std::path::PathBuf;

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
    /// The root file's AST (for `--emit=ast`).
    pub ast: Option<pnet_syntax::xml::File>,
    /// The bundle, when there were no errors (warnings turned errors by `--Werror` included).
    pub bundle: Option<Bundle>,
    /// All diagnostics, in a stable order (by file, then position).
    pub diagnostics: Vec<Diagnostic>,
}

impl Output {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.is_error())
    }

    /// The files the root file depends on (includes, transitively), without the root.
    pub fn dependencies(&self) -> impl Iterator<Item = &std::path::Path> {
        self.files.iter().skip(1).map(|f| f.path.as_path())
    }
}
