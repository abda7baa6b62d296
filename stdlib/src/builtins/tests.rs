use expect_test::{Expect, expect};

use super::*;
use crate::ops::tests::{ty, val};

/// Type-checks built-in calls; each case is the function and its argument types.
fn check_types(cases: &[(Builtin, &[&str])], expected: Expect) {
    let mut out = String::new();
    for (f, args) in cases {
        let types: Vec<Type> = args.iter().map(|a| ty(a)).collect();
        let r = match f.check(&types) {
            Ok(t) => t.to_string(),
            Err(e) => format!("error: {e}"),
        };
        out.push_str(&format!("{} ({}) : {r}\n", f.name(), args.join(", ")));
    }
    expected.assert_eq(&out);
}

/// Evaluates built-in calls on literal arguments.
fn check_eval(cases: &[(Builtin, &[&str])], expected: Expect) {
    let mut out = String::new();
    for (f, args) in cases {
        let values: Vec<Value> = args.iter().map(|a| val(a)).collect();
        let r = match f.eval(&values) {
            Ok(v) => v.to_string(),
            Err(e) => format!("error: {e}"),
        };
        out.push_str(&format!("{} ({}) = {r}\n", f.name(), args.join(", ")));
    }
    expected.assert_eq(&out);
}

use Builtin::*;

#[test]
fn names_arities_signatures() {
    let mut out = String::new();
    for b in Builtin::ALL {
        assert_eq!(Builtin::from_name(b.name()), Some(*b));
        out.push_str(&format!(
            "{} / {} : {}\n",
            b.name(),
            b.arity(),
            b.signature()
        ));
    }
    assert_eq!(Builtin::from_name("nope"), None);
    expect![[r#"
        abs / 1 : abs (T) -> T, T one of int, long, float, double, bigint
        floor / 1 : floor (T) -> T, T a number (integers unchanged)
        ceil / 1 : ceil (T) -> T, T a number (integers unchanged)
        round / 1 : round (T) -> T, T a number (halves away from zero; integers unchanged)
        sin / 1 : sin (T) -> T, T one of float, double
        cos / 1 : cos (T) -> T, T one of float, double
        sqrt / 1 : sqrt (T) -> T, T one of float, double
        log / 1 : log (T) -> T, T one of float, double
        int / 1 : int (number) -> int
        long / 1 : long (number) -> long
        uint / 1 : uint (number) -> unsigned int
        ulong / 1 : ulong (number) -> unsigned long
        float / 1 : float (number) -> float
        double / 1 : double (number) -> double
        bigint / 1 : bigint (number) -> bigint
        bitset_count / 1 : bitset_count (bitset) -> unsigned long
        bitset_tohex / 1 : bitset_tohex (bitset) -> string
        bitset_fromhex / 1 : bitset_fromhex (string) -> bitset
        stack_empty / 1 : stack_empty (list) -> bool
        stack_top / 1 : stack_top (list<T>) -> T
        stack_pop / 1 : stack_pop (list<T>) -> list<T>
        stack_size / 1 : stack_size (list) -> unsigned long
        set_empty / 1 : set_empty (set) -> bool
        set_top / 1 : set_top (set<T>) -> T
        set_pop / 1 : set_pop (set<T>) -> set<T>
        set_size / 1 : set_size (set) -> unsigned long
        map_size / 1 : map_size (map) -> unsigned long
        map_empty / 1 : map_empty (map) -> bool
        min / 2 : min (T, T) -> T, T a number type
        max / 2 : max (T, T) -> T, T a number type
        bitset_insert / 2 : bitset_insert (bitset, unsigned long) -> bitset
        bitset_delete / 2 : bitset_delete (bitset, unsigned long) -> bitset
        bitset_is_element / 2 : bitset_is_element (bitset, unsigned long) -> bool
        bitset_or / 2 : bitset_or (bitset, bitset) -> bitset
        bitset_and / 2 : bitset_and (bitset, bitset) -> bitset
        bitset_xor / 2 : bitset_xor (bitset, bitset) -> bitset
        stack_push / 2 : stack_push (list<T>, T) -> list<T>
        stack_join / 2 : stack_join (list<T>, list<T>) -> list<T>
        set_insert / 2 : set_insert (set<T>, T) -> set<T>
        set_erase / 2 : set_erase (set<T>, T) -> set<T>
        set_is_element / 2 : set_is_element (set<T>, T) -> bool
        set_is_subset / 2 : set_is_subset (set<T>, set<T>) -> bool
        map_unassign / 2 : map_unassign (map<K, V>, K) -> map<K, V>
        map_is_assigned / 2 : map_is_assigned (map<K, V>, K) -> bool
        map_get_assignment / 2 : map_get_assignment (map<K, V>, K) -> V
        map_assign / 3 : map_assign (map<K, V>, K, V) -> map<K, V>
    "#]]
    .assert_eq(&out);
}

#[test]
fn every_builtin_has_type_and_eval_cases() {
    let src = include_str!("tests.rs");
    for b in Builtin::ALL {
        let pat = format!("({b:?}, &[");
        assert!(
            src.matches(&pat).count() >= 2,
            "{b:?} lacks type or eval cases"
        );
    }
}

#[test]
fn types_of_math() {
    check_types(
        &[
            (Abs, &["int"]),
            (Abs, &["long"]),
            (Abs, &["float"]),
            (Abs, &["double"]),
            (Abs, &["bigint"]),
            (Abs, &["any"]),
            (Abs, &["unsigned int"]),
            (Abs, &["unsigned long"]),
            (Abs, &["bool"]),
            (Abs, &["int", "int"]),
            (Abs, &[]),
            (Floor, &["double"]),
            (Floor, &["int"]),
            (Ceil, &["float"]),
            (Ceil, &["bigint"]),
            (Round, &["double"]),
            (Round, &["any"]),
            (Round, &["long"]),
            (Floor, &["unsigned int"]),
            (Ceil, &["unsigned long"]),
            (Round, &["bool"]),
            (Sin, &["double"]),
            (Sin, &["int"]),
            (Cos, &["float"]),
            (Cos, &["string"]),
            (Sqrt, &["double"]),
            (Sqrt, &["unsigned long"]),
            (Log, &["float"]),
            (Log, &["bigint"]),
            (Min, &["int", "int"]),
            (Min, &["double", "any"]),
            (Min, &["any", "any"]),
            (Min, &["int", "long"]),
            (Min, &["string", "string"]),
            (Min, &["int"]),
            (Max, &["unsigned long", "unsigned long"]),
            (Max, &["bigint", "bigint"]),
            (Max, &["char", "char"]),
            (Max, &["bool", "bool"]),
        ],
        expect![[r#"
            abs (int) : int
            abs (long) : long
            abs (float) : float
            abs (double) : double
            abs (bigint) : bigint
            abs (any) : any
            abs (unsigned int) : error: `abs` expects int, long, float, double or bigint, found `unsigned int`
            abs (unsigned long) : error: `abs` expects int, long, float, double or bigint, found `unsigned long`
            abs (bool) : error: `abs` expects int, long, float, double or bigint, found `bool`
            abs (int, int) : error: `abs` takes 1 argument, found 2
            abs () : error: `abs` takes 1 argument, found 0
            floor (double) : double
            floor (int) : int
            ceil (float) : float
            ceil (bigint) : bigint
            round (double) : double
            round (any) : any
            round (long) : long
            floor (unsigned int) : unsigned int
            ceil (unsigned long) : unsigned long
            round (bool) : error: `round` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
            sin (double) : double
            sin (int) : error: `sin` expects float or double, found `int`
            cos (float) : float
            cos (string) : error: `cos` expects float or double, found `string`
            sqrt (double) : double
            sqrt (unsigned long) : error: `sqrt` expects float or double, found `unsigned long`
            log (float) : float
            log (bigint) : error: `log` expects float or double, found `bigint`
            min (int, int) : int
            min (double, any) : double
            min (any, any) : any
            min (int, long) : error: arguments of `min` must have the same type, found `int` and `long`
            min (string, string) : error: `min` expects numbers, found `string`
            min (int) : error: `min` takes 2 arguments, found 1
            max (unsigned long, unsigned long) : unsigned long
            max (bigint, bigint) : bigint
            max (char, char) : error: `max` expects numbers, found `char`
            max (bool, bool) : error: `max` expects numbers, found `bool`
        "#]],
    );
}

#[test]
fn types_of_casts() {
    let casts = [ToInt, ToLong, ToUInt, ToULong, ToFloat, ToDouble, ToBigint];
    let args = [
        "int",
        "long",
        "unsigned int",
        "unsigned long",
        "float",
        "double",
        "bigint",
        "any",
        "bool",
        "char",
        "string",
    ];
    let cases: Vec<(Builtin, &[&str])> = casts
        .iter()
        .flat_map(|c| args.iter().map(move |a| (*c, std::slice::from_ref(a))))
        .collect();
    check_types(
        &cases,
        expect![[r#"
        int (int) : int
        int (long) : int
        int (unsigned int) : int
        int (unsigned long) : int
        int (float) : int
        int (double) : int
        int (bigint) : int
        int (any) : int
        int (bool) : error: `int` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
        int (char) : error: `int` expects int, long, unsigned int, unsigned long, float, double or bigint, found `char`
        int (string) : error: `int` expects int, long, unsigned int, unsigned long, float, double or bigint, found `string`
        long (int) : long
        long (long) : long
        long (unsigned int) : long
        long (unsigned long) : long
        long (float) : long
        long (double) : long
        long (bigint) : long
        long (any) : long
        long (bool) : error: `long` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
        long (char) : error: `long` expects int, long, unsigned int, unsigned long, float, double or bigint, found `char`
        long (string) : error: `long` expects int, long, unsigned int, unsigned long, float, double or bigint, found `string`
        uint (int) : unsigned int
        uint (long) : unsigned int
        uint (unsigned int) : unsigned int
        uint (unsigned long) : unsigned int
        uint (float) : unsigned int
        uint (double) : unsigned int
        uint (bigint) : unsigned int
        uint (any) : unsigned int
        uint (bool) : error: `uint` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
        uint (char) : error: `uint` expects int, long, unsigned int, unsigned long, float, double or bigint, found `char`
        uint (string) : error: `uint` expects int, long, unsigned int, unsigned long, float, double or bigint, found `string`
        ulong (int) : unsigned long
        ulong (long) : unsigned long
        ulong (unsigned int) : unsigned long
        ulong (unsigned long) : unsigned long
        ulong (float) : unsigned long
        ulong (double) : unsigned long
        ulong (bigint) : unsigned long
        ulong (any) : unsigned long
        ulong (bool) : error: `ulong` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
        ulong (char) : error: `ulong` expects int, long, unsigned int, unsigned long, float, double or bigint, found `char`
        ulong (string) : error: `ulong` expects int, long, unsigned int, unsigned long, float, double or bigint, found `string`
        float (int) : float
        float (long) : float
        float (unsigned int) : float
        float (unsigned long) : float
        float (float) : float
        float (double) : float
        float (bigint) : float
        float (any) : float
        float (bool) : error: `float` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
        float (char) : error: `float` expects int, long, unsigned int, unsigned long, float, double or bigint, found `char`
        float (string) : error: `float` expects int, long, unsigned int, unsigned long, float, double or bigint, found `string`
        double (int) : double
        double (long) : double
        double (unsigned int) : double
        double (unsigned long) : double
        double (float) : double
        double (double) : double
        double (bigint) : double
        double (any) : double
        double (bool) : error: `double` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
        double (char) : error: `double` expects int, long, unsigned int, unsigned long, float, double or bigint, found `char`
        double (string) : error: `double` expects int, long, unsigned int, unsigned long, float, double or bigint, found `string`
        bigint (int) : bigint
        bigint (long) : bigint
        bigint (unsigned int) : bigint
        bigint (unsigned long) : bigint
        bigint (float) : bigint
        bigint (double) : bigint
        bigint (bigint) : bigint
        bigint (any) : bigint
        bigint (bool) : error: `bigint` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
        bigint (char) : error: `bigint` expects int, long, unsigned int, unsigned long, float, double or bigint, found `char`
        bigint (string) : error: `bigint` expects int, long, unsigned int, unsigned long, float, double or bigint, found `string`
    "#]],
    );
}

#[test]
fn types_of_bitset_functions() {
    check_types(
        &[
            (BitsetCount, &["bitset"]),
            (BitsetCount, &["any"]),
            (BitsetCount, &["int"]),
            (BitsetToHex, &["bitset"]),
            (BitsetToHex, &["string"]),
            (BitsetFromHex, &["string"]),
            (BitsetFromHex, &["bitset"]),
            (BitsetInsert, &["bitset", "unsigned long"]),
            (BitsetInsert, &["bitset", "int"]),
            (BitsetInsert, &["any", "any"]),
            (BitsetInsert, &["bitset"]),
            (BitsetDelete, &["bitset", "unsigned long"]),
            (BitsetDelete, &["list", "unsigned long"]),
            (BitsetIsElement, &["bitset", "unsigned long"]),
            (BitsetIsElement, &["bitset", "long"]),
            (BitsetOr, &["bitset", "bitset"]),
            (BitsetOr, &["bitset", "unsigned long"]),
            (BitsetAnd, &["bitset", "any"]),
            (BitsetXor, &["bitset", "bitset"]),
            (BitsetXor, &["int", "int"]),
        ],
        expect![[r#"
            bitset_count (bitset) : unsigned long
            bitset_count (any) : unsigned long
            bitset_count (int) : error: `bitset_count` expects `bitset` as argument 1, found `int`
            bitset_tohex (bitset) : string
            bitset_tohex (string) : error: `bitset_tohex` expects `bitset` as argument 1, found `string`
            bitset_fromhex (string) : bitset
            bitset_fromhex (bitset) : error: `bitset_fromhex` expects `string` as argument 1, found `bitset`
            bitset_insert (bitset, unsigned long) : bitset
            bitset_insert (bitset, int) : error: `bitset_insert` expects `unsigned long` as argument 2, found `int`
            bitset_insert (any, any) : bitset
            bitset_insert (bitset) : error: `bitset_insert` takes 2 arguments, found 1
            bitset_delete (bitset, unsigned long) : bitset
            bitset_delete (list, unsigned long) : error: `bitset_delete` expects `bitset` as argument 1, found `list`
            bitset_is_element (bitset, unsigned long) : bool
            bitset_is_element (bitset, long) : error: `bitset_is_element` expects `unsigned long` as argument 2, found `long`
            bitset_or (bitset, bitset) : bitset
            bitset_or (bitset, unsigned long) : error: `bitset_or` expects `bitset` as argument 2, found `unsigned long`
            bitset_and (bitset, any) : bitset
            bitset_xor (bitset, bitset) : bitset
            bitset_xor (int, int) : error: `bitset_xor` expects `bitset` as argument 1, found `int`
        "#]],
    );
}

#[test]
fn types_of_stack_functions() {
    check_types(
        &[
            (StackEmpty, &["list"]),
            (StackEmpty, &["list<long>"]),
            (StackEmpty, &["any"]),
            (StackEmpty, &["set"]),
            (StackTop, &["list<long>"]),
            (StackTop, &["list"]),
            (StackTop, &["any"]),
            (StackTop, &["int"]),
            (StackPop, &["list<string>"]),
            (StackPop, &["list"]),
            (StackPop, &["map"]),
            (StackSize, &["list"]),
            (StackSize, &["bitset"]),
            (StackPush, &["list<long>", "long"]),
            (StackPush, &["list<long>", "int"]),
            (StackPush, &["list", "long"]),
            (StackPush, &["list<long>", "any"]),
            (StackPush, &["list<list>", "list<int>"]),
            (StackPush, &["any", "int"]),
            (StackPush, &["int", "int"]),
            (StackJoin, &["list<int>", "list<int>"]),
            (StackJoin, &["list<int>", "list"]),
            (StackJoin, &["list<int>", "list<long>"]),
            (StackJoin, &["list", "set"]),
        ],
        expect![[r#"
            stack_empty (list) : bool
            stack_empty (list<long>) : bool
            stack_empty (any) : bool
            stack_empty (set) : error: `stack_empty` expects `list` as argument 1, found `set`
            stack_top (list<long>) : long
            stack_top (list) : any
            stack_top (any) : any
            stack_top (int) : error: `stack_top` expects `list` as argument 1, found `int`
            stack_pop (list<string>) : list<string>
            stack_pop (list) : list
            stack_pop (map) : error: `stack_pop` expects `list` as argument 1, found `map`
            stack_size (list) : unsigned long
            stack_size (bitset) : error: `stack_size` expects `list` as argument 1, found `bitset`
            stack_push (list<long>, long) : list<long>
            stack_push (list<long>, int) : list
            stack_push (list, long) : list
            stack_push (list<long>, any) : list
            stack_push (list<list>, list<int>) : list<list>
            stack_push (any, int) : list
            stack_push (int, int) : error: `stack_push` expects `list` as argument 1, found `int`
            stack_join (list<int>, list<int>) : list<int>
            stack_join (list<int>, list) : list
            stack_join (list<int>, list<long>) : list
            stack_join (list, set) : error: `stack_join` expects `list` as argument 2, found `set`
        "#]],
    );
}

#[test]
fn types_of_set_functions() {
    check_types(
        &[
            (SetEmpty, &["set"]),
            (SetEmpty, &["list"]),
            (SetTop, &["set<int>"]),
            (SetTop, &["set"]),
            (SetTop, &["map"]),
            (SetPop, &["set<int>"]),
            (SetPop, &["any"]),
            (SetPop, &["string"]),
            (SetSize, &["set<string>"]),
            (SetSize, &["list"]),
            (SetInsert, &["set<int>", "int"]),
            (SetInsert, &["set<int>", "long"]),
            (SetInsert, &["set", "long"]),
            (SetInsert, &["list<int>", "int"]),
            (SetErase, &["set<int>", "int"]),
            (SetErase, &["set<int>", "string"]),
            (SetIsElement, &["set<int>", "int"]),
            (SetIsElement, &["set<int>", "bool"]),
            (SetIsElement, &["set", "bool"]),
            (SetIsSubset, &["set<int>", "set<int>"]),
            (SetIsSubset, &["set<int>", "set"]),
            (SetIsSubset, &["set<int>", "set<long>"]),
            (SetIsSubset, &["set<int>", "list<int>"]),
        ],
        expect![[r#"
            set_empty (set) : bool
            set_empty (list) : error: `set_empty` expects `set` as argument 1, found `list`
            set_top (set<int>) : int
            set_top (set) : any
            set_top (map) : error: `set_top` expects `set` as argument 1, found `map`
            set_pop (set<int>) : set<int>
            set_pop (any) : set
            set_pop (string) : error: `set_pop` expects `set` as argument 1, found `string`
            set_size (set<string>) : unsigned long
            set_size (list) : error: `set_size` expects `set` as argument 1, found `list`
            set_insert (set<int>, int) : set<int>
            set_insert (set<int>, long) : set
            set_insert (set, long) : set
            set_insert (list<int>, int) : error: `set_insert` expects `set` as argument 1, found `list<int>`
            set_erase (set<int>, int) : set<int>
            set_erase (set<int>, string) : error: `set_erase` expects an element of type `int` as argument 2, found `string`
            set_is_element (set<int>, int) : bool
            set_is_element (set<int>, bool) : error: `set_is_element` expects an element of type `int` as argument 2, found `bool`
            set_is_element (set, bool) : bool
            set_is_subset (set<int>, set<int>) : bool
            set_is_subset (set<int>, set) : bool
            set_is_subset (set<int>, set<long>) : error: `set_is_subset` expects sets of the same type, found `set<int>` and `set<long>`
            set_is_subset (set<int>, list<int>) : error: `set_is_subset` expects `set` as argument 2, found `list<int>`
        "#]],
    );
}

#[test]
fn types_of_map_functions() {
    check_types(
        &[
            (MapSize, &["map"]),
            (MapSize, &["map<int, string>"]),
            (MapSize, &["set"]),
            (MapEmpty, &["map<int, string>"]),
            (MapEmpty, &["list"]),
            (MapUnassign, &["map<int, string>", "int"]),
            (MapUnassign, &["map<int, string>", "string"]),
            (MapIsAssigned, &["map<int, string>", "int"]),
            (MapIsAssigned, &["map", "bitset"]),
            (MapIsAssigned, &["map<int, string>", "long"]),
            (MapGetAssignment, &["map<int, string>", "int"]),
            (MapGetAssignment, &["map", "int"]),
            (MapGetAssignment, &["map<int, any>", "any"]),
            (MapGetAssignment, &["map<int, string>", "long"]),
            (MapAssign, &["map<int, string>", "int", "string"]),
            (MapAssign, &["map", "int", "string"]),
            (MapAssign, &["map<int, string>", "int", "long"]),
            (MapAssign, &["map<int, string>", "long", "string"]),
            (MapAssign, &["map<int, string>", "int"]),
            (MapAssign, &["set", "int", "int"]),
        ],
        expect![[r#"
            map_size (map) : unsigned long
            map_size (map<int, string>) : unsigned long
            map_size (set) : error: `map_size` expects `map` as argument 1, found `set`
            map_empty (map<int, string>) : bool
            map_empty (list) : error: `map_empty` expects `map` as argument 1, found `list`
            map_unassign (map<int, string>, int) : map<int, string>
            map_unassign (map<int, string>, string) : error: `map_unassign` expects an element of type `int` as argument 2, found `string`
            map_is_assigned (map<int, string>, int) : bool
            map_is_assigned (map, bitset) : bool
            map_is_assigned (map<int, string>, long) : error: `map_is_assigned` expects an element of type `int` as argument 2, found `long`
            map_get_assignment (map<int, string>, int) : string
            map_get_assignment (map, int) : any
            map_get_assignment (map<int, any>, any) : any
            map_get_assignment (map<int, string>, long) : error: `map_get_assignment` expects an element of type `int` as argument 2, found `long`
            map_assign (map<int, string>, int, string) : map<int, string>
            map_assign (map, int, string) : map
            map_assign (map<int, string>, int, long) : map<int, any>
            map_assign (map<int, string>, long, string) : map<any, string>
            map_assign (map<int, string>, int) : error: `map_assign` takes 3 arguments, found 2
            map_assign (set, int, int) : error: `map_assign` expects `map` as argument 1, found `set`
        "#]],
    );
}

#[test]
fn eval_math() {
    check_eval(
        &[
            (Abs, &["-3"]),
            (Abs, &["3"]),
            (Abs, &["0"]),
            (Abs, &["-2147483648"]),
            (Abs, &["-9223372036854775808L"]),
            (Abs, &["-1.5"]),
            (Abs, &["-0.0"]),
            (Abs, &["-1.5f"]),
            (Abs, &["-100000000000000000000A"]),
            (Abs, &["1U"]),
            (Floor, &["1.5"]),
            (Floor, &["-1.5"]),
            (Floor, &["1.5f"]),
            (Ceil, &["1.5"]),
            (Ceil, &["-1.5f"]),
            (Round, &["0.5"]),
            (Round, &["1.5"]),
            (Round, &["2.5"]),
            (Round, &["-0.5"]),
            (Round, &["-2.5f"]),
            (Round, &["0.49999999999999994"]),
            (Round, &["1"]),
            (Floor, &["-7L"]),
            (Ceil, &["4294967295U"]),
            (Round, &["18446744073709551615UL"]),
            (Floor, &["-100000000000000000000A"]),
            (Sin, &["0.0"]),
            (Sin, &["1.5707963267948966"]),
            (Cos, &["0.0f"]),
            (Sqrt, &["4.0"]),
            (Sqrt, &["2.0f"]),
            (Sqrt, &["0.0"]),
            (Sqrt, &["-0.0"]),
            (Sqrt, &["-1.0"]),
            (Sqrt, &["-1e-300"]),
            (Sqrt, &["-1.0f"]),
            (Log, &["1.0"]),
            (Log, &["2.718281828459045"]),
            (Log, &["0.0"]),
            (Log, &["-1.0"]),
            (Log, &["0.0f"]),
            (Log, &["1.0f"]),
            (Sin, &["1"]),
            (Min, &["1", "2"]),
            (Min, &["2", "1"]),
            (Min, &["-1L", "1L"]),
            (Min, &["1U", "0U"]),
            (Min, &["1UL", "2UL"]),
            (Min, &["1.5", "-1.5"]),
            (Min, &["0.0", "-0.0"]),
            (Min, &["1.5f", "2.5f"]),
            (Min, &["10A", "-10A"]),
            (Min, &["\"b\"", "\"a\""]),
            (Max, &["'a'", "'z'"]),
            (Min, &["1", "1L"]),
            (Sin, &["3"]),
            (Sqrt, &["4U"]),
            (Sqrt, &["-4"]),
            (Log, &["2UL"]),
            (Log, &["0A"]),
            (Max, &["1", "2"]),
            (Max, &["-2147483648", "2147483647"]),
            (Max, &["18446744073709551615UL", "0UL"]),
            (Max, &["1.5", "2.5"]),
            (Max, &["1A", "2A"]),
            (Min, &["1", "1L"]),
            (Min, &["\"a\"", "\"b\""]),
            (Max, &["true", "false"]),
            (Min, &["1"]),
        ],
        expect![[r#"
            abs (-3) = 3
            abs (3) = 3
            abs (0) = 0
            abs (-2147483648) = -2147483648
            abs (-9223372036854775808L) = -9223372036854775808L
            abs (-1.5) = 1.5
            abs (-0.0) = 0.0
            abs (-1.5f) = 1.5f
            abs (-100000000000000000000A) = 100000000000000000000A
            abs (1U) = error: type error: `abs` cannot be applied to unsigned int
            floor (1.5) = 1.0
            floor (-1.5) = -2.0
            floor (1.5f) = 1.0f
            ceil (1.5) = 2.0
            ceil (-1.5f) = -1.0f
            round (0.5) = 1.0
            round (1.5) = 2.0
            round (2.5) = 3.0
            round (-0.5) = -1.0
            round (-2.5f) = -3.0f
            round (0.49999999999999994) = 0.0
            round (1) = 1
            floor (-7L) = -7L
            ceil (4294967295U) = 4294967295U
            round (18446744073709551615UL) = 18446744073709551615UL
            floor (-100000000000000000000A) = -100000000000000000000A
            sin (0.0) = 0.0
            sin (1.5707963267948966) = 1.0
            cos (0.0f) = 1.0f
            sqrt (4.0) = 2.0
            sqrt (2.0f) = 1.4142135f
            sqrt (0.0) = 0.0
            sqrt (-0.0) = -0.0
            sqrt (-1.0) = error: sqrt of a negative number
            sqrt (-1e-300) = error: sqrt of a negative number
            sqrt (-1.0f) = error: sqrt of a negative number
            log (1.0) = 0.0
            log (2.718281828459045) = 1.0
            log (0.0) = error: log of a non-positive number
            log (-1.0) = error: log of a non-positive number
            log (0.0f) = error: log of a non-positive number
            log (1.0f) = 0.0f
            sin (1) = 0.8414709848078965
            min (1, 2) = 1
            min (2, 1) = 1
            min (-1L, 1L) = -1L
            min (1U, 0U) = 0U
            min (1UL, 2UL) = 1UL
            min (1.5, -1.5) = -1.5
            min (0.0, -0.0) = 0.0
            min (1.5f, 2.5f) = 1.5f
            min (10A, -10A) = -10A
            min ("b", "a") = "a"
            max ('a', 'z') = 'z'
            min (1, 1L) = error: type error: `min` cannot be applied to int and long
            sin (3) = 0.1411200080598672
            sqrt (4U) = 2.0
            sqrt (-4) = error: sqrt of a negative number
            log (2UL) = 0.6931471805599453
            log (0A) = error: log of a non-positive number
            max (1, 2) = 2
            max (-2147483648, 2147483647) = 2147483647
            max (18446744073709551615UL, 0UL) = 18446744073709551615UL
            max (1.5, 2.5) = 2.5
            max (1A, 2A) = 2A
            min (1, 1L) = error: type error: `min` cannot be applied to int and long
            min ("a", "b") = "a"
            max (true, false) = true
            min (1) = error: type error: `min` takes 2 arguments, found 1
        "#]],
    );
}

#[test]
fn eval_math_with_nan_and_infinity() {
    let nan = Value::Double(f64::NAN);
    let one = Value::Double(1.0);
    assert!(
        matches!(Builtin::Sqrt.eval(std::slice::from_ref(&nan)), Ok(Value::Double(x)) if x.is_nan())
    );
    assert!(
        matches!(Builtin::Log.eval(std::slice::from_ref(&nan)), Ok(Value::Double(x)) if x.is_nan())
    );
    assert!(
        matches!(Builtin::Min.eval(&[nan.clone(), one.clone()]), Ok(Value::Double(x)) if x.is_nan())
    );
    assert_eq!(
        Builtin::Min.eval(&[one.clone(), nan.clone()]),
        Ok(one.clone())
    );
    assert_eq!(
        Builtin::Max.eval(&[one.clone(), nan.clone()]),
        Ok(one.clone())
    );
    assert_eq!(
        Builtin::Log.eval(&[Value::Double(f64::INFINITY)]),
        Ok(Value::Double(f64::INFINITY))
    );
    assert_eq!(
        Builtin::Abs.eval(&[Value::Float(f32::NEG_INFINITY)]),
        Ok(Value::Float(f32::INFINITY))
    );
}

#[test]
fn eval_casts() {
    check_eval(
        &[
            (ToInt, &["3L"]),
            (ToInt, &["2147483648L"]),
            (ToInt, &["-2147483648L"]),
            (ToInt, &["4294967295U"]),
            (ToInt, &["2147483647U"]),
            (ToInt, &["3.9"]),
            (ToInt, &["-3.9"]),
            (ToInt, &["2147483647.5"]),
            (ToInt, &["2147483648.0"]),
            (ToInt, &["-2147483648.9"]),
            (ToInt, &["1e300"]),
            (ToInt, &["12A"]),
            (ToInt, &["100000000000000000000000000000000000000000A"]),
            (ToInt, &["1.5f"]),
            (ToInt, &["true"]),
            (ToInt, &["'a'"]),
            (ToLong, &["-1"]),
            (ToLong, &["18446744073709551615UL"]),
            (ToLong, &["9223372036854775807UL"]),
            (ToLong, &["-9223372036854775808A"]),
            (ToLong, &["9.2e18"]),
            (ToLong, &["9.3e18"]),
            (ToInt, &["4127196168U"]),
            (ToLong, &["9234292475781033193UL"]),
            (ToInt, &["-2147483649L"]),
            (ToInt, &["-1UL"]),
            (ToInt, &["4294967295A"]),
            (ToInt, &["-4294967297A"]),
            (ToInt, &["340282366920938463463374607431768211461A"]),
            (ToInt, &["-340282366920938463463374607431768211461A"]),
            (ToInt, &["4083388403051261561560495289185345733640A"]),
            (ToInt, &["-4083388403051261561560495289185345733640A"]),
            (ToLong, &["18446744073709551617A"]),
            (ToLong, &["-18446744073709551617A"]),
            (ToUInt, &["-340282366920938463463374607431768211461A"]),
            (ToULong, &["-340282366920938463463374607431768211461A"]),
            (ToULong, &["340282366920938463463374607431768211455A"]),
            (ToULong, &["-1A"]),
            (ToULong, &["-9223372036854775808L"]),
            (ToUInt, &["4294967296.0"]),
            (ToULong, &["-1.0"]),
            (ToUInt, &["-1"]),
            (ToUInt, &["0"]),
            (ToUInt, &["4294967295L"]),
            (ToUInt, &["4294967296L"]),
            (ToUInt, &["-0.5"]),
            (ToUInt, &["\"1\""]),
            (ToULong, &["-1L"]),
            (ToULong, &["9223372036854775807L"]),
            (ToULong, &["18446744073709551615A"]),
            (ToULong, &["18446744073709551616A"]),
            (ToULong, &["1e19"]),
            (ToFloat, &["1"]),
            (ToFloat, &["16777217"]),
            (ToFloat, &["1.5"]),
            (ToFloat, &["1e300"]),
            (ToFloat, &["1e-300"]),
            (ToFloat, &["123456789012345678901234567890A"]),
            (ToFloat, &["18446744073709551615UL"]),
            (ToDouble, &["1.5f"]),
            (ToDouble, &["-7"]),
            (ToDouble, &["9007199254740993L"]),
            (ToDouble, &["3A"]),
            (ToDouble, &["1.0"]),
            (ToBigint, &["-1"]),
            (ToBigint, &["18446744073709551615UL"]),
            (ToBigint, &["1e20"]),
            (ToBigint, &["-2.5f"]),
            (ToBigint, &["[]"]),
        ],
        expect![[r#"
            int (3L) = 3
            int (2147483648L) = -2147483648
            int (-2147483648L) = -2147483648
            int (4294967295U) = -1
            int (2147483647U) = 2147483647
            int (3.9) = 3
            int (-3.9) = -3
            int (2147483647.5) = 2147483647
            int (2147483648.0) = error: value out of range: int(2147483648.0)
            int (-2147483648.9) = -2147483648
            int (1e300) = error: value out of range: int(1e300)
            int (12A) = 12
            int (100000000000000000000000000000000000000000A) = 0
            int (1.5f) = 1
            int (true) = 1
            int ('a') = error: type error: `int` cannot be applied to char
            long (-1) = -1L
            long (18446744073709551615UL) = -1L
            long (9223372036854775807UL) = 9223372036854775807L
            long (-9223372036854775808A) = -9223372036854775808L
            long (9.2e18) = 9200000000000000000L
            long (9.3e18) = error: value out of range: long(9.3e18)
            int (4127196168U) = -167771128
            long (9234292475781033193UL) = -9212451597928518423L
            int (-2147483649L) = 2147483647
            int (-1UL) = -1
            int (4294967295A) = -1
            int (-4294967297A) = -1
            int (340282366920938463463374607431768211461A) = 5
            int (-340282366920938463463374607431768211461A) = -5
            int (4083388403051261561560495289185345733640A) = -167771128
            int (-4083388403051261561560495289185345733640A) = 167771128
            long (18446744073709551617A) = 1L
            long (-18446744073709551617A) = -1L
            uint (-340282366920938463463374607431768211461A) = 4294967291U
            ulong (-340282366920938463463374607431768211461A) = 18446744073709551611UL
            ulong (340282366920938463463374607431768211455A) = 18446744073709551615UL
            ulong (-1A) = 18446744073709551615UL
            ulong (-9223372036854775808L) = 9223372036854775808UL
            uint (4294967296.0) = error: value out of range: uint(4294967296.0)
            ulong (-1.0) = error: value out of range: ulong(-1.0)
            uint (-1) = 4294967295U
            uint (0) = 0U
            uint (4294967295L) = 4294967295U
            uint (4294967296L) = 0U
            uint (-0.5) = 0U
            uint ("1") = error: type error: `uint` cannot be applied to string
            ulong (-1L) = 18446744073709551615UL
            ulong (9223372036854775807L) = 9223372036854775807UL
            ulong (18446744073709551615A) = 18446744073709551615UL
            ulong (18446744073709551616A) = 0UL
            ulong (1e19) = 10000000000000000000UL
            float (1) = 1.0f
            float (16777217) = 16777216.0f
            float (1.5) = 1.5f
            float (1e300) = error: value out of range: float(1e300)
            float (1e-300) = 0.0f
            float (123456789012345678901234567890A) = 1.2345679e29f
            float (18446744073709551615UL) = 1.8446744e19f
            double (1.5f) = 1.5
            double (-7) = -7.0
            double (9007199254740993L) = 9007199254740992.0
            double (3A) = 3.0
            double (1.0) = 1.0
            bigint (-1) = -1A
            bigint (18446744073709551615UL) = 18446744073709551615A
            bigint (1e20) = 100000000000000000000A
            bigint (-2.5f) = -2A
            bigint ([]) = error: type error: `bigint` cannot be applied to control
        "#]],
    );
}

#[test]
fn eval_casts_of_nan_and_infinity() {
    for to in [ToInt, ToLong, ToUInt, ToULong, ToBigint] {
        for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(
                matches!(to.eval(&[Value::Double(x)]), Err(EvalError::OutOfRange(_))),
                "{to:?} {x}"
            );
        }
    }
    assert!(matches!(ToFloat.eval(&[Value::Double(f64::NAN)]), Ok(Value::Float(x)) if x.is_nan()));
    assert_eq!(
        ToDouble.eval(&[Value::Float(f32::INFINITY)]),
        Ok(Value::Double(f64::INFINITY))
    );
}

#[test]
fn eval_bitset_functions() {
    check_eval(
        &[
            (BitsetInsert, &["{}", "0UL"]),
            (BitsetInsert, &["{}", "12UL"]),
            (BitsetInsert, &["{}", "64UL"]),
            (BitsetInsert, &["{ 1}", "63UL"]),
            (BitsetInsert, &["{ 1}", "0UL"]),
            (BitsetInsert, &["{}", "268435456UL"]),
            (BitsetInsert, &["{}", "18446744073709551615UL"]),
            (BitsetInsert, &["{}", "4294967295UL"]),
            (BitsetInsert, &["{ 1 @4194303 0}", "4194367UL"]),
            (BitsetInsert, &["{}", "1"]),
            (BitsetDelete, &["{ 4097}", "12UL"]),
            (BitsetDelete, &["{ 1}", "100UL"]),
            (BitsetDelete, &["{ 1}", "18446744073709551615UL"]),
            (
                BitsetDelete,
                &[
                    "{ 1 @288230376151711743 9223372036854775808}",
                    "18446744073709551615UL",
                ],
            ),
            (BitsetIsElement, &["{ 4096}", "12UL"]),
            (BitsetIsElement, &["{ 4096}", "11UL"]),
            (BitsetIsElement, &["{ 0 1}", "64UL"]),
            (BitsetIsElement, &["{}", "18446744073709551615UL"]),
            (
                BitsetIsElement,
                &[
                    "{ @288230376151711743 9223372036854775808}",
                    "18446744073709551615UL",
                ],
            ),
            (BitsetCount, &["{}"]),
            (BitsetCount, &["{ 3 18446744073709551615}"]),
            (BitsetToHex, &["{}"]),
            (BitsetToHex, &["{ 4096}"]),
            (BitsetToHex, &["{ 1 18446744073709551615}"]),
            (
                BitsetToHex,
                &["{ 1 @288230376151711743 9223372036854775808}"],
            ),
            (BitsetToHex, &["{ 1 @70000 0}"]),
            (BitsetFromHex, &["\"0x/\""]),
            (BitsetFromHex, &["\"0x/0000000000001000/\""]),
            (BitsetFromHex, &["\"0x/1/FFFFFFFFFFFFFFFF/\""]),
            (BitsetFromHex, &["\"0x/1\""]),
            (BitsetFromHex, &["\"0x\""]),
            (BitsetFromHex, &["\"0x/0000000000000001\""]),
            (BitsetFromHex, &["\"0x/1/2\""]),
            (BitsetFromHex, &["\"0x/1//\""]),
            (BitsetFromHex, &["\"0x1/\""]),
            (BitsetFromHex, &["\"0x//\""]),
            (BitsetFromHex, &["\"0x/12345678901234567/\""]),
            (BitsetFromHex, &["\"0x/g/\""]),
            (BitsetFromHex, &["\"1/\""]),
            (BitsetFromHex, &["\"\""]),
            (
                BitsetFromHex,
                &["\"0x/1/@3ffffffffffffff/8000000000000000/\""],
            ),
            (BitsetFromHex, &["\"0x/@2/1\""]),
            (BitsetFromHex, &["\"0x/1/@0/2/\""]),
            (BitsetFromHex, &["\"0x/@400000000000000/1/\""]),
            (BitsetFromHex, &["\"0x/@/\""]),
            (BitsetOr, &["{ 1}", "{ 2 4}"]),
            (BitsetOr, &["{}", "{}"]),
            (BitsetOr, &["{ 1}", "{ @288230376151711743 1}"]),
            (BitsetXor, &["{ 1 @70000 3}", "{ 1 @70000 1}"]),
            (BitsetAnd, &["{ 1 @70000 3}", "{ 1 @70000 1}"]),
            (BitsetAnd, &["{ 3 4}", "{ 1}"]),
            (BitsetAnd, &["{ 3}", "{ 5 4}"]),
            (BitsetXor, &["{ 3}", "{ 5 4}"]),
            (BitsetXor, &["{ 3}", "1"]),
        ],
        expect![[r#"
            bitset_insert ({}, 0UL) = { 1}
            bitset_insert ({}, 12UL) = { 4096}
            bitset_insert ({}, 64UL) = { 0 1}
            bitset_insert ({ 1}, 63UL) = { 9223372036854775809}
            bitset_insert ({ 1}, 0UL) = { 1}
            bitset_insert ({}, 268435456UL) = { @4194304 1}
            bitset_insert ({}, 18446744073709551615UL) = { @288230376151711743 9223372036854775808}
            bitset_insert ({}, 4294967295UL) = { @67108863 9223372036854775808}
            bitset_insert ({ 1 @4194303 0}, 4194367UL) = { 1 @65536 9223372036854775808 @4194303 0}
            bitset_insert ({}, 1) = error: type error: `bitset_insert` cannot be applied to bitset and int
            bitset_delete ({ 4097}, 12UL) = { 1}
            bitset_delete ({ 1}, 100UL) = { 1}
            bitset_delete ({ 1}, 18446744073709551615UL) = { 1}
            bitset_delete ({ 1 @288230376151711743 9223372036854775808}, 18446744073709551615UL) = { 1 @288230376151711743 0}
            bitset_is_element ({ 4096}, 12UL) = true
            bitset_is_element ({ 4096}, 11UL) = false
            bitset_is_element ({ 0 1}, 64UL) = true
            bitset_is_element ({}, 18446744073709551615UL) = false
            bitset_is_element ({ @288230376151711743 9223372036854775808}, 18446744073709551615UL) = true
            bitset_count ({}) = 0UL
            bitset_count ({ 3 18446744073709551615}) = 66UL
            bitset_tohex ({}) = "0x/"
            bitset_tohex ({ 4096}) = "0x/0000000000001000/"
            bitset_tohex ({ 1 18446744073709551615}) = "0x/0000000000000001/ffffffffffffffff/"
            bitset_tohex ({ 1 @288230376151711743 9223372036854775808}) = "0x/0000000000000001/@3ffffffffffffff/8000000000000000/"
            bitset_tohex ({ 1 @70000 0}) = "0x/0000000000000001/@11170/0000000000000000/"
            bitset_fromhex ("0x/") = {}
            bitset_fromhex ("0x/0000000000001000/") = { 4096}
            bitset_fromhex ("0x/1/FFFFFFFFFFFFFFFF/") = { 1 18446744073709551615}
            bitset_fromhex ("0x/1") = { 1}
            bitset_fromhex ("0x") = {}
            bitset_fromhex ("0x/0000000000000001") = { 1}
            bitset_fromhex ("0x/1/2") = { 1 2}
            bitset_fromhex ("0x/1//") = error: bitset_fromhex: malformed input "0x/1//"
            bitset_fromhex ("0x1/") = error: bitset_fromhex: malformed input "0x1/"
            bitset_fromhex ("0x//") = error: bitset_fromhex: malformed input "0x//"
            bitset_fromhex ("0x/12345678901234567/") = error: bitset_fromhex: malformed input "0x/12345678901234567/"
            bitset_fromhex ("0x/g/") = error: bitset_fromhex: malformed input "0x/g/"
            bitset_fromhex ("1/") = error: bitset_fromhex: malformed input "1/"
            bitset_fromhex ("") = error: bitset_fromhex: malformed input ""
            bitset_fromhex ("0x/1/@3ffffffffffffff/8000000000000000/") = { 1 @288230376151711743 9223372036854775808}
            bitset_fromhex ("0x/@2/1") = { 0 0 1}
            bitset_fromhex ("0x/1/@0/2/") = error: bitset_fromhex: `@0` goes back (word 0 is already given)
            bitset_fromhex ("0x/@400000000000000/1/") = error: bitset_fromhex: a bitset has at most 288230376151711744 words (elements up to 18446744073709551615)
            bitset_fromhex ("0x/@/") = error: bitset_fromhex: malformed input "0x/@/"
            bitset_or ({ 1}, { 2 4}) = { 3 4}
            bitset_or ({}, {}) = {}
            bitset_or ({ 1}, { @288230376151711743 1}) = { 1 @288230376151711743 1}
            bitset_xor ({ 1 @70000 3}, { 1 @70000 1}) = { @70000 2}
            bitset_and ({ 1 @70000 3}, { 1 @70000 1}) = { 1 @70000 1}
            bitset_and ({ 3 4}, { 1}) = { 1}
            bitset_and ({ 3}, { 5 4}) = { 1}
            bitset_xor ({ 3}, { 5 4}) = { 6 4}
            bitset_xor ({ 3}, 1) = error: type error: `bitset_xor` cannot be applied to bitset and int
        "#]],
    );
}

#[test]
fn bitset_hex_round_trips() {
    for words in [
        vec![],
        vec![0],
        vec![1, 2, u64::MAX],
        vec![0x1234_5678_9abc_def0],
    ] {
        let b = Value::Bitset(Bitset::from_words(words));
        let hex = BitsetToHex.eval(std::slice::from_ref(&b)).unwrap();
        let back = BitsetFromHex.eval(&[hex]).unwrap();
        assert_eq!(back.to_string(), b.to_string());
    }
}

#[test]
fn eval_stack_functions() {
    check_eval(
        &[
            (StackEmpty, &["List ()"]),
            (StackEmpty, &["List (1)"]),
            (StackTop, &["List (1, 2, 3)"]),
            (StackTop, &["List ()"]),
            (StackPop, &["List (1, 2, 3)"]),
            (StackPop, &["List (1)"]),
            (StackPop, &["List ()"]),
            (StackSize, &["List ()"]),
            (StackSize, &["List (1, \"a\", [])"]),
            (StackPush, &["List ()", "1"]),
            (StackPush, &["List (1)", "2L"]),
            (StackJoin, &["List (1, 2)", "List (3)"]),
            (StackJoin, &["List ()", "List ()"]),
            (StackTop, &["Set {1}"]),
            (StackPush, &["1", "1"]),
        ],
        expect![[r#"
            stack_empty (List ()) = true
            stack_empty (List (1)) = false
            stack_top (List (1, 2, 3)) = 3
            stack_top (List ()) = error: stack_top of an empty container
            stack_pop (List (1, 2, 3)) = List (1, 2)
            stack_pop (List (1)) = List ()
            stack_pop (List ()) = error: stack_pop of an empty container
            stack_size (List ()) = 0UL
            stack_size (List (1, "a", [])) = 3UL
            stack_push (List (), 1) = List (1)
            stack_push (List (1), 2L) = List (1, 2L)
            stack_join (List (1, 2), List (3)) = List (1, 2, 3)
            stack_join (List (), List ()) = List ()
            stack_top (Set {1}) = error: type error: `stack_top` cannot be applied to set
            stack_push (1, 1) = error: type error: `stack_push` cannot be applied to int and int
        "#]],
    );
}

#[test]
fn eval_set_functions() {
    check_eval(
        &[
            (SetEmpty, &["Set {}"]),
            (SetEmpty, &["Set {1}"]),
            (SetTop, &["Set {3, 1, 2}"]),
            (SetTop, &["Set {1L, 2}"]),
            (SetTop, &["Set {}"]),
            (SetPop, &["Set {3, 1, 2}"]),
            (SetPop, &["Set {}"]),
            (SetSize, &["Set {}"]),
            (SetSize, &["Set {1, 1L, 1U}"]),
            (SetInsert, &["Set {1}", "0"]),
            (SetInsert, &["Set {1}", "1"]),
            (SetErase, &["Set {1, 2}", "1"]),
            (SetErase, &["Set {1, 2}", "5"]),
            (SetIsElement, &["Set {1, 2}", "2"]),
            (SetIsElement, &["Set {1, 2}", "2L"]),
            (SetIsSubset, &["Set {1}", "Set {1, 2}"]),
            (SetIsSubset, &["Set {1, 2}", "Set {1}"]),
            (SetIsSubset, &["Set {}", "Set {}"]),
            (SetIsSubset, &["Set {1}", "List (1)"]),
            (SetTop, &["List (1)"]),
        ],
        expect![[r#"
            set_empty (Set {}) = true
            set_empty (Set {1}) = false
            set_top (Set {3, 1, 2}) = 1
            set_top (Set {1L, 2}) = 2
            set_top (Set {}) = error: set_top of an empty container
            set_pop (Set {3, 1, 2}) = Set {2, 3}
            set_pop (Set {}) = error: set_pop of an empty container
            set_size (Set {}) = 0UL
            set_size (Set {1, 1L, 1U}) = 3UL
            set_insert (Set {1}, 0) = Set {0, 1}
            set_insert (Set {1}, 1) = Set {1}
            set_erase (Set {1, 2}, 1) = Set {2}
            set_erase (Set {1, 2}, 5) = Set {1, 2}
            set_is_element (Set {1, 2}, 2) = true
            set_is_element (Set {1, 2}, 2L) = false
            set_is_subset (Set {1}, Set {1, 2}) = true
            set_is_subset (Set {1, 2}, Set {1}) = false
            set_is_subset (Set {}, Set {}) = true
            set_is_subset (Set {1}, List (1)) = error: type error: `set_is_subset` cannot be applied to set and list
            set_top (List (1)) = error: type error: `set_top` cannot be applied to list
        "#]],
    );
}

#[test]
fn eval_map_functions() {
    check_eval(
        &[
            (MapSize, &["Map []"]),
            (MapSize, &["Map [1 -> 2, 2 -> 3]"]),
            (MapEmpty, &["Map []"]),
            (MapEmpty, &["Map [1 -> 2]"]),
            (MapAssign, &["Map []", "1", "\"a\""]),
            (MapAssign, &["Map [1 -> \"a\"]", "1", "\"b\""]),
            (MapUnassign, &["Map [1 -> \"a\", 2 -> \"b\"]", "1"]),
            (MapUnassign, &["Map [1 -> \"a\"]", "3"]),
            (MapIsAssigned, &["Map [1 -> \"a\"]", "1"]),
            (MapIsAssigned, &["Map [1 -> \"a\"]", "1L"]),
            (MapGetAssignment, &["Map [1 -> \"a\"]", "1"]),
            (MapGetAssignment, &["Map [1 -> \"a\"]", "2"]),
            (MapGetAssignment, &["Map [\"k\" -> 1]", "\"x\""]),
            (MapGetAssignment, &["Set {1}", "1"]),
            (MapAssign, &["Map []", "1"]),
        ],
        expect![[r#"
            map_size (Map []) = 0UL
            map_size (Map [1 -> 2, 2 -> 3]) = 2UL
            map_empty (Map []) = true
            map_empty (Map [1 -> 2]) = false
            map_assign (Map [], 1, "a") = Map [1 -> "a"]
            map_assign (Map [1 -> "a"], 1, "b") = Map [1 -> "b"]
            map_unassign (Map [1 -> "a", 2 -> "b"], 1) = Map [2 -> "b"]
            map_unassign (Map [1 -> "a"], 3) = Map [1 -> "a"]
            map_is_assigned (Map [1 -> "a"], 1) = true
            map_is_assigned (Map [1 -> "a"], 1L) = false
            map_get_assignment (Map [1 -> "a"], 1) = "a"
            map_get_assignment (Map [1 -> "a"], 2) = error: map has no key 2
            map_get_assignment (Map ["k" -> 1], "x") = error: map has no key "x"
            map_get_assignment (Set {1}, 1) = error: type error: `map_get_assignment` cannot be applied to set and int
            map_assign (Map [], 1) = error: type error: `map_assign` takes 3 arguments, found 2
        "#]],
    );
}

#[test]
fn functions_are_pure() {
    let l = val("List (1, 2)");
    let _ = StackPush.eval(&[l.clone(), Value::Int(3)]);
    let s = val("Set {1}");
    let _ = SetInsert.eval(&[s.clone(), Value::Int(3)]);
    let args = [l.clone(), s.clone()];
    let before = format!("{} {}", args[0], args[1]);
    let _ = StackPop.eval(&args[..1]);
    let _ = SetPop.eval(&args[1..]);
    assert_eq!(format!("{} {}", args[0], args[1]), before);
    assert_eq!(before, "List (1, 2) Set {1}");
}

/// A loop that keeps wrapping a list in a list stops at [`MAX_VALUE_DEPTH`] with a message
/// (the value it would build makes printing, JSON, serialization and dropping recurse).
#[test]
fn values_nest_at_most_max_value_depth() {
    use crate::value::MAX_VALUE_DEPTH;
    let mut l = Value::List(Vec::new());
    let mut made = 0;
    let err = loop {
        match Builtin::StackPush.eval(&[Value::List(Vec::new()), l.clone()]) {
            Ok(v) => {
                l = v;
                made += 1;
            }
            Err(e) => break e,
        }
        assert!(made <= MAX_VALUE_DEPTH, "no limit");
    };
    assert_eq!(made, MAX_VALUE_DEPTH);
    assert!(!l.deeper_than(MAX_VALUE_DEPTH));
    assert!(l.deeper_than(MAX_VALUE_DEPTH - 1));
    assert!(err.to_string().contains("deeper than 200 levels"), "{err}");
    let set = Builtin::SetInsert.eval(&[Value::Set(Default::default()), l.clone()]);
    assert!(set.is_err());
    let map = Builtin::MapAssign.eval(&[Value::Map(Default::default()), Value::Int(1), l]);
    assert!(map.is_err());
    assert!(!Value::Int(1).deeper_than(0));
    assert!(Value::List(vec![Value::Int(1)]).deeper_than(0));
    assert!(!Value::List(vec![Value::Int(1)]).deeper_than(1));
}
