//! `cargo bench -p pnet-dds`: median time of parsing and of expanding DDS's largest test
//! topology (`topology_test_8.xml`, half a million task instances).

use std::time::{Duration, Instant};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let path = pnet_tests::corpus().join("dds/dds-topology-lib/tests/topology_test_8.xml");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("expand bench: cannot read {}: {e}", path.display());
            return;
        }
    };
    let options = pnet_dds::ParseOptions::default();
    let runs = 11;

    let mut parse_times = Vec::new();
    let mut topology = None;
    for _ in 0..runs {
        let start = Instant::now();
        let (t, diags) = pnet_dds::parse(std::hint::black_box(&text), &options);
        parse_times.push(start.elapsed());
        assert!(diags.is_empty(), "{diags:?}");
        topology = t;
    }
    let Some(topology) = topology else {
        eprintln!("expand bench: topology_test_8.xml did not parse");
        return;
    };

    let mut expand_times = Vec::new();
    let mut tasks = 0;
    for _ in 0..runs {
        let start = Instant::now();
        let expanded = pnet_dds::expand(std::hint::black_box(&topology));
        expand_times.push(start.elapsed());
        tasks = expanded.tasks.len();
        drop(std::hint::black_box(expanded));
    }

    let mut count_times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let c = pnet_dds::count(std::hint::black_box(&topology));
        count_times.push(start.elapsed());
        std::hint::black_box(c);
    }

    let first = expand_times[0];
    println!("topology_test_8.xml: {tasks} task instances, median of {runs} runs");
    println!("expand (first run): {first:?}");
    println!("parse:  {:?}", median(parse_times));
    println!("expand: {:?}", median(expand_times));
    println!("count:  {:?}", median(count_times));
}
