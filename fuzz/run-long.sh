#!/bin/sh
# Long fuzz runs, one target at a time (the machine has 2 cores): for each target named on
# the command line (default: all), 1,000,000 executions from the seed corpus with a 2 s
# timeout per input and a 1 GB memory limit. The targets are built once (`cargo fuzz build`),
# then each binary runs as `cargo fuzz run` would run it (so that edits to the tree during the
# runs do not rebuild them). Logs go to target/fuzz-logs/<target>.log, crashes to
# fuzz/artifacts/<target>/. Run from the repository's root after
# `cargo run -p fuzz-targets --bin seed`.
#   fuzz/run-long.sh [TARGET...]       RUNS=1000000 by default
set -u
RUNS=${RUNS:-1000000}
TARGETS=${*:-"literal topology_string json_value protocol_frame result_file token_file expression bundle pnml dds_topology workload xpnet"}
BIN=fuzz/target/x86_64-unknown-linux-gnu/release
mkdir -p target/fuzz-logs
nice -n 10 cargo +nightly fuzz build -O --debug-assertions -s none || exit 1
for t in $TARGETS; do
    mkdir -p "target/fuzz-corpus/$t" "fuzz/artifacts/$t"
    echo "== $t: cargo +nightly fuzz run -O --debug-assertions -s none $t target/fuzz-corpus/$t -- -runs=$RUNS -timeout=2 -rss_limit_mb=1024 -max_len=65536" \
        > "target/fuzz-logs/$t.log"
    start=$(date +%s)
    nice -n 10 "$BIN/$t" -artifact_prefix="fuzz/artifacts/$t/" -runs="$RUNS" -timeout=2 \
        -rss_limit_mb=1024 -max_len=65536 -print_final_stats=1 "target/fuzz-corpus/$t" \
        >> "target/fuzz-logs/$t.log" 2>&1
    echo "== exit $? after $(( $(date +%s) - start )) s" >> "target/fuzz-logs/$t.log"
done
