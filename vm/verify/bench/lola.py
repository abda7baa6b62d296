#!/usr/bin/env python3
"""pnetv side by side with LoLA 2.0 (explicit-state, full reachability graph) on PNML models.

Usage:
  lola.py [--build] [--lola PATH] [--cache DIR] [--timeout S] [--out DIR]
          [--pnetv PATH] [--pnetv-arg ARG ...] MODEL.pnml ...
  lola.py --emit-lola MODEL.pnml            (print the LoLA net of a PNML file and exit)
  lola.py --lola bfs MODEL.pnml ...         (the stand-in peer: see below)

--build fetches LoLA 2.0's public source ($LOLA_URL, default LOLA_URL below) into the cache
directory (--cache, default $LOLA_CACHE or ~/.cache/pnetv-lola), builds it there
(./configure && make) and uses CACHE/lola-2.0/src/lola; without --build the peer is --lola, or
the cached build, or `lola` on PATH; `--lola bfs` is a stand-in peer (a plain BFS in Python
over the converted file, read back) that checks the converter where LoLA cannot be built. Each PNML model is converted to LoLA's net format
(places and transitions renamed p<i> / t<i> in PNML order, so that any PNML id is accepted),
written to OUT (default /tmp/pnetv-lola), and both tools run on it under the timeout:
pnetv --json --no-scc (and the --pnetv-arg arguments, e.g. --threads 2) on the PNML file,
`lola --check=full --stubborn=off` on the converted one (the whole graph, no reduction). The
states and edges of both are checked equal; the table gives wall and CPU seconds and peak
memory (/usr/bin/time) of each. Exit status 1 when a count differs.

Tested here: the converter and the pnetv side, with `--lola bfs` (counts equal on the six
corpus MCC models and Philosophers-10). This machine has no Internet access: the fetch, the
build, LoLA's options and the parsing of its output are untested (LoLA 2.0 prints
"lola: N markings, M edges" with --check=full).
"""
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ next to compare.py
sys.path.insert(0, HERE)
from compare import read_pt  # noqa: E402

LOLA_URL = os.environ.get(
    "LOLA_URL", "https://theo.informatik.uni-rostock.de/storages/uni-rostock/Alle_IEF/Inf_THEO/images/tools_daten/lola-2.0.tar.gz")
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def to_lola(places, trans):
    """LoLA 2.0's net format for a P/T net as read by compare.read_pt."""
    pid = {p: f"p{i}" for i, p in enumerate(places)}
    out = ["{ converted from PNML by vm/verify/bench/lola.py; p<i>/t<i> in PNML order }",
           "PLACE"]
    names = [pid[p] for p in places]
    out.append("  " + ",\n  ".join(names) + ";" if names else "  ;")
    marked = [f"{pid[p]} : {m}" for p, m in places.items() if m]
    out.append("MARKING")
    out.append("  " + ",\n  ".join(marked) + ";" if marked else "  ;")
    for i, (t, (pre, post)) in enumerate(trans.items()):
        out.append(f"TRANSITION t{i}  {{ {comment_safe(t)} }}")
        out.append("  CONSUME " + ", ".join(f"{pid[p]} : {w}" for p, w in pre.items()) + ";")
        out.append("  PRODUCE " + ", ".join(f"{pid[p]} : {w}" for p, w in post.items()) + ";")
    return "\n".join(out) + "\n"


def comment_safe(s):
    """A PNML id for a LoLA comment (braces delimit comments)."""
    return s.replace("{", "(").replace("}", ")")


def convert(path):
    return to_lola(*read_pt(path))


def read_lola(path):
    """(m0, [(pre, post)]) of a net in the LoLA format this script writes."""
    text = re.sub(r"\{[^}]*\}", " ", open(path).read())
    names = [p.strip() for p in re.search(r"PLACE(.*?);", text, re.S).group(1).split(",")]
    idx = {p: i for i, p in enumerate(n for n in names if n)}
    m0 = [0] * len(idx)
    for part in re.search(r"MARKING(.*?);", text, re.S).group(1).split(","):
        if part.strip():
            p, v = part.split(":")
            m0[idx[p.strip()]] = int(v)

    def arcs(s):
        return [(idx[a.split(":")[0].strip()], int(a.split(":")[1])) for a in s.split(",")
                if a.strip()]
    trans = [(arcs(c), arcs(p)) for c, p in
             re.findall(r"TRANSITION\s+\S+\s+CONSUME(.*?);\s*PRODUCE(.*?);", text, re.S)]
    return m0, trans


def bfs_peer(path):
    """`--lola bfs`: a stand-in peer that reads the converted net back and counts its states
    and edges (plain BFS): checks the converter end to end where LoLA cannot be built."""
    m0, trans = read_lola(path)
    seen, todo, edges = {tuple(m0)}, [tuple(m0)], 0
    while todo:
        m = todo.pop()
        for pre, post in trans:
            if all(m[p] >= w for p, w in pre):
                x = list(m)
                for p, w in pre:
                    x[p] -= w
                for p, w in post:
                    x[p] += w
                edges += 1
                x = tuple(x)
                if x not in seen:
                    seen.add(x)
                    todo.append(x)
    print(f"lola: {len(seen)} markings, {edges} edges", file=sys.stderr)


def build(cache):
    os.makedirs(cache, exist_ok=True)
    tgz = os.path.join(cache, "lola-2.0.tar.gz")
    if not os.path.exists(tgz):
        print(f"fetching {LOLA_URL}", file=sys.stderr)
        urllib.request.urlretrieve(LOLA_URL, tgz + ".part")
        os.rename(tgz + ".part", tgz)
    src = os.path.join(cache, "lola-2.0")
    if not os.path.isdir(src):
        with tarfile.open(tgz) as t:
            t.extractall(cache, filter="data")
    binary = os.path.join(src, "src", "lola")
    if not os.path.exists(binary):
        subprocess.run(["./configure"], cwd=src, check=True)
        subprocess.run(["make", "-j2"], cwd=src, check=True)
    return binary


def timed(cmd, timeout):
    """(returncode, stdout, stderr, wall, cpu, max RSS KiB) of cmd under /usr/bin/time."""
    full = ["/usr/bin/time", "-f", "TIMEV %U %S %M"] + cmd
    t0 = time.perf_counter()
    try:
        p = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    wall = time.perf_counter() - t0
    cpu, rss = None, None
    err = []
    for line in p.stderr.splitlines():
        if line.startswith("TIMEV "):
            u, s, m = line.split()[1:]
            cpu, rss = float(u) + float(s), int(m)
        else:
            err.append(line)
    return p.returncode, p.stdout, "\n".join(err), wall, cpu, rss


def run_pnetv(pnetv, path, extra, timeout):
    r = timed([pnetv, "--json", "--no-scc"] + extra + [path], timeout)
    if r is None:
        return {"status": f"timeout ({timeout} s)"}
    code, out, err, wall, cpu, rss = r
    if code not in (0, 3, 4):
        return {"status": "error: " + " ".join(err.split())[-200:]}
    j = json.loads(out)
    return {"status": "ok", "states": j["states"], "edges": j["edges"], "wall": wall,
            "cpu": cpu, "rss": rss}


def run_lola(lola, path, timeout):
    if lola == "bfs":
        cmd = [sys.executable, os.path.abspath(__file__), "--bfs-peer", path]
    else:
        cmd = [lola, "--check=full", "--stubborn=off", path]
    r = timed(cmd, timeout)
    if r is None:
        return {"status": f"timeout ({timeout} s)"}
    code, out, err, wall, cpu, rss = r
    text = out + "\n" + err
    m = re.search(r"(\d+)\s+markings?,\s+(\d+)\s+edges?", text)
    if not m:
        return {"status": f"exit {code}, no counts: " + " ".join(text.split())[-200:]}
    return {"status": "ok", "states": int(m.group(1)), "edges": int(m.group(2)), "wall": wall,
            "cpu": cpu, "rss": rss}


def cell(r):
    if r["status"] != "ok":
        return r["status"]
    return f"{r['wall']:.2f} / {r['cpu']:.2f} / {r['rss'] / 1024:.0f}"


def main(argv):
    if argv[:1] == ["--emit-lola"] and len(argv) == 2:
        sys.stdout.write(convert(argv[1]))
        return 0
    if argv[:1] == ["--bfs-peer"] and len(argv) == 2:
        bfs_peer(argv[1])
        return 0
    lola, cache, timeout, out = None, None, 600, "/tmp/pnetv-lola"
    pnetv = os.path.join(ROOT, "target", "release", "pnetv")
    extra, models, want_build = [], [], False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--build":
            want_build = True; i += 1
        elif a in ("--lola", "--cache", "--timeout", "--out", "--pnetv", "--pnetv-arg"):
            if i + 1 >= len(argv):
                sys.exit(f"{a} needs a value")
            v = argv[i + 1]; i += 2
            if a == "--lola":
                lola = v
            elif a == "--cache":
                cache = v
            elif a == "--timeout":
                timeout = float(v)
            elif a == "--out":
                out = v
            elif a == "--pnetv":
                pnetv = v
            else:
                extra.append(v)
        elif a.startswith("-"):
            sys.exit(f"unknown argument {a} (see the usage at the top of {__file__})")
        else:
            models.append(a); i += 1
    if not models:
        sys.exit("no model given")
    cache = cache or os.environ.get("LOLA_CACHE") or os.path.expanduser("~/.cache/pnetv-lola")
    cached = os.path.join(cache, "lola-2.0", "src", "lola")
    if want_build:
        lola = build(cache)
    elif lola is None:
        lola = cached if os.path.exists(cached) else "lola"
    os.makedirs(out, exist_ok=True)
    print("| model | states | edges | pnetv wall / CPU s / MB | LoLA wall / CPU s / MB | LoLA / pnetv (CPU) | counts |")
    print("|---|---|---|---|---|---|---|")
    bad = 0
    for path in models:
        name = os.path.splitext(os.path.basename(path))[0]
        if name == "model":
            name = os.path.basename(os.path.dirname(os.path.abspath(path)))
        net = os.path.join(out, name + ".lola")
        with open(net, "w") as f:
            f.write(convert(path))
        p = run_pnetv(pnetv, path, extra, timeout)
        try:
            q = run_lola(lola, net, timeout)
        except FileNotFoundError:
            q = {"status": f"no LoLA at {lola} (--build)"}
        both = p["status"] == "ok" and q["status"] == "ok"
        same = both and (p["states"], p["edges"]) == (q["states"], q["edges"])
        if both and not same:
            bad += 1
        ratio = f"{q['cpu'] / p['cpu']:.1f}x" if both and p["cpu"] >= 0.01 else "-"
        counts = "equal" if same else ("DIFFER: LoLA %s / %s" % (q["states"], q["edges"]) if both else "-")
        st = p.get("states", "-")
        ed = p.get("edges", "-")
        print(f"| {name} | {st:,} | {ed:,} | {cell(p)} | {cell(q)} | {ratio} | {counts} |"
              if p["status"] == "ok" else f"| {name} | - | - | {cell(p)} | {cell(q)} | - | - |",
              flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
