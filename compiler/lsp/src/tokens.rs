//! Inside the XML, the expression language: semantic tokens (keywords, operators, `${...}`
//! references, literals, functions) and inlay hints (the type of each `${...}` reference),
//! from the expression lexer run on the texts of `<expression>` and `<condition>` elements.

use std::path::Path;

use lsp_types::{SemanticToken, SemanticTokenType};
use pnet_syntax::Span;
use pnet_syntax::expr::lexer::{Tok, tokenize};
use pnet_syntax::span::MappedText;
use pnet_syntax::xml::{self, DefunBody, Root, TransitionBody};

use pnet_sema::facts::Scope;

use crate::analysis::Analysis;
use crate::features::{NearScopes, path_type};

/// The token types, in the order of the legend the server announces.
pub const LEGEND: [SemanticTokenType; 6] = [
    SemanticTokenType::KEYWORD,
    SemanticTokenType::OPERATOR,
    SemanticTokenType::VARIABLE,
    SemanticTokenType::NUMBER,
    SemanticTokenType::STRING,
    SemanticTokenType::FUNCTION,
];

const KEYWORD: u32 = 0;
const OPERATOR: u32 = 1;
const VARIABLE: u32 = 2;
const NUMBER: u32 = 3;
const STRING: u32 = 4;
const FUNCTION: u32 = 5;

fn texts_of_defun<'a>(d: &'a xml::Defun, out: &mut Vec<&'a MappedText>) {
    out.extend(&d.conditions);
    match &d.body {
        Some(DefunBody::Expression(t)) => out.push(t),
        Some(DefunBody::Net(n)) => {
            for t in &n.templates {
                if let xml::TemplateItem::Inline(t) = t
                    && let Some(d) = &t.defun
                {
                    texts_of_defun(d, out);
                }
            }
            for t in &n.transitions {
                out.extend(&t.conditions);
                if let Some(TransitionBody::Defun(d)) = &t.body {
                    texts_of_defun(d, out);
                }
            }
        }
        _ => {}
    }
}

/// The expression and condition texts of a parsed file.
pub fn expression_texts(root: &Root) -> Vec<&MappedText> {
    let mut out = Vec::new();
    match root {
        Root::Defun(d) => texts_of_defun(d, &mut out),
        Root::Template(t) => {
            if let Some(d) = &t.defun {
                texts_of_defun(d, &mut out);
            }
        }
        _ => {}
    }
    out
}

/// A lexed token of an expression: its file span and semantic type.
#[derive(Clone, Debug, PartialEq)]
pub struct ExprToken {
    pub span: Span,
    pub ty: u32,
    /// For a `${...}` reference: its path.
    pub path: Option<Vec<String>>,
    /// Which expression text of the file it is in (they share a scope).
    pub text: usize,
}

fn classify(t: &Tok) -> Option<u32> {
    Some(match t {
        Tok::True
        | Tok::False
        | Tok::Pi
        | Tok::E
        | Tok::List
        | Tok::Set
        | Tok::Map
        | Tok::Struct
        | Tok::Y
        | Tok::Div
        | Tok::Mod => KEYWORD,
        Tok::Assign
        | Tok::OrOp(_)
        | Tok::AndOp(_)
        | Tok::CmpOp(_)
        | Tok::Plus
        | Tok::Minus
        | Tok::MulOp(_)
        | Tok::ModOp(_)
        | Tok::PowOp(_)
        | Tok::Not
        | Tok::Arrow => OPERATOR,
        Tok::Ref(_) => VARIABLE,
        Tok::Num(_) => NUMBER,
        Tok::Lit(_) => STRING,
        Tok::Fn1(_) | Tok::Fn2(_) | Tok::Fn3(_) | Tok::Shared(_) | Tok::UnknownCall(_) => FUNCTION,
        _ => return None,
    })
}

/// The tokens of the expressions of the open document `path`, in file order: every
/// expression, or (`range`) at least those of the places and transitions of the root net
/// that meet the byte range (parsed alone: [`Analysis::root_in`]) and those outside them.
pub fn expression_tokens(a: &Analysis, path: &Path, range: Option<(u32, u32)>) -> Vec<ExprToken> {
    let Some(l) = a.locate(path).into_iter().next() else {
        return Vec::new();
    };
    let Some(root) = a.root_in(l, range) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (index, text) in expression_texts(&root).into_iter().enumerate() {
        let mut diags = Vec::new();
        let mut stray = Vec::new();
        for (s, tok, e) in tokenize(text, &mut diags, &mut stray) {
            let Some(ty) = classify(&tok) else {
                continue;
            };
            let path = match &tok {
                Tok::Ref(p) => Some(p.iter().map(|i| i.name.clone()).collect()),
                _ => None,
            };
            out.push(ExprToken {
                span: text.span(s as u32, e as u32),
                ty,
                path,
                text: index,
            });
        }
    }
    out.sort_by_key(|t| t.span.start);
    out
}

/// The semantic tokens of the open document `path` (LSP's relative encoding).
pub fn semantic_tokens(a: &Analysis, path: &Path) -> Vec<SemanticToken> {
    let Some(doc) = a.docs.get(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let (mut line, mut col) = (0, 0);
    for t in expression_tokens(a, path, None) {
        let r = doc.index.range(&doc.text, t.span.start, t.span.end);
        // tokens spanning lines (a long string) are left to the editor
        if r.start.line != r.end.line || r.end.character <= r.start.character {
            continue;
        }
        let delta_line = r.start.line - line;
        let delta_start = if delta_line == 0 {
            r.start.character - col
        } else {
            r.start.character
        };
        out.push(SemanticToken {
            delta_line,
            delta_start,
            length: r.end.character - r.start.character,
            token_type: t.ty,
            token_modifiers_bitset: 0,
        });
        (line, col) = (r.start.line, r.start.character);
    }
    out
}

/// Inlay hints: after each `${...}` reference in `start..end`, its type (`: long`), from the
/// ports of the defun it is in.
pub fn inlay_hints(a: &Analysis, path: &Path, start: u32, end: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let located = a.locate(path);
    // the scopes of the last expression text, in each workspace (one look-up per text)
    let indexes: Vec<NearScopes> = located
        .iter()
        .map(|&l| NearScopes::new(a, l, start, end))
        .collect();
    let mut scopes: (Option<usize>, Vec<Option<&Scope>>) = (None, Vec::new());
    for t in expression_tokens(a, path, Some((start, end))) {
        let Some(p) = &t.path else {
            continue;
        };
        if t.span.end < start || t.span.start > end {
            continue;
        }
        if scopes.0 != Some(t.text) {
            scopes = (
                Some(t.text),
                indexes
                    .iter()
                    .map(|index| index.at(t.span.start, t.span.end))
                    .collect(),
            );
        }
        for scope in scopes.1.iter().flatten() {
            if let Some(ty) = path_type(scope, p) {
                let name = match &ty {
                    pnet_stdlib::Type::Struct(st) => st.name.to_string(),
                    t => t.to_string(),
                };
                out.push((t.span.end, format!(": {name}")));
                break;
            }
        }
    }
    out
}
