//! `libpi.so`: the work of `examples/pi/pi.xpnet`.
//!
//! `count(chunk: long, samples: long) -> hits: long`: draws `samples` points in the unit
//! square from a generator seeded by `chunk` (so a run repeats exactly, whichever worker runs
//! the chunk) and counts those inside the quarter circle. Checks for cancellation every
//! million samples.

use pnet_module_sdk::{Context, Inputs, Outputs};

/// SplitMix64: small, fast, and good enough for a demonstration.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A double in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

fn count(ctx: &Context, inputs: &Inputs) -> Result<Outputs, String> {
    let chunk = inputs.get_i64("chunk")?;
    let samples = inputs.get_i64("samples")?;
    if samples < 0 {
        return Err(format!("samples must not be negative, got {samples}"));
    }
    let mut rng = SplitMix(chunk as u64 ^ 0x5DEE_CE66_D1CE_4E5B);
    let mut hits: i64 = 0;
    for i in 0..samples {
        if i % 1_000_000 == 999_999 && ctx.is_cancelled() {
            return Err("cancelled".into());
        }
        let (x, y) = (rng.unit(), rng.unit());
        if x * x + y * y < 1.0 {
            hits += 1;
        }
    }
    Ok(Outputs::new().set("hits", hits))
}

pnet_module_sdk::export_module! {
    name: "pi",
    functions: {
        "count" => count,
    },
}
