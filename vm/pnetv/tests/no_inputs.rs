//! A transition without input connections is never enabled (GPI-Space; spec
//! `semantics.md`, "Firing"): the engine and `pnetv`'s coloured explorer agree on nets where
//! such transitions sit next to ordinary ones.

use std::path::Path;

use pnet_stdlib::Value;
use pnet_verify::coloured::{ColouredOptions, Tok, explore_bundle};
use pnetc::{ColorMode, load_net};

/// A root net with an in port `i` feeding `copy` to out port `o`; `src` (no connection but
/// an out), `gated` (a condition, no input) and `counted` (only a number-of-tokens input,
/// which is an input connection: it fires once, onto out port `c`) write to `o` too.
const NET: &str = r#"<defun name="main">
  <in name="i" type="long" place="i"/>
  <out name="o" type="long" place="o"/>
  <out name="c" type="long" place="c"/>
  <net>
    <place name="i" type="long"/>
    <place name="o" type="long"/>
    <place name="c" type="long"/>
    <transition name="copy">
      <defun><in name="x" type="long"/><out name="y" type="long"/>
        <expression>${y} := ${x}</expression></defun>
      <connect-in port="x" place="i"/><connect-out port="y" place="o"/>
    </transition>
    <transition name="src">
      <defun><out name="y" type="long"/><expression>${y} := 7L</expression></defun>
      <connect-out port="y" place="o"/>
    </transition>
    <transition name="gated">
      <defun><out name="y" type="long"/><expression>${y} := 8L</expression></defun>
      <condition>true</condition>
      <connect-out port="y" place="o"/>
    </transition>
    <transition name="counted">
      <defun><in name="n" type="unsigned long"/><out name="y" type="long"/>
        <expression>${y} := 9L</expression></defun>
      <condition>${n} :eq: 0UL</condition>
      <connect-number-of-tokens port="n" place="c"/>
      <connect-out port="y" place="c"/>
    </transition>
  </net>
</defun>
"#;

#[test]
fn transitions_without_inputs_never_fire_in_engine_and_explorer() {
    let (b, _) = load_net(
        Path::new("/nonexistent/no_inputs.xpnet"),
        NET.as_bytes(),
        &pnet_sema::Options::default(),
        ColorMode::Never,
    )
    .unwrap();
    let inputs = vec![("i".to_string(), vec![Value::Long(1)])];
    let config = pnet_engine::RunConfig {
        max_firings: Some(100),
        ..pnet_engine::RunConfig::default()
    };
    let r = pnet_engine::run(&b, &inputs, &config).unwrap();
    let mut got: Vec<String> = r
        .outputs
        .iter()
        .flat_map(|(p, vs)| vs.iter().map(move |v| format!("{p}={v}")))
        .collect();
    got.sort();
    let (_, res) = explore_bundle(
        &b,
        "no_inputs",
        &inputs,
        &ColouredOptions {
            max_states: 1000,
            max_tokens: Some(10),
            ..ColouredOptions::default()
        },
    )
    .unwrap();
    let ends: Vec<Vec<String>> = res
        .end_outputs
        .iter()
        .map(|end| {
            let mut v: Vec<String> = end
                .iter()
                .flat_map(|(p, ts)| ts.iter().map(move |t: &Tok| format!("{p}={t}")))
                .collect();
            v.sort();
            v
        })
        .collect();
    assert_eq!(got, ["c=9L", "o=1L"]);
    assert_eq!(ends, [got]);
}
