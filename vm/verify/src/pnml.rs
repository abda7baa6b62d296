//! Reading Place/Transition nets in PNML (ISO/IEC 15909-2), the format of the Model Checking
//! Contest.
//!
//! Accepted: `<pnml><net type="...ptnet">` with nested `<page>`s, `<place>` (`<name>`,
//! `<initialMarking>`), `<transition>`, `<arc>` (`<inscription>` weight, default 1; an arc
//! `<type value="test"/>` or `"read"` reads without consuming), `<referencePlace>` and
//! `<referenceTransition>` (resolved to what they reference). Everything else (graphics,
//! tool-specific data) is ignored. Rejected with a located error: malformed XML, a
//! high-level (coloured) net, inhibitor and reset arcs (`<type value="..."/>` or a `type`
//! attribute), place capacities, arcs between two places or two transitions, unknown or
//! duplicate ids, markings and weights that are not natural numbers or exceed 2^32-1.

use std::collections::HashMap;
use std::fmt;

use pnet_bundle::{PlaceId, TransitionId};
use pnet_diagnostics::{LineIndex, line_col};
use roxmltree::{Document, Node};

use crate::ptnet::{Pos, PtNet, PtPlace, PtTransition};

/// An error in a PNML file, at a one-based line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PnmlError {
    pub pos: Pos,
    pub message: String,
}

impl fmt::Display for PnmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.pos.line, self.pos.col, self.message)
    }
}

impl std::error::Error for PnmlError {}

/// Parses a PNML document. All errors found are returned (at least one on failure).
pub fn parse_pnml(text: &str) -> Result<PtNet, Vec<PnmlError>> {
    let doc = match Document::parse(text) {
        Ok(d) => d,
        Err(e) => {
            use roxmltree::Error as E;
            // roxmltree places these at 1:1; they are about the end of the file.
            let at_end = matches!(e, E::UnexpectedEndOfStream | E::UnclosedRootNode);
            let (pos, hint) = if text.trim().is_empty() {
                (Pos { line: 1, col: 1 }, " (the file is empty)".to_string())
            } else if at_end {
                let (line, col) = line_col(text, text.len());
                (
                    Pos {
                        line: line as u32,
                        col: col as u32,
                    },
                    " (the file ends early: truncated?)".to_string(),
                )
            } else {
                let p = e.pos();
                (
                    Pos {
                        line: p.row,
                        col: p.col,
                    },
                    String::new(),
                )
            };
            return Err(vec![PnmlError {
                pos,
                message: format!("malformed XML: {e}{hint}"),
            }]);
        }
    };
    let mut r = Reader {
        doc: &doc,
        text,
        lines: LineIndex::new(text),
        errors: Vec::new(),
    };
    let net = r.read();
    if r.errors.is_empty() {
        Ok(net)
    } else {
        Err(r.errors)
    }
}

enum Node2 {
    Place(PlaceId),
    Transition(TransitionId),
    RefPlace(String),
    RefTransition(String),
}

struct Reader<'a, 'i> {
    doc: &'a Document<'i>,
    text: &'i str,
    /// Positions by the line starts (roxmltree's `text_pos_at` scans from the start of the
    /// document: quadratic over a large net).
    lines: LineIndex,
    errors: Vec<PnmlError>,
}

impl<'a, 'i> Reader<'a, 'i> {
    fn pos(&self, n: Node) -> Pos {
        let (line, col) = self.lines.line_col(self.text, n.range().start);
        Pos {
            line: line as u32,
            col: col as u32,
        }
    }

    fn error(&mut self, n: Node, message: impl Into<String>) {
        let pos = self.pos(n);
        self.errors.push(PnmlError {
            pos,
            message: message.into(),
        });
    }

    fn read(&mut self) -> PtNet {
        let root = self.doc.root_element();
        let mut net = PtNet::default();
        if root.tag_name().name() != "pnml" {
            self.error(
                root,
                format!(
                    "expected a <pnml> document, found <{}>",
                    root.tag_name().name()
                ),
            );
            return net;
        }
        let nets: Vec<Node> = root.children().filter(|n| n.has_tag_name("net")).collect();
        let Some(&n) = nets.first() else {
            self.error(root, "the document has no <net>");
            return net;
        };
        if nets.len() > 1 {
            self.error(
                nets[1],
                "more than one <net> in the document (only one is analysed)",
            );
        }
        let ty = n.attribute("type").unwrap_or("");
        if !ty.is_empty() && !ty.to_ascii_lowercase().contains("ptnet") {
            self.error(
                n,
                format!("net type `{ty}` is not a Place/Transition net (coloured PNML is not supported: take the model's unfolded P/T version, or an .xpnet for coloured nets)"),
            );
            return net;
        }
        net.name = n.attribute("id").unwrap_or("net").to_string();
        let mut ids: HashMap<String, Node2> = HashMap::new();
        let mut arcs: Vec<Node> = Vec::new();
        self.page(n, &mut net, &mut ids, &mut arcs);
        for a in arcs {
            self.arc(a, &mut net, &ids);
        }
        net
    }

    fn page<'n>(
        &mut self,
        page: Node<'n, 'i>,
        net: &mut PtNet,
        ids: &mut HashMap<String, Node2>,
        arcs: &mut Vec<Node<'n, 'i>>,
    ) {
        // Pages nest without limit: a stack of the open pages' children, not recursion.
        let mut open = vec![page.children()];
        while let Some(children) = open.last_mut() {
            let Some(c) = children.next() else {
                open.pop();
                continue;
            };
            if !c.is_element() {
                continue;
            }
            let tag = c.tag_name().name();
            let entry = match tag {
                "page" => {
                    open.push(c.children());
                    continue;
                }
                "arc" => {
                    arcs.push(c);
                    continue;
                }
                "place" => {
                    let Some(id) = self.id(c) else { continue };
                    let initial = match child_text(c, "initialMarking") {
                        None => 0,
                        Some(t) => match parse_nat(t) {
                            Ok(v) => v,
                            Err(why) => {
                                self.error(
                                    c,
                                    format!("place `{id}`: initial marking `{}` {why}", t.trim()),
                                );
                                0
                            }
                        },
                    };
                    if let Some(cap) = child_text(c, "capacity")
                        && !cap.trim().trim_start_matches('0').is_empty()
                    {
                        self.error(c, format!("place `{id}`: capacity `{}` is not supported (P/T nets of the Model Checking Contest have none; model a capacity with a complementary place)", cap.trim()));
                    }
                    let name = child_text(c, "name")
                        .map(|s| s.trim().to_string())
                        .unwrap_or_else(|| id.clone());
                    let pos = self.pos(c);
                    net.places.push(PtPlace {
                        id: id.clone(),
                        name,
                        initial,
                        pos,
                    });
                    (id, Node2::Place(PlaceId::from(net.places.len() - 1)))
                }
                "transition" => {
                    let Some(id) = self.id(c) else { continue };
                    let name = child_text(c, "name")
                        .map(|s| s.trim().to_string())
                        .unwrap_or_else(|| id.clone());
                    let pos = self.pos(c);
                    net.transitions.push(PtTransition {
                        id: id.clone(),
                        name,
                        pre: Vec::new(),
                        post: Vec::new(),
                        pos,
                    });
                    (
                        id,
                        Node2::Transition(TransitionId::from(net.transitions.len() - 1)),
                    )
                }
                "referencePlace" | "referenceTransition" => {
                    let Some(id) = self.id(c) else { continue };
                    let Some(r) = c.attribute("ref") else {
                        self.error(c, format!("<{tag}> `{id}` has no `ref` attribute"));
                        continue;
                    };
                    let r = r.to_string();
                    if tag == "referencePlace" {
                        (id, Node2::RefPlace(r))
                    } else {
                        (id, Node2::RefTransition(r))
                    }
                }
                _ => continue,
            };
            match ids.entry(entry.0) {
                std::collections::hash_map::Entry::Occupied(o) => {
                    let msg = format!("duplicate id `{}`", o.key());
                    self.error(c, msg);
                }
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(entry.1);
                }
            }
        }
    }

    fn id(&mut self, n: Node) -> Option<String> {
        match n.attribute("id") {
            Some(id) if !id.is_empty() => Some(id.to_string()),
            _ => {
                self.error(n, format!("<{}> without an `id`", n.tag_name().name()));
                None
            }
        }
    }

    /// Resolves an id (following references) to a place or a transition.
    fn resolve(
        &self,
        ids: &HashMap<String, Node2>,
        id: &str,
    ) -> Option<Result<PlaceId, TransitionId>> {
        let mut cur = id;
        for _ in 0..=ids.len() {
            match ids.get(cur)? {
                Node2::Place(p) => return Some(Ok(*p)),
                Node2::Transition(t) => return Some(Err(*t)),
                Node2::RefPlace(r) | Node2::RefTransition(r) => cur = r,
            }
        }
        None // a reference cycle
    }

    fn arc(&mut self, a: Node, net: &mut PtNet, ids: &HashMap<String, Node2>) {
        let aid = a.attribute("id").unwrap_or("?").to_string();
        let (Some(src), Some(dst)) = (a.attribute("source"), a.attribute("target")) else {
            self.error(a, format!("arc `{aid}` needs `source` and `target`"));
            return;
        };
        let weight = match child_text(a, "inscription") {
            None => 1,
            Some(t) => match parse_nat(t) {
                Ok(0) => {
                    let why = "is not a positive natural number";
                    self.error(a, format!("arc `{aid}`: inscription `{}` {why}", t.trim()));
                    return;
                }
                Err(why) => {
                    self.error(a, format!("arc `{aid}`: inscription `{}` {why}", t.trim()));
                    return;
                }
                Ok(w) => w,
            },
        };
        // `<type value="..."/>` (PNML) or a `type` attribute (some tools' dialect).
        let kind = a
            .children()
            .find(|c| c.has_tag_name("type"))
            .and_then(|t| {
                t.attribute("value")
                    .map(str::to_string)
                    .or_else(|| child_text(t, "text").map(|s| s.trim().to_string()))
            })
            .or_else(|| a.attribute("type").map(|s| s.trim().to_string()))
            .unwrap_or_else(|| "normal".to_string());
        let read = match kind.as_str() {
            "normal" | "" => false,
            "test" | "read" => true,
            other => {
                self.error(a, format!("arc `{aid}`: arcs of type `{other}` are not supported (only normal and test arcs)"));
                return;
            }
        };
        let (s, d) = match (self.resolve(ids, src), self.resolve(ids, dst)) {
            (None, _) => {
                self.error(a, format!("arc `{aid}`: unknown source `{src}`"));
                return;
            }
            (_, None) => {
                self.error(a, format!("arc `{aid}`: unknown target `{dst}`"));
                return;
            }
            (Some(s), Some(d)) => (s, d),
        };
        match (s, d) {
            (Ok(p), Err(t)) => {
                let tr = &mut net.transitions[t.index()];
                PtNet::add_arc(&mut tr.pre, p, weight);
                if read {
                    PtNet::add_arc(&mut tr.post, p, weight);
                }
            }
            (Err(t), Ok(p)) => {
                if read {
                    self.error(
                        a,
                        format!("arc `{aid}`: a test arc must go from a place to a transition"),
                    );
                    return;
                }
                PtNet::add_arc(&mut net.transitions[t.index()].post, p, weight);
            }
            (Ok(_), Ok(_)) => self.error(
                a,
                format!("arc `{aid}` connects two places (`{src}` -> `{dst}`)"),
            ),
            (Err(_), Err(_)) => self.error(
                a,
                format!("arc `{aid}` connects two transitions (`{src}` -> `{dst}`)"),
            ),
        }
    }
}

/// The text of `<tag><text>...</text></tag>` below `n` (also `<tag>value</tag>` for lax files).
fn child_text<'a>(n: Node<'a, '_>, tag: &str) -> Option<&'a str> {
    let c = n.children().find(|c| c.has_tag_name(tag))?;
    if let Some(t) = c.children().find(|c| c.has_tag_name("text")) {
        return Some(t.text().unwrap_or(""));
    }
    c.text().filter(|s| !s.trim().is_empty())
}

/// The largest number of tokens (marking or arc weight) the explorer counts on a place.
const MAX_TOKENS: u64 = u32::MAX as u64;

/// A natural number up to [`MAX_TOKENS`], else why not (to follow the value in a message).
fn parse_nat(s: &str) -> Result<u64, &'static str> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err("is not a natural number");
    }
    match s.parse::<u64>() {
        Ok(v) if v <= MAX_TOKENS => Ok(v),
        _ => Err("is too large (at most 2^32-1 = 4294967295 tokens on a place)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_small_net() {
        let net = parse_pnml(
            r#"<?xml version="1.0"?>
<pnml><net id="n" type="http://www.pnml.org/version-2009/grammar/ptnet"><page id="pg">
  <place id="p"><name><text>P</text></name><initialMarking><text>2</text></initialMarking></place>
  <place id="q"/>
  <transition id="t"/>
  <arc id="a1" source="p" target="t"><inscription><text>2</text></inscription></arc>
  <arc id="a2" source="t" target="q"/>
</page></net></pnml>"#,
        )
        .unwrap();
        assert_eq!(net.places.len(), 2);
        assert_eq!(net.places[0].name, "P");
        assert_eq!(net.initial_marking(), vec![2, 0]);
        assert_eq!(net.transitions[0].pre, vec![(PlaceId(0), 2)]);
        assert_eq!(net.transitions[0].post, vec![(PlaceId(1), 1)]);
    }

    fn errors(text: &str) -> Vec<String> {
        parse_pnml(text)
            .unwrap_err()
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    /// Pages nested 100,000 deep (generated): read without recursion, in document order.
    #[test]
    fn deeply_nested_pages() {
        let depth = 100_000;
        let text = format!(
            r#"<pnml><net id="n" type="http://www.pnml.org/version-2009/grammar/ptnet">{}<place id="p"><initialMarking><text>2</text></initialMarking></place>{}<transition id="t"/><arc id="a" source="p" target="t"/></net></pnml>"#,
            "<page id=\"x\">".repeat(depth),
            "</page>".repeat(depth)
        );
        let net = parse_pnml(&text).expect("a net");
        assert_eq!(net.places.len(), 1);
        assert_eq!(net.places[0].initial, 2);
        assert_eq!(net.transitions.len(), 1);
        assert_eq!(net.transitions[0].pre.len(), 1);
    }

    #[test]
    fn malformed_inputs_are_located_errors() {
        assert_eq!(
            errors("<pnml><net>"),
            vec![
                "1:12: malformed XML: the root node was opened but never closed (the file ends early: truncated?)"
                    .to_string()
            ]
        );
        assert_eq!(
            errors("<pnml>\n<net id='n'><place id='p'/>\n<transition id='t"),
            vec![
                "3:18: malformed XML: unexpected end of stream (the file ends early: truncated?)"
                    .to_string()
            ]
        );
        assert_eq!(
            errors(" \n"),
            vec!["1:1: malformed XML: the document does not have a root node (the file is empty)"]
        );
        assert_eq!(
            errors("<foo/>"),
            vec!["1:1: expected a <pnml> document, found <foo>".to_string()]
        );
        assert_eq!(
            errors("<pnml/>"),
            vec!["1:1: the document has no <net>".to_string()]
        );
        let e = errors(
            "<pnml><net id='n'><page id='x'>\n<place id='p'><initialMarking><text>-1</text></initialMarking></place>\n<place id='p'/>\n<arc id='a' source='p' target='zz'/>\n<arc id='b' source='p' target='p'/></page></net></pnml>",
        );
        assert_eq!(
            e,
            vec![
                "2:1: place `p`: initial marking `-1` is not a natural number",
                "3:1: duplicate id `p`",
                "4:1: arc `a`: unknown target `zz`",
                "5:1: arc `b` connects two places (`p` -> `p`)",
            ]
        );
        let e = errors(
            "<pnml><net id='n' type='http://www.pnml.org/version-2009/grammar/symmetricnet'/></pnml>",
        );
        assert!(e[0].starts_with("1:7: net type"), "{e:?}");
        let e = errors(
            "<pnml><net id='n'><place id='p'/><transition id='t'/><arc id='a' source='p' target='t'><type value='inhibitor'/></arc></net></pnml>",
        );
        assert_eq!(
            e,
            vec![
                "1:54: arc `a`: arcs of type `inhibitor` are not supported (only normal and test arcs)"
            ]
        );
    }

    /// What other tools write and pnetv cannot model is an error, not silently ignored: an
    /// inhibitor arc as a `type` attribute, a place capacity (0 means none), a marking past
    /// what the explorer counts (2^40), one past u64, a negative or non-numeric weight.
    #[test]
    fn unsupported_dialects_and_numbers_are_located_errors() {
        let e = errors(
            "<pnml><net id='n'>\n<place id='p'><initialMarking><text>1099511627776</text></initialMarking></place>\n<place id='q'><initialMarking><text>99999999999999999999999</text></initialMarking><capacity><text>1</text></capacity></place>\n<place id='r'><capacity><text>0</text></capacity></place>\n<transition id='t'/>\n<arc id='a' source='p' target='t' type='inhibitor'/>\n<arc id='b' source='q' target='t'><inscription><text>-2</text></inscription></arc>\n<arc id='c' source='q' target='t'><inscription><text>abc</text></inscription></arc>\n<arc id='d' source='t' target='r'><inscription><text>4294967296</text></inscription></arc></net></pnml>",
        );
        assert_eq!(
            e,
            vec![
                "2:1: place `p`: initial marking `1099511627776` is too large (at most 2^32-1 = 4294967295 tokens on a place)",
                "3:1: place `q`: initial marking `99999999999999999999999` is too large (at most 2^32-1 = 4294967295 tokens on a place)",
                "3:1: place `q`: capacity `1` is not supported (P/T nets of the Model Checking Contest have none; model a capacity with a complementary place)",
                "6:1: arc `a`: arcs of type `inhibitor` are not supported (only normal and test arcs)",
                "7:1: arc `b`: inscription `-2` is not a natural number",
                "8:1: arc `c`: inscription `abc` is not a natural number",
                "9:1: arc `d`: inscription `4294967296` is too large (at most 2^32-1 = 4294967295 tokens on a place)",
            ]
        );
        let net = parse_pnml(
            "<pnml><net id='n'><place id='p'><initialMarking><text>4294967295</text></initialMarking></place></net></pnml>",
        )
        .unwrap();
        assert_eq!(net.initial_marking(), vec![4294967295]);
    }

    /// Positions come from a line index, in characters (as roxmltree counts them), on any line
    /// of a large document.
    #[test]
    fn positions_on_later_lines_count_characters() {
        let mut text = String::from("<pnml><net id='n'>\n");
        for i in 0..2000 {
            text.push_str(&format!("<place id='p{i}'/>\n"));
        }
        text.push_str("<!-- é --><arc id='a' source='p0' target='zz'/></net></pnml>");
        assert_eq!(errors(&text), vec!["2002:11: arc `a`: unknown target `zz`"]);
    }
}
