//! The formatter of the expression language: canonical spacing, one statement per line,
//! comments kept.
//!
//! It works on the tokens, never on the tree: every token is written as it was (numbers keep
//! their spelling, `:eq:` stays `:eq:`, parentheses stay), only the whitespace between tokens
//! changes, and a reference `${ a . b }` is written `${a.b}`. So the text parses to the same
//! tree (spans aside) as the original, and formatting is idempotent. A text that does not
//! parse cleanly is not formatted ([`format`] returns `None`).
//!
//! The canonical form:
//! - one space around binary operators (`:=`, `->`, `+`, `:eq:`, `mod`, ...) and after a
//!   comma; none after an opening or before a closing bracket, none before a comma or `;`;
//! - a function's, a constructor's (`List`, `Set`, `Map`, `Struct`) and `shared_P`'s
//!   parenthesis after a space (`max (a, b)`, GPI-Space's style); `y(...)` and prefix
//!   operators (`-`, `+`, `!`) glued to what follows;
//! - a line break after each `;` between statements (a blank line between two statements is
//!   kept, several become one); an assignment wider than [`MAX_WIDTH`] columns breaks before
//!   its `:=` (`${target}`, then `:= value` on the next line, two columns further in); no
//!   other line is broken;
//! - comments as written: one on a line of its own stays on a line of its own, one after a
//!   `;` on the same line stays there, any other is written inline between spaces.

use logos::Logos;

use crate::expr::ast::{Expr, ExprKind};
use crate::expr::lexer::RawTok;

/// The formatted text of the expression program `text`, without leading or trailing
/// whitespace; every line break it writes is followed by `indent` (the text's own line
/// breaks, inside comments and strings, are kept as they are). `None` when `text` has a
/// syntax error (anything the parser reports).
pub fn format(text: &str, indent: &str) -> Option<String> {
    let (tree, diags) = crate::expr::parse_str(text);
    if !diags.is_empty() {
        return None;
    }
    let mut prefix = Vec::new();
    tree.walk(&mut |e: &Expr| {
        if !matches!(e.kind, ExprKind::Seq(_))
            && let Some(b) = text.as_bytes().get(e.span.start as usize)
            && matches!(b, b'-' | b'+' | b'!')
        {
            prefix.push(e.span.start as usize);
        }
    });
    prefix.sort_unstable();
    prefix.dedup();

    let mut toks = Vec::new();
    let mut lex = RawTok::lexer(text);
    while let Some(t) = lex.next() {
        let r = lex.span();
        // a clean parse has no lexical errors
        toks.push((t.ok()?, r.start, r.end));
    }
    let mut f = Formatter {
        out: String::with_capacity(text.len() + text.len() / 4),
        indent,
        last: Last::Start,
        stack: Vec::new(),
        assign: None,
    };
    let mut at = 0;
    for &(tok, s, e) in &toks {
        f.gap(&text[at..s], false);
        let class = classify(tok, &text[s..e], s, &prefix, &f.stack, f.last);
        f.token(tok, class, &text[s..e]);
        at = e;
    }
    f.end_statement();
    f.gap(&text[at..], true);
    Some(f.out)
}

/// What the last thing written was, for the spacing before the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Last {
    /// Nothing yet.
    Start,
    /// A line break (and the indentation) was just written.
    LineStart,
    /// A `;` between statements: a line break is due before the next token or own-line
    /// comment (`true`: with a blank line).
    Semi(bool),
    Open,
    /// A word that may be followed by its parenthesised arguments (a function, `List`, ...).
    Head,
    /// `y`, glued to its `(`.
    Bytes,
    Prefix,
    Binary,
    Comma,
    /// An operand, a closing bracket, or a comment written inline.
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Open,
    Close,
    Comma,
    Semi,
    Prefix,
    Binary,
    Head,
    Bytes,
    Operand,
}

/// What kind of bracket is open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bracket {
    /// `y(`: a `-` inside is a byte's sign.
    Bytes,
    Other,
}

fn classify(
    tok: RawTok,
    slice: &str,
    start: usize,
    prefix: &[usize],
    stack: &[Bracket],
    last: Last,
) -> Class {
    use RawTok as R;
    match tok {
        R::LParen | R::LBrace | R::LBracket => Class::Open,
        R::RParen | R::RBrace | R::RBracket => Class::Close,
        R::Comma => Class::Comma,
        R::Semi => Class::Semi,
        R::Bang => Class::Prefix,
        R::Minus | R::Plus
            if prefix.binary_search(&start).is_ok() || stack.last() == Some(&Bracket::Bytes) =>
        {
            Class::Prefix
        }
        R::Assign
        | R::OrOr
        | R::OrWord
        | R::Bar
        | R::AndAnd
        | R::AndWord
        | R::Amp
        | R::Lt
        | R::Le
        | R::Gt
        | R::Ge
        | R::Eq
        | R::Ne
        | R::Plus
        | R::Minus
        | R::Arrow
        | R::Star
        | R::StarStar
        | R::Slash
        | R::Percent
        | R::Caret => Class::Binary,
        R::Word => match slice {
            "y" => Class::Bytes,
            // after an operand: the operator; else the call form `mod (a, b)`
            "mod" | "div" if matches!(last, Last::Other) => Class::Binary,
            "true" | "false" | "pi" | "e" => Class::Operand,
            _ => Class::Head,
        },
        R::Num | R::Ref(_) | R::Str(_) | R::Char(_) | R::UnterminatedComment => Class::Operand,
    }
}

struct Formatter<'a> {
    out: String,
    indent: &'a str,
    last: Last,
    stack: Vec<Bracket>,
    /// Where in `out` the space before the current statement's first top-level `:=` is.
    assign: Option<usize>,
}

/// The widest line a statement is written on unbroken: a wider assignment breaks before its
/// `:=` (GPI-Space's style for long ones).
pub const MAX_WIDTH: usize = 100;

impl Formatter<'_> {
    fn newline(&mut self, blank: bool) {
        if blank {
            self.out.push('\n');
        }
        self.out.push('\n');
        self.out.push_str(self.indent);
        self.last = Last::LineStart;
    }

    /// Writes the comments found in the whitespace between two tokens (`end`: after the last
    /// one).
    fn gap(&mut self, gap: &str, end: bool) {
        let bytes = gap.as_bytes();
        // line breaks since the last token or comment
        let mut nl = 0;
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\n' {
                nl += 1;
            }
            if !gap[i..].starts_with("/*") {
                i += 1;
                continue;
            }
            let boundary = matches!(self.last, Last::Start | Last::LineStart | Last::Semi(_));
            // after a `;` on the same line: it stays there, the line break stays due
            let trailing = matches!(self.last, Last::Semi(_)) && nl == 0;
            let mut own_line = false;
            match self.last {
                Last::Start | Last::LineStart => {}
                Last::Semi(blank) if nl > 0 => {
                    self.newline(blank || nl > 1);
                    own_line = true;
                }
                _ if end && nl > 0 => {
                    self.newline(nl > 1);
                    own_line = true;
                }
                Last::Open | Last::Prefix | Last::Bytes => {}
                _ => self.out.push(' '),
            }
            let len = comment_len(&gap[i..]);
            self.out.push_str(&gap[i..i + len]);
            i += len;
            nl = 0;
            let ws = gap[i..].len() - gap[i..].trim_start().len();
            let breaks = gap[i..i + ws].contains('\n') || (end && i + ws == gap.len());
            self.last = if trailing || ((boundary || own_line) && breaks) {
                Last::Semi(false)
            } else {
                Last::Other
            };
        }
        if let Last::Semi(blank) = self.last {
            self.last = Last::Semi(blank || nl > 1);
        }
    }

    fn token(&mut self, tok: RawTok, class: Class, slice: &str) {
        let space = match (self.last, class) {
            (Last::Start | Last::LineStart, _) => false,
            (Last::Semi(blank), Class::Semi) => {
                // an empty statement: `;;`
                self.last = Last::Semi(blank);
                false
            }
            (Last::Semi(blank), _) => {
                self.newline(blank);
                false
            }
            (_, Class::Close | Class::Comma | Class::Semi) => false,
            (Last::Open | Last::Prefix, _) => false,
            (Last::Bytes, Class::Open) => false,
            _ => true,
        };
        if tok == RawTok::Assign && self.stack.is_empty() && self.assign.is_none() {
            self.assign = Some(self.out.len());
        }
        if space {
            self.out.push(' ');
        }
        match tok {
            RawTok::Ref(true) => {
                self.out.push_str("${");
                let inner = &slice[2..slice.len() - 1];
                for (i, part) in inner.split('.').enumerate() {
                    if i > 0 {
                        self.out.push('.');
                    }
                    self.out.push_str(part.trim());
                }
                self.out.push('}');
            }
            _ => self.out.push_str(slice),
        }
        self.last = match class {
            Class::Open => {
                self.stack.push(if self.last == Last::Bytes {
                    Bracket::Bytes
                } else {
                    Bracket::Other
                });
                Last::Open
            }
            Class::Close => {
                self.stack.pop();
                Last::Other
            }
            Class::Comma => Last::Comma,
            Class::Semi if self.stack.is_empty() => {
                self.end_statement();
                Last::Semi(false)
            }
            Class::Semi => Last::Other,
            Class::Prefix => Last::Prefix,
            Class::Binary => Last::Binary,
            Class::Head => Last::Head,
            Class::Bytes => Last::Bytes,
            Class::Operand => Last::Other,
        };
    }
}

impl Formatter<'_> {
    /// At the end of a statement: when it is an assignment on a line wider than
    /// [`MAX_WIDTH`], the line breaks before its `:=`, which goes two columns further in.
    fn end_statement(&mut self) {
        let Some(at) = self.assign.take() else {
            return;
        };
        let line_start = self.out.rfind('\n').map_or(0, |i| i + 1);
        let width = self.out[line_start..].chars().count()
            + if line_start == 0 {
                self.indent.chars().count()
            } else {
                0
            };
        // (`at` is on this line unless a comment or a string spans lines: then no break)
        if width > MAX_WIDTH && at > line_start && self.out.as_bytes().get(at) == Some(&b' ') {
            let brk = format!("\n{}  ", self.indent);
            self.out.replace_range(at..at + 1, &brk);
        }
    }
}

/// The length of the (nested) comment at the start of `s`, to its end or the end of `s`.
fn comment_len(s: &str) -> usize {
    let b = s.as_bytes();
    let (mut depth, mut i) = (0usize, 0);
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            depth += 1;
            i += 2;
        } else if b[i..].starts_with(b"*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::format;
    use crate::expr::ast::{Expr, ExprKind, Ident};
    use crate::expr::parse_str;
    use crate::xml::{self, DefunBody, Root, TransitionBody};
    use crate::{FileId, Span};

    /// The tree without its spans.
    fn bare(e: &Expr) -> Expr {
        let none = Span::new(FileId(0), 0, 0);
        let id = |i: &Ident| Ident {
            name: i.name.clone(),
            span: none,
        };
        let ids = |p: &[Ident]| p.iter().map(id).collect::<Vec<_>>();
        let all = |es: &[Expr]| es.iter().map(bare).collect::<Vec<_>>();
        let kind = match &e.kind {
            ExprKind::Literal(v) => ExprKind::Literal(v.clone()),
            ExprKind::Ref(p) => ExprKind::Ref(ids(p)),
            ExprKind::Assign { target, value } => ExprKind::Assign {
                target: ids(target),
                value: Box::new(bare(value)),
            },
            ExprKind::Unary(op, a) => ExprKind::Unary(*op, Box::new(bare(a))),
            ExprKind::Binary(op, a, b) => {
                ExprKind::Binary(*op, Box::new(bare(a)), Box::new(bare(b)))
            }
            ExprKind::Call(f, es) => ExprKind::Call(*f, all(es)),
            ExprKind::Shared(p, a) => ExprKind::Shared(id(p), Box::new(bare(a))),
            ExprKind::List(es) => ExprKind::List(all(es)),
            ExprKind::Set(es) => ExprKind::Set(all(es)),
            ExprKind::Map(kvs) => {
                ExprKind::Map(kvs.iter().map(|(k, v)| (bare(k), bare(v))).collect())
            }
            ExprKind::Struct(fs) => {
                ExprKind::Struct(fs.iter().map(|(f, v)| (id(f), bare(v))).collect())
            }
            ExprKind::Seq(es) => ExprKind::Seq(all(es)),
            ExprKind::Error => ExprKind::Error,
        };
        Expr {
            kind,
            span: none,
            word_op: e.word_op,
        }
    }

    /// Formatting keeps the tree and is idempotent; returns the formatted text.
    fn check(text: &str, indent: &str) -> Option<String> {
        let (before, diags) = parse_str(text);
        let Some(out) = format(text, indent) else {
            assert!(
                !diags.is_empty(),
                "a clean text was not formatted: {text:?}"
            );
            return None;
        };
        let (after, diags) = parse_str(&out);
        assert!(diags.is_empty(), "{text:?} formatted as {out:?}: {diags:?}");
        assert_eq!(bare(&before), bare(&after), "{text:?} formatted as {out:?}");
        assert_eq!(
            format(&out, indent).as_deref(),
            Some(out.as_str()),
            "not idempotent: {text:?}"
        );
        Some(out)
    }

    #[test]
    fn spacing() {
        let cases = [
            ("${a}:=${b}+1L", "${a} := ${b} + 1L"),
            ("${ a . b }  :=  max(${x},-1L)", "${a.b} := max (${x}, -1L)"),
            ("${x} := - ${y} * -(2 + 3)", "${x} := -${y} * -(2 + 3)"),
            ("!(${a}:lt:${b}) || ${c}", "!(${a} :lt: ${b}) || ${c}"),
            (
                "${a} := 7 mod 2 + mod (7, 2) div 3",
                "${a} := 7 mod 2 + mod (7, 2) div 3",
            ),
            ("List(1,2 ,3)", "List (1, 2, 3)"),
            ("Set{ 1 , 2 }", "Set {1, 2}"),
            ("Map[ 1->\"a\" ,2 -> \"b\"]", "Map [1 -> \"a\", 2 -> \"b\"]"),
            ("Struct[a:=1,b:=2L]", "Struct [a := 1, b := 2L]"),
            ("y( 1 -2 3 )", "y(1 -2 3)"),
            ("{ 1 2 }", "{1 2}"),
            ("shared_p(${v})", "shared_p (${v})"),
            ("min ${a} ${b}", "min ${a} ${b}"),
            ("bitset_insert(${s},${i})", "bitset_insert (${s}, ${i})"),
            ("[]", "[]"),
            ("${a} := +1f ** 2.0f ^ 3", "${a} := +1f ** 2.0f ^ 3"),
        ];
        for (text, want) in cases {
            assert_eq!(check(text, "").as_deref(), Some(want), "{text:?}");
        }
    }

    #[test]
    fn statements_one_per_line_comments_kept() {
        let text = "/* head */\n  ${a} := 1;   ${b} := 2; /* after b */\n\n\n  /* own line */\n\
                    ${c} := ${a} /* inline */ + ${b};\n/* last */";
        let want = "/* head */\n${a} := 1;\n${b} := 2; /* after b */\n\n/* own line */\n\
                    ${c} := ${a} /* inline */ + ${b};\n/* last */";
        assert_eq!(check(text, "").as_deref(), Some(want));
        // the indentation follows each line break the formatter writes
        let out = check("${a} := 1;\n\n${b} := \"x\ny\"", "    ").unwrap();
        assert_eq!(out, "${a} := 1;\n\n    ${b} := \"x\ny\"");
        assert_eq!(check("/* c */ ${a}", "").as_deref(), Some("/* c */ ${a}"));
        assert_eq!(check("${a};;${b};", "").as_deref(), Some("${a};;\n${b};"));
        assert_eq!(
            check("${a}\n/* c\n  d */", "").as_deref(),
            Some("${a}\n/* c\n  d */")
        );
        assert_eq!(
            check("/* a /* nested */ */${a}", "").as_deref(),
            Some("/* a /* nested */ */ ${a}")
        );
        assert_eq!(check("  ", "").as_deref(), Some(""));
    }

    #[test]
    fn long_assignments_break_before_the_assignment() {
        let value = "map_assign (${cache.by_slot.num_users}, ${slot}, 1L + map_get_assignment (${m}, ${slot}))";
        let text = format!("${{cache.by_slot.num_users}}:={value};${{a}} := 1");
        assert_eq!(
            check(&text, "    ").unwrap(),
            format!("${{cache.by_slot.num_users}}\n      := {value};\n    ${{a}} := 1")
        );
        // the indentation counts; a long line without `:=` stays whole
        let short = format!("${{x}} := {value}");
        assert_eq!(check(&short, "").unwrap(), short);
        assert!(
            check(&short, "          ")
                .unwrap()
                .contains("\n            := ")
        );
        let cond = format!("{value} :eq: {value}");
        assert_eq!(check(&cond, "").unwrap(), cond);
    }

    #[test]
    fn broken_texts_are_not_formatted() {
        for text in ["${a} = 1", "${a} := (1", "\"abc", "${a} := 1 +", "/* open"] {
            assert_eq!(format(text, ""), None, "{text:?}");
        }
    }

    fn texts_of_defun<'a>(d: &'a xml::Defun, out: &mut Vec<&'a str>) {
        out.extend(d.conditions.iter().map(|t| t.text.as_str()));
        match &d.body {
            Some(DefunBody::Expression(t)) => out.push(&t.text),
            Some(DefunBody::Net(n)) => {
                for t in &n.templates {
                    if let xml::TemplateItem::Inline(t) = t
                        && let Some(d) = &t.defun
                    {
                        texts_of_defun(d, out);
                    }
                }
                for t in &n.transitions {
                    out.extend(t.conditions.iter().map(|t| t.text.as_str()));
                    if let Some(TransitionBody::Defun(d)) = &t.body {
                        texts_of_defun(d, out);
                    }
                }
            }
            _ => {}
        }
    }

    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "xpnet") {
                out.push(p);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

        /// Random token soup: when it parses, the formatted text has its tree and formats to
        /// itself.
        #[test]
        fn token_soup_formats_to_the_same_tree(
            parts in proptest::collection::vec(proptest::sample::select(SOUP), 1..14)
        ) {
            check(&parts.concat(), "");
        }
    }

    /// Random expression texts from a small grammar, with random blanks and comments.
    fn program() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let ws = || proptest::sample::select(&["", " ", "  ", "\n", "\t", " /* c */ "][..]);
        let leaf = proptest::sample::select(
            &[
                "${a}",
                "${ b . c }",
                "1",
                "2L",
                "1.5",
                "-3",
                "true",
                "\"s\"",
                "'x'",
                "pi",
                "[]",
                "{1 2}",
                "y(1 -2)",
                "List ()",
            ][..],
        )
        .prop_map(str::to_string);
        let expr = leaf.prop_recursive(4, 24, 3, move |inner| {
            let ops = proptest::sample::select(
                &[
                    "+", "-", "*", "/", "**", ":eq:", "<", "&&", "|", "mod", "div", "^", "!=",
                    ":or:",
                ][..],
            );
            prop_oneof![
                (inner.clone(), ws(), ops, ws(), inner.clone())
                    .prop_map(|(a, w1, op, w2, b)| format!("{a}{w1} {op} {w2}{b}")),
                (
                    proptest::sample::select(&["-", "!", "- ", "+"][..]),
                    inner.clone()
                )
                    .prop_map(|(p, a)| format!("{p}{a}")),
                (
                    proptest::sample::select(&["min", "max", "mod", "div"][..]),
                    ws(),
                    inner.clone(),
                    ws(),
                    inner.clone()
                )
                    .prop_map(|(f, w1, a, w2, b)| format!("{f}{w1}({a}{w2},{b})")),
                (ws(), inner.clone()).prop_map(|(w, a)| format!("abs{w}({a})")),
                (ws(), inner.clone()).prop_map(|(w, a)| format!("({w}{a})")),
                (ws(), inner.clone()).prop_map(|(w, a)| format!("shared_p{w}({a})")),
                (ws(), ws()).prop_map(|(w1, w2)| format!("Struct{w1}[x{w2}:=1L, y := \"a\"]")),
                ws().prop_map(|w| format!("Map{w}[1 -> 2, 3->4]")),
                ws().prop_map(|w| format!("Set{w}{{1,2}}")),
            ]
        });
        proptest::collection::vec((ws(), expr, ws(), any::<bool>()), 1..4).prop_map(|stmts| {
            let mut out = String::new();
            for (i, (w1, e, w2, assign)) in stmts.into_iter().enumerate() {
                if i > 0 {
                    out.push(';');
                }
                out.push_str(w1);
                if assign {
                    out.push_str("${r} :=");
                }
                out.push_str(&e);
                out.push_str(w2);
            }
            out
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]

        /// Random programs: the formatted text has the tree of the program and formats to
        /// itself.
        #[test]
        fn random_programs_format_to_the_same_tree(text in program()) {
            check(&text, "    ");
            // (deep enough for every assignment to break)
            check(&text, &" ".repeat(96));
        }
    }

    const SOUP: &[&str] = &[
        "${a}",
        "${ b . c }",
        "1",
        "2L",
        "-",
        "+",
        "!",
        "*",
        "**",
        "/",
        ":=",
        ":eq:",
        "<",
        "&&",
        "|",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        ",",
        ";",
        " ",
        "\n",
        "/* c */",
        "y",
        "mod",
        "div",
        "min",
        "abs",
        "List",
        "Set",
        "Map",
        "Struct",
        "->",
        "shared_p",
        "true",
        "\"s\"",
        "'x'",
        "f",
        "1.5",
        "e",
        "pi",
    ];

    /// The expression and condition texts of GPI-Space's nets.
    fn corpus_texts() -> Vec<String> {
        let mut paths = Vec::new();
        walk(&pnet_tests::gpispace(), &mut paths);
        paths.sort();
        let mut out = Vec::new();
        for p in &paths {
            let src = std::fs::read_to_string(p).expect("corpus file");
            let (file, _) = xml::parse_file(FileId(0), &src);
            let mut texts = Vec::new();
            match &file.root {
                Some(Root::Defun(d)) => texts_of_defun(d, &mut texts),
                Some(Root::Template(t)) => {
                    if let Some(d) = &t.defun {
                        texts_of_defun(d, &mut texts);
                    }
                }
                _ => {}
            }
            out.extend(texts.into_iter().map(str::to_string));
        }
        out
    }

    /// Blanks, line breaks and comments added between the tokens of a corpus expression: the
    /// formatted text has the same tree; with blanks only, it is the same text.
    #[test]
    fn blanks_and_comments_between_tokens_change_nothing() {
        use logos::Logos;
        use proptest::prelude::*;
        if pnet_tests::corpus_absent() {
            return;
        }
        let texts: Vec<String> = corpus_texts()
            .into_iter()
            .filter(|t| parse_str(t).1.is_empty() && !t.trim().is_empty())
            .collect();
        const INSERTS: [&str; 6] = [" ", "\t", "   ", "\n", "\n\n", "/* c */"];
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(256));
        let strategy = (
            any::<prop::sample::Index>(),
            prop::collection::vec((any::<prop::sample::Index>(), 0..INSERTS.len()), 1..8),
        );
        runner
            .run(&strategy, |(i, inserts)| {
                let text = &texts[i.index(texts.len())];
                let ends: Vec<usize> = crate::expr::lexer::RawTok::lexer(text)
                    .spanned()
                    .map(|(_, r)| r.end)
                    .collect();
                let mut at: Vec<(usize, &str)> = inserts
                    .iter()
                    .map(|(j, k)| (ends[j.index(ends.len())], INSERTS[*k]))
                    .collect();
                at.sort_by_key(|&(p, _)| std::cmp::Reverse(p));
                let mut changed = text.clone();
                for &(p, s) in &at {
                    changed.insert_str(p, s);
                }
                let out = check(&changed, "  ").expect("still parses");
                let (before, _) = parse_str(text);
                let (after, _) = parse_str(&out);
                prop_assert_eq!(bare(&before), bare(&after), "{:?}", changed);
                if at
                    .iter()
                    .all(|(_, s)| s.trim().is_empty() && !s.contains('\n'))
                {
                    prop_assert_eq!(Some(out), format(text, "  "), "{:?}", changed);
                }
                Ok(())
            })
            .unwrap();
    }

    /// Every expression and condition of GPI-Space's nets: formatted, it parses to the same
    /// tree, and formatting it again changes nothing.
    #[test]
    fn corpus_expressions_keep_their_tree() {
        if pnet_tests::corpus_absent() {
            return;
        }
        let (mut formatted, mut changed) = (0, 0);
        for t in &corpus_texts() {
            for indent in ["", "      "] {
                if let Some(out) = check(t, indent) {
                    formatted += 1;
                    changed += usize::from(out != t.trim());
                }
            }
        }
        assert!(formatted > 500, "only {formatted} texts formatted");
        assert!(changed > 0);
    }
}
