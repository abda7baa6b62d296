//! Data-driven tests: source text in, types / diagnostics / listings out (expect-test).

use std::fmt::Write;
use std::sync::Arc;

use expect_test::{Expect, expect};
use pnet_bundle::PortDir;
use pnet_stdlib::{StructType, Type};
use pnet_syntax::Diagnostic;
use pnet_syntax::expr::parse_str;

use super::{Env, Mode, PortSig, eval_const, lower};

fn struct_ty(name: &str, fields: &[(&str, Type)]) -> Type {
    Type::Struct(Arc::new(StructType {
        name: Arc::from(name),
        fields: fields
            .iter()
            .map(|(n, t)| (Arc::from(*n), t.clone()))
            .collect(),
    }))
}

/// Type names used in the tests: the xpnet names, plus `point { x: long, y: long }`,
/// `line { from: point, to: point }` and `longs` (a list of longs).
fn ty(name: &str) -> Type {
    match name {
        "point" => struct_ty("point", &[("x", Type::Long), ("y", Type::Long)]),
        "line" => struct_ty("line", &[("from", ty("point")), ("to", ty("point"))]),
        "longs" => Type::List(Box::new(Type::Long)),
        "struct_ab" => struct_ty("ab", &[("a", Type::Long), ("b", Type::Long)]),
        "uint" => Type::UInt,
        "ulong" => Type::ULong,
        _ => Type::from_name(name).unwrap_or_else(|| panic!("unknown test type {name}")),
    }
}

/// `"in a: long, out b: point"`
fn ports(spec: &str) -> Vec<PortSig> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|p| {
            let (dir, rest) = p.split_once(' ').expect("port direction");
            let (name, t) = rest.split_once(':').expect("port type");
            let dir = match dir {
                "in" => PortDir::In,
                "out" => PortDir::Out,
                "inout" => PortDir::InOut,
                "tunnel" => PortDir::Tunnel,
                _ => panic!("bad direction {dir}"),
            };
            PortSig {
                name: name.trim().to_string(),
                dir,
                ty: ty(t.trim()),
            }
        })
        .collect()
}

fn render_diags(src: &str, diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        let at = d
            .primary_span()
            .and_then(|s| src.get(s.range()))
            .unwrap_or("?");
        let _ = write!(out, "error[{}] `{at}`: {}", d.code, d.message);
        for l in d.labels.iter().filter(|l| !l.primary) {
            let at = src.get(l.span.range()).unwrap_or("?");
            let _ = write!(out, " [`{at}`: {}]", l.message);
        }
        for n in d.notes.iter().filter(|n| n.starts_with("help: ")) {
            let _ = write!(out, " ({n})");
        }
        out.push('\n');
    }
    out
}

fn run(
    src: &str,
    ports: &[PortSig],
    mode: Mode,
    expected: Option<Type>,
) -> (pnet_bundle::Code, String) {
    let (expr, parse_diags) = parse_str(src);
    let mut out = render_diags(src, &parse_diags);
    let env = Env {
        ports,
        mode,
        name: "test".to_string(),
        expected,
    };
    let (code, diags) = lower(&expr, &env);
    out.push_str(&render_diags(src, &diags));
    (code, out)
}

/// The ports of the operator tests: one of each type.
const ALL: &str = "in i: int, in l: long, in l2: long, in u: uint, in ul: ulong, in f: float, \
    in d: double, in c: char, in s: string, in b: bool, in bs: bitset, in ba: bytearray, \
    in bi: bigint, in li: list, in ll: longs, in se: set, in m: map, in p: point, \
    in ctl: control, in sh: shared_cleanup";

/// Each source in `Value` mode over [`ALL`]: its type or its diagnostics, one per line.
fn types(srcs: &[&str], expect: Expect) {
    let ports = ports(ALL);
    let mut out = String::new();
    for src in srcs {
        let (code, diags) = run(src, &ports, Mode::Value, None);
        if diags.is_empty() {
            let _ = writeln!(out, "{src}  :  {}", code.result);
        } else {
            let _ = writeln!(out, "{src}");
            for l in diags.lines() {
                let _ = writeln!(out, "    {l}");
            }
        }
    }
    expect.assert_eq(&out);
}

/// An expression body (or condition) over `ports`: its result type and diagnostics.
fn check_mode(src: &str, ports_spec: &str, mode: Mode, expect: Expect) {
    let ports = ports(ports_spec);
    let (code, diags) = run(src, &ports, mode, None);
    expect.assert_eq(&format!("{}\n{diags}", code.result));
}

fn check(src: &str, ports_spec: &str, expect: Expect) {
    check_mode(src, ports_spec, Mode::Expression, expect)
}

fn cond(src: &str, ports_spec: &str, expect: Expect) {
    check_mode(src, ports_spec, Mode::Condition, expect)
}

/// The code listing (and diagnostics) of an expression body.
fn listing(src: &str, ports_spec: &str, mode: Mode, expect: Expect) {
    let ports = ports(ports_spec);
    let (code, diags) = run(src, &ports, mode, None);
    assert_eq!(code.instrs.len(), code.spans.len());
    expect.assert_eq(&format!("{code}{diags}"));
}

/// Token values against place types: the value or the diagnostics.
fn tokens(cases: &[(&str, &str)], expect: Expect) {
    let mut out = String::new();
    for (src, t) in cases {
        let (expr, parse_diags) = parse_str(src);
        assert!(parse_diags.is_empty(), "{src}: {parse_diags:?}");
        match eval_const(&expr, &ty(t)) {
            Ok(v) => {
                let _ = writeln!(out, "{src} : {t}  =  {v}");
            }
            Err(diags) => {
                let _ = writeln!(out, "{src} : {t}");
                for l in render_diags(src, &diags).lines() {
                    let _ = writeln!(out, "    {l}");
                }
            }
        }
    }
    expect.assert_eq(&out);
}

#[test]
fn arithmetic() {
    types(
        &[
            "${i} + ${i}",
            "${l} + ${l}",
            "${u} - ${u}",
            "${ul} * ${ul}",
            "${f} + ${f}",
            "${d} * ${d}",
            "${bi} + ${bi}",
            "${s} + ${s}",
            "${i} + ${l}",
            "1 + 1L",
            "${c} + ${c}",
            "${s} - ${s}",
            "${d} / ${d}",
            "${f} / ${f}",
            "${l} / ${l}",
            "${l} div ${l}",
            "${d} div ${d}",
            "${l} mod ${l}",
            "${i} % ${i}",
            "${d} ** ${d}",
            "${l} ** ${l}",
            "${l} ^ ${l}",
            "${bi} ^ ${bi}",
            "${u} ^ ${u}",
            "${l} | ${l}",
            "${ul} & ${ul}",
            "${b} | ${b}",
            "${li} + ${li}",
            "${p} + ${p}",
            "${sh} * ${sh}",
        ],
        expect![[r#"
            ${i} + ${i}  :  int
            ${l} + ${l}  :  long
            ${u} - ${u}  :  unsigned int
            ${ul} * ${ul}  :  unsigned long
            ${f} + ${f}  :  float
            ${d} * ${d}  :  double
            ${bi} + ${bi}  :  bigint
            ${s} + ${s}  :  string
            ${i} + ${l}
                error[type_error] `${i} + ${l}`: operands of `+` must have the same type, found `int` and `long` [`${i}`: this is `int`] [`${l}`: this is `long`]
            1 + 1L
                error[type_error] `1 + 1L`: operands of `+` must have the same type, found `int` and `long` [`1`: this is `int`] [`1L`: this is `long`]
            ${c} + ${c}
                error[type_error] `${c} + ${c}`: `+` expects numbers or string, found `char`
            ${s} - ${s}
                error[type_error] `${s} - ${s}`: `-` expects numbers, found `string`
            ${d} / ${d}  :  double
            ${f} / ${f}  :  float
            ${l} / ${l}
                error[type_error] `${l} / ${l}`: `/` expects float or double, found `long`
            ${l} div ${l}  :  long
            ${d} div ${d}
                error[type_error] `${d} div ${d}`: `div` expects int, long, unsigned int, unsigned long or bigint, found `double`
            ${l} mod ${l}  :  long
            ${i} % ${i}  :  int
            ${d} ** ${d}  :  double
            ${l} ** ${l}
                error[type_error] `${l} ** ${l}`: `**` expects float or double, found `long`
            ${l} ^ ${l}  :  long
            ${bi} ^ ${bi}  :  bigint
            ${u} ^ ${u}  :  unsigned int
            ${l} | ${l}  :  long
            ${ul} & ${ul}  :  unsigned long
            ${b} | ${b}
                error[type_error] `${b} | ${b}`: `|` expects int, long, unsigned int, unsigned long or bigint, found `bool`
            ${li} + ${li}
                error[type_error] `${li} + ${li}`: `+` expects numbers or string, found `list`
            ${p} + ${p}
                error[type_error] `${p} + ${p}`: `+` expects numbers or string, found `point`
            ${sh} * ${sh}
                error[type_error] `${sh} * ${sh}`: `*` expects numbers, found `shared_cleanup`
        "#]],
    );
}

#[test]
fn comparisons_and_logic() {
    types(
        &[
            "${l} < ${l2}",
            "${i} <= ${i}",
            "${d} > ${d}",
            "${s} >= ${s}",
            "${c} :lt: ${c}",
            "${b} < ${b}",
            "${l} < ${i}",
            "${bs} < ${bs}",
            "${li} < ${li}",
            "${l} == ${l}",
            "${d} == ${d}",
            "${p} != ${p}",
            "${se} == ${se}",
            "${i} == ${l}",
            "${b} && ${b}",
            "${b} || ${l} < ${l2}",
            "${b} :and: ${b}",
            "${l} || ${b}",
            "${b} && 1",
            "!${b}",
            "!${l}",
            "-${l}",
            "-${d}",
            "-${u}",
            "-${ul}",
            "-${bi}",
            "-${s}",
        ],
        expect![[r#"
            ${l} < ${l2}  :  bool
            ${i} <= ${i}  :  bool
            ${d} > ${d}  :  bool
            ${s} >= ${s}  :  bool
            ${c} :lt: ${c}  :  bool
            ${b} < ${b}  :  bool
            ${l} < ${i}
                error[type_error] `${l} < ${i}`: operands of `<` must have the same type, found `long` and `int` [`${l}`: this is `long`] [`${i}`: this is `int`]
            ${bs} < ${bs}
                error[type_error] `${bs} < ${bs}`: `<` expects bool, char, string, int, long, unsigned int, unsigned long, float, double or bigint, found `bitset`
            ${li} < ${li}
                error[type_error] `${li} < ${li}`: `<` expects bool, char, string, int, long, unsigned int, unsigned long, float, double or bigint, found `list`
            ${l} == ${l}  :  bool
            ${d} == ${d}  :  bool
            ${p} != ${p}  :  bool
            ${se} == ${se}  :  bool
            ${i} == ${l}
                error[type_error] `${i} == ${l}`: operands of `==` must have the same type, found `int` and `long` [`${i}`: this is `int`] [`${l}`: this is `long`]
            ${b} && ${b}  :  bool
            ${b} || ${l} < ${l2}  :  bool
            ${b} :and: ${b}  :  bool
            ${l} || ${b}
                error[type_error] `${l} || ${b}`: operands of `||` must have the same type, found `long` and `bool` [`${l}`: this is `long`] [`${b}`: this is `bool`]
            ${b} && 1
                error[type_error] `${b} && 1`: operands of `&&` must have the same type, found `bool` and `int` [`${b}`: this is `bool`] [`1`: this is `int`]
            !${b}  :  bool
            !${l}
                error[type_error] `!${l}`: `!` expects bool, found `long`
            -${l}  :  long
            -${d}  :  double
            -${u}
                error[type_error] `-${u}`: `-` expects int, long, float, double or bigint, found `unsigned int`
            -${ul}
                error[type_error] `-${ul}`: `-` expects int, long, float, double or bigint, found `unsigned long`
            -${bi}  :  bigint
            -${s}
                error[type_error] `-${s}`: `-` expects int, long, float, double or bigint, found `string`
        "#]],
    );
}

#[test]
fn builtins() {
    types(
        &[
            "abs ${l}",
            "abs ${u}",
            "floor ${d}",
            "ceil (${f})",
            "round ${d}",
            "sin ${d}",
            "cos ${l}",
            "sqrt ${f}",
            "log ${d}",
            "int ${l}",
            "long (${d})",
            "uint ${i}",
            "ulong ${l}",
            "float ${bi}",
            "double ${l}",
            "bigint ${l}",
            "int (${b})",
            "long ${s}",
            "bitset_count ${bs}",
            "bitset_tohex ${bs}",
            "bitset_fromhex ${s}",
            "bitset_insert ${bs} ${ul}",
            "bitset_insert (${bs}, ${l})",
            "bitset_is_element (${bs}, ${ul})",
            "bitset_or (${bs}, ${bs})",
            "min (${l}, ${l2})",
            "max (${l}, ${i})",
            "min (${s}, ${s})",
            "stack_empty ${ll}",
            "stack_top ${ll}",
            "stack_top ${li}",
            "stack_pop ${ll}",
            "stack_size ${li}",
            "stack_push (${ll}, ${l})",
            "stack_push (${li}, ${s})",
            "stack_join (${ll}, ${ll})",
            "stack_top ${l}",
            "set_insert (${se}, ${l})",
            "set_is_element (${se}, 1)",
            "set_top ${se}",
            "set_pop ${se}",
            "set_size ${se}",
            "set_empty ${se}",
            "set_is_subset (${se}, ${se})",
            "set_insert (${li}, ${l})",
            "map_assign (${m}, ${l}, ${s})",
            "map_get_assignment (${m}, ${l})",
            "map_is_assigned (${m}, 1L)",
            "map_unassign (${m}, 1L)",
            "map_size ${m}",
            "map_empty ${m}",
            "map_size ${se}",
            "shared_cleanup (${l})",
            "shared_x (1L)",
        ],
        expect![[r#"
            abs ${l}  :  long
            abs ${u}
                error[type_error] `abs ${u}`: `abs` expects int, long, float, double or bigint, found `unsigned int`
            floor ${d}  :  double
            ceil (${f})  :  float
            round ${d}  :  double
            sin ${d}  :  double
            cos ${l}
                error[type_error] `cos ${l}`: `cos` expects float or double, found `long`
            sqrt ${f}  :  float
            log ${d}  :  double
            int ${l}  :  int
            long (${d})  :  long
            uint ${i}  :  unsigned int
            ulong ${l}  :  unsigned long
            float ${bi}  :  float
            double ${l}  :  double
            bigint ${l}  :  bigint
            int (${b})
                error[type_error] `int (${b})`: `int` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
            long ${s}
                error[type_error] `long ${s}`: `long` expects int, long, unsigned int, unsigned long, float, double or bigint, found `string`
            bitset_count ${bs}  :  unsigned long
            bitset_tohex ${bs}  :  string
            bitset_fromhex ${s}  :  bitset
            bitset_insert ${bs} ${ul}  :  bitset
            bitset_insert (${bs}, ${l})
                error[type_error] `bitset_insert (${bs}, ${l})`: `bitset_insert` expects `unsigned long` as argument 2, found `long`
            bitset_is_element (${bs}, ${ul})  :  bool
            bitset_or (${bs}, ${bs})  :  bitset
            min (${l}, ${l2})  :  long
            max (${l}, ${i})
                error[type_error] `max (${l}, ${i})`: arguments of `max` must have the same type, found `long` and `int`
            min (${s}, ${s})
                error[type_error] `min (${s}, ${s})`: `min` expects numbers, found `string`
            stack_empty ${ll}  :  bool
            stack_top ${ll}  :  long
            stack_top ${li}  :  any
            stack_pop ${ll}  :  list<long>
            stack_size ${li}  :  unsigned long
            stack_push (${ll}, ${l})  :  list<long>
            stack_push (${li}, ${s})  :  list
            stack_join (${ll}, ${ll})  :  list<long>
            stack_top ${l}
                error[type_error] `stack_top ${l}`: `stack_top` expects `list` as argument 1, found `long`
            set_insert (${se}, ${l})  :  set
            set_is_element (${se}, 1)  :  bool
            set_top ${se}  :  any
            set_pop ${se}  :  set
            set_size ${se}  :  unsigned long
            set_empty ${se}  :  bool
            set_is_subset (${se}, ${se})  :  bool
            set_insert (${li}, ${l})
                error[type_error] `set_insert (${li}, ${l})`: `set_insert` expects `set` as argument 1, found `list`
            map_assign (${m}, ${l}, ${s})  :  map
            map_get_assignment (${m}, ${l})  :  any
            map_is_assigned (${m}, 1L)  :  bool
            map_unassign (${m}, 1L)  :  map
            map_size ${m}  :  unsigned long
            map_empty ${m}  :  bool
            map_size ${se}
                error[type_error] `map_size ${se}`: `map_size` expects `map` as argument 1, found `set`
            shared_cleanup (${l})  :  shared_cleanup
            shared_x (1L)  :  shared_x
        "#]],
    );
}

#[test]
fn literals_and_collections() {
    types(
        &[
            "[]",
            "true",
            "pi",
            "'c'",
            "\"s\"",
            "23",
            "23L",
            "23U",
            "23UL",
            "23A",
            "1.5f",
            "1.5",
            "{1 2}",
            "y(1 2)",
            "List ()",
            "List (1, 2)",
            "List (1, 2L)",
            "List (-1, 2)",
            "Set {1L, 2L}",
            "Set {}",
            "Map [1 -> \"a\"]",
            "Map []",
            "Struct [a := 1L, b := \"x\"]",
            "Struct []",
            "Struct [a := Struct [b := 1]]",
            "Struct [a := 1, a := 2]",
            "List (${l})",
            "Set {1 + ${l}}",
            "Map [${l} -> 1]",
            "Struct [a := ${l}]",
        ],
        expect![[r#"
            []  :  control
            true  :  bool
            pi  :  double
            'c'  :  char
            "s"  :  string
            23  :  int
            23L  :  long
            23U  :  unsigned int
            23UL  :  unsigned long
            23A  :  bigint
            1.5f  :  float
            1.5  :  double
            {1 2}  :  bitset
            y(1 2)  :  bytearray
            List ()  :  list
            List (1, 2)  :  list<int>
            List (1, 2L)  :  list
            List (-1, 2)  :  list<int>
            Set {1L, 2L}  :  set<long>
            Set {}  :  set
            Map [1 -> "a"]  :  map<int, string>
            Map []  :  map
            Struct [a := 1L, b := "x"]  :  struct{a: long, b: string}
            Struct []  :  struct{}
            Struct [a := Struct [b := 1]]  :  struct{a: struct{b: int}}
            Struct [a := 1, a := 2]
                error[duplicate_field] `a`: duplicate field `a` [`a`: first given here]
            List (${l})
                error[non_literal_element] `${l}`: elements of `List`, `Set`, `Map` and `Struct` literals must be literals
            Set {1 + ${l}}
                error[non_literal_element] `1 + ${l}`: elements of `List`, `Set`, `Map` and `Struct` literals must be literals
                error[type_error] `1 + ${l}`: operands of `+` must have the same type, found `int` and `long` [`1`: this is `int`] [`${l}`: this is `long`] (help: write `1L`)
            Map [${l} -> 1]
                error[non_literal_element] `${l}`: elements of `List`, `Set`, `Map` and `Struct` literals must be literals
            Struct [a := ${l}]
                error[non_literal_element] `${l}`: elements of `List`, `Set`, `Map` and `Struct` literals must be literals
        "#]],
    );
}

#[test]
fn references() {
    types(
        &[
            "${p}",
            "${p.x}",
            "${p.x} + ${p.y}",
            "${p.z}",
            "${p.x.y}",
            "${l.a}",
            "${li.a}",
            "${nope}",
            "${nope.a}",
        ],
        expect![[r#"
            ${p}  :  point
            ${p.x}  :  long
            ${p.x} + ${p.y}  :  long
            ${p.z}
                error[unknown_field] `z`: `${p}` (type `point`) has no field `z`
            ${p.x.y}
                error[not_a_struct] `y`: `${p.x}` has type `long`, which has no fields
            ${l.a}
                error[not_a_struct] `a`: `${l}` has type `long`, which has no fields
            ${li.a}
                error[not_a_struct] `a`: `${li}` has type `list`, which has no fields
            ${nope}
                error[unknown_variable] `nope`: unknown variable `nope`: not a port, and not assigned before
            ${nope.a}
                error[unknown_variable] `nope`: unknown variable `nope`: not a port, and not assigned before
        "#]],
    );
    check(
        "${ln.from.x} + ${ln.to.y}",
        "in ln: line",
        expect![[r#"
            long
        "#]],
    );
}

#[test]
fn locals() {
    check(
        "${x} := 1L; ${x} + 2L",
        "",
        expect![[r#"
        long
    "#]],
    );
    check(
        "${x} := 1L; ${x} := 2",
        "",
        expect![[r#"
            int
            error[type_mismatch] `2`: variable `x` has type `long`, but the assigned value has type `int` (help: write `2L`)
        "#]],
    );
    check(
        "${x} + 1",
        "",
        expect![[r#"
            any
            error[unknown_variable] `x`: unknown variable `x`: not a port, and not assigned before
        "#]],
    );
    check(
        "${x} := ${x} + 1",
        "",
        expect![[r#"
            any
            error[unknown_variable] `x`: unknown variable `x`: not a port, and not assigned before
        "#]],
    );
    check(
        "${z} := ${y} := 3U; ${z}",
        "",
        expect![[r#"
        unsigned int
    "#]],
    );
    check(
        "${z.a} := 1; ${z.b} := 2L; ${z}",
        "",
        expect![[r#"
        struct{a: int, b: long}
    "#]],
    );
    check(
        "${z.a} := 1; ${z.a} := 2L",
        "",
        expect![[r#"
            long
            error[type_mismatch] `2L`: `${z.a}` has type `int`, but the assigned value has type `long` (help: write `2`)
        "#]],
    );
    check(
        "${z.a} := 1; ${z.a.b} := 2L",
        "",
        expect![[r#"
        any
        error[not_a_struct] `b`: cannot assign a field of `${z.a}`: its type `int` is not a struct
    "#]],
    );
    check(
        "${z} := 1; ${z.a} := 2",
        "",
        expect![[r#"
        any
        error[not_a_struct] `a`: cannot assign a field of `${z}`: its type `int` is not a struct
    "#]],
    );
    check(
        "${z.a.b} := 1; ${z.a.c} := 'c'; ${z.a}",
        "",
        expect![[r#"
        struct{b: int, c: char}
    "#]],
    );
    check(
        "${z} := List (); ${z} := stack_push (${z}, 1L); stack_top (${z})",
        "",
        expect![[r#"
        any
    "#]],
    );
    check(
        "${x} := 1L",
        "in x: int",
        expect![[r#"
            long
            error[type_mismatch] `1L`: `${x}` has type `int`, but the assigned value has type `long` [`x`: expects `int`] (help: write `1`)
        "#]],
    );
}

#[test]
fn expression_mode() {
    check(
        "${b} := ${a} + 1L",
        "in a: long, out b: long",
        expect![[r#"
        long
    "#]],
    );
    check(
        "${a} + 1L",
        "in a: long, out b: long",
        expect![[r#"
        long
        error[missing_binding] `${a} + 1L`: output port `b` is never assigned
    "#]],
    );
    check(
        "${b} := ${a} + 1L",
        "in a: long, out b: int",
        expect![[r#"
        long
        error[type_mismatch] `${a} + 1L`: `${b}` has type `int`, but the assigned value has type `long` [`b`: expects `int`]
    "#]],
    );
    check(
        "${n} := ${n} - 1L",
        "inout n: long",
        expect![[r#"
        long
    "#]],
    );
    check(
        "${o} := 1L; ${o} + 1L",
        "out o: long",
        expect![[r#"
        long
    "#]],
    );
    check(
        "${o} + 1L; ${o} := 1L",
        "out o: long",
        expect![[r#"
        long
        error[read_before_assignment] `o`: output port `o` is read before it is assigned
    "#]],
    );
    check(
        "${t} + 1L",
        "tunnel t: long",
        expect![[r#"
        long
    "#]],
    );
    check(
        "",
        "in a: long",
        expect![[r#"
        control
    "#]],
    );
    check(
        "",
        "out a: control",
        expect![[r#"
        control
        error[missing_binding] ``: output port `a` is never assigned
    "#]],
    );
    check(
        "${p.x} := 1L",
        "out p: point",
        expect![[r#"
        long
        error[missing_binding] `${p.x} := 1L`: field `p.y` of output port `p` is never assigned
    "#]],
    );
    check(
        "${p.x} := 1L; ${p.y} := 2L",
        "out p: point",
        expect![[r#"
        long
    "#]],
    );
    check(
        "${p.x} := 1",
        "out p: point",
        expect![[r#"
            int
            error[type_mismatch] `1`: `${p.x}` has type `long`, but the assigned value has type `int` [`p.x`: expects `long`] (help: write `1L`)
            error[missing_binding] `${p.x} := 1`: field `p.y` of output port `p` is never assigned
        "#]],
    );
    check(
        "${p.z} := 1L; ${p} := Struct [x := 1L, y := 2L]",
        "out p: point",
        expect![[r#"
        struct{x: long, y: long}
        error[unknown_field] `z`: `${p}` (type `point`) has no field `z`
    "#]],
    );
    check(
        "${p} := Struct [x := 1L, y := 2L]",
        "out p: point",
        expect![[r#"
        struct{x: long, y: long}
    "#]],
    );
    check(
        "${p} := Struct [y := 1L, x := 2L]",
        "out p: point",
        expect![[r#"
            struct{y: long, x: long}
            error[type_mismatch] `Struct [y := 1L, x := 2L]`: `${p}` has type `point`, but the assigned value has type `struct{y: long, x: long}` [`p`: expects `point`] (help: write the fields in the order x, y)
        "#]],
    );
    check(
        "${ln.from} := ${a}; ${ln.to.x} := 1L; ${ln.to.y} := 2L",
        "in a: point, out ln: line",
        expect![[r#"
        long
    "#]],
    );
    check(
        "${ln.from} := ${a}; ${ln.to.x} := 1L",
        "in a: point, out ln: line",
        expect![[r#"
        long
        error[missing_binding] `${ln.from} := ${a}; ${ln.to.x} := 1L`: field `ln.to.y` of output port `ln` is never assigned
    "#]],
    );
    // An `inout` port keeps its input value unless assigned; assigning an in port is allowed
    // (type-checked) and only changes what later reads see.
    check(
        "${a} + 1L",
        "inout a: long",
        expect![[r#"
        long
    "#]],
    );
    check(
        "${a} := ${a} + 1L; ${a}",
        "in a: long",
        expect![[r#"
        long
    "#]],
    );
    check(
        "${a} := true",
        "in a: long",
        expect![[r#"
        bool
        error[type_mismatch] `true`: `${a}` has type `long`, but the assigned value has type `bool` [`a`: expects `long`]
    "#]],
    );
    // Field assignments of a port whose type is not a struct.
    check(
        "${o.a} := 1L",
        "out o: long",
        expect![[r#"
        any
        error[not_a_struct] `a`: cannot assign a field of `${o}`: its type `long` is not a struct
    "#]],
    );
    check(
        "${t} := 1L",
        "tunnel t: long",
        expect![[r#"
        long
    "#]],
    );
    check(
        "${l} := stack_push (${l}, 1L)",
        "inout l: longs",
        expect![[r#"
        list<long>
    "#]],
    );
    check(
        "${l} := stack_push (${l}, 1)",
        "inout l: longs",
        expect![[r#"
            list
        "#]],
    );
    check(
        "${l} := List ()",
        "out l: longs",
        expect![[r#"
        list
    "#]],
    );
    check(
        "${s} := shared_cleanup (${a})",
        "in a: long, out s: shared_cleanup",
        expect![[r#"
        shared_cleanup
    "#]],
    );
    check(
        "${s} := shared_other (${a})",
        "in a: long, out s: shared_cleanup",
        expect![[r#"
        shared_other
        error[type_mismatch] `shared_other (${a})`: `${s}` has type `shared_cleanup`, but the assigned value has type `shared_other` [`s`: expects `shared_cleanup`]
    "#]],
    );
}

#[test]
fn condition_mode() {
    cond(
        "${a} < ${b}",
        "in a: long, in b: long",
        expect![[r#"
        bool
    "#]],
    );
    cond(
        "${a} + ${b}",
        "in a: long, in b: long",
        expect![[r#"
        long
        error[condition_not_bool] `${a} + ${b}`: a condition must be `bool`, but this has type `long`
    "#]],
    );
    cond(
        "${o} > 0L",
        "in a: long, out o: long",
        expect![[r#"
            any
            error[output_port_in_condition] `o`: `o` is an output port; a condition sees only input and tunnel ports
        "#]],
    );
    cond(
        "${o} > 0L",
        "inout o: long",
        expect![[r#"
        bool
    "#]],
    );
    cond(
        "${t}",
        "tunnel t: bool",
        expect![[r#"
        bool
    "#]],
    );
    cond(
        "${a} := true",
        "in a: bool",
        expect![[r#"
        any
        error[assignment_in_condition] `a`: a condition cannot assign the port `a`
    "#]],
    );
    cond(
        "${x} := ${a} + 1L; ${x} > 2L",
        "in a: long",
        expect![[r#"
        bool
    "#]],
    );
    cond(
        "stack_top ${l}",
        "in l: list",
        expect![[r#"
        any
    "#]],
    );
    cond(
        "",
        "",
        expect![[r#"
        control
        error[condition_not_bool] ``: a condition must be `bool`, but this has type `control`
    "#]],
    );
    cond(
        "!stack_empty (${l}) && stack_top (${l}) > 0L",
        "in l: longs",
        expect![[r#"
        bool
    "#]],
    );
}

#[test]
fn value_mode() {
    let ports = ports("in a: long, out o: ulong");
    let mut out = String::new();
    for (src, expected) in [
        ("${a} + 1L", Some("long")),
        ("ulong (${a})", Some("ulong")),
        ("${a}", Some("ulong")),
        ("${o}", Some("ulong")),
        ("\"group\"", Some("string")),
        ("${a}", None),
        ("${o} := 1UL", None),
        ("${x} := 2UL; ${x} * 3UL", Some("ulong")),
    ] {
        let (code, diags) = run(src, &ports, Mode::Value, expected.map(ty));
        let _ = writeln!(out, "{src} : {expected:?}  =>  {}", code.result);
        for l in diags.lines() {
            let _ = writeln!(out, "    {l}");
        }
    }
    expect![[r#"
        ${a} + 1L : Some("long")  =>  long
        ulong (${a}) : Some("ulong")  =>  unsigned long
        ${a} : Some("ulong")  =>  long
            error[type_mismatch] `${a}`: expected a value of type `unsigned long`, found `long`
        ${o} : Some("ulong")  =>  unsigned long
        "group" : Some("string")  =>  string
        ${a} : None  =>  long
        ${o} := 1UL : None  =>  any
            error[assignment_to_port] `o`: this expression cannot assign the port `o`
        ${x} := 2UL; ${x} * 3UL : Some("ulong")  =>  unsigned long
    "#]]
    .assert_eq(&out);
}

#[test]
fn constant_folding() {
    types(
        &[
            "-1",
            "1 + 2 * 3",
            "1 div 0",
            "1L mod 0L",
            "${l} + (1L div 0L)",
            "1.0 == 2.0",
            "1.0f != 1.0f",
            "[] == []",
            "List () == List ()",
            "1 == 1",
            "Struct [a := 1] == Struct [b := 1]",
            "1U - 2U",
            "sqrt (-1.0)",
            "log 0.0",
            "2 ^ -1",
            "stack_top (List ())",
            "set_pop (Set {})",
            "map_get_assignment (Map [], 1)",
            "bitset_fromhex \"zz\"",
            "2147483647 + 1",
            "true || 1 div 0 == 0",
            "false && ${b}",
            "\"a\" + \"b\"",
            "int 1.5",
            "round 2.5",
            "true + false",
        ],
        expect![[r#"
            -1  :  int
            1 + 2 * 3  :  int
            1 div 0
                error[constant_evaluation] `1 div 0`: evaluating this constant expression fails: division by zero
            1L mod 0L
                error[constant_evaluation] `1L mod 0L`: evaluating this constant expression fails: division by zero
            ${l} + (1L div 0L)
                error[constant_evaluation] `1L div 0L`: evaluating this constant expression fails: division by zero
            1.0 == 2.0
                error[constant_evaluation] `1.0 == 2.0`: evaluating this constant expression fails: values of type double cannot be compared for equality
            1.0f != 1.0f
                error[constant_evaluation] `1.0f != 1.0f`: evaluating this constant expression fails: values of type float cannot be compared for equality
            [] == []
                error[constant_evaluation] `[] == []`: evaluating this constant expression fails: values of type control cannot be compared for equality
            List () == List ()
                error[constant_evaluation] `List () == List ()`: evaluating this constant expression fails: values of type list cannot be compared for equality
            1 == 1  :  bool
            Struct [a := 1] == Struct [b := 1]
                error[constant_evaluation] `Struct [a := 1] == Struct [b := 1]`: evaluating this constant expression fails: structs with different fields cannot be compared
            1U - 2U
                error[constant_evaluation] `1U - 2U`: evaluating this constant expression fails: unsigned subtraction below zero
            sqrt (-1.0)
                error[constant_evaluation] `sqrt (-1.0)`: evaluating this constant expression fails: sqrt of a negative number
            log 0.0
                error[constant_evaluation] `log 0.0`: evaluating this constant expression fails: log of a non-positive number
            2 ^ -1
                error[constant_evaluation] `2 ^ -1`: evaluating this constant expression fails: negative exponent
            stack_top (List ())
                error[constant_evaluation] `stack_top (List ())`: evaluating this constant expression fails: stack_top of an empty container
            set_pop (Set {})
                error[constant_evaluation] `set_pop (Set {})`: evaluating this constant expression fails: set_pop of an empty container
            map_get_assignment (Map [], 1)
                error[constant_evaluation] `map_get_assignment (Map [], 1)`: evaluating this constant expression fails: map has no key 1
            bitset_fromhex "zz"
                error[constant_evaluation] `bitset_fromhex "zz"`: evaluating this constant expression fails: bitset_fromhex: malformed input "zz"
            2147483647 + 1  :  int
            true || 1 div 0 == 0
                error[constant_evaluation] `1 div 0`: evaluating this constant expression fails: division by zero
            false && ${b}  :  bool
            "a" + "b"  :  string
            int 1.5  :  int
            round 2.5  :  double
            true + false
                error[constant_evaluation] `true + false`: evaluating this constant expression fails: type error: `+` cannot be applied to bool and bool
        "#]],
    );
}

#[test]
fn token_values() {
    tokens(
        &[
            ("1L", "long"),
            ("1", "long"),
            ("-5", "int"),
            ("[]", "control"),
            ("", "control"),
            ("", "long"),
            ("Struct [x := 1L, y := 2L]", "point"),
            ("Struct [x := 1L]", "point"),
            ("Struct [x := 1L, y := 2]", "point"),
            ("Struct [y := 1L, x := 2L]", "point"),
            (
                "Struct [from := Struct [x := 1L, y := 2L], to := Struct [x := 3L, y := 4L]]",
                "line",
            ),
            ("List ()", "list"),
            ("List ()", "longs"),
            ("List (1L, 2L)", "longs"),
            ("List (1, 2)", "longs"),
            ("List (1, 2L)", "list"),
            ("Set {3, 1, 2, 1}", "set"),
            ("Map [1 -> \"a\", 2 -> \"b\"]", "map"),
            ("{1 2}", "bitset"),
            ("y(1 2)", "bytearray"),
            ("10A ^ 20A", "bigint"),
            ("${x} := 2L; ${x} * 3L", "long"),
            ("${z.a} := 1L; ${z.b} := 2L; ${z}", "point"),
            ("${z.x} := 1L; ${z.y} := 2L; ${z}", "point"),
            ("${y}", "long"),
            ("1 div 0", "int"),
            ("\"a\" + 1", "string"),
            ("shared_cleanup (1L)", "shared_cleanup"),
            ("2.5", "double"),
        ],
        expect![[r#"
            1L : long  =  1L
            1 : long
                error[type_mismatch] `1`: this token value has type `int`, but the place has type `long` (help: write `1L`)
            -5 : int  =  -5
            [] : control  =  []
             : control  =  []
             : long
                error[type_mismatch] ``: this token value has type `control`, but the place has type `long`
            Struct [x := 1L, y := 2L] : point  =  Struct [x := 1L, y := 2L]
            Struct [x := 1L] : point
                error[type_mismatch] `Struct [x := 1L]`: this token value has type `struct{x: long}`, but the place has type `point` (help: field `y` is missing)
            Struct [x := 1L, y := 2] : point
                error[type_mismatch] `Struct [x := 1L, y := 2]`: this token value has type `struct{x: long, y: int}`, but the place has type `point` (help: field `y` is not of type long: write 2L)
            Struct [y := 1L, x := 2L] : point
                error[type_mismatch] `Struct [y := 1L, x := 2L]`: this token value has type `struct{y: long, x: long}`, but the place has type `point` (help: write the fields in the order x, y)
            Struct [from := Struct [x := 1L, y := 2L], to := Struct [x := 3L, y := 4L]] : line  =  Struct [from := Struct [x := 1L, y := 2L], to := Struct [x := 3L, y := 4L]]
            List () : list  =  List ()
            List () : longs  =  List ()
            List (1L, 2L) : longs  =  List (1L, 2L)
            List (1, 2) : longs
                error[type_mismatch] `List (1, 2)`: this token value has type `list<int>`, but the place has type `list<long>` (help: element 1 is not of type long: write 1L)
            List (1, 2L) : list  =  List (1, 2L)
            Set {3, 1, 2, 1} : set  =  Set {1, 2, 3}
            Map [1 -> "a", 2 -> "b"] : map  =  Map [1 -> "a", 2 -> "b"]
            {1 2} : bitset  =  { 1 2}
            y(1 2) : bytearray  =  y( 1 2)
            10A ^ 20A : bigint  =  100000000000000000000A
            ${x} := 2L; ${x} * 3L : long  =  6L
            ${z.a} := 1L; ${z.b} := 2L; ${z} : point
                error[type_mismatch] `${z.a} := 1L; ${z.b} := 2L; ${z}`: this token value has type `struct{a: long, b: long}`, but the place has type `point`
            ${z.x} := 1L; ${z.y} := 2L; ${z} : point  =  Struct [x := 1L, y := 2L]
            ${y} : long
                error[unknown_variable] `y`: unknown variable `y`: a constant expression can only read variables it assigned before
            1 div 0 : int
                error[constant_evaluation] `1 div 0`: evaluating this constant expression fails: division by zero
            "a" + 1 : string
                error[type_error] `"a" + 1`: operands of `+` must have the same type, found `string` and `int` [`"a"`: this is `string`] [`1`: this is `int`]
            shared_cleanup (1L) : shared_cleanup  =  shared_cleanup (1L)
            2.5 : double  =  2.5
        "#]],
    );
}

#[test]
fn lowering() {
    use Mode::*;
    listing(
        "${b} := ${a} + 1L",
        "in a: long, out b: long",
        Expression,
        expect![[r#"
        code "test" : long
          slot 0 port a : long
          slot 1 port b : long
          reads a
          0  load        a
          1  const       1L
          2  add.long
          3  dup
          4  store       b
    "#]],
    );
    listing(
        "${a} < ${b}",
        "in a: long, in b: long",
        Condition,
        expect![[r#"
        code "test" : bool
          slot 0 port a : long
          slot 1 port b : long
          reads a, b
          0  load        a
          1  load        b
          2  lt.long
    "#]],
    );
    listing(
        "",
        "in a: control",
        Expression,
        expect![[r#"
        code "test" : control
          slot 0 port a : control
          0  const       []
    "#]],
    );
    listing(
        "${a} && ${b} || ${c}",
        "in a: bool, in b: bool, in c: bool",
        Condition,
        expect![[r#"
        code "test" : bool
          slot 0 port a : bool
          slot 1 port b : bool
          slot 2 port c : bool
          reads a, b, c
          0  load        a
          1  jump_if_false_else_pop -> 3
          2  load        b
          3  jump_if_true_else_pop -> 5
          4  load        c
    "#]],
    );
    listing(
        "!stack_empty (${l}) && stack_top (${l}) > 0L",
        "in l: longs, in unused: long",
        Condition,
        expect![[r#"
            code "test" : bool
              slot 0 port l : list<long>
              slot 1 port unused : long
              reads l
              0  load        l
              1  call        stack_empty
              2  not.bool
              3  jump_if_false_else_pop -> 8
              4  load        l
              5  call        stack_top
              6  const       0L
              7  gt.long
        "#]],
    );
    listing(
        "${p.x} := ${q.x} + 1L; ${p.y} := ${q.y} * 2L",
        "in q: point, out p: point",
        Expression,
        expect![[r#"
            code "test" : long
              slot 0 port q : point
              slot 1 port p : point
              reads q
              0  load        q.x
              1  const       1L
              2  add.long
              3  store       p.x
              4  load        q.y
              5  const       2L
              6  mul.long
              7  dup
              8  store       p.y
        "#]],
    );
    listing(
        "${z.a} := 1L; ${z.b} := ${z.a}; ${o} := ${z}",
        "out o: struct_ab",
        Expression,
        expect![[r#"
            code "test" : struct{a: long, b: long}
              slot 0 port o : ab
              slot 1 local z : struct{a: long, b: long}
              0  const       1L
              1  store       z.a
              2  load        z.a
              3  store       z.b
              4  load        z
              5  dup
              6  store       o
        "#]],
    );
    listing(
        "${x} := ${n}; ${y} := ${x} * ${x}; ${n} := ${x} + ${y} + ${x}",
        "inout n: long",
        Expression,
        expect![[r#"
            code "test" : long
              slot 0 port n : long
              slot 1 local x : long
              slot 2 local y : long
              reads n
               0  load        n
               1  store       x
               2  load        x
               3  load        x
               4  mul.long
               5  store       y
               6  load        x
               7  load        y
               8  add.long
               9  load        x
              10  add.long
              11  dup
              12  store       n
        "#]],
    );
    listing(
        "${z} := ${y} := ${x} := -1 + 3",
        "out z: int",
        Expression,
        expect![[r#"
        code "test" : int
          slot 0 port z : int
          slot 1 local x : int
          slot 2 local y : int
          0  const       2
          1  dup
          2  store       x
          3  dup
          4  store       y
          5  dup
          6  store       z
    "#]],
    );
    listing(
        "${s} := set_insert (${s}, 1L); ${m} := map_assign (Map [], \"k\", List (1, 2)); ${e} := shared_done (${s})",
        "inout s: set, out m: map, out e: shared_done",
        Expression,
        expect![[r#"
            code "test" : shared_done
              slot 0 port s : set
              slot 1 port m : map
              slot 2 port e : shared_done
              reads s
              0  load        s
              1  const       1L
              2  call        set_insert
              3  store       s
              4  const       Map ["k" -> List (1, 2)]
              5  store       m
              6  load        s
              7  make_shared shared_done
              8  dup
              9  store       e
        "#]],
    );
    listing(
        "${r} := ${a} ^ (${a} := 2L)",
        "in a: long, out r: long",
        Expression,
        expect![[r#"
            code "test" : long
              slot 0 port a : long
              slot 1 port r : long
              slot 2 local %0 : long
              reads a
              0  const       2L
              1  dup
              2  store       a
              3  store       slot#2
              4  load        a
              5  load        slot#2
              6  int_pow.long
              7  dup
              8  store       r
        "#]],
    );
    listing(
        "${d} ** 2.0 + 1.0; ${d} ** 2.0",
        "in d: double",
        Value,
        expect![[r#"
        code "test" : double
          slot 0 port d : double
          reads d
          0  load        d
          1  const       2.0
          2  pow.double
          3  const       1.0
          4  add.double
          5  pop
          6  load        d
          7  const       2.0
          8  pow.double
    "#]],
    );
    listing(
        "${a} == 1L || ${a} == 2L || ${a} == 1L",
        "in a: long",
        Condition,
        expect![[r#"
            code "test" : bool
              slot 0 port a : long
              reads a
               0  load        a
               1  const       1L
               2  eq.long
               3  jump_if_true_else_pop -> 11
               4  load        a
               5  const       2L
               6  eq.long
               7  jump_if_true_else_pop -> 11
               8  load        a
               9  const       1L
              10  eq.long
        "#]],
    );
    listing(
        "${x} := 1 div 0",
        "out x: int",
        Expression,
        expect![[r#"
        code "test" : int
          slot 0 port x : int
          0  const       1
          1  const       0
          2  int_div.int
          3  dup
          4  store       x
        error[constant_evaluation] `1 div 0`: evaluating this constant expression fails: division by zero
    "#]],
    );
}

#[test]
fn more_lowering() {
    use Mode::*;
    // Statements without effects are dropped; the last one is the value.
    listing(
        "${a}; 1L; ${a} + 1L; ${a}",
        "in a: long",
        Value,
        expect![[r#"
        code "test" : long
          slot 0 port a : long
          reads a
          0  load        a
          1  const       1L
          2  add.long
          3  pop
          4  load        a
    "#]],
    );
    // `^` without effects evaluates in the usual order.
    listing(
        "${a} ^ ${b}",
        "in a: long, in b: long",
        Value,
        expect![[r#"
        code "test" : long
          slot 0 port a : long
          slot 1 port b : long
          reads a, b
          0  load        a
          1  load        b
          2  int_pow.long
    "#]],
    );
    listing(
        "${z.a.b} := 1L; ${z.a.c} := ${z.a.b}; ${z.a}",
        "",
        Value,
        expect![[r#"
        code "test" : struct{b: long, c: long}
          slot 0 local z : struct{a: struct{b: long, c: long}}
          0  const       1L
          1  store       z.a.b
          2  load        z.a.b
          3  store       z.a.c
          4  load        z.a
    "#]],
    );
    listing(
        "${t} && !${u}",
        "tunnel t: bool, in u: bool",
        Condition,
        expect![[r#"
        code "test" : bool
          slot 0 port t : bool
          slot 1 port u : bool
          reads t, u
          0  load        t
          1  jump_if_false_else_pop -> 4
          2  load        u
          3  not.bool
    "#]],
    );
    listing(
        "${e} := List (shared_p (1L)); ${e}",
        "out e: list",
        Expression,
        expect![[r#"
        code "test" : list
          slot 0 port e : list
          0  const       List (shared_p (1L))
          1  store       e
          2  load        e
    "#]],
    );
    listing(
        "true || ${b}",
        "in b: bool",
        Condition,
        expect![[r#"
        code "test" : bool
          slot 0 port b : bool
          0  const       true
    "#]],
    );
    listing(
        "false || ${b}",
        "in b: bool",
        Condition,
        expect![[r#"
        code "test" : bool
          slot 0 port b : bool
          reads b
          0  load        b
    "#]],
    );
    listing(
        "${i} := 3; ${i} ^ 2 - ${i} * ${i} div 2 mod 3",
        "in x: int",
        Value,
        expect![[r#"
        code "test" : int
          slot 0 port x : int
          slot 1 local i : int
           0  const       3
           1  store       i
           2  load        i
           3  const       2
           4  int_pow.int
           5  load        i
           6  load        i
           7  mul.int
           8  const       2
           9  int_div.int
          10  sub.int
    "#]],
    );
}

#[test]
fn parser_reported_errors_are_not_repeated() {
    types(
        &[
            "List (shared_p (${l}))",
            "Struct [a := 1, a := ${l}]",
            "Map [1 -> ${l}, ${l} -> 2]",
        ],
        expect![[r#"
            List (shared_p (${l}))
                error[non_constant_element] `shared_p (${l})`: the elements of a list literal must be constants
            Struct [a := 1, a := ${l}]
                error[non_literal_element] `${l}`: elements of `List`, `Set`, `Map` and `Struct` literals must be literals
                error[duplicate_field] `a`: duplicate field `a` [`a`: first given here]
            Map [1 -> ${l}, ${l} -> 2]
                error[non_literal_element] `${l}`: elements of `List`, `Set`, `Map` and `Struct` literals must be literals
                error[non_literal_element] `${l}`: elements of `List`, `Set`, `Map` and `Struct` literals must be literals
        "#]],
    );
}

/// Checks the structural invariants of a code: operands in range, spans for every
/// instruction, and (for error-free code) a consistent stack depth ending at one value.
fn code_invariants(code: &pnet_bundle::Code, ports: usize, error_free: bool) -> Result<(), String> {
    use pnet_bundle::Instr::*;
    let n = code.instrs.len();
    if code.spans.len() != n {
        return Err("spans".into());
    }
    if code.slots.len() < ports || code.reads.iter().any(|&r| usize::from(r) >= ports) {
        return Err("slots/reads".into());
    }
    for i in &code.instrs {
        let ok = match *i {
            Const(c) | MakeShared(c) => (c as usize) < code.consts.len(),
            Load(s) | Store(s) => usize::from(s) < code.slots.len(),
            LoadPath(s, p) | StorePath(s, p) => {
                usize::from(s) < code.slots.len() && (p as usize) < code.paths.len()
            }
            Jump(t) | JumpIfFalseElsePop(t) | JumpIfTrueElsePop(t) => (t as usize) <= n,
            _ => true,
        };
        if !ok {
            return Err(format!("operand out of range: {i:?}"));
        }
    }
    if !error_free {
        return Ok(());
    }
    // Abstract interpretation of the stack depth.
    let mut depth: Vec<Option<i64>> = vec![None; n + 1];
    let mut work = vec![(0usize, 0i64)];
    while let Some((pc, d)) = work.pop() {
        match depth[pc] {
            Some(old) if old == d => continue,
            Some(old) => return Err(format!("depth {old} vs {d} at {pc}")),
            None => depth[pc] = Some(d),
        }
        if pc == n {
            continue;
        }
        let (pops, pushes) = match code.instrs[pc] {
            Const(_) | Load(_) | LoadPath(..) => (0, 1),
            Store(_) | StorePath(..) | Pop => (1, 0),
            Dup => (1, 2),
            Unary(..) | MakeShared(_) => (1, 1),
            Binary(..) => (2, 1),
            Call(f) => (f.arity() as i64, 1),
            Jump(t) => {
                work.push((t as usize, d));
                continue;
            }
            JumpIfFalseElsePop(t) | JumpIfTrueElsePop(t) => {
                if d < 1 {
                    return Err(format!("underflow at {pc}"));
                }
                work.push((t as usize, d));
                work.push((pc + 1, d - 1));
                continue;
            }
        };
        if d < pops {
            return Err(format!("underflow at {pc}"));
        }
        work.push((pc + 1, d - pops + pushes));
    }
    match depth[n] {
        Some(1) => Ok(()),
        other => Err(format!("final depth {other:?}")),
    }
}

mod props {
    use proptest::prelude::*;

    use super::*;

    const LEAVES: &[&str] = &[
        "${a}",
        "${b}",
        "${p.x}",
        "${p}",
        "${o}",
        "${x}",
        "${z.q}",
        "1L",
        "2L",
        "0L",
        "true",
        "false",
        "1",
        "2.0",
        "List ()",
        "\"s\"",
        "[]",
        "Struct [x := 1L, y := 2L]",
    ];
    const BINARY: &[&str] = &[
        "+", "-", "*", "/", "div", "mod", "^", "**", "==", "!=", "<", ">=", "&&", "||", "|",
    ];
    const TARGETS: &[&str] = &["${x}", "${o}", "${z.q}", "${p.y}", "${p}", "${a}"];

    /// Syntactically valid programs (mostly ill-typed, some well-typed).
    fn expr() -> impl Strategy<Value = String> {
        let leaf = proptest::sample::select(LEAVES).prop_map(str::to_string);
        leaf.prop_recursive(5, 40, 3, |inner| {
            prop_oneof![
                (
                    inner.clone(),
                    proptest::sample::select(BINARY),
                    inner.clone()
                )
                    .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
                inner.clone().prop_map(|a| format!("!({a})")),
                inner.clone().prop_map(|a| format!("-({a})")),
                (proptest::sample::select(TARGETS), inner.clone())
                    .prop_map(|(t, a)| format!("({t} := {a})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("min ({a}, {b})")),
                inner
                    .clone()
                    .prop_map(|a| format!("stack_top (stack_push (List (), {a}))")),
                inner.clone().prop_map(|a| format!("shared_s ({a})")),
            ]
        })
    }

    /// Well-typed `long` expressions (over `a: long`, `p: point` and the local `x`).
    fn long_expr() -> impl Strategy<Value = String> {
        let leaf = proptest::sample::select(&["${a}", "${p.x}", "${x}", "1L", "7L", "-3L"][..])
            .prop_map(str::to_string);
        leaf.prop_recursive(5, 40, 2, |inner| {
            prop_oneof![
                (
                    inner.clone(),
                    proptest::sample::select(&["+", "-", "*", "div", "mod", "^"][..]),
                    inner.clone()
                )
                    .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("min ({a}, {b})")),
                inner.clone().prop_map(|a| format!("-({a})")),
                (
                    proptest::sample::select(&["${x}", "${p.y}", "${a}"][..]),
                    inner.clone()
                )
                    .prop_map(|(t, a)| format!("({t} := {a})")),
                inner
                    .clone()
                    .prop_map(|a| format!("stack_top (stack_push (List (), {a}))")),
            ]
        })
    }

    /// Well-typed `bool` expressions.
    fn bool_expr() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            proptest::sample::select(&["${b}", "true", "false"][..]).prop_map(str::to_string),
            (
                long_expr(),
                proptest::sample::select(&["<", "==", ">=", "!="][..]),
                long_expr()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
        ];
        leaf.prop_recursive(3, 20, 2, |inner| {
            prop_oneof![
                (
                    inner.clone(),
                    proptest::sample::select(&["&&", "||", ":and:", ":or:"][..]),
                    inner.clone()
                )
                    .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
                inner.clone().prop_map(|a| format!("!({a})")),
                (
                    proptest::sample::select(&["${c}", "${b}"][..]),
                    inner.clone()
                )
                    .prop_map(|(t, a)| format!("({t} := {a})")),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn well_typed_programs_lower_to_balanced_code(
            longs in proptest::collection::vec(long_expr(), 0..3),
            cond in bool_expr(),
        ) {
            let mut stmts = vec!["${x} := 0L".to_string()];
            stmts.extend(longs);
            stmts.push(cond);
            let src = stmts.join("; ");
            let ports = ports("in a: long, in b: bool, inout p: point");
            let (expr, parse_diags) = parse_str(&src);
            prop_assert!(parse_diags.is_empty(), "{src}: {parse_diags:?}");
            let env = Env { ports: &ports, mode: Mode::Expression, name: "prop".into(), expected: None };
            let (code, diags) = lower(&expr, &env);
            let errors: Vec<&Diagnostic> =
                diags.iter().filter(|d| d.is_error() && d.code != "constant_evaluation").collect();
            prop_assert!(errors.is_empty(), "{src}: {errors:?}");
            prop_assert_eq!(&code.result, &Type::Bool);
            if let Err(e) = code_invariants(&code, ports.len(), diags.is_empty()) {
                return Err(TestCaseError::fail(format!("{src:?}: {e}\n{code}")));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn lowering_never_panics_and_codes_are_well_formed(
            stmts in proptest::collection::vec(expr(), 0..4)
        ) {
            let src = stmts.join("; ");
            let ports = ports("in a: long, in b: bool, inout p: point, out o: long");
            let (expr, parse_diags) = parse_str(&src);
            for mode in [Mode::Expression, Mode::Condition, Mode::Value] {
                let env = Env { ports: &ports, mode, name: "prop".into(), expected: None };
                let (code, diags) = lower(&expr, &env);
                let error_free = parse_diags.is_empty() && !diags.iter().any(Diagnostic::is_error);
                if let Err(e) = code_invariants(&code, ports.len(), error_free) {
                    return Err(TestCaseError::fail(format!("{src:?} in {mode:?}: {e}\n{code}")));
                }
            }
            let _ = eval_const(&expr, &Type::Long);
        }
    }
}

/// GPI-Space's reading of expressions: word operators in call form, optional commas between
/// arguments, signs as part of number literals.
#[test]
fn gpispace_reading() {
    // As in GPI-Space's own example nets: `mod (${i}, 2UL)` in a condition.
    cond(
        "mod (${i}, 2UL) == 0UL :and: div (${i} 2UL) > 0UL",
        "in i: unsigned long",
        expect![[r#"
        bool
    "#]],
    );
    types(
        &[
            "min (0.0 0.0)",
            "max (${l} ${l})",
            "map_assign (Map [], 1 2L)",
            "mod (7, 3)",
            "-1U",
            "+1f",
            "-1UL + 1UL",
            "-9223372036854775808L",
        ],
        expect![[r#"
            min (0.0 0.0)  :  double
            max (${l} ${l})  :  long
            map_assign (Map [], 1 2L)  :  map
            mod (7, 3)  :  int
            -1U  :  unsigned int
            +1f  :  float
            -1UL + 1UL  :  unsigned long
            -9223372036854775808L
                error[invalid_literal] `9223372036854775808L`: invalid number: 9223372036854775808L is out of range for long
        "#]],
    );
    tokens(
        &[
            ("-1U", "uint"),
            ("+1f", "float"),
            ("List (-1U, +2)", "list"),
            ("mod (7, 3)", "int"),
            ("map_assign (Map [], 1 2L)", "map"),
            ("y(0x41)", "bytearray"),
        ],
        expect![[r#"
            -1U : uint  =  4294967295U
            +1f : float  =  1.0f
            List (-1U, +2) : list  =  List (4294967295U, 2)
            mod (7, 3) : int  =  1
            map_assign (Map [], 1 2L) : map  =  Map [1 -> 2L]
            y(0x41) : bytearray  =  y( 65)
        "#]],
    );
}

/// `floor`, `ceil` and `round` accept every integer type and return the argument unchanged.
#[test]
fn floor_ceil_round_on_integers() {
    types(
        &[
            "floor (${i})",
            "ceil (${ul})",
            "round (${bi})",
            "round (${u}) + 1U",
            "floor (${b})",
        ],
        expect![[r#"
            floor (${i})  :  int
            ceil (${ul})  :  unsigned long
            round (${bi})  :  bigint
            round (${u}) + 1U  :  unsigned int
            floor (${b})
                error[type_error] `floor (${b})`: `floor` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
        "#]],
    );
    tokens(
        &[
            ("floor (-7L)", "long"),
            ("ceil (4294967295U)", "uint"),
            ("round (5)", "int"),
        ],
        expect![[r#"
            floor (-7L) : long  =  -7L
            ceil (4294967295U) : uint  =  4294967295U
            round (5) : int  =  5
        "#]],
    );
}

/// GPI-Space folds constants while parsing, so the static argument kinds apply only to the
/// parts that involve a port or a local (spec: expressions.md, "Compatibility facts").
#[test]
fn constants_are_folded_before_typing() {
    tokens(
        &[
            ("sin (3)", "double"),
            ("cos (-5)", "double"),
            ("sqrt (4U)", "double"),
            ("log (2UL)", "double"),
            ("sqrt (-4)", "double"),
            ("!0", "int"),
            ("!1U", "unsigned int"),
            ("!5A", "bigint"),
            ("!0L", "long"),
            ("!0UL", "unsigned long"),
            ("int (true)", "int"),
            ("ulong (false)", "unsigned long"),
            ("double (true)", "double"),
            ("'a' + 'b'", "string"),
            ("min (\"b\", \"a\")", "string"),
            ("max ('a', 'z')", "char"),
            ("min (true, false)", "bool"),
            ("${x} := 3; sin (${x})", "double"),
        ],
        expect![[r#"
            sin (3) : double  =  0.1411200080598672
            cos (-5) : double  =  0.28366218546322625
            sqrt (4U) : double  =  2.0
            log (2UL) : double  =  0.6931471805599453
            sqrt (-4) : double
                error[constant_evaluation] `sqrt (-4)`: evaluating this constant expression fails: sqrt of a negative number
            !0 : int  =  -1
            !1U : unsigned int  =  4294967294U
            !5A : bigint  =  -6A
            !0L : long  =  -1L
            !0UL : unsigned long  =  18446744073709551615UL
            int (true) : int  =  1
            ulong (false) : unsigned long  =  0UL
            double (true) : double  =  1.0
            'a' + 'b' : string  =  "ab"
            min ("b", "a") : string  =  "a"
            max ('a', 'z') : char  =  'z'
            min (true, false) : bool  =  false
            ${x} := 3; sin (${x}) : double
                error[type_error] `sin (${x})`: `sin` expects float or double, found `int`
        "#]],
    );
    // With a port operand the static kinds apply.
    types(
        &[
            "sin (${i})",
            "!${i}",
            "int (${b})",
            "${c} + ${c}",
            "min (${s}, ${s})",
            "sin (3) + ${d}",
            "!0 + ${i}",
        ],
        expect![[r#"
            sin (${i})
                error[type_error] `sin (${i})`: `sin` expects float or double, found `int`
            !${i}
                error[type_error] `!${i}`: `!` expects bool, found `int`
            int (${b})
                error[type_error] `int (${b})`: `int` expects int, long, unsigned int, unsigned long, float, double or bigint, found `bool`
            ${c} + ${c}
                error[type_error] `${c} + ${c}`: `+` expects numbers or string, found `char`
            min (${s}, ${s})
                error[type_error] `min (${s}, ${s})`: `min` expects numbers, found `string`
            sin (3) + ${d}  :  double
            !0 + ${i}  :  int
        "#]],
    );
}

/// One bad operand gives one error, not one per enclosing operator.
#[test]
fn a_type_error_does_not_cascade() {
    let chain = format!("${{l}}{}", " / 1L".repeat(200));
    let ports = ports("in l: long");
    let (_, diags) = run(&chain, &ports, Mode::Value, None);
    assert_eq!(diags.matches("error[").count(), 1, "{diags}");
    types(
        &[
            "sin (${i}) + 1.0 + ${d}",
            "-(!${i}) * 2",
            "stack_push (stack_pop (${i}), 1)",
        ],
        expect![[r#"
            sin (${i}) + 1.0 + ${d}
                error[type_error] `sin (${i})`: `sin` expects float or double, found `int`
            -(!${i}) * 2
                error[type_error] `!${i}`: `!` expects bool, found `int`
            stack_push (stack_pop (${i}), 1)
                error[type_error] `stack_pop (${i})`: `stack_pop` expects `list` as argument 1, found `int`
        "#]],
    );
}

/// Container functions on mixed element types type as the union, like mixed literals.
#[test]
fn containers_of_mixed_elements_type_as_the_union() {
    tokens(
        &[
            ("stack_join (List (1), List (2L))", "list"),
            ("stack_push (List (1), 2L)", "list"),
            ("set_insert (Set {1}, 'c')", "set"),
            ("map_assign (Map [1 -> 2], 3L, \"x\")", "map"),
            ("map_assign (Map [], 1 2L)", "map"),
        ],
        expect![[r#"
            stack_join (List (1), List (2L)) : list  =  List (1, 2L)
            stack_push (List (1), 2L) : list  =  List (1, 2L)
            set_insert (Set {1}, 'c') : set  =  Set {1, 'c'}
            map_assign (Map [1 -> 2], 3L, "x") : map  =  Map [1 -> 2, 3L -> "x"]
            map_assign (Map [], 1 2L) : map  =  Map [1 -> 2L]
        "#]],
    );
    types(
        &[
            "stack_push (${ll}, 1)",
            "stack_join (${li}, List (1))",
            "set_insert (${se}, ${s})",
        ],
        expect![[r#"
            stack_push (${ll}, 1)  :  list
            stack_join (${li}, List (1))  :  list
            set_insert (${se}, ${s})  :  set
        "#]],
    );
}

/// Unknown variables and fields name the nearest port, variable or field (issue 22, item 4).
#[test]
fn unknown_names_suggest_the_nearest() {
    check_mode(
        "${acc} := ${limt} + ${p.yy}; ${total} := ${acc} + ${ac}",
        "in limit: long, in p: point, out total: long",
        Mode::Expression,
        expect![[r#"
            any
            error[unknown_variable] `limt`: unknown variable `limt`: not a port, and not assigned before (help: did you mean `${limit}`?)
            error[unknown_field] `yy`: `${p}` (type `point`) has no field `yy` (help: did you mean `y`?)
            error[unknown_variable] `ac`: unknown variable `ac`: not a port, and not assigned before (help: did you mean `${acc}`?)
        "#]],
    );
}

/// Type errors quote the operator as written: `:eq:` stays `:eq:` (issue 22, item 4).
#[test]
fn type_errors_quote_the_operator_as_written() {
    types(
        &["${l} :eq: ${s}", "${l} == ${s}", "${b} :and: ${l}"],
        expect![[r#"
        ${l} :eq: ${s}
            error[type_error] `${l} :eq: ${s}`: operands of `:eq:` must have the same type, found `long` and `string` [`${l}`: this is `long`] [`${s}`: this is `string`]
        ${l} == ${s}
            error[type_error] `${l} == ${s}`: operands of `==` must have the same type, found `long` and `string` [`${l}`: this is `long`] [`${s}`: this is `string`]
        ${b} :and: ${l}
            error[type_error] `${b} :and: ${l}`: operands of `:and:` must have the same type, found `bool` and `long` [`${b}`: this is `bool`] [`${l}`: this is `long`]
    "#]],
    );
}
