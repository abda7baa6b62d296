//! The VM: a bytecode interpreter for expressions and conditions, and the single-process net
//! engine (marking, enabling, firing). The engine's core does no I/O.
//!
//! Entry points: [`run`] runs a bundle to its end (module calls are an error there); an
//! [`Engine`] can be driven step by step, handing module calls out as [`Task`]s.

pub mod ending;
pub mod engine;
pub mod error;
pub mod hook;
pub mod interp;
pub mod rng;
mod shared;
mod tokens;
pub mod validate;

#[cfg(test)]
mod tests;

pub use ending::{Ending, unfed_in_ports};
pub use engine::{
    Binding, Connections, Engine, Marking, RunConfig, RunResult, SharedTable, Stats, Step, Task,
    TaskId, TaskMemory, after_take, bundle_uses_shared, child_inputs, child_out_place,
    child_outputs, collect_shareds, connections, distinct_tokens, eureka_groups,
    for_each_combination, generated, generator_value, initial_tokens, input_frame,
    next_combination, out_value, output_tokens, priority_groups, refill, release_shareds, run,
    take_binding,
};
pub use error::{RunError, RunErrorData, RunErrorKind};
pub use hook::{CodeRunner, CodeRunnerFactory, Loop, LoopCodes, LoopEnd, RunnerCodes, drive_loop};
pub use interp::{
    Interpreter, assign_field, condition_value, eval, field_of, reference, slot_name,
};
pub use rng::DEFAULT_SEED;
pub use shared::{may_hold_shared, mentions_shared};
pub use validate::validate;
