use expect_test::{Expect, expect};

use super::*;

fn render(input: &str) -> String {
    let (e, diags) = parse_str(input);
    let mut out = to_sexpr(&e);
    for d in &diags {
        let s = d.primary_span().unwrap_or_default();
        out.push_str(&format!(
            "\n{}@{}..{}: {}",
            d.code, s.start, s.end, d.message
        ));
    }
    out
}

fn check(input: &str, expect: Expect) {
    expect.assert_eq(&render(input));
}

#[test]
fn empty_programs() {
    check("", expect!["(seq)"]);
    check("  /* only a comment */ ", expect!["(seq)"]);
    check(";", expect!["(seq)"]);
}

#[test]
fn literals() {
    check("[]", expect!["[]"]);
    check(
        "true; false; pi; e",
        expect!["(seq true false 3.141592653589793 2.718281828459045)"],
    );
    check(
        "23; 23L; 23l; 23U; 23u; 23UL; 23ul; 23A; 0x1f",
        expect!["(seq 23 23L 23L 23U 23U 23UL 23UL 23A 31)"],
    );
    check(
        "1.5f; 1f; 1.5; 1e3; 1.5e-3; 2E+2",
        expect!["(seq 1.5f 1.0f 1.5 1000.0 0.0015 200.0)"],
    );
    check(
        r#"'c'; '''; ' '; "s"; "a\"b\\c"; """#,
        expect![[r#"(seq 'c' ''' ' ' "s" "a\"b\\c" "")"#]],
    );
    check(
        "{}; {1 2}; { 4096}; {18446744073709551615}; {0xff}",
        expect!["(seq {} {1 2} {4096} {18446744073709551615} {255})"],
    );
    check(
        "y(); y(0 127 255 -1); y( 0 127)",
        expect!["(seq y() y(0 127 255 255) y(0 127))"],
    );
    check(
        "List (); List(1, 2L); List (List (1), Set {})",
        expect!["(seq (List) (List 1 2L) (List (List 1) (Set)))"],
    );
    check("Set {}; Set {1, 2, 1}", expect!["(seq (Set) (Set 1 2 1))"]);
    check(
        "Map []; Map [1 -> 2L, \"a\" -> List ()]",
        expect![[r#"(seq (Map) (Map (1 2L) ("a" (List))))"#]],
    );
    check(
        "Struct []; Struct [a := 1, b := Struct [c := 'x']]",
        expect!["(seq (Struct) (Struct (a 1) (b (Struct (c 'x')))))"],
    );
    check(
        "Struct [min := 1, e := 2, y := 3, List := 4, div := 5]",
        expect!["(Struct (min 1) (e 2) (y 3) (List 4) (div 5))"],
    );
    check(
        "List (-1, -2.5); Set {shared_p (1)}",
        expect!["(seq (List -1 -2.5) (Set (shared_p 1)))"],
    );
}

#[test]
fn references_and_assignment() {
    check(
        "${a}; ${a.b.c}; ${ a . b }",
        expect!["(seq ${a} ${a.b.c} ${a.b})"],
    );
    check("${a} := 1", expect!["(:= ${a} 1)"]);
    check(
        "${a.b} := ${c} := ${d}",
        expect!["(:= ${a.b} (:= ${c} ${d}))"],
    );
    check(
        "${a} := 1 + 2 :or: true",
        expect!["(:= ${a} (|| (+ 1 2) true))"],
    );
}

#[test]
fn operators() {
    check(
        "1 || 2; 1 :or: 2; 1 | 2; 1 && 2; 1 :and: 2; 1 & 2",
        expect!["(seq (|| 1 2) (|| 1 2) (| 1 2) (&& 1 2) (&& 1 2) (& 1 2))"],
    );
    check(
        "1 < 2; 1 <= 2; 1 > 2; 1 >= 2; 1 == 2; 1 != 2",
        expect!["(seq (< 1 2) (<= 1 2) (> 1 2) (>= 1 2) (== 1 2) (!= 1 2))"],
    );
    check(
        "1 :lt: 2; 1 :le: 2; 1 :gt: 2; 1 :ge: 2; 1 :eq: 2; 1 :ne: 2",
        expect!["(seq (< 1 2) (<= 1 2) (> 1 2) (>= 1 2) (== 1 2) (!= 1 2))"],
    );
    check(
        "1 + 2; 1 - 2; 1 * 2; 1 / 2; 1 div 2; 1 mod 2; 1 % 2; 1 ** 2; 1 ^ 2",
        expect![
            "(seq (+ 1 2) (- 1 2) (* 1 2) (/ 1 2) (div 1 2) (mod 1 2) (mod 1 2) (** 1 2) (^ 1 2))"
        ],
    );
    check(
        "-1; !true; - - 1; !!x; -!1; !-1",
        expect![[r#"
            (seq -1 (! true) (- -1) (! (! <error>)) (- (! 1)) (! -1))
            unknown_function@20..21: unknown name `x`"#]],
    );
}

#[test]
fn precedence_and_associativity() {
    check(
        "1 || 2 && 3 < 4 + 5 * 6 mod 7 ** 8",
        expect!["(|| 1 (&& 2 (< 3 (+ 4 (* 5 (mod 6 (** 7 8)))))))"],
    );
    check(
        "1 ** 2 mod 3 * 4 + 5 < 6 && 7 || 8",
        expect!["(|| (&& (< (+ (* (mod (** 1 2) 3) 4) 5) 6) 7) 8)"],
    );
    check(
        "1 - 2 - 3; 1 div 2 div 3; 1 mod 2 % 3; 1 < 2 < 3; 1 | 2 || 3; 1 & 2 && 3",
        expect![
            "(seq (- (- 1 2) 3) (div (div 1 2) 3) (mod (mod 1 2) 3) (< (< 1 2) 3) (|| (| 1 2) 3) (&& (& 1 2) 3))"
        ],
    );
    check(
        "2 ** 3 ** 4; 2 ^ 3 ^ 4; 2 ** 3 ^ 4",
        expect!["(seq (** 2 (** 3 4)) (^ 2 (^ 3 4)) (** 2 (^ 3 4)))"],
    );
    check(
        "-2 ** 2; !a ** b; -a * b",
        expect![[r#"
            (seq (** -2 2) (** (! <error>) <error>) (* (- <error>) <error>))
            unknown_function@10..11: unknown name `a`
            unknown_function@15..16: unknown name `b`
            unknown_function@19..20: unknown name `a`
            unknown_function@23..24: unknown name `b`"#]],
    );
    check(
        "(1 + 2) * 3; 1 + (2 * 3); ((1))",
        expect!["(seq (* (+ 1 2) 3) (+ 1 (* 2 3)) 1)"],
    );
    check(
        "a || b && c; a && b || c",
        expect![[r#"
        (seq (|| <error> (&& <error> <error>)) (|| (&& <error> <error>) <error>))
        unknown_function@0..1: unknown name `a`
        unknown_function@5..6: unknown name `b`
        unknown_function@10..11: unknown name `c`
        unknown_function@13..14: unknown name `a`
        unknown_function@18..19: unknown name `b`
        unknown_function@23..24: unknown name `c`"#]],
    );
}

#[test]
fn calls() {
    check(
        "abs (${x}) + 1; abs ${x} + 1; sin 1.0 + 2.0",
        expect!["(seq (+ (abs ${x}) 1) (+ (abs ${x}) 1) (+ (sin 1.0) 2.0))"],
    );
    check(
        "min (${a}, ${b}); min ${a} ${b}; min (${a}) (${b}); max 1 -2",
        expect!["(seq (min ${a} ${b}) (min ${a} ${b}) (min ${a} ${b}) (max 1 -2))"],
    );
    check(
        "bitset_insert {} 1UL; bitset_insert ({}, 1UL)",
        expect!["(seq (bitset_insert {} 1UL) (bitset_insert {} 1UL))"],
    );
    check(
        "stack_push (List(), ${x})",
        expect!["(stack_push (List) ${x})"],
    );
    check(
        "map_assign (${m}, 1, 2); map_assign ${m} 1 2",
        expect!["(seq (map_assign ${m} 1 2) (map_assign ${m} 1 2))"],
    );
    check(
        "long (floor (${d} / ${s})); double (${n} mod ${k})",
        expect!["(seq (long (floor (/ ${d} ${s}))) (double (mod ${n} ${k})))"],
    );
    check(
        "!set_empty (${s}) :and: abs abs -1 == 1",
        expect!["(&& (! (set_empty ${s})) (== (abs (abs -1)) 1))"],
    );
    check("min abs 1 2 ** 3", expect!["(** (min (abs 1) 2) 3)"]);
    check(
        "shared_cleanup (${v}); shared_x 1 + 2",
        expect!["(seq (shared_cleanup ${v}) (+ (shared_x 1) 2))"],
    );
    check(
        "int(true); bigint 1; uint (1); ulong 1; float 1; double 1; long 1",
        expect!["(seq (int true) (bigint 1) (uint 1) (ulong 1) (float 1) (double 1) (long 1))"],
    );
}

#[test]
fn word_operators_in_call_form() {
    // GPI-Space's operator-precedence parser reads `mod (a, b)` as `a mod b`.
    check(
        "mod (7, 3); div (7, 3); mod (${i}, 2UL) == 0UL; mod (7 3); div (${a} ${b}) + 1",
        expect![
            "(seq (mod 7 3) (div 7 3) (== (mod ${i} 2UL) 0UL) (mod 7 3) (+ (div ${a} ${b}) 1))"
        ],
    );
    check("7 mod (3); 7 div (3)", expect!["(seq (mod 7 3) (div 7 3))"]);
}

#[test]
fn commas_between_arguments_are_optional() {
    check(
        "min (0.0 0.0); max (${a} ${b}); map_assign (Map [], 1 2L); map_assign (${m} 1, 2)",
        expect![
            "(seq (min 0.0 0.0) (max ${a} ${b}) (map_assign (Map) 1 2L) (map_assign ${m} 1 2))"
        ],
    );
    // Without a comma, a sign or word operator continues the previous argument.
    check(
        "max (${a} + 1 ${b} * 2); min (${a} -1, 2); min (${a}, -1)",
        expect!["(seq (max (+ ${a} 1) (* ${b} 2)) (min (- ${a} 1) 2) (min ${a} -1))"],
    );
}

#[test]
fn a_sign_is_part_of_a_number_literal() {
    // The sign applies after the range check, wrapping for unsigned types.
    check(
        "-1U; -1UL; +1f; +2; -1.5f; -0x10L; -3A; List (-1U, +1f); Map [-1UL -> +1L]",
        expect![
            "(seq 4294967295U 18446744073709551615UL 1.0f 2 -1.5f -16L -3A (List 4294967295U 1.0f) (Map (18446744073709551615UL 1L)))"
        ],
    );
    check(
        "-9223372036854775808L; -(1U); - ${a}; 1 -1U",
        expect![[r#"
            (seq <error> (- 1U) (- ${a}) (- 1 1U))
            invalid_literal@1..21: invalid number: 9223372036854775808L is out of range for long"#]],
    );
    check(
        "+${a}",
        expect![[r#"
            <error>
            unexpected_token@1..5: unexpected `${a}`"#]],
    );
}

#[test]
fn bytes_may_be_written_in_hex() {
    check(
        "y(0x41); y(0x0 0xff 65); y(0x100)",
        expect![[r#"
            (seq y(65) y(0 255 65) <error>)
            invalid_literal@27..32: invalid byte `0x100`"#]],
    );
}

#[test]
fn sequencing_and_comments() {
    check(
        "${a} := 1; ${b} := 2;",
        expect!["(seq (:= ${a} 1) (:= ${b} 2))"],
    );
    check("1 /* a /* nested */ comment */ + 2", expect!["(+ 1 2)"]);
    check("/**/1/***/", expect!["1"]);
    check(
        "${a} := 1;; ${b} := 2",
        expect!["(seq (:= ${a} 1) (:= ${b} 2))"],
    );
}

#[test]
fn errors() {
    check(
        "1 +",
        expect![[r#"
        <error>
        unexpected_end@3..3: unexpected end of expression"#]],
    );
    check(
        "1 + ; ${a} := 2",
        expect![[r#"
        (seq <error> (:= ${a} 2))
        unexpected_token@4..5: unexpected `;`"#]],
    );
    check(
        "(1 + ) * 2",
        expect![[r#"
        (* <error> 2)
        unexpected_token@5..6: unexpected `)`"#]],
    );
    check(
        "1 /* unterminated /* */",
        expect![[r#"
        1
        unterminated_comment@2..4: unterminated comment"#]],
    );
    check(
        r#""abc"#,
        expect![[r#"
        <error>
        unterminated_string@0..4: unterminated string literal"#]],
    );
    check(
        r#""a\nb""#,
        expect![[r#"
        <error>
        invalid_escape@2..4: invalid escape `\n`"#]],
    );
    check(
        "'ab'; ''; 'x",
        expect![[r#"
        (seq <error> <error> <error>)
        invalid_literal@0..4: a char literal holds exactly one byte
        invalid_literal@6..8: a char literal holds exactly one byte
        unterminated_char@10..12: unterminated char literal"#]],
    );
    check(
        "2147483648; -2147483648; -2147483647",
        expect![[r#"
            (seq <error> <error> -2147483647)
            invalid_literal@0..10: invalid number: 2147483648 is out of range for int
            invalid_literal@13..23: invalid number: 2147483648 is out of range for int"#]],
    );
    check(
        "1x; 0xg; 256U",
        expect![[r#"
        (seq <error> <error> 256U)
        invalid_literal@0..2: invalid number: invalid suffix `x` in number `1x`
        invalid_literal@4..7: invalid number: invalid number `0xg`"#]],
    );
    check(
        "1 := 2; ${a} + 1 := 2",
        expect![[r#"
        (seq <error> <error>)
        invalid_assignment_target@0..1: the left side of `:=` must be a reference
        invalid_assignment_target@8..16: the left side of `:=` must be a reference"#]],
    );
    check(
        "foo (1, 2) + 1; bar",
        expect![[r#"
        (seq (+ <error> 1) <error>)
        unknown_function@0..3: unknown function `foo`
        unknown_function@16..19: unknown name `bar`"#]],
    );
    check(
        "${a.}; ${a b}; ${1}; ${a",
        expect![[r#"
        (seq <error> <error> <error> <error>)
        invalid_reference@0..5: empty name in reference
        invalid_reference@9..12: `a b` is not a valid name
        invalid_reference@17..18: `1` is not a valid name
        invalid_reference@21..24: unterminated reference"#]],
    );
    check(
        "${acc} = ${acc} + 1L",
        expect![[r#"
        <error>
        unexpected_character@7..8: unexpected character `=`: use `:=` to assign"#]],
    );
    check(
        "1 @ 2",
        expect![[r#"
        <error>
        unexpected_character@2..3: unexpected character `@`"#]],
    );
    check(
        "min 1",
        expect![[r#"
        <error>
        unexpected_end@5..5: unexpected end of expression"#]],
    );
    check(
        "abs (1, 2)",
        expect![[r#"
        (abs <error>)
        unexpected_token@6..7: unexpected `,`"#]],
    );
    check(
        "List (${x}, 1 + 2)",
        expect![[r#"
        (List ${x} (+ 1 2))
        non_literal_element@6..10: elements of `List`, `Set`, `Map` and `Struct` literals must be literals
        non_literal_element@12..17: elements of `List`, `Set`, `Map` and `Struct` literals must be literals"#]],
    );
    check(
        "Struct [a := 1, a := 2]",
        expect![[r#"
        (Struct (a 1) (a 2))
        duplicate_field@16..17: duplicate field `a`"#]],
    );
    check(
        "{1 -1}; {18446744073709551616}; y(256 -129)",
        expect![[r#"
        (seq <error> <error> <error>)
        unexpected_token@3..4: unexpected `-`
        invalid_literal@9..29: invalid bitset word `18446744073709551616`
        invalid_literal@34..37: invalid byte `256`
        invalid_literal@38..42: invalid byte `-129`"#]],
    );
    check(
        "1 +; 2 *; 3; (4",
        expect![[r#"
        (seq <error> <error> 3 <error>)
        unexpected_token@3..4: unexpected `;`
        unexpected_token@8..9: unexpected `;`
        unexpected_end@15..15: unexpected end of expression"#]],
    );
    check(
        r#""\a\b\"\\""#,
        expect![[r#"
        <error>
        invalid_escape@1..3: invalid escape `\a`
        invalid_escape@3..5: invalid escape `\b`"#]],
    );
    check(
        "[ ]; y; Map [1 -> ]",
        expect![[r#"
        (seq [] <error> <error>)
        unexpected_token@6..7: unexpected `;`
        unexpected_token@18..19: unexpected `]`"#]],
    );
    check(
        ")(",
        expect![[r#"
        <error>
        unexpected_token@0..1: unexpected `)`"#]],
    );
    check(
        "1 2 3; 4",
        expect![[r#"
        (seq <error> 4)
        unexpected_token@2..3: unexpected `2`"#]],
    );
    check(
        "min (1 +)",
        expect![[r#"
        <error>
        unexpected_token@8..9: unexpected `)`"#]],
    );
}

#[test]
fn error_notes_say_what_was_expected() {
    let notes = |input: &str| {
        let (_, diags) = parse_str(input);
        diags
            .iter()
            .flat_map(|d| d.notes.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    expect!["expected an expression"].assert_eq(&notes("1 +"));
    expect!["expected `)`"].assert_eq(&notes("(1 2)"));
    expect!["help: did you mean the built-in `max`?"].assert_eq(&notes("maxx (1L, 2L)"));
    expect![""].assert_eq(&notes("frobnicate (1L)"));
    expect!["help: `:=` assigns (`${x} := 1L`), `==` compares"].assert_eq(&notes("${a} = 1L"));
    expect!["expected one of an operator, `->`"].assert_eq(&notes("Map [1 2]"));
}

#[test]
fn spans_go_through_the_mapped_text() {
    // "${a} &lt; 1" in a file, unescaped to "${a} < 1": text offset 5 (`<`) is file offset 5,
    // text offset 6 is file offset 9.
    let text = crate::span::MappedText {
        text: "${a} < 1 +".into(),
        file: crate::FileId(3),
        map: vec![(0, 100), (6, 109)],
    };
    let (e, diags) = parse(&text);
    let ExprKind::Error = e.kind else {
        panic!("{}", to_sexpr(&e))
    };
    assert_eq!((e.span.start, e.span.end), (100, 113));
    assert_eq!(diags.len(), 1);
    let s = diags[0].primary_span().unwrap();
    assert_eq!((s.file, s.start, s.end), (crate::FileId(3), 113, 113));
    let text = crate::span::MappedText {
        text: "${a} < ${b}".into(),
        file: crate::FileId(3),
        map: vec![(0, 100), (6, 109)],
    };
    let (e, _) = parse(&text);
    let ExprKind::Binary(_, a, b) = &e.kind else {
        panic!()
    };
    assert_eq!((a.span.start, a.span.end), (100, 104));
    assert_eq!((b.span.start, b.span.end), (110, 114));
    assert_eq!((e.span.start, e.span.end), (100, 114));
}

// ---------------------------------------------------------------------------------------------
// The GPI-Space corpus: every expression-bearing element parses without diagnostics.

/// Elements whose text is an expression (`value` only inside `token`).
const EXPRESSION_ELEMENTS: &[&str] = &[
    "expression",
    "condition",
    "value",
    "size",
    "alignment",
    "global",
    "local",
    "eureka-group",
];

fn xml_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            xml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "xpnet" || e == "xml") {
            out.push(p);
        }
    }
}

/// `(file:line, text)` of every expression in the corpus.
fn corpus_expressions() -> &'static [(String, String)] {
    static EXPRS: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    EXPRS.get_or_init(|| {
        let dir = pnet_tests::gpispace();
        assert!(
            dir.is_dir(),
            "the GPI-Space corpus is expected at {}",
            dir.display()
        );
        let mut files = Vec::new();
        xml_files(&dir, &mut files);
        let mut out = Vec::new();
        for f in files {
            let src = std::fs::read_to_string(&f).unwrap();
            let doc =
                roxmltree::Document::parse(&src).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            for n in doc.descendants().filter(|n| n.is_element()) {
                let tag = n.tag_name().name();
                if !EXPRESSION_ELEMENTS.contains(&tag) {
                    continue;
                }
                if tag == "value"
                    && n.parent_element()
                        .is_none_or(|p| p.tag_name().name() != "token")
                {
                    continue;
                }
                let text: String = n
                    .children()
                    .filter(|c| c.is_text())
                    .filter_map(|c| c.text())
                    .collect();
                let line = doc.text_pos_at(n.range().start).row;
                out.push((format!("{}:{line}", f.display()), text));
            }
        }
        out
    })
}

#[test]
fn corpus_parses_without_diagnostics() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let exprs = corpus_expressions();
    let mut failures = Vec::new();
    for (at, text) in exprs {
        let (_, diags) = parse_str(text);
        if !diags.is_empty() {
            failures.push(format!("{at}: {text:?}: {diags:?}"));
        }
    }
    println!("parsed {} corpus expressions", exprs.len());
    assert!(exprs.len() > 400, "only {} expressions found", exprs.len());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Robustness: no input makes the parser panic; spans stay inside the text; an Error node
// always comes with a diagnostic.

fn check_invariants(input: &str) {
    let (e, diags) = parse_str(input);
    let len = input.len() as u32;
    let mut errors = 0;
    e.walk(&mut |n| {
        assert!(
            n.span.start <= n.span.end && n.span.end <= len,
            "{input:?}: {:?}",
            n.span
        );
        if matches!(n.kind, ExprKind::Error) {
            errors += 1;
        }
    });
    for d in &diags {
        let s = d
            .primary_span()
            .expect("every diagnostic has a primary label");
        assert!(s.start <= s.end && s.end <= len, "{input:?}: {d:?}");
    }
    assert!(
        errors == 0 || !diags.is_empty(),
        "{input:?}: error node without diagnostic"
    );
}

const SNIPPETS: &[&str] = &[
    "${a}",
    "${a.b}",
    "${",
    "}",
    "1",
    "2L",
    "0x1f",
    "1.5f",
    "1e3",
    "'c'",
    "'",
    "\"s\"",
    "\"",
    "\\",
    "[]",
    "[",
    "]",
    "(",
    ")",
    "{",
    "{}",
    ",",
    ";",
    ":=",
    "||",
    ":or:",
    "|",
    "&&",
    ":and:",
    "&",
    "<",
    ":lt:",
    "==",
    "!=",
    "+",
    "-",
    "*",
    "/",
    "div",
    "mod",
    "%",
    "**",
    "^",
    "!",
    "->",
    "/*",
    "*/",
    "true",
    "pi",
    "e",
    "List",
    "Set",
    "Map",
    "Struct",
    "y",
    "abs",
    "min",
    "map_assign",
    "shared_p",
    "foo",
    " ",
    "\n",
    "@",
    "é",
];

fn snippet_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop::collection::vec(prop::sample::select(SNIPPETS), 0..40).prop_map(|v| v.join(" "))
}

fn mutated_corpus_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let edit = prop_oneof![
        (any::<prop::sample::Index>(), 1..6usize).prop_map(|(i, n)| (0u8, i, n, String::new())),
        (any::<prop::sample::Index>(), prop::sample::select(SNIPPETS)).prop_map(|(i, s)| (
            1u8,
            i,
            0,
            s.to_string()
        )),
        any::<prop::sample::Index>().prop_map(|i| (2u8, i, 0, String::new())),
    ];
    (
        any::<prop::sample::Index>(),
        prop::collection::vec(edit, 1..5),
    )
        .prop_map(|(i, edits)| {
            let exprs = corpus_expressions();
            let mut bytes = exprs[i.index(exprs.len())].1.clone().into_bytes();
            for (kind, at, n, s) in edits {
                let pos = at.index(bytes.len() + 1);
                match kind {
                    0 => {
                        let end = (pos + n).min(bytes.len());
                        bytes.drain(pos..end);
                    }
                    1 => {
                        bytes.splice(pos..pos, s.into_bytes());
                    }
                    _ => bytes.truncate(pos),
                }
            }
            String::from_utf8_lossy(&bytes).into_owned()
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    #[test]
    fn random_strings_never_panic(s in "\\PC*") {
        check_invariants(&s);
    }

    #[test]
    fn random_bytes_never_panic(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
        check_invariants(&String::from_utf8_lossy(&b));
    }

    #[test]
    fn random_token_soup_never_panics(s in snippet_text()) {
        check_invariants(&s);
    }
}

/// `proptest!` with a guard first: without the corpus there is nothing to mutate.
#[test]
fn mutated_corpus_never_panics() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let mut config = proptest::prelude::ProptestConfig::with_cases(512);
    config.source_file = Some(file!());
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let result = runner.run(&mutated_corpus_text(), |s| {
        check_invariants(&s);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}\n{runner}");
    }
}

// ---------------------------------------------------------------------------------------------
// Round trip: printing a tree as (fully parenthesised) source and parsing it gives the tree.

mod round_trip {
    use pnet_stdlib::literal::parse_number;
    use pnet_stdlib::{BinOp, Bitset, Builtin, UnOp, Value};
    use proptest::prelude::*;

    use super::super::*;
    use crate::Span;

    fn strip(e: &mut Expr) {
        e.span = Span::default();
        let strip_ids =
            |ids: &mut Vec<Ident>| ids.iter_mut().for_each(|i| i.span = Span::default());
        match &mut e.kind {
            ExprKind::Literal(_) | ExprKind::Error => {}
            ExprKind::Ref(p) => strip_ids(p),
            ExprKind::Assign { target, value } => {
                strip_ids(target);
                strip(value);
            }
            ExprKind::Unary(_, a) => strip(a),
            ExprKind::Shared(p, a) => {
                p.span = Span::default();
                strip(a);
            }
            ExprKind::Binary(_, a, b) => {
                strip(a);
                strip(b);
            }
            ExprKind::Call(_, es) | ExprKind::List(es) | ExprKind::Set(es) | ExprKind::Seq(es) => {
                es.iter_mut().for_each(strip)
            }
            ExprKind::Map(kvs) => kvs.iter_mut().for_each(|(k, v)| {
                strip(k);
                strip(v);
            }),
            ExprKind::Struct(fs) => fs.iter_mut().for_each(|(f, v)| {
                f.span = Span::default();
                strip(v);
            }),
        }
    }

    fn node(kind: ExprKind) -> Expr {
        Expr::new(kind, Span::default())
    }

    fn ident() -> impl Strategy<Value = Ident> {
        "[a-zA-Z_][a-zA-Z0-9_]{0,6}".prop_map(|name| Ident {
            name,
            span: Span::default(),
        })
    }

    fn value() -> impl Strategy<Value = Value> {
        use prop::num::{f32 as f, f64 as d};
        prop_oneof![
            Just(Value::Control),
            any::<bool>().prop_map(Value::Bool),
            (0..=i32::MAX).prop_map(Value::Int),
            (0..=i64::MAX).prop_map(Value::Long),
            any::<u32>().prop_map(Value::UInt),
            any::<u64>().prop_map(Value::ULong),
            (f::POSITIVE | f::NORMAL | f::ZERO).prop_map(Value::Float),
            (d::POSITIVE | d::NORMAL | d::SUBNORMAL | d::ZERO).prop_map(Value::Double),
            (0..=127i8).prop_map(Value::Char),
            any::<String>().prop_map(|s| Value::string(&s)),
            prop::collection::vec(any::<u64>(), 0..3)
                .prop_map(|words| Value::Bitset(Bitset::from_words(words))),
            prop::collection::vec(any::<u8>(), 0..4).prop_map(Value::Bytearray),
            any::<u128>().prop_map(|n| parse_number(&format!("{n}A")).unwrap()),
        ]
    }

    /// Literal expressions, as allowed inside container literals.
    fn literal_expr() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            4 => value().prop_map(|v| node(ExprKind::Literal(v))),
            1 => (1..=i32::MAX).prop_map(|i| node(ExprKind::Unary(
                UnOp::Neg,
                Box::new(node(ExprKind::Literal(Value::Int(i))))
            ))),
        ];
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(|es| node(ExprKind::List(es))),
                prop::collection::vec(inner.clone(), 0..3).prop_map(|es| node(ExprKind::Set(es))),
                prop::collection::vec((inner.clone(), inner.clone()), 0..3)
                    .prop_map(|kvs| node(ExprKind::Map(kvs))),
                prop::collection::btree_map("[a-z_][a-z0-9_]{0,4}", inner.clone(), 0..3).prop_map(
                    |fs| {
                        node(ExprKind::Struct(
                            fs.into_iter()
                                .map(|(name, v)| {
                                    (
                                        Ident {
                                            name,
                                            span: Span::default(),
                                        },
                                        v,
                                    )
                                })
                                .collect(),
                        ))
                    }
                ),
                (ident(), inner).prop_map(|(p, e)| node(ExprKind::Shared(p, Box::new(e)))),
            ]
        })
    }

    const BINOPS: &[BinOp] = &BinOp::ALL;

    fn expr() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            2 => literal_expr(),
            1 => prop::collection::vec(ident(), 1..4).prop_map(|p| node(ExprKind::Ref(p))),
        ];
        leaf.prop_recursive(5, 40, 3, |inner| {
            prop_oneof![
                (
                    prop::sample::select(vec![UnOp::Neg, UnOp::Not]),
                    inner.clone()
                )
                    .prop_map(|(op, e)| node(ExprKind::Unary(op, Box::new(e)))),
                (prop::sample::select(BINOPS), inner.clone(), inner.clone())
                    .prop_map(|(op, a, b)| node(ExprKind::Binary(op, Box::new(a), Box::new(b)))),
                (
                    prop::sample::select(Builtin::ALL),
                    prop::collection::vec(inner.clone(), 3)
                )
                    .prop_map(|(f, mut args)| {
                        args.truncate(f.arity());
                        node(ExprKind::Call(f, args))
                    }),
                (ident(), inner.clone()).prop_map(|(p, e)| node(ExprKind::Shared(p, Box::new(e)))),
                (prop::collection::vec(ident(), 1..3), inner).prop_map(|(target, v)| node(
                    ExprKind::Assign {
                        target,
                        value: Box::new(v)
                    }
                )),
            ]
        })
    }

    fn program() -> impl Strategy<Value = Expr> {
        prop_oneof![
            3 => expr(),
            1 => prop::collection::vec(expr(), 2..4).prop_map(|es| node(ExprKind::Seq(es))),
            1 => Just(node(ExprKind::Seq(vec![]))),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn printed_source_parses_back(e in program()) {
            let src = to_source(&e);
            let (mut parsed, diags) = parse_str(&src);
            prop_assert!(diags.is_empty(), "{src}\n{diags:?}");
            strip(&mut parsed);
            prop_assert_eq!(to_sexpr(&parsed), to_sexpr(&e), "{}", src);
            prop_assert_eq!(parsed, e, "{}", src);
        }
    }
}

/// A binary operator written in its word form is marked so, for messages that quote it as
/// written (issue 22, item 4).
#[test]
fn word_operators_are_marked() {
    let written = |src: &str| {
        let (e, diags) = parse_str(src);
        assert!(diags.is_empty(), "{src}: {diags:?}");
        let mut ops = Vec::new();
        e.walk(&mut |x| {
            if let ExprKind::Binary(op, ..) = &x.kind {
                ops.push(x.op_text(*op));
            }
        });
        ops.join(" ")
    };
    assert_eq!(written("${a} :eq: 1"), ":eq:");
    assert_eq!(written("${a} == 1"), "==");
    assert_eq!(written("${a} /* c */ :eq: 1"), ":eq:");
    assert_eq!(written("${a} /* c /* : */ */ == 1"), "==");
    assert_eq!(written("(${a} + 1) :lt: ( 2)"), ":lt: +");
    assert_eq!(written("${a} :and: ${b} || ${c} :ne: 1"), "|| :and: :ne:");
    assert_eq!(written("${a} &&/* : */${b}"), "&&");
}
