//! Name-resolution facts the elaboration records on the way, for tools (the language
//! server's hover, go to definition, references and completion): what each name use
//! resolved to, the declared symbols with their types, and the scopes of defuns.

use pnet_stdlib::Type;
use pnet_syntax::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    Place,
    Port,
    Struct,
    Field,
    Template,
    Specialize,
    Transition,
    Defun,
    /// An included file (the target span is `0..0` of that file).
    File,
}

/// A declaration: the span of its name.
#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    pub kind: SymbolKind,
    pub name: String,
    pub span: Span,
    /// The type, for places, ports, fields and structs.
    pub ty: Option<Type>,
}

/// A use of a name (`span`) that resolved to the declaration at `target`.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    pub kind: SymbolKind,
    pub name: String,
    pub span: Span,
    pub target: Span,
    pub ty: Option<Type>,
}

/// What an expression inside a defun sees: its ports, and the places of its net.
#[derive(Clone, Debug, PartialEq)]
pub struct Scope {
    /// The whole `defun` element.
    pub span: Span,
    pub ports: Vec<Symbol>,
    pub places: Vec<Symbol>,
    /// The struct type names visible in the defun.
    pub structs: Vec<Symbol>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    pub symbols: Vec<Symbol>,
    pub references: Vec<Reference>,
    pub scopes: Vec<Scope>,
}

impl Facts {
    /// The innermost scope holding `span` (same file).
    pub fn scope_at(&self, span: Span) -> Option<&Scope> {
        self.scopes
            .iter()
            .filter(|s| {
                s.span.file == span.file && s.span.start <= span.start && span.end <= s.span.end
            })
            .min_by_key(|s| s.span.end - s.span.start)
    }
}
