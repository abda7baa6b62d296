//! Byte offsets <-> LSP positions (line, UTF-16 column), both ways.
//!
//! Not `pnet_diagnostics::LineIndex`: that one maps an offset to a 1-based line and a column
//! in characters (for rendering), keeps its line starts private and has no way back from a
//! position to an offset; the protocol needs UTF-16 columns and the reverse mapping.

use lsp_types::{Position, Range};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineIndex {
    /// Byte offset of the start of each line.
    starts: Vec<u32>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        // a char pattern: searched with memchr (the text is a whole file, on every edit)
        starts.extend(text.match_indices('\n').map(|(i, _)| i as u32 + 1));
        LineIndex { starts }
    }

    /// The index after the bytes `range` of its text were replaced by `new` (the lines
    /// before it kept, those after it moved: no scan of the whole text).
    pub fn edit(&mut self, range: std::ops::Range<usize>, new: &str) {
        let (s, e) = (range.start as u32, range.end as u32);
        // a line starting at `p` follows a newline at `p - 1`: those in `s..e` go
        let keep = self.starts.partition_point(|&p| p <= s);
        let after = self.starts.partition_point(|&p| p <= e);
        let len = new.len() as u32;
        let tail: Vec<u32> = self.starts[after..]
            .iter()
            .map(|&p| p - (e - s) + len)
            .collect();
        self.starts.truncate(keep);
        self.starts
            .extend(new.match_indices('\n').map(|(i, _)| s + i as u32 + 1));
        self.starts.extend(tail);
    }

    /// The position of byte `offset` (clamped to the text, and back to a char boundary).
    pub fn position(&self, text: &str, offset: u32) -> Position {
        let mut offset = (offset as usize).min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s as usize <= offset) - 1;
        let start = self.starts[line] as usize;
        let col: usize = text[start..offset].chars().map(char::len_utf16).sum();
        Position::new(line as u32, col as u32)
    }

    pub fn range(&self, text: &str, start: u32, end: u32) -> Range {
        Range::new(
            self.position(text, start),
            self.position(text, end.max(start)),
        )
    }

    /// The byte offset of a position (clamped to the line and the text).
    pub fn offset(&self, text: &str, pos: Position) -> u32 {
        let Some(&start) = self.starts.get(pos.line as usize) else {
            return text.len() as u32;
        };
        let end = self
            .starts
            .get(pos.line as usize + 1)
            .map_or(text.len(), |&e| e as usize);
        let line = &text[start as usize..end];
        let mut units = 0u32;
        for (i, c) in line.char_indices() {
            if units >= pos.character || c == '\n' {
                return start + i as u32;
            }
            units += c.len_utf16() as u32;
        }
        end as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns_round_trip() {
        let text = "ab\nä𝄞x\n";
        let li = LineIndex::new(text);
        // 'x' is at byte 3 + 2 + 4 = 9; UTF-16 column 1 + 2 = 3
        assert_eq!(li.position(text, 9), Position::new(1, 3));
        assert_eq!(li.offset(text, Position::new(1, 3)), 9);
        assert_eq!(li.offset(text, Position::new(0, 99)), 2);
        assert_eq!(li.offset(text, Position::new(9, 0)), text.len() as u32);
        // inside a multi-byte char: back to its start
        assert_eq!(li.position(text, 6), Position::new(1, 1));
    }

    #[test]
    fn edits_give_the_index_of_the_new_text() {
        let mut text = String::from("ab\ncd\n\nef");
        let mut li = LineIndex::new(&text);
        let edits: &[(std::ops::Range<usize>, &str)] = &[
            (1..1, "x"),
            (0..4, ""),
            (2..2, "\n\n"),
            (0..0, "\n"),
            (3..7, "y\nz"),
            (0..8, "one\ntwo"),
            (7..7, "\n"),
        ];
        for (r, new) in edits {
            text.replace_range(r.clone(), new);
            li.edit(r.clone(), new);
            assert_eq!(li, LineIndex::new(&text), "{text:?}");
        }
    }
}
