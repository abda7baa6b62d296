//! Files and byte spans; lines and columns of byte offsets.

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

    /// The span of a byte range `start..end` of `file` (offsets above `u32::MAX` are clamped).
    pub fn of_range(file: FileId, range: std::ops::Range<usize>) -> Span {
        let clamp = |o: usize| u32::try_from(o).unwrap_or(u32::MAX);
        Span::new(file, clamp(range.start), clamp(range.end))
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

/// 1-based line and column (in characters) of byte `offset` in `text`; offsets past the end or
/// inside a character are clamped.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// The starts of a text's lines, for many [`line_col`] look-ups.
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        LineIndex {
            starts: std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
        }
    }

    /// As [`line_col`], for the text this index was made from, in time proportional to the
    /// length of the line.
    pub fn line_col(&self, text: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        (line, text[start..offset].chars().count() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_lines_and_characters() {
        let text = "ab\ncä d\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 3), (2, 1));
        // byte 6 is after "cä" (ä has two bytes)
        assert_eq!(line_col(text, 6), (2, 3));
        // inside ä: clamped to its start
        assert_eq!(line_col(text, 5), (2, 2));
        assert_eq!(line_col(text, 100), (3, 1));
    }

    #[test]
    fn the_line_index_agrees_with_line_col() {
        let text = "ab\ncä d\n\nxyz";
        let index = LineIndex::new(text);
        for offset in 0..=text.len() + 2 {
            assert_eq!(
                index.line_col(text, offset),
                line_col(text, offset),
                "{offset}"
            );
        }
    }
}
