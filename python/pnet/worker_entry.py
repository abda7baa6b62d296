"""Runs one call of a Python module function on a worker (``python -m pnet.worker_entry
SPEC``, started by the launcher that :func:`pnet.write_modules` wrote).

Reads the inputs (one JSON object) from standard input, imports the script that defines the
function, calls it with the inputs decoded by their ports' types, and prints the outputs as
one JSON object on the last line of standard output. A failure prints its traceback on
standard error and exits with status 1 (the task fails with it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from typing import Any


def _outputs(result: Any, outs: list[str] | None, name: str) -> dict[str, Any]:
    """What the function returned as a dict from out port to value."""
    if outs is None:
        if result is None:
            return {}
        if isinstance(result, dict):
            return result
        raise TypeError(f"{name} must return a dict from out port to value")
    if not outs:
        return {}
    if isinstance(result, dict) and set(result) == set(outs):
        return result
    if len(outs) == 1:
        return {outs[0]: result}
    if isinstance(result, tuple) and len(result) == len(outs):
        return dict(zip(outs, result))
    raise TypeError(
        f"{name} has the out ports {', '.join(outs)}: return a dict with them (or a tuple "
        f"in this order), not {type(result).__name__}"
    )


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m pnet.worker_entry SPEC.json", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    for p in reversed(spec.get("sys_path", [])):
        if p not in sys.path:
            sys.path.insert(0, p)
    script = spec["script"]
    sys.path.insert(0, os.path.dirname(script))

    from pnet import _native, _modules

    name = f"{spec['module']}.{spec['function']}"
    raw = json.loads(sys.stdin.read() or "{}")
    types = spec.get("inputs", {})
    inputs = {}
    for port, value in raw.items():
        if port in types:
            inputs[port] = _native.decode(json.dumps(value), types[port], f"inputs.{port}")
        else:
            inputs[port] = value

    mod_spec = importlib.util.spec_from_file_location("__pnet_module_script__", script)
    if mod_spec is None or mod_spec.loader is None:
        print(f"pnet: cannot import {script}", file=sys.stderr)
        return 1
    mod = importlib.util.module_from_spec(mod_spec)
    sys.modules["__pnet_module_script__"] = mod
    _modules.IMPORTING_FOR_WORKER = True
    try:
        mod_spec.loader.exec_module(mod)
    finally:
        _modules.IMPORTING_FOR_WORKER = False
    mf = _modules.lookup(spec["module"], spec["function"])
    if mf is None:
        print(
            f"pnet: {script} defines no function decorated with "
            f"@pnet.module({spec['module']!r}, {spec['function']!r})",
            file=sys.stderr,
        )
        return 1
    result = mf.func(**inputs)
    outputs = _outputs(result, spec.get("outputs"), name)
    sys.stdout.flush()
    sys.stdout.write("\n" + _native.encode(outputs) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    try:
        code = main(sys.argv)
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - every failure fails the task with its traceback
        traceback.print_exc()
        code = 1
    sys.exit(code)
