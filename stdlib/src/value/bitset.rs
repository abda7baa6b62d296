//! Bitsets (`bitset`, GPI-Space's `bitsetofint::type`): sets of unsigned longs, stored sparse.
//!
//! GPI-Space keeps a bitset as a dense `std::vector<uint64_t>` of words (element `i` is bit
//! `i % 64` of word `i / 64`): `bitset_insert ({}, 18446744073709551615UL)` allocates 2^58
//! words there. We keep the same *logical* words, the number of words included (so that
//! `bitset_delete ({ 1}, 0UL)` is `{ 0}` and `bitset_tohex` gives what GPI-Space gives), but
//! store only the nonzero ones, with their word index. Memory is proportional to the number of
//! nonzero words, whatever the elements: `{18446744073709551615}` takes a few bytes, also
//! serialized (see [`Bitset`]'s serde form).
//!
//! # Limits
//!
//! Every unsigned long (0 up to 2^64 - 1) can be an element, so a bitset has at most
//! 2^58 words (word indices up to [`MAX_WORD_INDEX`] = 2^58 - 1). What still errors: a literal
//! or `bitset_fromhex` text with a word beyond that (a 2^58 + 1st word, or `@i` with
//! `i` > 2^58: see below); nothing else does.
//!
//! # Printing huge bitsets (our extension)
//!
//! GPI-Space prints every word, trailing zero words included (`{ 1 0}`,
//! `0x/0000000000000001/0000000000000000/`). We do the same while the set has at most
//! [`DENSE_PRINT_WORDS`] (2^16) words. Beyond that, printing every word would take memory
//! proportional to the largest element, so runs of zero words are skipped with a *word
//! index*:
//! - literal syntax: `@i` (decimal, or `0x` hex when read) means "the next word is word `i`",
//!   so `{ 1 @288230376151711743 9223372036854775808}` is `{0, 2^64 - 1}`; words of the set
//!   after the last nonzero one print as `@i 0` for the last word `i`
//!   (`{ 1 @99999 0}`: word 0 is 1, 100000 words);
//! - `bitset_tohex`: a `/`-separated part `@` and the word index in hex (no `0x`):
//!   `0x/0000000000000001/@3ffffffffffffff/8000000000000000/`.
//!
//! [`crate::literal::parse_literal`] and `bitset_fromhex` read these forms back (an `@i` may
//! also appear in small sets; `i` must not be below the number of words before it, and an `@i`
//! at the very end makes the set `i` words long). GPI-Space reads neither.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};

/// The largest word index: the word of the element 2^64 - 1.
pub const MAX_WORD_INDEX: u64 = u64::MAX / 64;

/// The most words a bitset prints in full, as GPI-Space prints it; larger sets print in the
/// sparse form (see the module documentation).
pub const DENSE_PRINT_WORDS: u64 = 1 << 16;

/// A set of unsigned longs: GPI-Space's words (least significant first, trailing zero words
/// kept), stored sparse (only the nonzero words, with their index).
///
/// Equality and ordering ignore the zero words (so trailing zero words too): bitsets order as
/// the unsigned numbers they represent. Printing (`Display`, `{ 4096}`) shows every word while
/// the set has at most [`DENSE_PRINT_WORDS`] words, and skips runs of zero words beyond (see
/// the module documentation, which also states the limits).
///
/// Serde form: `{len, words}` where `len` is the number of words and `words` the nonzero words
/// as `(gap, word)` pairs, `gap` being the number of zero words before it (since the previous
/// nonzero word): compact with postcard's varints (`{2^64 - 1}` takes 29 bytes).
#[derive(Clone, Debug, Default)]
pub struct Bitset {
    /// The number of words (GPI-Space's vector size): at most `MAX_WORD_INDEX + 1`.
    len: u64,
    /// The nonzero words, by increasing word index, every index below `len`.
    words: Box<[(u64, u64)]>,
}

/// Why a bitset could not be built: a word beyond [`MAX_WORD_INDEX`], or an `@i` going back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitsetError(pub String);

impl fmt::Display for BitsetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BitsetError {}

/// Builds a bitset word by word (literals, `bitset_fromhex`, serde).
#[derive(Debug, Default)]
pub struct BitsetBuilder {
    len: u64,
    words: Vec<(u64, u64)>,
}

impl BitsetBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of words so far (the index of the next word).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no word was given yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends word `w` (at index [`Self::len`]).
    pub fn push(&mut self, w: u64) -> Result<(), BitsetError> {
        if self.len > MAX_WORD_INDEX {
            return Err(BitsetError(format!(
                "a bitset has at most {} words (elements up to {})",
                MAX_WORD_INDEX + 1,
                u64::MAX
            )));
        }
        if w != 0 {
            self.words.push((self.len, w));
        }
        self.len += 1;
        Ok(())
    }

    /// Skips to word `i` (the words in between are zero): the next word pushed is word `i`,
    /// and without one the set has `i` words. `i` may not be below [`Self::len`] nor above
    /// `MAX_WORD_INDEX + 1`.
    pub fn skip_to(&mut self, i: u64) -> Result<(), BitsetError> {
        if i < self.len {
            return Err(BitsetError(format!(
                "`@{i}` goes back (word {i} is already given)"
            )));
        }
        if i > MAX_WORD_INDEX + 1 {
            return Err(BitsetError(format!(
                "`@{i}` is beyond the largest word index {MAX_WORD_INDEX} (elements up to {})",
                u64::MAX
            )));
        }
        self.len = i;
        Ok(())
    }

    /// The bitset.
    pub fn finish(self) -> Bitset {
        Bitset {
            len: self.len,
            words: self.words.into_boxed_slice(),
        }
    }
}

impl Bitset {
    /// The empty set, `{}`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A bitset of GPI-Space's (dense) words, least significant first: `from_words([4096])` is
    /// `{ 4096}`. Panics beyond 2^58 words (which would not fit in memory anyway).
    pub fn from_words(words: impl IntoIterator<Item = u64>) -> Self {
        let mut b = BitsetBuilder::new();
        for w in words {
            b.push(w).expect("at most 2^58 words");
        }
        b.finish()
    }

    /// The set of these elements (in any order, repeats allowed), with as many words as its
    /// largest element needs (as `bitset_insert` makes them).
    pub fn from_elements(elements: impl IntoIterator<Item = u64>) -> Self {
        let mut elements: Vec<u64> = elements.into_iter().collect();
        elements.sort_unstable();
        let mut words: Vec<(u64, u64)> = Vec::new();
        for e in elements {
            let (w, bit) = (e / 64, 1u64 << (e % 64));
            match words.last_mut() {
                Some((j, word)) if *j == w => *word |= bit,
                _ => words.push((w, bit)),
            }
        }
        Bitset {
            len: words.last().map_or(0, |&(j, _)| j + 1),
            words: words.into_boxed_slice(),
        }
    }

    /// The number of words (trailing zero words included), as GPI-Space's vector has them.
    pub fn word_len(&self) -> u64 {
        self.len
    }

    /// The nonzero words as `(word index, word)`, by increasing index.
    pub fn nonzero_words(&self) -> &[(u64, u64)] {
        &self.words
    }

    /// Word `i` (zero beyond the words).
    pub fn word(&self, i: u64) -> u64 {
        self.position(i).map_or(0, |p| self.words[p].1)
    }

    /// All [`Self::word_len`] words, zero ones included (as many as GPI-Space stores: callers
    /// check [`Self::word_len`] first for sets with large elements).
    pub fn dense_words(&self) -> impl Iterator<Item = u64> + '_ {
        let mut next = self.words.iter().peekable();
        (0..self.len).map(move |i| match next.peek() {
            Some(&&(j, w)) if j == i => {
                next.next();
                w
            }
            _ => 0,
        })
    }

    /// The elements, in increasing order.
    pub fn elements(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().flat_map(|&(i, w)| {
            (0..64u64)
                .filter(move |b| w & (1u64 << b) != 0)
                .map(move |b| i * 64 + b)
        })
    }

    /// Whether `i` is an element (`bitset_is_element`).
    pub fn contains(&self, i: u64) -> bool {
        self.word(i / 64) & (1u64 << (i % 64)) != 0
    }

    /// The number of elements (`bitset_count`).
    pub fn count(&self) -> u64 {
        self.words
            .iter()
            .map(|(_, w)| u64::from(w.count_ones()))
            .sum()
    }

    /// Whether the set has no element.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The position of word `i` among the nonzero words.
    fn position(&self, i: u64) -> Option<usize> {
        self.words.binary_search_by_key(&i, |&(j, _)| j).ok()
    }

    /// This set with `i` inserted (`bitset_insert`): as in GPI-Space, the set grows to the
    /// word of `i` if it is shorter.
    pub fn inserted(&self, i: u64) -> Bitset {
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        let mut words = self.words.to_vec();
        match words.binary_search_by_key(&w, |&(j, _)| j) {
            Ok(p) => words[p].1 |= bit,
            Err(p) => words.insert(p, (w, bit)),
        }
        Bitset {
            len: self.len.max(w + 1),
            words: words.into_boxed_slice(),
        }
    }

    /// This set without `i` (`bitset_delete`): as in GPI-Space, the number of words stays.
    pub fn deleted(&self, i: u64) -> Bitset {
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        let mut words = self.words.to_vec();
        if let Ok(p) = words.binary_search_by_key(&w, |&(j, _)| j) {
            words[p].1 &= !bit;
            if words[p].1 == 0 {
                words.remove(p);
            }
        }
        Bitset {
            len: self.len,
            words: words.into_boxed_slice(),
        }
    }

    /// The union (`bitset_or`), as long as the longer set.
    pub fn or(&self, other: &Bitset) -> Bitset {
        self.merge(other, self.len.max(other.len), true, |a, b| a | b)
    }

    /// The symmetric difference (`bitset_xor`), as long as the longer set.
    pub fn xor(&self, other: &Bitset) -> Bitset {
        self.merge(other, self.len.max(other.len), true, |a, b| a ^ b)
    }

    /// The intersection (`bitset_and`), as long as the shorter set (as in GPI-Space).
    pub fn and(&self, other: &Bitset) -> Bitset {
        self.merge(other, self.len.min(other.len), false, |a, b| a & b)
    }

    /// Combines the words of both sets with `f` (a word missing from one set is zero there:
    /// when `either`, words present in only one set are combined with zero, otherwise they
    /// are left out), keeping the nonzero results.
    fn merge(&self, other: &Bitset, len: u64, either: bool, f: impl Fn(u64, u64) -> u64) -> Bitset {
        let (a, b) = (&self.words, &other.words);
        let mut out = Vec::with_capacity(if either {
            a.len() + b.len()
        } else {
            a.len().min(b.len())
        });
        let (mut i, mut j) = (0, 0);
        let mut keep = |k: u64, w: u64| {
            if w != 0 {
                out.push((k, w));
            }
        };
        while i < a.len() || j < b.len() {
            match (a.get(i), b.get(j)) {
                (Some(&(ka, wa)), Some(&(kb, wb))) if ka == kb => {
                    keep(ka, f(wa, wb));
                    i += 1;
                    j += 1;
                }
                (Some(&(ka, wa)), Some(&(kb, _))) if ka < kb => {
                    if either {
                        keep(ka, f(wa, 0));
                    }
                    i += 1;
                }
                (Some(&(ka, wa)), None) => {
                    if either {
                        keep(ka, f(wa, 0));
                    }
                    i += 1;
                }
                (_, Some(&(kb, wb))) => {
                    if either {
                        keep(kb, f(0, wb));
                    }
                    j += 1;
                }
                (None, None) => break,
            }
        }
        Bitset {
            len,
            words: out.into_boxed_slice(),
        }
    }

    /// Whether the set prints every word (it has at most [`DENSE_PRINT_WORDS`] words).
    pub fn prints_dense(&self) -> bool {
        self.len <= DENSE_PRINT_WORDS
    }

    /// The printed words, `@i` skips included (see the module documentation): each is
    /// [`Token::Word`] or [`Token::Skip`].
    pub fn tokens(&self) -> impl Iterator<Item = Token> + '_ {
        let dense = self.prints_dense();
        let all = dense.then(|| self.dense_words().map(Token::Word));
        let sparse = (!dense).then(|| {
            let mut next = 0u64;
            let tail = (self.words.last().map_or(0, |&(i, _)| i + 1) < self.len)
                .then(|| [Token::Skip(self.len - 1), Token::Word(0)]);
            self.words
                .iter()
                .flat_map(move |&(i, w)| {
                    let skip = (i > next).then_some(Token::Skip(i));
                    next = i + 1;
                    skip.into_iter().chain([Token::Word(w)])
                })
                .chain(tail.into_iter().flatten())
        });
        all.into_iter()
            .flatten()
            .chain(sparse.into_iter().flatten())
    }

    /// Writes the words in literal syntax, each after a space when `space_first`, else
    /// separated by spaces: ` 1 2` or `1 2` (the braces are the caller's).
    pub fn write_words(&self, out: &mut impl fmt::Write, space_first: bool) -> fmt::Result {
        for (k, t) in self.tokens().enumerate() {
            if space_first || k > 0 {
                out.write_char(' ')?;
            }
            match t {
                Token::Word(w) => write!(out, "{w}")?,
                Token::Skip(i) => write!(out, "@{i}")?,
            }
        }
        Ok(())
    }

    /// `bitset_tohex`: `0x/`, then each word as 16 hex digits followed by `/` (a set of more
    /// than [`DENSE_PRINT_WORDS`] words writes `@` and a word index in hex instead of a run of
    /// zero words: see the module documentation).
    pub fn to_hex(&self) -> String {
        let n = if self.prints_dense() {
            self.len as usize
        } else {
            2 * self.words.len() + 2
        };
        let mut s = String::with_capacity(3 + 17 * n);
        s.push_str("0x/");
        for t in self.tokens() {
            let _ = match t {
                Token::Word(w) => fmt::Write::write_fmt(&mut s, format_args!("{w:016x}/")),
                Token::Skip(i) => fmt::Write::write_fmt(&mut s, format_args!("@{i:x}/")),
            };
        }
        s
    }

    /// `bitset_fromhex`: reads `0x`, then zero or more parts each `/` and 1 to 16 hex digits
    /// (a word, either case; `bitset_tohex` writes 16) or `@` and 1 to 16 hex digits (a skip
    /// to that word index: our extension), lowest word first; the trailing `/` is optional
    /// (`"0x"` and `"0x/"` are the empty set), as GPI-Space reads it.
    pub fn from_hex(s: &str) -> Result<Bitset, BitsetError> {
        let malformed = || BitsetError(format!("malformed input {s:?}"));
        let rest = s.strip_prefix("0x").ok_or_else(malformed)?;
        let mut b = BitsetBuilder::new();
        if rest.is_empty() {
            return Ok(b.finish());
        }
        let body = rest.strip_prefix('/').ok_or_else(malformed)?;
        if body.is_empty() {
            return Ok(b.finish());
        }
        let body = body.strip_suffix('/').unwrap_or(body);
        for part in body.split('/') {
            let (skip, digits) = match part.strip_prefix('@') {
                Some(d) => (true, d),
                None => (false, part),
            };
            if digits.is_empty()
                || digits.len() > 16
                || !digits.bytes().all(|b| b.is_ascii_hexdigit())
            {
                return Err(malformed());
            }
            let n = u64::from_str_radix(digits, 16).map_err(|_| malformed())?;
            if skip {
                b.skip_to(n)?;
            } else {
                b.push(n)?;
            }
        }
        Ok(b.finish())
    }

    /// Checks the serde form's invariants (see [`Bitset`]).
    fn from_wire(w: Wire) -> Result<Bitset, BitsetError> {
        if w.len > MAX_WORD_INDEX + 1 {
            return Err(BitsetError(format!("a bitset of {} words", w.len)));
        }
        let mut next = 0u64;
        let mut words = Vec::with_capacity(w.words.len());
        for (gap, word) in w.words {
            let i = next
                .checked_add(gap)
                .filter(|i| *i < w.len)
                .ok_or_else(|| BitsetError("a bitset word beyond its length".into()))?;
            if word == 0 {
                return Err(BitsetError(
                    "a zero word among a bitset's nonzero words".into(),
                ));
            }
            words.push((i, word));
            next = i + 1;
        }
        Ok(Bitset {
            len: w.len,
            words: words.into_boxed_slice(),
        })
    }
}

/// A printed item of a bitset: a word, or a skip to a word index (`@i`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
    Word(u64),
    Skip(u64),
}

impl fmt::Display for Bitset {
    /// Literal syntax, as GPI-Space prints it: `{ 4096}`, `{}` (with `@i` skips beyond
    /// [`DENSE_PRINT_WORDS`] words).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        self.write_words(f, true)?;
        f.write_str("}")
    }
}

impl PartialEq for Bitset {
    fn eq(&self, other: &Self) -> bool {
        self.words == other.words
    }
}

impl Eq for Bitset {}

impl PartialOrd for Bitset {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bitset {
    /// Bitsets order as the unsigned numbers they represent (zero words ignored): from the
    /// highest nonzero word down, a higher word index wins (the other set has a zero word
    /// there), then the larger word, then the set with more nonzero words below.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.words.iter().rev().cmp(other.words.iter().rev())
    }
}

impl std::hash::Hash for Bitset {
    /// Consistent with `Eq`: the nonzero words only.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.words.hash(state);
    }
}

/// The serde form (see [`Bitset`]).
#[derive(Deserialize)]
#[serde(rename = "Bitset")]
struct Wire {
    len: u64,
    words: Vec<(u64, u64)>,
}

/// The nonzero words as `(gap, word)` pairs.
struct Gaps<'a>(&'a [(u64, u64)]);

impl Serialize for Gaps<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut next = 0u64;
        s.collect_seq(self.0.iter().map(|&(i, w)| {
            let gap = i - next;
            next = i + 1;
            (gap, w)
        }))
    }
}

impl Serialize for Bitset {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Bitset", 2)?;
        st.serialize_field("len", &self.len)?;
        st.serialize_field("words", &Gaps(&self.words))?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Bitset {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Bitset::from_wire(Wire::deserialize(d)?).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
