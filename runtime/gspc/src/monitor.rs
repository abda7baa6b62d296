//! `gspc monitor`: serves the live web page of the runtime (`pnet_monitor`) until stopped;
//! the page's URL is the first line of the output.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::{default_state_dir, fail};

/// gspc monitor: a live web page of the runtime: its workers (host, capabilities, state,
/// current task, load), its jobs (state, progress, errors), a Gantt chart of the tasks per
/// worker over time (zoom; click a task for its transition, times, log and error) and the
/// global memory's segments.
///
/// Prints the page's URL (on 127.0.0.1, with a random token: only who has the URL sees the
/// page) as the first line and serves until stopped (Ctrl-C). The page's files are inside
/// gspc: it needs no internet. From another machine: ssh -L PORT:127.0.0.1:PORT HEAD, then
/// open the URL there.
#[derive(Parser)]
#[command(name = "gspc monitor", bin_name = "gspc monitor")]
struct Cli {
    /// The runtime's private state directory (default: $GSPC_STATE_DIR, else
    /// $XDG_RUNTIME_DIR/gspc, else /tmp/gspc-UID/default)
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// The port to listen on, on 127.0.0.1 (default: a free one)
    #[arg(long, value_name = "N", default_value_t = 0)]
    port: u16,
    /// How often the runtime is asked for its state, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 250, value_parser = clap::value_parser!(u64).range(10..))]
    interval: u64,
}

pub fn main(argv: &[OsString]) -> ExitCode {
    let argv = std::iter::once(OsString::from("gspc monitor")).chain(argv.iter().cloned());
    let cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => pnet_stdlib::cli::exit_after_parse(
            "gspc monitor",
            &e.render().to_string(),
            e.use_stderr(),
            e.exit_code(),
        ),
    };
    let state_dir = cli.state_dir.unwrap_or_else(default_state_dir);
    let source = match pnet_monitor::RuntimeSource::open(&state_dir) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let options = pnet_monitor::Options {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], cli.port)),
        interval: Duration::from_millis(cli.interval),
        ..pnet_monitor::Options::default()
    };
    let monitor = match pnet_monitor::start(Box::new(source), options) {
        Ok(m) => m,
        Err(e) => {
            pnet_stdlib::errln!(
                "gspc: error[gspc-monitor]: cannot serve on 127.0.0.1:{}: {e}",
                cli.port
            );
            return ExitCode::from(1);
        }
    };
    pnet_stdlib::outln!("{}", monitor.url());
    pnet_stdlib::errln!("gspc monitor: serving the page above until stopped (Ctrl-C)");
    monitor.wait();
    ExitCode::SUCCESS
}
