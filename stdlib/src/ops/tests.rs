use expect_test::{Expect, expect};

use super::*;
use crate::literal::parse_literal;

/// Reads a type written as in `Display`: xpnet names, `any`, `list<T>`, `set<T>`,
/// `map<K, V>`, and `S{a: int, b: long}` for a struct type `S`.
pub(crate) fn ty(s: &str) -> Type {
    let s = s.trim();
    if s == "any" {
        return Type::Any;
    }
    if let Some(inner) = s.strip_prefix("list<").and_then(|r| r.strip_suffix('>')) {
        return Type::List(Box::new(ty(inner)));
    }
    if let Some(inner) = s.strip_prefix("set<").and_then(|r| r.strip_suffix('>')) {
        return Type::Set(Box::new(ty(inner)));
    }
    if let Some(inner) = s.strip_prefix("map<").and_then(|r| r.strip_suffix('>')) {
        let (k, v) = inner.split_once(',').unwrap();
        return Type::Map(Box::new(ty(k)), Box::new(ty(v)));
    }
    if let Some((name, fields)) = s.split_once('{') {
        let fields = fields.strip_suffix('}').unwrap();
        let fields = fields
            .split(',')
            .filter(|f| !f.trim().is_empty())
            .map(|f| {
                let (n, t) = f.split_once(':').unwrap();
                (n.trim().into(), ty(t))
            })
            .collect();
        return Type::Struct(std::sync::Arc::new(crate::StructType {
            name: name.into(),
            fields,
        }));
    }
    Type::from_name(s).unwrap_or_else(|| panic!("unknown type {s}"))
}

/// Value from literal syntax (test input must be valid).
pub(crate) fn val(s: &str) -> Value {
    // The smallest int and long cannot be written (a sign applies after the range check).
    match s {
        "-2147483648" => return Value::Int(i32::MIN),
        "-9223372036854775808L" => return Value::Long(i64::MIN),
        _ => {}
    }
    parse_literal(s).unwrap_or_else(|e| panic!("bad literal {s}: {e:?}"))
}

fn show_type(r: Result<Type, TypeError>) -> String {
    match r {
        Ok(t) => t.to_string(),
        Err(e) => format!("error: {e}"),
    }
}

fn show_value(r: Result<Value, EvalError>) -> String {
    match r {
        Ok(v) => v.to_string(),
        Err(e) => format!("error: {e}"),
    }
}

/// The types every operator is tried on (paired with themselves), plus mixed pairs.
const TYPES: &[&str] = &[
    "bool",
    "int",
    "long",
    "unsigned int",
    "unsigned long",
    "float",
    "double",
    "char",
    "string",
    "bigint",
    "control",
    "bitset",
    "list<long>",
    "any",
];
const MIXED: &[(&str, &str)] = &[
    ("any", "int"),
    ("string", "any"),
    ("int", "long"),
    ("list", "list<int>"),
    ("list<int>", "list<long>"),
];

/// Type-checks `op` on every type of `TYPES` paired with itself and on the `MIXED` pairs.
fn check_binary_types(op: BinOp, expected: Expect) {
    let mut out = String::new();
    let pairs = TYPES.iter().map(|t| (*t, *t)).chain(MIXED.iter().copied());
    for (a, b) in pairs {
        let r = show_type(type_binary(op, &ty(a), &ty(b)));
        out.push_str(&format!("{a} {} {b} : {r}\n", op.symbol()));
    }
    expected.assert_eq(&out);
}

#[test]
fn types_of_logical_operators() {
    check_binary_types(
        BinOp::Or,
        expect![[r#"
        bool || bool : bool
        int || int : error: `||` expects bool, found `int`
        long || long : error: `||` expects bool, found `long`
        unsigned int || unsigned int : error: `||` expects bool, found `unsigned int`
        unsigned long || unsigned long : error: `||` expects bool, found `unsigned long`
        float || float : error: `||` expects bool, found `float`
        double || double : error: `||` expects bool, found `double`
        char || char : error: `||` expects bool, found `char`
        string || string : error: `||` expects bool, found `string`
        bigint || bigint : error: `||` expects bool, found `bigint`
        control || control : error: `||` expects bool, found `control`
        bitset || bitset : error: `||` expects bool, found `bitset`
        list<long> || list<long> : error: `||` expects bool, found `list<long>`
        any || any : bool
        any || int : error: `||` expects bool, found `int`
        string || any : error: `||` expects bool, found `string`
        int || long : error: operands of `||` must have the same type, found `int` and `long`
        list || list<int> : error: `||` expects bool, found `list<int>`
        list<int> || list<long> : error: operands of `||` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    check_binary_types(
        BinOp::And,
        expect![[r#"
        bool && bool : bool
        int && int : error: `&&` expects bool, found `int`
        long && long : error: `&&` expects bool, found `long`
        unsigned int && unsigned int : error: `&&` expects bool, found `unsigned int`
        unsigned long && unsigned long : error: `&&` expects bool, found `unsigned long`
        float && float : error: `&&` expects bool, found `float`
        double && double : error: `&&` expects bool, found `double`
        char && char : error: `&&` expects bool, found `char`
        string && string : error: `&&` expects bool, found `string`
        bigint && bigint : error: `&&` expects bool, found `bigint`
        control && control : error: `&&` expects bool, found `control`
        bitset && bitset : error: `&&` expects bool, found `bitset`
        list<long> && list<long> : error: `&&` expects bool, found `list<long>`
        any && any : bool
        any && int : error: `&&` expects bool, found `int`
        string && any : error: `&&` expects bool, found `string`
        int && long : error: operands of `&&` must have the same type, found `int` and `long`
        list && list<int> : error: `&&` expects bool, found `list<int>`
        list<int> && list<long> : error: operands of `&&` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
}

#[test]
fn types_of_bitwise_operators() {
    check_binary_types(
        BinOp::BitOr,
        expect![[r#"
        bool | bool : error: `|` expects int, long, unsigned int, unsigned long or bigint, found `bool`
        int | int : int
        long | long : long
        unsigned int | unsigned int : unsigned int
        unsigned long | unsigned long : unsigned long
        float | float : error: `|` expects int, long, unsigned int, unsigned long or bigint, found `float`
        double | double : error: `|` expects int, long, unsigned int, unsigned long or bigint, found `double`
        char | char : error: `|` expects int, long, unsigned int, unsigned long or bigint, found `char`
        string | string : error: `|` expects int, long, unsigned int, unsigned long or bigint, found `string`
        bigint | bigint : bigint
        control | control : error: `|` expects int, long, unsigned int, unsigned long or bigint, found `control`
        bitset | bitset : error: `|` expects int, long, unsigned int, unsigned long or bigint, found `bitset`
        list<long> | list<long> : error: `|` expects int, long, unsigned int, unsigned long or bigint, found `list<long>`
        any | any : any
        any | int : int
        string | any : error: `|` expects int, long, unsigned int, unsigned long or bigint, found `string`
        int | long : error: operands of `|` must have the same type, found `int` and `long`
        list | list<int> : error: `|` expects int, long, unsigned int, unsigned long or bigint, found `list<int>`
        list<int> | list<long> : error: operands of `|` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    check_binary_types(
        BinOp::BitAnd,
        expect![[r#"
        bool & bool : error: `&` expects int, long, unsigned int, unsigned long or bigint, found `bool`
        int & int : int
        long & long : long
        unsigned int & unsigned int : unsigned int
        unsigned long & unsigned long : unsigned long
        float & float : error: `&` expects int, long, unsigned int, unsigned long or bigint, found `float`
        double & double : error: `&` expects int, long, unsigned int, unsigned long or bigint, found `double`
        char & char : error: `&` expects int, long, unsigned int, unsigned long or bigint, found `char`
        string & string : error: `&` expects int, long, unsigned int, unsigned long or bigint, found `string`
        bigint & bigint : bigint
        control & control : error: `&` expects int, long, unsigned int, unsigned long or bigint, found `control`
        bitset & bitset : error: `&` expects int, long, unsigned int, unsigned long or bigint, found `bitset`
        list<long> & list<long> : error: `&` expects int, long, unsigned int, unsigned long or bigint, found `list<long>`
        any & any : any
        any & int : int
        string & any : error: `&` expects int, long, unsigned int, unsigned long or bigint, found `string`
        int & long : error: operands of `&` must have the same type, found `int` and `long`
        list & list<int> : error: `&` expects int, long, unsigned int, unsigned long or bigint, found `list<int>`
        list<int> & list<long> : error: operands of `&` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
}

#[test]
fn types_of_comparisons() {
    check_binary_types(
        BinOp::Lt,
        expect![[r#"
        bool < bool : bool
        int < int : bool
        long < long : bool
        unsigned int < unsigned int : bool
        unsigned long < unsigned long : bool
        float < float : bool
        double < double : bool
        char < char : bool
        string < string : bool
        bigint < bigint : bool
        control < control : error: `<` expects bool, char, string, int, long, unsigned int, unsigned long, float, double or bigint, found `control`
        bitset < bitset : error: `<` expects bool, char, string, int, long, unsigned int, unsigned long, float, double or bigint, found `bitset`
        list<long> < list<long> : error: `<` expects bool, char, string, int, long, unsigned int, unsigned long, float, double or bigint, found `list<long>`
        any < any : bool
        any < int : bool
        string < any : bool
        int < long : error: operands of `<` must have the same type, found `int` and `long`
        list < list<int> : error: `<` expects bool, char, string, int, long, unsigned int, unsigned long, float, double or bigint, found `list<int>`
        list<int> < list<long> : error: operands of `<` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    for op in [BinOp::Le, BinOp::Gt, BinOp::Ge] {
        for t in TYPES {
            assert_eq!(
                type_binary(op, &ty(t), &ty(t)).map_err(|e| e.message.replacen(
                    op.symbol(),
                    "<",
                    1
                )),
                type_binary(BinOp::Lt, &ty(t), &ty(t)).map_err(|e| e.message),
                "{op:?} on {t}"
            );
        }
    }
}

#[test]
fn types_of_equality() {
    check_binary_types(
        BinOp::Eq,
        expect![[r#"
        bool == bool : bool
        int == int : bool
        long == long : bool
        unsigned int == unsigned int : bool
        unsigned long == unsigned long : bool
        float == float : bool
        double == double : bool
        char == char : bool
        string == string : bool
        bigint == bigint : bool
        control == control : bool
        bitset == bitset : bool
        list<long> == list<long> : bool
        any == any : bool
        any == int : bool
        string == any : bool
        int == long : error: operands of `==` must have the same type, found `int` and `long`
        list == list<int> : bool
        list<int> == list<long> : error: operands of `==` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    check_binary_types(
        BinOp::Ne,
        expect![[r#"
        bool != bool : bool
        int != int : bool
        long != long : bool
        unsigned int != unsigned int : bool
        unsigned long != unsigned long : bool
        float != float : bool
        double != double : bool
        char != char : bool
        string != string : bool
        bigint != bigint : bool
        control != control : bool
        bitset != bitset : bool
        list<long> != list<long> : bool
        any != any : bool
        any != int : bool
        string != any : bool
        int != long : error: operands of `!=` must have the same type, found `int` and `long`
        list != list<int> : bool
        list<int> != list<long> : error: operands of `!=` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
}

#[test]
fn types_of_arithmetic() {
    check_binary_types(
        BinOp::Add,
        expect![[r#"
        bool + bool : bool
        int + int : int
        long + long : long
        unsigned int + unsigned int : unsigned int
        unsigned long + unsigned long : unsigned long
        float + float : float
        double + double : double
        char + char : error: `+` expects numbers or string, found `char`
        string + string : string
        bigint + bigint : bigint
        control + control : error: `+` expects numbers or string, found `control`
        bitset + bitset : error: `+` expects numbers or string, found `bitset`
        list<long> + list<long> : error: `+` expects numbers or string, found `list<long>`
        any + any : any
        any + int : int
        string + any : string
        int + long : error: operands of `+` must have the same type, found `int` and `long`
        list + list<int> : error: `+` expects numbers or string, found `list<int>`
        list<int> + list<long> : error: operands of `+` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    check_binary_types(
        BinOp::Sub,
        expect![[r#"
        bool - bool : error: `-` expects numbers, found `bool`
        int - int : int
        long - long : long
        unsigned int - unsigned int : unsigned int
        unsigned long - unsigned long : unsigned long
        float - float : float
        double - double : double
        char - char : error: `-` expects numbers, found `char`
        string - string : error: `-` expects numbers, found `string`
        bigint - bigint : bigint
        control - control : error: `-` expects numbers, found `control`
        bitset - bitset : error: `-` expects numbers, found `bitset`
        list<long> - list<long> : error: `-` expects numbers, found `list<long>`
        any - any : any
        any - int : int
        string - any : error: `-` expects numbers, found `string`
        int - long : error: operands of `-` must have the same type, found `int` and `long`
        list - list<int> : error: `-` expects numbers, found `list<int>`
        list<int> - list<long> : error: operands of `-` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    check_binary_types(
        BinOp::Mul,
        expect![[r#"
        bool * bool : error: `*` expects numbers, found `bool`
        int * int : int
        long * long : long
        unsigned int * unsigned int : unsigned int
        unsigned long * unsigned long : unsigned long
        float * float : float
        double * double : double
        char * char : error: `*` expects numbers, found `char`
        string * string : error: `*` expects numbers, found `string`
        bigint * bigint : bigint
        control * control : error: `*` expects numbers, found `control`
        bitset * bitset : error: `*` expects numbers, found `bitset`
        list<long> * list<long> : error: `*` expects numbers, found `list<long>`
        any * any : any
        any * int : int
        string * any : error: `*` expects numbers, found `string`
        int * long : error: operands of `*` must have the same type, found `int` and `long`
        list * list<int> : error: `*` expects numbers, found `list<int>`
        list<int> * list<long> : error: operands of `*` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    check_binary_types(
        BinOp::Div,
        expect![[r#"
        bool / bool : error: `/` expects float or double, found `bool`
        int / int : error: `/` expects float or double, found `int`
        long / long : error: `/` expects float or double, found `long`
        unsigned int / unsigned int : error: `/` expects float or double, found `unsigned int`
        unsigned long / unsigned long : error: `/` expects float or double, found `unsigned long`
        float / float : float
        double / double : double
        char / char : error: `/` expects float or double, found `char`
        string / string : error: `/` expects float or double, found `string`
        bigint / bigint : error: `/` expects float or double, found `bigint`
        control / control : error: `/` expects float or double, found `control`
        bitset / bitset : error: `/` expects float or double, found `bitset`
        list<long> / list<long> : error: `/` expects float or double, found `list<long>`
        any / any : any
        any / int : error: `/` expects float or double, found `int`
        string / any : error: `/` expects float or double, found `string`
        int / long : error: operands of `/` must have the same type, found `int` and `long`
        list / list<int> : error: `/` expects float or double, found `list<int>`
        list<int> / list<long> : error: operands of `/` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    check_binary_types(
        BinOp::IntDiv,
        expect![[r#"
        bool div bool : error: `div` expects int, long, unsigned int, unsigned long or bigint, found `bool`
        int div int : int
        long div long : long
        unsigned int div unsigned int : unsigned int
        unsigned long div unsigned long : unsigned long
        float div float : error: `div` expects int, long, unsigned int, unsigned long or bigint, found `float`
        double div double : error: `div` expects int, long, unsigned int, unsigned long or bigint, found `double`
        char div char : error: `div` expects int, long, unsigned int, unsigned long or bigint, found `char`
        string div string : error: `div` expects int, long, unsigned int, unsigned long or bigint, found `string`
        bigint div bigint : bigint
        control div control : error: `div` expects int, long, unsigned int, unsigned long or bigint, found `control`
        bitset div bitset : error: `div` expects int, long, unsigned int, unsigned long or bigint, found `bitset`
        list<long> div list<long> : error: `div` expects int, long, unsigned int, unsigned long or bigint, found `list<long>`
        any div any : any
        any div int : int
        string div any : error: `div` expects int, long, unsigned int, unsigned long or bigint, found `string`
        int div long : error: operands of `div` must have the same type, found `int` and `long`
        list div list<int> : error: `div` expects int, long, unsigned int, unsigned long or bigint, found `list<int>`
        list<int> div list<long> : error: operands of `div` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    check_binary_types(
        BinOp::Mod,
        expect![[r#"
        bool mod bool : error: `mod` expects int, long, unsigned int, unsigned long or bigint, found `bool`
        int mod int : int
        long mod long : long
        unsigned int mod unsigned int : unsigned int
        unsigned long mod unsigned long : unsigned long
        float mod float : error: `mod` expects int, long, unsigned int, unsigned long or bigint, found `float`
        double mod double : error: `mod` expects int, long, unsigned int, unsigned long or bigint, found `double`
        char mod char : error: `mod` expects int, long, unsigned int, unsigned long or bigint, found `char`
        string mod string : error: `mod` expects int, long, unsigned int, unsigned long or bigint, found `string`
        bigint mod bigint : bigint
        control mod control : error: `mod` expects int, long, unsigned int, unsigned long or bigint, found `control`
        bitset mod bitset : error: `mod` expects int, long, unsigned int, unsigned long or bigint, found `bitset`
        list<long> mod list<long> : error: `mod` expects int, long, unsigned int, unsigned long or bigint, found `list<long>`
        any mod any : any
        any mod int : int
        string mod any : error: `mod` expects int, long, unsigned int, unsigned long or bigint, found `string`
        int mod long : error: operands of `mod` must have the same type, found `int` and `long`
        list mod list<int> : error: `mod` expects int, long, unsigned int, unsigned long or bigint, found `list<int>`
        list<int> mod list<long> : error: operands of `mod` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    check_binary_types(
        BinOp::Pow,
        expect![[r#"
        bool ** bool : error: `**` expects float or double, found `bool`
        int ** int : error: `**` expects float or double, found `int`
        long ** long : error: `**` expects float or double, found `long`
        unsigned int ** unsigned int : error: `**` expects float or double, found `unsigned int`
        unsigned long ** unsigned long : error: `**` expects float or double, found `unsigned long`
        float ** float : float
        double ** double : double
        char ** char : error: `**` expects float or double, found `char`
        string ** string : error: `**` expects float or double, found `string`
        bigint ** bigint : error: `**` expects float or double, found `bigint`
        control ** control : error: `**` expects float or double, found `control`
        bitset ** bitset : error: `**` expects float or double, found `bitset`
        list<long> ** list<long> : error: `**` expects float or double, found `list<long>`
        any ** any : any
        any ** int : error: `**` expects float or double, found `int`
        string ** any : error: `**` expects float or double, found `string`
        int ** long : error: operands of `**` must have the same type, found `int` and `long`
        list ** list<int> : error: `**` expects float or double, found `list<int>`
        list<int> ** list<long> : error: operands of `**` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
    check_binary_types(
        BinOp::IntPow,
        expect![[r#"
        bool ^ bool : error: `^` expects int, long, unsigned int, unsigned long or bigint, found `bool`
        int ^ int : int
        long ^ long : long
        unsigned int ^ unsigned int : unsigned int
        unsigned long ^ unsigned long : unsigned long
        float ^ float : error: `^` expects int, long, unsigned int, unsigned long or bigint, found `float`
        double ^ double : error: `^` expects int, long, unsigned int, unsigned long or bigint, found `double`
        char ^ char : error: `^` expects int, long, unsigned int, unsigned long or bigint, found `char`
        string ^ string : error: `^` expects int, long, unsigned int, unsigned long or bigint, found `string`
        bigint ^ bigint : bigint
        control ^ control : error: `^` expects int, long, unsigned int, unsigned long or bigint, found `control`
        bitset ^ bitset : error: `^` expects int, long, unsigned int, unsigned long or bigint, found `bitset`
        list<long> ^ list<long> : error: `^` expects int, long, unsigned int, unsigned long or bigint, found `list<long>`
        any ^ any : any
        any ^ int : int
        string ^ any : error: `^` expects int, long, unsigned int, unsigned long or bigint, found `string`
        int ^ long : error: operands of `^` must have the same type, found `int` and `long`
        list ^ list<int> : error: `^` expects int, long, unsigned int, unsigned long or bigint, found `list<int>`
        list<int> ^ list<long> : error: operands of `^` must have the same type, found `list<int>` and `list<long>`
    "#]],
    );
}

/// Type-checks the unary operators on every type of `TYPES`.
fn check_unary_types(op: UnOp, expected: Expect) {
    let mut out = String::new();
    for t in TYPES {
        let r = show_type(type_unary(op, &ty(t)));
        out.push_str(&format!("{}{t} : {r}\n", op.symbol()));
    }
    expected.assert_eq(&out);
}

#[test]
fn types_of_unary_operators() {
    check_unary_types(
        UnOp::Neg,
        expect![[r#"
        -bool : error: `-` expects int, long, float, double or bigint, found `bool`
        -int : int
        -long : long
        -unsigned int : error: `-` expects int, long, float, double or bigint, found `unsigned int`
        -unsigned long : error: `-` expects int, long, float, double or bigint, found `unsigned long`
        -float : float
        -double : double
        -char : error: `-` expects int, long, float, double or bigint, found `char`
        -string : error: `-` expects int, long, float, double or bigint, found `string`
        -bigint : bigint
        -control : error: `-` expects int, long, float, double or bigint, found `control`
        -bitset : error: `-` expects int, long, float, double or bigint, found `bitset`
        -list<long> : error: `-` expects int, long, float, double or bigint, found `list<long>`
        -any : any
    "#]],
    );
    check_unary_types(
        UnOp::Not,
        expect![[r#"
        !bool : bool
        !int : error: `!` expects bool, found `int`
        !long : error: `!` expects bool, found `long`
        !unsigned int : error: `!` expects bool, found `unsigned int`
        !unsigned long : error: `!` expects bool, found `unsigned long`
        !float : error: `!` expects bool, found `float`
        !double : error: `!` expects bool, found `double`
        !char : error: `!` expects bool, found `char`
        !string : error: `!` expects bool, found `string`
        !bigint : error: `!` expects bool, found `bigint`
        !control : error: `!` expects bool, found `control`
        !bitset : error: `!` expects bool, found `bitset`
        !list<long> : error: `!` expects bool, found `list<long>`
        !any : bool
    "#]],
    );
}

#[test]
fn types_of_structs_and_containers() {
    let cases = [
        (BinOp::Eq, "P{a: int, b: long}", "P{a: int, b: long}"),
        (BinOp::Eq, "P{a: int, b: long}", "Q{a: int, b: long}"),
        (BinOp::Eq, "P{a: int, b: long}", "Q{b: long, a: int}"),
        (BinOp::Eq, "P{a: int}", "Q{a: any}"),
        (BinOp::Eq, "P{a: int}", "any"),
        (BinOp::Lt, "P{a: int}", "P{a: int}"),
        (BinOp::Eq, "shared_A", "shared_A"),
        (BinOp::Eq, "shared_A", "shared_B"),
        (BinOp::Eq, "map<int, any>", "map<any, long>"),
        (BinOp::Eq, "set<int>", "set<long>"),
        (BinOp::Add, "list", "list"),
    ];
    let mut out = String::new();
    for (op, a, b) in cases {
        let r = show_type(type_binary(op, &ty(a), &ty(b)));
        out.push_str(&format!("{a} {} {b} : {r}\n", op.symbol()));
    }
    expect![[r#"
        P{a: int, b: long} == P{a: int, b: long} : bool
        P{a: int, b: long} == Q{a: int, b: long} : bool
        P{a: int, b: long} == Q{b: long, a: int} : error: operands of `==` must have the same type, found `P` and `Q`
        P{a: int} == Q{a: any} : bool
        P{a: int} == any : bool
        P{a: int} < P{a: int} : error: `<` expects bool, char, string, int, long, unsigned int, unsigned long, float, double or bigint, found `P`
        shared_A == shared_A : bool
        shared_A == shared_B : error: operands of `==` must have the same type, found `shared_A` and `shared_B`
        map<int, any> == map<any, long> : bool
        set<int> == set<long> : error: operands of `==` must have the same type, found `set<int>` and `set<long>`
        list + list : error: `+` expects numbers or string, found `list`
    "#]].assert_eq(&out);
}

/// Evaluates binary operators on literal operands, one case per line.
fn check_eval(cases: &[(&str, BinOp, &str)], expected: Expect) {
    let mut out = String::new();
    for (a, op, b) in cases {
        let r = show_value(eval_binary(*op, &val(a), &val(b)));
        out.push_str(&format!("{a} {} {b} = {r}\n", op.symbol()));
    }
    expected.assert_eq(&out);
}

use BinOp::*;

#[test]
fn eval_logical() {
    check_eval(
        &[
            ("true", Or, "false"),
            ("false", Or, "false"),
            ("true", And, "true"),
            ("true", And, "false"),
            ("1", Or, "2"),
        ],
        expect![[r#"
            true || false = true
            false || false = false
            true && true = true
            true && false = false
            1 || 2 = error: type error: `||` cannot be applied to int and int
        "#]],
    );
}

#[test]
fn eval_bitwise() {
    check_eval(
        &[
            ("12", BitOr, "3"),
            ("12", BitAnd, "6"),
            ("-1", BitAnd, "255"),
            ("12L", BitOr, "1L"),
            ("12U", BitAnd, "4U"),
            ("18446744073709551615UL", BitAnd, "1UL"),
            ("-1A", BitAnd, "255A"),
            ("12A", BitOr, "3A"),
            ("1.0", BitOr, "1.0"),
            ("true", BitOr, "false"),
            ("1", BitOr, "1L"),
        ],
        expect![[r#"
            12 | 3 = 15
            12 & 6 = 4
            -1 & 255 = 255
            12L | 1L = 13L
            12U & 4U = 4U
            18446744073709551615UL & 1UL = 1UL
            -1A & 255A = 255A
            12A | 3A = 15A
            1.0 | 1.0 = error: type error: `|` cannot be applied to double and double
            true | false = error: type error: `|` cannot be applied to bool and bool
            1 | 1L = error: type error: `|` cannot be applied to int and long
        "#]],
    );
}

#[test]
fn eval_comparisons() {
    check_eval(
        &[
            ("1", Lt, "2"),
            ("2", Lt, "1"),
            ("2", Le, "2"),
            ("3", Gt, "2"),
            ("2", Ge, "3"),
            ("-2147483648", Lt, "2147483647"),
            ("false", Lt, "true"),
            ("'a'", Lt, "'b'"),
            ("'\u{ff}'", Lt, "'a'"),
            ("\"abc\"", Lt, "\"abd\""),
            ("\"ab\"", Lt, "\"abc\""),
            ("\"\"", Ge, "\"\""),
            ("1U", Lt, "4294967295U"),
            ("0UL", Gt, "18446744073709551615UL"),
            ("-1L", Lt, "0L"),
            ("-100000000000000000000A", Lt, "1A"),
            ("1.5", Lt, "2.5"),
            ("-0.0", Lt, "0.0"),
            ("-0.0", Ge, "0.0"),
            ("1.5f", Gt, "1.0f"),
            ("1", Lt, "1L"),
            ("[]", Lt, "[]"),
            ("List (1)", Lt, "List (2)"),
            ("{ 1}", Lt, "{ 2}"),
        ],
        expect![[r#"
            1 < 2 = true
            2 < 1 = false
            2 <= 2 = true
            3 > 2 = true
            2 >= 3 = false
            -2147483648 < 2147483647 = true
            false < true = true
            'a' < 'b' = true
            'ÿ' < 'a' = true
            "abc" < "abd" = true
            "ab" < "abc" = true
            "" >= "" = true
            1U < 4294967295U = true
            0UL > 18446744073709551615UL = false
            -1L < 0L = true
            -100000000000000000000A < 1A = true
            1.5 < 2.5 = true
            -0.0 < 0.0 = false
            -0.0 >= 0.0 = true
            1.5f > 1.0f = true
            1 < 1L = error: type error: `<` cannot be applied to int and long
            [] < [] = error: type error: `<` cannot be applied to control and control
            List (1) < List (2) = error: type error: `<` cannot be applied to list and list
            { 1} < { 2} = error: type error: `<` cannot be applied to bitset and bitset
        "#]],
    );
}

#[test]
fn eval_comparisons_with_nan() {
    let nan = Value::Double(f64::NAN);
    let one = Value::Double(1.0);
    let got: Vec<_> = [Lt, Le, Gt, Ge]
        .iter()
        .flat_map(|op| {
            [
                eval_binary(*op, &nan, &one),
                eval_binary(*op, &one, &nan),
                eval_binary(*op, &nan, &nan),
            ]
        })
        .collect();
    assert!(got.iter().all(|r| *r == Ok(Value::Bool(false))), "{got:?}");
    let nanf = Value::Float(f32::NAN);
    assert_eq!(eval_binary(Lt, &nanf, &nanf), Ok(Value::Bool(false)));
}

#[test]
fn eval_equality() {
    check_eval(
        &[
            ("1", Eq, "1"),
            ("1", Ne, "1"),
            ("1", Eq, "2"),
            ("1", Ne, "2"),
            ("true", Eq, "true"),
            ("1L", Eq, "1L"),
            ("1U", Eq, "1U"),
            ("1UL", Ne, "2UL"),
            ("'a'", Eq, "'a'"),
            ("\"a\"", Eq, "\"a\""),
            ("12A", Eq, "12A"),
            ("{ 1 0 0}", Eq, "{ 1}"),
            ("{}", Eq, "{ 0}"),
            ("{ 1}", Ne, "{ 1 1}"),
            ("y( 1 2)", Eq, "y( 1 2)"),
            ("y( 1 2)", Eq, "y( 1 2 0)"),
            ("shared_P (1)", Eq, "shared_P (1)"),
            ("shared_P (1)", Eq, "shared_P (2)"),
            ("shared_P (1)", Eq, "shared_Q (1)"),
            ("shared_P (1.0)", Eq, "shared_P (1.0)"),
            (
                "Struct [a := 1, b := \"x\"]",
                Eq,
                "Struct [a := 1, b := \"x\"]",
            ),
            (
                "Struct [a := 1, b := \"x\"]",
                Ne,
                "Struct [a := 2, b := \"x\"]",
            ),
            ("Struct []", Eq, "Struct []"),
            ("Struct [a := 1, b := 2]", Eq, "Struct [b := 2, a := 1]"),
            ("Struct [a := 1]", Eq, "Struct [a := 1, b := 2]"),
            ("Struct [a := 1, b := 2.0]", Eq, "Struct [a := 2, b := 2.0]"),
            (
                "Struct [a := Struct [b := 1]]",
                Eq,
                "Struct [a := Struct [b := 1]]",
            ),
            ("1.0", Eq, "1.0"),
            ("1.0f", Ne, "1.0f"),
            ("[]", Eq, "[]"),
            ("List (1)", Eq, "List (1)"),
            ("Set {}", Eq, "Set {}"),
            ("Map []", Ne, "Map []"),
            ("1", Eq, "1L"),
            ("Struct []", Eq, "1"),
        ],
        expect![[r#"
            1 == 1 = true
            1 != 1 = false
            1 == 2 = false
            1 != 2 = true
            true == true = true
            1L == 1L = true
            1U == 1U = true
            1UL != 2UL = true
            'a' == 'a' = true
            "a" == "a" = true
            12A == 12A = true
            { 1 0 0} == { 1} = true
            {} == { 0} = true
            { 1} != { 1 1} = true
            y( 1 2) == y( 1 2) = true
            y( 1 2) == y( 1 2 0) = false
            shared_P (1) == shared_P (1) = true
            shared_P (1) == shared_P (2) = false
            shared_P (1) == shared_Q (1) = error: type error: `==` cannot be applied to shared_P and shared_Q
            shared_P (1.0) == shared_P (1.0) = error: values of type double cannot be compared for equality
            Struct [a := 1, b := "x"] == Struct [a := 1, b := "x"] = true
            Struct [a := 1, b := "x"] != Struct [a := 2, b := "x"] = true
            Struct [] == Struct [] = true
            Struct [a := 1, b := 2] == Struct [b := 2, a := 1] = error: structs with different fields cannot be compared
            Struct [a := 1] == Struct [a := 1, b := 2] = error: structs with different fields cannot be compared
            Struct [a := 1, b := 2.0] == Struct [a := 2, b := 2.0] = error: values of type double cannot be compared for equality
            Struct [a := Struct [b := 1]] == Struct [a := Struct [b := 1]] = true
            1.0 == 1.0 = error: values of type double cannot be compared for equality
            1.0f != 1.0f = error: values of type float cannot be compared for equality
            [] == [] = error: values of type control cannot be compared for equality
            List (1) == List (1) = error: values of type list cannot be compared for equality
            Set {} == Set {} = error: values of type set cannot be compared for equality
            Map [] != Map [] = error: values of type map cannot be compared for equality
            1 == 1L = error: type error: `==` cannot be applied to int and long
            Struct [] == 1 = error: type error: `==` cannot be applied to struct and int
        "#]],
    );
}

#[test]
fn eval_add_sub_mul() {
    check_eval(
        &[
            ("1", Add, "2"),
            ("2147483647", Add, "1"),
            ("-2147483648", Sub, "1"),
            ("65536", Mul, "65536"),
            ("-1", Mul, "-2147483648"),
            ("9223372036854775807L", Add, "1L"),
            ("-9223372036854775808L", Sub, "1L"),
            ("4294967295U", Add, "1U"),
            ("4294967295U", Mul, "2U"),
            ("3U", Sub, "2U"),
            ("2U", Sub, "3U"),
            ("0UL", Sub, "1UL"),
            ("18446744073709551615UL", Add, "1UL"),
            ("0UL", Sub, "0UL"),
            ("1.5", Add, "2.25"),
            ("1.5f", Sub, "2.5f"),
            ("1e308", Mul, "10.0"),
            ("1.5", Mul, "-2.0"),
            ("9223372036854775807A", Add, "1A"),
            ("0A", Sub, "1A"),
            ("100000000000A", Mul, "100000000000A"),
            ("\"ab\"", Add, "\"cd\""),
            ("\"\"", Add, "\"\""),
            ("true", Add, "true"),
            ("'a'", Add, "'b'"),
            ("'a'", Add, "\"b\""),
            ("\"a\"", Sub, "\"b\""),
            ("1", Add, "1L"),
            ("List (1)", Add, "List (2)"),
        ],
        expect![[r#"
            1 + 2 = 3
            2147483647 + 1 = -2147483648
            -2147483648 - 1 = 2147483647
            65536 * 65536 = 0
            -1 * -2147483648 = -2147483648
            9223372036854775807L + 1L = -9223372036854775808L
            -9223372036854775808L - 1L = 9223372036854775807L
            4294967295U + 1U = 0U
            4294967295U * 2U = 4294967294U
            3U - 2U = 1U
            2U - 3U = error: unsigned subtraction below zero
            0UL - 1UL = error: unsigned subtraction below zero
            18446744073709551615UL + 1UL = 0UL
            0UL - 0UL = 0UL
            1.5 + 2.25 = 3.75
            1.5f - 2.5f = -1.0f
            1e308 * 10.0 = inf
            1.5 * -2.0 = -3.0
            9223372036854775807A + 1A = 9223372036854775808A
            0A - 1A = -1A
            100000000000A * 100000000000A = 10000000000000000000000A
            "ab" + "cd" = "abcd"
            "" + "" = ""
            true + true = error: type error: `+` cannot be applied to bool and bool
            'a' + 'b' = "ab"
            'a' + "b" = error: type error: `+` cannot be applied to char and string
            "a" - "b" = error: type error: `-` cannot be applied to string and string
            1 + 1L = error: type error: `+` cannot be applied to int and long
            List (1) + List (2) = error: type error: `+` cannot be applied to list and list
        "#]],
    );
}

#[test]
fn eval_division_and_modulo() {
    check_eval(
        &[
            ("7", IntDiv, "2"),
            ("-7", IntDiv, "2"),
            ("7", IntDiv, "-2"),
            ("7", Mod, "2"),
            ("-7", Mod, "2"),
            ("7", Mod, "-2"),
            ("-2147483648", IntDiv, "-1"),
            ("-2147483648", Mod, "-1"),
            ("-9223372036854775808L", IntDiv, "-1L"),
            ("-9223372036854775808L", Mod, "-1L"),
            ("1", IntDiv, "0"),
            ("1", Mod, "0"),
            ("1L", IntDiv, "0L"),
            ("1U", IntDiv, "0U"),
            ("1UL", Mod, "0UL"),
            ("7U", IntDiv, "2U"),
            ("7UL", Mod, "4UL"),
            ("-7A", IntDiv, "2A"),
            ("-7A", Mod, "2A"),
            ("7A", Mod, "-2A"),
            ("1A", IntDiv, "0A"),
            ("1A", Mod, "0A"),
            ("1.0", Div, "4.0"),
            ("1.0", Div, "0.0"),
            ("1.0", Div, "-0.0"),
            ("1.0", Div, "1e-308"),
            ("1.0", Div, "2.2250738585072014e-308"),
            ("1.0f", Div, "4.0f"),
            ("1.0f", Div, "0.0f"),
            ("1.0f", Div, "1e-38f"),
            ("1.0f", Div, "1.1754944e-38f"),
            ("7", Div, "2"),
            ("7.0", IntDiv, "2.0"),
            ("7.0", Mod, "2.0"),
        ],
        expect![[r#"
            7 div 2 = 3
            -7 div 2 = -3
            7 div -2 = -3
            7 mod 2 = 1
            -7 mod 2 = -1
            7 mod -2 = 1
            -2147483648 div -1 = -2147483648
            -2147483648 mod -1 = 0
            -9223372036854775808L div -1L = -9223372036854775808L
            -9223372036854775808L mod -1L = 0L
            1 div 0 = error: division by zero
            1 mod 0 = error: division by zero
            1L div 0L = error: division by zero
            1U div 0U = error: division by zero
            1UL mod 0UL = error: division by zero
            7U div 2U = 3U
            7UL mod 4UL = 3UL
            -7A div 2A = -3A
            -7A mod 2A = -1A
            7A mod -2A = 1A
            1A div 0A = error: division by zero
            1A mod 0A = error: division by zero
            1.0 / 4.0 = 0.25
            1.0 / 0.0 = error: division by zero
            1.0 / -0.0 = error: division by zero
            1.0 / 1e-308 = error: division by zero
            1.0 / 2.2250738585072014e-308 = 4.49423283715579e307
            1.0f / 4.0f = 0.25f
            1.0f / 0.0f = error: division by zero
            1.0f / 1e-38f = error: division by zero
            1.0f / 1.1754944e-38f = 8.507059e37f
            7 / 2 = error: type error: `/` cannot be applied to int and int
            7.0 div 2.0 = error: type error: `div` cannot be applied to double and double
            7.0 mod 2.0 = error: type error: `mod` cannot be applied to double and double
        "#]],
    );
}

#[test]
fn eval_division_by_nan() {
    let r = eval_binary(Div, &Value::Double(1.0), &Value::Double(f64::NAN));
    assert!(matches!(r, Ok(Value::Double(x)) if x.is_nan()), "{r:?}");
}

#[test]
fn eval_powers() {
    check_eval(
        &[
            ("2", IntPow, "10"),
            ("2", IntPow, "31"),
            ("2", IntPow, "32"),
            ("3", IntPow, "0"),
            ("0", IntPow, "0"),
            ("-2", IntPow, "3"),
            ("2", IntPow, "-1"),
            ("2L", IntPow, "62L"),
            ("2L", IntPow, "64L"),
            ("3L", IntPow, "9223372036854775807L"),
            ("2L", IntPow, "-1L"),
            ("2U", IntPow, "32U"),
            ("3U", IntPow, "4294967295U"),
            ("2UL", IntPow, "63UL"),
            ("2A", IntPow, "100A"),
            ("-3A", IntPow, "3A"),
            ("0A", IntPow, "0A"),
            ("0A", IntPow, "100000000000000000000A"),
            ("1A", IntPow, "100000000000000000000A"),
            ("-1A", IntPow, "100000000000000000001A"),
            ("-1A", IntPow, "100000000000000000000A"),
            ("2A", IntPow, "100000000000000000000A"),
            ("2A", IntPow, "4294967295A"),
            ("2A", IntPow, "-1A"),
            ("2.0", Pow, "0.5"),
            ("2.0", Pow, "-1.0"),
            ("4.0f", Pow, "0.5f"),
            ("-8.0", Pow, "2.0"),
            ("2", Pow, "2"),
            ("2.0", IntPow, "2.0"),
            ("2", IntPow, "2L"),
        ],
        expect![[r#"
            2 ^ 10 = 1024
            2 ^ 31 = -2147483648
            2 ^ 32 = 0
            3 ^ 0 = 1
            0 ^ 0 = 1
            -2 ^ 3 = -8
            2 ^ -1 = error: negative exponent
            2L ^ 62L = 4611686018427387904L
            2L ^ 64L = 0L
            3L ^ 9223372036854775807L = -6148914691236517205L
            2L ^ -1L = error: negative exponent
            2U ^ 32U = 0U
            3U ^ 4294967295U = 2863311531U
            2UL ^ 63UL = 9223372036854775808UL
            2A ^ 100A = 1267650600228229401496703205376A
            -3A ^ 3A = -27A
            0A ^ 0A = 1A
            0A ^ 100000000000000000000A = 0A
            1A ^ 100000000000000000000A = 1A
            -1A ^ 100000000000000000001A = -1A
            -1A ^ 100000000000000000000A = 1A
            2A ^ 100000000000000000000A = error: bigint power too large
            2A ^ 4294967295A = error: bigint power too large
            2A ^ -1A = error: negative exponent
            2.0 ** 0.5 = 1.4142135623730951
            2.0 ** -1.0 = 0.5
            4.0f ** 0.5f = 2.0f
            -8.0 ** 2.0 = 64.0
            2 ** 2 = error: type error: `**` cannot be applied to int and int
            2.0 ^ 2.0 = error: type error: `^` cannot be applied to double and double
            2 ^ 2L = error: type error: `^` cannot be applied to int and long
        "#]],
    );
}

/// Evaluates the unary operators on literal operands.
fn check_eval_unary(cases: &[(UnOp, &str)], expected: Expect) {
    let mut out = String::new();
    for (op, v) in cases {
        let r = show_value(eval_unary(*op, &val(v)));
        out.push_str(&format!("{}({v}) = {r}\n", op.symbol()));
    }
    expected.assert_eq(&out);
}

#[test]
fn eval_unary_operators() {
    use UnOp::*;
    check_eval_unary(
        &[
            (Neg, "1"),
            (Neg, "-2147483648"),
            (Neg, "2147483647"),
            (Neg, "-9223372036854775808L"),
            (Neg, "0"),
            (Neg, "1.5"),
            (Neg, "0.0"),
            (Neg, "1.5f"),
            (Neg, "-100000000000000000000A"),
            (Neg, "1U"),
            (Neg, "1UL"),
            (Neg, "true"),
            (Neg, "\"a\""),
            (Not, "true"),
            (Not, "false"),
            (Not, "1"),
            (Not, "0"),
            (Not, "1U"),
            (Not, "0L"),
            (Not, "0UL"),
            (Not, "5A"),
            (Not, "-1A"),
            (Not, "[]"),
        ],
        expect![[r#"
            -(1) = -1
            -(-2147483648) = -2147483648
            -(2147483647) = -2147483647
            -(-9223372036854775808L) = -9223372036854775808L
            -(0) = 0
            -(1.5) = -1.5
            -(0.0) = -0.0
            -(1.5f) = -1.5f
            -(-100000000000000000000A) = 100000000000000000000A
            -(1U) = error: type error: `-` cannot be applied to unsigned int
            -(1UL) = error: type error: `-` cannot be applied to unsigned long
            -(true) = error: type error: `-` cannot be applied to bool
            -("a") = error: type error: `-` cannot be applied to string
            !(true) = false
            !(false) = true
            !(1) = -2
            !(0) = -1
            !(1U) = 4294967294U
            !(0L) = -1L
            !(0UL) = 18446744073709551615UL
            !(5A) = -6A
            !(-1A) = 0A
            !([]) = error: type error: `!` cannot be applied to control
        "#]],
    );
}

#[test]
fn lang_eq_and_total_order_agree_where_defined() {
    for (a, b) in [
        ("1", "1"),
        ("{ 1 0}", "{ 1}"),
        ("\"x\"", "\"y\""),
        ("3A", "4A"),
    ] {
        let (a, b) = (val(a), val(b));
        assert_eq!(lang_eq(&a, &b), Ok(a == b));
    }
}
