//! `libarith.so`: integer arithmetic as a native module.
//!
//! - `square(n: long) -> r: long` (fails on overflow),
//! - `div(a: long, b: long) -> q: long` (fails on division by zero),
//! - `spin(ms: long) -> done: control`: busy for `ms` milliseconds, returning early when the
//!   task is cancelled (a demonstration of `Context::is_cancelled`),
//! - `fill(seed: long; buffer data) -> done: control`: fills the writable memory buffer
//!   `data` with the byte pattern of [`fill_pattern`] for `seed`,
//! - `digest(buffer data) -> sum: unsigned long`: the [FNV-1a 64](fnv1a64) checksum of the
//!   bytes of the memory buffer `data` (read-only is enough).
//!
//! `fill` and `digest` demonstrate memory buffers (`Context::buffer` / `buffer_mut`): with a
//! `memory-put` after `fill` and a `memory-get` before `digest`, global memory written on one
//! worker is read back on another (`gspc selftest` does exactly that).

use std::time::{Duration, Instant};

use pnet_module_sdk::{Context, Inputs, Outputs};

fn square(_ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    let n = inputs.get_i64("n")?;
    let r = n
        .checked_mul(n)
        .ok_or_else(|| format!("square of {n} overflows a long"))?;
    Ok(Outputs::new().set("r", r))
}

fn div(_ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    let a = inputs.get_i64("a")?;
    let b = inputs.get_i64("b")?;
    if b == 0 {
        return Err(format!("division by zero ({a} / 0)"));
    }
    let q = a
        .checked_div(b)
        .ok_or_else(|| format!("{a} / {b} overflows a long"))?;
    Ok(Outputs::new().set("q", q))
}

fn spin(ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    let ms = u64::try_from(inputs.get_i64("ms")?).map_err(|_| "ms must not be negative")?;
    let end = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < end {
        if ctx.is_cancelled() {
            return Err("cancelled".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(Outputs::new().set("done", ()))
}

/// The memory buffer `fill` writes and `digest` reads.
const DATA: &str = "data";

/// Why buffer [`DATA`] is missing: the buffers the call has instead.
fn no_buffer(ctx: &Context, what: &str) -> String {
    let names = ctx.buffer_names();
    format!(
        "needs a {what}memory buffer `{DATA}` (declare <memory-buffer name=\"{DATA}\">); the \
         call has {}",
        if names.is_empty() {
            "no memory buffers".to_string()
        } else {
            format!("the buffers {}", names.join(", "))
        }
    )
}

fn fill(ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    let seed = inputs.get_i64("seed")?;
    let data = match ctx.buffer_mut(DATA) {
        Some(d) => d,
        None if ctx.buffer_names().contains(&DATA) => {
            return Err(format!(
                "memory buffer `{DATA}` is read-only; fill writes it (drop read-only=\"true\")"
            ));
        }
        None => return Err(no_buffer(ctx, "writable ")),
    };
    fill_pattern(seed, data);
    Ok(Outputs::new().set("done", ()))
}

fn digest(ctx: &Context, _inputs: &Inputs) -> Result<Outputs, String> {
    let data = ctx.buffer(DATA).ok_or_else(|| no_buffer(ctx, ""))?;
    Ok(Outputs::new().set("sum", fnv1a64(data)))
}

/// One step of SplitMix64: advances `state` and returns the next output.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The byte pattern of `fill`: the outputs of SplitMix64 (state = `seed` as an unsigned
/// 64-bit number; each step adds 0x9E3779B97F4A7C15 and mixes) written one after the other,
/// each as 8 bytes little-endian, the last one cut to the bytes that are left.
pub fn fill_pattern(seed: i64, data: &mut [u8]) {
    let mut state = seed as u64;
    for chunk in data.chunks_mut(8) {
        let word = splitmix64(&mut state).to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
}

/// The checksum of `digest`: FNV-1a, 64 bits (offset basis 0xCBF29CE484222325; per byte:
/// xor the byte, multiply by the prime 0x100000001B3, wrapping).
pub fn fnv1a64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

pnet_module_sdk::export_module! {
    name: "arith",
    functions: {
        "square" => square,
        "div" => div,
        "spin" => spin,
        "fill" => fill,
        "digest" => digest,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_known_values() {
        // The published test vectors of FNV-1a 64.
        assert_eq!(fnv1a64(b""), 0xCBF2_9CE4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xAF63_DC4C_8601_EC8C);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_F739_67E8);
    }

    #[test]
    fn splitmix64_known_values() {
        // The reference outputs of SplitMix64 seeded with 1234567.
        let mut s = 1_234_567;
        assert_eq!(splitmix64(&mut s), 6_457_827_717_110_365_317);
        assert_eq!(splitmix64(&mut s), 3_203_168_211_198_807_973);
    }

    #[test]
    fn fill_pattern_is_splitmix_little_endian_cut_at_the_end() {
        let mut data = [0u8; 13];
        fill_pattern(1_234_567, &mut data);
        assert_eq!(data[..8], 6_457_827_717_110_365_317u64.to_le_bytes());
        assert_eq!(data[8..], 3_203_168_211_198_807_973u64.to_le_bytes()[..5]);
        // A prefix of a longer fill, and deterministic.
        let mut longer = [0u8; 64];
        fill_pattern(1_234_567, &mut longer);
        assert_eq!(longer[..13], data);
        let mut again = [0u8; 64];
        fill_pattern(1_234_567, &mut again);
        assert_eq!(again, longer);
        // Another seed, another pattern; negative seeds are fine; empty buffers too.
        let mut other = [0u8; 64];
        fill_pattern(-1, &mut other);
        assert_ne!(other, longer);
        fill_pattern(7, &mut []);
    }

    /// Calls function `name` of this module through the ABI, as a worker does, with
    /// `buffers` (name, bytes, read-only); `Ok` is the output JSON, `Err` the error message.
    fn call(
        name: &str,
        input: &str,
        buffers: &mut [(&str, &mut [u8], bool)],
    ) -> Result<String, String> {
        use pnet_module_sdk::host;
        use std::sync::atomic::AtomicBool;
        // SAFETY: the descriptor is this crate's static one.
        let module = unsafe { host::read_descriptor(pnet_module_v1()) }.expect("descriptor");
        let f = module.function(name).expect("function");
        let refs: Vec<host::Buffer<'_>> = buffers
            .iter_mut()
            .map(|(n, bytes, read_only)| host::Buffer {
                name: n,
                ptr: bytes.as_mut_ptr(),
                size: bytes.len() as u64,
                read_only: *read_only,
            })
            .collect();
        let cancelled = AtomicBool::new(false);
        let info = host::CallInfo {
            worker_name: "test",
            hostname: "here",
            task: 1,
            cancelled: &cancelled,
            buffers: &refs,
            log: None,
        };
        let mut out = Vec::new();
        // SAFETY: a function of this crate's module; every buffer is a live, unaliased slice.
        let status = unsafe { host::call_with(f.call, &info, input.as_bytes(), &mut out) };
        let text = String::from_utf8(out).expect("UTF-8");
        if status == 0 { Ok(text) } else { Err(text) }
    }

    #[test]
    fn fill_and_digest_through_the_abi() {
        let mut data = vec![0u8; 1000];
        let out = call("fill", r#"{"seed": 99}"#, &mut [("data", &mut data, false)]);
        assert_eq!(out.as_deref(), Ok(r#"{"done":null}"#));
        let mut want = vec![0u8; 1000];
        fill_pattern(99, &mut want);
        assert_eq!(data, want);
        let out = call("digest", "{}", &mut [("data", &mut data, true)]);
        assert_eq!(out, Ok(format!(r#"{{"sum":{}}}"#, fnv1a64(&want))));

        let err = call("fill", r#"{"seed": 1}"#, &mut [("data", &mut data, true)]);
        assert_eq!(
            err,
            Err(
                "memory buffer `data` is read-only; fill writes it (drop read-only=\"true\")"
                    .into()
            )
        );
        assert_eq!(data, want, "a read-only buffer stays as it was");
        let err = call("fill", r#"{"seed": 1}"#, &mut [("other", &mut data, false)]);
        assert_eq!(
            err,
            Err(
                "needs a writable memory buffer `data` (declare <memory-buffer name=\"data\">); \
                 the call has the buffers other"
                    .into()
            )
        );
        let err = call("digest", "{}", &mut []);
        assert_eq!(
            err,
            Err(
                "needs a memory buffer `data` (declare <memory-buffer name=\"data\">); the call \
                 has no memory buffers"
                    .into()
            )
        );
        let err = call("fill", "{}", &mut [("data", &mut data, false)]);
        assert_eq!(err, Err("no input port `seed`".into()));
    }

    #[test]
    fn digest_of_a_fill_depends_on_every_byte() {
        let mut data = vec![0u8; 4096];
        fill_pattern(42, &mut data);
        let sum = fnv1a64(&data);
        data[4095] ^= 1;
        assert_ne!(fnv1a64(&data), sum);
        data[4095] ^= 1;
        assert_eq!(fnv1a64(&data), sum);
    }
}
