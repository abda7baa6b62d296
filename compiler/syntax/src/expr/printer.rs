//! Printing expression trees: a compact S-expression form ([`to_sexpr`], used by tests and
//! `pnetc --emit=ast`) and fully parenthesised source ([`to_source`], which parses back to
//! the same tree).
//!
//! Literals print exactly (not in GPI-Space's 6-significant-digit style): floats and doubles
//! use the shortest representation that reads back (`1.5f`, `0.1`, `1e300`), strings escape
//! `"` and `\`. What cannot be written back: NaN and infinities, and chars that are not ASCII
//! (a char is one byte; text is UTF-8) which print as `'?'`.

use std::fmt::Write;

use pnet_stdlib::{UnOp, Value};

use crate::expr::ast::{Expr, ExprKind, Ident};

/// The tree as an S-expression: `(:= ${a} (+ 1 (* 2 3)))`, `(seq s1 s2)`, `(min a b)`,
/// `(List 1 2)`, `(Map (k v))`, `(Struct (f v))`, `(shared_P e)`, `<error>`.
pub fn to_sexpr(e: &Expr) -> String {
    let mut out = String::new();
    sexpr(e, &mut out);
    out
}

fn sexpr(e: &Expr, out: &mut String) {
    let list = |head: &str, es: &[Expr], out: &mut String| {
        out.push('(');
        out.push_str(head);
        for e in es {
            out.push(' ');
            sexpr(e, out);
        }
        out.push(')');
    };
    match &e.kind {
        ExprKind::Literal(v) => literal(v, out),
        ExprKind::Ref(path) => reference(path, out),
        ExprKind::Assign { target, value } => {
            out.push_str("(:= ");
            reference(target, out);
            out.push(' ');
            sexpr(value, out);
            out.push(')');
        }
        ExprKind::Unary(op, a) => list(op.symbol(), std::slice::from_ref(a), out),
        ExprKind::Binary(op, a, b) => {
            let _ = write!(out, "({} ", op.symbol());
            sexpr(a, out);
            out.push(' ');
            sexpr(b, out);
            out.push(')');
        }
        ExprKind::Call(f, args) => list(f.name(), args, out),
        ExprKind::Shared(p, a) => list(&format!("shared_{}", p.name), std::slice::from_ref(a), out),
        ExprKind::List(es) => list("List", es, out),
        ExprKind::Set(es) => list("Set", es, out),
        ExprKind::Map(kvs) => {
            out.push_str("(Map");
            for (k, v) in kvs {
                out.push_str(" (");
                sexpr(k, out);
                out.push(' ');
                sexpr(v, out);
                out.push(')');
            }
            out.push(')');
        }
        ExprKind::Struct(fs) => {
            out.push_str("(Struct");
            for (f, v) in fs {
                let _ = write!(out, " ({} ", f.name);
                sexpr(v, out);
                out.push(')');
            }
            out.push(')');
        }
        ExprKind::Seq(es) => list("seq", es, out),
        ExprKind::Error => out.push_str("<error>"),
    }
}

/// The tree as source text, every operation parenthesised. Parsing it gives the same tree
/// (spans aside) for every tree the parser can produce, with the limits named in the module
/// documentation. `Error` nodes print as `<error>`.
pub fn to_source(e: &Expr) -> String {
    let mut out = String::new();
    source(e, &mut out);
    out
}

fn source(e: &Expr, out: &mut String) {
    let args = |es: &[Expr], out: &mut String| {
        for (i, e) in es.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            source(e, out);
        }
    };
    match &e.kind {
        ExprKind::Literal(v) => literal(v, out),
        ExprKind::Ref(path) => reference(path, out),
        ExprKind::Assign { target, value } => {
            out.push('(');
            reference(target, out);
            out.push_str(" := ");
            source(value, out);
            out.push(')');
        }
        ExprKind::Unary(op, a) => {
            out.push_str(match op {
                UnOp::Neg => "(- ",
                UnOp::Not => "(! ",
            });
            // A `-` directly before a number is the number's sign: `(- (1))` keeps the operator.
            let number = *op == UnOp::Neg
                && matches!(a.kind, ExprKind::Literal(ref v) if v.ty().is_number());
            if number {
                out.push('(');
            }
            source(a, out);
            if number {
                out.push(')');
            }
            out.push(')');
        }
        ExprKind::Binary(op, a, b) => {
            out.push('(');
            source(a, out);
            let _ = write!(out, " {} ", op.symbol());
            source(b, out);
            out.push(')');
        }
        ExprKind::Call(f, es) => {
            let _ = write!(out, "({} (", f.name());
            args(es, out);
            out.push_str("))");
        }
        ExprKind::Shared(p, a) => {
            let _ = write!(out, "(shared_{} (", p.name);
            source(a, out);
            out.push_str("))");
        }
        ExprKind::List(es) => {
            out.push_str("List (");
            args(es, out);
            out.push(')');
        }
        ExprKind::Set(es) => {
            out.push_str("Set {");
            args(es, out);
            out.push('}');
        }
        ExprKind::Map(kvs) => {
            out.push_str("Map [");
            for (i, (k, v)) in kvs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                source(k, out);
                out.push_str(" -> ");
                source(v, out);
            }
            out.push(']');
        }
        ExprKind::Struct(fs) => {
            out.push_str("Struct [");
            for (i, (f, v)) in fs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{} := ", f.name);
                source(v, out);
            }
            out.push(']');
        }
        ExprKind::Seq(es) => {
            for (i, e) in es.iter().enumerate() {
                if i > 0 {
                    out.push_str("; ");
                }
                source(e, out);
            }
        }
        ExprKind::Error => out.push_str("<error>"),
    }
}

fn reference(path: &[Ident], out: &mut String) {
    out.push_str("${");
    for (i, p) in path.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        out.push_str(&p.name);
    }
    out.push('}');
}

/// A value in (exact) literal syntax.
pub fn literal(v: &Value, out: &mut String) {
    let seq = |vs: &mut dyn Iterator<Item = &Value>, out: &mut String| {
        for (i, v) in vs.enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            literal(v, out);
        }
    };
    let _ = match v {
        Value::Control => write!(out, "[]"),
        Value::Bool(b) => write!(out, "{b}"),
        Value::Int(i) => write!(out, "{i}"),
        Value::Long(i) => write!(out, "{i}L"),
        Value::UInt(i) => write!(out, "{i}U"),
        Value::ULong(i) => write!(out, "{i}UL"),
        Value::Float(f) => write!(out, "{f:?}f"),
        Value::Double(d) => write!(out, "{d:?}"),
        Value::Char(c) => {
            let b = *c as u8;
            write!(out, "'{}'", if b.is_ascii() { b as char } else { '?' })
        }
        Value::String(s) => {
            out.push('"');
            for c in s.chars() {
                if c == '"' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            write!(out, "\"")
        }
        Value::Bitset(b) => {
            // (A set of more than 2^16 words skips runs of zero words with `@i`: see
            // `pnet_stdlib::value::bitset`.)
            out.push('{');
            let _ = b.write_words(out, false);
            write!(out, "}}")
        }
        Value::Bytearray(bs) => {
            out.push_str("y(");
            for (i, b) in bs.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                let _ = write!(out, "{b}");
            }
            write!(out, ")")
        }
        Value::Bigint(i) => write!(out, "{i}A"),
        Value::Shared(s) => {
            let _ = write!(out, "shared_{} (", s.place);
            literal(&s.value, out);
            write!(out, ")")
        }
        Value::List(vs) => {
            out.push_str("List (");
            seq(&mut vs.iter(), out);
            write!(out, ")")
        }
        Value::Set(vs) => {
            out.push_str("Set {");
            seq(&mut vs.iter(), out);
            write!(out, "}}")
        }
        Value::Map(kvs) => {
            out.push_str("Map [");
            for (i, (k, v)) in kvs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                literal(k, out);
                out.push_str(" -> ");
                literal(v, out);
            }
            write!(out, "]")
        }
        Value::Struct(fs) => {
            out.push_str("Struct [");
            for (i, (f, v)) in fs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{f} := ");
                literal(v, out);
            }
            write!(out, "]")
        }
    };
}
