//! `gspc-worker`: connects to an agent and runs module calls.

use std::io::Read;
use std::path::PathBuf;

use clap::Parser;
use pnet_protocol::Secret;
use pnet_worker::{Config, Outcome, exit};

const AFTER_HELP: &str = "\
Example (joining a run by hand, the run's secret on standard input):
  echo \"$SECRET\" | gspc-worker --agent 10.0.0.1:7000 --name extra --capabilities compute \\
      --secret-stdin --module-path build";

/// Connects to a gspc agent and runs the module calls it is sent (native libraries
/// `lib<module>.so` and command modules), one at a time. Normally started by the agent's
/// launcher, not by hand.
#[derive(Parser, Debug)]
#[command(name = "gspc-worker", version, after_help = AFTER_HELP)]
struct Args {
    /// The agent's address.
    #[arg(long, value_name = "HOST:PORT")]
    agent: String,
    /// This worker's name (from the placement plan).
    #[arg(long)]
    name: String,
    /// Capabilities this worker offers, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    capabilities: Vec<String>,
    /// Pin this process to socket N (hwloc package, logical index).
    #[arg(long, value_name = "N")]
    socket: Option<u32>,
    /// Read the run's secret (64 hex digits) from the first line of standard input
    /// (else from the environment variable GSPC_SECRET).
    #[arg(long)]
    secret_stdin: bool,
    /// Exit when standard input reaches end of file (launchers pass this, so that workers
    /// go away with their launcher).
    #[arg(long)]
    exit_on_stdin_eof: bool,
    /// A directory to search for modules (after the agent's; repeatable; then the
    /// directories in PNET_MODULE_PATH, separated by ':').
    #[arg(long, value_name = "DIR")]
    module_path: Vec<PathBuf>,
    /// Working memory in bytes (0: none): a shared-memory segment of this size for
    /// the run's global memory, and the most the memory buffers of one module call may use.
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    shm: u64,
    /// The host identity reported for this worker's memory and seen by modules (default: the
    /// hostname). Workers with the same identity map each other's memory; others transfer
    /// over TCP (a testing aid: two local workers with different ids act as two hosts).
    #[arg(long, value_name = "NAME")]
    host_id: Option<String>,
    /// Run native modules in a child process (one per worker, restarted after a crash): a
    /// crashing module (SIGSEGV, abort, ...) then fails its task and this worker survives.
    /// Calls with memory buffers are refused.
    #[arg(long)]
    isolate_modules: bool,
}

fn main() {
    // The hidden helper modes (a command module's supervisor, the isolated module host).
    if let Some(code) = pnet_worker::helper::main_if_helper() {
        std::process::exit(code);
    }
    // Usage errors and --help as every tool's (pnet_stdlib::cli), and --generate=KIND.
    let args = pnet_stdlib::parse_args!(Args, "gspc-worker");
    let name = args.name.clone();
    let code = match start(args) {
        Ok(outcome) => {
            match &outcome {
                Outcome::Refused(reason) => {
                    eprintln!("gspc-worker {name}: refused by the agent: {reason}")
                }
                Outcome::Error(message) => eprintln!("gspc-worker {name}: error: {message}"),
                _ => {}
            }
            outcome.exit_code()
        }
        Err(message) => {
            eprintln!("gspc-worker {name}: error: {message}");
            exit::ERROR
        }
    };
    std::process::exit(code);
}

fn start(args: Args) -> Result<Outcome, String> {
    let secret = Secret::from_stdin_or_env(args.secret_stdin)?;
    if let Some(socket) = args.socket {
        pnet_topology::hwloc::bind_current_process_to_socket(socket)?;
    }
    let stdin_eof = if args.exit_on_stdin_eof {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("stdin".into())
            .spawn(move || {
                let mut buf = [0u8; 1024];
                let mut stdin = std::io::stdin().lock();
                loop {
                    match stdin.read(&mut buf) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                let _ = tx.send(());
            })
            .map_err(|e| format!("cannot start the stdin thread: {e}"))?;
        Some(rx)
    } else {
        None
    };
    let config = Config {
        agent: args.agent,
        name: args.name,
        capabilities: args
            .capabilities
            .into_iter()
            .filter(|c| !c.is_empty())
            .collect(),
        socket: args.socket,
        secret,
        module_path: args.module_path,
        shm: args.shm,
        host_id: args
            .host_id
            .filter(|h| !h.is_empty())
            .unwrap_or_else(pnet_worker::hostname),
        isolate_modules: args.isolate_modules,
        helper: std::env::current_exe().ok(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    Ok(runtime.block_on(pnet_worker::run(config, stdin_eof)))
}
