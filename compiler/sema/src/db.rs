//! The salsa database: source files and the include graph are inputs; parsing and include
//! collection are tracked queries (elaboration: [`crate::elab::elaborate`]). No I/O happens
//! in here.
//!
//! Two parses of a file: [`parse`], the whole file with file offsets (for tools and
//! `--emit=ast`), and [`source_tree`], what the elaboration reads: when the file can be cut
//! ([`xml::items`]), each place and transition of its root net is an input of its own
//! ([`ItemInput`], kept through edits by the driver: [`crate::cut`]) parsed alone (by groups,
//! [`parse_group`]) with an item file id of its own and spans relative to its start. An edit
//! elsewhere leaves such a tree equal, so it is reused; [`Resolver`] maps its spans back to
//! the file once the elaboration is done.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use pnet_bundle::{SourceFileId, SourceSpan};

use pnet_syntax::xml::{
    self, DefunBody, PropertiesItem, Root, StructItem, TemplateItem, TransitionBody, TransitionDecl,
};
use pnet_syntax::{Diagnostic, FileId, Span};

/// One source file: its id (`FileId(i)` is the `i`-th file loaded), path and text, and the
/// places and transitions of its root net as inputs of their own ([`Cut`], kept by the
/// driver, [`crate::Files`], through edits).
#[salsa::input(debug)]
pub struct SourceInput {
    pub id: FileId,
    #[returns(ref)]
    pub path: PathBuf,
    #[returns(ref)]
    pub text: Arc<str>,
    #[returns(ref)]
    pub cut: Option<Arc<Cut>>,
}

/// The items (places and transitions) of a file's root net, in document order: each its own
/// input ([`ItemInput`]) and its range in the file; `None` (in [`SourceInput::cut`]) when
/// the file cannot be cut ([`xml::items::items_in_order`]). An edit gives the items it
/// touches a new text and only moves the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    pub items: Vec<CutItem>,
}

/// One item of a [`Cut`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutItem {
    pub input: ItemInput,
    pub start: u32,
    pub end: u32,
    pub kind: xml::items::ItemKind,
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
    /// The items parsed alone ([`source_tree`]): their trees' spans (and their diagnostics')
    /// are relative to them, in their own file id; empty for a whole parse.
    pub items: Vec<Item>,
    /// The [`ItemInput`] of each transition of the root net (in order) when it was parsed
    /// alone; empty for a whole parse.
    pub keys: Vec<salsa::Id>,
    /// How many of `items` are places (they come first).
    pub place_items: usize,
    /// When parsed by items: the indexes of the root net's places and transitions that
    /// hold include elements (the others are not walked by [`includes`]).
    pub with_hrefs: Option<(Vec<usize>, Vec<usize>)>,
}

/// An item of a file parsed alone: its own file id, and its offset in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub id: FileId,
    pub at: u32,
}

/// Parses one file.
#[salsa::tracked(returns(ref))]
pub fn parse(db: &dyn salsa::Database, file: SourceInput) -> Parsed {
    let id = file.id(db);
    let text = file.text(db);
    let (ast, diagnostics) = xml::parse_file(*id, text);
    Parsed {
        ast,
        diagnostics,
        items: Vec::new(),
        keys: Vec::new(),
        place_items: 0,
        with_hrefs: None,
    }
}

/// The high bit of an item's file id (the rest is the index of its [`ItemInput`]).
pub const ITEM_FILE: u32 = 1 << 31;

/// The text of one place or transition of a file's root net: the key of its parse and of
/// its elaboration (`elab::chunk_query`, `elab::transition_query`).
///
/// What bounds the memory of a long editing session: the driver ([`crate::Files`]) keeps
/// one input per item of the open files and reuses it: an edited item gets its new text in
/// the same input (the memos keyed by it are replaced), and the inputs of deleted items are
/// reused by the next new ones (test `many_edits_of_one_transition_keep_memory_bounded`).
#[salsa::input(debug)]
pub struct ItemInput {
    #[returns(ref)]
    pub text: Arc<str>,
}

/// The parse of one item alone, spans relative to its start in its file id: a transition
/// (`tree`) or a place (`place`); `None` when it is not well-formed alone.
#[derive(Clone, Debug, PartialEq)]
pub struct ItemTree {
    pub tree: Option<Arc<TransitionDecl>>,
    pub place: Option<Arc<xml::PlaceDecl>>,
    pub diagnostics: Vec<Diagnostic>,
    /// Whether it holds include elements ([`includes`] walks only those items).
    pub hrefs: bool,
}

/// The file id of an item's tree (`None` when the index does not fit).
pub fn item_file(item: ItemInput) -> Option<FileId> {
    use salsa::plumbing::AsId;
    let index = item.as_id().index();
    (index < ITEM_FILE).then_some(FileId(ITEM_FILE | index))
}

/// Parses one item alone.
#[salsa::tracked(returns(ref))]
pub fn parse_item(db: &dyn salsa::Database, item: ItemInput) -> Option<ItemTree> {
    parse_item_text(db, item)
}

/// A run of consecutive items of one kind (places or transitions) of a file's root net,
/// parsed by one query ([`parse_group`]): an edit revalidates a few hundred groups, not
/// thousands of items. The transitions' groups are also those elaborated together
/// (`elab::chunk_query`).
#[salsa::interned(debug)]
pub struct ItemGroup<'db> {
    #[returns(ref)]
    pub items: Vec<ItemInput>,
}

/// The longest group; a group also ends after an item whose input's index is `GROUP_END`
/// modulo `GROUP_EVERY` (so that an inserted or removed item changes one group, not the
/// ends of all the groups after it).
const GROUP_MAX: usize = 64;
const GROUP_EVERY: u32 = 16;
const GROUP_END: u32 = 15;

/// `items` cut into groups ([`ItemGroup`]).
pub fn groups(items: impl IntoIterator<Item = ItemInput>) -> Vec<Vec<ItemInput>> {
    use salsa::plumbing::AsId;
    let mut out = Vec::new();
    let mut current = Vec::new();
    for i in items {
        current.push(i);
        if current.len() >= GROUP_MAX || i.as_id().index() % GROUP_EVERY == GROUP_END {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The items of a group parsed alone ([`parse_item`]'s trees, read from the items' inputs
/// directly: the group depends on their texts only); `None` when one is not well-formed.
#[salsa::tracked(returns(ref))]
pub fn parse_group<'db>(
    db: &'db dyn salsa::Database,
    group: ItemGroup<'db>,
) -> Option<Vec<ItemTree>> {
    group
        .items(db)
        .iter()
        .map(|&i| parse_item_text(db, i))
        .collect()
}

fn parse_item_text(db: &dyn salsa::Database, item: ItemInput) -> Option<ItemTree> {
    let id = item_file(item)?;
    let text = item.text(db);
    if text.starts_with("<place") {
        let (place, diagnostics) = xml::items::parse_place(id, text)?;
        let mut hrefs = Vec::new();
        if let Some(p) = &place {
            prop_hrefs(&p.properties, &mut hrefs);
        }
        return Some(ItemTree {
            tree: None,
            place: place.map(Arc::new),
            diagnostics,
            hrefs: !hrefs.is_empty(),
        });
    }
    let (tree, diagnostics) = xml::items::parse_transition(id, text)?;
    let mut hrefs = Vec::new();
    if let Some(t) = &tree {
        transition_hrefs(t, &mut hrefs);
    }
    Some(ItemTree {
        tree: tree.map(Arc::new),
        place: None,
        diagnostics,
        hrefs: !hrefs.is_empty(),
    })
}

/// A file's tree by items (see the module's documentation); `None` when it cannot be cut.
/// Never compared with the previous one (`no_eq`): its items' offsets move with nearly every
/// edit, and the comparison walked every item's tree.
#[salsa::tracked(returns(ref), no_eq)]
pub fn tree(db: &dyn salsa::Database, file: SourceInput) -> Option<Parsed> {
    use salsa::plumbing::AsId;
    let id = *file.id(db);
    let text = file.text(db);
    let cut = file.cut(db).as_ref()?;
    let mut ranges = xml::items::ItemRanges::default();
    let (mut places_in, mut transitions_in) = (Vec::new(), Vec::new());
    for i in &cut.items {
        let r = i.start as usize..i.end as usize;
        match i.kind {
            xml::items::ItemKind::Place => {
                ranges.places.push(r);
                places_in.push(i);
            }
            xml::items::ItemKind::Transition => {
                ranges.transitions.push(r);
                transitions_in.push(i);
            }
        }
    }
    let (mut ast, mut diagnostics) = xml::items::skeleton_with(id, text, &ranges)?;
    let places_count = places_in.len();
    let count = cut.items.len();
    let mut items = Vec::with_capacity(count);
    let mut places = Vec::with_capacity(places_in.len());
    let mut trees = Vec::with_capacity(transitions_in.len());
    let mut keys = Vec::with_capacity(transitions_in.len());
    let mut with_hrefs = (Vec::new(), Vec::new());
    for list in [places_in, transitions_in] {
        let mut at = list.iter();
        for group in groups(list.iter().map(|i| i.input)) {
            let parsed = parse_group(db, ItemGroup::new(db, group)).as_ref()?;
            for (parsed, i) in parsed.iter().zip(&mut at) {
                // the driver keeps the items' texts and the file's text together
                debug_assert_eq!(&**i.input.text(db), &text[i.start as usize..i.end as usize]);
                items.push(Item {
                    id: item_file(i.input)?,
                    at: i.start,
                });
                if let Some(t) = &parsed.tree {
                    if parsed.hrefs {
                        with_hrefs.1.push(trees.len());
                    }
                    trees.push(t.clone());
                    keys.push(i.input.as_id());
                }
                if let Some(p) = &parsed.place {
                    if parsed.hrefs {
                        with_hrefs.0.push(places.len());
                    }
                    places.push(p.clone());
                }
                diagnostics.extend(parsed.diagnostics.iter().cloned());
            }
        }
    }
    let net = xml::items::root_net(&mut ast)?;
    net.places = places;
    net.transitions = trees;
    Some(Parsed {
        ast,
        diagnostics,
        items,
        keys,
        place_items: places_count,
        with_hrefs: Some(with_hrefs),
    })
}

/// The root defun of a parsed file and its net, when its root is a defun with a net.
fn root_net(t: &Parsed) -> Option<(&xml::Defun, &xml::NetDecl)> {
    let Some(Root::Defun(d)) = &t.ast.root else {
        return None;
    };
    let Some(DefunBody::Net(n)) = &d.body else {
        return None;
    };
    Some((d, n))
}

/// Consecutive groups ([`ItemGroup`]) of the places of a file's root net, elaborated by one
/// query (`elab::place_group`): the groups are parsed as [`tree`] parses them, and an edit
/// revalidates a few dozen chunks of places, not every group.
#[salsa::interned(debug)]
pub struct PlaceChunk<'db> {
    #[returns(ref)]
    pub groups: Vec<ItemGroup<'db>>,
}

/// A chunk of places ends after a group whose last item's input index is `CHUNK_END` modulo
/// `CHUNK_EVERY` (where a group ends too: a place added or removed changes one chunk), or
/// after `CHUNK_MAX` groups.
const CHUNK_EVERY: u32 = 64;
const CHUNK_END: u32 = 63;
const CHUNK_MAX: usize = 8;

/// The items of the places of a file's root net when it is cut into items, in order.
/// Equal after an edit that adds or removes no place (it reads the cut, which moves with
/// every edit: a walk over the items, without their texts).
#[salsa::tracked(returns(ref))]
pub fn place_items(db: &dyn salsa::Database, file: SourceInput) -> Option<Vec<ItemInput>> {
    let cut = file.cut(db).as_ref()?;
    Some(
        cut.items
            .iter()
            .filter(|i| i.kind == xml::items::ItemKind::Place)
            .map(|i| i.input)
            .collect(),
    )
}

/// The chunks ([`PlaceChunk`]) of the places of a file's root net ([`place_items`]) when it
/// is cut into items, in order: made again only when a place is added or removed.
#[salsa::tracked(returns(ref))]
pub fn place_chunks<'db>(
    db: &'db dyn salsa::Database,
    file: SourceInput,
) -> Option<Vec<PlaceChunk<'db>>> {
    use salsa::plumbing::AsId;
    let places = place_items(db, file).as_ref()?.iter().copied();
    let mut out = Vec::new();
    let mut current = Vec::new();
    for g in groups(places) {
        let last = g.last().map(|i| i.as_id().index());
        current.push(ItemGroup::new(db, g));
        if last.is_some_and(|i| i % CHUNK_EVERY == CHUNK_END) || current.len() >= CHUNK_MAX {
            out.push(PlaceChunk::new(db, std::mem::take(&mut current)));
        }
    }
    if !current.is_empty() {
        out.push(PlaceChunk::new(db, current));
    }
    Some(out)
}

/// The places of a chunk ([`place_chunks`]) parsed alone, each with its item's file id;
/// `None` when an item is not well-formed alone.
pub fn chunk_places<'db>(
    db: &'db dyn salsa::Database,
    chunk: PlaceChunk<'db>,
) -> Option<Vec<(FileId, &'db xml::PlaceDecl)>> {
    let mut out = Vec::new();
    for &g in chunk.groups(db) {
        let trees = parse_group(db, g).as_ref()?;
        for (t, &i) in trees.iter().zip(g.items(db)) {
            if let Some(p) = t.place.as_deref() {
                out.push((item_file(i)?, p));
            }
        }
    }
    Some(out)
}

/// The name of a place of the root net, for the checks across its chunks
/// (`elab::place_names`): the span of its name, whether it is a `shared_sink`, and the
/// cleanup place its type names (`P` of `shared_P`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceName {
    pub name: Arc<str>,
    pub span: Span,
    pub shared_sink: bool,
    pub sink_of: Option<Arc<str>>,
}

/// The [`PlaceName`]s of the places of a chunk ([`place_chunks`]), in order: equal after an
/// edit of a place that leaves its name alone (its type, its tokens).
#[salsa::tracked(returns(ref))]
pub fn chunk_place_names<'db>(
    db: &'db dyn salsa::Database,
    chunk: PlaceChunk<'db>,
) -> Option<Vec<PlaceName>> {
    Some(
        chunk_places(db, chunk)?
            .into_iter()
            .map(|(_, p)| PlaceName {
                name: Arc::from(p.name.text.as_str()),
                span: p.name.span,
                shared_sink: p.shared_sink,
                sink_of: match pnet_stdlib::Type::from_name(&p.ty.text) {
                    Some(pnet_stdlib::Type::Shared(s)) => Some(s),
                    _ => None,
                },
            })
            .collect(),
    )
}

/// What the root net's transitions see of the file around them, when it is cut into items
/// ([`tree`]): its root defun with only the properties and structs, and its net with only
/// the templates, specializations and structs (the places come with each transition's
/// query). An edit that leaves these equal leaves the transitions' queries alone.
#[salsa::tracked(returns(ref))]
pub fn net_env(db: &dyn salsa::Database, file: SourceInput) -> Option<xml::Defun> {
    let t = tree(db, file).as_ref()?;
    let (d, n) = root_net(t)?;
    let none = Span::new(d.span.file, 0, 0);
    Some(xml::Defun {
        name: None,
        ports: Vec::new(),
        memory_buffers: Vec::new(),
        memory_transfers: Vec::new(),
        structs: d.structs.clone(),
        properties: d.properties.clone(),
        requires: Vec::new(),
        conditions: Vec::new(),
        body: Some(DefunBody::Net(xml::NetDecl {
            places: Vec::new(),
            transitions: Vec::new(),
            templates: n.templates.clone(),
            specializes: n.specializes.clone(),
            structs: n.structs.clone(),
            properties: Vec::new(),
            span: none,
        })),
        span: none,
        tag: none,
    })
}

/// The target of each include link of a workspace, by `(file, href)` (without the spans,
/// which move with every edit before them).
#[salsa::tracked(returns(ref))]
pub fn link_targets(
    db: &dyn salsa::Database,
    ws: Workspace,
) -> Vec<((FileId, String), Option<FileId>)> {
    ws.links(db)
        .iter()
        .map(|l| ((l.from, l.href.clone()), l.target))
        .collect()
}

/// The tree the elaboration reads: by items ([`tree`]) if the file can be cut, else the
/// whole parse.
pub fn source_tree(db: &dyn salsa::Database, file: SourceInput) -> &Parsed {
    match tree(db, file) {
        Some(t) => t,
        None => parse(db, file),
    }
}

/// Maps the spans of items parsed alone back to their files.
#[derive(Clone, Debug, Default)]
pub struct Resolver {
    items: HashMap<FileId, (FileId, u32), BuildHasherDefault<IdHasher>>,
}

/// A hasher for file ids (one `u32`, an index: multiplied, not SipHashed; every span of an
/// elaboration's result is looked up once), also used for short names.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(n)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Resolver {
    /// Adds the items of a file's tree.
    pub fn add(&mut self, p: &Parsed) {
        for i in &p.items {
            self.items.insert(i.id, (p.ast.file, i.at));
        }
    }

    /// Adds one item of `file` (for [`Resolver::file`] only: its offset is not known).
    pub fn add_item(&mut self, item: FileId, file: FileId) {
        self.items.insert(item, (file, 0));
    }

    /// Whether no span needs mapping.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    fn get(&self, f: FileId) -> Option<&(FileId, u32)> {
        if f.0 & ITEM_FILE == 0 {
            return None;
        }
        self.items.get(&f)
    }

    /// The file an id belongs to (itself for a file).
    pub fn file(&self, f: FileId) -> FileId {
        self.get(f).map_or(f, |i| i.0)
    }

    pub fn span(&self, s: &mut Span) {
        if let Some(&(file, at)) = self.get(s.file) {
            *s = Span::new(file, s.start + at, s.end + at);
        }
    }

    pub fn source(&self, s: &mut SourceSpan) {
        if let Some(&(file, at)) = self.get(FileId(s.file.0)) {
            *s = SourceSpan {
                file: SourceFileId(file.0),
                start: s.start + at,
                end: s.end + at,
            };
        }
    }

    pub fn diagnostic(&self, d: &mut Diagnostic) {
        for l in &mut d.labels {
            self.span(&mut l.span);
        }
    }
}

/// The `href`s of a file's include elements (`include-structs`, `-function`, `-template`,
/// `-properties`; not `cinclude`), in document order: `(href, span of the value)`.
#[salsa::tracked(returns(ref))]
pub fn includes(db: &dyn salsa::Database, file: SourceInput) -> Vec<(String, Span)> {
    let mut out = Vec::new();
    let parsed = source_tree(db, file);
    if let Some(root) = &parsed.ast.root {
        match root {
            Root::Defun(d) => defun_hrefs(d, parsed.with_hrefs.as_ref(), &mut out),
            Root::Template(t) => template_hrefs(t, &mut out),
            Root::Structs(items) => struct_hrefs(items, &mut out),
            Root::Props(p) => prop_hrefs(&p.items, &mut out),
        }
    }
    if !parsed.items.is_empty() && !out.is_empty() {
        let mut r = Resolver::default();
        r.add(parsed);
        for (_, s) in &mut out {
            r.span(s);
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
        defun_hrefs(d, None, out)
    }
}

/// The hrefs of a defun; of its net's places and transitions only those of `only` (their
/// indexes), when given.
fn defun_hrefs(
    d: &xml::Defun,
    only: Option<&(Vec<usize>, Vec<usize>)>,
    out: &mut Vec<(String, Span)>,
) {
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
        match only {
            None => {
                for p in &n.places {
                    prop_hrefs(&p.properties, out);
                }
                for t in &n.transitions {
                    transition_hrefs(t, out);
                }
            }
            Some((places, transitions)) => {
                for &i in places {
                    prop_hrefs(&n.places[i].properties, out);
                }
                for &i in transitions {
                    transition_hrefs(&n.transitions[i], out);
                }
            }
        }
    }
}

fn transition_hrefs(t: &TransitionDecl, out: &mut Vec<(String, Span)>) {
    match &t.body {
        Some(TransitionBody::Defun(d)) => defun_hrefs(d, None, out),
        Some(TransitionBody::Include(h)) => push(h, out),
        Some(TransitionBody::Use(_)) | None => {}
    }
    prop_hrefs(&t.properties, out);
    for c in &t.connections {
        prop_hrefs(&c.properties, out);
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const NET: &str = r#"<defun name="n">
  <net>
    <place name="a" type="long"><token><value>1L</value></token></place>
    <place name="b" type="long"/>
    <transition name="t">
      <defun>
        <in name="x" type="long"/><out name="y" type="long"/>
        <expression>${y} := ${x} + 1</expression>
      </defun>
      <connect-in port="x" place="a"/>
      <connect-out port="y" place="b"/>
    </transition>
    <transition name="u">
      <defun>
        <in name="x" type="long"/><out name="y" type="long"/>
        <expression>${y} := ${x} + 1L</expression>
      </defun>
      <connect-in port="x" place="b"/>
      <connect-out port="y" place="a"/>
      <connect-out port="y" place="nope"/>
    </transition>
  </net>
</defun>"#;

    fn load(db: &mut Database, text: &str) -> (Workspace, SourceInput) {
        let ws = crate::load(
            db,
            Path::new("/nonexistent/n.xpnet"),
            text,
            &Default::default(),
        );
        let file = ws.files(db)[0];
        (ws, file)
    }

    /// A workspace of one file, whose text [`set`] changes through the driver.
    fn driven(db: &mut Database, files: &mut crate::Files, text: &str) -> (Workspace, SourceInput) {
        let ws = set(db, files, None, text);
        (ws, ws.files(db)[0])
    }

    fn set(
        db: &mut Database,
        files: &mut crate::Files,
        ws: Option<Workspace>,
        text: &str,
    ) -> Workspace {
        let path = Path::new("/nonexistent/n.xpnet");
        crate::reload(db, files, ws, path, &Default::default(), &mut |_| {
            Some(Arc::from(text))
        })
    }

    /// The elaboration reads the transitions parsed alone; every span it returns is in the
    /// file, at the offsets of a whole parse.
    #[test]
    fn items_are_parsed_alone_and_their_spans_mapped_back() {
        let mut db = Database::default();
        let (ws, file) = load(&mut db, NET);
        let tree = tree(&db, file).as_ref().expect("cut into items");
        // two places, then two transitions
        assert_eq!(tree.items.len(), 4);
        assert_eq!(tree.items[0].at as usize, NET.find("<place").unwrap());
        assert_eq!(tree.items[2].at as usize, NET.find("<transition").unwrap());
        assert!(tree.items.iter().all(|i| i.id.0 & ITEM_FILE != 0));
        let e = crate::elab::elaborate(&db, ws);
        let at = |d: &Diagnostic| {
            let s = d.primary_span().expect("a span");
            assert_eq!(s.file, FileId(0));
            &NET[s.start as usize..s.end as usize]
        };
        let codes: Vec<(&str, &str)> = e.diagnostics.iter().map(|(d, _)| (d.code, at(d))).collect();
        assert!(codes.contains(&("unknown_place", "nope")), "{codes:?}");
        assert!(codes.contains(&("type_error", "${x} + 1")), "{codes:?}");
        for r in &e.facts.references {
            assert_eq!(
                &NET[r.span.start as usize..r.span.end as usize],
                r.name,
                "{r:?}"
            );
        }
        // everything as from the whole parse
        let whole = crate::elab::run(&db, ws, parse);
        assert_eq!(*e, whole);
        // the diagnostics and the facts alone are the same
        assert_eq!(*crate::elab::diagnostics(&db, ws), e.diagnostics);
        assert_eq!(*crate::elab::facts(&db, ws), e.facts);
    }

    /// An edit outside a transition leaves its tree shared: it is not parsed again.
    #[test]
    fn an_edit_elsewhere_reuses_the_items_trees() {
        let mut db = Database::default();
        let mut files = crate::Files::default();
        let (ws, file) = driven(&mut db, &mut files, NET);
        let before: Vec<Arc<TransitionDecl>> = match &tree(&db, file).as_ref().unwrap().ast.root {
            Some(Root::Defun(d)) => match &d.body {
                Some(DefunBody::Net(n)) => n.transitions.clone(),
                _ => panic!("a net"),
            },
            _ => panic!("a defun"),
        };
        let edited = NET.replace(
            "<place name=\"b\" type=\"long\"/>",
            "<place name=\"bb\" type=\"long\"/>\n    <place name=\"b\" type=\"long\"/>",
        );
        set(&mut db, &mut files, Some(ws), &edited);
        let after = tree(&db, file).as_ref().unwrap();
        let Some(Root::Defun(d)) = &after.ast.root else {
            panic!("a defun")
        };
        let Some(DefunBody::Net(n)) = &d.body else {
            panic!("a net")
        };
        assert_eq!(n.transitions.len(), 2);
        for (a, b) in before.iter().zip(&n.transitions) {
            assert!(Arc::ptr_eq(a, b), "reused");
        }
        // three places, then the transitions
        assert_eq!(
            after.items[3].at as usize,
            edited.find("<transition").unwrap()
        );
    }

    /// A net of 150 places (about ten groups) with names repeated and `shared_P` places
    /// whose cleanup places are in other groups, edited through the driver (a name made
    /// another's or a new one, a type made `shared_P`, `shared_sink` toggled, places removed
    /// and copied elsewhere): the diagnostics and facts of the places elaborated by groups
    /// (`elab::place_group`) equal those of the whole elaboration (one pass over the places).
    #[test]
    fn places_by_groups_check_repeated_names_and_cleanup_places_across_groups() {
        fn text(places: &[String]) -> String {
            let mut s = String::from("<defun name=\"n\">\n  <net>\n");
            for p in places {
                s.push_str(&format!("    {p}\n"));
            }
            s.push_str(concat!(
                "    <transition name=\"t\">\n      <defun>\n",
                "        <in name=\"x\" type=\"long\"/><out name=\"y\" type=\"long\"/>\n",
                "        <expression>${y} := ${x}</expression>\n      </defun>\n",
                "      <connect-in port=\"x\" place=\"p1\"/>\n",
                "      <connect-out port=\"y\" place=\"p140\"/>\n    </transition>\n",
                "  </net>\n</defun>\n"
            ));
            s
        }
        fn place(name: &str, ty: &str, sink: bool) -> String {
            let sink = if sink { " shared_sink=\"true\"" } else { "" };
            format!("<place name=\"{name}\" type=\"{ty}\"{sink}/>")
        }
        let mut places: Vec<String> = (0..150)
            .map(|i| match i % 10 {
                3 => place(
                    &format!("p{i}"),
                    &format!("shared_p{}", (i * 7) % 150),
                    false,
                ),
                5 => place(&format!("p{i}"), "long", true),
                _ => place(&format!("p{i}"), "long", false),
            })
            .collect();
        // a name repeated far from its first declaration
        places[120] = place("p2", "long", false);
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut below = |n: usize| {
            rng ^= rng >> 12;
            rng ^= rng << 25;
            rng ^= rng >> 27;
            (rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % n as u64) as usize
        };
        let mut db = Database::default();
        let mut files = crate::Files::default();
        let (ws, file) = driven(&mut db, &mut files, &text(&places));
        let chunks = place_chunks(&db, file).as_ref().expect("cut");
        assert!(chunks.len() >= 2);
        assert!(chunks.iter().map(|c| c.groups(&db).len()).sum::<usize>() >= 8);
        let mut seen = std::collections::BTreeSet::new();
        for step in 0..120 {
            let i = below(places.len());
            let name = format!("p{}", below(160));
            match below(6) {
                0 => places[i] = place(&name, "long", below(2) == 0),
                1 => places[i] = place(&format!("p{i}"), &format!("shared_{name}"), false),
                2 => places[i] = places[i].replace(" shared_sink=\"true\"", ""),
                3 => places[i] = places[i].replace("/>", " shared_sink=\"true\"/>"),
                4 if places.len() > 100 => {
                    places.remove(i);
                }
                _ => {
                    let copy = places[below(places.len())].clone();
                    places.insert(i, copy);
                }
            }
            set(&mut db, &mut files, Some(ws), &text(&places));
            let whole = crate::elab::elaborate(&db, ws);
            assert_eq!(
                *crate::elab::diagnostics(&db, ws),
                whole.diagnostics,
                "step {step}"
            );
            assert_eq!(*crate::elab::facts(&db, ws), whole.facts, "step {step}");
            seen.extend(whole.diagnostics.iter().map(|(d, _)| d.code));
        }
        for code in [
            "duplicate_place",
            "shared_cleanup_place_missing",
            "shared_cleanup_place_not_shared_sink",
        ] {
            assert!(seen.contains(code), "{code} never reported: {seen:?}");
        }
    }

    /// Salsa's own counts after `edits` distinct texts of one transition: the memos of
    /// `parse_group` and `elab::chunk_query`, the live `ItemInput`s and `elab::Chunk`s.
    fn live_after_edits(edits: usize) -> [usize; 4] {
        let mut db = Database::default();
        let mut files = crate::Files::default();
        let (ws, _) = driven(&mut db, &mut files, NET);
        for i in 0..edits {
            let text = NET.replace("${x} + 1L", &format!("${{x}} + {i}L"));
            set(&mut db, &mut files, Some(ws), &text);
            let diagnostics = crate::elab::diagnostics(&db, ws);
            assert!(diagnostics.iter().any(|(d, _)| d.code == "unknown_place"));
        }
        let usage = (&mut db as &mut dyn salsa::Database).memory_usage();
        let memos = |name: &str| usage.queries.get(name).map_or(0, |q| q.count());
        let structs = |name: &str| {
            usage
                .structs
                .iter()
                .find(|s| s.debug_name() == name)
                .map_or(0, |s| s.count())
        };
        [
            memos("parse_group"),
            memos("chunk_query"),
            structs("ItemInput"),
            structs("Chunk"),
        ]
    }

    /// A long editing session of one transition (20,000 distinct texts) leaves no more live
    /// memos or item inputs than a short one: the edited item keeps its input, its memos
    /// replaced (see [`ItemInput`]).
    #[test]
    fn many_edits_of_one_transition_keep_memory_bounded() {
        let short = live_after_edits(100);
        let long = live_after_edits(20_000);
        eprintln!("after 100 edits {short:?}, after 20,000 edits {long:?}");
        // NET has 4 items: a few per item, whatever the number of edits
        for (s, l) in short.iter().zip(&long) {
            assert!(*s > 0 && *l <= 32 && *l <= s + 8, "{short:?} {long:?}");
        }
    }
}
