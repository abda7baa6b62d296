//! Re-checking one edited expression or condition without a full elaboration.
//!
//! The elaboration records every expression and condition check it makes ([`Check`]): the
//! text(s), the port signatures and the name it was checked with, and the range of the
//! diagnostics it produced. When an edit only changes the character data of one
//! `<expression>` or `<condition>` element (no markup, no entity, no blankness change), the
//! XML structure and everything else the elaboration sees stay the same; only that text and
//! the positions after it change. [`Incremental::edit`] then re-runs the checks of that text
//! (the same functions the elaboration calls), shifts every other span, and splices the new
//! diagnostics in where the old ones were, which gives the diagnostics a full elaboration of
//! the new text would give. Anything it cannot prove safe is refused (`false`), and the caller
//! runs the full analysis.

use std::ops::Range;

use pnet_syntax::span::MappedText;
use pnet_syntax::{Diagnostic, FileId, Span};

use crate::checks::{Check, CheckKind};
use crate::elab::Elaborated;

/// The raw diagnostics of a workspace (before the warning settings are applied) and the
/// checks behind them, kept up to date by [`Incremental::edit`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Incremental {
    pub diagnostics: Vec<(Diagnostic, Option<bool>)>,
    pub checks: Vec<Check>,
}

/// Where the edited text sits in the old file, and how positions move.
struct Shift {
    file: FileId,
    /// The edited text occupies `start..end` of the old file.
    start: u32,
    end: u32,
    delta: i64,
}

impl Shift {
    /// The new position of old position `x`, `None` inside the edited text.
    fn pos(&self, x: u32) -> Option<u32> {
        if x <= self.start {
            Some(x)
        } else if x >= self.end {
            u32::try_from(i64::from(x) + self.delta).ok()
        } else {
            None
        }
    }

    fn span(&self, s: Span) -> Option<Span> {
        if s.file != self.file {
            return Some(s);
        }
        Some(Span::new(s.file, self.pos(s.start)?, self.pos(s.end)?))
    }

    fn diagnostic(&self, d: &Diagnostic) -> Option<Diagnostic> {
        let mut d = d.clone();
        for l in &mut d.labels {
            l.span = self.span(l.span)?;
        }
        Some(d)
    }

    fn text(&self, t: &MappedText) -> Option<MappedText> {
        if t.file != self.file {
            return Some(t.clone());
        }
        let mut t = t.clone();
        for (_, f) in &mut t.map {
            *f = self.pos(*f)?;
        }
        Some(t)
    }
}

/// A text that is a verbatim copy of the file at its start: `(start, end)` in the file.
fn verbatim_range(t: &MappedText, src: &str) -> Option<(u32, u32)> {
    let &[(0, start)] = t.map.as_slice() else {
        return None;
    };
    let end = start.checked_add(u32::try_from(t.text.len()).ok()?)?;
    (src.get(start as usize..end as usize) == Some(t.text.as_str())).then_some((start, end))
}

/// The changed byte ranges of `old` and `new`: `(start, old end, new end)`, on char
/// boundaries; `None` when they are equal.
fn changed_range(old: &str, new: &str) -> Option<(usize, usize, usize)> {
    if old == new {
        return None;
    }
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let mut p = common_prefix(a, b);
    while !old.is_char_boundary(p) || !new.is_char_boundary(p) {
        p -= 1;
    }
    let max = a.len().min(b.len()) - p;
    let mut s = common_suffix(&a[a.len() - max..], &b[b.len() - max..]);
    while !old.is_char_boundary(a.len() - s) || !new.is_char_boundary(b.len() - s) {
        s -= 1;
    }
    Some((p, a.len() - s, b.len() - s))
}

/// The length of the common prefix of `a` and `b` (compared a block at a time: the texts
/// are whole files).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    i + a[i..n]
        .iter()
        .zip(&b[i..n])
        .take_while(|(x, y)| x == y)
        .count()
}

/// The length of the common suffix of `a` and `b`, which have the same length.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let n = a.len();
    let mut k = 0;
    while k + BLOCK <= n && a[n - k - BLOCK..n - k] == b[n - k - BLOCK..n - k] {
        k += BLOCK;
    }
    k + a[..n - k]
        .iter()
        .rev()
        .zip(b[..n - k].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// Characters an edit may not add or remove: they could change the markup (`<`, `>`, `]`
/// for `]]>`), an entity (`&`, `;`) or the line-end normalisation (`\r`).
fn touches_markup(s: &str) -> bool {
    s.contains(['<', '>', '&', ';', ']', '\r'])
}

/// Whether the edit from `old` to `new` may be one [`Incremental::edit`] accepts: a change
/// of character data (not inside a tag, no markup added or removed). Cheap: a caller asks
/// it before building an [`Incremental`] from a whole elaboration.
pub fn may_be_text_edit(old: &str, new: &str) -> bool {
    let Some((p, old_end, new_end)) = changed_range(old, new) else {
        return true;
    };
    !touches_markup(&old[p..old_end])
        && !touches_markup(&new[p..new_end])
        && old[..p]
            .rfind(['<', '>'])
            .is_none_or(|i| old.as_bytes()[i] == b'>')
}

impl Incremental {
    pub fn new(e: &Elaborated) -> Incremental {
        Incremental {
            diagnostics: e.diagnostics.clone(),
            checks: e.checks.clone(),
        }
    }

    /// Updates the diagnostics for the edit of file `file` from `old` to `new`, if the edit
    /// is confined to the character data of one checked expression or condition. Returns
    /// `false` (and leaves `self` as it was) otherwise; the caller must then run the full
    /// analysis.
    pub fn edit(&mut self, file: FileId, old: &str, new: &str) -> bool {
        let Some((p, old_end, new_end)) = changed_range(old, new) else {
            return true;
        };
        if touches_markup(&old[p..old_end]) || touches_markup(&new[p..new_end]) {
            return false;
        }
        let (Ok(p32), Ok(old_end32)) = (u32::try_from(p), u32::try_from(old_end)) else {
            return false;
        };
        // the edited text: a verbatim one holding the changed range
        let mut target = None;
        for c in &self.checks {
            for t in c.kind.texts() {
                if t.file != file {
                    continue;
                }
                if let Some((s, e)) = verbatim_range(t, old)
                    && s <= p32
                    && old_end32 <= e
                {
                    target = Some((s, e, t.text.clone()));
                    break;
                }
            }
            if target.is_some() {
                break;
            }
        }
        let Some((start, end, old_text)) = target else {
            return false;
        };
        let rel = (p - start as usize, old_end - start as usize);
        let new_text = format!(
            "{}{}{}",
            &old_text[..rel.0],
            &new[p..new_end],
            &old_text[rel.1..]
        );
        if old_text.trim().is_empty() || new_text.trim().is_empty() {
            return false;
        }
        let shift = Shift {
            file,
            start,
            end,
            delta: new.len() as i64 - old.len() as i64,
        };
        let is_target = |t: &MappedText| t.file == file && t.map.first() == Some(&(0, start));
        let replacement = MappedText::verbatim(new_text, file, start);
        // check first (nothing changes on a refusal): the checks are in order and disjoint,
        // every other text and span can be moved; re-run the checks of the edited text
        let mut fresh: Vec<(usize, CheckKind, Vec<Diagnostic>)> = Vec::new();
        let mut last_end = 0;
        for (i, c) in self.checks.iter().enumerate() {
            if c.diags.start < last_end || c.diags.end < c.diags.start {
                return false;
            }
            last_end = c.diags.end;
            let mut hit = false;
            for t in c.kind.texts() {
                if is_target(t) {
                    hit = true;
                } else if t.file == file && t.map.iter().any(|&(_, f)| shift.pos(f).is_none()) {
                    return false;
                }
            }
            if hit {
                let mut kind = c.kind.clone();
                for t in kind.texts_mut() {
                    if is_target(t) {
                        *t = replacement.clone();
                    } else if let Some(moved) = shift.text(t) {
                        *t = moved;
                    }
                }
                let ds = kind.run();
                fresh.push((i, kind, ds));
            }
        }
        if last_end > self.diagnostics.len() {
            return false;
        }
        let movable = |d: &Diagnostic| d.labels.iter().all(|l| shift.span(l.span).is_some());
        let mut next = 0;
        let mut fresh_at = fresh.iter().map(|(i, _, _)| *i).peekable();
        for (i, c) in self.checks.iter().enumerate() {
            let skip = fresh_at.peek() == Some(&i);
            if skip {
                fresh_at.next();
            }
            let outside = &self.diagnostics[next..c.diags.start];
            if !outside.iter().all(|(d, _)| movable(d))
                || (!skip
                    && !self.diagnostics[c.diags.clone()]
                        .iter()
                        .all(|(d, _)| movable(d)))
            {
                return false;
            }
            next = c.diags.end;
        }
        if !self.diagnostics[next..].iter().all(|(d, _)| movable(d)) {
            return false;
        }
        // then apply: move every text and span, splice the re-run checks' diagnostics in
        let old = std::mem::take(&mut self.diagnostics);
        let mut out = Vec::with_capacity(old.len());
        let moved = |range: Range<usize>, out: &mut Vec<(Diagnostic, Option<bool>)>| {
            for (d, o) in &old[range] {
                if let Some(d) = shift.diagnostic(d) {
                    out.push((d, *o));
                }
            }
        };
        let mut cursor = 0;
        let mut fresh = fresh.into_iter().peekable();
        for (i, c) in self.checks.iter_mut().enumerate() {
            moved(cursor..c.diags.start, &mut out);
            let from = out.len();
            cursor = c.diags.end;
            match fresh.next_if(|(j, _, _)| *j == i) {
                Some((_, kind, ds)) => {
                    c.kind = kind;
                    out.extend(ds.into_iter().map(|d| (d, None)));
                }
                None => {
                    for t in c.kind.texts_mut() {
                        if t.file == file {
                            for (_, f) in &mut t.map {
                                *f = shift.pos(*f).unwrap_or(*f);
                            }
                        }
                    }
                    moved(c.diags.clone(), &mut out);
                }
            }
            c.diags = from..out.len();
        }
        moved(cursor..old.len(), &mut out);
        self.diagnostics = out;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-at-a-time definition of the common prefix and suffix.
    fn naive(old: &str, new: &str) -> Option<(usize, usize, usize)> {
        if old == new {
            return None;
        }
        let (a, b) = (old.as_bytes(), new.as_bytes());
        let mut p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        while !old.is_char_boundary(p) || !new.is_char_boundary(p) {
            p -= 1;
        }
        let max = a.len().min(b.len()) - p;
        let mut s = a
            .iter()
            .rev()
            .zip(b.iter().rev())
            .take(max)
            .take_while(|(x, y)| x == y)
            .count();
        while !old.is_char_boundary(a.len() - s) || !new.is_char_boundary(b.len() - s) {
            s -= 1;
        }
        Some((p, a.len() - s, b.len() - s))
    }

    /// Blocks of the long texts and the edges between them give the byte-wise ranges.
    #[test]
    fn changed_range_is_the_bytewise_one() {
        let base: String = (0..3000)
            .map(|i| format!("<p n=\"{i}\">é{i}</p>\n"))
            .collect();
        let mut cases = vec![(base.clone(), base.clone())];
        for at in [0, 1, 255, 256, 257, 4096, base.len() / 2, base.len() - 1] {
            let at = (0..=at).rev().find(|&k| base.is_char_boundary(k)).unwrap();
            let mut inserted = base.clone();
            inserted.insert_str(at, "xé");
            let mut removed = base.clone();
            removed.remove(at);
            let mut replaced = base.clone();
            replaced.replace_range(at..at + base[at..].chars().next().unwrap().len_utf8(), "y");
            cases.push((base.clone(), inserted.clone()));
            cases.push((inserted, base.clone()));
            cases.push((base.clone(), removed));
            cases.push((base.clone(), replaced));
        }
        cases.push((base.clone(), format!("{base}{base}")));
        cases.push((String::new(), base.clone()));
        for (old, new) in &cases {
            assert_eq!(changed_range(old, new), naive(old, new));
        }
    }
}
