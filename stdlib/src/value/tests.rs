use expect_test::{Expect, expect};
use proptest::prelude::*;

use crate::literal::parse_literal;
use crate::ops::tests::{ty, val};
use crate::{Type, Value};

/// Sorts literals by the total order and prints them, one per line.
fn check_order(literals: &[&str], expected: Expect) {
    let mut values: Vec<Value> = literals.iter().map(|l| val(l)).collect();
    values.sort();
    let out: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    expected.assert_eq(&out.join("\n"));
}

#[test]
fn total_order() {
    check_order(
        &[
            "Struct [a := 1]",
            "Map []",
            "Set {}",
            "List ()",
            "shared_P (1)",
            "1A",
            "y()",
            "{}",
            "\"s\"",
            "'c'",
            "1.0",
            "1.0f",
            "1UL",
            "1U",
            "1L",
            "1",
            "true",
            "[]",
        ],
        expect![[r#"
            []
            true
            1
            1L
            1U
            1UL
            1.0f
            1.0
            'c'
            "s"
            {}
            y()
            1A
            shared_P (1)
            List ()
            Set {}
            Map []
            Struct [a := 1]"#]],
    );
    check_order(
        &["3", "-1", "2147483647", "-2147483648", "0"],
        expect![[r#"
            -2147483648
            -1
            0
            3
            2147483647"#]],
    );
    check_order(
        &["'a'", "'\u{ff}'", "'\u{80}'", "'\u{7f}'"],
        expect![[r#"
        ''
        'ÿ'
        'a'
        ''"#]],
    );
    check_order(
        &["0.0", "-0.0", "-1e300", "1e-300", "-1.5"],
        expect![[r#"
        -1e300
        -1.5
        -0.0
        0.0
        1e-300"#]],
    );
    check_order(
        &["\"b\"", "\"ab\"", "\"\"", "\"a\""],
        expect![[r#"
        ""
        "a"
        "ab"
        "b""#]],
    );
    check_order(
        &["{ 0 1}", "{ 2}", "{ 1 0 0}", "{}", "{ 0 0 1}"],
        expect![[r#"
        {}
        { 1 0 0}
        { 2}
        { 0 1}
        { 0 0 1}"#]],
    );
    check_order(
        &["y( 1)", "y( 0 5)", "y()", "y( 255)"],
        expect![[r#"
        y()
        y( 0 5)
        y( 1)
        y( 255)"#]],
    );
    check_order(
        &[
            "shared_b (1)",
            "shared_a (2)",
            "shared_a (1)",
            "shared_B (3)",
        ],
        expect![[r#"
            shared_B (3)
            shared_a (1)
            shared_a (2)
            shared_b (1)"#]],
    );
    check_order(
        &[
            "List (2)",
            "List (1, 2)",
            "List ()",
            "List (1)",
            "List (1L)",
        ],
        expect![[r#"
            List ()
            List (1)
            List (1, 2)
            List (2)
            List (1L)"#]],
    );
    check_order(
        &["Set {2}", "Set {1, 2}", "Set {}", "Set {1}"],
        expect![[r#"
            Set {}
            Set {1}
            Set {1, 2}
            Set {2}"#]],
    );
    check_order(
        &[
            "Map [1 -> 2]",
            "Map [1 -> 1]",
            "Map []",
            "Map [0 -> 5, 1 -> 1]",
        ],
        expect![[r#"
            Map []
            Map [0 -> 5, 1 -> 1]
            Map [1 -> 1]
            Map [1 -> 2]"#]],
    );
    check_order(
        &[
            "Struct [b := 1]",
            "Struct [a := 2]",
            "Struct [a := 1, b := 1]",
            "Struct [a := 1]",
            "Struct []",
        ],
        expect![[r#"
            Struct []
            Struct [a := 1]
            Struct [a := 1, b := 1]
            Struct [a := 2]
            Struct [b := 1]"#]],
    );
}

#[test]
fn nan_is_ordered_and_equal_to_itself() {
    let nan = Value::Double(f64::NAN);
    assert_eq!(nan, nan.clone());
    assert!(Value::Double(f64::INFINITY) < nan);
    let set: std::collections::BTreeSet<Value> = [nan.clone(), nan.clone()].into_iter().collect();
    assert_eq!(set.len(), 1);
}

/// Shows each literal's dynamic type.
fn check_ty(literals: &[&str], expected: Expect) {
    let out: Vec<String> = literals
        .iter()
        .map(|l| format!("{l} : {}", val(l).ty()))
        .collect();
    expected.assert_eq(&out.join("\n"));
}

#[test]
fn dynamic_types() {
    check_ty(
        &[
            "[]",
            "true",
            "1",
            "1L",
            "1U",
            "1UL",
            "1.0f",
            "1.0",
            "'c'",
            "\"s\"",
            "{}",
            "y()",
            "1A",
            "shared_P (1)",
            "List ()",
            "List (1, 2)",
            "List (1, 2L)",
            "List (List (), List (1))",
            "Set {}",
            "Set {\"a\"}",
            "Set {1, 1L}",
            "Map []",
            "Map [1 -> \"a\"]",
            "Map [1 -> \"a\", 2L -> \"b\"]",
            "Struct [a := 1]",
        ],
        expect![[r#"
            [] : control
            true : bool
            1 : int
            1L : long
            1U : unsigned int
            1UL : unsigned long
            1.0f : float
            1.0 : double
            'c' : char
            "s" : string
            {} : bitset
            y() : bytearray
            1A : bigint
            shared_P (1) : shared_P
            List () : list
            List (1, 2) : list<int>
            List (1, 2L) : list
            List (List (), List (1)) : list<list>
            Set {} : set
            Set {"a"} : set<string>
            Set {1, 1L} : set
            Map [] : map
            Map [1 -> "a"] : map<int, string>
            Map [1 -> "a", 2L -> "b"] : map<any, string>
            Struct [a := 1] : _struct"#]],
    );
    let Type::Struct(s) = val("Struct [a := 1, b := List (1L)]").ty() else {
        panic!("not a struct type")
    };
    assert_eq!(
        format!("{:?}", s.fields),
        r#"[("a", Int), ("b", List(Long))]"#
    );
}

/// Shows whether each literal fits each type.
fn check_fits(cases: &[(&str, &str)], expected: Expect) {
    let out: Vec<String> = cases
        .iter()
        .map(|(l, t)| format!("{l} fits {t}: {}", val(l).fits(&ty(t))))
        .collect();
    expected.assert_eq(&out.join("\n"));
}

#[test]
fn fits() {
    check_fits(
        &[
            ("1", "int"),
            ("1", "long"),
            ("1", "any"),
            ("1UL", "unsigned long"),
            ("1.0", "float"),
            ("[]", "control"),
            ("List ()", "list<long>"),
            ("List (1L)", "list<long>"),
            ("List (1L, 1)", "list<long>"),
            ("List (1L, 1)", "list"),
            ("Set {1}", "set<int>"),
            ("Set {1}", "list<int>"),
            ("Map [1 -> \"a\"]", "map<int, string>"),
            ("Map [1 -> \"a\"]", "map<int, int>"),
            ("Struct [x := 1, y := 2L]", "point{x: int, y: long}"),
            ("Struct [x := 1, y := 2]", "point{x: int, y: long}"),
            ("Struct [y := 2L, x := 1]", "point{x: int, y: long}"),
            ("Struct [x := 1]", "point{x: int, y: long}"),
            ("Struct [x := List (1)]", "p{x: list}"),
            ("shared_P (1)", "shared_P"),
            ("shared_P (1)", "shared_Q"),
            ("shared_P (1)", "int"),
        ],
        expect![[r#"
            1 fits int: true
            1 fits long: false
            1 fits any: true
            1UL fits unsigned long: true
            1.0 fits float: false
            [] fits control: true
            List () fits list<long>: true
            List (1L) fits list<long>: true
            List (1L, 1) fits list<long>: false
            List (1L, 1) fits list: true
            Set {1} fits set<int>: true
            Set {1} fits list<int>: false
            Map [1 -> "a"] fits map<int, string>: true
            Map [1 -> "a"] fits map<int, int>: false
            Struct [x := 1, y := 2L] fits point{x: int, y: long}: true
            Struct [x := 1, y := 2] fits point{x: int, y: long}: false
            Struct [y := 2L, x := 1] fits point{x: int, y: long}: false
            Struct [x := 1] fits point{x: int, y: long}: false
            Struct [x := List (1)] fits p{x: list}: true
            shared_P (1) fits shared_P: true
            shared_P (1) fits shared_Q: false
            shared_P (1) fits int: false"#]],
    );
}

/// Shows `unify` and `lub` of type pairs.
fn check_unify(cases: &[(&str, &str)], expected: Expect) {
    let show = |t: Option<Type>| t.map_or("none".to_string(), |t| t.to_string());
    let out: Vec<String> = cases
        .iter()
        .map(|(a, b)| {
            let (a2, b2) = (ty(a), ty(b));
            format!(
                "{a} ~ {b}: unify {}, lub {}",
                show(a2.unify(&b2)),
                show(a2.lub(&b2))
            )
        })
        .collect();
    expected.assert_eq(&out.join("\n"));
}

#[test]
fn unify_and_lub() {
    check_unify(
        &[
            ("int", "int"),
            ("int", "long"),
            ("any", "int"),
            ("list", "list<int>"),
            ("list<list>", "list<list<int>>"),
            ("map<int, any>", "map<any, string>"),
            ("set<int>", "set<string>"),
            ("p{a: int}", "q{a: any}"),
            ("p{a: int}", "q{b: int}"),
            ("p{a: int}", "q{a: int, b: int}"),
            ("shared_A", "shared_A"),
            ("shared_A", "shared_B"),
        ],
        expect![[r#"
            int ~ int: unify int, lub int
            int ~ long: unify none, lub none
            any ~ int: unify int, lub any
            list ~ list<int>: unify list<int>, lub list
            list<list> ~ list<list<int>>: unify list<list<int>>, lub list<list>
            map<int, any> ~ map<any, string>: unify map<int, string>, lub map
            set<int> ~ set<string>: unify none, lub none
            p{a: int} ~ q{a: any}: unify p, lub p
            p{a: int} ~ q{b: int}: unify none, lub none
            p{a: int} ~ q{a: int, b: int}: unify none, lub none
            shared_A ~ shared_A: unify shared_A, lub shared_A
            shared_A ~ shared_B: unify none, lub none"#]],
    );
}

proptest! {
    #[test]
    fn order_is_consistent(a in crate::literal::tests::arb_value(), b in crate::literal::tests::arb_value()) {
        prop_assert_eq!(a.cmp(&b), b.cmp(&a).reverse());
        prop_assert_eq!(a.cmp(&a), std::cmp::Ordering::Equal);
    }

    #[test]
    fn every_value_fits_its_type(v in crate::literal::tests::arb_value()) {
        prop_assert!(v.fits(&v.ty()), "{} : {}", v, v.ty());
    }

    #[test]
    fn parsed_literals_fit_their_type(s in "[0-9]{1,12}(L|U|UL|A|f)?") {
        if let Ok(v) = parse_literal(&s) {
            prop_assert!(v.fits(&v.ty()));
        }
    }
}
