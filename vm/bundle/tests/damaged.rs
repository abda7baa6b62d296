//! Damaged bundles and result files: a bundle whose checksum is right but whose references
//! do not fit together, and bytes after a file's payload, are refused by the decoding every
//! reader uses, with a message that says what is wrong and where (issue 20, item 4).

mod damage;

use expect_test::expect;
use pnet_bundle::format::{self, BUNDLE, BundleError};
use pnet_bundle::result::{OutputPort, RESULT, RunOutputs};
use pnet_bundle::testing::{Rng, damage_byte, deep_result, frame, payload};
use pnet_stdlib::{Type, Value};

#[test]
fn the_test_net_is_well_formed() {
    let b = damage::compile();
    assert_eq!(pnet_bundle::validate(&b), Ok(()));
    let bytes = format::encode(&b).unwrap();
    assert_eq!(format::decode(&bytes).unwrap(), b);
    // Our framing is the format's.
    assert_eq!(frame(BUNDLE.magic, BUNDLE.version, payload(&bytes)), bytes);
}

#[test]
fn every_broken_reference_is_refused_with_what_and_where() {
    let good = damage::compile();
    let mut report = String::new();
    for (name, damage) in damage::damages() {
        let mut b = good.clone();
        damage(&mut b);
        assert_ne!(b, good, "{name} changes the bundle");
        let bytes = format::encode(&b).unwrap();
        let e = format::decode(&bytes).expect_err(name);
        let BundleError::Invalid { message, .. } = &e else {
            panic!("{name}: {e}")
        };
        assert_eq!(pnet_bundle::validate(&b).unwrap_err(), *message, "{name}");
        report.push_str(&format!("{name}: {e}\n"));
    }
    expect![[r#"
        root function: bad bundle: the root function 40 does not exist, the bundle has 6 functions
        transition's function: bad bundle: function 5 (`main`): transition 0 (`step`): its function is function 99, the bundle has 6 functions
        connection's port: bad bundle: function 5 (`main`): transition 0 (`step`): connection 0 names port 17, its function has 3 ports
        connection's place: bad bundle: function 5 (`main`): transition 0 (`step`): connection 0 names place 17, the net has 6 places
        connection's direction: bad bundle: function 5 (`main`): transition 0 (`step`): connection 2 (In) names port 1 (`p`), whose direction is Out
        connection in a child net: bad bundle: function 3 (anonymous): transition 0 (`dec`): connection 0 names place 9, the net has 3 places
        response's port: bad bundle: function 5 (`main`): transition 0 (`step`): response 0 (`to`) names port 9, its function has 3 ports
        eureka port: bad bundle: function 5 (`main`): transition 0 (`step`): eureka connection 0 names port 9, its function has 3 ports
        condition's code: bad bundle: function 5 (`main`): transition 0 (`step`): the condition is code 999, the bundle has 6 codes
        condition's slots: bad bundle: function 5 (`main`): transition 0 (`step`): the condition is code 1 (condition of step) with 0 slots, the function has 3 ports
        place-map's virtual place: bad bundle: function 5 (`main`): transition 1 (`waiter`): place-map 0 names virtual place 9, the child net has 3 places
        place-map's real place: bad bundle: function 5 (`main`): transition 1 (`waiter`): place-map 0 names place 9, the net has 6 places
        place-map of a module call: bad bundle: function 5 (`main`): transition 2 (`call`): place-map 0 maps a virtual place, its function is not a net
        port's place: bad bundle: function 5 (`main`): port 0 (`n`): is bound to place 42, the net has 6 places
        port's place outside a net: bad bundle: function 0 (anonymous): port 0 (`n`): is bound to place 0, the function is not a net
        expression's code: bad bundle: function 0 (anonymous): the expression is code 999, the bundle has 6 codes
        code's constant: bad bundle: code 0 (expression of step): instruction 3 (Const(99)) names constant 99, the code has 1 constant
        code's slot: bad bundle: code 0 (expression of step): instruction 0 (Load(99)) names slot 99, the code has 3 slots
        code's field path: bad bundle: code 0 (expression of step): instruction 1 (StorePath(1, 99)) names field path 99, the code has 2 paths
        code's jump: bad bundle: code 1 (condition of step): instruction 3 (JumpIfFalseElsePop(999)) names jump target 999, the code has 7 instructions
        code's shared place name: bad bundle: code 0 (expression of step): instruction 3 (MakeShared(0)) names constant 0 = 1L as a shared place name, not a string
        code's reads: bad bundle: code 1 (condition of step): it reads slot 99, the code has 3 slots
        code's spans: bad bundle: code 1 (condition of step): 6 spans for 7 instructions
        instruction's span: bad bundle: code 1 (condition of step): the span of instruction 0 names source file 7, the bundle has 1 file
        transition's span: bad bundle: function 5 (`main`): transition 0 (`step`): the span names source file 7, the bundle has 1 file
        reversed span: bad bundle: function 5 (`main`): place 0 (`counter`): the span starts at 9 after its end 3
        source file: bad bundle: source file 0 (`damage.xpnet`): its line starts do not begin at 0 in increasing order
        memory buffer's size: bad bundle: function 4 (anonymous): the size of memory buffer 0 (`buf`) is code 999, the bundle has 6 codes
        memory transfer's range: bad bundle: function 4 (anonymous): the local range of memory transfer 0 is code 999, the bundle has 6 codes
        module's eureka group: bad bundle: function 4 (anonymous): the eureka group of module `m` is code 999, the bundle has 6 codes
        empty modules: bad bundle: function 4 (anonymous): its `modules` body has no module
        generator's type: bad bundle: function 5 (`main`): place 1 (`pairs`): is a generator of type pair, which has no generator
    "#]].assert_eq(&report);
}

#[test]
fn trailing_bytes_after_a_bundle_are_refused() {
    let bytes = format::encode(&damage::compile()).unwrap();
    // Appended to the file.
    let mut appended = bytes.clone();
    appended.push(0);
    let e = format::decode(&appended).unwrap_err();
    assert!(
        matches!(e, BundleError::TrailingBytes { count: 1, .. }),
        "{e}"
    );
    expect!["bundle has 1 trailing byte after its payload: the file is corrupt"]
        .assert_eq(&e.to_string());
    appended.extend_from_slice(b"more");
    expect!["bundle has 5 trailing bytes after its payload: the file is corrupt"]
        .assert_eq(&format::decode(&appended).unwrap_err().to_string());
    // Inside the payload, after the bundle, with the length and checksum covering them.
    let mut inner = payload(&bytes).to_vec();
    inner.extend_from_slice(&[1, 2, 3]);
    let e = format::decode(&frame(BUNDLE.magic, BUNDLE.version, &inner)).unwrap_err();
    assert!(
        matches!(e, BundleError::TrailingBytes { count: 3, .. }),
        "{e}"
    );
    expect!["bundle has 3 trailing bytes after its payload: the file is corrupt"]
        .assert_eq(&e.to_string());
}

#[test]
fn trailing_bytes_after_a_result_file_are_refused() {
    let outputs = RunOutputs {
        net: "n.pnet".into(),
        ports: vec![OutputPort {
            name: "sum".into(),
            ty: Type::Long,
            tokens: vec![Value::Long(3)],
        }],
    };
    let bytes = outputs.encode().unwrap();
    assert_eq!(RunOutputs::decode(&bytes).unwrap(), outputs);
    let mut appended = bytes.clone();
    appended.extend_from_slice(b"\n");
    let e = RunOutputs::decode(&appended).unwrap_err();
    expect!["result file has 1 trailing byte after its payload: the file is corrupt"]
        .assert_eq(&e.to_string());
    let mut inner = payload(&bytes).to_vec();
    inner.push(0);
    let e = RunOutputs::decode(&frame(RESULT.magic, RESULT.version, &inner)).unwrap_err();
    assert!(
        matches!(e, BundleError::TrailingBytes { count: 1, .. }),
        "{e}"
    );
}

/// Random changes of one payload byte, with a correct checksum: decoding never panics, and a
/// bundle it accepts can be listed, located and re-encoded.
#[test]
fn random_payload_damage_never_panics() {
    let bytes = format::encode(&damage::compile()).unwrap();
    let good = payload(&bytes).to_vec();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut refused, mut accepted) = (0, 0);
    for _ in 0..3000 {
        let mut p = good.clone();
        damage_byte(&mut p, &mut rng);
        match format::decode(&frame(BUNDLE.magic, BUNDLE.version, &p)) {
            Err(_) => refused += 1,
            Ok(b) => {
                accepted += 1;
                let _ = b.to_string();
                let _ = pnet_bundle::text::bytecode_listing(&b);
                for f in &b.functions {
                    let _ = b.location(f.span);
                }
                format::decode(&format::encode(&b).unwrap()).unwrap();
            }
        }
    }
    assert!(
        refused > 0 && accepted > 0,
        "{refused} refused, {accepted} accepted"
    );
}

/// Nesting as deep as the literal syntax allows decodes; much deeper is an error, not a
/// stack overflow, even on a 2 MiB thread stack (a runtime's worker thread).
#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    let decoded = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let fits = RunOutputs::decode(&deep_result(pnet_stdlib::literal::MAX_LITERAL_DEPTH));
            let deep = RunOutputs::decode(&deep_result(100_000));
            (
                fits.map(|o| o.ports[0].tokens[0].to_string().len()),
                deep.map(|_| ()),
            )
        })
        .unwrap()
        .join()
        .unwrap();
    // `List (` and `)` per level around `[]`.
    let depth = pnet_stdlib::literal::MAX_LITERAL_DEPTH;
    assert_eq!(decoded.0.unwrap(), depth * "List ()".len() + 2);
    let e = decoded.1.unwrap_err();
    expect!["result file cannot be decoded: nested deeper than 512 levels"]
        .assert_eq(&e.to_string());
}
