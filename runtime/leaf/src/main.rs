//! `gspc-leaf`: a leaf agent (see `runtime/agent/SCALE.md`, "The next level: a tree of
//! agents"). The logic is `pnet_agent::run_leaf` (it reuses the agent's worker connections
//! and scheduler); this crate is its command line.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use pnet_protocol::Secret;

const AFTER_HELP: &str = "\
How to run a tree of agents:
  gspc boot --topology worker:0                # the root: a runtime without workers of its own
  gspc-leaf --workers 8 &                      # on each host: reads the root's state directory
                                               # (gspc's default, or --state-dir DIR: shared,
                                               # or a copy of its secret and runtime.json)
  gspc-leaf --root HOST:PORT --workers 8 &     # or: the root's worker address (gspc status:
                                               # `workers connect to`; boot the root with
                                               # --listen HOST:PORT to keep it) and GSPC_SECRET
  gspc wait $(gspc submit net.xpnet -p n=200L)

A leaf started before its root (a job script that starts everything at once) waits for it
(--wait-for-root, 30 s by default), saying so on standard error.

The root sees each leaf as one worker whose window is the leaf's capacity (--depth tasks per
worker of the leaf); the leaf places those tasks on its own workers, re-runs the tasks of a
worker it loses (the root counts the retry), and sends the answers up in batches. A worker it
started that ends (killed, crashed) is started again under its name, as the root does its
own: after 200 ms, doubled for each further restart, at most 3 times (its tasks run on the
others meanwhile, or wait for it; a leaf left without workers gives its tasks back to the
root). When all the workers it started ended for good (their restarts spent), it leaves the
root and exits 1, saying so (with --workers 0 it waits for workers to join). A lost leaf is a lost worker to the root: all its tasks
run again. The leaf exits when the root stops it (gspc stop), and stops the workers it
started.

If the root crashes (its connection lost), the leaf keeps its workers (the tasks it held are
cancelled) and tries to join again for up to --wait-for-root seconds, reading the state
directory again at each try: after `gspc boot --resume` it rejoins with the same workers and
the resumed jobs go on. A resumed root keeps its secret; with --root, boot the root with
--listen HOST:PORT so that it is back at the same address. With --shm, its workers' segments
join the resumed root's global memory again; the crashed root's allocations are not brought
back (jobs holding them fail at resume), and their bytes stay in the segments as freed
memory's do. If the root does not come back in time, it stops its workers and exits 1.

`gspc status` shows the leaf with its capacity and its workers under it; `gspc tasks` names
the worker under the leaf that ran each task (LEAF/WORKER).

Module calls with memory buffers or transfers need workers with working memory: with
--shm BYTES the leaf's workers have that much each, it offers the capability GPI, and their
memory is part of the root's global memory (`gspc status`: segments per host). Without it,
the root keeps such calls for workers with the capability GPI elsewhere (`gspc jobs` says
that the job waits for one).

Exit codes: 0 stopped by the root, 1 failure (the root refused it, went away and did not
come back within --wait-for-root, cannot be reached), 2 usage error.";

/// A leaf agent: connects to a root agent as one fat worker and runs the tasks the root
/// gives it on its own workers (which it starts, or which connect to --listen)
#[derive(Parser, Debug)]
#[command(name = "gspc-leaf", version, after_help = AFTER_HELP)]
struct Args {
    /// The root agent's worker address (secret in GSPC_SECRET, or --secret-stdin).
    #[arg(long, value_name = "HOST:PORT")]
    root: Option<String>,
    /// The root runtime's state directory (`gspc boot`): its address and secret are read
    /// from there (default, without --root: gspc's, $GSPC_STATE_DIR, else
    /// $XDG_RUNTIME_DIR/gspc, else /tmp/gspc-UID/default).
    #[arg(long, value_name = "DIR", conflicts_with = "root")]
    state_dir: Option<PathBuf>,
    /// Read the secret (64 hex digits) from the first line of standard input.
    #[arg(long)]
    secret_stdin: bool,
    /// gspc-worker processes to start (and stop) on this host (0: only workers that join at
    /// --listen).
    #[arg(long, value_name = "N", default_value_t = 0)]
    workers: usize,
    /// The leaf's name, as the root shows it (default: leaf-HOST-PID); the root refuses a
    /// second leaf of a joined one's name.
    #[arg(long)]
    name: Option<String>,
    /// Where its workers connect (more workers may join there with the same secret).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Capabilities of its workers (it says them to the root), comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    capabilities: Vec<String>,
    /// A directory its workers search for modules (repeatable).
    #[arg(long, value_name = "DIR")]
    module_path: Vec<PathBuf>,
    /// Working memory of each worker it starts, in bytes (0: none): their segments join the
    /// root's global memory, and the leaf offers the capability GPI (calls with memory
    /// buffers and transfers).
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    shm: u64,
    /// Tasks per worker the root may keep on this leaf.
    #[arg(long, value_name = "N", default_value_t = 4)]
    depth: u32,
    /// The worker program (default: gspc-worker beside this program, or $GSPC_WORKER).
    #[arg(long, value_name = "PATH")]
    worker_program: Option<PathBuf>,
    /// Seconds to wait for a root that is not there yet (no runtime in the state directory,
    /// nothing listening at its address), and for a crashed root to come back (keeping the
    /// workers); 0: fail at once.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    wait_for_root: f64,
    /// Log joins, losses and the end to standard error.
    #[arg(short, long)]
    verbose: bool,
}

fn main() {
    let args = pnet_stdlib::parse_args!(Args, "gspc-leaf");
    let code = match start(args) {
        Ok(report) => {
            eprintln!(
                "gspc-leaf: {} ({} answers, {} worker{} lost)",
                report.ended,
                report.answers,
                report.workers_lost,
                if report.workers_lost == 1 { "" } else { "s" }
            );
            i32::from(report.ended != "stopped by the root")
        }
        Err(e) => {
            eprintln!("gspc-leaf: error: {e}");
            1
        }
    };
    std::process::exit(code);
}

fn start(args: Args) -> Result<pnet_agent::LeafReport, String> {
    let state_dir = match (&args.state_dir, &args.root) {
        (Some(dir), _) => Some(dir.clone()),
        (None, None) => Some(pnet_agent::control::default_state_dir()),
        (None, Some(_)) => None,
    };
    // With a state directory, the leaf reads the root's address and secret from it (while
    // it waits for the root, again at each attempt).
    let (root, secret) = match &state_dir {
        Some(_) => (String::new(), Secret::random().map_err(|e| e.to_string())?),
        None => {
            let root = args.root.clone().unwrap_or_default();
            let secret = Secret::from_stdin_or_env(args.secret_stdin)?;
            (root, secret)
        }
    };
    if !(args.wait_for_root.is_finite() && args.wait_for_root >= 0.0) {
        return Err(format!(
            "--wait-for-root {}: give a number of seconds (0: do not wait)",
            args.wait_for_root
        ));
    }
    let gpi = pnet_agent::memory::GPI_CAPABILITY;
    let mut capabilities: Vec<String> = (args.capabilities.iter())
        .filter(|c| !c.is_empty() && *c != gpi)
        .cloned()
        .collect();
    if args.capabilities.iter().any(|c| c == gpi) && args.shm == 0 {
        return Err(format!(
            "--capabilities {gpi}: the capability of workers with working memory; give them \
             some with --shm BYTES (which adds {gpi})"
        ));
    }
    if args.shm > 0 {
        capabilities.push(gpi.to_string());
    }
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| format!("leaf-{}-{}", host(), std::process::id()));
    let cfg = pnet_agent::LeafConfig {
        root,
        secret,
        state_dir,
        wait_for_root: std::time::Duration::from_secs_f64(args.wait_for_root),
        on_wait: Some(|line| eprintln!("gspc-leaf: {line}")),
        name,
        listen: args.listen,
        workers: args.workers,
        worker_program: args
            .worker_program
            .clone()
            .unwrap_or_else(pnet_agent::worker_program),
        capabilities,
        shm: args.shm,
        module_path: args.module_path.clone(),
        depth: args.depth,
        verbose: args.verbose,
        on_listen: Some(if args.workers == 0 {
            |addr| {
                eprintln!(
                    "gspc-leaf: workers connect to {addr} (it started none, --workers 0: the root \
                     gives it tasks once workers join there)"
                );
            }
        } else {
            |addr| eprintln!("gspc-leaf: workers connect to {addr}")
        }),
    };
    pnet_agent::run_leaf(cfg).map_err(|e| e.to_string())
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}
