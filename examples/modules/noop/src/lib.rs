//! `libnoop.so`: the smallest native module, used by the throughput benchmark.
//!
//! `run(x: control) -> y: control` echoes its control token.

use pnet_module_sdk::{Context, Inputs, Outputs};

fn run(_ctx: &Context, _inputs: &Inputs) -> Result<Outputs, String> {
    Ok(Outputs::new().set("y", ()))
}

pnet_module_sdk::export_module! {
    name: "noop",
    functions: { "run" => run },
}
