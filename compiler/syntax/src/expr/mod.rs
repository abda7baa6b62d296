//! The expression language: AST, lexer (logos) and parser (lalrpop, grammar in
//! `grammar/expr.lalrpop`).

pub mod ast;

pub use ast::{Expr, ExprKind, Ident};
