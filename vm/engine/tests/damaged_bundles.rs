//! The engine on damaged bundles: every broken reference is refused at load ("bad bundle"),
//! and a few thousand random single-field changes of a bundle either fail the validation or
//! run without a panic (issue 20, item 4).

#[path = "../../bundle/tests/damage/mod.rs"]
mod damage;

use pnet_bundle::testing::{Rng, damage_byte};
use pnet_bundle::{Bundle, format};
use pnet_engine::{Engine, RunConfig, Step};

/// Loads `bundle` into an engine and runs at most 100 steps, failing module calls.
fn run_a_little(bundle: &Bundle) -> Result<(), String> {
    let mut engine = Engine::new(bundle, &RunConfig::default()).map_err(|e| e.to_string())?;
    engine
        .put_inputs(&damage::input())
        .map_err(|e| e.to_string())?;
    for _ in 0..100 {
        match engine.step().map_err(|e| e.to_string())? {
            Step::Fired => {}
            Step::Task(t) => return Err(engine.fail_task(t.id, "no workers").to_string()),
            Step::Waiting | Step::Done => break,
        }
    }
    Ok(())
}

#[test]
fn the_test_net_runs() {
    let b = damage::compile();
    run_a_little(&b).unwrap();
    let r = pnet_engine::run(&b, &damage::input(), &RunConfig::default()).unwrap();
    let pairs: Vec<String> = r
        .outputs
        .iter()
        .filter(|(port, _)| port == "pairs")
        .flat_map(|(_, tokens)| tokens.iter().map(ToString::to_string))
        .collect();
    assert_eq!(pairs.len(), 3, "{pairs:?}");
}

#[test]
fn every_broken_reference_is_a_bad_bundle() {
    let good = damage::compile();
    for (name, damage) in damage::damages() {
        let mut b = good.clone();
        damage(&mut b);
        let e = run_a_little(&b).expect_err(name);
        let expected = format!("bad bundle: {}", pnet_engine::validate(&b).unwrap_err());
        assert_eq!(e, expected, "{name}");
        let e = pnet_engine::run(&b, &damage::input(), &RunConfig::default()).unwrap_err();
        assert_eq!(e.to_string(), expected, "{name}");
    }
}

/// Random changes of one field (one byte of the encoded bundle: an index, a length, a
/// constant, a kind, a flag...): the bundle either does not decode, fails the validation, or
/// runs a few steps without a panic.
#[test]
fn random_field_damage_never_panics() {
    let good = postcard::to_stdvec(&damage::compile()).unwrap();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let (mut invalid, mut ran) = (0, 0);
    for _ in 0..3000 {
        let mut p = good.clone();
        damage_byte(&mut p, &mut rng);
        let Ok(b) = postcard::from_bytes::<Bundle>(&p) else {
            continue;
        };
        // The engine's own validation is the decoder's.
        let decoded = format::decode(&format::encode(&b).unwrap());
        assert_eq!(decoded.is_ok(), pnet_engine::validate(&b).is_ok());
        match decoded {
            Err(_) => invalid += 1,
            Ok(b) => {
                ran += 1;
                let _ = run_a_little(&b);
            }
        }
    }
    assert!(invalid > 0 && ran > 0, "{invalid} invalid, {ran} ran");
}
