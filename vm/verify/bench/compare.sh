#!/usr/bin/env bash
# Benchmark pnetv against SNAKES and pm4py on the MCC models and generated Philosophers nets.
# Usage: vm/verify/bench/compare.sh [OUTDIR]   (from anywhere; OUTDIR defaults to /tmp/pnetv-bench)
# Installs the peers into a venv under /tmp (pip install snakes pm4py), builds pnetv in
# release mode, runs compare.py and prints a Markdown table (also OUTDIR/results.json).
# NO_PEERS=1 measures pnetv alone (no venv, no peers).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
OUT="${1:-/tmp/pnetv-bench}"
VENV=/tmp/pnetv-peers
PEERS=()
if [ -n "${NO_PEERS:-}" ]; then
  PY=python3
  PEERS=(--no-peers)
else
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
  fi
  "$VENV/bin/pip" install -q snakes pm4py
  PY="$VENV/bin/python"
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
cargo build --release -q -p pnetv --manifest-path "$ROOT/Cargo.toml"
PNETV="$CARGO_TARGET_DIR/release/pnetv"
# Philosophers-10: 59,049 states (peers can finish); Philosophers-15: 14,348,907 states.
"$PY" "$HERE/compare.py" "$PNETV" "$OUT" "${PEERS[@]}" \
  --philosophers 10 --philosophers 15 --peer-timeout "${PEER_TIMEOUT:-600}" --big-timeout "${BIG_TIMEOUT:-600}"
