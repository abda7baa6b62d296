//! Per-item parsing: the places and transitions of a root `defun`'s net, each parsed from
//! its own text with spans relative to it, so that a caller can reuse the tree of an
//! unchanged item after an edit elsewhere, and the rest of the file (the skeleton) holds no
//! item whose spans move (issue 22, item 1).
//!
//! [`item_ranges`] finds the items with a cheap scan (no tree is built);
//! [`parse_place`] and [`parse_transition`] parse one; [`blank`] gives the rest of the file, each item replaced
//! by spaces (offsets unchanged), for [`super::parse_file`]; [`Shift`] moves a tree or a
//! diagnostic to an item's place. Every function gives `None` where the text is not simple
//! enough to be cut (a DTD, a prefixed name, unbalanced tags): the caller parses the whole
//! file then.
//!
//! Sema's database parses each transition by [`parse_transition`] in a query of its own,
//! keyed by its text, with a file id of its own (spans relative to the item), on the
//! [`skeleton`] of the file: the file's tree shares the items' trees (`Arc`), and an edit
//! outside a transition leaves its tree equal and reused; sema maps the spans back to the
//! file. [`parse_by_items`] builds the tree with file offsets instead (copying every item to
//! shift it), for the tests that compare it with a whole parse.

use std::ops::Range;
use std::sync::Arc;

use roxmltree::{Document, ParsingOptions};

use super::ast::*;
use super::parser::Parser;
use crate::span::MappedText;
use crate::{Diagnostic, FileId, Span};

/// The byte ranges of the `transition` elements directly in the `net` of the root `defun`,
/// in document order; `None` when the text cannot be cut safely.
pub fn transition_ranges(text: &str) -> Option<Vec<Range<usize>>> {
    item_ranges(text).map(|r| r.transitions)
}

/// The items of a file: the byte ranges of the `place` and the `transition` elements
/// directly in the `net` of the root `defun`, each in document order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ItemRanges {
    pub places: Vec<Range<usize>>,
    pub transitions: Vec<Range<usize>>,
}

/// The kind of an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ItemKind {
    Place,
    Transition,
}

/// The items of `text` ([`ItemRanges`]); `None` when the text cannot be cut safely.
pub fn item_ranges(text: &str) -> Option<ItemRanges> {
    let items = items_in_order(text)?;
    let mut out = ItemRanges::default();
    for (r, kind) in items {
        match kind {
            ItemKind::Place => out.places.push(r),
            ItemKind::Transition => out.transitions.push(r),
        }
    }
    Some(out)
}

/// The items of `text` ([`item_ranges`]) in document order, with their kinds.
pub fn items_in_order(text: &str) -> Option<Vec<(Range<usize>, ItemKind)>> {
    let mut scan = Scan::default();
    scan.run(text, 0, text.len())?;
    (scan.stack.is_empty() && scan.roots == 1 && scan.open.is_none()).then_some(scan.out)
}

/// The items of the part `range` of `text` that lies between two items of the root net
/// (from the end of one to the start of a later one, or an edit's region between them): a
/// scan started inside the net that must end there again, outside any item, comment or tag
/// (so that the text after it scans as before); `None` otherwise (the caller scans the
/// whole text then).
pub fn items_between(text: &str, range: Range<usize>) -> Option<Vec<(Range<usize>, ItemKind)>> {
    let mut scan = Scan {
        stack: vec!["defun", "net"],
        ..Scan::default()
    };
    scan.run(text, range.start, range.end)?;
    (scan.stack.as_slice() == ["defun", "net"] && scan.roots == 0 && scan.open.is_none())
        .then_some(scan.out)
}

/// The state of an item scan (see [`items_in_order`]).
#[derive(Default)]
struct Scan<'t> {
    stack: Vec<&'t str>,
    open: Option<usize>,
    roots: usize,
    out: Vec<(Range<usize>, ItemKind)>,
}

impl<'t> Scan<'t> {
    /// Scans `text[from..to]`: no tag, comment, CDATA section or processing instruction may
    /// cross `to`.
    fn run(&mut self, text: &'t str, from: usize, to: usize) -> Option<()> {
        let b = &text.as_bytes()[..to];
        let mut i = from;
        let find = |from: usize, pat: &str| {
            text[from..to]
                .find(pat)
                .map(|k| from + k)
                .filter(|k| k + pat.len() <= to)
        };
        // a char pattern: searched with memchr
        while let Some(k) = text[i..to].find('<').map(|k| i + k) {
            i = k;
            let rest = &text[i..to];
            if rest.starts_with("<!--") {
                i = find(i + 4, "-->")? + 3;
                continue;
            }
            if rest.starts_with("<![CDATA[") {
                i = find(i + 9, "]]>")? + 3;
                continue;
            }
            if rest.starts_with("<?") {
                i = find(i + 2, "?>")? + 2;
                continue;
            }
            if rest.starts_with("<!") {
                return None;
            }
            let closing = rest.starts_with("</");
            let name_start = i + if closing { 2 } else { 1 };
            let mut j = name_start;
            while j < b.len() && !matches!(b[j], b' ' | b'\t' | b'\r' | b'\n' | b'/' | b'>') {
                j += 1;
            }
            let name = &text[name_start..j];
            if name.is_empty() || name.contains(':') || name.contains('<') {
                return None;
            }
            // to the end of the tag, over quoted attribute values
            let mut quote = None;
            while j < b.len() {
                match (quote, b[j]) {
                    (None, b'"' | b'\'') => quote = Some(b[j]),
                    (Some(q), c) if c == q => quote = None,
                    (None, b'>') => break,
                    (None, b'<') => return None,
                    _ => {}
                }
                j += 1;
            }
            if j >= b.len() {
                return None;
            }
            let end = j + 1;
            let self_closing = !closing && b[j - 1] == b'/';
            let in_net = self.stack.as_slice() == ["defun", "net"];
            let kind = match name {
                "place" => ItemKind::Place,
                _ => ItemKind::Transition,
            };
            let is_item = (name == "transition" || name == "place") && in_net;
            if closing {
                if self.stack.pop() != Some(name) {
                    return None;
                }
                if self.stack.as_slice() == ["defun", "net"]
                    && (name == "transition" || name == "place")
                {
                    self.out.push((self.open.take()?..end, kind));
                }
            } else {
                if self.stack.is_empty() {
                    self.roots += 1;
                }
                if is_item {
                    if self_closing {
                        self.out.push((i..end, kind));
                    } else {
                        self.open = Some(i);
                    }
                }
                if !self_closing {
                    self.stack.push(name);
                }
            }
            i = end;
        }
        Some(())
    }
}

/// Parses `text` item by item: the file with its transitions blanked, then each transition
/// from `item` (given the transition's text; the parse of [`parse_transition`], which the
/// caller may have kept from an earlier revision), shifted to its place. The same tree as
/// [`super::parse_file`] and the same diagnostics (skeleton's first, then each item's);
/// `None` when the text cannot be cut (the caller parses the whole file then).
pub fn parse_by_items(
    file: FileId,
    text: &str,
    mut item: impl FnMut(&str) -> Option<(Option<TransitionDecl>, Vec<Diagnostic>)>,
) -> Option<(File, Vec<Diagnostic>)> {
    let (mut f, mut diags, ranges) = skeleton(file, text)?;
    let net = root_net(&mut f)?;
    for r in ranges.places {
        let (p, ds) = parse_place(file, &text[r.clone()])?;
        let by = u32::try_from(r.start).ok()?;
        if let Some(mut p) = p {
            p.shift(by);
            net.places.push(Arc::new(p));
        }
        diags.extend(ds.into_iter().map(|mut d| {
            d.shift(by);
            d
        }));
    }
    for r in ranges.transitions {
        let (t, ds) = item(&text[r.clone()])?;
        let by = u32::try_from(r.start).ok()?;
        if let Some(mut t) = t {
            t.shift(by);
            net.transitions.push(Arc::new(t));
        }
        diags.extend(ds.into_iter().map(|mut d| {
            d.shift(by);
            d
        }));
    }
    Some((f, diags))
}

/// The skeleton of `text`: the parse of the text with its items blanked (a root `defun`
/// whose net has no place and no transition yet), its diagnostics, and the items' ranges
/// (of [`item_ranges`], at least one transition). `None` when the text cannot be cut that
/// way (no transition, an XML error outside the items): the caller parses the whole file
/// then.
pub fn skeleton(file: FileId, text: &str) -> Option<(File, Vec<Diagnostic>, ItemRanges)> {
    let ranges = item_ranges(text)?;
    let (f, diags) = skeleton_with(file, text, &ranges)?;
    Some((f, diags, ranges))
}

/// [`skeleton`] with the items' ranges known (those of [`item_ranges`], kept up to date by
/// the caller through edits): the tree and its diagnostics.
pub fn skeleton_with(
    file: FileId,
    text: &str,
    ranges: &ItemRanges,
) -> Option<(File, Vec<Diagnostic>)> {
    if ranges.transitions.is_empty() {
        return None;
    }
    let mut all: Vec<Range<usize>> = ranges
        .places
        .iter()
        .chain(&ranges.transitions)
        .cloned()
        .collect();
    all.sort_by_key(|r| r.start);
    let (mut f, diags) = match compact(file, text, &all) {
        Some(parsed) => parsed,
        None => super::parse_file(file, &blank(text, &all)),
    };
    if diags.iter().any(|d| d.code == "xml_syntax") {
        return None;
    }
    let net = root_net(&mut f)?;
    if !net.transitions.is_empty() || !net.places.is_empty() {
        return None;
    }
    Some((f, diags))
}

/// The parse of `text` without its items (`ranges`, sorted), when only blanks lie between
/// them: the text before the first and after the last, one space between, parsed and its
/// offsets mapped back (the same tree and diagnostics as the parse of the text with its
/// items [`blank`]ed, without reading the items' bytes again); `None` otherwise.
pub(super) fn compact(
    file: FileId,
    text: &str,
    ranges: &[Range<usize>],
) -> Option<(File, Vec<Diagnostic>)> {
    let (first, last) = (ranges.first()?.start, ranges.last()?.end);
    let blank_between = ranges.windows(2).all(|w| {
        text.as_bytes()[w[0].end..w[1].start]
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'\n'))
    });
    if !blank_between {
        return None;
    }
    let compact = format!("{} {}", &text[..first], &text[last..]);
    let (mut f, mut diags) = super::parse_file(file, &compact);
    // offsets after the space move to the text after the last item
    let cut = u32::try_from(first).ok()? + 1;
    let by = u32::try_from(last - first - 1).ok()?;
    let map = |p: u32| if p >= cut { p + by } else { p };
    match &mut f.root {
        Some(Root::Defun(d)) => d.map_pos(&map),
        _ => return None,
    }
    diags.map_pos(&map);
    Some((f, diags))
}

/// The net of a file's root `defun`.
pub fn root_net(f: &mut File) -> Option<&mut NetDecl> {
    let Some(Root::Defun(d)) = &mut f.root else {
        return None;
    };
    let Some(DefunBody::Net(net)) = &mut d.body else {
        return None;
    };
    Some(net)
}

const SPACES: &str = "                                                                ";

/// `text` with each of `ranges` replaced by spaces (offsets unchanged).
pub fn blank(text: &str, ranges: &[Range<usize>]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in ranges {
        out.push_str(&text[at..r.start]);
        let mut n = r.end - r.start;
        while n > 0 {
            let k = n.min(SPACES.len());
            out.push_str(&SPACES[..k]);
            n -= k;
        }
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Parses the text of one `transition` element of a root `defun`'s net alone (spans
/// relative to the text); `None` when it is not well-formed on its own.
pub fn parse_transition(
    file: FileId,
    text: &str,
) -> Option<(Option<TransitionDecl>, Vec<Diagnostic>)> {
    let opts = ParsingOptions {
        allow_dtd: false,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(text, opts).ok()?;
    let n = doc.root_element();
    if n.tag_name().name() != "transition" || n.tag_name().namespace().is_some() {
        return None;
    }
    let mut p = Parser::new(file, text, None);
    // as deep as in the file: inside `defun` and `net`
    p.set_depth(2);
    let t = p.transition(n);
    Some((t, p.into_diags()))
}

/// Parses the text of one `place` element of a root `defun`'s net alone (spans relative to
/// the text); `None` when it is not well-formed on its own.
pub fn parse_place(file: FileId, text: &str) -> Option<(Option<PlaceDecl>, Vec<Diagnostic>)> {
    let opts = ParsingOptions {
        allow_dtd: false,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(text, opts).ok()?;
    let n = doc.root_element();
    if n.tag_name().name() != "place" || n.tag_name().namespace().is_some() {
        return None;
    }
    let mut p = Parser::new(file, text, None);
    // as deep as in the file: inside `defun` and `net`
    p.set_depth(2);
    let t = p.place(n);
    Some((t, p.into_diags()))
}

/// Moves every span of a tree or diagnostic: by a number of bytes ([`Shift::shift`]), or
/// each offset by a function ([`Shift::map_pos`], for a tree parsed from a text with a cut).
pub trait Shift {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32);

    fn shift(&mut self, by: u32) {
        self.map_pos(&|p| p + by);
    }
}

impl Shift for Span {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        self.start = f(self.start);
        self.end = f(self.end);
    }
}

impl Shift for MappedText {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        for (_, o) in &mut self.map {
            *o = f(*o);
        }
    }
}

impl<T: Shift> Shift for Option<T> {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        if let Some(x) = self {
            x.map_pos(f);
        }
    }
}

impl<T: Shift> Shift for Vec<T> {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        for x in self {
            x.map_pos(f);
        }
    }
}

impl<T: Shift + Clone> Shift for Arc<T> {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        Arc::make_mut(self).map_pos(f);
    }
}

impl<T: Shift> Shift for Box<T> {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        (**self).map_pos(f);
    }
}

impl<A: Shift, B: Shift> Shift for (A, B) {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        self.0.map_pos(f);
        self.1.map_pos(f);
    }
}

impl Shift for Diagnostic {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        for l in &mut self.labels {
            l.span.map_pos(f);
        }
    }
}

/// `impl Shift` for a struct: the listed fields are mapped.
macro_rules! shift_fields {
    ($($t:ty { $($f:ident),* })*) => {
        $(impl Shift for $t {
            fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
                $(self.$f.map_pos(f);)*
            }
        })*
    };
}

shift_fields! {
    Name { span }
    Href { path, span }
    Defun { name, ports, memory_buffers, memory_transfers, structs, properties, requires, conditions, body, span, tag }
    PortDecl { name, ty, place, properties, span }
    StructDef { name, fields, span }
    NetDecl { places, transitions, templates, specializes, structs, properties, span }
    Template { name, params, defun, span, tag }
    Specialize { name, use_, type_maps, type_gets, span }
    PlaceDecl { name, ty, tokens, properties, span }
    TokenDecl { values, span }
    TransitionDecl { name, priority, body, connections, place_maps, conditions, requires, properties, span, tag }
    ConnectDecl { port, place, properties, span }
    PlaceMapDecl { virtual_, real, span }
    ModuleDecl { name, function, target, eureka_group, cincludes, ld, cxx, code, span, tag }
    ModulesDecl { preferences, modules, span }
    Properties { name, items, span }
    RequireDecl { key, span }
    MemoryBufferDecl { name, size, alignment, span }
    MemoryTransferDecl { global, local, span }
}

impl Shift for DefunBody {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        match self {
            DefunBody::Expression(t) => t.map_pos(f),
            DefunBody::Module(m) => m.map_pos(f),
            DefunBody::Modules(m) => m.map_pos(f),
            DefunBody::Net(n) => n.map_pos(f),
        }
    }
}

impl Shift for StructItem {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        match self {
            StructItem::Def(d) => d.map_pos(f),
            StructItem::Include(h) => h.map_pos(f),
        }
    }
}

impl Shift for FieldDecl {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        match self {
            FieldDecl::Field { name, ty, span } => {
                name.map_pos(f);
                ty.map_pos(f);
                span.map_pos(f);
            }
            FieldDecl::Struct(d) => d.map_pos(f),
        }
    }
}

impl Shift for TemplateItem {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        match self {
            TemplateItem::Inline(t) => t.map_pos(f),
            TemplateItem::Include(h) => h.map_pos(f),
        }
    }
}

impl Shift for TransitionBody {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        match self {
            TransitionBody::Defun(d) => d.map_pos(f),
            TransitionBody::Include(h) => h.map_pos(f),
            TransitionBody::Use(n) => n.map_pos(f),
        }
    }
}

impl Shift for PropertiesItem {
    fn map_pos(&mut self, f: &dyn Fn(u32) -> u32) {
        match self {
            PropertiesItem::Property { key, value, span } => {
                key.map_pos(f);
                value.map_pos(f);
                span.map_pos(f);
            }
            PropertiesItem::Group(p) => p.map_pos(f),
            PropertiesItem::Include(h) => h.map_pos(f),
        }
    }
}
