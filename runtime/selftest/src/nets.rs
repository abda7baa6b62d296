//! The nets and command modules the selftest writes into its temporary directory, and the
//! outputs they must give.

/// Expressions and conditions: `sum` of the squares of `n, n-1, ..., 1` (a loop through a
/// condition and a priority), and whether that sum is `odd`. Three transitions.
pub const COMPUTE: &str = r#"<!-- written by gspc-selftest: expressions, conditions, a loop -->
<defun name="selftest_compute">
  <in name="n" type="long" place="counter"/>
  <out name="sum" type="long" place="sum"/>
  <out name="odd" type="bool" place="odd"/>
  <net>
    <place name="counter" type="long"/>
    <place name="acc" type="long">
      <token><value>0L</value></token>
    </place>
    <place name="total" type="long"/>
    <place name="sum" type="long"/>
    <place name="odd" type="bool"/>
    <transition name="step" priority="1">
      <defun>
        <inout name="n" type="long"/>
        <inout name="s" type="long"/>
        <expression>
          ${s} := ${s} + ${n} * ${n};
          ${n} := ${n} - 1L
        </expression>
        <condition>${n} :gt: 0L</condition>
      </defun>
      <connect-inout port="n" place="counter"/>
      <connect-inout port="s" place="acc"/>
    </transition>
    <transition name="finish">
      <defun>
        <in name="n" type="long"/>
        <in name="s" type="long"/>
        <out name="r" type="long"/>
        <expression>${r} := ${s}</expression>
        <condition>${n} :eq: 0L</condition>
      </defun>
      <connect-in port="n" place="counter"/>
      <connect-in port="s" place="acc"/>
      <connect-out port="r" place="total"/>
    </transition>
    <transition name="classify">
      <defun>
        <in name="r" type="long"/>
        <out name="sum" type="long"/>
        <out name="odd" type="bool"/>
        <expression>
          ${sum} := ${r};
          ${odd} := (${r} % 2L) :eq: 1L
        </expression>
      </defun>
      <connect-in port="r" place="total"/>
      <connect-out port="sum" place="sum"/>
      <connect-out port="odd" place="odd"/>
    </transition>
  </net>
</defun>
"#;

/// The number of transitions of [`COMPUTE`].
pub const COMPUTE_TRANSITIONS: usize = 3;

/// The number of conditions of [`COMPUTE`].
pub const COMPUTE_CONDITIONS: usize = 2;

/// The input of [`COMPUTE`].
pub const COMPUTE_N: i64 = 1001;

/// What `gspc-run` prints for [`COMPUTE`] with `n = COMPUTE_N`.
pub fn compute_expected(n: i64) -> String {
    let sum: i64 = (1..=n).map(|k| k * k).sum();
    format!("odd = {}\nsum = {sum}L\n", sum % 2 == 1)
}

/// A net with a duplicate place: pnetc must reject it with [`BROKEN_CODE`] at
/// [`BROKEN_LINE`]:[`BROKEN_COL`].
pub const BROKEN: &str = r#"<!-- written by gspc-selftest: must be rejected -->
<defun name="selftest_broken">
  <net>
    <place name="p" type="long"/>
    <place name="p" type="long"/>
  </net>
</defun>
"#;
pub const BROKEN_CODE: &str = "duplicate_place";
pub const BROKEN_LINE: usize = 5;
/// The column of the second place's name (pnetc points at the duplicate name).
pub const BROKEN_COL: usize = 18;

/// `n` module calls of `selftest_who.name`, each giving the name of the worker that ran it.
pub const WORKERS: &str = r#"<!-- written by gspc-selftest: module calls on two workers -->
<defun name="selftest_workers">
  <in name="n" type="long" place="left"/>
  <out name="names" type="string" place="names"/>
  <net>
    <place name="left" type="long"/>
    <place name="todo" type="control"/>
    <place name="names" type="string"/>
    <transition name="emit">
      <defun>
        <inout name="n" type="long"/>
        <out name="x" type="control"/>
        <expression>
          ${n} := ${n} - 1L;
          ${x} := []
        </expression>
        <condition>${n} :gt: 0L</condition>
      </defun>
      <connect-inout port="n" place="left"/>
      <connect-out port="x" place="todo"/>
    </transition>
    <transition name="who">
      <defun>
        <in name="x" type="control"/>
        <out name="w" type="string"/>
        <module name="selftest_who" function="w name (x)"/>
      </defun>
      <connect-in port="x" place="todo"/>
      <connect-out port="w" place="names"/>
    </transition>
  </net>
</defun>
"#;

/// Calls of [`WORKERS`]: more than a worker's initial window of tasks, so that the second
/// worker gets some even if the first joined much earlier.
pub const WORKERS_CALLS: i64 = 12;

/// The command module `selftest_who.name`: appends its worker's name to `seen`, waits (at
/// most ~`wait_tenths` tenths of a second, once: a call that waited in vain leaves
/// `seen.gave-up` so that the others do not wait again) until two distinct workers have
/// been seen, so that the calls cannot all run on the first worker to join, and answers its
/// name. `seen` is quoted for the shell.
pub fn who_script(seen: &str, wait_tenths: u32) -> String {
    format!(
        r#"#!/bin/sh
# written by gspc-selftest: command module selftest_who.name (x: control) -> w: string
cat > /dev/null
seen={seen}
printf '%s\n' "$PNET_WORKER" >> "$seen"
i=0
while [ ! -e "$seen.gave-up" ] && [ "$(sort -u "$seen" | wc -l)" -lt 2 ]; do
  if [ "$i" -ge {wait_tenths} ]; then
    : > "$seen.gave-up"
    break
  fi
  sleep 0.1
  i=$((i + 1))
done
printf '{{"w": "%s"}}\n' "$PNET_WORKER"
"#
    )
}

/// Data in and out of a command module: `y = 2 * x` and `tag` = module.function.
pub const COMMAND: &str = r#"<!-- written by gspc-selftest: a command module -->
<defun name="selftest_command">
  <in name="x" type="long" place="x"/>
  <out name="y" type="long" place="y"/>
  <out name="tag" type="string" place="tag"/>
  <net>
    <place name="x" type="long"/>
    <place name="y" type="long"/>
    <place name="tag" type="string"/>
    <transition name="twice">
      <defun>
        <in name="x" type="long"/>
        <out name="y" type="long"/>
        <out name="tag" type="string"/>
        <module name="selftest_cmd" function="twice (x, y, tag)"/>
      </defun>
      <connect-in port="x" place="x"/>
      <connect-out port="y" place="y"/>
      <connect-out port="tag" place="tag"/>
    </transition>
  </net>
</defun>
"#;

/// The executable `selftest_cmd.twice`.
pub const COMMAND_SCRIPT: &str = r#"#!/bin/sh
# written by gspc-selftest: command module selftest_cmd.twice (x: long) -> y: long, tag: string
input=$(cat)
x=$(printf '%s' "$input" | sed -n 's/.*"x" *: *\(-\{0,1\}[0-9][0-9]*\).*/\1/p')
if [ -z "$x" ]; then
  echo "selftest_cmd.twice: no integer x in the input: $input" >&2
  exit 1
fi
printf '{"y": %s, "tag": "%s.%s"}\n' "$((x * 2))" "$PNET_MODULE" "$PNET_FUNCTION"
"#;

/// The inputs of [`COMMAND`] and the output they must give.
pub const COMMAND_INPUTS: [i64; 2] = [21, -5];
pub fn command_expected() -> String {
    let mut ys: Vec<i64> = COMMAND_INPUTS.iter().map(|x| 2 * x).collect();
    ys.sort_unstable();
    let mut s = String::new();
    for _ in COMMAND_INPUTS {
        s.push_str("tag = \"selftest_cmd.twice\"\n");
    }
    for y in ys {
        s.push_str(&format!("y = {y}L\n"));
    }
    s
}

/// A native module of the installation the selftest knows how to call.
#[derive(Debug)]
pub struct Native {
    /// The module's name (`lib<name>.so`).
    pub name: &'static str,
    /// The package that builds it.
    pub package: &'static str,
    /// What the net does, for the report.
    pub what: &'static str,
    pub net: &'static str,
    pub puts: &'static [&'static str],
    pub expected: fn() -> String,
}

/// The example native modules, in the order they are looked for.
pub const NATIVES: [Native; 3] = [
    Native {
        name: "noop",
        package: "pnet-example-noop",
        what: "200 calls of noop.run",
        net: NOOP,
        puts: &["n=200L"],
        expected: || "done = 200L\n".into(),
    },
    Native {
        name: "arith",
        package: "pnet-example-arith",
        what: "arith.square and arith.div",
        net: ARITH,
        puts: &["a=12L", "b=5L"],
        expected: || "q = 28L\n".into(),
    },
    Native {
        name: "pi",
        package: "pnet-example-pi",
        what: "pi.count of 1000 samples",
        net: PI,
        puts: &["chunk=7L", "samples=1000L"],
        expected: || format!("hits = {}L\n", pi_hits(7, 1000)),
    },
];

const NOOP: &str = r#"<!-- written by gspc-selftest: n calls of the native module noop -->
<defun name="selftest_noop">
  <in name="n" type="long" place="n"/>
  <out name="done" type="long" place="done"/>
  <net>
    <place name="n" type="long"/>
    <place name="left" type="long"/>
    <place name="target" type="long"/>
    <place name="todo" type="control"/>
    <place name="back" type="control"/>
    <place name="count" type="long">
      <token><value>0L</value></token>
    </place>
    <place name="done" type="long"/>
    <transition name="start">
      <defun>
        <in name="n" type="long"/>
        <out name="left" type="long"/>
        <out name="target" type="long"/>
        <expression>
          ${left} := ${n};
          ${target} := ${n}
        </expression>
      </defun>
      <connect-in port="n" place="n"/>
      <connect-out port="left" place="left"/>
      <connect-out port="target" place="target"/>
    </transition>
    <transition name="emit">
      <defun>
        <inout name="n" type="long"/>
        <out name="x" type="control"/>
        <expression>
          ${n} := ${n} - 1L;
          ${x} := []
        </expression>
        <condition>${n} :gt: 0L</condition>
      </defun>
      <connect-inout port="n" place="left"/>
      <connect-out port="x" place="todo"/>
    </transition>
    <transition name="call">
      <defun>
        <in name="x" type="control"/>
        <out name="y" type="control"/>
        <module name="noop" function="y run (x)"/>
      </defun>
      <connect-in port="x" place="todo"/>
      <connect-out port="y" place="back"/>
    </transition>
    <transition name="count">
      <defun>
        <in name="y" type="control"/>
        <inout name="c" type="long"/>
        <expression>${c} := ${c} + 1L</expression>
      </defun>
      <connect-in port="y" place="back"/>
      <connect-inout port="c" place="count"/>
    </transition>
    <transition name="finish">
      <defun>
        <in name="c" type="long"/>
        <in name="target" type="long"/>
        <out name="done" type="long"/>
        <expression>${done} := ${c}</expression>
        <condition>${c} :eq: ${target}</condition>
      </defun>
      <connect-in port="c" place="count"/>
      <connect-in port="target" place="target"/>
      <connect-out port="done" place="done"/>
    </transition>
  </net>
</defun>
"#;

const ARITH: &str = r#"<!-- written by gspc-selftest: q = a * a / b through the native module arith -->
<defun name="selftest_arith">
  <in name="a" type="long" place="a"/>
  <in name="b" type="long" place="b"/>
  <out name="q" type="long" place="q"/>
  <net>
    <place name="a" type="long"/>
    <place name="b" type="long"/>
    <place name="squared" type="long"/>
    <place name="q" type="long"/>
    <transition name="square">
      <defun>
        <in name="n" type="long"/>
        <out name="r" type="long"/>
        <module name="arith" function="r square (n)"/>
      </defun>
      <connect-in port="n" place="a"/>
      <connect-out port="r" place="squared"/>
    </transition>
    <transition name="divide">
      <defun>
        <in name="a" type="long"/>
        <in name="b" type="long"/>
        <out name="q" type="long"/>
        <module name="arith" function="q div (a, b)"/>
      </defun>
      <connect-in port="a" place="squared"/>
      <connect-in port="b" place="b"/>
      <connect-out port="q" place="q"/>
    </transition>
  </net>
</defun>
"#;

const PI: &str = r#"<!-- written by gspc-selftest: one call of the native module pi -->
<defun name="selftest_pi">
  <in name="chunk" type="long" place="chunk"/>
  <in name="samples" type="long" place="samples"/>
  <out name="hits" type="long" place="hits"/>
  <net>
    <place name="chunk" type="long"/>
    <place name="samples" type="long"/>
    <place name="hits" type="long"/>
    <transition name="count">
      <defun>
        <in name="chunk" type="long"/>
        <in name="samples" type="long"/>
        <out name="hits" type="long"/>
        <module name="pi" function="count (chunk, samples, hits)"/>
      </defun>
      <connect-in port="chunk" place="chunk"/>
      <connect-in port="samples" place="samples"/>
      <connect-out port="hits" place="hits"/>
    </transition>
  </net>
</defun>
"#;

/// One step of SplitMix64: advances `state` and returns the next output.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What `libpi.so`'s `count(chunk, samples)` answers (examples/pi/module: SplitMix64 seeded
/// by the chunk, points in the unit square inside the quarter circle).
pub fn pi_hits(chunk: i64, samples: i64) -> i64 {
    let mut state = (chunk as u64) ^ 0x5DEE_CE66_D1CE_4E5B;
    let mut next = move || (splitmix64(&mut state) >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    let mut hits = 0;
    for _ in 0..samples {
        let (x, y) = (next(), next());
        if x * x + y * y < 1.0 {
            hits += 1;
        }
    }
    hits
}

/// Global memory through `libarith.so`: `fill` writes the pattern of `seed` into its buffer
/// `data`, which a memory-put copies to the whole range on port `memory`; then `digest` gets
/// the range into its read-only buffer `data` (a memory-get) and answers the checksum `sum`.
/// The global memory-handle and range structs are declared here (a GPI-Space net includes
/// them from `memory/global/range.xpnet` of its lib folder, which the selftest cannot
/// assume).
pub const MEMORY: &str = r#"<!-- written by gspc-selftest: global memory filled by arith.fill, read back by arith.digest -->
<defun name="selftest_memory">
  <struct name="global_memory_handle_type"><field name="name" type="string"/></struct>
  <struct name="global_memory_range">
    <field name="handle" type="global_memory_handle_type"/>
    <field name="offset" type="unsigned long"/>
    <field name="size" type="unsigned long"/>
  </struct>
  <in name="memory" type="global_memory_range" place="memory"/>
  <in name="seed" type="long" place="seed"/>
  <out name="sum" type="unsigned long" place="sum"/>
  <net>
    <place name="memory" type="global_memory_range"/>
    <place name="seed" type="long"/>
    <place name="filled" type="control"/>
    <place name="sum" type="unsigned long"/>
    <transition name="fill">
      <defun>
        <in name="memory" type="global_memory_range"/>
        <in name="seed" type="long"/>
        <out name="done" type="control"/>
        <memory-buffer name="data">
          <size>${memory.size}</size>
        </memory-buffer>
        <memory-put>
          <global>stack_push (List(), ${memory})</global>
          <local>
            ${range.buffer} := "data";
            ${range.offset} := 0UL;
            ${range.size} := ${memory.size};
            stack_push (List(), ${range})
          </local>
        </memory-put>
        <module name="arith" function="done fill (seed, data)"/>
      </defun>
      <connect-read port="memory" place="memory"/>
      <connect-in port="seed" place="seed"/>
      <connect-out port="done" place="filled"/>
    </transition>
    <transition name="digest">
      <defun>
        <in name="memory" type="global_memory_range"/>
        <in name="done" type="control"/>
        <out name="sum" type="unsigned long"/>
        <memory-buffer name="data" read-only="true">
          <size>${memory.size}</size>
        </memory-buffer>
        <memory-get>
          <global>stack_push (List(), ${memory})</global>
          <local>
            ${range.buffer} := "data";
            ${range.offset} := 0UL;
            ${range.size} := ${memory.size};
            stack_push (List(), ${range})
          </local>
        </memory-get>
        <module name="arith" function="sum digest (data)"/>
      </defun>
      <connect-in port="memory" place="memory"/>
      <connect-in port="done" place="filled"/>
      <connect-out port="sum" place="sum"/>
    </transition>
  </net>
</defun>
"#;

/// The workers of the [`MEMORY`] run: two, with 1 MiB of working memory each.
pub const MEMORY_TOPOLOGY: &str = "worker:2,1048576";

/// The global memory of the [`MEMORY`] run, in KiB (`--alloc memory=<this>KiB`).
pub const MEMORY_KIB: u64 = 256;

/// The seed of the [`MEMORY`] run.
pub const MEMORY_SEED: i64 = 20_240_601;

/// The bytes `libarith.so`'s `fill(seed)` writes into a buffer of `size` bytes
/// (examples/modules/arith: SplitMix64 outputs from state `seed`, 8 bytes little-endian each,
/// the last cut).
pub fn fill_pattern(seed: i64, size: usize) -> Vec<u8> {
    let mut state = seed as u64;
    let mut data = Vec::with_capacity(size + 8);
    while data.len() < size {
        data.extend_from_slice(&splitmix64(&mut state).to_le_bytes());
    }
    data.truncate(size);
    data
}

/// `libarith.so`'s `digest`: FNV-1a, 64 bits.
pub fn fnv1a64(data: &[u8]) -> u64 {
    data.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// What `gspc-run` prints for [`MEMORY`]: the checksum of the pattern of `seed` over
/// `size` bytes.
pub fn memory_expected(seed: i64, size: usize) -> String {
    format!("sum = {}UL\n", fnv1a64(&fill_pattern(seed, size)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_outputs() {
        // 1^2 + 2^2 + 3^2 = 14.
        assert_eq!(compute_expected(3), "odd = false\nsum = 14L\n");
        assert_eq!(compute_expected(1), "odd = true\nsum = 1L\n");
        assert_eq!(
            command_expected(),
            "tag = \"selftest_cmd.twice\"\ntag = \"selftest_cmd.twice\"\ny = -10L\ny = 42L\n"
        );
        let hits = pi_hits(7, 1000);
        // About pi/4 of the points; the estimate is within a few percent.
        assert!((700..870).contains(&hits), "{hits}");
        assert_eq!(pi_hits(7, 0), 0);
    }

    #[test]
    fn the_memory_pattern_and_checksum_are_arith_s() {
        // FNV-1a 64's published test vectors.
        assert_eq!(fnv1a64(b""), 0xCBF2_9CE4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xAF63_DC4C_8601_EC8C);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_F739_67E8);
        // SplitMix64's reference outputs for the state 1234567, little-endian, cut.
        let p = fill_pattern(1_234_567, 13);
        assert_eq!(p[..8], 6_457_827_717_110_365_317u64.to_le_bytes());
        assert_eq!(p[8..], 3_203_168_211_198_807_973u64.to_le_bytes()[..5]);
        assert_eq!(fill_pattern(1_234_567, 64)[..13], p);
        assert!(fill_pattern(5, 0).is_empty());
        // The expected line: an unsigned long literal of the whole pattern's checksum.
        let size = 1024;
        assert_eq!(
            memory_expected(9, size),
            format!("sum = {}UL\n", fnv1a64(&fill_pattern(9, size)))
        );
        assert_ne!(memory_expected(9, size), memory_expected(10, size));
        // The net calls exactly arith's fill and digest on a buffer `data`.
        assert!(MEMORY.contains(r#"function="done fill (seed, data)""#));
        assert!(MEMORY.contains(r#"function="sum digest (data)""#));
        assert_eq!(MEMORY.matches("<memory-buffer name=\"data\"").count(), 2);
    }

    #[test]
    fn broken_net_points_at_the_second_place() {
        let line = BROKEN.lines().nth(BROKEN_LINE - 1).expect("line exists");
        assert_eq!(line.find("\"p\"").map(|c| c + 2), Some(BROKEN_COL));
        assert_eq!(COMPUTE.matches("<transition ").count(), COMPUTE_TRANSITIONS);
        assert_eq!(COMPUTE.matches("<condition>").count(), COMPUTE_CONDITIONS);
    }

    #[test]
    fn who_script_waits_for_a_second_worker_at_most_once() {
        use std::process::{Command, Stdio};
        use std::time::{Duration, Instant};
        let dir = std::env::temp_dir().join(format!("pnet-selftest-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let seen = dir.join("seen");
        let script = dir.join("who");
        let text = who_script(&crate::proc::quote(&seen.display().to_string()), 10);
        std::fs::write(&script, text).expect("write");
        let call = |worker: &str| {
            let start = Instant::now();
            let out = Command::new("/bin/sh")
                .arg(&script)
                .env("PNET_WORKER", worker)
                .stdin(Stdio::null())
                .output()
                .expect("sh");
            (
                String::from_utf8_lossy(&out.stdout).into_owned(),
                start.elapsed(),
            )
        };
        // Alone: waits ~1 s, then gives up for everyone.
        let (out, took) = call("w-a");
        assert_eq!(out, "{\"w\": \"w-a\"}\n");
        assert!(took >= Duration::from_millis(900), "{took:?}");
        assert!(dir.join("seen.gave-up").exists());
        let (_, took) = call("w-a");
        assert!(took < Duration::from_millis(800), "{took:?}");
        // Two workers seen: no waiting.
        std::fs::remove_file(dir.join("seen.gave-up")).expect("rm");
        let (out, took) = call("w-b");
        assert_eq!(out, "{\"w\": \"w-b\"}\n");
        assert!(took < Duration::from_millis(800), "{took:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn who_script_quotes_its_path() {
        let s = who_script("'/tmp/x y/seen'", 50);
        assert!(s.contains("seen='/tmp/x y/seen'\n"), "{s}");
        assert!(s.contains("-ge 50 ]"), "{s}");
    }
}
