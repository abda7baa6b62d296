use std::sync::Arc;

use num_bigint::BigInt;
use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::StructType;

fn point() -> Type {
    Type::Struct(Arc::new(StructType {
        name: Arc::from("point"),
        fields: vec![
            (Arc::from("x"), Type::ULong),
            (Arc::from("y"), Type::Double),
        ],
    }))
}

fn ok(json: Json, ty: &Type) -> String {
    match from_json(&json, ty) {
        Ok(v) => v.to_string(),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn encodes_naturally() {
    let v = Value::List(vec![
        Value::Control,
        Value::Bool(true),
        Value::Int(-3),
        Value::ULong(u64::MAX),
        Value::Long(i64::MIN),
        Value::Float(0.1),
        Value::Double(f64::NAN),
        Value::Double(f64::NEG_INFINITY),
        Value::Float(f32::INFINITY),
        Value::Char(-23),
        Value::Char(b'a' as i8),
        Value::string("hé\""),
        Value::bigint(BigInt::from(-7) * BigInt::from(u64::MAX)),
        Value::Bitset(Bitset::from_words([0b101, 0, 1 << 63])),
        Value::Bitset(Bitset::from_elements([0, 4_294_967_295, u64::MAX])),
        Value::Bytearray(vec![0, 255]),
        Value::Map(BTreeMap::from([(Value::Int(2), Value::string("b"))])),
        Value::Set(BTreeSet::from([Value::Int(3), Value::Int(1)])),
        Value::Struct(vec![
            (Arc::from("b"), Value::Int(1)),
            (Arc::from("a"), Value::Control),
        ]),
        Value::Shared(Box::new(Shared {
            place: Arc::from("P"),
            value: Value::string("x"),
        })),
    ]);
    assert_eq!(
        to_json(&v).to_string(),
        r#"[null,true,-3,18446744073709551615,-9223372036854775808,0.1,"NaN","-Infinity","Infinity","é","a","hé\"","-129127208515966861305","#
            .to_string()
            + r#"[0,2,191],[0,4294967295,18446744073709551615],[0,255],[[2,"b"]],[1,3],{"a":null,"b":1},"\"x\""]"#
    );
}

#[test]
fn decodes_guided_by_the_type() {
    assert_eq!(ok(json!(3), &Type::Int), "3");
    assert_eq!(ok(json!(3), &Type::Long), "3L");
    assert_eq!(ok(json!(3.0), &Type::ULong), "3UL");
    assert_eq!(ok(json!(u64::MAX), &Type::ULong), "18446744073709551615UL");
    assert_eq!(ok(json!(3), &Type::Double), "3.0");
    assert_eq!(ok(json!(0.1), &Type::Float), "0.1f");
    assert_eq!(ok(json!("-Infinity"), &Type::Double), "-inf");
    assert_eq!(ok(json!("NaN"), &Type::Float), "nan");
    assert_eq!(ok(json!(null), &Type::Control), "[]");
    assert_eq!(ok(json!([]), &Type::Control), "[]");
    assert_eq!(ok(json!("[]"), &Type::Control), "[]");
    assert_eq!(ok(json!("é"), &Type::Char), "'é'");
    assert_eq!(
        ok(json!("-12345678901234567890123"), &Type::Bigint),
        "-12345678901234567890123A"
    );
    assert_eq!(ok(json!(-5), &Type::Bigint), "-5A");
    assert_eq!(ok(json!([64, 0, 0]), &Type::Bitset), "{ 1 1}");
    // Elements up to the largest unsigned long, stored sparse.
    assert_eq!(
        ok(json!([u64::MAX, 1, 4_294_967_295u64]), &Type::Bitset),
        "{ 2 @67108863 9223372036854775808 @288230376151711743 9223372036854775808}"
    );
    assert_eq!(ok(json!([1, 255]), &Type::Bytearray), "y( 1 255)");
    let set = Type::Set(Box::new(Type::Int));
    assert_eq!(ok(json!([3, 1, 3]), &set), "Set {1, 3}");
    let map = Type::Map(Box::new(Type::String), Box::new(Type::Long));
    assert_eq!(
        ok(json!([["b", 1], ["a", 2]]), &map),
        r#"Map ["a" -> 2L, "b" -> 1L]"#
    );
    assert_eq!(
        ok(json!({"b": 1, "a": 2}), &map),
        r#"Map ["a" -> 2L, "b" -> 1L]"#
    );
    assert_eq!(
        ok(json!({"y": 1.5, "x": 2}), &point()),
        "Struct [x := 2UL, y := 1.5]"
    );
    assert_eq!(
        ok(json!("\"x\""), &Type::Shared(Arc::from("P"))),
        r#"shared_P ("x")"#
    );
}

#[test]
fn any_reads_literal_syntax_in_strings_and_the_rest_naturally() {
    assert_eq!(ok(json!("3UL"), &Type::Any), "3UL");
    assert_eq!(ok(json!("Set {1, 2L}"), &Type::Any), "Set {1, 2L}");
    assert_eq!(
        ok(
            json!([null, true, 3, u64::MAX, 1.5, "'c'", {"a": "\"s\""}]),
            &Type::Any
        ),
        r#"List ([], true, 3L, 18446744073709551615UL, 1.5, 'c', Struct [a := "s"])"#
    );
    let list_any = Type::List(Box::new(Type::Any));
    assert_eq!(ok(json!(["1", "2L"]), &list_any), "List (1, 2L)");
    assert_eq!(
        ok(json!(["1", "hello"]), &list_any),
        "error: [1]: expected a value in literal syntax (the type is not known), found the \
         string \"hello\": unknown literal `hello` at offset 0"
    );
}

#[test]
fn errors_name_the_path() {
    let ty = Type::List(Box::new(point()));
    let json = json!([{"x": 1, "y": 2}, {"x": -1, "y": 0}]);
    assert_eq!(
        from_json_at(&json, &ty, "outputs.sum"),
        Err("outputs.sum[1].x: expected unsigned long, found -1 (out of range)".to_string())
    );
    assert_eq!(
        ok(json!({"x": 1}), &point()),
        "error: missing field `y` of point"
    );
    assert_eq!(
        ok(json!({"x": 1, "y": 2, "z": 3}), &point()),
        "error: unknown field `z` (not in point)"
    );
    assert_eq!(
        ok(json!("3"), &Type::Long),
        "error: expected an integer (long), found the string \"3\""
    );
    assert_eq!(
        ok(json!(2_147_483_648_i64), &Type::Int),
        "error: expected int, found 2147483648 (out of range)"
    );
    assert_eq!(
        ok(json!(1.5), &Type::Int),
        "error: expected an integer (int), found 1.5"
    );
    assert_eq!(
        ok(json!(1e300), &Type::Float),
        "error: expected float, found 1e+300 (out of range)"
    );
    assert_eq!(
        ok(json!("ab"), &Type::Char),
        "error: expected a string of one character (char), found the string \"ab\""
    );
    assert_eq!(
        ok(json!("€"), &Type::Char),
        "error: expected a character up to U+00FF (char), found the string \"€\""
    );
    assert_eq!(
        ok(json!("12x"), &Type::Bigint),
        "error: expected a decimal integer (bigint), found the string \"12x\""
    );
    assert_eq!(
        ok(json!([1, -1]), &Type::Bitset),
        "error: [1]: expected a bit index 0..=18446744073709551615, found -1"
    );
    assert_eq!(
        ok(json!([1, 256]), &Type::Bytearray),
        "error: [1]: expected a byte 0..=255, found 256"
    );
    let map = Type::Map(Box::new(Type::Int), Box::new(Type::Long));
    assert_eq!(
        ok(json!([[1, 2], [1, 3]]), &map),
        "error: [1]: duplicate key 1"
    );
    assert_eq!(
        ok(json!([[1, 2], ["a", 3]]), &map),
        "error: [1]<key>: expected an integer (int), found the string \"a\""
    );
    assert_eq!(
        ok(json!([[1, 2], [1]]), &map),
        "error: [1]: expected a [key, value] pair, found an array"
    );
    assert_eq!(
        ok(json!({"a": 1}), &map),
        "error: expected an array of [key, value] pairs (map<int, long>), found an object"
    );
    assert_eq!(
        ok(json!(0), &Type::Control),
        "error: expected null (control), found 0"
    );
    assert_eq!(
        ok(json!("x".repeat(100)), &Type::Int),
        format!(
            "error: expected an integer (int), found the string \"{}...\"",
            "x".repeat(40)
        )
    );
}

#[test]
fn deep_nesting_is_an_error() {
    let mut json = json!(1);
    let mut ty = Type::Long;
    for _ in 0..300 {
        json = Json::Array(vec![json]);
        ty = Type::List(Box::new(ty));
    }
    let e = from_json(&json, &ty).unwrap_err();
    assert!(e.ends_with("nested deeper than 200 levels"), "{e}");
    let e = from_json(&json, &Type::Any).unwrap_err();
    assert!(e.ends_with("nested deeper than 200 levels"), "{e}");
}

#[test]
fn object_builds_ports() {
    let inputs = [Value::Long(2), Value::Control];
    let obj = object([("a", &inputs[0]), ("b", &inputs[1])]);
    assert_eq!(Json::Object(obj).to_string(), r#"{"a":2,"b":null}"#);
}

fn leaf_type() -> impl Strategy<Value = Type> {
    prop_oneof![
        Just(Type::Control),
        Just(Type::Bool),
        Just(Type::Int),
        Just(Type::Long),
        Just(Type::UInt),
        Just(Type::ULong),
        Just(Type::Float),
        Just(Type::Double),
        Just(Type::Char),
        Just(Type::String),
        Just(Type::Bitset),
        Just(Type::Bytearray),
        Just(Type::Bigint),
        "[A-Za-z_][A-Za-z0-9_]{0,4}".prop_map(|p| Type::Shared(Arc::from(p.as_str()))),
    ]
}

fn arb_type() -> impl Strategy<Value = Type> {
    leaf_type().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| Type::List(Box::new(t))),
            inner.clone().prop_map(|t| Type::Set(Box::new(t))),
            (inner.clone(), inner.clone()).prop_map(|(k, v)| Type::Map(Box::new(k), Box::new(v))),
            proptest::collection::btree_map("[a-z_][a-z0-9_]{0,4}", inner, 0..4).prop_map(
                |fields| {
                    Type::Struct(Arc::new(StructType {
                        name: Arc::from("s"),
                        fields: fields
                            .into_iter()
                            .map(|(n, t)| (Arc::from(n.as_str()), t))
                            .collect(),
                    }))
                }
            ),
        ]
    })
}

fn not_nan_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<f32>().prop_filter("not NaN", |x| !x.is_nan()),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        Just(-0.0f32),
    ]
}

fn not_nan_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("not NaN", |x| !x.is_nan()),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-0.0f64),
    ]
}

/// Random values of the type `ty`.
fn value_of(ty: &Type) -> BoxedStrategy<Value> {
    match ty {
        Type::Control => Just(Value::Control).boxed(),
        Type::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        Type::Int => any::<i32>().prop_map(Value::Int).boxed(),
        Type::Long => any::<i64>().prop_map(Value::Long).boxed(),
        Type::UInt => any::<u32>().prop_map(Value::UInt).boxed(),
        Type::ULong => any::<u64>().prop_map(Value::ULong).boxed(),
        Type::Float => not_nan_f32().prop_map(Value::Float).boxed(),
        Type::Double => not_nan_f64().prop_map(Value::Double).boxed(),
        Type::Char => any::<i8>().prop_map(Value::Char).boxed(),
        Type::String => any::<String>().prop_map(|s| Value::string(&s)).boxed(),
        Type::Bitset => prop_oneof![
            proptest::collection::vec(any::<u64>(), 0..4).prop_map(Bitset::from_words),
            proptest::collection::vec(any::<u64>(), 0..4).prop_map(Bitset::from_elements),
        ]
        .prop_map(Value::Bitset)
        .boxed(),
        Type::Bytearray => proptest::collection::vec(any::<u8>(), 0..6)
            .prop_map(Value::Bytearray)
            .boxed(),
        Type::Bigint => any::<i128>()
            .prop_map(|i| Value::bigint(BigInt::from(i) * BigInt::from(i) - BigInt::from(i)))
            .boxed(),
        Type::Shared(p) => {
            let place = p.clone();
            crate::literal::tests::arb_value()
                .prop_map(move |value| {
                    Value::Shared(Box::new(Shared {
                        place: place.clone(),
                        value,
                    }))
                })
                .boxed()
        }
        Type::List(t) => proptest::collection::vec(value_of(t), 0..4)
            .prop_map(Value::List)
            .boxed(),
        Type::Set(t) => proptest::collection::btree_set(value_of(t), 0..4)
            .prop_map(Value::Set)
            .boxed(),
        Type::Map(k, v) => proptest::collection::btree_map(value_of(k), value_of(v), 0..4)
            .prop_map(Value::Map)
            .boxed(),
        Type::Struct(st) => {
            let names: Vec<Arc<str>> = st.fields.iter().map(|(n, _)| n.clone()).collect();
            st.fields
                .iter()
                .map(|(_, t)| value_of(t))
                .collect::<Vec<_>>()
                .prop_map(move |values| Value::Struct(names.iter().cloned().zip(values).collect()))
                .boxed()
        }
        Type::Any => crate::literal::tests::arb_value().boxed(),
    }
}

fn typed_value() -> impl Strategy<Value = (Type, Value)> {
    arb_type().prop_flat_map(|t| {
        let values = value_of(&t);
        (Just(t), values)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn decode_inverts_encode((ty, v) in typed_value()) {
        prop_assert!(v.fits(&ty));
        let json = to_json(&v);
        prop_assert_eq!(from_json(&json, &ty), Ok(v.clone()), "as JSON {}", json);
        // And through the JSON text, as modules see it.
        let text = json.to_string();
        let back: Json = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(from_json(&back, &ty), Ok(v), "as text {}", text);
    }

    #[test]
    fn decoding_never_panics((ty, v) in typed_value(), other in arb_type()) {
        // Decoding a value of one type as another: an error or a value of that type.
        if let Ok(w) = from_json(&to_json(&v), &other) {
            prop_assert!(w.fits(&other), "{} does not fit {}", w, other);
        }
        let _ = ty;
    }
}
