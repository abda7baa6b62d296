//! The parser: runs the lalrpop grammar (`grammar/expr.lalrpop`) over the lexer's tokens. The
//! grammar's actions call into [`Ctx`], which builds nodes with mapped spans and collects
//! diagnostics.

use std::cell::RefCell;
use std::collections::HashMap;

use lalrpop_util::{ErrorRecovery, ParseError};
use pnet_stdlib::literal::parse_number;
use pnet_stdlib::{BinOp, Bitset, UnOp, Value};

use crate::expr::ast::{Expr, ExprKind, Ident};
use crate::expr::lexer::{Tok, tokenize};
use crate::span::MappedText;
use crate::{Diagnostic, Span};

lalrpop_util::lalrpop_mod!(
    #[allow(clippy::all, clippy::pedantic, unused, missing_debug_implementations)]
    grammar,
    "/expr.rs"
);

/// State shared by the grammar's actions.
pub struct Ctx<'a> {
    text: &'a MappedText,
    diags: RefCell<Vec<Diagnostic>>,
    /// Text offsets of the syntax errors reported so far (one per statement is enough).
    syntax_errors: RefCell<Vec<usize>>,
    /// The depth of every node built so far, by its file span (a parent's span strictly
    /// contains its children's); `TOO_DEEP` marks an `Error` node that replaced a subtree
    /// deeper than [`MAX_EXPR_DEPTH`] (its ancestors become such nodes too, silently).
    depths: RefCell<HashMap<(u32, u32), usize>>,
}

/// The deepest expression tree the parser builds: the number of nodes on the longest path from
/// a statement down to a leaf. A deeper subtree (a chain of 5,000 `+`, 10,000 unary `-`, calls
/// nested in calls, nested collection literals) gets one `expression_too_deep` diagnostic and
/// the statement becomes an `Error` node, so every later recursive walk (checker, emitter, JIT,
/// printers, language server) sees a bounded tree. Far above what anyone writes by hand, and
/// low enough for the whole pipeline to run on a 2 MiB thread stack in a debug build.
pub const MAX_EXPR_DEPTH: usize = 256;

const TOO_DEEP: usize = usize::MAX;

pub(crate) fn parse(text: &MappedText) -> (Expr, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut stray = Vec::new();
    let toks = tokenize(text, &mut diags, &mut stray);
    let ctx = Ctx {
        text,
        diags: RefCell::new(diags),
        syntax_errors: RefCell::new(stray),
        depths: RefCell::new(HashMap::new()),
    };
    let result = grammar::ProgramParser::new().parse(&ctx, toks.into_iter().map(Ok::<_, ()>));
    let expr = match result {
        Ok(mut stmts) if stmts.len() == 1 => stmts.pop().unwrap(),
        Ok(stmts) => {
            let span = match (stmts.first(), stmts.last()) {
                (Some(a), Some(b)) => a.span.to(b.span),
                _ => text.whole(),
            };
            Expr::new(ExprKind::Seq(stmts), span)
        }
        // Recovery at the statement level always succeeds; this is a safety net.
        Err(e) => {
            let d = ctx.parse_error(e);
            ctx.diags.borrow_mut().push(d);
            Expr::new(ExprKind::Error, text.whole())
        }
    };
    (expr, ctx.diags.into_inner())
}

impl<'a> Ctx<'a> {
    fn span(&self, l: usize, r: usize) -> Span {
        self.text.span(l as u32, r as u32)
    }

    fn src(&self, l: usize, r: usize) -> &'a str {
        self.text.text.get(l..r).unwrap_or("")
    }

    fn error(&self, d: Diagnostic) {
        self.diags.borrow_mut().push(d);
    }

    /// Builds a node, unless it would be deeper than [`MAX_EXPR_DEPTH`]: then (once per
    /// statement) reports `expression_too_deep` and returns an `Error` node.
    pub(crate) fn node(&self, kind: ExprKind, l: usize, r: usize) -> Expr {
        let span = self.span(l, r);
        let mut depths = self.depths.borrow_mut();
        let mut depth = 1;
        let mut ok = true;
        for_each_child(&kind, |c| match depths.get(&(c.span.start, c.span.end)) {
            Some(&TOO_DEEP) => ok = false,
            Some(&d) => depth = depth.max(d + 1),
            None => {}
        });
        if ok && depth <= MAX_EXPR_DEPTH {
            depths.insert((span.start, span.end), depth);
            return Expr::new(kind, span);
        }
        if ok {
            let at = self.operator_span(&kind, l);
            self.error(
                Diagnostic::error(
                    "expression_too_deep",
                    format!("expression nested deeper than {MAX_EXPR_DEPTH} levels"),
                )
                .with_primary(
                    at,
                    format!("the {MAX_EXPR_DEPTH}-level limit is crossed here"),
                )
                .with_note(
                    "split it into statements with local variables: \
                     `${t} := ...; ${t} := ${t} + ...`",
                ),
            );
        }
        depths.insert((span.start, span.end), TOO_DEEP);
        dispose(Expr::new(kind, span));
        Expr::new(ExprKind::Error, span)
    }

    /// The span of the operator of a node `kind` that starts at text offset `l`: between the
    /// operands of a binary node, the first token of anything else (`-`, `!`, `abs`, `List`).
    fn operator_span(&self, kind: &ExprKind, l: usize) -> Span {
        let text = self.text.text.as_str();
        let (from, to) = match kind {
            ExprKind::Binary(_, a, b) => {
                (self.text_offset(a.span.end), self.text_offset(b.span.start))
            }
            _ => (l, text.len()),
        };
        let from = from.min(text.len());
        let to = to.clamp(from, text.len());
        let gap = text.get(from..to).unwrap_or("");
        let start = from + (gap.len() - gap.trim_start().len());
        let rest = text.get(start..to).unwrap_or("");
        let word = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let len = match (word, rest.chars().next()) {
            (0, Some(c)) if matches!(kind, ExprKind::Binary(..)) => rest
                .find(char::is_whitespace)
                .unwrap_or(rest.len())
                .max(c.len_utf8()),
            (0, Some(c)) => c.len_utf8(),
            (n, _) => n,
        };
        self.span(start, start + len)
    }

    /// The text offset of file offset `f` (the inverse of the text's map).
    fn text_offset(&self, f: u32) -> usize {
        let map = &self.text.map;
        let i = map.partition_point(|&(_, file)| file <= f);
        match i.checked_sub(1).and_then(|i| map.get(i)) {
            Some(&(t, file)) => (t + (f - file)) as usize,
            None => 0,
        }
    }

    pub(crate) fn binary(&self, op: BinOp, a: Expr, b: Expr, l: usize, r: usize) -> Expr {
        // The word form (`:eq:`) is the only spelling starting with `:` (between the
        // operands, after any closing parentheses and comments).
        let word_op = crate::expr::ast::word_form(op).is_some() && {
            let text = self.text.text.as_str();
            let from = self.text_offset(a.span.end).min(text.len());
            let to = self.text_offset(b.span.start).clamp(from, text.len());
            operator_start(text.get(from..to).unwrap_or("")) == Some(':')
        };
        let mut e = self.node(ExprKind::Binary(op, Box::new(a), Box::new(b)), l, r);
        e.word_op = word_op && matches!(e.kind, ExprKind::Binary(..));
        e
    }

    pub(crate) fn assign(&self, target: Expr, value: Expr, l: usize, r: usize) -> Expr {
        match target.kind {
            ExprKind::Ref(path) => self.node(
                ExprKind::Assign {
                    target: path,
                    value: Box::new(value),
                },
                l,
                r,
            ),
            ExprKind::Error => self.node(ExprKind::Error, l, r),
            _ => {
                self.error(
                    Diagnostic::error(
                        "invalid_assignment_target",
                        "the left side of `:=` must be a reference",
                    )
                    .with_primary(target.span, "not a reference")
                    .with_note("assign to a port or local variable: `${name} := ...`"),
                );
                self.node(ExprKind::Error, l, r)
            }
        }
    }

    pub(crate) fn number(&self, n: &str, l: usize, r: usize) -> Expr {
        match parse_number(n) {
            Ok(v) => self.node(ExprKind::Literal(v), l, r),
            Err(msg) => {
                self.error(
                    Diagnostic::error("invalid_literal", format!("invalid number: {msg}"))
                        .with_primary(self.span(l, r), "invalid number"),
                );
                self.node(ExprKind::Error, l, r)
            }
        }
    }

    /// `-e`. When `e` is a number token (at text offset `m`), the sign is part of the literal
    /// and applies after the range check: `-1U` is 4294967295U, `-2147483648` is out of range.
    pub(crate) fn negate(&self, e: Expr, m: usize, l: usize, r: usize) -> Expr {
        let number = self
            .text
            .text
            .as_bytes()
            .get(m)
            .is_some_and(u8::is_ascii_digit);
        match e.kind {
            ExprKind::Literal(v) if number => {
                self.node(ExprKind::Literal(pnet_stdlib::literal::negate(v)), l, r)
            }
            ExprKind::Error if number => self.node(ExprKind::Error, l, r),
            kind => self.node(
                ExprKind::Unary(UnOp::Neg, Box::new(Expr::new(kind, e.span))),
                l,
                r,
            ),
        }
    }

    /// `+n`: a number literal with an explicit sign (`+1f`).
    pub(crate) fn plus(&self, n: &str, m: usize, l: usize, r: usize) -> Expr {
        let e = self.number(n, m, r);
        Expr::new(e.kind, self.span(l, r))
    }

    /// A 64-bit word of a bitset literal.
    pub(crate) fn word(&self, n: &str, l: usize, r: usize) -> Option<u64> {
        let parsed = if let Some(hex) = n.strip_prefix("0x").or_else(|| n.strip_prefix("0X")) {
            u64::from_str_radix(hex, 16).ok()
        } else if n.bytes().all(|b| b.is_ascii_digit()) {
            n.parse().ok()
        } else {
            match parse_number(n) {
                Ok(Value::Int(i)) => u64::try_from(i).ok(),
                Ok(Value::Long(i)) => u64::try_from(i).ok(),
                Ok(Value::UInt(i)) => Some(u64::from(i)),
                Ok(Value::ULong(i)) => Some(i),
                _ => None,
            }
        };
        if parsed.is_none() {
            self.error(
                Diagnostic::error("invalid_literal", format!("invalid bitset word `{n}`"))
                    .with_primary(self.span(l, r), "expected an unsigned 64-bit number")
                    .with_note("a bitset literal is `{w0 w1 ...}`, least significant word first"),
            );
        }
        parsed
    }

    /// A byte of a bytearray literal: `0..=255` (decimal or hex, `0x41`), or `-128..=-1`
    /// (two's complement).
    pub(crate) fn byte(&self, neg: bool, n: &str, l: usize, r: usize) -> Option<u8> {
        let v: Option<i64> = match n.strip_prefix("0x").or_else(|| n.strip_prefix("0X")) {
            Some(hex) => i64::from_str_radix(hex, 16).ok(),
            None => n.parse().ok(),
        };
        let b = match (neg, v) {
            (false, Some(v @ 0..=255)) => Some(v as u8),
            (true, Some(v @ 0..=128)) => Some((-v) as i8 as u8),
            _ => None,
        };
        if b.is_none() {
            self.error(
                Diagnostic::error(
                    "invalid_literal",
                    format!("invalid byte `{}`", self.src(l, r)),
                )
                .with_primary(self.span(l, r), "expected a number from 0 to 255"),
            );
        }
        b
    }

    pub(crate) fn bitset(&self, ws: Vec<Option<u64>>, l: usize, r: usize) -> Expr {
        match ws.into_iter().collect::<Option<Vec<u64>>>() {
            Some(words) => self.node(
                ExprKind::Literal(Value::Bitset(Bitset::from_words(words))),
                l,
                r,
            ),
            None => self.node(ExprKind::Error, l, r),
        }
    }

    pub(crate) fn bytearray(&self, bs: Vec<Option<u8>>, l: usize, r: usize) -> Expr {
        match bs.into_iter().collect::<Option<Vec<u8>>>() {
            Some(bytes) => self.node(ExprKind::Literal(Value::Bytearray(bytes)), l, r),
            None => self.node(ExprKind::Error, l, r),
        }
    }

    /// An element of `List`, `Set`, `Map` or `Struct`: must be a literal.
    pub(crate) fn element(&self, e: Expr) -> Expr {
        if !is_literal(&e) {
            self.error(
                Diagnostic::error(
                    "non_literal_element",
                    "elements of `List`, `Set`, `Map` and `Struct` literals must be literals",
                )
                .with_primary(e.span, "not a literal")
                .with_note("build containers from expressions with `stack_push`, `set_insert`, `map_assign` or assignments to fields"),
            );
        }
        e
    }

    pub(crate) fn structure(&self, fs: Vec<(Ident, Expr)>, l: usize, r: usize) -> Expr {
        for (i, (f, _)) in fs.iter().enumerate() {
            if let Some((g, _)) = fs[..i].iter().find(|(g, _)| g.name == f.name) {
                self.error(
                    Diagnostic::error("duplicate_field", format!("duplicate field `{}`", f.name))
                        .with_primary(f.span, "given again here")
                        .with_secondary(g.span, "first given here"),
                );
            }
        }
        self.node(ExprKind::Struct(fs), l, r)
    }

    pub(crate) fn ident(&self, l: usize, r: usize) -> Ident {
        Ident {
            name: self.src(l, r).to_string(),
            span: self.span(l, r),
        }
    }

    pub(crate) fn unknown_function(&self, f: Ident, call: bool, l: usize, r: usize) -> Expr {
        let builtins = pnet_stdlib::Builtin::ALL.iter().map(|b| b.name());
        let d = if call {
            Diagnostic::error("unknown_function", format!("unknown function `{}`", f.name))
                .with_primary(f.span, "not a built-in function")
                .with_notes(
                    pnet_stdlib::suggest::nearest(&f.name, builtins)
                        .map(|b| format!("help: did you mean the built-in `{b}`?")),
                )
        } else {
            Diagnostic::error("unknown_function", format!("unknown name `{}`", f.name))
                .with_primary(f.span, "not a built-in function, constant or keyword")
                .with_note(format!(
                    "a reference to a port or variable is written `${{{}}}`",
                    f.name
                ))
        };
        self.error(d);
        self.node(ExprKind::Error, l, r)
    }

    /// An error recovered by the grammar (`!`): reports it (unless this statement already has
    /// a syntax error) and returns an `Error` node covering the skipped text.
    pub(crate) fn recover(
        &self,
        e: ErrorRecovery<usize, Tok<'a>, ()>,
        l: usize,
        r: usize,
        statement: bool,
    ) -> Expr {
        let at = match &e.error {
            ParseError::UnrecognizedToken {
                token: (s, _, _), ..
            } => *s,
            ParseError::UnrecognizedEof { location, .. } => *location,
            _ => l,
        };
        let already = statement
            && self
                .syntax_errors
                .borrow()
                .iter()
                .any(|&o| o >= l && o <= at);
        if !already {
            self.syntax_errors.borrow_mut().push(at);
            let d = self.parse_error(e.error);
            self.error(d);
        }
        self.node(ExprKind::Error, l, r.max(l))
    }

    fn parse_error(&self, e: ParseError<usize, Tok<'a>, ()>) -> Diagnostic {
        fn expected_note(expected: &[String]) -> Option<String> {
            // Terminals that start an expression: listed as "an expression".
            const STARTS: &[&str] = &[
                "\"-\"",
                "\"+\"",
                "\"div\"",
                "\"mod\"",
                "\"!\"",
                "\"(\"",
                "\"{\"",
                "\"[\"",
                "\"true\"",
                "\"false\"",
                "\"pi\"",
                "\"e\"",
                "\"List\"",
                "\"Set\"",
                "\"Map\"",
                "\"Struct\"",
                "\"y\"",
                "Num",
                "Lit",
                "Ref",
                "Fn1",
                "Fn2",
                "Fn3",
                "Shared",
                "UnknownCall",
                "Unknown",
                "Invalid",
            ];
            let mut names: Vec<String> = Vec::new();
            let starts_expr = expected.iter().any(|e| e == "Num");
            if starts_expr {
                names.push("an expression".into());
            }
            // Binary operators: listed as "an operator".
            const OPERATORS: &[&str] = &[
                "OrOp", "AndOp", "CmpOp", "\"+\"", "\"-\"", "MulOp", "\"div\"", "ModOp", "\"mod\"",
                "PowOp",
            ];
            let after_operand = expected.iter().any(|e| e == "CmpOp" || e == "OrOp");
            if after_operand {
                names.push("an operator".into());
            }
            for e in expected {
                if starts_expr && STARTS.contains(&e.as_str())
                    || after_operand && OPERATORS.contains(&e.as_str())
                {
                    continue;
                }
                let d = Tok::describe_terminal(e);
                if !names.contains(&d) {
                    names.push(d);
                }
            }
            match names.len() {
                0 => None,
                1 => Some(format!("expected {}", names[0])),
                _ => Some(format!("expected one of {}", names.join(", "))),
            }
        }
        match e {
            ParseError::UnrecognizedToken {
                token: (s, _, t),
                expected,
            } => {
                let d = Diagnostic::error(
                    "unexpected_token",
                    format!("unexpected `{}`", self.src(s, t)),
                )
                .with_primary(self.span(s, t), "unexpected here");
                match expected_note(&expected) {
                    Some(n) => d.with_note(n),
                    None => d,
                }
            }
            ParseError::UnrecognizedEof { location, expected } => {
                let d = Diagnostic::error("unexpected_end", "unexpected end of expression")
                    .with_primary(self.span(location, location), "the expression ends here");
                match expected_note(&expected) {
                    Some(n) => d.with_note(n),
                    None => d,
                }
            }
            ParseError::InvalidToken { location } => {
                Diagnostic::error("unexpected_token", "invalid token")
                    .with_primary(self.span(location, location), "here")
            }
            ParseError::ExtraToken { token: (s, _, t) } => Diagnostic::error(
                "unexpected_token",
                format!("unexpected `{}`", self.src(s, t)),
            )
            .with_primary(self.span(s, t), "unexpected here"),
            ParseError::User { .. } => Diagnostic::error("unexpected_token", "syntax error")
                .with_primary(self.text.whole(), "here"),
        }
    }
}

/// Whether `e` is a literal as allowed inside container literals: a literal value, a negated
/// numeric literal, a container literal, `shared_P (..)` or an error (already reported).
fn is_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Literal(_)
        | ExprKind::List(_)
        | ExprKind::Set(_)
        | ExprKind::Map(_)
        | ExprKind::Struct(_)
        | ExprKind::Shared(..)
        | ExprKind::Error => true,
        ExprKind::Unary(UnOp::Neg, inner) => matches!(
            inner.kind,
            ExprKind::Literal(
                Value::Int(_)
                    | Value::Long(_)
                    | Value::Float(_)
                    | Value::Double(_)
                    | Value::Bigint(_)
            )
        ),
        _ => false,
    }
}

/// Calls `f` on each direct child of a node.
fn for_each_child(kind: &ExprKind, mut f: impl FnMut(&Expr)) {
    match kind {
        ExprKind::Literal(_) | ExprKind::Ref(_) | ExprKind::Error => {}
        ExprKind::Assign { value: e, .. } | ExprKind::Unary(_, e) | ExprKind::Shared(_, e) => f(e),
        ExprKind::Binary(_, a, b) => {
            f(a);
            f(b);
        }
        ExprKind::Call(_, es) | ExprKind::List(es) | ExprKind::Set(es) | ExprKind::Seq(es) => {
            es.iter().for_each(f)
        }
        ExprKind::Map(kvs) => kvs.iter().for_each(|(k, v)| {
            f(k);
            f(v);
        }),
        ExprKind::Struct(fs) => fs.iter().for_each(|(_, e)| f(e)),
    }
}

/// Drops a tree without recursion (the derived drop recurses once per level).
fn dispose(e: Expr) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match e.kind {
            ExprKind::Literal(_) | ExprKind::Ref(_) | ExprKind::Error => {}
            ExprKind::Assign { value: a, .. } | ExprKind::Unary(_, a) | ExprKind::Shared(_, a) => {
                stack.push(*a)
            }
            ExprKind::Binary(_, a, b) => {
                stack.push(*a);
                stack.push(*b);
            }
            ExprKind::Call(_, es) | ExprKind::List(es) | ExprKind::Set(es) | ExprKind::Seq(es) => {
                stack.extend(es)
            }
            ExprKind::Map(kvs) => stack.extend(kvs.into_iter().flat_map(|(k, v)| [k, v])),
            ExprKind::Struct(fs) => stack.extend(fs.into_iter().map(|(_, e)| e)),
        }
    }
}

/// The first character of the operator in `gap` (the text between a binary expression's
/// operands): after blanks, closing parentheses and (nested) `/* ... */` comments.
fn operator_start(gap: &str) -> Option<char> {
    let mut rest = gap;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ')');
        let Some(mut inner) = rest.strip_prefix("/*") else {
            return rest.chars().next();
        };
        let mut depth = 1usize;
        while depth > 0 {
            let open = inner.find("/*");
            let close = inner.find("*/")?;
            match open {
                Some(o) if o < close => {
                    depth += 1;
                    inner = &inner[o + 2..];
                }
                _ => {
                    depth -= 1;
                    inner = &inner[close + 2..];
                }
            }
        }
        rest = inner;
    }
}
