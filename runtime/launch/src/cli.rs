//! The command-line options that say which workers to start and how, shared (flattened into
//! their clap arguments) by `gspc-run` and `gspc boot`.

use std::path::PathBuf;

/// `--topology`, `--nodefile`, `--launcher`, `--ssh-option`, `--listen`, `--module-path`,
/// `--max-retries`, `--isolate-modules`, `--fake-hosts`.
#[derive(clap::Args, Debug, Default, Clone)]
#[command(next_help_heading = "Workers")]
pub struct WorkerArgs {
    /// The workers to start, GPI-Space's worker description string, e.g. "compute+CPU:2
    /// reduce:1x1" (default: "worker:N", one worker per core; when the net has memory
    /// buffers or transfers, or with --alloc, each default worker gets 64 MiB of working
    /// memory: "worker:N,67108864")
    #[arg(long, value_name = "DESC")]
    pub topology: Option<String>,
    /// Hosts to start workers on, one a line (default: this host)
    #[arg(long, value_name = "FILE")]
    pub nodefile: Option<PathBuf>,
    /// local (default), ssh (OpenSSH to each host of the nodefile) or slurm (srun, inside an
    /// allocation)
    #[arg(long, value_name = "NAME")]
    pub launcher: Option<String>,
    /// An option for ssh (repeatable), e.g. --ssh-option=-p2222
    #[arg(long = "ssh-option", value_name = "OPT", allow_hyphen_values = true)]
    pub ssh_options: Vec<String>,
    /// Where workers connect (default 127.0.0.1:0, loopback only)
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Where workers look for native modules (lib<module>.so) and command modules
    /// (<module>.<function> or <module>); repeatable, searched in order, then the net's
    /// folder, then gspc-worker's folder, then $PNET_MODULE_PATH
    #[arg(long = "module-path", value_name = "DIR")]
    pub module_path: Vec<PathBuf>,
    /// Re-run a task whose worker died at most N times (default: the net's
    /// fhg.drts.schedule.maximum_number_of_retries, else unlimited)
    #[arg(long, value_name = "N")]
    pub max_retries: Option<u32>,
    /// Run native modules in a child process of their worker: a crash (SIGSEGV, abort) fails
    /// the task, the worker survives (costs about a pipe round trip per call; no memory
    /// buffers)
    #[arg(long)]
    pub isolate_modules: bool,
    /// --fake-hosts N, a testing aid: the i-th worker started gets the host identity
    /// `local-<i mod N>` (gspc-worker --host-id), so that workers on this machine move global memory between
    /// them over TCP (loopback), as between hosts
    #[arg(long, value_name = "N")]
    pub fake_hosts: Option<u32>,
}
