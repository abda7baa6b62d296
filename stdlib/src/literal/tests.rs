use expect_test::{Expect, expect};
use proptest::prelude::*;

use super::*;
use crate::Bitset;

/// Parses a number token and shows `Debug` of the value (to see its type) or the error.
fn check_number(input: &str, expected: Expect) {
    let got = match parse_number(input) {
        Ok(v) => format!("{v:?} = {v}"),
        Err(e) => format!("error: {e}"),
    };
    expected.assert_eq(&got);
}

#[test]
fn numbers() {
    check_number("23", expect![[r#"Int(23) = 23"#]]);
    check_number("23L", expect![[r#"Long(23) = 23L"#]]);
    check_number("23l", expect![[r#"Long(23) = 23L"#]]);
    check_number("23U", expect![[r#"UInt(23) = 23U"#]]);
    check_number("23u", expect![[r#"UInt(23) = 23U"#]]);
    check_number("23UL", expect![[r#"ULong(23) = 23UL"#]]);
    check_number("23ul", expect![[r#"ULong(23) = 23UL"#]]);
    check_number("23uL", expect![[r#"ULong(23) = 23UL"#]]);
    check_number("23A", expect![[r#"Bigint(23) = 23A"#]]);
    check_number("23a", expect![[r#"Bigint(23) = 23A"#]]);
    check_number("0", expect![[r#"Int(0) = 0"#]]);
    check_number("007", expect![[r#"Int(7) = 7"#]]);
    check_number("0x1f", expect![[r#"Int(31) = 31"#]]);
    check_number("0X1F", expect![[r#"Int(31) = 31"#]]);
    check_number("0x1A", expect![[r#"Int(26) = 26"#]]);
    check_number("0xffUL", expect![[r#"ULong(255) = 255UL"#]]);
    check_number("0xffl", expect![[r#"Long(255) = 255L"#]]);
    check_number(
        "0xffffffffU",
        expect![[r#"UInt(4294967295) = 4294967295U"#]],
    );
    check_number(
        "0xffffffff",
        expect![[r#"error: 0xffffffff is out of range for int"#]],
    );
    check_number("0x", expect![[r#"error: invalid number `0x`"#]]);
    check_number("0xg", expect![[r#"error: invalid number `0xg`"#]]);
    check_number("2147483647", expect![[r#"Int(2147483647) = 2147483647"#]]);
    check_number(
        "2147483648",
        expect![[r#"error: 2147483648 is out of range for int"#]],
    );
    check_number(
        "9223372036854775807L",
        expect![[r#"Long(9223372036854775807) = 9223372036854775807L"#]],
    );
    check_number(
        "9223372036854775808L",
        expect![[r#"error: 9223372036854775808L is out of range for long"#]],
    );
    check_number(
        "4294967295U",
        expect![[r#"UInt(4294967295) = 4294967295U"#]],
    );
    check_number(
        "4294967296U",
        expect![[r#"error: 4294967296U is out of range for unsigned int"#]],
    );
    check_number(
        "18446744073709551615UL",
        expect![[r#"ULong(18446744073709551615) = 18446744073709551615UL"#]],
    );
    check_number(
        "18446744073709551616UL",
        expect![[r#"error: 18446744073709551616UL is out of range for unsigned long"#]],
    );
    check_number(
        "123456789012345678901234567890A",
        expect![[r#"Bigint(123456789012345678901234567890) = 123456789012345678901234567890A"#]],
    );
    check_number("1.5", expect![[r#"Double(1.5) = 1.5"#]]);
    check_number("1.", expect![[r#"Double(1.0) = 1.0"#]]);
    check_number("1e3", expect![[r#"Double(1000.0) = 1000.0"#]]);
    check_number("1E+3", expect![[r#"Double(1000.0) = 1000.0"#]]);
    check_number("1e-3", expect![[r#"Double(0.001) = 0.001"#]]);
    check_number("1e20", expect![[r#"Double(1e20) = 1e20"#]]);
    check_number(
        "1e400",
        expect![[r#"error: 1e400 is out of range for double"#]],
    );
    check_number("1e-400", expect![[r#"Double(0.0) = 0.0"#]]);
    check_number("1.5f", expect![[r#"Float(1.5) = 1.5f"#]]);
    check_number("1.5F", expect![[r#"Float(1.5) = 1.5f"#]]);
    check_number("1f", expect![[r#"Float(1.0) = 1.0f"#]]);
    check_number("1e3f", expect![[r#"Float(1000.0) = 1000.0f"#]]);
    check_number(
        "1e39f",
        expect![[r#"error: 1e39f is out of range for float"#]],
    );
    check_number("0.1f", expect![[r#"Float(0.1) = 0.1f"#]]);
    check_number(
        "1.5L",
        expect![[r#"error: invalid suffix `L` in number `1.5L`"#]],
    );
    check_number(
        "1e",
        expect![[r#"error: invalid suffix `e` in number `1e`"#]],
    );
    check_number(
        "12x",
        expect![[r#"error: invalid suffix `x` in number `12x`"#]],
    );
    check_number(
        "1LU",
        expect![[r#"error: invalid suffix `LU` in number `1LU`"#]],
    );
    check_number("", expect![[r#"error: invalid number ``"#]]);
    check_number(".5", expect![[r#"error: invalid number `.5`"#]]);
    check_number("-1", expect![[r#"error: invalid number `-1`"#]]);
    check_number("abc", expect![[r#"error: invalid number `abc`"#]]);
}

/// Parses a literal and shows the value's `Debug` and `Display`, or the error with its offset.
fn check_literal(input: &str, expected: Expect) {
    let got = match parse_literal(input) {
        Ok(v) => format!("{v:?}\n{v}"),
        Err(e) => format!("error at {}: {}", e.offset, e.message),
    };
    expected.assert_eq(&got);
}

#[test]
fn literals() {
    check_literal(
        "[]",
        expect![[r#"
        Control
        []"#]],
    );
    check_literal(
        " [ ] ",
        expect![[r#"
        Control
        []"#]],
    );
    check_literal(
        "true",
        expect![[r#"
        Bool(true)
        true"#]],
    );
    check_literal(
        "false",
        expect![[r#"
        Bool(false)
        false"#]],
    );
    check_literal(
        "-3L",
        expect![[r#"
        Long(-3)
        -3L"#]],
    );
    check_literal(
        "-2147483648",
        expect!["error at 0: -2147483648 is out of range for int"],
    );
    check_literal(
        "-2147483649",
        expect!["error at 0: -2147483649 is out of range for int"],
    );
    check_literal(
        "-9223372036854775808L",
        expect!["error at 0: -9223372036854775808L is out of range for long"],
    );
    check_literal(
        "-0U",
        expect![[r#"
        UInt(0)
        0U"#]],
    );
    check_literal(
        "-1U",
        expect![[r#"
            UInt(4294967295)
            4294967295U"#]],
    );
    check_literal(
        "-1UL",
        expect![[r#"
            ULong(18446744073709551615)
            18446744073709551615UL"#]],
    );
    check_literal(
        "+1f",
        expect![[r#"
        Float(1.0)
        1.0f"#]],
    );
    check_literal(
        "+7UL",
        expect![[r#"
        ULong(7)
        7UL"#]],
    );
    check_literal(
        "-0x10U",
        expect![[r#"
        UInt(4294967280)
        4294967280U"#]],
    );
    check_literal(
        "List (-1U, +1.5)",
        expect![[r#"
        List([UInt(4294967295), Double(1.5)])
        List (4294967295U, 1.5)"#]],
    );
    check_literal(
        "y(0x41 0xff 0x0)",
        expect![[r#"
        Bytearray([65, 255, 0])
        y( 65 255 0)"#]],
    );
    check_literal("y(0x100)", expect!["error at 2: invalid byte `0x100`"]);
    check_literal("+-1", expect!["error at 1: expected a digit"]);
    check_literal(
        "-12345678901234567890A",
        expect![[r#"
        Bigint(-12345678901234567890)
        -12345678901234567890A"#]],
    );
    check_literal(
        "-0x10",
        expect![[r#"
        Int(-16)
        -16"#]],
    );
    check_literal(
        "-1.5",
        expect![[r#"
        Double(-1.5)
        -1.5"#]],
    );
    check_literal(
        "-0.0",
        expect![[r#"
        Double(-0.0)
        -0.0"#]],
    );
    check_literal(
        "-1e-3f",
        expect![[r#"
        Float(-0.001)
        -0.001f"#]],
    );
    check_literal(
        "'c'",
        expect![[r#"
        Char(99)
        'c'"#]],
    );
    check_literal(
        "'''",
        expect![[r#"
        Char(39)
        '''"#]],
    );
    check_literal(
        "'\u{ff}'",
        expect![[r#"
        Char(-1)
        'ÿ'"#]],
    );
    check_literal(
        "'\u{100}'",
        expect!["error at 1: a char literal holds a single byte"],
    );
    check_literal(
        "'ab'",
        expect!["error at 2: expected `'` closing the char literal"],
    );
    check_literal("'", expect!["error at 1: unterminated char literal"]);
    check_literal(
        r#""s""#,
        expect![[r#"
        String("s")
        "s""#]],
    );
    check_literal(
        r#""a\"b\\c""#,
        expect![[r#"
        String("a\"b\\c")
        "a\"b\\c""#]],
    );
    check_literal(
        r#""a\nb""#,
        expect![[r#"error at 3: only `\"` and `\\` are escapes"#]],
    );
    check_literal(
        r#""abc"#,
        expect!["error at 4: unterminated string literal"],
    );
    check_literal(
        r#""""#,
        expect![[r#"
        String("")
        """#]],
    );
    check_literal(
        "{}",
        expect![[r#"
        Bitset(Bitset { len: 0, words: [] })
        {}"#]],
    );
    check_literal(
        "{ 4096}",
        expect![[r#"
        Bitset(Bitset { len: 1, words: [(0, 4096)] })
        { 4096}"#]],
    );
    check_literal(
        "{ 1 2 0}",
        expect![[r#"
        Bitset(Bitset { len: 3, words: [(0, 1), (1, 2)] })
        { 1 2 0}"#]],
    );
    check_literal(
        "{0x10 18446744073709551615}",
        expect![[r#"
        Bitset(Bitset { len: 2, words: [(0, 16), (1, 18446744073709551615)] })
        { 16 18446744073709551615}"#]],
    );
    check_literal(
        "{ 18446744073709551616}",
        expect!["error at 2: invalid bitset word `18446744073709551616`"],
    );
    check_literal(
        "{ -1}",
        expect!["error at 2: expected a bitset word, `@` or `}`"],
    );
    check_literal(
        "{ 1",
        expect!["error at 3: expected a bitset word, `@` or `}`"],
    );
    check_literal(
        "y()",
        expect![[r#"
        Bytearray([])
        y()"#]],
    );
    check_literal(
        "y( 0 127 255)",
        expect![[r#"
        Bytearray([0, 127, 255])
        y( 0 127 255)"#]],
    );
    check_literal(
        "y (-1 -128)",
        expect![[r#"
        Bytearray([255, 128])
        y( 255 128)"#]],
    );
    check_literal("y( 256)", expect!["error at 3: invalid byte `256`"]);
    check_literal("y( -129)", expect!["error at 3: invalid byte `-129`"]);
    check_literal("y 1", expect!["error at 2: expected `(`"]);
    check_literal(
        "List ()",
        expect![[r#"
        List([])
        List ()"#]],
    );
    check_literal(
        "List (1, 2L, List (3U))",
        expect![[r#"
        List([Int(1), Long(2), List([UInt(3)])])
        List (1, 2L, List (3U))"#]],
    );
    check_literal(
        "List(1,2)",
        expect![[r#"
        List([Int(1), Int(2)])
        List (1, 2)"#]],
    );
    check_literal("List (1,)", expect!["error at 8: expected a value"]);
    check_literal("List (1 2)", expect!["error at 8: expected `,` or `)`"]);
    check_literal("List (1", expect!["error at 7: expected `,` or `)`"]);
    check_literal(
        "Set {}",
        expect![[r#"
        Set({})
        Set {}"#]],
    );
    check_literal(
        "Set {3, 1, 2, 1, 1L, \"a\", []}",
        expect![[r#"
        Set({Control, Int(1), Int(2), Int(3), Long(1), String("a")})
        Set {[], 1, 2, 3, 1L, "a"}"#]],
    );
    check_literal(
        "Map []",
        expect![[r#"
        Map({})
        Map []"#]],
    );
    check_literal(
        "Map [1 -> 2L, 0 -> 3L, 1 -> 4L]",
        expect![[r#"
        Map({Int(0): Long(3), Int(1): Long(4)})
        Map [0 -> 3L, 1 -> 4L]"#]],
    );
    check_literal(
        "Map [1->2]",
        expect![[r#"
        Map({Int(1): Int(2)})
        Map [1 -> 2]"#]],
    );
    check_literal("Map [1 2]", expect!["error at 7: expected `->`"]);
    check_literal(
        "Struct []",
        expect![[r#"
        Struct([])
        Struct []"#]],
    );
    check_literal(
        "Struct [a := 1, b := Struct [c := \"x\"]]",
        expect![[r#"
        Struct([("a", Int(1)), ("b", Struct([("c", String("x"))]))])
        Struct [a := 1, b := Struct [c := "x"]]"#]],
    );
    check_literal(
        "Struct [a := 1, a := 2]",
        expect!["error at 16: duplicate field `a`"],
    );
    check_literal(
        "Struct [1 := 1]",
        expect!["error at 8: expected a field name"],
    );
    check_literal("Struct [a = 1]", expect!["error at 10: expected `:=`"]);
    check_literal(
        "shared_P (\"x\")",
        expect![[r#"
        Shared(Shared { place: "P", value: String("x") })
        shared_P ("x")"#]],
    );
    check_literal(
        "shared_cleanup (List (1))",
        expect![[r#"
        Shared(Shared { place: "cleanup", value: List([Int(1)]) })
        shared_cleanup (List (1))"#]],
    );
    check_literal(
        "shared_ (1)",
        expect!["error at 0: unknown literal `shared_`"],
    );
    check_literal("shared_P 1", expect!["error at 9: expected `(`"]);
    check_literal("", expect!["error at 0: expected a value"]);
    check_literal("   ", expect!["error at 3: expected a value"]);
    check_literal(
        "1 2",
        expect!["error at 2: unexpected text after the value"],
    );
    check_literal("foo", expect!["error at 0: unknown literal `foo`"]);
    check_literal("pi", expect!["error at 0: unknown literal `pi`"]);
    check_literal("-", expect!["error at 1: expected a digit"]);
    check_literal("-x", expect!["error at 1: expected a digit"]);
    check_literal(
        "2147483648",
        expect!["error at 0: 2147483648 is out of range for int"],
    );
    check_literal("inf", expect!["error at 0: unknown literal `inf`"]);
    check_literal("[", expect!["error at 1: expected `]`"]);
    check_literal("(1)", expect!["error at 0: expected a value"]);
    check_literal(
        "List (1e-3, 0x1f, 1e+2f)",
        expect![[r#"
        List([Double(0.001), Int(31), Float(100.0)])
        List (0.001, 31, 100.0f)"#]],
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = "List (".repeat(10_000) + &")".repeat(10_000);
    let err = parse_literal(&deep).unwrap_err();
    assert_eq!(err.message, "literal nested too deeply");
    let ok = "List (".repeat(MAX_LITERAL_DEPTH) + &")".repeat(MAX_LITERAL_DEPTH);
    assert!(parse_literal(&ok).is_ok());
}

/// Shows `Display` of a value.
fn check_display(v: Value, expected: Expect) {
    expected.assert_eq(&v.to_string());
}

#[test]
fn display() {
    use num_bigint::BigInt;
    check_display(Value::Control, expect!["[]"]);
    check_display(Value::Bool(true), expect!["true"]);
    check_display(Value::Int(-3), expect!["-3"]);
    check_display(Value::Int(i32::MIN), expect!["-2147483648"]);
    check_display(Value::Long(i64::MAX), expect!["9223372036854775807L"]);
    check_display(Value::UInt(u32::MAX), expect!["4294967295U"]);
    check_display(Value::ULong(3), expect!["3UL"]);
    check_display(Value::bigint(BigInt::from(-3)), expect!["-3A"]);
    check_display(Value::Float(1.5), expect!["1.5f"]);
    check_display(Value::Float(1.0), expect!["1.0f"]);
    check_display(Value::Float(1e20), expect!["1e20f"]);
    check_display(Value::Float(1e-7), expect!["1e-7f"]);
    check_display(Value::Float(f32::MAX), expect!["3.4028235e38f"]);
    check_display(Value::Float(f32::MIN_POSITIVE), expect!["1.1754944e-38f"]);
    check_display(Value::Float(f32::NAN), expect!["nan"]);
    check_display(Value::Float(f32::NEG_INFINITY), expect!["-inff"]);
    check_display(Value::Float(f32::INFINITY), expect!["inff"]);
    check_display(Value::Double(f64::INFINITY), expect!["inf"]);
    check_display(Value::Double(f64::NEG_INFINITY), expect!["-inf"]);
    check_display(Value::Double(1.5), expect!["1.5"]);
    check_display(Value::Double(1.0), expect!["1.0"]);
    check_display(Value::Double(-0.0), expect!["-0.0"]);
    check_display(Value::Double(0.1), expect!["0.1"]);
    check_display(Value::Double(1e20), expect!["1e20"]);
    check_display(Value::Double(123456.789), expect!["123456.789"]);
    check_display(Value::Double(f64::MAX), expect!["1.7976931348623157e308"]);
    check_display(Value::Double(f64::INFINITY), expect!["inf"]);
    check_display(Value::Double(f64::NAN), expect!["nan"]);
    check_display(Value::Char(b'c' as i8), expect!["'c'"]);
    check_display(Value::Char(-1), expect!["'ÿ'"]);
    check_display(Value::string("s"), expect![[r#""s""#]]);
    check_display(
        Value::string("a\"b\\c\n"),
        expect![[r#"
        "a\"b\\c
        ""#]],
    );
    check_display(
        Value::Bitset(Bitset::from_words([4096])),
        expect!["{ 4096}"],
    );
    check_display(Value::Bitset(Bitset::new()), expect!["{}"]);
    check_display(Value::Bitset(Bitset::from_words([1, 0])), expect!["{ 1 0}"]);
    check_display(
        Value::Bytearray(vec![0, 127, 255]),
        expect!["y( 0 127 255)"],
    );
    check_display(Value::Bytearray(vec![]), expect!["y()"]);
    check_display(
        Value::List(vec![Value::Int(1), Value::Int(2)]),
        expect!["List (1, 2)"],
    );
    check_display(Value::List(vec![]), expect!["List ()"]);
    check_display(
        Value::Set([Value::Int(2), Value::Int(1)].into_iter().collect()),
        expect!["Set {1, 2}"],
    );
    check_display(Value::Set(Default::default()), expect!["Set {}"]);
    check_display(
        Value::Map([(Value::Int(1), Value::Long(2))].into_iter().collect()),
        expect!["Map [1 -> 2L]"],
    );
    check_display(Value::Map(Default::default()), expect!["Map []"]);
    check_display(
        Value::Struct(vec![
            ("a".into(), Value::Int(1)),
            ("b".into(), Value::Long(2)),
        ]),
        expect!["Struct [a := 1, b := 2L]"],
    );
    check_display(Value::Struct(vec![]), expect!["Struct []"]);
    check_display(
        Value::Shared(Box::new(Shared {
            place: "P".into(),
            value: Value::string("x"),
        })),
        expect![[r#"shared_P ("x")"#]],
    );
}

/// Shows `Display` of a type, and whether `Type::from_name` reads it back.
fn check_type(t: Type, expected: Expect) {
    let shown = t.to_string();
    let back = Type::from_name(&shown) == Some(t);
    expected.assert_eq(&format!("{shown} (reads back: {back})"));
}

#[test]
fn type_display() {
    use std::sync::Arc;
    check_type(Type::Control, expect!["control (reads back: true)"]);
    check_type(Type::Bool, expect!["bool (reads back: true)"]);
    check_type(Type::Int, expect!["int (reads back: true)"]);
    check_type(Type::Long, expect!["long (reads back: true)"]);
    check_type(Type::UInt, expect!["unsigned int (reads back: true)"]);
    check_type(Type::ULong, expect!["unsigned long (reads back: true)"]);
    check_type(Type::Float, expect!["float (reads back: true)"]);
    check_type(Type::Double, expect!["double (reads back: true)"]);
    check_type(Type::Char, expect!["char (reads back: true)"]);
    check_type(Type::String, expect!["string (reads back: true)"]);
    check_type(Type::Bitset, expect!["bitset (reads back: true)"]);
    check_type(Type::Bytearray, expect!["bytearray (reads back: true)"]);
    check_type(Type::Bigint, expect!["bigint (reads back: true)"]);
    check_type(
        Type::Shared("P".into()),
        expect!["shared_P (reads back: true)"],
    );
    check_type(
        Type::List(Box::new(Type::Any)),
        expect!["list (reads back: true)"],
    );
    check_type(
        Type::List(Box::new(Type::Long)),
        expect!["list<long> (reads back: false)"],
    );
    check_type(
        Type::Set(Box::new(Type::Any)),
        expect!["set (reads back: true)"],
    );
    check_type(
        Type::Set(Box::new(Type::ULong)),
        expect!["set<unsigned long> (reads back: false)"],
    );
    check_type(
        Type::Map(Box::new(Type::Any), Box::new(Type::Any)),
        expect!["map (reads back: true)"],
    );
    check_type(
        Type::Map(Box::new(Type::Int), Box::new(Type::Any)),
        expect!["map<int, any> (reads back: false)"],
    );
    check_type(
        Type::Struct(Arc::new(crate::StructType {
            name: "point".into(),
            fields: vec![("x".into(), Type::Double)],
        })),
        expect!["point (reads back: false)"],
    );
    check_type(Type::Any, expect!["any (reads back: false)"]);
}

/// Shows what `Type::from_name` gives.
fn check_from_name(name: &str, expected: Expect) {
    expected.assert_eq(&format!("{:?}", Type::from_name(name)));
}

#[test]
fn type_from_name() {
    check_from_name("stack", expect!["Some(List(Any))"]);
    check_from_name("list", expect!["Some(List(Any))"]);
    check_from_name("map", expect!["Some(Map(Any, Any))"]);
    check_from_name("shared_cleanup", expect![[r#"Some(Shared("cleanup"))"#]]);
    check_from_name("shared_", expect!["None"]);
    check_from_name("shared_1x", expect!["None"]);
    check_from_name("unsigned  int", expect!["None"]);
    check_from_name("Int", expect!["None"]);
    check_from_name("point", expect!["None"]);
    check_from_name("", expect!["None"]);
}

fn leaf() -> impl Strategy<Value = Value> {
    use num_bigint::BigInt;
    prop_oneof![
        Just(Value::Control),
        any::<bool>().prop_map(Value::Bool),
        // The smallest int and long do not read back (a sign applies after the range check).
        any::<i32>()
            .prop_filter("writable", |&i| i != i32::MIN)
            .prop_map(Value::Int),
        any::<i64>()
            .prop_filter("writable", |&i| i != i64::MIN)
            .prop_map(Value::Long),
        any::<u32>().prop_map(Value::UInt),
        any::<u64>().prop_map(Value::ULong),
        any::<f32>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(Value::Float),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(Value::Double),
        any::<i8>().prop_map(Value::Char),
        any::<String>().prop_map(|s| Value::string(&s)),
        proptest::collection::vec(any::<u64>(), 0..4)
            .prop_map(|words| Value::Bitset(Bitset::from_words(words))),
        proptest::collection::vec(any::<u64>(), 0..4)
            .prop_map(|elements| Value::Bitset(Bitset::from_elements(elements))),
        proptest::collection::vec(any::<u8>(), 0..6).prop_map(Value::Bytearray),
        any::<i128>().prop_map(|i| Value::bigint(BigInt::from(i) * BigInt::from(i))),
        any::<i64>().prop_map(|i| Value::bigint(BigInt::from(i))),
    ]
}

/// Arbitrary nested values without NaN and infinities.
pub(crate) fn arb_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::List),
            proptest::collection::btree_set(inner.clone(), 0..5).prop_map(Value::Set),
            proptest::collection::btree_map(inner.clone(), inner.clone(), 0..4)
                .prop_map(Value::Map),
            proptest::collection::vec(("[a-z_][a-z0-9_]{0,5}", inner.clone()), 0..4).prop_map(
                |fields| {
                    let mut out: Vec<(std::sync::Arc<str>, Value)> = Vec::new();
                    for (n, v) in fields {
                        if !out.iter().any(|(m, _)| **m == *n) {
                            out.push((n.as_str().into(), v));
                        }
                    }
                    Value::Struct(out)
                }
            ),
            ("[A-Za-z_][A-Za-z0-9_]{0,5}", inner).prop_map(|(place, value)| {
                Value::Shared(Box::new(Shared {
                    place: place.as_str().into(),
                    value,
                }))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn print_then_parse_round_trips(v in arb_value()) {
        let text = v.to_string();
        prop_assert_eq!(parse_literal(&text), Ok(v.clone()), "printed as {}", text);
        // Surrounding whitespace is fine too.
        prop_assert_eq!(parse_literal(&format!(" \n{text}\t ")), Ok(v));
    }

    #[test]
    fn parse_literal_never_panics(s in any::<String>()) {
        if let Err(e) = parse_literal(&s) {
            prop_assert!(e.offset <= s.len());
        }
    }

    #[test]
    fn parse_literal_never_panics_on_literal_like_text(
        s in r#"[\[\]{}(),:=<>'"\\ a-fxyA-FLUSMlstruhd0-9_.+-]{0,40}"#
    ) {
        if let Err(e) = parse_literal(&s) {
            prop_assert!(e.offset <= s.len());
            prop_assert!(s.is_char_boundary(e.offset));
        }
    }

    #[test]
    fn parse_number_never_panics(s in r"[0-9a-fA-FxXuUlL.eE+-]{0,12}") {
        let _ = parse_number(&s);
    }

    #[test]
    fn integers_round_trip_through_parse_number(i in any::<u64>()) {
        prop_assert_eq!(parse_number(&format!("{i}UL")), Ok(Value::ULong(i)));
        prop_assert_eq!(parse_number(&format!("{i:#x}UL")), Ok(Value::ULong(i)));
    }
}
