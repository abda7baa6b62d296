//! `textDocument/formatting` and `rangeFormatting`: the expression language's formatter
//! (`pnet_syntax::expr::format`) applied to the `<expression>` and `<condition>` texts of an
//! open document. Only the expression texts change, from their first to their last
//! non-blank character; the XML around (tags, attributes, the whitespace before and after the
//! text) is untouched.
//!
//! A text is formatted only when it is what the file holds, character for character up to the
//! XML escapes `&lt;`, `&gt;`, `&amp;`, `&quot;`, `&apos;`, or is the content of one CDATA
//! section (a text with a character reference or an XML comment inside, or a condition joined
//! from several pieces, is left alone), and only when it parses without errors. The formatted
//! text is written back with `<` and `&` escaped (and `>` when the original escaped it),
//! unescaped inside a CDATA section. Lines the formatter breaks continue at the column of the
//! text's first character.

use std::path::Path;

use pnet_syntax::expr::format::format;
use pnet_syntax::span::MappedText;

use crate::analysis::Analysis;
use crate::tokens::expression_texts;

/// An edit of the document: replace the bytes `start..end` by `text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub start: u32,
    pub end: u32,
    pub text: String,
}

/// The edits formatting the expression texts of the open document `path` (those meeting the
/// byte range `range`, when one is given), in document order.
pub fn formatting(a: &Analysis, path: &Path, range: Option<(u32, u32)>) -> Vec<Edit> {
    let Some(doc) = a.docs.get(path) else {
        return Vec::new();
    };
    let Some(l) = a.locate(path).into_iter().next() else {
        return Vec::new();
    };
    let Some(parsed) = a.parsed(l) else {
        return Vec::new();
    };
    let Some(root) = &parsed.ast.root else {
        return Vec::new();
    };
    let mut out: Vec<Edit> = expression_texts(root)
        .into_iter()
        .filter_map(|t| format_text(&doc.text, t))
        .filter(|e| range.is_none_or(|(s, end)| e.start <= end && s <= e.end))
        .filter(|e| doc.text.get(e.start as usize..e.end as usize) != Some(e.text.as_str()))
        .collect();
    out.sort_by_key(|e| e.start);
    out.dedup_by_key(|e| e.start);
    out
}

/// The edit formatting one expression text of the document `doc` (also when it changes
/// nothing), or `None` when the text cannot be formatted.
pub fn format_text(doc: &str, t: &MappedText) -> Option<Edit> {
    let text = t.text.as_str();
    if text.trim().is_empty() {
        return None;
    }
    let (lead, trail) = (text.len() - text.trim_start().len(), text.trim_end().len());
    // the file offsets of text offsets `lead` and `trail`, checked character by character
    let mut raw = t.file_offset(0) as usize;
    let (mut start, mut end) = (None, None);
    let bytes = doc.as_bytes();
    for (i, c) in text.char_indices() {
        if i == lead {
            start = Some(raw);
        }
        if i == trail {
            end = Some(raw);
            break;
        }
        let rest = doc.get(raw..)?;
        let entity = match c {
            '<' => "&lt;",
            '>' => "&gt;",
            '&' => "&amp;",
            '"' => "&quot;",
            '\'' => "&apos;",
            _ => "",
        };
        raw += if !entity.is_empty() && rest.starts_with(entity) {
            entity.len()
        } else if rest.starts_with(c) {
            c.len_utf8()
        } else if c == '\n' && rest.starts_with("\r\n") {
            2
        } else {
            return None;
        };
    }
    let end = end.unwrap_or(raw);
    let start = start?;
    let original = doc.get(start..end)?;
    // inside a CDATA section (the text is all of it: the walk above met no `]]>`) nothing is
    // escaped
    let cdata = doc[..t.file_offset(0) as usize].ends_with("<![CDATA[");
    // the column of the first character, as blanks
    let line_start = doc[..start].rfind('\n').map_or(0, |i| i + 1);
    let indent: String = doc[line_start..start]
        .chars()
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let formatted = format(text, &indent)?;
    if cdata && formatted.contains("]]>") {
        return None;
    }
    let gt = original.contains("&gt;");
    let crlf = original.contains("\r\n") || (bytes.get(end) == Some(&b'\r'));
    let mut escaped = String::with_capacity(formatted.len() + 16);
    for c in formatted.chars() {
        match c {
            '<' if !cdata => escaped.push_str("&lt;"),
            '&' if !cdata => escaped.push_str("&amp;"),
            '>' if gt => escaped.push_str("&gt;"),
            '\n' if crlf => escaped.push_str("\r\n"),
            c => escaped.push(c),
        }
    }
    Some(Edit {
        start: start as u32,
        end: end as u32,
        text: escaped,
    })
}

#[cfg(test)]
mod tests {
    use pnet_syntax::FileId;
    use pnet_syntax::xml::{DefunBody, Root, parse_file};

    use super::format_text;

    /// The document with the expression of its root defun formatted.
    fn formatted(doc: &str) -> Option<String> {
        let (file, _) = parse_file(FileId(0), doc);
        let Some(Root::Defun(d)) = &file.root else {
            panic!("a defun")
        };
        let Some(DefunBody::Expression(t)) = &d.body else {
            panic!("an expression")
        };
        let e = format_text(doc, t)?;
        let mut out = doc.to_string();
        out.replace_range(e.start as usize..e.end as usize, &e.text);
        Some(out)
    }

    #[test]
    fn only_the_expression_text_changes() {
        let doc = "<defun name=\"d\">\n  <in name=\"a\" type=\"long\"/>\n  <expression>\n    ${b}:=${a}+1L;${c} :=  ${a}&lt;2L &amp;&amp; true\n  </expression>\n</defun>\n";
        assert_eq!(
            formatted(doc).unwrap(),
            "<defun name=\"d\">\n  <in name=\"a\" type=\"long\"/>\n  <expression>\n    ${b} := ${a} + 1L;\n    ${c} := ${a} &lt; 2L &amp;&amp; true\n  </expression>\n</defun>\n"
        );
        // on the tag's line: the next lines continue at the first character's column
        let doc = "<defun>\n  <expression>${b}:=1;${c}:=${a}&gt;2</expression>\n</defun>";
        assert_eq!(
            formatted(doc).unwrap(),
            "<defun>\n  <expression>${b} := 1;\n              ${c} := ${a} &gt; 2</expression>\n</defun>"
        );
        // CRLF line ends stay CRLF
        let doc = "<defun>\r\n  <expression>\r\n    ${b}:=1;${c}:=2\r\n  </expression>\r\n</defun>";
        assert_eq!(
            formatted(doc).unwrap(),
            "<defun>\r\n  <expression>\r\n    ${b} := 1;\r\n    ${c} := 2\r\n  </expression>\r\n</defun>"
        );
    }

    #[test]
    fn cdata_is_formatted_inside_comments_and_broken_texts_are_left_alone() {
        assert_eq!(
            formatted("<defun><expression><![CDATA[${b}:=1<2]]></expression></defun>").unwrap(),
            "<defun><expression><![CDATA[${b} := 1 < 2]]></expression></defun>"
        );
        for doc in [
            "<defun><expression><![CDATA[${b}:=1]]>;${c}:=2</expression></defun>",
            "<defun><expression>${b}<!-- x -->:=1</expression></defun>",
            "<defun><expression>${b}:=&#49;</expression></defun>",
            "<defun><expression>${b} = 1</expression></defun>",
        ] {
            assert_eq!(formatted(doc), None, "{doc}");
        }
    }
}
