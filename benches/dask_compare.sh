#!/usr/bin/env bash
# Compares the agent's no-op task throughput with Dask's on this machine:
#   N no-op tasks (default 100000) on 2 local workers, each side measured the same way
#   (submit all, wait for all results). Dask: LocalCluster(n_workers=2, threads_per_worker=1),
#   client.map(noop, range(N)) + gather, timed after the cluster started. Ours:
#   pnet-agent-bench (a hand-built net feeding N tokens to a transition calling the native
#   module noop.run on 2 gspc-workers), timed including the workers' start.
# Usage: benches/dask_compare.sh [N]   (env: VENV=/tmp/pnet-dask-venv)
# Run it when the machine is quiet.
set -euo pipefail
N=${1:-${N:-100000}}
VENV=${VENV:-/tmp/pnet-dask-venv}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

if [ ! -x "$VENV/bin/python" ]; then
    echo "creating a venv in $VENV and installing dask distributed ..." >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check dask distributed
fi

echo "building pnet-agent-bench, gspc-worker and libnoop.so (release) ..." >&2
(cd "$ROOT" && cargo build -q --release -p pnet-benches -p pnet-worker -p pnet-example-noop)

DASK_PY=$(mktemp /tmp/pnet-dask-XXXXXX.py)
trap 'rm -f "$DASK_PY"' EXIT
cat > "$DASK_PY" <<'PY'
import sys, time, logging
from dask.distributed import Client, LocalCluster

def noop(x):
    return None

if __name__ == "__main__":
    n = int(sys.argv[1])
    logging.getLogger("distributed").setLevel(logging.ERROR)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
         Client(cluster) as client:
        client.gather(client.map(noop, range(100), pure=False))  # warm-up
        t = time.perf_counter()
        client.gather(client.map(noop, range(n), pure=False))
        dt = time.perf_counter() - t
    print(f"{n / dt:.1f}")
PY

echo "running $N no-op tasks on Dask ..." >&2
DASK_RATE=$("$VENV/bin/python" "$DASK_PY" "$N" 2>/dev/null | tail -n 1)
echo "running $N no-op tasks on the agent ..." >&2
OURS_JSON=$("$TARGET/release/pnet-agent-bench" --tasks "$N" --latency-tasks 0 --json)
OURS_RATE=$(printf '%s\n' "$OURS_JSON" | python3 -c 'import sys, json; print(json.loads(sys.stdin.readline())["tasks_per_second"])')

python3 - "$N" "$DASK_RATE" "$OURS_RATE" <<'PY'
import sys
n, dask, ours = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"{n} no-op tasks, 2 workers")
print(f"  dask distributed: {dask:12.0f} tasks/s")
print(f"  pnet agent:       {ours:12.0f} tasks/s")
print(f"  ratio:            {ours / dask:12.1f}x")
PY
