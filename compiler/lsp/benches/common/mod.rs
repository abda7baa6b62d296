//! What the two latency benches share: their arguments, medians, milliseconds and the
//! thread's CPU time.

use std::path::PathBuf;
use std::time::Duration;

/// `[-- N ROUNDS [ONLY]]`: the generated net's size (5,000 transitions), the edits per row
/// (20), and a filter on the rows' names; the generated text and the path it is analysed as.
pub struct Args {
    pub n: usize,
    pub rounds: usize,
    pub only: Option<String>,
    pub text: String,
    pub path: PathBuf,
}

impl Args {
    pub fn read() -> Args {
        let args: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| a != "--bench")
            .collect();
        let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(5000);
        Args {
            n,
            rounds: args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20),
            only: args.get(2).cloned(),
            text: pnet_lsp::generate::chain_net(n),
            path: PathBuf::from("/nonexistent/bench/chain.xpnet"),
        }
    }
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The CPU time this thread has run (`/proc/thread-self/schedstat`, nanoseconds; zero where
/// it is absent): on a loaded machine, the time an edit costs without the time it waited.
pub fn cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
}
