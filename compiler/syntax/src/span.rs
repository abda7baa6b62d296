//! Files and byte spans.

/// An opaque file identity. The compiler's database maps it to a path and a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A byte range `start..end` in a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: u32, end: u32) -> Span {
        Span { file, start, end }
    }

    /// The smallest span covering both (same file assumed).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// A text that was cut out of a file and maybe unescaped (XML entities, CDATA): maps byte
/// offsets in `text` back to spans in the file.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct MappedText {
    pub text: String,
    pub file: FileId,
    /// Sorted pairs `(offset in text, offset in file)`: offset `o` in the text maps to
    /// `file_off + (o - text_off)` for the last pair with `text_off <= o`.
    pub map: Vec<(u32, u32)>,
}

impl MappedText {
    /// A text that is a verbatim copy of `file[start..]`.
    pub fn verbatim(text: impl Into<String>, file: FileId, start: u32) -> MappedText {
        MappedText {
            text: text.into(),
            file,
            map: vec![(0, start)],
        }
    }

    /// The file offset of text offset `offset`.
    pub fn file_offset(&self, offset: u32) -> u32 {
        let i = self.map.partition_point(|&(t, _)| t <= offset);
        match i.checked_sub(1).and_then(|i| self.map.get(i)) {
            Some(&(t, f)) => f + (offset - t),
            None => offset,
        }
    }

    /// The file span of the text range `start..end`.
    pub fn span(&self, start: u32, end: u32) -> Span {
        let s = self.file_offset(start);
        let e = if end > start {
            self.file_offset(end - 1) + 1
        } else {
            s
        };
        Span::new(self.file, s, e.max(s))
    }

    /// The span of the whole text.
    pub fn whole(&self) -> Span {
        self.span(0, self.text.len() as u32)
    }
}
