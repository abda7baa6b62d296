//! Draws every net of GPI-Space's public corpus that compiles (with its workflow library and
//! examples folder on the search path) and renders the drawing with Graphviz's `dot -Tsvg`:
//! `dot` must accept every graph and produce a non-empty SVG. Prints the tally.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use pnet_tests::net_files;

fn require_dot() {
    match Command::new("dot").arg("-V").output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!("`dot -V` failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => panic!(
            "Graphviz's `dot` is needed by this test but cannot be run ({e}); install it \
             (`apt-get install graphviz`)"
        ),
    }
}

/// Runs `dot -Tsvg` on `graph`: the SVG, or what went wrong.
fn dot_svg(graph: &str) -> Result<String, String> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run dot: {e}"))?;
    let mut stdin = child.stdin.take().expect("stdin");
    let text = graph.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output().map_err(|e| format!("dot: {e}"))?;
    writer
        .join()
        .map_err(|_| "writer thread panicked".to_string())?
        .map_err(|e| format!("cannot write to dot: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if !out.status.success() || stderr.contains("Error") {
        return Err(format!("dot failed ({}): {stderr}", out.status));
    }
    let svg = String::from_utf8_lossy(&out.stdout).to_string();
    if !svg.contains("<svg") || !svg.contains("</svg>") {
        return Err(format!("dot wrote no SVG: {svg:?} {stderr}"));
    }
    Ok(svg)
}

#[test]
fn every_compiling_corpus_net_renders_with_dot() {
    if pnet_tests::corpus_absent() {
        return;
    }
    require_dot();
    let root = pnet_tests::gpispace();
    let options = pnet_sema::Options {
        search_paths: vec![root.join("share/xml/lib"), root.join("share/doc/example")],
        ..pnet_sema::Options::default()
    };
    let everything = pnet2dot::Options {
        signature: true,
        full_signatures: true,
        token: true,
        priority: true,
        show_virtual: true,
        tunnel_connection: true,
        ..pnet2dot::Options::default()
    };
    let (mut drawn, mut skipped, mut clusters) = (0, 0, 0);
    let mut failures = Vec::new();
    let files = net_files(&root);
    for path in &files {
        let out = pnet_sema::compile_path(path, &options);
        let Some(bundle) = out
            .bundle
            .filter(|_| !out.diagnostics.iter().any(|d| d.is_error()))
        else {
            skipped += 1;
            continue;
        };
        let sources =
            pnet2dot::Sources::new(out.files.iter().map(|f| Some(f.text.to_string())).collect());
        for opts in [&pnet2dot::Options::default(), &everything] {
            let r = pnet2dot::render(&bundle, &sources, opts, None);
            clusters += r.dot.matches("subgraph \"cluster_").count();
            if let Err(e) = dot_svg(&r.dot) {
                failures.push(format!("{}: {e}", path.display()));
            }
        }
        drawn += 1;
    }
    println!(
        "pnet2dot corpus: {} files, {drawn} drawn and rendered by dot (each twice: default \
         options and all options; {clusters} child-net clusters), {skipped} not drawn (not a \
         net or did not compile), {} failures",
        files.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "dot rejected drawings:\n{}",
        failures.join("\n")
    );
    assert!(
        drawn >= 100,
        "only {drawn} corpus nets compiled: is the corpus or the search path wrong?"
    );
}

/// Names and values with every character DOT cares about still make a graph `dot` accepts,
/// with the trace highlight and every option on.
#[test]
fn hostile_names_and_values_render_with_dot() {
    require_dot();
    let xml = r#"<defun name="n">
  <net>
    <place name="p" type="string">
      <token><value>"q\" \\ &lt;b&gt; {r|s} ]] -- // /* &amp;"</value></token>
    </place>
    <place name="c" type="string"/>
    <transition name="t">
      <defun><in name="x" type="string"/><out name="y" type="string"/>
        <expression>${y} := ${x}</expression>
        <condition>${x} != "&lt;\"&gt;"</condition>
      </defun>
      <connect-in port="x" place="p"/><connect-out port="y" place="c"/>
    </transition>
  </net>
</defun>"#;
    let out = pnet_sema::compile_source(
        Path::new("/nonexistent/h.xpnet"),
        xml,
        &pnet_sema::Options::default(),
    );
    let msgs: Vec<&str> = out.diagnostics.iter().map(|d| d.message.as_str()).collect();
    let mut bundle = out
        .bundle
        .unwrap_or_else(|| panic!("the test net does not compile: {msgs:?}"));
    let root = bundle.root.index();
    let nasty = "a\"b\\c\\\\<d>{e|f}[g]\n\\n\u{1}é;--\\";
    if let pnet_bundle::Body::Net(n) = &mut bundle.functions[root].body {
        n.places[0].name = nasty.into();
        n.transitions[0].name = nasty.into();
    }
    bundle.functions[root].name = Some(nasty.into());
    let sources =
        pnet2dot::Sources::new(out.files.iter().map(|f| Some(f.text.to_string())).collect());
    let trace = pnet2dot::parse_trace(&format!("[{}]", serde_json::json!(nasty))).unwrap();
    let options = pnet2dot::Options {
        signature: true,
        token: true,
        priority: true,
        ..pnet2dot::Options::default()
    };
    let r = pnet2dot::render(&bundle, &sources, &options, Some(&trace));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert!(r.dot.contains("trace #1"), "{}", r.dot);
    let svg = dot_svg(&r.dot).unwrap_or_else(|e| panic!("{e}\n{}", r.dot));
    assert!(svg.contains("{e|f}[g]"), "{svg}");
}
