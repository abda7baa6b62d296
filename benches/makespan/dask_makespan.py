#!/usr/bin/env python3
"""The Dask side of the makespan benchmark (benches/makespan, `gspc-makespan`).

Run by `gspc-makespan` as a child process; it reads one JSON request a line on standard input
and answers one JSON line on standard output:

  {"cmd": "start", "workers": 4}     start a LocalCluster (n_workers=4, threads_per_worker=1,
                                     processes=True) and a Client; answers its start-up time
                                     (from LocalCluster() to all workers connected)
  {"cmd": "run", "waves": [[0, [600, 200, ...]], [400, [300, ...]]]}
                                     submits each wave's tasks (client.submit of a function that
                                     sleeps ms milliseconds, pure=False) at its time in ms after
                                     the first submit, then waits for every result; answers the
                                     makespan (first submit to last result) and each task's
                                     result "MS@WORKER-ADDRESS"
  {"cmd": "cold", "workers": 4, "waves": ...}
                                     a fresh cluster: start-up, then the run, then it is closed;
                                     answers both
  {"cmd": "stop"}                    closes the cluster

The first line it prints names the versions and the time `import dask.distributed` took.
"""
import json
import logging
import sys
import time

T_IMPORT = time.perf_counter()
import dask  # noqa: E402
import distributed  # noqa: E402
from distributed import Client, LocalCluster, get_worker  # noqa: E402

T_IMPORT = time.perf_counter() - T_IMPORT


def nap(ms):
    time.sleep(ms / 1000.0)
    return f"{ms}@{get_worker().address}"


def start(n):
    t = time.perf_counter()
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster)
    client.wait_for_workers(n)
    return cluster, client, time.perf_counter() - t


def run(client, waves):
    futures = []
    t0 = time.perf_counter()
    for at_ms, tasks in waves:
        delay = t0 + at_ms / 1000.0 - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        futures += [client.submit(nap, ms, pure=False) for ms in tasks]
    results = client.gather(futures)
    return time.perf_counter() - t0, results


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    logging.getLogger("distributed").setLevel(logging.ERROR)
    answer({"dask": dask.__version__, "distributed": distributed.__version__,
            "python": sys.version.split()[0], "import_s": T_IMPORT})
    cluster = client = None
    for line in sys.stdin:
        req = json.loads(line)
        cmd = req["cmd"]
        if cmd == "start":
            cluster, client, startup = start(req["workers"])
            answer({"startup_s": startup})
        elif cmd == "run":
            makespan, results = run(client, req["waves"])
            answer({"makespan_s": makespan, "results": results})
        elif cmd == "cold":
            c2, cl2, startup = start(req["workers"])
            makespan, results = run(cl2, req["waves"])
            cl2.close()
            c2.close()
            answer({"startup_s": startup, "makespan_s": makespan, "results": results})
        elif cmd == "stop":
            if client is not None:
                client.close()
                cluster.close()
            answer({"stopped": True})
            return
        else:
            answer({"error": f"unknown command {cmd}"})


if __name__ == "__main__":
    main()
