#!/usr/bin/env python3
"""pnetv's default run against its --no-invariants run (issue 26: the invariants never dominate).

Usage: invariants.py OUTDIR PNETV [PNETV ...] [--philosophers N ...] [--reps R]

Models: the MCC models of shared/corpus/mcc, Philosophers-N generated as in compare.py, and
Drain-N-K (generated here): N places, K tokens on the first, a move between every ordered pair
of places and one transition that drains the first place: no P-invariant at all and a number
of minimal T-invariants exponential in N (every elementary cycle of the complete digraph),
with a small state space, the shape of the issue's worst contest models.
For every model each binary runs the default analysis and --no-invariants, interleaved, R
times each (CPU time by `perf stat -e task-clock`, each time the mean of as many runs as last
about 0.3 s; over the R times the median, and the minimum, the steadier figure on a loaded
machine, which the ratio uses), then once under /usr/bin/time for
the peak RSS. Prints a Markdown table; the states, edges and verdicts of every run are
checked equal.
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import CORPUS, philosophers  # noqa: E402


def drain(n, k):
    out = ['<?xml version="1.0"?>',
           '<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">',
           f'<net id="Drain-{n}-{k}" type="http://www.pnml.org/version-2009/grammar/ptnet"><page id="page0">']
    for i in range(n):
        m = f'<initialMarking><text>{k}</text></initialMarking>' if i == 0 and k else ''
        out.append(f'<place id="p{i}"><name><text>p{i}</text></name>{m}</place>')
    arcs = []
    for i in range(n):
        for j in range(n):
            if i != j:
                t = f"m{i}_{j}"
                out.append(f'<transition id="{t}"><name><text>{t}</text></name></transition>')
                arcs += [(f"p{i}", t), (t, f"p{j}")]
    out.append('<transition id="drain"><name><text>drain</text></name></transition>')
    arcs.append(("p0", "drain"))
    for a, (s, d) in enumerate(arcs):
        out.append(f'<arc id="a{a}" source="{s}" target="{d}"/>')
    out.append('</page></net></pnml>')
    return "\n".join(out) + "\n"


def cpu_ms(cmd, runs=1):
    """Mean CPU ms of `runs` runs of `cmd` (perf stat -r), and the output of the last."""
    r = subprocess.run(["perf", "stat", "-r", str(runs), "-x,", "-e", "task-clock"] + cmd,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in r.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2] == "task-clock":
            return float(f[0]), r.stdout
    raise SystemExit(f"perf failed: {r.stderr}")


def peak_mb(cmd):
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(r.stderr.strip().splitlines()[-1]) / 1024


def counts(stdout):
    j, _ = json.JSONDecoder().raw_decode(stdout)  # perf -r: the first run's report
    return (j["states"], j["edges"], j["deadlock"], j["one_safe"], j["bounded"],
            j["terminates"], j["dead_markings"])


def main():
    args = sys.argv[1:]
    outdir, bins, sizes, reps = args[0], [], [], 5
    i = 1
    while i < len(args):
        if args[i] == "--philosophers":
            i += 1
            while i < len(args) and args[i].isdigit():
                sizes.append(int(args[i])); i += 1
        elif args[i] == "--reps":
            reps = int(args[i + 1]); i += 2
        else:
            bins.append(args[i]); i += 1
    os.makedirs(outdir, exist_ok=True)
    models = [(d, os.path.join(CORPUS, d, "model.pnml")) for d in sorted(os.listdir(CORPUS))]
    for name, text in [("Drain-8-1", drain(8, 1)), ("Drain-8-4", drain(8, 4))] + [
            (f"Philosophers-{n}", philosophers(n)) for n in sizes]:
        path = os.path.join(outdir, name + ".pnml")
        with open(path, "w") as f:
            f.write(text)
        models.append((name, path))
    modes = [("default", []), ("no-inv", ["--no-invariants"])]
    head = ["model", "states"] + [f"{b} {m} CPU ms median (min)"
                                  for b in bins for m, _ in modes]
    head += [f"{b} default / no-inv" for b in range(len(bins))]
    head += [f"{b} peak RSS MB default / no-inv" for b in range(len(bins))]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, path in models:
        times = {(b, m): [] for b in bins for m, _ in modes}
        ref = None
        # Each measurement is the mean of enough runs to last about 0.3 s (short runs are
        # dominated by the start of the process and the machine's other jobs).
        first, _ = cpu_ms([bins[0], "--json", path])
        runs = max(1, min(50, int(300 / max(first, 0.1))))
        for _ in range(reps):
            for b in bins:
                for m, extra in modes:
                    ms, out = cpu_ms([b, "--json"] + extra + [path], runs)
                    c = counts(out)
                    if ref is None:
                        ref = c
                    elif c[:5] != ref[:5]:
                        raise SystemExit(f"{name}: {b} {m} gives {c}, not {ref}")
                    times[(b, m)].append(ms)
        med = {k: statistics.median(v) for k, v in times.items()}
        low = {k: min(v) for k, v in times.items()}
        row = [name, f"{ref[0]:,}"] + [f"{med[(b, m)]:.1f} ({low[(b, m)]:.1f})"
                                        for b in bins for m, _ in modes]
        row += [f"{low[(b, 'default')] / low[(b, 'no-inv')]:.2f}" for b in bins]
        row += [f"{peak_mb([b, path]):.0f} / {peak_mb([b, '--no-invariants', path]):.0f}"
                for b in bins]
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
