//! Reading a topology file: XML, `${var}` substitution, the schema's rules, DDS's semantic
//! rules, and the [`Topology`] built from it.

use std::collections::HashMap;
use std::ops::Range;

use roxmltree::{Document, Node, NodeType, ParsingOptions};

use crate::model::*;
use crate::subst::{self, SourceMap};
use crate::{Diagnostic, MAX_TASKS};

/// How [`parse`] treats the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// `NAME=VALUE` pairs that override (or add to) the file's `<var>` elements.
    pub vars: Vec<(String, String)>,
    /// `true` (the default): substitute `${var}` before checking, as DDS does. `false`: check the
    /// raw text against the schema (then an `n="${count}"` is not a number).
    pub substitute: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            vars: Vec::new(),
            substitute: true,
        }
    }
}

const XSI: &str = "http://www.w3.org/2001/XMLSchema-instance";

fn xml_options<'a>() -> ParsingOptions<'a> {
    ParsingOptions {
        allow_dtd: false,
        nodes_limit: 10_000_000,
        ..ParsingOptions::default()
    }
}

/// Parses and checks a DDS topology. Returns the topology only if there is no error; the
/// diagnostics (errors and warnings, sorted by position) have spans into `text`.
pub fn parse(text: &str, options: &ParseOptions) -> (Option<Topology>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let raw = match Document::parse_with_options(text, xml_options()) {
        Ok(doc) => doc,
        Err(e) => {
            diags.push(xml_error(text, &e, &SourceMap::default(), false));
            return (None, diags);
        }
    };
    let declared = declared_vars(&raw);
    let map0 = SourceMap::default();
    if !options.substitute {
        let uses = count_uses(text, &declared);
        let mut checker = Checker::new(text, &map0, uses);
        let topology = checker.topology(&raw);
        return finish(topology, checker.diags);
    }

    // Substitution: the file's variables (the first declaration of a name counts), then the
    // options' ones, which win.
    let mut all: Vec<(String, String)> = Vec::new();
    for (name, value, _) in &declared {
        if !all.iter().any(|(n, _)| n == name) {
            all.push((name.clone(), value.clone()));
        }
    }
    for (name, value) in &options.vars {
        match all.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value.clone(),
            None => all.push((name.clone(), value.clone())),
        }
    }
    let (resolved, bad) = subst::resolve(&all);
    for name in &bad {
        let span = declared
            .iter()
            .find(|(n, _, _)| n == name)
            .map_or(0..0, |(_, _, s)| s.clone());
        diags.push(
            Diagnostic::error_at(
                "dds-var-cycle",
                span,
                format!("variable `{name}` refers to itself (directly or through other variables) or its value grows beyond 1 MiB"),
            )
            .with_note("a variable's value may use other variables, but not in a cycle"),
        );
    }
    if !bad.is_empty() {
        return (None, sorted(diags));
    }
    let sub = subst::substitute(text, &resolved);
    if sub.too_large {
        diags.push(Diagnostic::error_at(
            "dds-too-large",
            0..0,
            format!(
                "substituting the variables makes the file larger than {} MiB",
                subst::MAX_TEXT >> 20
            ),
        ));
        return (None, diags);
    }
    if sub.uses.is_empty() {
        let uses = count_uses(text, &declared);
        let mut checker = Checker::new(text, &map0, uses);
        checker.substituted = true;
        let topology = checker.topology(&raw);
        return finish(topology, checker.diags);
    }
    let doc = match Document::parse_with_options(&sub.text, xml_options()) {
        Ok(doc) => doc,
        Err(e) => {
            diags.push(xml_error(&sub.text, &e, &sub.map, true));
            return (None, diags);
        }
    };
    let mut checker = Checker::new(text, &sub.map, sub.uses);
    checker.substituted = true;
    let topology = checker.topology(&doc);
    finish(topology, checker.diags)
}

fn finish(
    topology: Option<Topology>,
    diags: Vec<Diagnostic>,
) -> (Option<Topology>, Vec<Diagnostic>) {
    let diags = sorted(diags);
    if pnet_diagnostics::has_errors(&diags) {
        (None, diags)
    } else {
        (topology, diags)
    }
}

fn sorted(mut diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diags.sort_by_key(|d| d.range().start);
    diags
}

/// The `<var>` children of the root: name, value, span of the element.
fn declared_vars(doc: &Document) -> Vec<(String, String, Range<usize>)> {
    let root = doc.root_element();
    root.children()
        .filter(|n| n.is_element() && n.tag_name().namespace().is_none())
        .filter(|n| n.tag_name().name() == "var")
        .filter_map(|n| {
            Some((
                n.attribute("name")?.to_string(),
                n.attribute("value")?.to_string(),
                n.range(),
            ))
        })
        .collect()
}

/// How often `${name}` occurs in the text, for each declared name.
fn count_uses(text: &str, declared: &[(String, String, Range<usize>)]) -> HashMap<String, usize> {
    let mut uses: HashMap<String, usize> =
        declared.iter().map(|(n, _, _)| (n.clone(), 0)).collect();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        rest = &rest[at + 2..];
        if let Some(close) = rest.find('}')
            && let Some(n) = uses.get_mut(&rest[..close])
        {
            *n += 1;
        }
    }
    uses
}

/// Byte offset of a 1-based row and column (in characters).
fn offset_of(text: &str, row: u32, col: u32) -> usize {
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i + 1 == row as usize {
            let col = (col as usize).saturating_sub(1);
            return offset
                + line
                    .char_indices()
                    .nth(col)
                    .map_or(line.len(), |(at, _)| at);
        }
        offset += line.len();
    }
    text.len()
}

fn char_span(text: &str, at: usize) -> Range<usize> {
    let at = at.min(text.len());
    let end = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
    at..end
}

fn xml_error(text: &str, e: &roxmltree::Error, map: &SourceMap, substituted: bool) -> Diagnostic {
    let pos = e.pos();
    let at = offset_of(text, pos.row, pos.col);
    let mut d = Diagnostic::error_at(
        "dds-xml",
        map.map(char_span(text, at)),
        format!("not well-formed XML: {e}"),
    );
    if substituted {
        d = d.with_note("the error is in the text after ${var} substitution");
    }
    d
}

/// A reference to a declaration by name, not yet resolved.
#[derive(Clone, Debug)]
struct Ref {
    name: String,
    span: Range<usize>,
}

/// A task declaration before its references are resolved.
struct RawTask {
    decl: TaskDecl,
    requirements: Vec<Ref>,
    properties: Vec<(Ref, Access)>,
    triggers: Vec<Ref>,
    assets: Vec<Ref>,
}

struct RawCollection {
    decl: CollectionDecl,
    name_span: Range<usize>,
    requirements: Vec<Ref>,
    tasks: Vec<(Ref, u32)>,
}

struct RawGroup {
    name: String,
    name_span: Range<usize>,
    n: u32,
    tasks: Vec<Ref>,
    collections: Vec<Ref>,
    span: Range<usize>,
}

struct RawMain {
    name: String,
    tasks: Vec<Ref>,
    collections: Vec<Ref>,
    groups: Vec<RawGroup>,
    span: Range<usize>,
}

/// Declarations of one kind by name: all indices, the span of each name, whether referenced.
#[derive(Default)]
struct Names {
    by_name: HashMap<String, Vec<usize>>,
    spans: Vec<Range<usize>>,
    referenced: Vec<bool>,
}

impl Names {
    fn add(&mut self, name: &str, span: Range<usize>) {
        let i = self.spans.len();
        self.by_name.entry(name.to_string()).or_default().push(i);
        self.spans.push(span);
        self.referenced.push(false);
    }
}

/// One particle of a sequence content model: element name, min, max.
type Particle = (&'static str, u32, u32);
const MANY: u32 = u32::MAX;

struct Checker<'m> {
    /// The original text (for line numbers in notes).
    orig: &'m str,
    map: &'m SourceMap,
    diags: Vec<Diagnostic>,
    /// Uses of each variable name (for duplicated `<var>`s).
    var_uses: HashMap<String, usize>,
    /// Offsets where lines start in `orig`, computed when first needed.
    line_starts: Option<Vec<usize>>,
    /// True if `${var}` substitution ran.
    substituted: bool,
}

impl<'m> Checker<'m> {
    fn new(orig: &'m str, map: &'m SourceMap, var_uses: HashMap<String, usize>) -> Self {
        Checker {
            orig,
            map,
            diags: Vec::new(),
            var_uses,
            line_starts: None,
            substituted: false,
        }
    }

    fn span(&self, r: Range<usize>) -> Range<usize> {
        self.map.map(r)
    }

    fn error(&mut self, code: &'static str, r: Range<usize>, msg: String, notes: &[String]) {
        let mut d = Diagnostic::error_at(code, self.span(r), msg);
        for n in notes {
            d = d.with_note(n.clone());
        }
        self.diags.push(d);
    }

    fn warning(&mut self, code: &'static str, r: Range<usize>, msg: String, notes: &[String]) {
        let mut d = Diagnostic::warning_at(code, self.span(r), msg);
        for n in notes {
            d = d.with_note(n.clone());
        }
        self.diags.push(d);
    }

    /// The range of the start tag of an element (`<name ...>`).
    fn start_tag(node: Node) -> Range<usize> {
        let text = node.document().input_text();
        let r = node.range();
        let bytes = text.as_bytes();
        let mut quote = 0u8;
        let mut i = r.start;
        while i < r.end.min(bytes.len()) {
            let b = bytes[i];
            if quote != 0 {
                if b == quote {
                    quote = 0;
                }
            } else if b == b'"' || b == b'\'' {
                quote = b;
            } else if b == b'>' {
                return r.start..i + 1;
            }
            i += 1;
        }
        r
    }

    fn elements<'a, 'i>(node: Node<'a, 'i>, name: &'static str) -> Vec<Node<'a, 'i>> {
        node.children()
            .filter(|c| {
                c.is_element() && c.tag_name().namespace().is_none() && c.tag_name().name() == name
            })
            .collect()
    }

    /// Checks the children of an element with element-only content against a sequence.
    fn sequence(&mut self, node: Node, parent: &str, model: &[Particle], in_group: bool) {
        let mut counts = vec![0u32; model.len()];
        let mut pos = 0usize;
        let expected = || {
            model
                .iter()
                .map(|(n, _, _)| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        for child in node.children() {
            match child.node_type() {
                NodeType::Text => {
                    if child.text().is_some_and(|t| !t.trim().is_empty()) {
                        self.error(
                            "dds-unexpected-text",
                            trimmed_range(child),
                            format!("<{parent}> holds elements only, not text"),
                            &[],
                        );
                    }
                    continue;
                }
                NodeType::Element => {}
                _ => continue,
            }
            let tag = child.tag_name();
            let name = tag.name();
            let found = if tag.namespace().is_none() {
                model.iter().position(|(n, _, _)| *n == name)
            } else {
                None
            };
            let tag_span = Self::start_tag(child);
            match found {
                None if in_group && name == "group" && tag.namespace().is_none() => {
                    self.error(
                        "dds-nested-group",
                        tag_span,
                        "groups do not nest: a <group> may hold only <task> and <collection>"
                            .to_string(),
                        &["move the inner group into <main> and multiply its n".to_string()],
                    );
                }
                None => {
                    let shown = match tag.namespace() {
                        Some(ns) => format!("{{{ns}}}{name}"),
                        None => name.to_string(),
                    };
                    self.error(
                        "dds-unknown-element",
                        tag_span,
                        format!("unknown element <{shown}> in <{parent}>"),
                        &[format!(
                            "<{parent}> may hold, in this order: {}",
                            expected()
                        )],
                    );
                }
                Some(i) => {
                    if i < pos {
                        self.error(
                            "dds-schema-order",
                            tag_span.clone(),
                            format!("<{name}> must come before <{}> in <{parent}>", model[pos].0),
                            &[format!("the order in <{parent}> is: {}", expected())],
                        );
                    } else {
                        pos = i;
                    }
                    counts[i] += 1;
                    let max = model[i].2;
                    if counts[i] == max.saturating_add(1) {
                        let times = if max == 1 {
                            "once".to_string()
                        } else {
                            format!("{max} times")
                        };
                        self.error(
                            "dds-too-many",
                            tag_span,
                            format!("<{name}> may appear only {times} in <{parent}>"),
                            &[],
                        );
                    }
                }
            }
        }
        for (i, (name, min, _)) in model.iter().enumerate() {
            if counts[i] < *min {
                self.error(
                    "dds-missing-element",
                    Self::start_tag(node),
                    format!("<{parent}> needs a <{name}>"),
                    &[format!(
                        "<{parent}> may hold, in this order: {}",
                        expected()
                    )],
                );
            }
        }
    }

    /// Checks that an element has no child elements (and no text unless `text` is allowed).
    fn no_children(&mut self, node: Node, parent: &str, text: bool) {
        for child in node.children() {
            if child.is_element() {
                self.error(
                    "dds-unknown-element",
                    Self::start_tag(child),
                    format!(
                        "unknown element <{}> in <{parent}>",
                        child.tag_name().name()
                    ),
                    &[format!("<{parent}> has no child elements")],
                );
            } else if !text && child.is_text() && child.text().is_some_and(|t| !t.trim().is_empty())
            {
                self.error(
                    "dds-unexpected-text",
                    trimmed_range(child),
                    format!("<{parent}> has no content"),
                    &[],
                );
            }
        }
    }

    /// Checks the attributes: unknown ones and missing required ones. Returns false if a
    /// required one is missing.
    fn attributes(
        &mut self,
        node: Node,
        element: &str,
        allowed: &[&str],
        required: &[&str],
    ) -> bool {
        for a in node.attributes() {
            if a.namespace() == Some(XSI) {
                continue;
            }
            if a.namespace().is_some() || !allowed.contains(&a.name()) {
                let note = if allowed.is_empty() {
                    format!("<{element}> has no attributes")
                } else {
                    format!("the attributes of <{element}> are: {}", allowed.join(", "))
                };
                self.error(
                    "dds-unknown-attribute",
                    a.range(),
                    format!("unknown attribute `{}` on <{element}>", a.name()),
                    &[note],
                );
            }
        }
        let mut ok = true;
        for r in required {
            if node.attribute(*r).is_none() {
                ok = false;
                self.error(
                    "dds-missing-attribute",
                    Self::start_tag(node),
                    format!("<{element}> needs the attribute `{r}`"),
                    &[],
                );
            }
        }
        ok
    }

    /// An attribute's value and the range of the value.
    fn attr<'a>(node: Node<'a, '_>, name: &str) -> Option<(&'a str, Range<usize>)> {
        let a = node.attribute_node(name)?;
        let r = a.range_value();
        let end = r.end.max(r.start);
        Some((a.value(), r.start..end))
    }

    /// Checks a name (the schema's `stringNameType`).
    fn check_name(&mut self, value: &str, span: Range<usize>, what: &str) {
        let len = value.chars().count();
        let bad = value
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '#' | '@' | '~' | '_' | '-')));
        if len == 0 {
            self.error(
                "dds-bad-name",
                span,
                format!("the {what} is empty"),
                &["names are 1 to 128 characters from a-z A-Z 0-9 # @ ~ _ -".to_string()],
            );
        } else if len > 128 {
            self.error(
                "dds-bad-name",
                span,
                format!("the {what} has {len} characters, more than 128"),
                &[],
            );
        } else if let Some(c) = bad {
            self.error(
                "dds-bad-name",
                span,
                format!("the {what} `{value}` contains {c:?}"),
                &["names are 1 to 128 characters from a-z A-Z 0-9 # @ ~ _ -".to_string()],
            );
        }
    }

    /// The `name` attribute, checked. Missing: reported by `attributes`, `None` here.
    fn name_attr(&mut self, node: Node, element: &str) -> Option<(String, Range<usize>)> {
        let (value, span) = Self::attr(node, "name")?;
        self.check_name(value, span.clone(), &format!("name of <{element}>"));
        Some((value.to_string(), span))
    }

    /// An enumerated attribute.
    fn enumerated<T: Copy>(
        &mut self,
        node: Node,
        element: &str,
        attr: &str,
        values: &[(&str, T)],
    ) -> Option<T> {
        let (value, span) = Self::attr(node, attr)?;
        if let Some((_, v)) = values.iter().find(|(s, _)| *s == value) {
            return Some(*v);
        }
        let allowed: Vec<&str> = values.iter().map(|(s, _)| *s).collect();
        self.error(
            "dds-bad-value",
            span,
            format!("`{value}` is not a valid `{attr}` of <{element}>"),
            &[format!("expected one of: {}", allowed.join(", "))],
        );
        None
    }

    /// A non-empty string attribute (the schema's `stringType`).
    fn non_empty(&mut self, node: Node, element: &str, attr: &str) -> Option<String> {
        let (value, span) = Self::attr(node, attr)?;
        if value.is_empty() {
            self.error(
                "dds-empty-value",
                span,
                format!("the `{attr}` of <{element}> is empty"),
                &[],
            );
        }
        Some(value.to_string())
    }

    /// The schema's `sizeType` (an unsigned 32-bit integer, at least 1).
    fn size(&mut self, value: &str, span: Range<usize>, what: &str) -> Option<u32> {
        match parse_unsigned(value) {
            Some(n) if n >= 1 => Some(n),
            Some(_) => {
                self.error(
                    "dds-bad-value",
                    span,
                    format!("{what} must be at least 1"),
                    &[],
                );
                None
            }
            None => {
                let mut notes = vec!["expected an integer from 1 to 4294967295".to_string()];
                if value.contains("${") {
                    notes.push(if self.substituted {
                        "no variable of that name is declared (with <var> or --var)".to_string()
                    } else {
                        "${var} is not substituted when checking the raw text".to_string()
                    });
                }
                self.error(
                    "dds-bad-value",
                    span,
                    format!("{what} `{value}` is not a number"),
                    &notes,
                );
                None
            }
        }
    }

    /// The text content of an element with simple content (and its range).
    fn text_of(node: Node) -> (String, Range<usize>) {
        let mut text = String::new();
        let mut range: Option<Range<usize>> = None;
        for c in node.children().filter(|c| c.is_text()) {
            text.push_str(c.text().unwrap_or(""));
            let r = c.range();
            range = Some(match range {
                None => r,
                Some(prev) => prev.start..r.end,
            });
        }
        let range = range.unwrap_or_else(|| {
            let tag = Self::start_tag(node);
            tag.end..tag.end
        });
        (text, range)
    }

    /// A `<name>` (or `<task>`, `<collection>`) element naming a declaration.
    fn name_ref(&mut self, node: Node, element: &str) -> Ref {
        self.no_children(node, element, true);
        let (text, range) = Self::text_of(node);
        let span = if text.is_empty() {
            Self::start_tag(node)
        } else {
            range
        };
        self.check_name(&text, span.clone(), &format!("name in <{element}>"));
        Ref { name: text, span }
    }

    fn ref_list(&mut self, list: Option<Node>, element: &str) -> Vec<Ref> {
        let Some(list) = list else {
            return Vec::new();
        };
        self.attributes(list, element, &[], &[]);
        self.sequence(list, element, &[("name", 0, MANY)], false);
        Self::elements(list, "name")
            .into_iter()
            .map(|n| {
                self.attributes(n, "name", &[], &[]);
                self.name_ref(n, "name")
            })
            .collect()
    }

    fn command(&mut self, node: Node, element: &str) -> Command {
        self.attributes(node, element, &["reachable"], &[]);
        self.no_children(node, element, true);
        let mut reachable = true;
        if let Some((value, span)) = Self::attr(node, "reachable") {
            match value.trim_matches(XML_SPACE) {
                "true" | "1" => reachable = true,
                "false" | "0" => reachable = false,
                _ => self.error(
                    "dds-bad-value",
                    span,
                    format!("`reachable` must be true or false, found `{value}`"),
                    &[],
                ),
            }
        }
        let (text, _) = Self::text_of(node);
        if text.is_empty() {
            self.error(
                "dds-empty-value",
                Self::start_tag(node),
                format!("<{element}> is empty"),
                &[format!("<{element}> holds a command line")],
            );
        }
        Command {
            text,
            reachable,
            span: self.span(node.range()),
        }
    }

    fn topology(&mut self, doc: &Document) -> Option<Topology> {
        let root = doc.root_element();
        if root.tag_name().name() != "topology" || root.tag_name().namespace().is_some() {
            self.error(
                "dds-root",
                Self::start_tag(root),
                format!(
                    "the root element is <{}>, expected <topology>",
                    root.tag_name().name()
                ),
                &[
                    "a DDS topology file holds one <topology name=\"...\"> (without a namespace)"
                        .to_string(),
                ],
            );
            return None;
        }
        self.attributes(root, "topology", &["name"], &["name"]);
        let name = self.name_attr(root, "topology");
        self.sequence(
            root,
            "topology",
            &[
                ("var", 0, MANY),
                ("property", 0, MANY),
                ("asset", 0, MANY),
                ("declrequirement", 0, MANY),
                ("decltrigger", 0, MANY),
                ("decltask", 1, MANY),
                ("declcollection", 0, MANY),
                ("main", 1, 1),
            ],
            false,
        );

        // Declarations.
        let (vars, var_names) = self.decl_vars(root);
        let (properties, mut prop_names) = self.decl_properties(root);
        let (assets, mut asset_names) = self.decl_assets(root);
        let (requirements, mut req_names) = self.decl_requirements(root);
        let (triggers, mut trigger_names) = self.decl_triggers(root);

        let mut task_names = Names::default();
        let mut raw_tasks = Vec::new();
        for n in Self::elements(root, "decltask") {
            if let Some(t) = self.decltask(n) {
                task_names.add(&t.decl.name, name_span(n));
                raw_tasks.push(t);
            }
        }

        let mut coll_names = Names::default();
        let mut raw_colls = Vec::new();
        for n in Self::elements(root, "declcollection") {
            if let Some(c) = self.declcollection(n) {
                coll_names.add(&c.decl.name, name_span(n));
                raw_colls.push(c);
            }
        }

        let main_node = Self::elements(root, "main").into_iter().next();
        let main = main_node.and_then(|m| self.main(m));

        // Resolve the references.
        let mut tasks = Vec::with_capacity(raw_tasks.len());
        for raw in raw_tasks {
            let mut decl = raw.decl;
            decl.requirements = self.refs(
                &raw.requirements,
                &mut req_names,
                "requirement",
                "declrequirement",
            );
            decl.triggers = self.refs(&raw.triggers, &mut trigger_names, "trigger", "decltrigger");
            decl.assets = self.refs(&raw.assets, &mut asset_names, "asset", "asset");
            let mut props: Vec<(usize, Access)> = Vec::new();
            let mut seen: HashMap<usize, Range<usize>> = HashMap::new();
            for (r, access) in &raw.properties {
                let Some(i) = self.refer(r, &mut prop_names, "property", "property") else {
                    continue;
                };
                if let Some(first) = seen.get(&i) {
                    let first = line_of(self, first);
                    self.warning(
                        "dds-repeated-reference",
                        r.span.clone(),
                        format!("task `{}` names property `{}` twice", decl.name, r.name),
                        &[
                            format!("first named at {first}"),
                            "the accesses are combined".to_string(),
                        ],
                    );
                    if let Some(slot) = props.iter_mut().find(|(p, _)| *p == i) {
                        slot.1 = combine(slot.1, *access);
                    }
                } else {
                    seen.insert(i, r.span.clone());
                    props.push((i, *access));
                }
            }
            decl.properties = props;
            tasks.push(decl);
        }
        let mut collections = Vec::with_capacity(raw_colls.len());
        for raw in raw_colls {
            let mut decl = raw.decl;
            let decl_span = raw.name_span.clone();
            decl.requirements = self.refs(
                &raw.requirements,
                &mut req_names,
                "requirement",
                "declrequirement",
            );
            let total: u64 = raw.tasks.iter().map(|(_, n)| u64::from(*n)).sum();
            let mut resolved = Vec::new();
            for (r, n) in &raw.tasks {
                if let Some(i) = self.refer(r, &mut task_names, "task", "decltask") {
                    resolved.push((i, *n));
                }
            }
            if total > MAX_TASKS {
                self.error(
                    "dds-too-large",
                    decl_span.clone(),
                    format!(
                        "collection `{}` has {total} tasks, more than {MAX_TASKS}",
                        decl.name
                    ),
                    &[],
                );
            } else {
                for (i, n) in resolved {
                    decl.tasks.extend(std::iter::repeat_n(i, n as usize));
                }
            }
            collections.push(decl);
        }

        let main = main.map(|raw| self.resolve_main(raw, &mut task_names, &mut coll_names));

        // Duplicated declarations nobody references: a warning.
        for (names, what) in [
            (&prop_names, "property"),
            (&asset_names, "asset"),
            (&req_names, "requirement"),
            (&trigger_names, "trigger"),
            (&task_names, "task"),
            (&coll_names, "collection"),
        ] {
            self.unused_duplicates(names, what);
        }
        let mut var_dups: Vec<(String, Vec<usize>)> = var_names
            .by_name
            .iter()
            .filter(|(_, v)| v.len() > 1)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        var_dups.sort_by_key(|(_, v)| v[1]);
        for (name, idx) in var_dups {
            let used = self.var_uses.get(&name).copied().unwrap_or(0) > 0;
            let span = var_names.spans[idx[1]].clone();
            let first = line_of(self, &var_names.spans[idx[0]]);
            let note = vec![format!("first declared at {first}")];
            if used {
                self.error(
                    "dds-duplicate",
                    span,
                    format!("variable `{name}` is declared {} times and used", idx.len()),
                    &note,
                );
            } else {
                self.warning(
                    "dds-duplicate-unused",
                    span,
                    format!("variable `{name}` is declared {} times", idx.len()),
                    &note,
                );
            }
        }

        let main = main?;
        let (name, _) = name?;
        let topology = Topology {
            name,
            vars,
            properties,
            assets,
            requirements,
            triggers,
            tasks,
            collections,
            main,
        };
        let counts = crate::count(&topology);
        if counts.tasks > MAX_TASKS {
            let span = main_node.map_or(0..0, Self::start_tag);
            self.error(
                "dds-too-large",
                span,
                format!(
                    "the topology has {} task instances, more than {MAX_TASKS}",
                    counts.tasks
                ),
                &[],
            );
        }
        Some(topology)
    }

    /// The `<var>` declarations.
    fn decl_vars(&mut self, root: Node) -> (Vec<Var>, Names) {
        let mut var_names = Names::default();
        let mut vars = Vec::new();
        for n in Self::elements(root, "var") {
            self.attributes(n, "var", &["name", "value"], &["name", "value"]);
            self.no_children(n, "var", false);
            let name = self.name_attr(n, "var");
            let value = Self::attr(n, "value").map(|(v, _)| v.to_string());
            if let (Some((name, span)), Some(value)) = (name, value) {
                var_names.add(&name, span);
                vars.push(Var {
                    name,
                    value,
                    span: self.span(n.range()),
                });
            }
        }
        (vars, var_names)
    }

    /// The `<property>` declarations.
    fn decl_properties(&mut self, root: Node) -> (Vec<PropertyDecl>, Names) {
        let mut prop_names = Names::default();
        let mut properties = Vec::new();
        for n in Self::elements(root, "property") {
            self.attributes(n, "property", &["name", "scope"], &["name"]);
            self.no_children(n, "property", false);
            let name = self.name_attr(n, "property");
            let scope = if n.attribute("scope").is_some() {
                self.enumerated(
                    n,
                    "property",
                    "scope",
                    &[
                        ("global", PropertyScope::Global),
                        ("collection", PropertyScope::Collection),
                    ],
                )
            } else {
                Some(PropertyScope::Global)
            };
            if let (Some((name, span)), Some(scope)) = (name, scope) {
                prop_names.add(&name, span);
                properties.push(PropertyDecl {
                    name,
                    scope,
                    span: self.span(n.range()),
                });
            }
        }
        (properties, prop_names)
    }

    /// The `<asset>` declarations.
    fn decl_assets(&mut self, root: Node) -> (Vec<AssetDecl>, Names) {
        let mut asset_names = Names::default();
        let mut assets = Vec::new();
        for n in Self::elements(root, "asset") {
            let all = ["name", "type", "visibility", "value"];
            self.attributes(n, "asset", &all, &all);
            self.no_children(n, "asset", false);
            let name = self.name_attr(n, "asset");
            let kind = self.enumerated(n, "asset", "type", &[("inline", ())]);
            let visibility = self.enumerated(
                n,
                "asset",
                "visibility",
                &[
                    ("task", AssetVisibility::Task),
                    ("global", AssetVisibility::Global),
                ],
            );
            let value = self.non_empty(n, "asset", "value");
            if let (Some((name, span)), Some(()), Some(visibility), Some(value)) =
                (name, kind, visibility, value)
            {
                asset_names.add(&name, span);
                assets.push(AssetDecl {
                    name,
                    visibility,
                    value,
                    span: self.span(n.range()),
                });
            }
        }
        (assets, asset_names)
    }

    /// The `<declrequirement>` declarations.
    fn decl_requirements(&mut self, root: Node) -> (Vec<RequirementDecl>, Names) {
        let mut req_names = Names::default();
        let mut requirements = Vec::new();
        for n in Self::elements(root, "declrequirement") {
            let all = ["name", "type", "value"];
            self.attributes(n, "declrequirement", &all, &all);
            self.no_children(n, "declrequirement", false);
            let name = self.name_attr(n, "declrequirement");
            let kind = self.enumerated(
                n,
                "declrequirement",
                "type",
                &[
                    ("wnname", RequirementKind::WnName),
                    ("hostname", RequirementKind::HostName),
                    ("groupname", RequirementKind::GroupName),
                    ("gpu", RequirementKind::Gpu),
                    ("maxinstances", RequirementKind::MaxInstances),
                    ("custom", RequirementKind::Custom),
                ],
            );
            let value = self.non_empty(n, "declrequirement", "value");
            if let (Some(kind), Some(value)) = (kind, &value) {
                let span = Self::attr(n, "value").map_or(n.range(), |(_, s)| s);
                match kind {
                RequirementKind::MaxInstances
                    if parse_unsigned(value).is_none_or(|v| v == 0) =>
                {
                    self.error(
                        "dds-bad-requirement",
                        span,
                        format!("a maxinstances requirement needs a number of instances from 1, found `{value}`"),
                        &[],
                    )
                }
                RequirementKind::Gpu if parse_unsigned(value).is_none() => self.error(
                    "dds-bad-requirement",
                    span,
                    format!("a gpu requirement needs a number of GPUs, found `{value}`"),
                    &[],
                ),
                _ => {}
            }
            }
            if let (Some((name, span)), Some(kind), Some(value)) = (name, kind, value) {
                req_names.add(&name, span);
                requirements.push(RequirementDecl {
                    name,
                    kind,
                    value,
                    span: self.span(n.range()),
                });
            }
        }
        (requirements, req_names)
    }

    /// The `<decltrigger>` declarations.
    fn decl_triggers(&mut self, root: Node) -> (Vec<TriggerDecl>, Names) {
        let mut trigger_names = Names::default();
        let mut triggers = Vec::new();
        for n in Self::elements(root, "decltrigger") {
            let all = ["name", "condition", "action", "arg"];
            self.attributes(n, "decltrigger", &all, &all);
            self.no_children(n, "decltrigger", false);
            let name = self.name_attr(n, "decltrigger");
            let condition = self.enumerated(n, "decltrigger", "condition", &[("TaskCrashed", ())]);
            let action = self.enumerated(n, "decltrigger", "action", &[("RestartTask", ())]);
            let arg = self.non_empty(n, "decltrigger", "arg");
            let restarts = match &arg {
                Some(arg) if !arg.is_empty() => {
                    let r = parse_unsigned(arg);
                    if r.is_none() {
                        let span = Self::attr(n, "arg").map_or(n.range(), |(_, s)| s);
                        self.error(
                        "dds-bad-trigger-arg",
                        span,
                        format!("the arg of a RestartTask trigger is the number of restarts, found `{arg}`"),
                        &[],
                    );
                    }
                    r
                }
                _ => None,
            };
            if let (Some((name, span)), Some(()), Some(()), Some(arg), Some(restarts)) =
                (name, condition, action, arg, restarts)
            {
                trigger_names.add(&name, span);
                triggers.push(TriggerDecl {
                    name,
                    arg,
                    restarts,
                    span: self.span(n.range()),
                });
            }
        }
        (triggers, trigger_names)
    }

    fn unused_duplicates(&mut self, names: &Names, what: &str) {
        let mut dups: Vec<(&String, &Vec<usize>)> =
            names.by_name.iter().filter(|(_, v)| v.len() > 1).collect();
        dups.sort_by_key(|(_, v)| v[1]);
        for (name, idx) in dups {
            if idx.iter().any(|&i| names.referenced[i]) {
                continue; // reported as an error at the reference
            }
            let first = line_of(self, &names.spans[idx[0]]);
            self.warning(
                "dds-duplicate-unused",
                names.spans[idx[1]].clone(),
                format!("{what} `{name}` is declared {} times", idx.len()),
                &[
                    format!("first declared at {first}"),
                    "it is not used; using it would be an error".to_string(),
                ],
            );
        }
    }

    /// Resolves one reference; reports undeclared and duplicated names.
    fn refer(&mut self, r: &Ref, names: &mut Names, what: &str, decl: &str) -> Option<usize> {
        let Some(idx) = names.by_name.get(&r.name) else {
            let mut known: Vec<&String> = names.by_name.keys().collect();
            known.sort();
            let note = if known.is_empty() {
                format!("no {what} is declared (with <{decl}>)")
            } else {
                let shown: Vec<String> = known.iter().take(8).map(|k| format!("`{k}`")).collect();
                let more = if known.len() > 8 { ", ..." } else { "" };
                format!("declared {what}s: {}{more}", shown.join(", "))
            };
            if !r.name.is_empty() {
                self.error(
                    "dds-undeclared",
                    r.span.clone(),
                    format!("{what} `{}` is not declared", r.name),
                    &[note],
                );
            }
            return None;
        };
        let idx = idx.clone();
        for &i in &idx {
            names.referenced[i] = true;
        }
        if idx.len() > 1 {
            let lines: Vec<String> = idx
                .iter()
                .map(|&i| line_of(self, &names.spans[i]))
                .collect();
            self.error(
                "dds-duplicate",
                r.span.clone(),
                format!(
                    "{what} `{}` is declared {} times, so this reference is ambiguous",
                    r.name,
                    idx.len()
                ),
                &[format!("declared at {}", lines.join(", "))],
            );
        }
        Some(idx[0])
    }

    /// Resolves a list of references without repeats (a repeat is a warning).
    fn refs(&mut self, refs: &[Ref], names: &mut Names, what: &str, decl: &str) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for r in refs {
            if let Some(i) = self.refer(r, names, what, decl) {
                if !seen.insert(i) {
                    self.warning(
                        "dds-repeated-reference",
                        r.span.clone(),
                        format!("{what} `{}` is named twice in the same list", r.name),
                        &["the repeat is ignored".to_string()],
                    );
                } else {
                    out.push(i);
                }
            }
        }
        out
    }

    fn decltask(&mut self, n: Node) -> Option<RawTask> {
        self.attributes(n, "decltask", &["name"], &["name"]);
        let name = self.name_attr(n, "decltask");
        self.sequence(
            n,
            "decltask",
            &[
                ("exe", 1, 1),
                ("env", 0, 1),
                ("requirements", 0, 1),
                ("properties", 0, 1),
                ("triggers", 0, 1),
                ("assets", 0, 1),
            ],
            false,
        );
        let exe = Self::elements(n, "exe")
            .into_iter()
            .next()
            .map(|e| self.command(e, "exe"));
        let env = Self::elements(n, "env")
            .into_iter()
            .next()
            .map(|e| self.command(e, "env"));
        let requirements = self.ref_list(
            Self::elements(n, "requirements").into_iter().next(),
            "requirements",
        );
        let triggers = self.ref_list(Self::elements(n, "triggers").into_iter().next(), "triggers");
        let assets = self.ref_list(Self::elements(n, "assets").into_iter().next(), "assets");
        let mut properties = Vec::new();
        if let Some(list) = Self::elements(n, "properties").into_iter().next() {
            self.attributes(list, "properties", &[], &[]);
            self.sequence(list, "properties", &[("name", 0, MANY)], false);
            for p in Self::elements(list, "name") {
                self.attributes(p, "name", &["access"], &["access"]);
                let access = self.enumerated(
                    p,
                    "name",
                    "access",
                    &[
                        ("read", Access::Read),
                        ("write", Access::Write),
                        ("readwrite", Access::ReadWrite),
                    ],
                );
                let r = self.name_ref(p, "name");
                if let Some(access) = access {
                    properties.push((r, access));
                }
            }
        }
        let (name, _) = name?;
        Some(RawTask {
            decl: TaskDecl {
                name,
                exe: exe?,
                env,
                requirements: Vec::new(),
                properties: Vec::new(),
                triggers: Vec::new(),
                assets: Vec::new(),
                span: self.span(n.range()),
            },
            requirements,
            properties,
            triggers,
            assets,
        })
    }

    fn declcollection(&mut self, n: Node) -> Option<RawCollection> {
        self.attributes(n, "declcollection", &["name"], &["name"]);
        let name = self.name_attr(n, "declcollection");
        self.sequence(
            n,
            "declcollection",
            &[("requirements", 0, 1), ("tasks", 1, 1)],
            false,
        );
        let requirements = self.ref_list(
            Self::elements(n, "requirements").into_iter().next(),
            "requirements",
        );
        let mut tasks = Vec::new();
        if let Some(list) = Self::elements(n, "tasks").into_iter().next() {
            self.attributes(list, "tasks", &[], &[]);
            self.sequence(list, "tasks", &[("name", 1, MANY)], false);
            for t in Self::elements(list, "name") {
                self.attributes(t, "name", &["n"], &[]);
                let count = match Self::attr(t, "n") {
                    Some((v, span)) => self.size(v, span, "the repeat count `n`"),
                    None => Some(1),
                };
                let r = self.name_ref(t, "name");
                if let Some(count) = count {
                    tasks.push((r, count));
                }
            }
        }
        let (name, _) = name?;
        Some(RawCollection {
            decl: CollectionDecl {
                name,
                requirements: Vec::new(),
                tasks: Vec::new(),
                span: self.span(n.range()),
            },
            requirements,
            tasks,
            name_span: name_span(n),
        })
    }

    fn main(&mut self, m: Node) -> Option<RawMain> {
        self.attributes(m, "main", &["name"], &["name"]);
        let name = self.name_attr(m, "main");
        self.sequence(
            m,
            "main",
            &[
                ("task", 0, MANY),
                ("collection", 0, MANY),
                ("group", 0, MANY),
            ],
            false,
        );
        let (tasks, collections) = self.members(m);
        let mut groups = Vec::new();
        for g in Self::elements(m, "group") {
            self.attributes(g, "group", &["name", "n"], &["name", "n"]);
            let gname = self.name_attr(g, "group");
            self.sequence(
                g,
                "group",
                &[("task", 0, MANY), ("collection", 0, MANY)],
                true,
            );
            let n = match Self::attr(g, "n") {
                Some((v, span)) => self.size(v, span, "the group size `n`"),
                None => None,
            };
            let (tasks, collections) = self.members(g);
            if let (Some((gname, name_span)), Some(n)) = (gname, n) {
                groups.push(RawGroup {
                    name: gname,
                    name_span,
                    n,
                    tasks,
                    collections,
                    span: self.span(g.range()),
                });
            }
        }
        let (name, _) = name?;
        Some(RawMain {
            name,
            tasks,
            collections,
            groups,
            span: self.span(m.range()),
        })
    }

    fn members(&mut self, node: Node) -> (Vec<Ref>, Vec<Ref>) {
        let mut tasks = Vec::new();
        for t in Self::elements(node, "task") {
            self.attributes(t, "task", &[], &[]);
            tasks.push(self.name_ref(t, "task"));
        }
        let mut collections = Vec::new();
        for c in Self::elements(node, "collection") {
            self.attributes(c, "collection", &[], &[]);
            collections.push(self.name_ref(c, "collection"));
        }
        (tasks, collections)
    }

    fn resolve_main(
        &mut self,
        raw: RawMain,
        task_names: &mut Names,
        coll_names: &mut Names,
    ) -> MainDecl {
        let RawMain {
            name,
            tasks,
            collections,
            groups: raw_groups,
            span,
        } = raw;
        let tasks = tasks
            .iter()
            .filter_map(|r| self.refer(r, task_names, "task", "decltask"))
            .collect();
        let collections = collections
            .iter()
            .filter_map(|r| self.refer(r, coll_names, "collection", "declcollection"))
            .collect();
        let mut groups = Vec::new();
        let mut seen: HashMap<String, Range<usize>> = HashMap::new();
        for g in raw_groups {
            if let Some(first) = seen.get(&g.name) {
                let first = line_of(self, first);
                self.error(
                    "dds-duplicate",
                    g.name_span.clone(),
                    format!("group `{}` is declared twice in <main>", g.name),
                    &[
                        format!("first declared at {first}"),
                        "group names give the paths of their tasks and must be unique".to_string(),
                    ],
                );
            } else {
                seen.insert(g.name.clone(), g.name_span.clone());
            }
            let tasks = g
                .tasks
                .iter()
                .filter_map(|r| self.refer(r, task_names, "task", "decltask"))
                .collect();
            let collections = g
                .collections
                .iter()
                .filter_map(|r| self.refer(r, coll_names, "collection", "declcollection"))
                .collect();
            groups.push(GroupDecl {
                name: g.name,
                n: g.n,
                tasks,
                collections,
                span: g.span,
            });
        }
        MainDecl {
            name,
            tasks,
            collections,
            groups,
            span,
        }
    }
}

/// The whitespace of XML.
const XML_SPACE: &[char] = &[' ', '\t', '\r', '\n'];

/// The schema's unsigned integers: optional whitespace and `+`, digits, at most u32::MAX.
fn parse_unsigned(value: &str) -> Option<u32> {
    let v = value.trim_matches(XML_SPACE);
    let v = v.strip_prefix('+').unwrap_or(v);
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = v.trim_start_matches('0');
    if digits.len() > 10 {
        return None;
    }
    if digits.is_empty() {
        return Some(0);
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| u32::try_from(n).ok())
}

fn combine(a: Access, b: Access) -> Access {
    if (a.reads() || b.reads()) && (a.writes() || b.writes()) {
        Access::ReadWrite
    } else if a.reads() || b.reads() {
        Access::Read
    } else {
        Access::Write
    }
}

/// The range of a text node without its leading and trailing whitespace.
fn trimmed_range(node: Node) -> Range<usize> {
    let r = node.range();
    let text = &node.document().input_text()[r.clone()];
    let start = r.start + (text.len() - text.trim_start().len());
    let end = r.end - (text.len() - text.trim_end().len());
    start..end.max(start)
}

/// The range of the `name` attribute's value, or of the element.
fn name_span(n: Node) -> Range<usize> {
    n.attribute_node("name")
        .map_or_else(|| n.range(), |a| a.range_value())
}

/// `line L:C` of a span of the checked text, in the original text.
fn line_of(c: &mut Checker, span: &Range<usize>) -> String {
    let at = c.span(span.clone()).start.min(c.orig.len());
    let orig = c.orig;
    let starts = c.line_starts.get_or_insert_with(|| {
        std::iter::once(0)
            .chain(orig.match_indices('\n').map(|(i, _)| i + 1))
            .collect()
    });
    let line = starts.partition_point(|&s| s <= at);
    let start = starts[line.saturating_sub(1)];
    let col = orig.get(start..at).map_or(0, |s| s.chars().count()) + 1;
    format!("line {line}:{col}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_numbers() {
        assert_eq!(parse_unsigned("10"), Some(10));
        assert_eq!(parse_unsigned(" +007 "), Some(7));
        assert_eq!(parse_unsigned("4294967295"), Some(u32::MAX));
        assert_eq!(parse_unsigned("4294967296"), None);
        assert_eq!(parse_unsigned("000000000000001"), Some(1));
        assert_eq!(parse_unsigned("-1"), None);
        assert_eq!(parse_unsigned("${n}"), None);
        assert_eq!(parse_unsigned(""), None);
    }

    #[test]
    fn offsets_of_rows_and_columns() {
        let t = "ab\ncdé\nf";
        assert_eq!(offset_of(t, 1, 1), 0);
        assert_eq!(offset_of(t, 2, 3), 5);
        assert_eq!(offset_of(t, 3, 1), t.len() - 1);
        assert_eq!(offset_of(t, 9, 9), t.len());
    }
}
