//! The xpnet AST: one node per element of `../shared/spec/xpnet.md`, attributes as spanned
//! strings, expression texts as [`MappedText`] (unescaped, mapped back to file offsets).
//! Boolean attributes are already parsed (with their defaults applied); everything else that
//! needs the context (types, names, references) is checked by sema.

use std::sync::Arc;

use crate::span::MappedText;
use crate::{FileId, Span};

/// An attribute value or a short text with its span (the span of the value, without quotes).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Name {
    pub text: String,
    pub span: Span,
}

/// A reference to another file (`include-* href`, `cinclude href`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Href {
    pub path: Name,
    /// The whole element.
    pub span: Span,
}

/// A parsed file.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct File {
    pub file: FileId,
    /// `None` when the XML was malformed or the root is unknown (a diagnostic says why).
    pub root: Option<Root>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Root {
    Defun(Box<Defun>),
    Template(Box<Template>),
    Structs(Vec<StructItem>),
    Props(Properties),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defun {
    pub name: Option<Name>,
    pub ports: Vec<PortDecl>,
    pub memory_buffers: Vec<MemoryBufferDecl>,
    pub memory_transfers: Vec<MemoryTransferDecl>,
    pub structs: Vec<StructItem>,
    pub properties: Vec<PropertiesItem>,
    pub requires: Vec<RequireDecl>,
    pub conditions: Vec<MappedText>,
    /// `None` if the defun has no body (the parser reported it); extra bodies are reported
    /// and dropped.
    pub body: Option<DefunBody>,
    /// The whole element.
    pub span: Span,
    /// The start tag's name (`defun`), for diagnostics about the element as a whole.
    pub tag: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortDirDecl {
    In,
    Out,
    InOut,
    Tunnel,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortDecl {
    pub dir: PortDirDecl,
    pub name: Name,
    pub ty: Name,
    pub place: Option<Name>,
    pub properties: Vec<PropertiesItem>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DefunBody {
    /// The expression text (possibly empty or only whitespace/comments).
    Expression(MappedText),
    Module(ModuleDecl),
    Modules(ModulesDecl),
    Net(NetDecl),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StructItem {
    Def(StructDef),
    /// `include-structs href`
    Include(Href),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructDef {
    pub name: Name,
    pub fields: Vec<FieldDecl>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldDecl {
    Field { name: Name, ty: Name, span: Span },
    Struct(StructDef),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetDecl {
    /// Shared, as the transitions.
    pub places: Vec<Arc<PlaceDecl>>,
    /// Shared, so that a tree built from items ([`super::items`]) reuses an unchanged
    /// transition's tree.
    pub transitions: Vec<Arc<TransitionDecl>>,
    pub templates: Vec<TemplateItem>,
    pub specializes: Vec<Specialize>,
    pub structs: Vec<StructItem>,
    pub properties: Vec<PropertiesItem>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplateItem {
    Inline(Template),
    /// `include-template href` (the file's root is a `template`).
    Include(Href),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pub name: Option<Name>,
    /// `template-parameter type=T`
    pub params: Vec<Name>,
    pub defun: Option<Box<Defun>>,
    pub span: Span,
    pub tag: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Specialize {
    pub name: Name,
    pub use_: Name,
    /// `type-map replace with`
    pub type_maps: Vec<(Name, Name)>,
    /// `type-get name`
    pub type_gets: Vec<Name>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceDecl {
    pub name: Name,
    pub ty: Name,
    pub is_virtual: bool,
    pub put_token: bool,
    pub shared_sink: bool,
    pub generator: bool,
    /// One entry per `token`, each with its `value` texts (usually one).
    pub tokens: Vec<TokenDecl>,
    pub properties: Vec<PropertiesItem>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenDecl {
    pub values: Vec<MappedText>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransitionDecl {
    pub name: Name,
    /// The raw `priority` attribute (sema parses it as u16).
    pub priority: Option<Name>,
    pub inline: Option<bool>,
    pub produce_shared: bool,
    pub consume_shared: bool,
    pub passthrough_shared: bool,
    pub body: Option<TransitionBody>,
    pub connections: Vec<ConnectDecl>,
    pub place_maps: Vec<PlaceMapDecl>,
    pub conditions: Vec<MappedText>,
    pub requires: Vec<RequireDecl>,
    pub properties: Vec<PropertiesItem>,
    pub span: Span,
    pub tag: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransitionBody {
    Defun(Box<Defun>),
    /// `include-function href`
    Include(Href),
    /// `use name`
    Use(Name),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnectKindDecl {
    In,
    Out,
    InOut,
    Read,
    OutMany,
    NumberOfTokens,
    /// `connect-response port to`: `place` holds the `to` attribute.
    Response,
    /// `connect-eureka port`: no place.
    Eureka,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectDecl {
    pub kind: ConnectKindDecl,
    pub port: Name,
    /// The `place` attribute (`to` for responses; `None` for eureka).
    pub place: Option<Name>,
    pub properties: Vec<PropertiesItem>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceMapDecl {
    pub virtual_: Name,
    pub real: Name,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleDecl {
    pub name: Name,
    /// The raw signature (`"s sum (p)"`); sema parses it.
    pub function: Name,
    pub target: Option<Name>,
    pub pass_context: bool,
    pub require_function_unloads_without_rest: bool,
    pub require_module_unloads_without_rest: bool,
    /// From the `eureka-group` attribute or child element.
    pub eureka_group: Option<MappedText>,
    pub cincludes: Vec<Href>,
    pub ld: Vec<Name>,
    pub cxx: Vec<Name>,
    pub code: Option<MappedText>,
    pub span: Span,
    pub tag: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModulesDecl {
    pub preferences: Vec<Name>,
    pub modules: Vec<ModuleDecl>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PropertiesItem {
    /// `property key value?` (the value may be the element's text).
    Property {
        key: Name,
        value: Option<Name>,
        span: Span,
    },
    /// Nested `properties name`.
    Group(Properties),
    /// `include-properties href`
    Include(Href),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Properties {
    pub name: Option<Name>,
    pub items: Vec<PropertiesItem>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequireDecl {
    pub key: Name,
    pub mandatory: bool,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryBufferDecl {
    pub name: Name,
    pub read_only: bool,
    pub size: Option<MappedText>,
    pub alignment: Option<MappedText>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransferKindDecl {
    Get,
    Put,
    GetPut,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryTransferDecl {
    pub kind: TransferKindDecl,
    pub global: Option<MappedText>,
    pub local: Option<MappedText>,
    pub allow_empty_ranges: bool,
    pub not_modified_in_module_call: bool,
    pub span: Span,
}
