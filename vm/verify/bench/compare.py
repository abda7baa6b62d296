#!/usr/bin/env python3
"""Side-by-side benchmark: full reachability graphs with pnetv, SNAKES and pm4py.

Usage: compare.py PNETV OUTDIR [--philosophers N ...] [--peer-timeout S] [--big-timeout S]
                  [--no-peers]

Models: the six MCC models of shared/corpus/mcc and Philosophers-N nets generated here as
PNML (the MCC's Philosophers structure; 3^N states). Every tool reads the same PNML file:
pnetv and pm4py parse it themselves; SNAKES has no reader for the MCC's PNML dialect, so
this driver parses the file with ElementTree and builds the SNAKES net from it (parsing is
inside SNAKES' timed region too). Each peer runs in a child process under a timeout.
Prints a Markdown table and writes results.json into OUTDIR.
"""
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "shared", "corpus", "mcc"))


def philosophers(n):
    """The MCC's Philosophers-PT-N as PNML text."""
    out = ['<?xml version="1.0"?>',
           '<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">',
           f'<net id="Philosophers-PT-{n}" type="http://www.pnml.org/version-2009/grammar/ptnet"><page id="page0">']
    def place(pid, m):
        out.append(f'<place id="{pid}"><name><text>{pid}</text></name>'
                   + (f'<initialMarking><text>{m}</text></initialMarking>' if m else '') + '</place>')
    for i in range(1, n + 1):
        place(f"Think_{i}", 1); place(f"Fork_{i}", 1)
        place(f"Catch1_{i}", 0); place(f"Catch2_{i}", 0); place(f"Eat_{i}", 0)
    arcs = []
    for i in range(1, n + 1):
        left = f"Fork_{n if i == 1 else i - 1}"
        ts = {
            f"FF1a_{i}": ([left, f"Think_{i}"], [f"Catch1_{i}"]),
            f"FF1b_{i}": ([f"Think_{i}", f"Fork_{i}"], [f"Catch2_{i}"]),
            f"FF2a_{i}": ([f"Catch1_{i}", f"Fork_{i}"], [f"Eat_{i}"]),
            f"FF2b_{i}": ([left, f"Catch2_{i}"], [f"Eat_{i}"]),
            f"End_{i}": ([f"Eat_{i}"], [f"Fork_{i}", f"Think_{i}", left]),
        }
        for t, (pre, post) in ts.items():
            out.append(f'<transition id="{t}"><name><text>{t}</text></name></transition>')
            arcs += [(p, t) for p in pre] + [(t, p) for p in post]
    for k, (s, d) in enumerate(arcs):
        out.append(f'<arc id="a{k}" source="{s}" target="{d}"/>')
    out.append('</page></net></pnml>')
    return "\n".join(out) + "\n"


def read_pt(path):
    """(places {id: m0}, transitions {id: (pre {p: w}, post {p: w})}) from PNML."""
    root = ET.parse(path).getroot()
    def tag(e):
        return e.tag.rsplit('}', 1)[-1]
    places, trans, arcs = {}, {}, []
    for e in root.iter():
        t = tag(e)
        if t == "place":
            m = 0
            for c in e:
                if tag(c) == "initialMarking":
                    for x in c:
                        if tag(x) == "text":
                            m = int(x.text.strip())
            places[e.get("id")] = m
        elif t == "transition":
            trans[e.get("id")] = ({}, {})
        elif t == "arc":
            w = 1
            for c in e:
                if tag(c) == "inscription":
                    for x in c:
                        if tag(x) == "text":
                            w = int(x.text.strip())
            arcs.append((e.get("source"), e.get("target"), w))
    for s, d, w in arcs:
        if d in trans:
            trans[d][0][s] = trans[d][0].get(s, 0) + w
        else:
            trans[s][1][d] = trans[s][1].get(d, 0) + w
    return places, trans


def peer_snakes(path):
    from snakes.nets import PetriNet, Place, Transition, Value, MultiArc, StateGraph, dot
    t0 = time.perf_counter()
    places, trans = read_pt(path)
    net = PetriNet("n")
    for p, m in places.items():
        net.add_place(Place(p, [dot] * m))
    def arc(w):
        return Value(dot) if w == 1 else MultiArc([Value(dot)] * w)
    for t, (pre, post) in trans.items():
        net.add_transition(Transition(t))
        for p, w in pre.items():
            net.add_input(p, t, arc(w))
        for p, w in post.items():
            net.add_output(p, t, arc(w))
    g = StateGraph(net)
    g.build()
    states = len(g)
    edges = 0
    for s in range(states):
        # successors(s): {target: set of (transition, mode)}; count every firing.
        edges += sum(len(v) for v in g._succ[s].values())
    return states, edges, time.perf_counter() - t0


def peer_pm4py(path):
    from pm4py.objects.petri_net.importer import importer as pnml_importer
    from pm4py.objects.petri_net.utils import reachability_graph
    t0 = time.perf_counter()
    net, im, _ = pnml_importer.apply(path)
    ts = reachability_graph.construct_reachability_graph(net, im)
    return len(ts.states), len(ts.transitions), time.perf_counter() - t0


def rusage(lines):
    if not lines:
        return {"maxrss_kb": None, "cpu": None}
    w = lines[-1].split()
    return {"maxrss_kb": int(w[1]), "cpu": float(w[2]) + float(w[3])}


def run_peer(name, path, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--peer", name, path]
    t0 = time.perf_counter()
    # A session of its own, so that a timeout ends /usr/bin/time and the peer under it.
    proc = subprocess.Popen(["/usr/bin/time", "-f", "MAXRSS %M %U %S"] + cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        return {"status": f"timeout after {timeout} s"}
    p = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    wall = time.perf_counter() - t0
    rss = [l for l in p.stderr.splitlines() if l.startswith("MAXRSS")]
    if p.returncode != 0:
        tail = p.stderr.strip().splitlines()[-3:]
        return {"status": "error: " + " | ".join(tail)}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r.update(status="ok", wall=wall, **rusage(rss))
    return r


def run_pnetv(pnetv, path, extra, timeout):
    cmd = ["/usr/bin/time", "-f", "MAXRSS %M %U %S", pnetv, "--json"] + extra + [path]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout after {timeout} s"}
    wall = time.perf_counter() - t0
    if p.returncode not in (0, 3, 4):
        return {"status": "error: " + p.stderr.strip()[-300:]}
    j = json.loads(p.stdout)
    rss = [l for l in p.stderr.splitlines() if l.startswith("MAXRSS")]
    return {"status": "ok", "states": j["states"], "edges": j["edges"], "seconds": j["seconds"], "wall": wall,
            "bytes_per_state": j["bytes_per_state"], "bits": j["packing_bits"],
            **rusage(rss), "deadlock": j["deadlock"],
            "dead_markings": j["dead_markings"]}


def main():
    if sys.argv[1] == "--peer":
        f = {"snakes": peer_snakes, "pm4py": peer_pm4py}[sys.argv[2]]
        s, e, secs = f(sys.argv[3])
        print(json.dumps({"states": s, "edges": e, "seconds": secs}))
        return
    pnetv, outdir = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    sizes, peer_timeout, big_timeout, peers = [], 300, 300, True
    i = 0
    while i < len(args):
        if args[i] == "--philosophers":
            sizes.append(int(args[i + 1])); i += 2
        elif args[i] == "--peer-timeout":
            peer_timeout = int(args[i + 1]); i += 2
        elif args[i] == "--big-timeout":
            big_timeout = int(args[i + 1]); i += 2
        elif args[i] == "--no-peers":
            peers = False; i += 1
        else:
            sys.exit(f"unknown argument {args[i]}")
    os.makedirs(outdir, exist_ok=True)
    models = [(d, os.path.join(CORPUS, d, "model.pnml")) for d in sorted(os.listdir(CORPUS))]
    for n in sizes:
        path = os.path.join(outdir, f"Philosophers-PT-{n}.pnml")
        with open(path, "w") as f:
            f.write(philosophers(n))
        models.append((f"Philosophers-{n} (generated)", path))
    results = []
    for name, path in models:
        big = "generated" in name and 3 ** int(name.split("-")[1].split()[0]) > 10 ** 6
        row = {"model": name}
        # pnetv: the full graph (states, edges, bounds, deadlocks, safety) without the SCC
        # pass (invariants included: they prove 1-safety, which selects the 1-bit fast path),
        # then the complete default analysis, then stubborn sets.
        row["pnetv"] = run_pnetv(pnetv, path, ["--no-scc"], 3600)
        # The peers' work and nothing more: the reachability graph (no invariants, no SCCs).
        row["pnetv_graph"] = run_pnetv(pnetv, path, ["--no-scc", "--no-invariants"], 3600)
        # The same with the compact state index (less memory, slower lookups).
        row["pnetv_compact"] = run_pnetv(pnetv, path, ["--no-scc", "--compact"], 3600)
        row["pnetv_full"] = {"status": "skipped"} if big else run_pnetv(pnetv, path, [], 3600)
        row["pnetv_stubborn"] = run_pnetv(pnetv, path, ["--stubborn"], 3600)
        for peer in ("snakes", "pm4py"):
            row[peer] = (run_peer(peer, path, big_timeout if big else peer_timeout) if peers
                         else {"status": "not run"})
        results.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    with open(os.path.join(outdir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(table(results))


def table(results):
    def cell(r):
        if r.get("status") != "ok":
            return r.get("status", "?"), "", ""
        return f'{r["states"]:,}', f'{r["edges"]:,}', f'{r["seconds"]:.3f}'
    lines = ["| model | pnetv states | pnetv edges | pnetv s (graph) | pnetv CPU s (process) | pnetv s (all verdicts) | Mstates/s (CPU) | bytes/state | max RSS MB | --compact: CPU s / bytes/state / max RSS MB | SNAKES states / edges / s | pm4py states / edges / s | speed-up vs faster peer | pnetv s (graph only, the peers' work) | speed-up vs faster peer (same work) | stubborn states |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in results:
        p = row["pnetv"]
        if p.get("status") != "ok":
            lines.append(f'| {row["model"]} | {p.get("status")} |')
            continue
        pf = row["pnetv_full"]
        peers = []
        best = None
        for peer in ("snakes", "pm4py"):
            r = row[peer]
            if r.get("status") == "ok":
                same = (r["states"], r["edges"]) == (p["states"], p["edges"])
                peers.append(f'{r["states"]:,} / {r["edges"]:,} / {r["seconds"]:.2f}' + ("" if same else " (DIFFERENT COUNTS)"))
                best = r["seconds"] if best is None else min(best, r["seconds"])
            else:
                peers.append(r.get("status"))
        speed = f'{best / max(p["seconds"], 1e-6):,.0f}x' if best else "peers did not finish"
        g = row["pnetv_graph"]
        graph_s = f'{g["seconds"]:.4f}' if g.get("status") == "ok" else g.get("status")
        graph_speed = (f'{best / max(g["seconds"], 1e-6):,.0f}x' if best and g.get("status") == "ok"
                       else "peers did not finish" if not best else "-")
        st = row["pnetv_stubborn"]
        stub = f'{st["states"]:,}' if st.get("status") == "ok" else st.get("status")
        full_s = f'{pf["seconds"]:.3f}' if pf.get("status") == "ok" else pf.get("status")
        pc = row["pnetv_compact"]
        compact = (f'{pc["cpu"]:.2f} / {pc["bytes_per_state"]:.1f} / {pc["maxrss_kb"] / 1024:.0f}'
                   if pc.get("status") == "ok" else pc.get("status"))
        lines.append(
            f'| {row["model"]} | {p["states"]:,} | {p["edges"]:,} | {p["seconds"]:.3f} | {p["cpu"]:.2f} | {full_s} | '
            f'{p["states"] / max(p["cpu"], 1e-3) / 1e6:.2f} | {p["bytes_per_state"]:.1f} | {p["maxrss_kb"] / 1024:.0f} | '
            f'{compact} | {peers[0]} | {peers[1]} | {speed} | {graph_s} | {graph_speed} | {stub} |')
    return "\n".join(lines)


if __name__ == "__main__":
    main()
