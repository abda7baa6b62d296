//! C++ modules end to end: GPI-Space's module-based example nets compiled with `pnetc
//! --build-modules` (the real C++ compiler), run with `gspc-run --module-path` (or on a
//! `gspc` runtime when the test must know a memory handle before it submits), their outputs
//! checked. Headers and libraries the corpus lacks are in `tests/cxx/` (see its README).
//!
//! The nets with memory transfers get their global memory from `gspc-run --alloc PORT=SIZE`
//! (read back with `--dump PORT=FILE`) or from `gspc alloc`/`mem-write`/`mem-read`; what
//! proves a run right is listed at each test (modules that throw on wrong data, files the
//! modules write, memory contents compared with what the test computes).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pnet_tests::{bin, build_packages, gpispace, gpispace_lib, workspace_root};

/// A fresh temporary folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pnet-cxx-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn example(rel: &str) -> PathBuf {
    gpispace().join("share/doc/example").join(rel)
}

fn fixtures(rel: &str) -> PathBuf {
    workspace_root().join("tests/cxx").join(rel)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn arg(p: &Path) -> String {
    p.display().to_string()
}

/// Builds pnetc, gspc-run and gspc-worker (once), for runs of these tests alone.
fn tools() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        build_packages(&["pnetc", "gspc-run", "pnet-worker"]);
    });
}

/// `pnetc NET -I <workflow library> -I <examples> --build-modules DIR EXTRA...`, the modules
/// built without optimization (a third faster to compile; these tests do not need speed).
fn pnetc_build(net: &Path, dir: &Path, extra: &[String]) -> Output {
    tools();
    Command::new(bin("pnetc"))
        .arg(net)
        .arg("-I")
        .arg(gpispace_lib())
        .arg("-I")
        .arg(example(""))
        .arg("--build-modules")
        .arg(dir)
        .arg("--gen-cxxflags=-O0")
        .args(extra)
        .output()
        .unwrap()
}

/// Builds the modules of `net` into `dir`, failing the test with pnetc's messages.
fn build_modules(net: &Path, dir: &Path, extra: &[String]) {
    let o = pnetc_build(net, dir, extra);
    assert!(
        o.status.success(),
        "pnetc --build-modules failed:\n{}",
        text(&o.stderr)
    );
}

/// `gspc-run NET --module-path DIR --topology T -p PUT...`, which must succeed; its output.
fn run(net: &Path, dir: &Path, topology: &str, puts: &[&str]) -> Output {
    run_with(net, dir, topology, puts, &[])
}

/// `gspc-run NET ... EXTRA...` (e.g. `--alloc`, `--dump`), which must succeed; its output.
fn run_with(net: &Path, dir: &Path, topology: &str, puts: &[&str], extra: &[String]) -> Output {
    let o = try_run(net, dir, topology, puts, extra);
    assert!(
        o.status.success(),
        "gspc-run {} failed:\n{}\n{}",
        net.display(),
        text(&o.stdout),
        text(&o.stderr)
    );
    o
}

/// `gspc-run NET ... EXTRA...`, successful or not.
fn try_run(net: &Path, dir: &Path, topology: &str, puts: &[&str], extra: &[String]) -> Output {
    tools();
    let mut cmd = Command::new(bin("gspc-run"));
    cmd.arg(net)
        .arg("-I")
        .arg(gpispace_lib())
        .arg("-I")
        .arg(example(""))
        .arg("--module-path")
        .arg(dir)
        .args(["--topology", topology, "--no-progress"])
        .args(extra)
        .env_remove("PNET_MODULE_PATH");
    for p in puts {
        cmd.args(["-p", p]);
    }
    cmd.output().unwrap()
}

/// The `PORT = VALUE` lines of a run for the output ports `ports` (module code prints to
/// the same standard output).
fn results(o: &Output, ports: &[&str]) -> Vec<String> {
    text(&o.stdout)
        .lines()
        .filter(|l| ports.iter().any(|p| l.starts_with(&format!("{p} = "))))
        .map(str::to_string)
        .collect()
}

/// How many lines of a run's standard output are `line`.
fn count_lines(o: &Output, line: &str) -> usize {
    text(&o.stdout).lines().filter(|l| *l == line).count()
}

#[test]
fn sum_and_sum_many_run_with_their_module() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("sum");
    let inc = format!("--gen-cxxflags=-I{}", arg(&fixtures("sum")));
    build_modules(&example("sum/sum_many.xpnet"), &dir, &[inc]);
    assert!(dir.join("libsum.so").exists());

    let o = run(
        &example("sum/sum_many.xpnet"),
        &dir,
        "worker:2",
        &[
            "p=Struct [x := 1L, y := 2L]",
            "p=Struct [x := -10L, y := 4L]",
            "p=Struct [x := 9000000000L, y := 1L]",
            "p=Struct [x := 0L, y := 0L]",
        ],
    );
    assert_eq!(
        results(&o, &["s"]),
        vec!["s = -6L", "s = 0L", "s = 3L", "s = 9000000001L"]
    );

    // sum.xpnet alone: its root is the module, run once per pair put.
    let o = run(
        &example("sum/sum.xpnet"),
        &dir,
        "worker:1",
        &[
            "p=Struct [x := 20L, y := 22L]",
            "p=Struct [x := -1L, y := -2L]",
        ],
    );
    assert_eq!(results(&o, &["s"]), vec!["s = -3L", "s = 42L"]);
    // The expression variant's root is an expression: no workers needed.
    let o = run(
        &example("sum/sum_expr.xpnet"),
        &dir,
        "worker:1",
        &["p=Struct [x := 5L, y := 6L]"],
    );
    assert_eq!(results(&o, &["s"]), vec!["s = 11L"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hello_world_and_hello_many_call_a_cpp_a_c_and_a_shared_library() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("hello");
    // libhello_util.so beside the module: the module links it with -Wl,-rpath='$$ORIGIN'.
    let o = Command::new("c++")
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join("libhello_util.so"))
        .arg(fixtures("hello_world/hello_util.cpp"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    build_modules(
        &example("hello_world/hello_many.xpnet"),
        &dir,
        &[
            format!("--gen-cxxflags=-I{}", arg(&fixtures("hello_world"))),
            format!("--gen-ldflags=-L{}", arg(&dir)),
        ],
    );

    let o = run(
        &example("hello_world/hello_many.xpnet"),
        &dir,
        "worker:2",
        &["in=[]", "in=[]", "in=[]"],
    );
    assert_eq!(
        results(&o, &["out"]),
        vec!["out = []", "out = []", "out = []"]
    );
    for line in [
        "*** Calling 3 versions of hello...",
        "hello world (C++ library)",
        "hello world (C library)",
        "hello world (shared object)",
        "*** ...[done]",
    ] {
        assert_eq!(count_lines(&o, line), 3, "{line}: {}", text(&o.stdout));
    }

    // hello_world.xpnet alone: its root is the module.
    let o = run(
        &example("hello_world/hello_world.xpnet"),
        &dir,
        "worker:1",
        &["in=[]"],
    );
    assert_eq!(results(&o, &["out"]), vec!["out = []"]);
    assert_eq!(count_lines(&o, "hello world (shared object)"), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ping_pong_runs_on_a_ping_and_a_pong_worker() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("pingpong");
    let net = example("ping-pong/ping-pong.xpnet");
    build_modules(&net, &dir, &[]);
    let o = run(&net, &dir, "ping:1 pong:1", &["n=5UL"]);
    assert_eq!(results(&o, &["count"]), vec!["count = 5UL"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn n_of_m_runs_every_task() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("nofm");
    let net = example("n_of_m/n_of_m.xpnet");
    build_modules(&net, &dir, &[]);
    let o = run(&net, &dir, "worker:2", &["m=6L", "parallel=2L"]);
    assert_eq!(results(&o, &["done"]), vec!["done = []"]);
    for n in 0..6 {
        assert_eq!(
            count_lines(&o, &format!("RUN {n} of 6")),
            1,
            "{}",
            text(&o.stdout)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn work_and_wait_and_its_credit_variant_run() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("credit");
    build_modules(&example("credit/work_and_wait.xpnet"), &dir, &[]);
    let o = run(
        &example("credit/work_and_wait.xpnet"),
        &dir,
        "worker:2",
        &["n=5L"],
    );
    assert_eq!(results(&o, &["done"]), vec!["done = []"]);
    for n in 0..5 {
        for step in ["step-1", "step-2"] {
            let line = format!("### {step} {n}");
            assert_eq!(count_lines(&o, &line), 1, "{line}: {}", text(&o.stdout));
        }
    }

    // The credit variant's module `work` has other port types: a separate folder.
    let dir2 = scratch("credit2");
    build_modules(&example("credit/work_and_wait_credit.xpnet"), &dir2, &[]);
    let o = run(
        &example("credit/work_and_wait_credit.xpnet"),
        &dir2,
        "worker:2",
        &["n=3L", "c=2L"],
    );
    assert_eq!(results(&o, &["done"]), vec!["done = []"]);
    // Struct tokens through inout ports: each id once per step, with a credit 0 or 1.
    for n in 0..3 {
        for step in ["step-1", "step-2"] {
            let found = (0..2)
                .map(|c| count_lines(&o, &format!("### {step} {n}, credit {c}")))
                .sum::<usize>();
            assert_eq!(found, 1, "{step} {n}: {}", text(&o.stdout));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

#[test]
fn pi_approximates_pi_with_struct_tokens() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("pi");
    let net = example("pi/pi.xpnet");
    build_modules(&net, &dir, &[]);
    let puts = [
        "num_packet=4L",
        "points_per_packet=2000L",
        "credit_generate=2L",
        "credit_run=2L",
        "credit_get_key=2L",
        "seed=3141L",
    ];
    let one = run(&net, &dir, "worker:1", &puts);
    let two = run(&net, &dir, "worker:2", &puts);
    let r = results(&two, &["ratio"]);
    // The packets' seeds are fixed: any number of workers gives the same ratio.
    assert_eq!(results(&one, &["ratio"]), r);
    // Every packet ran once, with its own seed and its key from get_key.
    for seed in 3141..3145 {
        let runs = text(&two.stdout)
            .lines()
            .filter(|l| {
                l.starts_with("RUN, points 2000, seed ")
                    && l.ends_with(&format!(
                        "seed {seed}, key [key for seed {seed} points 2000]"
                    ))
            })
            .count();
        assert_eq!(runs, 1, "seed {seed}: {}", text(&two.stdout));
    }
    assert_eq!(r.len(), 1, "{r:?}");
    let body = r[0]
        .strip_prefix("ratio = Struct [in := ")
        .and_then(|s| s.strip_suffix("L]"))
        .unwrap_or_else(|| panic!("{}", r[0]));
    let (inside, total) = body.split_once("L, total := ").expect("two fields");
    let (inside, total): (i64, i64) = (inside.parse().unwrap(), total.parse().unwrap());
    // finalize reduces the fraction: total divides the 8000 points.
    assert_eq!(8000 % total, 0, "{total}");
    let pi = 4.0 * inside as f64 / total as f64;
    assert!((pi - std::f64::consts::PI).abs() < 0.1, "{pi}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A net whose module takes a value of every type and gives back a changed one.
fn types_net() -> String {
    let ports = [
        ("i", "int"),
        ("u", "unsigned int"),
        ("ul", "unsigned long"),
        ("f", "float"),
        ("d", "double"),
        ("c", "char"),
        ("b", "bool"),
        ("s", "string"),
        ("bs", "bitset"),
        ("l", "list"),
        ("st", "set"),
        ("m", "map"),
        ("p", "pt"),
    ];
    let mut outer = String::new();
    let mut places = String::new();
    let mut inner = String::new();
    let mut connects = String::new();
    let mut args = Vec::new();
    for (n, t) in ports {
        outer.push_str(&format!(
            "<in name=\"{n}\" type=\"{t}\" place=\"{n}\"/><out name=\"o_{n}\" type=\"{t}\" place=\"o_{n}\"/>\n"
        ));
        places.push_str(&format!(
            "<place name=\"{n}\" type=\"{t}\"/><place name=\"o_{n}\" type=\"{t}\"/>\n"
        ));
        inner.push_str(&format!(
            "<in name=\"{n}\" type=\"{t}\"/><out name=\"o_{n}\" type=\"{t}\"/>\n"
        ));
        connects.push_str(&format!(
            "<connect-in port=\"{n}\" place=\"{n}\"/><connect-out port=\"o_{n}\" place=\"o_{n}\"/>\n"
        ));
        args.push(n.to_string());
        args.push(format!("o_{n}"));
    }
    format!(
        r#"<defun name="types">
<struct name="pt"><field name="x" type="double"/><field name="tags" type="list"/></struct>
{outer}<net>
{places}<transition name="all">
<defun>
{inner}<module name="types" function="all ({args})">
<code><![CDATA[
  using gspc::pnet::type::value::value_type;
  o_i = i + 1;
  o_u = u * 2;
  o_ul = ul + 1;
  o_f = f * 2;
  o_d = d / 4;
  o_c = c + 1;
  o_b = !b;
  o_s = s + "!";
  o_bs = bs;
  o_bs.ins (5).ins (4294967295UL);
  o_l = l;
  o_l.push_back (value_type (7));
  o_st = st;
  o_st.insert (value_type (std::string ("z")));
  o_m = m;
  o_m[value_type (3L)] = value_type ('x');
  o_p = p;
  o_p.x = -p.x;
  o_p.tags.push_front (value_type (p.tags.size ()));
]]></code>
</module>
</defun>
{connects}</transition>
</net>
</defun>
"#,
        args = args.join(", ")
    )
}

#[test]
fn values_of_every_type_cross_the_boundary_both_ways() {
    let dir = scratch("types");
    let net = dir.join("types.xpnet");
    std::fs::write(&net, types_net()).unwrap();
    build_modules(&net, &dir, &[]);
    let o = run(
        &net,
        &dir,
        "worker:1",
        &[
            "i=41",
            "u=3U",
            "ul=18446744073709551614UL",
            "f=1.5f",
            "d=10.0",
            "c='a'",
            "b=true",
            r#"s="say \"hi\"""#,
            "bs={ 10 @288230376151711743 9223372036854775808}",
            r#"l=List (1L, "a", 2.5)"#,
            "st=Set {2L}",
            r#"m=Map [1L -> "one"]"#,
            r#"p=Struct [x := 0.25, tags := List ("t")]"#,
        ],
    );
    let ports = [
        "o_i", "o_u", "o_ul", "o_f", "o_d", "o_c", "o_b", "o_s", "o_bs", "o_l", "o_st", "o_m",
        "o_p",
    ];
    assert_eq!(
        results(&o, &ports),
        vec![
            "o_b = false",
            // Elements up to the largest unsigned long cross both ways (stored sparse).
            "o_bs = { 42 @67108863 9223372036854775808 @288230376151711743 9223372036854775808}",
            "o_c = 'b'",
            "o_d = 2.5",
            "o_f = 3.0f",
            "o_i = 42",
            r#"o_l = List (1L, "a", 2.5, 7)"#,
            r#"o_m = Map [1L -> "one", 3L -> 'x']"#,
            r#"o_p = Struct [x := -0.25, tags := List (1UL, "t")]"#,
            r#"o_s = "say \"hi\"!""#,
            r#"o_st = Set {2L, "z"}"#,
            "o_u = 6U",
            "o_ul = 18446744073709551615UL",
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const BROKEN: &str = r#"<defun name="broken">
  <in name="a" type="long"/>
  <out name="b" type="long"/>
  <module name="broken" function="b f (a)">
    <code><![CDATA[
      long x = a;
      return x + undeclared_thing;
    ]]></code>
  </module>
</defun>
"#;

#[test]
fn a_module_that_does_not_compile_gives_the_compilers_message_at_the_net_line() {
    let dir = scratch("broken");
    let net = dir.join("broken.xpnet");
    std::fs::write(&net, BROKEN).unwrap();
    let o = pnetc_build(&net, &dir.join("out"), &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("error[cxx-compile-failed]"), "{err}");
    // g++'s own message, pointing into the .xpnet (line 7 holds `undeclared_thing`).
    let at = format!("{}:7:", net.display());
    assert!(err.starts_with(&at), "{err}");
    assert!(err.contains("undeclared_thing"), "{err}");
    assert!(!dir.join("out/libbroken.so").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_header_is_reported_at_its_cinclude() {
    let dir = scratch("noheader");
    let net = dir.join("noheader.xpnet");
    std::fs::write(
        &net,
        BROKEN
            .replace("broken", "noheader")
            .replace(
                "<code>",
                "<cinclude href=\"no/such_header.hpp\"/>\n    <code>",
            )
            .replace("undeclared_thing", "1"),
    )
    .unwrap();
    let o = pnetc_build(&net, &dir.join("out"), &[]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    // Line 5, column 21: the href's value (not the module's line, nor the generated file).
    let at = format!("{}:5:21: error[cxx-compile-failed]", net.display());
    assert!(err.starts_with(&at), "{err}");
    assert!(err.contains("no/such_header.hpp"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_compiler_is_a_clear_diagnostic() {
    tools();
    let dir = scratch("nocxx");
    let net = dir.join("broken.xpnet");
    std::fs::write(&net, BROKEN).unwrap();
    let o = Command::new(bin("pnetc"))
        .arg(&net)
        .arg("--build-modules")
        .arg(dir.join("out"))
        .env("CXX", "/nonexistent/c++")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("error[cxx-compiler-missing]"), "{err}");
    assert!(err.contains("/nonexistent/c++"), "{err}");
    assert!(err.starts_with(&format!("{}:4:3:", net.display())), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sources_and_flags_can_be_written_and_printed() {
    if pnet_tests::corpus_absent() {
        return;
    }
    tools();
    let dir = scratch("gen");
    let o = Command::new(bin("pnetc"))
        .arg(example("hello_world/hello_world.xpnet"))
        .arg("-g")
        .arg(&dir)
        .args(["--gen-ldflags=-L/opt/x", "--print-ldflags"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "hello_world: -lhello_util -Wl,-rpath=$ORIGIN -L/opt/x\n"
    );
    let cpp = std::fs::read_to_string(dir.join("hello_world.cpp")).unwrap();
    // The cinclude, after a `#line` naming the net (for the compiler's messages about it).
    let lines: Vec<&str> = cpp.lines().collect();
    let include = lines
        .iter()
        .position(|l| l.starts_with("#include ") && l.ends_with(" <hello_world.hpp>"));
    assert!(
        include
            .is_some_and(|i| lines[i - 1].starts_with("#line ")
                && lines[i - 1].ends_with("hello_world.xpnet\"")),
        "{cpp}"
    );
    assert!(
        cpp.contains("::we::type::literal::control call_hello_world ()"),
        "{cpp}"
    );
    assert!(cpp.contains("\"call_hello_world\""), "{cpp}");
    let make = std::fs::read_to_string(dir.join("Makefile")).unwrap();
    assert!(
        make.contains("libhello_world.so: hello_world.cpp pnet_cxx.hpp"),
        "{make}"
    );
    assert!(make.contains("'-Wl,-rpath=$$ORIGIN'"), "{make}");
    assert!(dir.join("pnet_cxx.hpp").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Roots that are modules with an inout port (its results must not feed the next call) and
/// without any input (run once).
#[test]
fn module_roots_with_inout_ports_and_without_inputs_run() {
    let dir = scratch("roots");
    let inout = dir.join("inout.xpnet");
    std::fs::write(
        &inout,
        r#"<defun name="inout">
  <out name="x" type="long"/>
  <inout name="y" type="string"/>
  <module name="inout" function="x f (y)">
    <code><![CDATA[
      y = y + "!";
      return static_cast<long> (y.size ());
    ]]></code>
  </module>
</defun>
"#,
    )
    .unwrap();
    let none = dir.join("none.xpnet");
    std::fs::write(
        &none,
        r#"<defun name="none">
  <out name="x" type="long"/>
  <module name="none" function="x f ()">
    <cinclude href="iostream"/>
    <code><![CDATA[
      std::cout << "none runs" << std::endl;
      return 9L;
    ]]></code>
  </module>
</defun>
"#,
    )
    .unwrap();
    build_modules(&inout, &dir, &[]);
    build_modules(&none, &dir, &[]);
    let o = run(&inout, &dir, "worker:1", &[r#"y="a""#, r#"y="bc""#]);
    assert_eq!(
        results(&o, &["x", "y"]),
        vec!["x = 2L", "x = 3L", r#"y = "a!""#, r#"y = "bc!""#]
    );
    let o = run(&none, &dir, "worker:1", &[]);
    assert_eq!(results(&o, &["x"]), vec!["x = 9L"]);
    assert_eq!(count_lines(&o, "none runs"), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Several implementations of one function, one per target.

#[test]
fn hello_world_multiple_implementations_runs_the_implementation_of_the_workers_target() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("multi");
    let net =
        example("hello_world_multiple_implementations/hello_world_multiple_implementations.xpnet");
    build_modules(
        &net,
        &dir,
        &[format!(
            "--gen-cxxflags=-I{}",
            arg(&fixtures("hello_world_multiple_implementations"))
        )],
    );
    // The preferences are gpu, then cpu: a worker runs the first target it has.
    for (topology, impl_name, line) in [
        ("cpu:1", "CPU", "hello world from the CPU implementation"),
        ("gpu:1", "GPU", "hello world from the GPU implementation"),
    ] {
        let o = run(&net, &dir, topology, &["in=[]", "in=[]"]);
        let expected = format!("out = \"{line}\"");
        assert_eq!(results(&o, &["out"]), vec![expected.clone(), expected]);
        assert_eq!(
            count_lines(&o, &format!("Hello world...[impl={impl_name}]")),
            2,
            "{topology}: {}",
            text(&o.stdout)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Nets with memory transfers.

/// Workers with `MIB` MiB of working memory each.
fn with_memory(classes: &[&str], mib: u64) -> String {
    classes
        .iter()
        .map(|c| format!("{c},{}", mib << 20))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Deterministic pseudo-random bytes (xorshift64*).
fn random_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// A shared library built from C++ `sources` by the system's C++ compiler.
fn cxx_library(out: &Path, sources: &[PathBuf], include: &[PathBuf]) {
    let mut cmd = Command::new("c++");
    cmd.args(["-std=c++17", "-shared", "-fPIC", "-o"]).arg(out);
    for i in include {
        cmd.arg(format!("-I{}", arg(i)));
    }
    let o = cmd.args(sources).output().unwrap();
    assert!(
        o.status.success(),
        "c++ {}: {}",
        out.display(),
        text(&o.stderr)
    );
}

fn ulongs(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

/// vmem_1_to_n.xpnet with its inner.xpnet: `initialize` writes a seeded random sequence of
/// longs into a buffer that is put into the global memory; every `run` of every inner net
/// gets the whole range back and throws when a value differs (so a successful run is the
/// proof that every get saw the put's bytes).
#[test]
fn vmem_1_to_n_verifies_the_memory_in_every_inner_task() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("vmem");
    let net = example("vmem_1_to_n/vmem_1_to_n.xpnet");
    build_modules(&net, &dir, &[]);
    let dump = dir.join("memory.bin");
    let o = run_with(
        &net,
        &dir,
        &with_memory(&["worker:2"], 4),
        &["outer=3L", "inner=4L", "seed=1234L"],
        &[
            "--alloc".into(),
            "memory=65536".into(),
            "--dump".into(),
            format!("memory={}", arg(&dump)),
        ],
    );
    assert_eq!(results(&o, &["out"]), vec!["out = []"]);
    assert_eq!(
        count_lines(&o, "generating 8192 values with seed 1234"),
        1,
        "{}",
        text(&o.stdout)
    );
    assert_eq!(
        count_lines(&o, "verifiying 8192 values with seed 1234"),
        12,
        "{}",
        text(&o.stdout)
    );
    for id in 0..3 {
        for i in 0..4 {
            assert_eq!(
                count_lines(&o, &format!("run ({id}, {i})")),
                1,
                "run ({id}, {i}): {}",
                text(&o.stdout)
            );
        }
    }
    // The memory holds what initialize put: 8192 longs, not all zero.
    let bytes = std::fs::read(&dump).unwrap();
    assert_eq!(bytes.len(), 65536);
    assert!(ulongs(&bytes).iter().filter(|v| **v != 0).count() > 8000);
    let _ = std::fs::remove_dir_all(&dir);
}

/// subnetwork/process_all_blocks.xpnet (with process_single_block.xpnet and produce.xpnet):
/// for each block, `produceL` and `produceR` (on `produce` workers) put `iota (id + tag)`
/// into the block's two halves of a slot of the global memory, `process` (on a `process`
/// worker) gets both and throws when they are not what was put. The memory after the run
/// holds, per slot, the halves of the last block that used it.
#[test]
fn subnetwork_processes_every_block_through_the_global_memory() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("subnetwork");
    let net = example("subnetwork/process_all_blocks.xpnet");
    build_modules(&net, &dir, &[]);
    let dump = dir.join("memory.bin");
    let block_size = 1024_usize;
    let slots = 4;
    let o = run_with(
        &net,
        &dir,
        &with_memory(&["produce:1", "process:1"], 4),
        &[
            &format!("block_size={block_size}UL"),
            "number_of_blocks=10UL",
        ],
        &[
            "--alloc".into(),
            format!("memory={}", 2 * block_size * slots),
            "--dump".into(),
            format!("memory={}", arg(&dump)),
        ],
    );
    let expected: Vec<String> = (0..10).map(|i| format!("done = {i}UL")).collect();
    assert_eq!(results(&o, &["done"]), expected);
    let bytes = std::fs::read(&dump).unwrap();
    assert_eq!(bytes.len(), 2 * block_size * slots);
    let values = ulongs(&bytes);
    let per_half = block_size / 8;
    let mut ids = Vec::new();
    for slot in 0..slots {
        let left = &values[2 * slot * per_half..(2 * slot + 1) * per_half];
        let right = &values[(2 * slot + 1) * per_half..(2 * slot + 2) * per_half];
        let id = left[0];
        assert!(id < 10, "slot {slot}: {left:?}");
        let iota = |start: u64| (start..start + per_half as u64).collect::<Vec<_>>();
        assert_eq!(left, iota(id).as_slice(), "slot {slot}, left half");
        assert_eq!(right, iota(id + 1).as_slice(), "slot {slot}, right half");
        ids.push(id);
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), slots, "each slot holds another block: {ids:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// map/map.xpnet with the implementation library of tests/cxx/map (loaded by the modules
/// with dlopen from the `implementation` token): `produce` writes each block into a slot of
/// the input memory, `process` maps an input slot into an output slot, `consume` writes a
/// checksum file per block into the folder named by `user_data`. Checked: every block's
/// checksum is that of `process (produce (block))` as computed here, and every output slot
/// holds one processed block.
#[test]
fn map_produces_processes_and_consumes_every_block() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("map");
    let sums = dir.join("sums");
    std::fs::create_dir_all(&sums).unwrap();
    let implementation = dir.join("libmap_impl.so");
    cxx_library(
        &implementation,
        &[fixtures("map/map_impl.cpp")],
        &[
            fixtures("map"),
            workspace_root().join("compiler/cxx/include"),
        ],
    );
    let net = example("map/map.xpnet");
    build_modules(
        &net,
        &dir,
        &[format!("--gen-cxxflags=-I{}", arg(&fixtures("map")))],
    );
    let (blocks, size_block) = (6_usize, 1000_usize);
    let output_dump = dir.join("output.bin");
    let user_data = pnet_stdlib::Value::Bytearray(arg(&sums).into_bytes()).to_string();
    let implementation =
        pnet_stdlib::Value::String(arg(&implementation).as_str().into()).to_string();
    let o = run_with(
        &net,
        &dir,
        &with_memory(&["worker:2"], 4),
        &[
            &format!("num_block={blocks}UL"),
            &format!("size_block={size_block}UL"),
            &format!("user_data={user_data}"),
            &format!("implementation={implementation}"),
        ],
        &[
            // Two input slots for six blocks: the slots are reused.
            "--alloc".into(),
            format!("input={}", 2 * size_block),
            "--alloc".into(),
            format!("output={}", blocks * size_block),
            "--dump".into(),
            format!("output={}", arg(&output_dump)),
        ],
    );
    assert_eq!(results(&o, &["done"]), vec!["done = []"]);
    let processed = |b: usize| -> Vec<u8> {
        (0..size_block)
            .map(|i| ((b * 7 + i * 3 + 1) as u8) ^ 0x5a)
            .collect()
    };
    for b in 0..blocks {
        let file = sums.join(format!("block-{b}.sum"));
        let got =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(
            got,
            format!("{size_block} {:016x}\n", fnv1a(&processed(b))),
            "block {b}"
        );
    }
    let out = std::fs::read(&output_dump).unwrap();
    assert_eq!(out.len(), blocks * size_block);
    for (slot, chunk) in out.chunks(size_block).enumerate() {
        assert!(
            chunk.iter().all(|b| *b == 0) || (0..blocks).any(|b| processed(b) == chunk),
            "output slot {slot} holds no processed block"
        );
    }
    assert!(out.iter().any(|b| *b != 0));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Nets whose inputs name memory the test allocated first: on a `gspc` runtime.

/// A `gspc` runtime booted for one test (stopped and removed on drop).
struct Runtime {
    dir: PathBuf,
}

impl Runtime {
    fn boot(name: &str, topology: &str, modules: &Path) -> Runtime {
        use std::os::unix::fs::PermissionsExt;
        tools();
        build_packages(&["pnet-gspc"]);
        let dir = scratch(&format!("rt-{name}"));
        let state = dir.join("state");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        let rt = Runtime { dir };
        rt.ok(&[
            "boot",
            "--topology",
            topology,
            "--module-path",
            &arg(modules),
            "--timeout",
            "30",
        ]);
        rt
    }

    fn gspc(&self, args: &[&str]) -> Output {
        pnet_tests::gspc_in(&bin("gspc"), &self.dir.join("state"), args)
    }

    fn ok(&self, args: &[&str]) -> String {
        pnet_tests::gspc_ok_in(&bin("gspc"), &self.dir.join("state"), args)
    }

    /// Allocates `size` bytes (filled with `data` when given): the handle and the
    /// `global_memory_range` value of the whole allocation.
    fn alloc(&self, size: usize, data: Option<&[u8]>) -> (String, pnet_stdlib::Value) {
        let size = size.to_string();
        let mut args = vec!["alloc", size.as_str(), "--json"];
        let file = self.dir.join(format!("alloc-{}.bin", std::process::id()));
        let file_arg = arg(&file);
        if let Some(d) = data {
            std::fs::write(&file, d).unwrap();
            args.extend(["--from", file_arg.as_str()]);
        }
        let j: serde_json::Value = serde_json::from_str(&self.ok(&args)).unwrap();
        let handle = j["handle"].as_str().expect("handle").to_string();
        let range = pnet_stdlib::literal::parse_literal(j["range"].as_str().expect("range"))
            .expect("a range literal");
        (handle, range)
    }

    fn read(&self, handle: &str, offset: usize, size: usize) -> Vec<u8> {
        let file = self.dir.join("read.bin");
        self.ok(&[
            "mem-read",
            handle,
            "--offset",
            &offset.to_string(),
            "--size",
            &size.to_string(),
            "-o",
            &arg(&file),
        ]);
        std::fs::read(&file).unwrap()
    }

    /// Submits `net` (with the workflow library and the examples on the search path): the
    /// job id.
    fn submit(&self, net: &Path, puts: &[String]) -> String {
        let net = arg(net);
        let (lib, examples) = (arg(&gpispace_lib()), arg(&example("")));
        let mut args = vec!["submit", net.as_str(), "-I", &lib, "-I", &examples];
        for p in puts {
            args.extend(["-p", p.as_str()]);
        }
        self.ok(&args).trim().to_string()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = self.gspc(&["stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The `global_memory_range` token of `[offset, offset + size)` of the allocation `whole`.
fn subrange(whole: &pnet_stdlib::Value, offset: usize, size: usize) -> pnet_stdlib::Value {
    use pnet_stdlib::Value;
    let Value::Struct(fields) = whole else {
        panic!("not a range: {whole}");
    };
    Value::Struct(
        fields
            .iter()
            .map(|(name, v)| {
                let v = match &**name {
                    "offset" => Value::ULong(offset as u64),
                    "size" => Value::ULong(size as u64),
                    _ => v.clone(),
                };
                (name.clone(), v)
            })
            .collect(),
    )
}

/// test/many_ranges_in_memory_transfer: one memory-get of many global ranges with gaps
/// between them (unaligned sizes and offsets, an allocation spread over two workers'
/// memory) into one local buffer; the module compares the buffer with the bytes of the
/// ranges, given as a bytearray, and throws on the first difference. A run with one byte of
/// the expectation changed must fail, naming the difference.
#[test]
fn many_ranges_in_one_memory_transfer() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("ranges");
    let net =
        gpispace().join("test/many_ranges_in_memory_transfer/many_ranges_in_memory_transfer.xpnet");
    build_modules(
        &net,
        &dir,
        &[format!(
            "--gen-cxxflags=-I{}",
            arg(&fixtures("many_ranges"))
        )],
    );
    let rt = Runtime::boot("ranges", &with_memory(&["worker:2"], 1), &dir);
    let submit = |n: usize, size: usize, distance: usize, spoil: bool| {
        let memory = random_bytes((n * 1000 + size) as u64, n * (size + distance));
        let (handle, whole) = rt.alloc(memory.len(), Some(&memory));
        let global: Vec<pnet_stdlib::Value> = (0..n)
            .map(|k| subrange(&whole, k * (size + distance), size))
            .collect();
        let mut data = memory.clone();
        if spoil {
            data[(n - 1) * (size + distance) + size / 2] ^= 0xff;
        }
        let puts = [
            format!("data={}", pnet_stdlib::Value::Bytearray(data)),
            format!("global={}", pnet_stdlib::Value::List(global)),
            format!("size_of_range={size}UL"),
            format!("distance_between_ranges={distance}UL"),
            format!("number_of_ranges={n}UL"),
        ];
        (rt.submit(&net, &puts), handle)
    };
    for (n, size, distance) in [(200, 13, 7), (100, 1, 0), (4, 2000, 1003)] {
        let (job, handle) = submit(n, size, distance, false);
        assert_eq!(
            rt.ok(&["wait", &job]),
            "out = []\n",
            "{n} ranges of {size} bytes {distance} apart"
        );
        rt.ok(&["free", &handle]);
    }
    let (job, _) = submit(20, 9, 3, true);
    let o = rt.gspc(&["wait", &job]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let err = text(&o.stderr);
    assert!(err.contains("wrong content at (19, 4)"), "{err}");
    drop(rt);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The slot layout share_example_stream::process (tests/cxx/stream/process.hpp) expects.
fn stream_slot(id: usize, produced: i64, size: usize) -> Vec<u8> {
    let mut s = Vec::with_capacity(size);
    s.extend_from_slice(&(id as u64).to_ne_bytes());
    s.extend_from_slice(&produced.to_ne_bytes());
    s.extend((16..size).map(|k| (id + k) as u8));
    s
}

/// The stream example nets: the test plays the producer. It writes `rounds` data slots into
/// one allocation and puts one work package per slot into the running job (its `meta` is
/// one byte of a second allocation, its `flag` a letter); the workflow processes each
/// package (getting the slot, checked by `process`) and marks it free (putting the flag into
/// the meta byte), then stops on the `stop` token. Checked: the packages seen, the last
/// statistic's count, and the meta bytes, read back from the memory, holding every flag.
#[test]
fn stream_nets_process_every_package_and_mark_its_slot_free() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = scratch("stream");
    let lib = dir.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    cxx_library(
        &lib.join("libgspc.so"),
        &[fixtures("stream/gspc_stream.cpp")],
        &[fixtures("stream")],
    );
    let flags = [
        format!("--gen-cxxflags=-I{}", arg(&fixtures("stream"))),
        format!("--gen-ldflags=-L{l} -Wl,-rpath,{l}", l = arg(&lib)),
    ];
    for (name, topology) in [
        ("stream.one_module_call", vec!["process_and_mark_free:2"]),
        ("stream.two_module_calls", vec!["process:1", "mark_free:1"]),
    ] {
        let modules = dir.join(name);
        let net = example(&format!("stream/{name}.xpnet"));
        build_modules(&net, &modules, &flags);
        let rt = Runtime::boot(name, &with_memory(&topology, 1), &modules);
        let (rounds, slot) = (8_usize, 64_usize);
        let data: Vec<u8> = (0..rounds)
            .flat_map(|i| stream_slot(i, 1000 + i as i64, slot))
            .collect();
        let (_, data_range) = rt.alloc(data.len(), Some(&data));
        let (meta_handle, meta_range) = rt.alloc(rounds, None);
        let job = rt.submit(&net, &[format!("rounds={rounds}UL")]);
        let mut puts = vec!["put-token".to_string(), job.clone()];
        for i in 0..rounds {
            let package = pnet_stdlib::Value::Struct(vec![
                ("meta".into(), subrange(&meta_range, i, 1)),
                ("data".into(), subrange(&data_range, i * slot, slot)),
                (
                    "flag".into(),
                    pnet_stdlib::Value::Char((b'a' + i as u8) as i8),
                ),
                ("id".into(), pnet_stdlib::Value::ULong(i as u64)),
            ]);
            puts.push(format!("work_package={package}"));
        }
        puts.extend(["stop=[]".to_string(), "--close".to_string()]);
        rt.ok(&puts.iter().map(String::as_str).collect::<Vec<_>>());
        let out = rt.ok(&["wait", &job]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.contains(&"done = []"), "{name}: {out}");
        let mut packages: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("packages = "))
            .collect();
        packages.sort_unstable();
        let mut expected: Vec<String> = (0..rounds)
            .map(|i| format!("\"{i} {}\"", 1000 + i))
            .collect();
        expected.sort_unstable();
        assert_eq!(packages, expected, "{name}: {out}");
        // The statistic of the last package stays (read by `done`); late ones may too.
        let counts: Vec<&str> = lines
            .iter()
            .filter(|l| l.starts_with("statistic = "))
            .copied()
            .collect();
        assert!(
            counts
                .iter()
                .any(|l| l.contains(&format!("count := {}UL", rounds - 1))),
            "{name}: {out}"
        );
        assert_eq!(
            rt.read(&meta_handle, 0, rounds),
            (0..rounds).map(|i| b'a' + i as u8).collect::<Vec<_>>(),
            "{name}: the meta bytes"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
