//! `pnetput` and `pnetget` on damaged files: a bundle whose checksum is right but whose
//! references do not fit together, bytes after a file's payload, random damage. They exit
//! with status 1 and a message ("bad bundle: ..."), never with a panic (issue 20, item 4).

#[path = "../../bundle/tests/damage/mod.rs"]
mod damage;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pnet_bundle::format;
use pnet_bundle::result::{OutputPort, RunOutputs};
use pnet_bundle::testing::{Rng, damaged, deep_result};
use pnet_stdlib::{Type, Value};
use pnet_tokens::Target;

/// A scratch folder of this test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pnet-tokens-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pnetput(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pnetput"))
        .args(args)
        .output()
        .unwrap()
}

fn pnetget(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pnetget"))
        .args(args)
        .output()
        .unwrap()
}

/// The run failed with status 1 and a message containing `what`, without a panic.
fn refused(out: &Output, what: &str, case: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{case}: {stderr}");
    assert!(!stderr.contains("panicked"), "{case}: {stderr}");
    assert!(stderr.contains(what), "{case}: {stderr}");
    stderr
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn pnetput_puts_tokens_into_the_test_net() {
    let dir = Scratch::new("good");
    let good = dir.file("good.pnet", &format::encode(&damage::compile()).unwrap());
    let out = dir.0.join("out.pnet");
    let o = pnetput(&[path(&good), "-o", path(&out), "-p", "n=3L"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let b = format::decode(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(pnet_tokens::listing(&b), "in n : long = [3L]\n");
}

#[test]
fn pnetput_refuses_every_broken_reference() {
    let dir = Scratch::new("broken");
    let good = damage::compile();
    let out = dir.0.join("out.pnet");
    for (name, damage) in damage::damages() {
        let mut b = good.clone();
        damage(&mut b);
        let bad = dir.file("bad.pnet", &format::encode(&b).unwrap());
        let o = pnetput(&[path(&bad), "-o", path(&out), "-p", "n=3L"]);
        let e = refused(&o, "bad bundle: ", name);
        assert!(
            e.starts_with(&format!("pnetput: {}: bad bundle: ", path(&bad))),
            "{e}"
        );
        refused(&pnetput(&["-l", path(&bad)]), "bad bundle: ", name);
        assert!(!out.exists(), "{name}: no output is written");
    }
}

/// `load_net`, through which `gspc-run`, `gspc submit`, `pnetv` and `pnet2dot` read a net,
/// decodes with the same validation.
#[test]
fn every_reader_refuses_every_broken_reference() {
    let good = damage::compile();
    let options = pnet_sema::Options::default();
    let load = |bytes: &[u8]| {
        pnetc::load_net(
            Path::new("bad.pnet"),
            bytes,
            &options,
            pnetc::ColorMode::Never,
        )
        .map(|(b, _)| b)
    };
    assert_eq!(load(&format::encode(&good).unwrap()).unwrap(), good);
    for (name, damage) in damage::damages() {
        let mut b = good.clone();
        damage(&mut b);
        let bytes = format::encode(&b).unwrap();
        let e = load(&bytes).expect_err(name);
        let message = format::decode(&bytes).unwrap_err().to_string();
        assert_eq!(e, format!("bad.pnet: {message}"), "{name}");
        assert!(message.starts_with("bad bundle: "), "{name}: {message}");
    }
    let mut trailing = format::encode(&good).unwrap();
    trailing.push(0);
    assert_eq!(
        load(&trailing).unwrap_err(),
        "bad.pnet: bundle has 1 trailing byte after its payload: the file is corrupt"
    );
}

#[test]
fn pnetput_refuses_trailing_bytes() {
    let dir = Scratch::new("trailing");
    let mut bytes = format::encode(&damage::compile()).unwrap();
    bytes.extend_from_slice(b"junk");
    let bad = dir.file("bad.pnet", &bytes);
    let e = refused(&pnetput(&["-l", path(&bad)]), "trailing", "trailing bytes");
    assert_eq!(
        e,
        format!(
            "pnetput: {}: bundle has 4 trailing bytes after its payload: the file is corrupt\n",
            path(&bad)
        )
    );
}

fn outputs() -> RunOutputs {
    RunOutputs {
        net: "damage.pnet".into(),
        ports: vec![OutputPort {
            name: "done".into(),
            ty: Type::Control,
            tokens: vec![Value::Control],
        }],
    }
}

#[test]
fn pnetget_refuses_trailing_bytes_and_damaged_files() {
    let dir = Scratch::new("results");
    let bytes = outputs().encode().unwrap();
    let good = dir.file("good.result", &bytes);
    let o = pnetget(&[path(&good)]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "done = []\n");

    let mut trailing = bytes.clone();
    trailing.push(b'\n');
    let bad = dir.file("trailing.result", &trailing);
    let e = refused(&pnetget(&[path(&bad)]), "trailing", "trailing bytes");
    assert_eq!(
        e,
        format!(
            "pnetget: {}: result file has 1 trailing byte after its payload: the file is corrupt\n",
            path(&bad)
        )
    );
    // A bundle is not a result file, nor the other way round.
    let bundle = dir.file("net.pnet", &format::encode(&damage::compile()).unwrap());
    refused(
        &pnetget(&[path(&bundle)]),
        "not a pnet result file",
        "bundle",
    );
    refused(
        &pnetput(&["-l", path(&good)]),
        "not a pnet bundle",
        "result",
    );
}

/// A result file whose token nests 100,000 lists deep: an error, not a stack overflow.
#[test]
fn pnetget_refuses_deep_nesting() {
    let bytes = deep_result(100_000);
    let dir = Scratch::new("deep");
    let bad = dir.file("deep.result", &bytes);
    let e = refused(
        &pnetget(&[path(&bad)]),
        "nested deeper than",
        "deep nesting",
    );
    assert_eq!(
        e,
        format!(
            "pnetget: {}: result file cannot be decoded: nested deeper than {} levels\n",
            path(&bad),
            pnet_bundle::nesting::MAX_NESTING
        )
    );
}

/// What `pnetput` does with a bundle, in process, over a few thousand random damages; then
/// the binaries on a few of them.
#[test]
fn random_damage_never_panics() {
    let bundle = format::encode(&damage::compile()).unwrap();
    let result = outputs().encode().unwrap();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for _ in 0..2000 {
        let bytes = damaged(&bundle, &mut rng);
        if let Ok(mut b) = format::decode(&bytes) {
            let _ = pnet_tokens::listing(&b);
            for target in [Target::Port("n".into()), Target::Place("counter".into())] {
                let _ = pnet_tokens::put(&mut b, &target, Value::Long(1));
            }
            format::encode(&b).unwrap();
        }
        if let Ok(o) = RunOutputs::decode(&damaged(&result, &mut rng)) {
            let _ = pnet_tokens::text(&o, &[]);
            let _ = pnet_tokens::json(&o, &[]);
        }
    }
    let dir = Scratch::new("random");
    let out = dir.0.join("out.pnet");
    for i in 0..10 {
        let bad = dir.file("bad.pnet", &damaged(&bundle, &mut rng));
        let o = pnetput(&[path(&bad), "-o", path(&out), "-p", "n=1L"]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{i}: {stderr}");
        assert!(!stderr.contains("panicked"), "{i}: {stderr}");
        let bad = dir.file("bad.result", &damaged(&result, &mut rng));
        let o = pnetget(&[path(&bad), "--json"]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{i}: {stderr}");
        assert!(!stderr.contains("panicked"), "{i}: {stderr}");
    }
}
