"""pnet.run: the one-shot path, values both ways."""

import dataclasses
import os
import signal
import subprocess
import sys
import time

import pytest

import pnet
from conftest import ROOT, net

import pymodules  # noqa: F401 - registers the Python modules


def test_hello():
    assert pnet.run(os.path.join(ROOT, "examples/hello/hello.xpnet"), {"name": "world"}) == {
        "greeting": ["Hello, world!"]
    }


def test_every_kind_of_value_goes_in_and_comes_out():
    inputs = {
        "c": None,
        "b": True,
        "i": -3,
        "l": 2**40,
        "u": 2**64 - 1,
        "f": 0.1,
        "d": 2.5,
        "ch": "A",
        "s": "text",
        "big": -(10**30),
        "bits": {0, 2, 64},
        "bytes": b"\x00\xff",
        "xs": [1, "a", [2.5]],
        "st": {3, 1, 2},
        "m": {1: "one", 2: "two"},
        "p": pnet.Struct(x=1, y=2),
    }
    out = pnet.run(net("values.xpnet"), inputs)
    assert out == {k: [v] for k, v in inputs.items()}
    p = out["p"][0]
    assert (p.x, p.y) == (1, 2) and p._asdict() == {"x": 1, "y": 2}
    assert type(out["big"][0]) is int and type(out["st"][0]) is set


def test_structs_from_dicts_and_dataclasses_and_several_tokens():
    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    out = pnet.run(
        net("values.xpnet"),
        {"p": pnet.Tokens([{"x": 5, "y": 6}, Point(7, 8)]), "st": pnet.Tokens([{(1, 2)}, {3}])},
    )
    assert out["p"] == [pnet.Struct(x=5, y=6), pnet.Struct(x=7, y=8)]
    # Sets of lists: the lists are tuples inside a set.
    assert out["st"] == [{(1, 2)}, {3}]
    assert out["l"] == []


def test_run_details_and_the_expression_language():
    r = pnet.run_details(
        os.path.join(ROOT, "examples/points/points.xpnet"),
        {"points": pnet.Tokens([pnet.Struct(x=1, y=2), pnet.Struct(x=3, y=4)]), "scale": 10},
    )
    assert r == {"total": [pnet.Struct(x=40, y=60)]}
    assert r.complete and r.firings >= 3 and r.warning is None


def test_bad_inputs_are_errors_naming_the_port():
    with pytest.raises(ValueError, match=r"inputs.i: expected int, found 1099511627776"):
        pnet.run(net("values.xpnet"), {"i": 2**40})
    with pytest.raises(pnet.PnetError, match="no in port `nope`"):
        pnet.run(net("values.xpnet"), {"nope": 1})
    with pytest.raises(TypeError, match="cannot pass a value of type `object`"):
        pnet.run(net("values.xpnet"), {"l": object()})


def test_a_python_module_runs_on_workers():
    out = pnet.run(
        net("geometry.xpnet"),
        {"p": pnet.Struct(x=3.0, y=4.0), "tag": "one"},
        topology="worker:1",
    )
    assert out == {"q": [pnet.Struct(x=4.0, y=3.0)], "r": [5.0]}


def test_a_failing_python_module_fails_the_run_with_its_error():
    with pytest.raises(pnet.JobFailed) as info:
        pnet.run(net("nap.xpnet"), {"ms": -5}, topology="worker:1")
    assert "cannot sleep -5 ms" in info.value.message
    assert "transition `nap`" in info.value.message


def test_runs_are_refused_while_a_worker_imports_a_module_script(monkeypatch):
    from pnet import _modules

    monkeypatch.setattr(_modules, "IMPORTING_FOR_WORKER", True)
    with pytest.raises(pnet.PnetError, match='under `if __name__ == "__main__":`'):
        pnet.run(os.path.join(ROOT, "examples/hello/hello.xpnet"), {"name": "x"})
    with pytest.raises(pnet.PnetError, match="pnet-in-module-import"):
        pnet.Runtime.boot("worker:1")


def test_a_function_typed_at_a_prompt_cannot_be_a_module(tmp_path):
    from pnet import _modules

    exec('import pnet\n@pnet.module("prompt", "f")\ndef f(x):\n    return x\n', {})
    try:
        with pytest.raises(TypeError, match="defined in a file"):
            pnet.write_modules(str(tmp_path))
    finally:
        del _modules._REGISTRY[("prompt", "f")]


def test_ctrl_c_cancels_a_run(tmp_path):
    script = tmp_path / "interrupted.py"
    script.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "import pnet, pymodules\n"
        "print('start', flush=True)\n"
        "t0 = time.monotonic()\n"
        "try:\n"
        f"    pnet.run({net('nap.xpnet')!r}, {{'ms': 60000}}, topology='worker:1')\n"
        "except KeyboardInterrupt as e:\n"
        "    print('interrupted', e, flush=True)\n"
    )
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline() == "start\n"
    t0 = time.monotonic()
    time.sleep(1.5)  # the run has started its worker and the task
    p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=30)
    finally:
        p.kill()
    assert out.startswith("interrupted"), out  # Python's own KeyboardInterrupt or the run's
    assert p.returncode == 0 and time.monotonic() - t0 < 30


@pytest.mark.parametrize("jit", ["on", "off", "auto"])
def test_expressions_run_the_same_with_and_without_the_jit(jit):
    collatz = os.path.join(ROOT, "examples/collatz/collatz.xpnet")
    assert pnet.run(collatz, {"start": 27}, jit=jit) == {"steps": [111]}


def test_a_bad_jit_mode_is_refused():
    with pytest.raises(ValueError, match="'fast' is not one of auto, on, off"):
        pnet.run(os.path.join(ROOT, "examples/hello/hello.xpnet"), {"name": "x"}, jit="fast")
