//! The driver's side of [`db::Cut`]: the items of a file's root net kept as inputs through
//! edits. An edit's range says which items it touches: the items before it stay as they
//! are, those after it move by the edit's length delta (their texts, and so their inputs,
//! unchanged), and only the part of the new text between the untouched items around it is
//! scanned again ([`items::items_between`]); the items found there take the inputs of the
//! items they replace (their text set only when it changed). When that cannot be done (an
//! edit before the first item or after the last, a region that does not scan as a part of
//! the net: tags opened or closed across it), the whole text is scanned again
//! ([`items::items_in_order`]) and the old inputs are matched by text from both ends (and in
//! the middle, by text first: [`pair`]).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use pnet_syntax::xml::items::{self, ItemKind};
use salsa::Setter;

use crate::db::{self, Cut, CutItem, ItemInput};

/// An edit of a file's text: the byte range it replaced, in the text as it was (after the
/// edits before it), and the length of the new text put there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    pub len: usize,
}

/// The one edit from `old` to `new`: what lies between their common prefix and suffix.
pub fn diff(old: &str, new: &str) -> Edit {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let max = a.len().min(b.len());
    // whole blocks compared by memcmp, then the bytes of the first differing one
    const BLOCK: usize = 4096;
    let mut prefix = 0;
    while prefix + BLOCK <= max && a[prefix..prefix + BLOCK] == b[prefix..prefix + BLOCK] {
        prefix += BLOCK;
    }
    while prefix < max && a[prefix] == b[prefix] {
        prefix += 1;
    }
    let rest = max - prefix;
    let mut suffix = 0;
    while suffix + BLOCK <= rest
        && a[a.len() - suffix - BLOCK..a.len() - suffix]
            == b[b.len() - suffix - BLOCK..b.len() - suffix]
    {
        suffix += BLOCK;
    }
    while suffix < rest && a[a.len() - suffix - 1] == b[b.len() - suffix - 1] {
        suffix += 1;
    }
    Edit {
        range: prefix..a.len() - suffix,
        len: b.len() - prefix - suffix,
    }
}

/// Whether `edits` (each range with its new text), made one after the other on `old`, give
/// `new` (a copy and a comparison: the edits are the caller's word, the texts the truth).
pub fn gives(old: &str, edits: &[(Edit, String)], new: &str) -> bool {
    // one edit: its text and what is around it compared, without a copy
    if let [(e, t)] = edits {
        let r = &e.range;
        return r.start <= r.end
            && r.end <= old.len()
            && e.len == t.len()
            && new.len() == old.len() - r.len() + t.len()
            && old.as_bytes()[..r.start] == new.as_bytes()[..r.start]
            && new.as_bytes()[r.start..r.start + t.len()] == *t.as_bytes()
            && old.as_bytes()[r.end..] == new.as_bytes()[r.start + t.len()..];
    }
    let mut text = old.to_string();
    for (e, t) in edits {
        let r = &e.range;
        if r.start > r.end
            || r.end > text.len()
            || e.len != t.len()
            || !text.is_char_boundary(r.start)
            || !text.is_char_boundary(r.end)
        {
            return false;
        }
        text.replace_range(r.clone(), t);
    }
    text == new
}

/// The inputs of items no longer in any file, reused by the next new items (so that a long
/// session does not add inputs: see [`db::ItemInput`]).
#[derive(Debug, Default)]
pub(crate) struct Pool {
    free: Vec<ItemInput>,
}

impl Pool {
    fn take(&mut self, db: &mut db::Database, text: &str) -> ItemInput {
        match self.free.pop() {
            Some(i) => {
                i.set_text(db).to(Arc::from(text));
                i
            }
            None => ItemInput::new(db, Arc::from(text)),
        }
    }
}

/// An item of the cut being updated: its range in the current text, and the inputs of the
/// items an edit removed in the gap after it (in order), whose region is scanned again.
struct Clean {
    start: usize,
    end: usize,
    kind: ItemKind,
    input: ItemInput,
    dirty_after: bool,
    removed: Vec<ItemInput>,
}

/// The cut of `text` after `edits` made to the text `old` was cut for (`None`: a new file;
/// no edits: scanned whole). `None` when `text` cannot be cut; the inputs of `old` not
/// reused go to `pool`.
pub(crate) fn recut(
    db: &mut db::Database,
    pool: &mut Pool,
    old: Option<&Cut>,
    edits: &[Edit],
    text: &str,
) -> Option<Arc<Cut>> {
    let Some(old) = old else {
        return full(db, pool, Vec::new(), text);
    };
    let olds = || old.items.iter().map(|i| i.input).collect::<Vec<_>>();
    if edits.is_empty() {
        return full(db, pool, olds(), text);
    }
    let mut items: Vec<Clean> = old
        .items
        .iter()
        .map(|i| Clean {
            start: i.start as usize,
            end: i.end as usize,
            kind: i.kind,
            input: i.input,
            dirty_after: false,
            removed: Vec::new(),
        })
        .collect();
    for e in edits {
        let (a, b) = (e.range.start, e.range.end);
        // the untouched items before and after the edit
        let before = items.partition_point(|c| c.end <= a);
        let after = items.partition_point(|c| c.start < b);
        if before == 0 || after == items.len() {
            return full(db, pool, olds(), text);
        }
        let mut removed: Vec<ItemInput> = Vec::new();
        for c in items.drain(before..after) {
            removed.push(c.input);
            removed.extend(c.removed);
        }
        let after = before;
        let prev = &mut items[before - 1];
        prev.dirty_after = true;
        prev.removed.extend(removed);
        for c in &mut items[after..] {
            c.start = c.start - e.range.len() + e.len;
            c.end = c.end - e.range.len() + e.len;
        }
    }
    // every region scanned before any input changes (a region that does not scan: the whole)
    let mut found = Vec::new();
    for k in 0..items.len() {
        let c = &items[k];
        debug_assert_eq!(
            &text[c.start..c.end],
            &**c.input.text(db),
            "an item the edits did not touch"
        );
        if c.dirty_after {
            match items::items_between(text, c.end..items[k + 1].start) {
                Some(f) => found.push(f),
                None => return full(db, pool, olds(), text),
            }
        }
    }
    let mut found = found.into_iter();
    let mut out = Vec::with_capacity(items.len() + 1);
    for c in items {
        out.push(item(c.input, c.start..c.end, c.kind)?);
        if c.dirty_after {
            pair(db, pool, c.removed, &found.next()?, text, &mut out)?;
        }
    }
    Some(Arc::new(Cut { items: out }))
}

fn item(input: ItemInput, r: Range<usize>, kind: ItemKind) -> Option<CutItem> {
    Some(CutItem {
        input,
        start: u32::try_from(r.start).ok()?,
        end: u32::try_from(r.end).ok()?,
        kind,
    })
}

/// The whole text scanned, the `old` inputs matched to its items.
fn full(
    db: &mut db::Database,
    pool: &mut Pool,
    old: Vec<ItemInput>,
    text: &str,
) -> Option<Arc<Cut>> {
    let Some(found) = items::items_in_order(text) else {
        pool.free.extend(old);
        return None;
    };
    let mut out = Vec::with_capacity(found.len());
    pair(db, pool, old, &found, text, &mut out)?;
    Some(Arc::new(Cut { items: out }))
}

/// Gives the items `found` in `text` inputs: those of `old` (the items they replace, in
/// order) where the texts are equal from either end, then in the middle those of an equal
/// text, then the others in order, their texts set; new ones from the pool for the rest.
/// The inputs left over go to the pool.
fn pair(
    db: &mut db::Database,
    pool: &mut Pool,
    old: Vec<ItemInput>,
    found: &[(Range<usize>, ItemKind)],
    text: &str,
    out: &mut Vec<CutItem>,
) -> Option<()> {
    let same = |db: &db::Database, i: ItemInput, r: &Range<usize>| **i.text(db) == text[r.clone()];
    let n = old.len().min(found.len());
    let mut head = 0;
    while head < n && same(db, old[head], &found[head].0) {
        head += 1;
    }
    let mut tail = 0;
    while tail < n - head
        && same(
            db,
            old[old.len() - 1 - tail],
            &found[found.len() - 1 - tail].0,
        )
    {
        tail += 1;
    }
    let mut inputs: Vec<ItemInput> = Vec::with_capacity(found.len());
    inputs.extend(&old[..head]);
    let middle_old = &old[head..old.len() - tail];
    let middle_new = &found[head..found.len() - tail];
    // in the middle, the old items of the same text first (an item added or removed
    // there shifts the others: paired in order, each would take its neighbour's text),
    // then the others in order, their texts set
    let texts: Vec<Arc<str>> = middle_old.iter().map(|i| i.text(db).clone()).collect();
    let mut by_text: HashMap<&str, Vec<usize>> = HashMap::with_capacity(texts.len());
    for (k, t) in texts.iter().enumerate().rev() {
        by_text.entry(&**t).or_default().push(k);
    }
    let mut taken = vec![false; middle_old.len()];
    let mut chosen: Vec<Option<ItemInput>> = middle_new
        .iter()
        .map(|(r, _)| {
            let k = by_text.get_mut(&text[r.clone()])?.pop()?;
            taken[k] = true;
            Some(middle_old[k])
        })
        .collect();
    let mut rest = middle_old
        .iter()
        .zip(&taken)
        .filter(|(_, t)| !**t)
        .map(|(i, _)| *i);
    for (c, (r, _)) in chosen.iter_mut().zip(middle_new) {
        if c.is_none() {
            let t = &text[r.clone()];
            *c = Some(match rest.next() {
                Some(i) => {
                    if **i.text(db) != *t {
                        i.set_text(db).to(Arc::from(t));
                    }
                    i
                }
                None => pool.take(db, t),
            });
        }
    }
    pool.free.extend(rest);
    inputs.extend(chosen.into_iter().flatten());
    inputs.extend(&old[old.len() - tail..]);
    for (i, (r, kind)) in inputs.into_iter().zip(found) {
        out.push(item(i, r.clone(), *kind)?);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const NET: &str = r#"<defun name="n">
  <net>
    <place name="a" type="long"/>
    <place name="b" type="long"/>
    <transition name="t">
      <defun><in name="x" type="long"/><expression/></defun>
      <connect-in port="x" place="a"/>
    </transition>
    <transition name="u">
      <defun><in name="x" type="long"/><expression/></defun>
      <connect-in port="x" place="b"/>
    </transition>
    <transition name="v">
      <defun><in name="x" type="long"/><expression/></defun>
      <connect-in port="x" place="b"/>
    </transition>
  </net>
</defun>"#;

    /// The file's items after `text` is read through the driver (with `edits` noted
    /// first, or found by [`diff`]): each item's input and range.
    fn read(
        db: &mut db::Database,
        files: &mut crate::Files,
        text: &str,
        edits: &[(Range<usize>, String)],
    ) -> Option<Vec<(ItemInput, Range<usize>)>> {
        let path = Path::new("/nonexistent/cut.xpnet");
        for (r, new) in edits {
            files.edited(path, r.clone(), new);
        }
        let ws = crate::reload(db, files, None, path, &Default::default(), &mut |_| {
            Some(Arc::from(text))
        });
        let file = ws.files(db)[0];
        let cut = file.cut(db).clone()?;
        let items = cut
            .items
            .iter()
            .map(|i| (i.input, i.start as usize..i.end as usize))
            .collect::<Vec<_>>();
        // as a scan of the whole text finds them, each input holding its item's text
        let whole = items::items_in_order(text).expect("cut");
        assert_eq!(
            items.iter().map(|i| i.1.clone()).collect::<Vec<_>>(),
            whole.iter().map(|i| i.0.clone()).collect::<Vec<_>>()
        );
        for (i, r) in &items {
            assert_eq!(&**i.text(db), &text[r.clone()]);
        }
        Some(items)
    }

    /// The edits `(range, new text)` of `NET`, applied in order: the new text and the edits
    /// as [`Files::edited`] takes them.
    fn apply(sites: &[(&str, &str)]) -> (String, Vec<(Range<usize>, String)>) {
        let mut text = NET.to_string();
        let mut edits = Vec::new();
        for (old, new) in sites {
            let at = text.find(old).expect("site");
            text.replace_range(at..at + old.len(), new);
            edits.push((at..at + old.len(), new.to_string()));
        }
        (text, edits)
    }

    /// Edits inside items and between them re-scan only their region: the other items keep
    /// their inputs; edits that cannot be followed (before the first item, a region that is
    /// not a part of the net) scan the whole text, and the inputs are matched by text.
    #[test]
    fn edits_keep_the_inputs_of_untouched_items() {
        for by_ranges in [true, false] {
            let mut db = db::Database::default();
            let mut files = crate::Files::default();
            let first = read(&mut db, &mut files, NET, &[]).expect("cut");
            assert_eq!(first.len(), 5);
            let mut check = |sites: &[(&str, &str)], kept: &[usize], count: usize| {
                let (text, edits) = apply(sites);
                let edits = if by_ranges { edits } else { Vec::new() };
                let items = read(&mut db, &mut files, &text, &edits);
                let items = items.expect("cut");
                assert_eq!(items.len(), count, "{sites:?}");
                for &k in kept {
                    assert!(
                        items.iter().any(|i| i.0 == first[k].0),
                        "{sites:?}: item {k} keeps its input"
                    );
                }
                // back to the net: every input as at first
                let (_, back) = {
                    let mut e = Vec::new();
                    if by_ranges {
                        e.push((0..text.len(), NET.to_string()));
                    }
                    (NET, e)
                };
                let again = read(&mut db, &mut files, NET, &back).expect("cut");
                assert_eq!(again.len(), 5);
            };
            // inside a transition; inside a place; two sites
            check(&[("name=\"u\"", "name=\"uu\"")], &[0, 1, 2, 4], 5);
            check(
                &[("name=\"b\" type=\"long\"", "name=\"b\" type=\"int\"")],
                &[0, 2, 3, 4],
                5,
            );
            check(
                &[
                    ("name=\"a\" type", "name=\"c\" type"),
                    ("name=\"v\"", "name=\"w\""),
                ],
                &[1, 2, 3],
                5,
            );
            // a new transition between two; one removed
            check(
                &[(
                    "</transition>\n    <transition name=\"v\">",
                    "</transition>\n    <transition name=\"z\"><use name=\"f\"/></transition>\n    <transition name=\"v\">",
                )],
                &[0, 1, 2, 3, 4],
                6,
            );
            check(
                &[
                    ("<transition name=\"u\">", "<!--"),
                    (
                        "</transition>\n    <transition name=\"v\">",
                        "-->\n    <transition name=\"v\">",
                    ),
                ],
                &[0, 1, 2, 4],
                4,
            );
            // two transitions merged into one (the edit crosses their boundary)
            check(
                &[("</transition>\n    <transition name=\"u\">", "")],
                &[0, 1, 4],
                4,
            );
            // before the first item, after the last: the whole text is scanned
            check(
                &[("<defun name=\"n\">", "<defun name=\"m\">")],
                &[0, 1, 2, 3, 4],
                5,
            );
            check(
                &[("  </net>", "  <place name=\"c\" type=\"long\"/>\n  </net>")],
                &[0, 1, 2, 3, 4],
                6,
            );
            // a comment opened between two items and never closed: not cut at all
            let (text, edits) = apply(&[(
                "</transition>\n    <transition name=\"v\">",
                "</transition>\n<!--    <transition name=\"v\">",
            )]);
            let edits = if by_ranges { edits } else { Vec::new() };
            assert!(read(&mut db, &mut files, &text, &edits).is_none());
            // and back: cut again, from the pool's inputs
            assert_eq!(read(&mut db, &mut files, NET, &[]).expect("cut").len(), 5);
            // edits noted that do not give the text read are not believed
            let (text, _) = apply(&[("name=\"u\"", "name=\"uu\"")]);
            let wrong = vec![(
                NET.find("name=\"v\"").unwrap()..NET.len(),
                "x".repeat(text.len() - NET.find("name=\"v\"").unwrap()),
            )];
            assert_eq!(
                read(&mut db, &mut files, &text, &wrong).expect("cut").len(),
                5
            );
        }
    }

    #[test]
    fn diff_finds_the_changed_part() {
        let e = diff("abcdef", "abXYef");
        assert_eq!(
            e,
            Edit {
                range: 2..4,
                len: 2
            }
        );
        let e = diff("aaaa", "aaaaa");
        assert_eq!(e.range.len() + 1, e.len);
        let long = "x".repeat(10_000);
        let e = diff(&long, &format!("{long}y"));
        assert_eq!(
            e,
            Edit {
                range: 10_000..10_000,
                len: 1
            }
        );
        let e = diff(&long, &long);
        assert_eq!(
            e,
            Edit {
                range: 10_000..10_000,
                len: 0
            }
        );
        let edit = |r: Range<usize>, t: &str| {
            (
                Edit {
                    range: r,
                    len: t.len(),
                },
                t.to_string(),
            )
        };
        assert!(gives(
            "abcde",
            &[edit(1..2, "xyz"), edit(0..1, "")],
            "xyzcde"
        ));
        assert!(!gives("abcde", &[edit(1..2, "xyz")], "axyzdf"));
        assert!(!gives("abcde", &[edit(4..6, "")], "abcd"));
    }
}
