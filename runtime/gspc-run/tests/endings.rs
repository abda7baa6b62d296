//! Honest endings of `gspc-run`: a net that stops early gets a warning on stderr (exit 0, or 3
//! with --require-outputs), --json carries the ending, and in ports that nothing fills are
//! named before the run. Nets that run normally print nothing new.

use std::process::Output;

mod common;

use common::{example, gspc_run_command, stderr, stdout};

fn gspc_run(args: &[&str]) -> Output {
    gspc_run_command()
        .args(args)
        .env("PNET_JIT", "off")
        .output()
        .expect("run gspc-run")
}

const POINTS: [&str; 6] = [
    "-p",
    "points=Struct [x := 1L, y := 2L]",
    "-p",
    "points=Struct [x := 3L, y := 4L]",
    "-p",
    "scale=10L",
];

#[test]
fn examples_that_run_normally_print_nothing_on_stderr() {
    let cases: &[(&str, &[&str])] = &[
        ("hello/hello.xpnet", &["-p", "name=\"world\""]),
        ("countdown/countdown.xpnet", &["-p", "n=10L"]),
        ("collatz/collatz.xpnet", &["-p", "start=27UL"]),
        ("points/points.xpnet", &POINTS),
    ];
    for (net, puts) in cases {
        let mut args = vec![example(net), "--require-outputs".into()];
        args.extend(puts.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = gspc_run(&args);
        assert_eq!(o.status.code(), Some(0), "{net}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{net}");
    }
}

#[test]
fn a_forgotten_input_is_named_before_and_after_the_run() {
    let net = example("points/points.xpnet");
    let o = gspc_run(&[&net, POINTS[0], POINTS[1]]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "total = Struct [x := 0L, y := 0L]\n");
    assert_eq!(
        stderr(&o),
        "gspc-run: warning: in port `scale` got no value (-p scale=...) and nothing in the \
         net puts a token on it\n\
         gspc-run: warning: the net stopped with tokens left on: points (1); transition `add` \
         lacked a token on `scale`\n"
    );
    let o = gspc_run(&[&net, POINTS[0], POINTS[1], "--require-outputs", "--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(
        doc["ending"],
        serde_json::json!({
            "complete": false,
            "tokens_left": [{"place": "points", "tokens": 1}],
            "empty_outputs": [],
            "starved": [{"transition": "add", "place": "scale"}],
            "more_starved": 0,
        })
    );
    // Complete: the ending says so.
    let mut args = vec![net.as_str(), "--json"];
    args.extend(POINTS);
    let o = gspc_run(&args);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(doc["ending"]["complete"], true);
    assert_eq!(doc["ending"]["tokens_left"], serde_json::json!([]));

    // The loop of countdown feeds its place only once it holds a token.
    let o = gspc_run(&[&example("countdown/countdown.xpnet")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "gspc-run: warning: in port `n` got no value (-p n=...) and nothing in the net puts a \
         token on it\n\
         gspc-run: warning: the net stopped: out port `done` is empty\n"
    );
}

#[test]
fn an_unconnected_in_port_keeps_its_token() {
    let dir = std::env::temp_dir().join(format!("gspc-run-endings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let net = dir.join("unconnected.xpnet");
    std::fs::write(
        &net,
        r#"<defun name="u">
  <in name="a" type="long" place="a"/>
  <in name="b" type="long" place="b"/>
  <out name="r" type="long" place="r"/>
  <net>
    <place name="a" type="long"/>
    <place name="b" type="long"/>
    <place name="r" type="long"/>
    <transition name="copy">
      <defun><in name="x" type="long"/><out name="y" type="long"/>
        <expression>${y} := ${x}</expression></defun>
      <connect-in port="x" place="a"/><connect-out port="y" place="r"/>
    </transition>
  </net>
</defun>
"#,
    )
    .unwrap();
    let net = net.display().to_string();
    let o = gspc_run(&[&net, "-p", "a=1L", "-p", "b=2L", "-p", "b=3L"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "r = 1L\n");
    assert!(
        stderr(&o).ends_with("gspc-run: warning: the net stopped with tokens left on: b (2)\n"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
