//! C++ modules end to end: GPI-Space's module-based example nets compiled with `pnetc
//! --build-modules` (the real C++ compiler), run with `gspc-run --module-path`, their outputs
//! checked. Headers and libraries the corpus lacks are in `tests/cxx/`. The nets that need
//! the virtual memory layer (vmem_1_to_n, map, stream) are not here: it does not exist yet.

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

/// `pnetc NET -I <workflow library> -I <examples> --build-modules DIR EXTRA...`.
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
        .env_remove("PNET_MODULE_PATH");
    for p in puts {
        cmd.args(["-p", p]);
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "gspc-run {} failed:\n{}\n{}",
        net.display(),
        text(&o.stdout),
        text(&o.stderr)
    );
    o
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
    let dir = scratch("sum");
    let inc = format!("--gen-cxxflags=-I{}", arg(&fixtures("sum")));
    build_modules(&example("sum/sum_many.xpnet"), &dir, &[inc]);
    assert!(dir.join("libsum.so").exists());

    // (sum.xpnet alone has a module as its root, which gspc-run cannot run: sum_many wraps it.)
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
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hello_world_and_hello_many_call_a_cpp_a_c_and_a_shared_library() {
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

    // (hello_world.xpnet alone has a module as its root, which gspc-run cannot run.)
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
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ping_pong_runs_on_a_ping_and_a_pong_worker() {
    let dir = scratch("pingpong");
    let net = example("ping-pong/ping-pong.xpnet");
    build_modules(&net, &dir, &[]);
    let o = run(&net, &dir, "ping:1 pong:1", &["n=5UL"]);
    assert_eq!(results(&o, &["count"]), vec!["count = 5UL"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn n_of_m_runs_every_task() {
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
  o_bs.ins (5);
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
            "bs={ 10}",
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
            "o_bs = { 42}",
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
    assert!(cpp.contains("#include <hello_world.hpp>"), "{cpp}");
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
