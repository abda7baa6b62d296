//! Generated inputs far deeper than anyone writes: the parser stops at
//! [`MAX_EXPR_DEPTH`] with one diagnostic, and the tree it returns stays bounded
//! (tests run on 2 MiB threads: an unbounded tree would overflow in any recursive walk or in
//! its drop).

use super::*;

/// The number of nodes on the longest root-to-leaf path, without recursion.
fn height(e: &Expr) -> usize {
    let mut max = 0;
    let mut stack = vec![(e, 1)];
    while let Some((e, d)) = stack.pop() {
        max = usize::max(max, d);
        let mut children = Vec::new();
        match &e.kind {
            ExprKind::Literal(_) | ExprKind::Ref(_) | ExprKind::Error => {}
            ExprKind::Assign { value: a, .. } | ExprKind::Unary(_, a) | ExprKind::Shared(_, a) => {
                children.push(&**a)
            }
            ExprKind::Binary(_, a, b) => children.extend([&**a, &**b]),
            ExprKind::Call(_, es) | ExprKind::List(es) | ExprKind::Set(es) | ExprKind::Seq(es) => {
                children.extend(es)
            }
            ExprKind::Map(kvs) => children.extend(kvs.iter().flat_map(|(k, v)| [k, v])),
            ExprKind::Struct(fs) => children.extend(fs.iter().map(|(_, e)| e)),
        }
        stack.extend(children.into_iter().map(|c| (c, d + 1)));
    }
    max
}

fn too_deep(src: &str) -> (Expr, Vec<Diagnostic>) {
    let (e, diags) = parse_str(src);
    assert!(height(&e) <= MAX_EXPR_DEPTH + 1, "unbounded tree");
    let deep: Vec<_> = diags
        .iter()
        .filter(|d| d.code == "expression_too_deep")
        .collect();
    assert_eq!(deep.len(), 1, "{diags:?}");
    assert!(deep[0].notes[0].contains("split it into statements"));
    (e, diags)
}

/// `${b} := ${a} + 1L + 1L ...` with `n` terms after `${a}`.
fn sum_chain(n: usize) -> String {
    format!("${{b}} := ${{a}}{}", " + 1L".repeat(n))
}

#[test]
fn the_deepest_allowed_chain_parses_cleanly() {
    // The assignment is one level, `${a}` another: MAX - 2 additions reach the limit.
    let (e, diags) = parse_str(&sum_chain(MAX_EXPR_DEPTH - 2));
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(height(&e), MAX_EXPR_DEPTH);
    let (_, diags) = parse_str(&sum_chain(MAX_EXPR_DEPTH - 1));
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].code, "expression_too_deep");
}

#[test]
fn a_long_sum_chain_is_one_diagnostic_at_the_operator_crossing_the_limit() {
    // The input: about 5,000 terms (25 KB).
    let src = sum_chain(5000);
    let (e, diags) = too_deep(&src);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(matches!(e.kind, ExprKind::Error));
    // `${a}` is one level, each `+` one more: the limit is crossed at the MAX-th `+` from
    // the left.
    let at = diags[0].primary_span().unwrap();
    let plus = src.match_indices('+').nth(MAX_EXPR_DEPTH - 1).unwrap().0;
    assert_eq!(at.range(), plus..plus + 1);
}

#[test]
fn ten_thousand_unary_minus_signs() {
    let src = format!("${{b}} := {}${{a}}", "- ".repeat(10_000));
    let (_, diags) = too_deep(&src);
    let at = diags[0].primary_span().unwrap();
    assert_eq!(&src[at.range()], "-");
    let src = format!("${{b}} := {}true", "!".repeat(10_000));
    too_deep(&src);
}

#[test]
fn nested_parentheses_calls_and_collection_literals() {
    // Parentheses alone add no node: 10,000 of them are fine.
    let (_, diags) = parse_str(&format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000)));
    assert!(diags.is_empty(), "{diags:?}");
    for (open, close, op) in [
        ("abs (", ")", "abs"),
        ("min (1, ", ")", "min"),
        ("(1 + ", ")", "+"),
        ("List (", ")", "List"),
        ("Set {", "}", "Set"),
        ("Map [1 -> ", "]", "Map"),
        ("Struct [a := ", "]", "Struct"),
        ("shared_p (", ")", "shared_p"),
        ("2 ** ", "", "**"),
    ] {
        let src = format!("{}1{}", open.repeat(5000), close.repeat(5000));
        let (_, diags) = too_deep(&src);
        let at = diags[0].primary_span().unwrap();
        assert_eq!(&src[at.range()], op, "{open}");
    }
}

#[test]
fn every_statement_is_checked_and_errors_do_not_cascade() {
    let deep = sum_chain(3000);
    let src = format!("{deep}; ${{c}} := 1; {deep}");
    let (e, diags) = parse_str(&src);
    assert_eq!(diags.len(), 2, "{diags:?}");
    let ExprKind::Seq(stmts) = &e.kind else {
        panic!("{e:?}")
    };
    assert!(matches!(stmts[1].kind, ExprKind::Assign { .. }));
    assert!(height(&e) <= MAX_EXPR_DEPTH + 1);
}

#[test]
fn a_syntax_error_after_a_deep_chain_is_safe() {
    // Error recovery drops what the parser built so far.
    for src in [
        format!("{} )", sum_chain(5000)),
        format!("{} 1 2", sum_chain(5000)),
        format!("${{b}} := ({}", "- ".repeat(10_000)),
        format!("{} +", "List (".repeat(5000)),
    ] {
        let (e, _) = parse_str(&src);
        assert!(height(&e) <= MAX_EXPR_DEPTH + 1);
    }
}

#[test]
fn deep_trees_print_without_recursion_trouble() {
    let (e, diags) = parse_str(&sum_chain(MAX_EXPR_DEPTH - 2));
    assert!(diags.is_empty());
    let printed = to_source(&e);
    let (again, diags) = parse_str(&printed);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(to_sexpr(&again), to_sexpr(&e));
}
