"""Module functions written in Python, run by the workers in the tests (the nets in nets/
call them)."""

import time

import pnet


@pnet.module("geo", "mirror")
def mirror(p: pnet.Struct, tag: str) -> dict:
    """geometry.xpnet: swaps the coordinates of a point and measures it."""
    print(f"mirroring {p} ({tag})")  # goes to the task's log
    return {"q": pnet.Struct(x=p.y, y=p.x), "r": (p.x**2 + p.y**2) ** 0.5}


@pnet.module("slow", "nap")
def nap(ms: int) -> None:
    """nap.xpnet: sleeps for `ms` milliseconds (negative: fails)."""
    if ms < 0:
        raise ValueError(f"cannot sleep {ms} ms")
    time.sleep(ms / 1000)
