//! Native (C++) modules end to end, with the real binaries: `pnetc --build-modules` (g++),
//! `gspc-run` and `gspc-worker`s on loopback.
//!
//! - a eureka reaches running native code: a C++ module spinning until its context says it
//!   is cancelled stops when another transition of its eureka group finishes;
//! - a C++ module with memory buffers moves global memory (`--alloc`, `--dump`) through its
//!   `void*` buffers, between workers that act as two hosts (`--fake-hosts`); GPI-Space's
//!   `vmem_1_to_n` example runs;
//! - a module with implementations for several targets runs the one the worker's
//!   capabilities pick (GPI-Space's `hello_world_multiple_implementations`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pnet_tests::{bin, build_packages, gpispace, gpispace_lib, workspace_root};

/// A fresh temporary folder for one test, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pnet-native-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Builds pnetc, gspc-run and gspc-worker (once), for runs of these tests alone.
fn tools() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        build_packages(&["pnetc", "gspc-run", "pnet-worker"]);
    });
}

/// `pnetc NET --build-modules DIR EXTRA...`, which must succeed.
fn build_modules(net: &Path, dir: &Path, extra: &[String]) {
    tools();
    let o = Command::new(bin("pnetc"))
        .arg(net)
        .arg("--build-modules")
        .arg(dir)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "pnetc --build-modules failed:\n{}",
        text(&o.stderr)
    );
}

/// `gspc-run NET --module-path DIR ARGS...`, which must succeed.
fn gspc_run(net: &Path, dir: &Path, args: &[&str]) -> Output {
    tools();
    let o = Command::new(bin("gspc-run"))
        .arg(net)
        .arg("--module-path")
        .arg(dir)
        .arg("--no-progress")
        .args(args)
        .env_remove("PNET_MODULE_PATH")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "gspc-run {} failed:\n{}\n{}",
        net.display(),
        text(&o.stdout),
        text(&o.stderr)
    );
    o
}

/// Two transitions of eureka group "g" on two workers (capabilities `spinner` and
/// `finder`): `spin` marks that it runs, then polls `is_cancelled ()` (failing after 60 s);
/// `find` waits for that mark, then names the group on its `connect-eureka` port.
const EUREKA: &str = r#"<defun name="eureka_native">
  <in name="marker" type="string" place="marker"/>
  <in name="spin_go" type="control" place="spin_go"/>
  <in name="find_go" type="control" place="find_go"/>
  <out name="found" type="long" place="found"/>
  <out name="spun" type="long" place="spun"/>
  <net>
    <place name="marker" type="string"/>
    <place name="spin_go" type="control"/>
    <place name="find_go" type="control"/>
    <place name="found" type="long"/>
    <place name="spun" type="long"/>
    <transition name="spin">
      <defun>
        <require key="spinner"/>
        <in name="marker" type="string"/>
        <in name="go" type="control"/>
        <out name="spun" type="long"/>
        <module name="eureka_native" function="spun spin (marker)" pass_context="true">
          <eureka-group>"g"</eureka-group>
          <cinclude href="chrono"/>
          <cinclude href="fstream"/>
          <cinclude href="stdexcept"/>
          <cinclude href="thread"/>
          <code><![CDATA[
            std::ofstream (marker + ".spinning") << _pnetc_context->worker_name () << "\n";
            auto const start = std::chrono::steady_clock::now ();
            while (!_pnetc_context->is_cancelled ())
            {
              if (std::chrono::steady_clock::now () - start > std::chrono::seconds (60))
              {
                throw std::runtime_error ("spin: not cancelled within 60 s");
              }
              std::this_thread::sleep_for (std::chrono::milliseconds (1));
            }
            std::ofstream (marker + ".cancelled") << "cancelled\n";
            return 1L;
          ]]></code>
        </module>
      </defun>
      <connect-read port="marker" place="marker"/>
      <connect-in port="go" place="spin_go"/>
      <connect-out port="spun" place="spun"/>
    </transition>
    <transition name="find">
      <defun>
        <require key="finder"/>
        <in name="marker" type="string"/>
        <in name="go" type="control"/>
        <out name="eureka" type="set"/>
        <out name="found" type="long"/>
        <module name="eureka_native" function="find (marker, eureka, found)">
          <eureka-group>"g"</eureka-group>
          <cinclude href="chrono"/>
          <cinclude href="fstream"/>
          <cinclude href="stdexcept"/>
          <cinclude href="thread"/>
          <code><![CDATA[
            auto const start = std::chrono::steady_clock::now ();
            while (!std::ifstream (marker + ".spinning"))
            {
              if (std::chrono::steady_clock::now () - start > std::chrono::seconds (30))
              {
                throw std::runtime_error ("find: the spinner did not start within 30 s");
              }
              std::this_thread::sleep_for (std::chrono::milliseconds (1));
            }
            eureka.insert (std::string ("g"));
            found = 42L;
          ]]></code>
        </module>
      </defun>
      <connect-read port="marker" place="marker"/>
      <connect-in port="go" place="find_go"/>
      <connect-eureka port="eureka"/>
      <connect-out port="found" place="found"/>
    </transition>
  </net>
</defun>
"#;

#[test]
fn a_eureka_cancels_a_running_cpp_module() {
    let dir = Scratch::new("eureka");
    let net = dir.0.join("eureka.xpnet");
    std::fs::write(&net, EUREKA).unwrap();
    let libs = dir.0.join("lib");
    build_modules(&net, &libs, &[]);
    let marker = dir.0.join("m");
    let marker_arg = format!("marker={:?}", marker.display().to_string());
    let start = Instant::now();
    let o = gspc_run(
        &net,
        &libs,
        &[
            "--topology",
            "spinner:1 finder:1",
            "-v",
            "-p",
            &marker_arg,
            "-p",
            "spin_go=[]",
            "-p",
            "find_go=[]",
        ],
    );
    let elapsed = start.elapsed();
    // Well within the spinner's 60 s: it stopped because it was told.
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
    // The cancelled call's outputs are dropped: only `found`.
    assert_eq!(text(&o.stdout), "found = 42L\n");
    let err = text(&o.stderr);
    assert!(
        err.contains("eureka g: 0 queued and 1 running tasks cancelled"),
        "{err}"
    );
    // The spinner ran on the spinner worker and saw `is_cancelled ()` turn true.
    let spinning = std::fs::read_to_string(dir.0.join("m.spinning")).unwrap();
    assert!(spinning.starts_with("spinner-"), "{spinning}");
    assert_eq!(
        std::fs::read_to_string(dir.0.join("m.cancelled")).unwrap(),
        "cancelled\n"
    );
}

/// The bytes the example `mirror` (examples/modules/mirror.xpnet) leaves in a range that
/// held `input`, and the sum it returns.
fn mirrored(input: &[u8]) -> (Vec<u8>, u64) {
    let half = input.len() / 2;
    let mut out = input.to_vec();
    for i in 0..half {
        out[half + i] = input[half - 1 - i].wrapping_mul(2);
    }
    (out, input[..half].iter().map(|b| u64::from(*b)).sum())
}

#[test]
fn a_cpp_module_with_memory_buffers_moves_global_memory_between_hosts() {
    let dir = Scratch::new("memory");
    let net = workspace_root().join("examples/modules/mirror.xpnet");
    let libs = dir.0.join("lib");
    build_modules(&net, &libs, &[]);
    // The documented example.
    let small: Vec<u8> = (0..8).collect();
    assert_eq!(mirrored(&small), (vec![0, 1, 2, 3, 6, 4, 2, 0], 6));
    // 200000 bytes spread over the segments of two workers with different host identities
    // (over TCP between them, on loopback), an odd pattern.
    for (name, input, topology) in [
        ("small", small, "worker:1,65536"),
        (
            "large",
            (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect(),
            "worker:2,1048576",
        ),
    ] {
        let input_file = dir.0.join(format!("{name}.in"));
        let output_file = dir.0.join(format!("{name}.out"));
        std::fs::write(&input_file, &input).unwrap();
        let alloc = format!("memory=@{}", input_file.display());
        let dump = format!("memory={}", output_file.display());
        let o = gspc_run(
            &net,
            &libs,
            &[
                "--topology",
                topology,
                "--fake-hosts",
                "2",
                "--alloc",
                &alloc,
                "--dump",
                &dump,
            ],
        );
        let (expected, sum) = mirrored(&input);
        assert_eq!(text(&o.stdout), format!("sum = {sum}UL\n"), "{name}");
        let got = std::fs::read(&output_file).unwrap();
        assert!(got == expected, "{name}: the dumped range differs");
    }
}

fn example(rel: &str) -> PathBuf {
    gpispace().join("share/doc/example").join(rel)
}

#[test]
fn gpispace_vmem_1_to_n_writes_and_verifies_global_memory() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = Scratch::new("vmem");
    let net = example("vmem_1_to_n/vmem_1_to_n.xpnet");
    let libs = dir.0.join("lib");
    let search = [
        format!("-I{}", gpispace_lib().display()),
        format!("-I{}", example("").display()),
    ];
    build_modules(&net, &libs, &search);
    // `initialize` fills the range with random longs (memory-put), each of the 3 x 4 `run`s
    // reads all of it back (memory-get) and checks it: 1000 longs over two "hosts".
    let mut args: Vec<&str> = search.iter().map(String::as_str).collect();
    args.extend([
        "--topology",
        "worker:2,1048576",
        "--fake-hosts",
        "2",
        "--alloc",
        "memory=8000",
        "-p",
        "outer=3L",
        "-p",
        "inner=4L",
        "-p",
        "seed=3141L",
    ]);
    let o = gspc_run(&net, &libs, &args);
    let out = text(&o.stdout);
    let count = |line: &str| out.lines().filter(|l| *l == line).count();
    assert_eq!(count("generating 1000 values with seed 3141"), 1, "{out}");
    // A struct prints in literal syntax.
    assert_eq!(
        count("initialize: config Struct [seed := 3141L]"),
        1,
        "{out}"
    );
    assert_eq!(count("verifiying 1000 values with seed 3141"), 12, "{out}");
    for i in 0..3 {
        for j in 0..4 {
            assert_eq!(count(&format!("run ({i}, {j})")), 1, "{out}");
        }
    }
    assert_eq!(count("out = []"), 1, "{out}");
}

#[test]
fn the_implementation_for_the_workers_target_runs() {
    if pnet_tests::corpus_absent() {
        return;
    }
    let dir = Scratch::new("targets");
    let net =
        example("hello_world_multiple_implementations/hello_world_multiple_implementations.xpnet");
    // The example's "C++ library" (not in the corpus): one function per target.
    std::fs::write(
        dir.0.join("hello_world.hpp"),
        "#include <string>\n\
         inline std::string impl_hello_world_cpu () { return \"cpu\"; }\n\
         inline std::string impl_hello_world_gpu () { return \"gpu\"; }\n",
    )
    .unwrap();
    let libs = dir.0.join("lib");
    build_modules(
        &net,
        &libs,
        &[format!("--gen-cxxflags=-I{}", dir.0.display())],
    );
    // The preferences are gpu, then cpu.
    for (topology, expected) in [
        ("worker+cpu:1", "cpu"),
        ("worker+gpu:1", "gpu"),
        ("worker+cpu+gpu:1", "gpu"),
    ] {
        let o = gspc_run(&net, &libs, &["--topology", topology, "-p", "in=[]"]);
        assert_eq!(
            text(&o.stdout),
            format!(
                "Hello world...[impl={}]\nout = \"{expected}\"\n",
                expected.to_uppercase()
            ),
            "{topology}"
        );
    }
}
