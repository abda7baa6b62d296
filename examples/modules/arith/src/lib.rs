//! `libarith.so`: integer arithmetic as a native module.
//!
//! - `square(n: long) -> r: long` (fails on overflow),
//! - `div(a: long, b: long) -> q: long` (fails on division by zero),
//! - `spin(ms: long) -> done: control`: busy for `ms` milliseconds, returning early when the
//!   task is cancelled (a demonstration of `Context::is_cancelled`).

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

pnet_module_sdk::export_module! {
    name: "arith",
    functions: {
        "square" => square,
        "div" => div,
        "spin" => spin,
    },
}
