#!/usr/bin/env python3
"""A tour of the Python package `pnet` (pip install ./python; see python/README.md).

    python examples/python/pnet_demo.py

compiles and runs nets once, shows a compile error, boots a runtime with two workers,
submits jobs from threads and with asyncio, and runs a module written in Python (geo.norm
below) on the workers. Workers are `gspc-worker`: on PATH, in GSPC_WORKER, or built in the
checkout's target/ (cargo build -p pnet-worker).
"""

import asyncio
import concurrent.futures
import math
import os
import tempfile

import pnet

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.dirname(HERE)


@pnet.module("geo", "norm")
def norm(p: pnet.Struct) -> float:
    """The module function geo.norm of norm.xpnet: a worker calls it with the point (a
    pnet.Struct); what it returns is the token on the out port `length`."""
    print(f"measuring {p}")  # goes to the task's log
    return math.hypot(p.x, p.y)


def one_shot() -> None:
    # As `gspc-run examples/hello/hello.xpnet -p 'name="world"'`.
    print(pnet.run(os.path.join(EXAMPLES, "hello/hello.xpnet"), {"name": "world"}))
    # Structs in and out; several tokens on one port.
    points = pnet.Tokens([pnet.Struct(x=1, y=2), pnet.Struct(x=3, y=4)])
    print(pnet.run(os.path.join(EXAMPLES, "points/points.xpnet"), {"points": points, "scale": 10}))
    # A module in Python, run by one worker started for this run.
    print(pnet.run(os.path.join(HERE, "norm.xpnet"), {"p": pnet.Struct(x=3.0, y=4.0)},
                   topology="worker:1"))


def compile_error() -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".xpnet", delete=False) as f:
        f.write('<defun name="broken">\n<out name="r" type="long" place="r"/>\n<net>\n'
                '<place name="r" type="long"/>\n<transition name="t">\n<defun>\n'
                '<out name="r" type="long"/>\n<expression>${r} := 1L + "one"</expression>\n'
                '</defun>\n<connect-out port="r" place="r"/>\n</transition>\n</net>\n'
                '</defun>\n')
    try:
        pnet.compile(f.name)
    except pnet.CompileError as e:
        print(f"line {e.line}, column {e.column}: [{e.code}] {e.message}")
    finally:
        os.unlink(f.name)


def with_a_runtime() -> None:
    with pnet.Runtime.boot("worker:2") as rt:  # as `gspc boot`; stopped at the end
        net = pnet.compile(os.path.join(HERE, "norm.xpnet"))
        # Jobs submitted from threads, their results as futures.
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            jobs = list(pool.map(
                lambda i: rt.submit(net, {"p": pnet.Struct(x=float(i), y=1.0)}), range(8)))
        lengths = [job.future().result()["length"][0] for job in jobs]
        print("lengths:", [round(x, 3) for x in lengths])
        print("the first job's log:", jobs[0].logs()[0]["text"].strip())

        async def hello_all():
            hello = os.path.join(EXAMPLES, "hello/hello.xpnet")
            return await asyncio.gather(*(rt.submit(hello, {"name": n}) for n in ("a", "b")))

        print(asyncio.run(hello_all()))


if __name__ == "__main__":
    one_shot()
    compile_error()
    with_a_runtime()
