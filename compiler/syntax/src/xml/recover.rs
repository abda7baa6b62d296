//! Error recovery for malformed XML: a text roxmltree rejects is repaired into one it accepts,
//! so that a half-typed tag keeps the rest of the tree (the language server's outline and
//! completion go on working while the user types).
//!
//! One forward scan (iterative, no recursion), with a stack of the open elements, finds the
//! damage and repairs it in place:
//! - a start tag that does not end (`<tran`, `<place name="x" type=`, an unclosed attribute
//!   value, a missing `>`): its complete attributes are kept as an empty element
//!   (`<place name="x"/>`), or, without one, the tag is blanked; the root's start tag, or one
//!   whose closing tag follows its content, is kept as a start tag (`<defun name="x">`); the
//!   scan resumes at the next `<`;
//! - a closing tag of an element further down the stack closes the elements above it
//!   implicitly; a closing tag of no open element is blanked; a half-typed closing tag
//!   (`</expr`) closes the element it names (or, being a prefix of it, the innermost one);
//! - elements still open at the end of the file are closed there, an element that never
//!   nests in itself (`transition`, `place`, ...) before its next start tag;
//! - a stray `<` or `&` in character data becomes `&lt;` / `&amp;`;
//! - an unclosed CDATA section ends before the closing tag of its element; an unclosed
//!   comment or processing instruction ends with its line;
//! - a duplicate attribute, text or a second element outside the root, a DTD are blanked.
//!
//! Blanked bytes become spaces (line ends kept), so offsets do not move; inserted text
//! (`/>`, closing tags, entity names) is recorded so that offsets of the repaired text map
//! back to the file ([`Repaired::orig`]). Every repair gives an `xml_syntax` error at the
//! damage. Only a text roxmltree rejects is repaired: well-formed files parse as before.

use crate::{Diagnostic, FileId, Span};

/// A repaired text and the way back to the file's offsets.
pub(super) struct Repaired {
    pub(super) text: String,
    /// Insertions as `(offset in the repaired text, length, total length inserted before)`,
    /// sorted by offset.
    inserts: Vec<(usize, usize, usize)>,
    /// The blanked ranges of the file, sorted.
    blanks: Vec<(usize, usize)>,
    /// The file offsets of broken start tags kept as elements, sorted.
    broken: Vec<usize>,
    pub(super) diags: Vec<Diagnostic>,
}

impl Repaired {
    /// Whether a broken start tag (reported) kept as an element starts at the file offset:
    /// its missing attributes are no news.
    pub(super) fn broken_tag(&self, off: usize) -> bool {
        self.broken.binary_search(&off).is_ok()
    }

    /// Whether the file offset lies in a blanked range (so that texts can leave it out).
    pub(super) fn blanked(&self, off: usize) -> bool {
        let k = self.blanks.partition_point(|&(start, _)| start <= off);
        k > 0 && off < self.blanks[k - 1].1
    }

    /// The file offset of an offset of the repaired text (an offset inside inserted text maps
    /// to where it was inserted).
    pub(super) fn orig(&self, off: usize) -> usize {
        let k = self.inserts.partition_point(|&(at, _, _)| at <= off);
        if k == 0 {
            return off;
        }
        let (at, len, before) = self.inserts[k - 1];
        if off < at + len {
            at - before
        } else {
            off - before - len
        }
    }
}

/// Repairs `src`; `None` when the scan finds nothing to repair.
pub(super) fn repair(file: FileId, src: &str) -> Option<Repaired> {
    let mut f = Fixer {
        file,
        src,
        b: src.as_bytes(),
        out: src.as_bytes().to_vec(),
        ins: Vec::new(),
        blanks: Vec::new(),
        broken: Vec::new(),
        diags: Vec::new(),
        stack: Vec::new(),
        root_done: false,
        after_root_reported: false,
    };
    f.run();
    if f.diags.is_empty() {
        return None;
    }
    // Merge the blanked bytes and the insertions.
    let mut bytes =
        Vec::with_capacity(f.out.len() + f.ins.iter().map(|i| i.1.len()).sum::<usize>());
    let mut inserts = Vec::with_capacity(f.ins.len());
    let mut from = 0;
    let mut before = 0;
    for (at, s) in &f.ins {
        bytes.extend_from_slice(&f.out[from..*at]);
        from = *at;
        inserts.push((bytes.len(), s.len(), before));
        before += s.len();
        bytes.extend_from_slice(s.as_bytes());
    }
    bytes.extend_from_slice(&f.out[from..]);
    let text = String::from_utf8(bytes).ok()?;
    f.blanks.sort_unstable();
    Some(Repaired {
        text,
        inserts,
        blanks: f.blanks,
        broken: f.broken,
        diags: f.diags,
    })
}

struct Open {
    name: String,
    /// The span of the name in the start tag.
    start: usize,
    end: usize,
}

struct Fixer<'s> {
    file: FileId,
    src: &'s str,
    b: &'s [u8],
    /// The file's bytes with blanked ranges.
    out: Vec<u8>,
    /// Insertions at file offsets, in order.
    ins: Vec<(usize, String)>,
    blanks: Vec<(usize, usize)>,
    /// Start offsets of broken start tags kept as elements, in order.
    broken: Vec<usize>,
    diags: Vec<Diagnostic>,
    stack: Vec<Open>,
    /// The root element was closed: whatever follows but comments and PIs is blanked.
    root_done: bool,
    after_root_reported: bool,
}

/// How a start tag ends.
enum TagEnd {
    Open(usize),
    Empty(usize),
    /// Damage at the offset, with a message.
    Broken(usize, &'static str),
}

/// Elements of xpnet that never contain themselves: a second start tag in an open one (not
/// the root) closes it.
const NEVER_NESTED: &[&str] = &[
    "code",
    "condition",
    "connect-eureka",
    "connect-in",
    "connect-inout",
    "connect-number-of-tokens",
    "connect-out",
    "connect-out-many",
    "connect-read",
    "connect-response",
    "defun",
    "expression",
    "in",
    "inout",
    "module",
    "net",
    "out",
    "place",
    "place-map",
    "property",
    "require",
    "specialize",
    "template",
    "token",
    "transition",
    "tunnel",
    "value",
];

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

/// A name character but `:` (names are `name` or `prefix:name`).
fn is_name_char(c: u8) -> bool {
    is_name_start(c) || c.is_ascii_digit() || c == b'-' || c == b'.'
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

impl Fixer<'_> {
    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start as u32, end as u32)
    }

    fn damage(&mut self, start: usize, end: usize, msg: String, label: &str) {
        // Trailing whitespace is no part of the damage.
        let mut end = end.max(start);
        while end > start && is_space(self.b[end - 1]) {
            end -= 1;
        }
        let span = self.span(start, end);
        self.diags.push(
            Diagnostic::error("xml_syntax", format!("malformed XML: {msg}"))
                .with_primary(span, label),
        );
    }

    fn blank(&mut self, start: usize, end: usize) {
        if start < end {
            self.blanks.push((start, end));
        }
        for c in &mut self.out[start..end] {
            if !matches!(*c, b'\n' | b'\r') {
                *c = b' ';
            }
        }
    }

    fn insert(&mut self, at: usize, s: String) {
        debug_assert!(self.ins.last().is_none_or(|&(last, _)| last <= at));
        self.ins.push((at, s));
    }

    fn find(&self, from: usize, pat: &str) -> Option<usize> {
        self.src.get(from..)?.find(pat).map(|i| from + i)
    }

    /// The end of the line of `from` (before its `\n`), or the end of the file.
    fn line_end(&self, from: usize) -> usize {
        self.b[from..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(self.b.len(), |p| from + p)
    }

    /// The next `<` at or after `from`, or the end of the file.
    fn next_lt(&self, from: usize) -> usize {
        let from = from.min(self.b.len());
        self.b[from..]
            .iter()
            .position(|&c| c == b'<')
            .map_or(self.b.len(), |p| from + p)
    }

    /// The end of the name at `i` (`i` if none): `name` or `prefix:name`.
    fn name_end(&self, i: usize) -> usize {
        let ncname = |mut j: usize| {
            if j < self.b.len() && is_name_start(self.b[j]) {
                while j < self.b.len() && is_name_char(self.b[j]) {
                    j += 1;
                }
            }
            j
        };
        let e = ncname(i);
        if e > i && self.b.get(e) == Some(&b':') {
            let e2 = ncname(e + 1);
            if e2 > e + 1 {
                return e2;
            }
        }
        e
    }

    /// Whether an element name starts at `i`: a name not followed by `:`, its prefix (if
    /// any) declared somewhere in the file.
    fn element_name_at(&self, i: usize) -> bool {
        let e = self.name_end(i);
        if e == i || self.b.get(e) == Some(&b':') {
            return false;
        }
        match self.src[i..e].split_once(':') {
            Some((prefix, _)) => self.src.contains(&format!("xmlns:{prefix}")),
            None => true,
        }
    }

    fn skip_space(&self, mut i: usize) -> usize {
        while i < self.b.len() && is_space(self.b[i]) {
            i += 1;
        }
        i
    }

    /// Whether a well-formed entity or character reference starts at `i` (a `&`); its end.
    fn reference_end(&self, i: usize) -> Option<usize> {
        let rest = &self.b[i + 1..];
        let semi = rest.iter().take(12).position(|&c| c == b';')?;
        let name = std::str::from_utf8(&rest[..semi]).ok()?;
        let ok = match name {
            "lt" | "gt" | "amp" | "quot" | "apos" => true,
            _ => {
                let n = if let Some(h) = name.strip_prefix("#x") {
                    u32::from_str_radix(h, 16).ok()
                } else if let Some(d) = name.strip_prefix('#') {
                    d.parse().ok()
                } else {
                    None
                };
                n.and_then(char::from_u32).is_some_and(|c| {
                    matches!(c, '\t' | '\n' | '\r')
                        || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
                })
            }
        };
        ok.then_some(i + 1 + semi + 1)
    }

    /// The message for a `&` at `i` that starts no known reference.
    fn stray_amp(&self, i: usize) -> String {
        let end = self.name_end(i + 1);
        if end > i + 1 && self.b.get(end) == Some(&b';') {
            format!(
                "an unknown entity reference `{}` (write `&amp;` for `&`)",
                &self.src[i..=end]
            )
        } else {
            "a stray `&` (write `&amp;`)".into()
        }
    }

    fn run(&mut self) {
        let n = self.b.len();
        let mut i = 0;
        while i < n {
            let c = self.b[i];
            if c == b'<' {
                i = self.markup(i);
            } else if self.stack.is_empty() {
                // Outside the root: only whitespace is allowed.
                if is_space(c) {
                    i += 1;
                    continue;
                }
                if self.src[i..].starts_with("!--") {
                    // A comment without its `<`.
                    let end = self.find(i + 3, "-->").map_or(n, |e| e + 3);
                    self.damage(i, end, "a comment without `<`".into(), "ignored");
                    self.blank(i, end);
                    i = end;
                    continue;
                }
                let end = self.next_lt(i);
                if !self.root_done && self.element_name_at(i) && self.b[i..end].contains(&b'>') {
                    // Before the root, `name ...>`: the root's start tag without its `<`.
                    self.damage(
                        i,
                        i,
                        "a start tag without `<`".into(),
                        "read as a start tag",
                    );
                    self.insert(i, "<".into());
                    i = self.start_tag(i, i);
                    continue;
                }
                self.outside_root(i, end, "text outside the root element");
                i = end;
            } else if c == b'&' {
                match self.reference_end(i) {
                    Some(e) => i = e,
                    None => {
                        let msg = self.stray_amp(i);
                        self.damage(i, i + 1, msg, "read as `&`");
                        self.insert(i + 1, "amp;".into());
                        i += 1;
                    }
                }
            } else if c == b']' && self.src[i..].starts_with("]]>") {
                // `]]>` is not allowed in character data: its `>` becomes `&gt;`.
                self.damage(
                    i,
                    i + 3,
                    "`]]>` outside a CDATA section".into(),
                    "read as text",
                );
                self.out[i + 2] = b'&';
                self.insert(i + 3, "gt;".into());
                i += 3;
            } else {
                i += 1;
            }
        }
        // Elements still open at the end of the file are closed there.
        while let Some(o) = self.stack.pop() {
            let msg = format!("`<{}>` is never closed", o.name);
            self.damage(o.start, o.end, msg, "closed at the end of the file");
            self.insert(n, format!("</{}>", o.name));
        }
    }

    /// Blanks `start..end` outside the root; reported once after the root.
    fn outside_root(&mut self, start: usize, end: usize, msg: &str) {
        if !self.root_done || !self.after_root_reported {
            let msg = if self.root_done {
                "content after the root element"
            } else {
                msg
            };
            self.damage(start, end, msg.into(), "ignored");
            self.after_root_reported |= self.root_done;
        }
        self.blank(start, end);
    }

    /// Markup at `i` (a `<`); returns where the scan goes on.
    fn markup(&mut self, i: usize) -> usize {
        let n = self.b.len();
        let rest = &self.src[i..];
        if rest.starts_with("<!--") {
            return match self.find(i + 4, "--") {
                Some(e) if self.b.get(e + 2) == Some(&b'>') => e + 3,
                Some(e) => {
                    // A `--` ends a comment: the `>` is missing.
                    self.damage(i, e + 2, "a comment's `--` without `>`".into(), "ignored");
                    self.blank(i, e + 2);
                    e + 2
                }
                None => {
                    // Being typed: it ends with its line.
                    let end = self.line_end(i);
                    self.damage(i, end, "an unclosed comment".into(), "ignored");
                    self.blank(i, end);
                    end
                }
            };
        }
        if rest.starts_with("<?") {
            return match self.find(i + 2, "?>") {
                Some(e) => e + 2,
                None => {
                    let end = self.line_end(i);
                    let msg = "an unclosed processing instruction".into();
                    self.damage(i, end, msg, "ignored");
                    self.blank(i, end);
                    end
                }
            };
        }
        if rest.starts_with("<![CDATA[") {
            let end = match self.find(i + 9, "]]>") {
                Some(e) => e + 3,
                None => {
                    // Being typed: it ends before the closing tag of its element.
                    let close = self
                        .stack
                        .last()
                        .and_then(|o| self.find(i + 9, &format!("</{}", o.name)));
                    let msg = "an unclosed CDATA section".into();
                    return match close {
                        Some(p) => {
                            self.damage(i, i + 9, msg, "closed before the closing tag");
                            self.insert(p, "]]>".into());
                            p
                        }
                        None => {
                            self.damage(i, n, msg, "ignored");
                            self.blank(i, n);
                            n
                        }
                    };
                }
            };
            if self.stack.is_empty() {
                self.outside_root(i, end, "a CDATA section outside the root element");
            }
            return end;
        }
        if rest.starts_with("<!") {
            // A DTD (`<!DOCTYPE ... [ ... ]>`) or other declaration.
            let gt = self.find(i, ">").unwrap_or(n);
            let bracket = self.src[i..gt].find('[');
            let end = match bracket {
                Some(_) => self.find(i, "]>").map_or(n, |p| p + 2),
                None => (gt + 1).min(n),
            };
            self.damage(
                i,
                end,
                "a document type declaration is not supported".into(),
                "ignored",
            );
            self.blank(i, end);
            return end;
        }
        if rest.starts_with("</") {
            return self.close_tag(i);
        }
        if self.element_name_at(i + 1) {
            return self.start_tag(i, i + 1);
        }
        // A stray `<`.
        if self.stack.is_empty() {
            self.outside_root(i, i + 1, "a stray `<` outside the root element");
        } else {
            self.damage(i, i + 1, "a stray `<` (write `&lt;`)".into(), "read as `<`");
            self.out[i] = b'&';
            self.insert(i + 1, "lt;".into());
        }
        i + 1
    }

    /// A start tag at `i` whose name starts at `ns` (`i + 1`, or `i` when its `<` is missing).
    fn start_tag(&mut self, i: usize, ns: usize) -> usize {
        let n = self.b.len();
        if self.stack.is_empty() && self.root_done {
            let end = self.next_lt(i + 1);
            self.outside_root(i, end, "a second root element");
            return end;
        }
        let ne = self.name_end(ns);
        // `<transition>` in an open `<transition>`: the first one's closing tag is missing.
        if self.stack.len() > 1
            && let Some(top) = self.stack.last()
            && top.name.as_bytes() == &self.b[ns..ne]
            && NEVER_NESTED.contains(&top.name.as_str())
        {
            let o = self.stack.pop().expect("a top");
            let msg = format!("`<{0}>` is not closed before the next `<{0}>`", o.name);
            self.damage(o.start, o.end, msg, "closed implicitly");
            self.insert(i, format!("</{}>", o.name));
        }
        let mut j = ne;
        let mut good = ne;
        let mut seen: Vec<&[u8]> = Vec::new();
        let end = loop {
            let ws = j;
            j = self.skip_space(j);
            if j >= n {
                break TagEnd::Broken(j, "a start tag without `>`");
            }
            match self.b[j] {
                b'>' => break TagEnd::Open(j + 1),
                b'/' if self.b.get(j + 1) == Some(&b'>') => break TagEnd::Empty(j + 2),
                c if is_name_start(c) && j > ws => {
                    let (a_start, a_end) = (j, self.name_end(j));
                    j = self.skip_space(a_end);
                    if self.b.get(j) != Some(&b'=') {
                        break TagEnd::Broken(j, "an attribute without `=`");
                    }
                    j = self.skip_space(j + 1);
                    let q = match self.b.get(j) {
                        Some(&q @ (b'"' | b'\'')) => q,
                        _ => break TagEnd::Broken(j, "an attribute without a quoted value"),
                    };
                    // The value: up to the quote; a `<` first means the quote is missing.
                    let mut fixes = Vec::new();
                    let mut k = j + 1;
                    let closed = loop {
                        match self.b.get(k) {
                            None | Some(b'<') => break false,
                            Some(&c) if c == q => break true,
                            Some(b'&') => match self.reference_end(k) {
                                Some(e) => k = e,
                                None => {
                                    fixes.push(k + 1);
                                    k += 1;
                                }
                            },
                            Some(_) => k += 1,
                        }
                    };
                    if !closed {
                        break TagEnd::Broken(k, "an unclosed attribute value");
                    }
                    j = k + 1;
                    let name = &self.b[a_start..a_end];
                    if seen.contains(&name) {
                        let msg = format!("a second attribute `{}`", &self.src[a_start..a_end]);
                        self.damage(a_start, j, msg, "ignored");
                        self.blank(a_start, j);
                    } else {
                        seen.push(name);
                        for at in fixes {
                            let msg = self.stray_amp(at - 1);
                            self.damage(at - 1, at, msg, "read as `&`");
                            self.insert(at, "amp;".into());
                        }
                    }
                    good = j;
                }
                b'<' => break TagEnd::Broken(j, "a start tag without `>`"),
                b'/' => break TagEnd::Broken(j, "a `/` without `>`"),
                _ => break TagEnd::Broken(j, "an unexpected character in a start tag"),
            }
        };
        let name = self.src[ns..ne].to_string();
        match end {
            TagEnd::Open(e) => {
                self.stack.push(Open {
                    name,
                    start: ns,
                    end: ne,
                });
                e
            }
            TagEnd::Empty(e) => {
                self.root_done |= self.stack.is_empty();
                e
            }
            TagEnd::Broken(f, what) => {
                let resume = self.next_lt(f);
                if self.stack.is_empty() {
                    // The root: what follows is its content.
                    let msg = format!("{what} in `<{name}`");
                    self.damage(i, resume, msg, "read as a start tag");
                    self.blank(good, resume);
                    self.insert(good, ">".into());
                    self.broken.push(i);
                    self.stack.push(Open {
                        name,
                        start: ns,
                        end: ne,
                    });
                } else if self.closed_later(resume, &name) {
                    // `<transition name="t"` + its content + `</transition>`: a start tag.
                    let msg = format!("{what} in `<{name}`");
                    self.damage(i, resume, msg, "read as a start tag");
                    self.blank(good, resume);
                    self.insert(good, ">".into());
                    self.broken.push(i);
                    self.stack.push(Open {
                        name,
                        start: ns,
                        end: ne,
                    });
                } else if good > ne {
                    // Keep the complete attributes as an empty element.
                    let msg = format!("{what} in `<{name}`");
                    self.damage(i, resume, msg, "read as an empty element");
                    self.blank(good, resume);
                    self.insert(good, "/>".into());
                    self.broken.push(i);
                } else {
                    let msg = format!("{what} in `<{name}`");
                    self.damage(i, resume, msg, "ignored");
                    self.blank(i, resume);
                }
                resume
            }
        }
    }

    /// Whether the content from `from` on (balanced elements) is followed by `</name>`,
    /// before a sibling `<name` or the parent's closing tag (looking at most 256 KiB ahead).
    fn closed_later(&self, from: usize, name: &str) -> bool {
        let limit = from.saturating_add(1 << 18).min(self.b.len());
        let mut depth = 0usize;
        let mut j = from;
        while j < limit {
            let p = self.next_lt(j);
            if p >= limit {
                break;
            }
            let rest = &self.src[p..];
            let skip = |open: &str, close: &str| {
                rest.starts_with(open).then(|| {
                    self.find(p + open.len(), close)
                        .map_or(limit, |e| e + close.len())
                })
            };
            if let Some(e) = skip("<!--", "-->")
                .or_else(|| skip("<![CDATA[", "]]>"))
                .or_else(|| skip("<?", "?>"))
            {
                j = e;
            } else if rest.starts_with("</") {
                let ne = self.name_end(p + 2);
                if depth == 0 {
                    return &self.src[p + 2..ne] == name;
                }
                depth -= 1;
                j = ne;
            } else if self.element_name_at(p + 1) {
                let ne = self.name_end(p + 1);
                if depth == 0 && &self.src[p + 1..ne] == name {
                    return false;
                }
                // The tag ends at its `>` (before the next `<`); `/>` is an empty element.
                let end = self.next_lt(ne);
                match self.b[ne..end].iter().position(|&c| c == b'>') {
                    Some(k) if self.b[ne + k - 1] == b'/' => {}
                    Some(_) => depth += 1,
                    None => {}
                }
                j = ne;
            } else {
                j = p + 1;
            }
        }
        false
    }

    fn close_tag(&mut self, i: usize) -> usize {
        let n = self.b.len();
        let ns = i + 2;
        let ne = self.name_end(ns);
        let j = self.skip_space(ne);
        let well_formed = ne > ns && self.b.get(j) == Some(&b'>');
        let end = if well_formed { j + 1 } else { self.next_lt(j) };
        let name = &self.src[ns..ne];
        if self.stack.is_empty() {
            let msg = format!("a closing tag `</{name}>` without an open element");
            if self.root_done {
                self.outside_root(i, end, &msg);
            } else {
                self.damage(i, end, msg, "ignored");
                self.blank(i, end);
            }
            return end;
        }
        let found = self.stack.iter().rposition(|o| o.name == name).or_else(|| {
            // A half-typed closing tag closes the innermost element if it starts its name.
            let top = self.stack.len() - 1;
            (!well_formed && !name.is_empty() && self.stack[top].name.starts_with(name))
                .then_some(top)
        });
        let Some(k) = found else {
            let top = &self.stack[self.stack.len() - 1].name;
            let msg = if well_formed {
                format!("a closing tag `</{name}>` in `<{top}>`, which it does not close")
            } else {
                format!("an unfinished closing tag `</{name}` in `<{top}>`")
            };
            self.damage(i, end, msg, "ignored");
            self.blank(i, end);
            return end;
        };
        while self.stack.len() > k + 1 {
            let o = self.stack.pop().expect("above k");
            let closer = &self.stack[k].name;
            let msg = format!("`<{}>` is not closed before `</{closer}>`", o.name);
            self.damage(o.start, o.end, msg, "closed implicitly");
            self.insert(i, format!("</{}>", o.name));
        }
        let o = self.stack.pop().expect("k is in the stack");
        if !well_formed {
            let msg = format!("an unfinished closing tag `</{name}`");
            self.damage(i, end.min(n), msg, "read as a closing tag");
            self.blank(i, end);
            self.insert(i, format!("</{}>", o.name));
        }
        self.root_done |= self.stack.is_empty();
        end
    }
}
