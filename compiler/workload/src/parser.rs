//! The hand-written recursive-descent parser. It never fails: every problem becomes a
//! diagnostic and the parser skips to the next `;`, `}` or top-level keyword.

use crate::ast::*;
use crate::diag::{self, Build, Diagnostic};
use crate::lexer::{Tok, Token, tokenize};

/// Parses `text` into a syntax tree (semantic checks are in [`crate::check`]).
pub fn parse_syntax(text: &str) -> (Workload, Vec<Diagnostic>) {
    let mut p = Parser {
        text,
        toks: tokenize(text),
        pos: 0,
        diags: Vec::new(),
        workload: Workload::default(),
    };
    p.workload_();
    (p.workload, p.diags)
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token>,
    pos: usize,
    diags: Vec<Diagnostic>,
    workload: Workload,
}

/// Returned when a construct cannot go on; the caller recovers.
struct Stop;

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Token> {
        self.toks.get(self.pos).copied()
    }

    fn peek_kind(&self) -> Option<Tok> {
        self.peek().map(|t| t.kind)
    }

    fn slice(&self, t: Token) -> &'a str {
        self.text.get(t.start..t.end).unwrap_or("")
    }

    fn at_word(&self, w: &str) -> bool {
        self.peek()
            .is_some_and(|t| t.kind == Tok::Word && self.slice(t) == w)
    }

    /// The span of the current token, or an empty span at the end of the text.
    fn here(&self) -> Span {
        match self.peek() {
            Some(t) => t.start..t.end,
            None => self.text.len()..self.text.len(),
        }
    }

    fn prev_end(&self) -> usize {
        self.pos
            .checked_sub(1)
            .and_then(|i| self.toks.get(i))
            .map_or(0, |t| t.end)
    }

    fn describe(&self) -> String {
        match self.peek() {
            None => "the end of the file".to_string(),
            Some(t) => match t.kind {
                Tok::Single(_) | Tok::Double(_) => "a string".to_string(),
                Tok::Unknown => format!("the character `{}`", self.slice(t)),
                _ => format!("`{}`", self.slice(t)),
            },
        }
    }

    fn unexpected(&mut self, expected: &str) -> Stop {
        let found = self.describe();
        let span = self.here();
        // One report per place (recovery may stop at the same token again).
        if self
            .diags
            .last()
            .is_some_and(|d| diag::primary_range(d) == span)
        {
            return Stop;
        }
        let d = match self.peek() {
            Some(t) if t.kind == Tok::Unknown => diag::error(
                "workload-unknown-character",
                span,
                format!(
                    "unexpected character `{}`; expected {expected}",
                    self.slice(t)
                ),
            ),
            _ => diag::error(
                "workload-syntax",
                span,
                format!("expected {expected}, found {found}"),
            ),
        };
        self.diags.push(d);
        Stop
    }

    fn expect(&mut self, kind: Tok, what: &str) -> Result<Token, Stop> {
        match self.peek() {
            Some(t) if t.kind == kind => {
                self.pos += 1;
                Ok(t)
            }
            _ => Err(self.unexpected(what)),
        }
    }

    fn eat(&mut self, kind: Tok) -> bool {
        if self.peek_kind() == Some(kind) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// A name: a word, then any `-word` / `-number` / `_`-less parts written without spaces.
    fn name(&mut self, what: &str) -> Result<Name, Stop> {
        let first = self.expect(Tok::Word, what)?;
        let (start, mut end) = (first.start, first.end);
        while let (Some(m), Some(n)) = (self.toks.get(self.pos), self.toks.get(self.pos + 1)) {
            if m.kind == Tok::Minus
                && m.start == end
                && n.start == m.end
                && matches!(n.kind, Tok::Word | Tok::Number)
            {
                end = n.end;
                self.pos += 2;
            } else {
                break;
            }
        }
        Ok(Name {
            text: self.text[start..end].to_string(),
            span: start..end,
        })
    }

    fn string(&mut self, what: &str) -> Result<Str, Stop> {
        let Some(t) = self.peek() else {
            return Err(self.unexpected(what));
        };
        let raw = self.slice(t);
        let value = match t.kind {
            Tok::Single(closed) => {
                self.pos += 1;
                if !closed {
                    self.unterminated(t);
                    raw.get(1..).unwrap_or("").to_string()
                } else {
                    raw.get(1..raw.len().saturating_sub(1))
                        .unwrap_or("")
                        .to_string()
                }
            }
            Tok::Double(closed) => {
                self.pos += 1;
                let inner = if closed {
                    raw.get(1..raw.len().saturating_sub(1)).unwrap_or("")
                } else {
                    self.unterminated(t);
                    raw.get(1..).unwrap_or("")
                };
                self.unescape(inner, t.start + 1)
            }
            _ => return Err(self.unexpected(what)),
        };
        Ok(Str {
            value,
            span: t.start..t.end,
        })
    }

    fn unterminated(&mut self, t: Token) {
        self.diags.push(
            diag::error(
                "workload-unterminated-string",
                t.start..t.end,
                "this string has no closing quote",
            )
            .note("strings are '...' (no escapes) or \"...\" (escapes \\\\ \\\" \\n \\t)"),
        );
    }

    fn unescape(&mut self, inner: &str, base: usize) -> String {
        let mut out = String::new();
        let mut chars = inner.char_indices();
        while let Some((i, c)) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some((_, '\\')) => out.push('\\'),
                Some((_, '"')) => out.push('"'),
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                other => {
                    let end = other.map_or(i + 1, |(j, c)| j + c.len_utf8());
                    out.push_str(&inner[i..end]);
                    self.diags.push(
                        diag::error(
                            "workload-invalid-escape",
                            base + i..base + end,
                            format!("unknown escape `{}`", &inner[i..end]),
                        )
                        .note("in \"...\" strings the escapes are \\\\ \\\" \\n \\t; '...' strings have none"),
                    );
                }
            }
        }
        out
    }

    /// Skips to just after the next `;` (or before a `}` or a top-level keyword).
    fn recover_member(&mut self) {
        while let Some(t) = self.peek() {
            match t.kind {
                Tok::Semi => {
                    self.pos += 1;
                    return;
                }
                Tok::RBrace => return,
                Tok::Word if matches!(self.slice(t), "task" | "relation") => return,
                _ => self.pos += 1,
            }
        }
    }

    /// Skips to the next top-level keyword (after a `}` or `;` if one comes first).
    fn recover_top(&mut self) {
        while let Some(t) = self.peek() {
            match t.kind {
                Tok::Semi | Tok::RBrace => {
                    self.pos += 1;
                    return;
                }
                Tok::Word if matches!(self.slice(t), "task" | "relation") => return,
                _ => self.pos += 1,
            }
        }
    }

    fn workload_(&mut self) {
        while self.peek().is_some() {
            let start = self.pos;
            let r = if self.at_word("task") {
                self.task()
            } else if self.at_word("relation") {
                self.relation()
            } else {
                Err(self.unexpected("`task` or `relation`"))
            };
            if r.is_err() {
                self.recover_top();
            }
            if self.pos == start {
                self.pos += 1;
            }
        }
    }

    /// `( KIND, ... )` after the `(`.
    fn kinds(&mut self, kinds: &mut Kinds) -> Result<(), Stop> {
        loop {
            let n = self.name("a kind (CONCURRENT, SEQUENTIAL_START, SEQUENTIAL_END, NONE, COMMUNICATION, INPUT-OUTPUT)")?;
            match Kind::parse(&n.text) {
                None => self.diags.push(
                    diag::error(
                        "workload-unknown-kind",
                        n.span.clone(),
                        format!("unknown kind `{}`", n.text),
                    )
                    .note("time kinds: CONCURRENT, SEQUENTIAL_START, SEQUENTIAL_END; space kinds: COMMUNICATION, INPUT-OUTPUT; NONE"),
                ),
                Some(Kind::None) => {}
                Some(Kind::Time(t)) => {
                    if let Some(prev) = &kinds.time_span {
                        self.diags.push(
                            diag::error(
                                "workload-duplicate-kind",
                                n.span.clone(),
                                "more than one time kind",
                            )
                            .label(prev.clone(), "the first time kind"),
                        );
                    } else {
                        kinds.time = t;
                        kinds.time_span = Some(n.span.clone());
                    }
                }
                Some(Kind::Space(s)) => {
                    if let Some(prev) = &kinds.space_span {
                        self.diags.push(
                            diag::error(
                                "workload-duplicate-kind",
                                n.span.clone(),
                                "more than one space kind",
                            )
                            .label(prev.clone(), "the first space kind"),
                        );
                    } else {
                        kinds.space = s;
                        kinds.space_span = Some(n.span.clone());
                    }
                }
            }
            if self.eat(Tok::Comma) {
                continue;
            }
            self.expect(Tok::RParen, "`,` or `)`")?;
            return Ok(());
        }
    }

    fn task(&mut self) -> Result<(), Stop> {
        let start = self.here().start;
        self.pos += 1; // `task`
        let name = self.name("the task's name")?;
        let mut task = Task {
            name,
            cardinality: 0,
            cardinality_span: None,
            kinds: Kinds::default(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            properties: Vec::new(),
            span: start..start,
        };
        if self.eat(Tok::LBracket) {
            let from = self.here().start;
            let negative = self.eat(Tok::Minus);
            let t = self.expect(Tok::Number, "the cardinality (a number of instances)")?;
            let span = from..t.end;
            match self.slice(t).parse::<u32>() {
                Ok(n) if !negative && n <= MAX_CARDINALITY => task.cardinality = n,
                _ => self.diags.push(
                    diag::error(
                        "workload-invalid-cardinality",
                        span.clone(),
                        format!(
                            "the cardinality `{}` is not a number of instances",
                            &self.text[span.clone()]
                        ),
                    )
                    .note(format!(
                        "a cardinality is 0 (unspecified: one instance) up to {MAX_CARDINALITY}"
                    )),
                ),
            }
            task.cardinality_span = Some(span);
            self.expect(Tok::RBracket, "`]`")?;
        }
        if self.eat(Tok::LParen) {
            self.kinds(&mut task.kinds)?;
        }
        self.expect(Tok::LBrace, "`{` (or `[N]`, `(KINDS)` before it)")?;
        loop {
            match self.peek_kind() {
                None => {
                    let e = self.unexpected("`}`");
                    task.span = start..self.text.len();
                    self.workload.tasks.push(task);
                    return Err(e);
                }
                Some(Tok::RBrace) => {
                    self.pos += 1;
                    break;
                }
                _ => {}
            }
            if self.at_word("task") || self.at_word("relation") {
                self.diags.push(diag::error(
                    "workload-syntax",
                    self.here(),
                    format!("expected `}}` to close task `{}`", task.name.text),
                ));
                break;
            }
            let before = self.pos;
            if self.member(&mut task).is_err() {
                self.recover_member();
            }
            if self.pos == before {
                self.pos += 1;
            }
        }
        task.span = start..self.prev_end();
        self.workload.tasks.push(task);
        Ok(())
    }

    fn member(&mut self, task: &mut Task) -> Result<(), Stop> {
        let start = self.here().start;
        let is_in = self.at_word("in");
        if is_in || self.at_word("out") {
            self.pos += 1;
            let name = self.name("a port name")?;
            self.expect(Tok::Colon, "`:` and the port's type")?;
            let ty_name = self.name("a port type (URI, STRING or INTEGER)")?;
            let ty = PortType::parse(&ty_name.text);
            if ty.is_none() {
                self.diags.push(
                    diag::error(
                        "workload-unknown-type",
                        ty_name.span.clone(),
                        format!("unknown port type `{}`", ty_name.text),
                    )
                    .note("port types are URI, STRING and INTEGER"),
                );
            }
            let mut value = None;
            if self.peek_kind() == Some(Tok::Eq) {
                let eq = self.here();
                self.pos += 1;
                let v = self.string("the port's value (a string)")?;
                if is_in {
                    value = Some(v);
                } else {
                    self.diags.push(diag::error(
                        "workload-output-value",
                        eq.start..v.span.end,
                        "an output port has no value",
                    ));
                }
            }
            self.expect(Tok::Semi, "`;`")?;
            let port = Port {
                name,
                ty,
                value,
                span: start..self.prev_end(),
            };
            if is_in {
                task.inputs.push(port);
            } else {
                task.outputs.push(port);
            }
            return Ok(());
        }
        let p = self.property("`in`, `out`, a property `KEY = 'value';` or `}`")?;
        task.properties.push(p);
        Ok(())
    }

    fn property(&mut self, what: &str) -> Result<Property, Stop> {
        let start = self.here().start;
        let key = self.name(what)?;
        self.expect(Tok::Eq, "`=` and the property's value")?;
        let value = self.string("the property's value (a string)")?;
        self.expect(Tok::Semi, "`;`")?;
        Ok(Property {
            key,
            value,
            span: start..self.prev_end(),
        })
    }

    fn endpoint(&mut self, what: &str) -> Result<Endpoint, Stop> {
        let task = self.name(what)?;
        let port = if self.eat(Tok::Dot) {
            Some(self.name("a port name")?)
        } else {
            None
        };
        Ok(Endpoint { task, port })
    }

    fn relation(&mut self) -> Result<(), Stop> {
        let start = self.here().start;
        self.pos += 1; // `relation`
        let tail = self.endpoint("the tail task")?;
        self.expect(Tok::Arrow, "`->`")?;
        let head = self.endpoint("the head task")?;
        let mut kinds = Kinds::default();
        if self.eat(Tok::LParen) {
            self.kinds(&mut kinds)?;
        }
        let mut properties = Vec::new();
        let mut result = Ok(());
        if self.eat(Tok::LBrace) {
            loop {
                match self.peek_kind() {
                    None => {
                        result = Err(self.unexpected("`}`"));
                        break;
                    }
                    Some(Tok::RBrace) => {
                        self.pos += 1;
                        break;
                    }
                    _ => {}
                }
                if self.at_word("task") || self.at_word("relation") {
                    self.diags.push(diag::error(
                        "workload-syntax",
                        self.here(),
                        "expected `}` to close the relation's properties",
                    ));
                    break;
                }
                let before = self.pos;
                match self.property("a property `KEY = 'value';` or `}`") {
                    Ok(p) => properties.push(p),
                    Err(Stop) => self.recover_member(),
                }
                if self.pos == before {
                    self.pos += 1;
                }
            }
            self.eat(Tok::Semi);
        } else if let Err(e) = self.expect(Tok::Semi, "`;` or `{`") {
            result = Err(e);
        }
        self.workload.relations.push(Relation {
            tail,
            head,
            kinds,
            properties,
            span: start..self.prev_end(),
        });
        result
    }
}

/// The largest cardinality accepted (each instance is a token of the generated net).
pub const MAX_CARDINALITY: u32 = 100_000;
