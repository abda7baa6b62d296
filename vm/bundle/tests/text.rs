//! The IR text form: hand-written nets read, tricky bundles (values that literal syntax cannot
//! show, names that need quotes, struct types outside the table, spans outside the line
//! table) round-trip, broken texts give errors at the right line and column, and no text
//! makes the reader panic.

use std::sync::Arc;

use pnet_bundle::text::parse;
use pnet_bundle::*;
use pnet_stdlib::{StructType, Type, Value};

/// A counter written by hand: no file table, no locations, constants and paths left to the
/// reader.
const COUNTER: &str = r#"
# counts n down to zero
bundle root f1 main

function f0 step
  inout n : long
  expression c0

function f1 main
  in n : long = p0 n
  net
    place p0 n : long
      token 3L
    transition t0 step priority 2 -> f0
      in n <- p0 n
      out n -> p0 n
      condition c1

code c0 "expression of step" : long
  slot 0 port n : long
  0  load n
  1  const 1L
  2  sub.long
  3  store n
  4  load n

code c1 "condition of step" : bool
  slot 0 port n : long
  reads n
  0  load n
  1  const 0L
  2  gt.long
"#;

#[test]
fn a_hand_written_net_reads() {
    let b = parse(COUNTER).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(b.root, FunctionId(1));
    let Body::Net(net) = &b.function(b.root).body else {
        panic!("root is not a net");
    };
    assert_eq!(net.places[0].tokens, vec![Value::Long(3)]);
    let t = &net.transitions[0];
    assert_eq!(
        (t.priority, t.function, t.condition),
        (2, FunctionId(0), Some(CodeId(1)))
    );
    assert_eq!(t.connections.len(), 2);
    assert_eq!(t.connections[1].kind, ConnectKind::Out);
    // `const 1L` went into the constant table.
    assert_eq!(b.codes[0].consts, vec![Value::Long(1)]);
    assert_eq!(b.codes[0].instrs[1], Instr::Const(0));
    assert_eq!(b.codes[0].spans.len(), 5);
    assert_eq!(b.codes[1].reads, vec![0]);
    // And the printed form reads back the same.
    let again = parse(&b.to_string()).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(again, b);
}

fn tricky() -> Bundle {
    let mut b = parse(COUNTER).unwrap();
    b.files = vec![
        SourceFile::new(
            "a dir/net \"1\".xpnet",
            "<defun>\n  <net>\n\n</net>\n</defun>\n",
        ),
        // Repeated line starts: no line:column names these offsets.
        SourceFile {
            path: "odd.xpnet".into(),
            line_starts: vec![0, 5, 5, 9],
        },
    ];
    let point = StructType {
        name: Arc::from("point"),
        fields: vec![(Arc::from("x"), Type::Long), (Arc::from("y"), Type::Double)],
    };
    // A struct of the same name but other fields: it can only print inline.
    let other = StructType {
        name: Arc::from("point"),
        fields: vec![(Arc::from("z z"), Type::List(Box::new(Type::Int)))],
    };
    b.structs = vec![point.clone()];
    let Body::Net(net) = &mut b.functions[1].body else {
        unreachable!()
    };
    net.places[0].span = SourceSpan {
        file: SourceFileId(0),
        start: 10,
        end: 30,
    };
    net.transitions[0].span = SourceSpan {
        file: SourceFileId(1),
        start: 6,
        end: 7,
    };
    net.transitions[0].properties.push(Property {
        key: "a key".into(),
        value: "line\nbreak \\ \"q\"".into(),
    });
    net.transitions[0].requires.push(Require {
        key: "gpu".into(),
        mandatory: false,
    });
    let mut place = net.places[0].clone();
    place.name = "odd \"name\"".into();
    place.ty = Type::Any;
    place.tokens = vec![
        Value::Double(f64::NAN),
        Value::Double(f64::INFINITY),
        Value::Float(f32::NEG_INFINITY),
        Value::Int(i32::MIN),
        Value::Double(-0.0),
        Value::string("a @ b\n"),
        Value::Struct(vec![(Arc::from("x"), Value::Long(1))]),
        Value::List(vec![Value::Double(f64::NAN), Value::Int(1)]),
    ];
    place.properties.push(Property {
        key: "k".into(),
        value: String::new(),
    });
    net.places.push(place);
    let mut typed = net.places[0].clone();
    typed.name = "typed".into();
    typed.tokens = vec![];
    typed.ty = Type::Map(
        Box::new(Type::Struct(Arc::new(point))),
        Box::new(Type::Set(Box::new(Type::Struct(Arc::new(other))))),
    );
    net.places.push(typed);
    let mut shared = net.places[0].clone();
    shared.name = "s".into();
    shared.tokens = vec![];
    shared.ty = Type::Shared(Arc::from("clean up"));
    shared.shared_sink = true;
    net.places.push(shared);
    let code = &mut b.codes[0];
    // Duplicate constants and slot names: instructions name them by index.
    code.consts.push(Value::Long(1));
    code.consts.push(Value::Double(f64::NAN));
    code.instrs.push(Instr::Const(1));
    code.instrs.push(Instr::Const(2));
    code.instrs.push(Instr::Pop);
    code.slots.push(Slot {
        name: "n".into(),
        kind: SlotKind::Local,
        ty: Type::Any,
    });
    code.instrs.push(Instr::Load(1));
    code.paths.push(vec!["a".into(), "b c".into()]);
    code.instrs.push(Instr::LoadPath(0, 0));
    code.instrs.push(Instr::Pop);
    code.instrs.push(Instr::Pop);
    code.span = SourceSpan {
        file: SourceFileId(1),
        start: 5,
        end: 9,
    };
    code.spans = vec![code.span; code.instrs.len()];
    code.spans[1] = SourceSpan {
        file: SourceFileId(0),
        start: 0,
        end: 40,
    };
    b.functions[0].name = Some("with space".into());
    b.functions[0].body = Body::Modules {
        preferences: vec!["cpu".into(), "gpu".into()],
        modules: vec![Module {
            name: "lib".into(),
            signature: Signature {
                result: None,
                function: "run".into(),
                args: vec![],
            },
            target: Some("cpu".into()),
            pass_context: false,
            require_function_unloads_without_rest: true,
            require_module_unloads_without_rest: false,
            eureka_group: None,
            cincludes: vec!["x.hpp".into()],
            ld_flags: vec!["-lm".into()],
            cxx_flags: vec![],
            code: Some("int main() {\n  return \"\\n\";\n}\n".into()),
            span: SourceSpan::default(),
        }],
    };
    validate(&b).unwrap_or_else(|e| panic!("the tricky bundle is invalid: {e}"));
    b
}

#[test]
fn tricky_bundles_round_trip() {
    let b = tricky();
    let text = b.to_string();
    let back = parse(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    assert_eq!(back.to_string(), text);
    assert_eq!(back, b, "{text}");
    // The fallbacks are the ones documented.
    assert!(text.contains("token postcard("), "{text}");
    assert!(text.contains("@ odd.xpnet:3:2-3"), "{text}");
    assert!(
        text.contains("struct point { \"z z\": list<int> }"),
        "{text}"
    );
    assert!(text.contains("map<point, set<struct point"), "{text}");
    assert!(text.contains("const#1"), "{text}");
    assert!(text.contains("load        slot#1"), "{text}");
    assert!(text.contains("n path#0"), "{text}");
    assert!(text.contains("shared \"clean up\""), "{text}");
}

fn error_at(text: &str) -> (usize, usize, String) {
    match parse(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => (e[0].line, e[0].col, e[0].message.clone()),
    }
}

#[test]
fn errors_have_lines_and_columns() {
    let with = |from: &str, to: &str| {
        assert!(COUNTER.contains(from), "{from}");
        COUNTER.replacen(from, to, 1)
    };
    // Lines count from the text's first (empty) line.
    let (l, c, m) = error_at(&with("token 3L", "token 3Q"));
    assert_eq!((l, c), (13, 13), "{m}");
    let (l, c, m) = error_at(&with("inout n : long", "inout n : lung"));
    assert_eq!((l, c), (6, 13), "{m}");
    assert!(m.contains("unknown type `lung`"), "{m}");
    let (l, _, m) = error_at(&with("out n -> p0 n", "out m -> p0 n"));
    assert_eq!(l, 16, "{m}");
    assert!(m.contains("f0 has no port `m`"), "{m}");
    let (l, c, m) = error_at(&with("2  gt.long", "2  gt.lung"));
    assert_eq!((l, c), (32, 6), "{m}");
    let (l, c, m) = error_at(&with("place p0 n", "place p1 n"));
    assert_eq!((l, c), (12, 11), "{m}");
    assert!(m.contains("expected p0"), "{m}");
    let (l, _, m) = error_at(&with("      condition c1", "      condition c7"));
    assert_eq!(l, 9, "the function holding the transition: {m}");
    assert!(m.contains("invalid bundle"), "{m}");
    let (l, _, m) = error_at(&with("  4  load n", "  4  jump -> 9"));
    assert_eq!(l, 19, "the code: {m}");
    let (_, _, m) = error_at(&with("  expression c0\n", ""));
    assert!(m.contains("f0 has no body"), "{m}");
    let (l, c, m) = error_at(&with(
        "  slot 0 port n : long\n  0",
        "  slot 0 port n : long\n  frob\n  0",
    ));
    assert_eq!((l, c), (21, 3), "{m}");
    assert!(m.contains("unexpected `frob`"), "{m}");
    let (_, _, m) = error_at("");
    assert!(m.contains("bundle root"), "{m}");
}

#[test]
fn no_text_makes_the_reader_panic() {
    let text = tricky().to_string();
    let bounds: Vec<usize> = (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    // Every prefix, and the text with every 7th character removed in turn.
    for &i in &bounds {
        let _ = parse(&text[..i]);
    }
    for w in bounds.windows(2).step_by(7) {
        let cut = format!("{}{}", &text[..w[0]], &text[w[1]..]);
        let _ = parse(&cut);
    }
    // Every line removed, and every pair of neighbouring lines swapped.
    let lines: Vec<&str> = text.lines().collect();
    for i in 0..lines.len() {
        let mut without = lines.clone();
        without.remove(i);
        let _ = parse(&without.join("\n"));
        if i + 1 < lines.len() {
            let mut swapped = lines.clone();
            swapped.swap(i, i + 1);
            let _ = parse(&swapped.join("\n"));
        }
    }
    // Deep types are refused, not recursed into.
    let deep = format!(
        "bundle root f0\nfunction f0\n  in x : {}long{}\n  expression c0\n",
        "list<".repeat(100_000),
        ">".repeat(100_000)
    );
    let (_, _, m) = error_at(&deep);
    assert!(m.contains("nested too deeply"), "{m}");
}

#[test]
fn large_codes_read_back_in_linear_time() {
    // 20,000 distinct constants and as many loads by name: a quadratic lookup would take
    // seconds here.
    let mut b = parse(COUNTER).unwrap();
    let code = &mut b.codes[0];
    for i in 0..20_000 {
        code.consts.push(Value::Long(1000 + i));
        code.instrs.push(Instr::Const(code.consts.len() as u32 - 1));
        code.instrs.push(Instr::Pop);
        code.slots.push(Slot {
            name: format!("v{i}"),
            kind: SlotKind::Local,
            ty: Type::Long,
        });
    }
    code.spans = vec![SourceSpan::default(); code.instrs.len()];
    let start = std::time::Instant::now();
    let text = b.to_string();
    let back = parse(&text).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(back, b);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}
