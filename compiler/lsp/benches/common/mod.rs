//! What the two latency benches share: medians, milliseconds and the thread's CPU time.

use std::time::Duration;

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
