//! Runs DDS topologies (FairRootGroup/DDS XML, read by `pnet-dds`) on the runtime.
//!
//! * [`mod@place`]: the runtime's workers (a [`pnet_topology::Plan`], by default one worker per
//!   core on this host) are DDS's slots; every task instance gets one, collections stay on
//!   one host, requirements hold (see the module for each kind's reading).
//! * [`runner::run`]: a property server on a TCP port (127.0.0.1 by default) with a
//!   per-session random secret, then one `gspc-property exec` wrapper per task instance,
//!   started on its slot's host through pnet-launch (local, ssh or Slurm). The wrapper gets
//!   the secret on stdin, fetches its setup (command, environment, assets), prepares the
//!   task's folder and runs the task through `/bin/sh -c`; see [`wrapper`] and [`setup`] for
//!   the folders and the environment.
//! * [`props`]: DDS's property rules (access, scope, 256 characters), served by [`server`] to
//!   `gspc-property set|get|wait` and to the Rust API [`client::Properties`].
//! * Triggers: a task whose `TaskCrashed`/`RestartTask` trigger allows it is restarted on the
//!   same slot with the same id and environment, at most `arg` times; any other crash (a
//!   non-zero exit, a signal, a wrapper that could not start it) stops the other tasks and
//!   fails the session ([`report::Outcome::TaskFailed`]).
//! * [`cli`]: the command lines `gspc-dds` ([`main`]) and `gspc-property`.
//!
//! The data flow is `text -> pnet_dds::parse -> pnet_dds::expand -> place -> run ->
//! RunReport`.

pub mod cli;
pub mod client;
mod frontend;
pub mod place;
pub mod props;
pub mod report;
pub mod runner;
pub mod server;
pub mod setup;
pub mod wrapper;

pub mod testing;

pub use cli::{is_dds_topology, main, main_as};
pub use place::{Assignment, PlaceError, Slot, place, slots_from_plan};
pub use report::{Outcome, RunReport, TaskReport};
pub use runner::{RunConfig, RunError, run};
