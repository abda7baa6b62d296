"""Command modules written in Python: the :func:`module` decorator and the launchers that
workers run.

A worker runs a command module ``m.f`` by starting an executable of that name found on the
module path, writing the inputs as one JSON object to its standard input and reading the
outputs as one JSON object from the last line of its standard output (see
``runtime/worker/MODULES.md``). :func:`write_modules` writes, for every decorated function,
such an executable: a small shell script that runs ``python -m pnet.worker_entry SPEC``,
which imports the script that defines the function, decodes the inputs by their ports'
types, calls the function and encodes what it returns.
"""

from __future__ import annotations

import inspect
import json
import os
import shlex
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ModuleFunction:
    """A Python function registered as module function ``module.function``."""

    module: str
    function: str
    func: Callable[..., Any]
    #: The file that defines it (None for a function typed at a prompt).
    script: Optional[str]


_REGISTRY: dict[tuple[str, str], ModuleFunction] = {}

#: True while a worker imports the script of a module function (pnet.worker_entry): a script
#: that runs or submits nets outside `if __name__ == "__main__":` would start them again in
#: every call; they refuse instead.
IMPORTING_FOR_WORKER = False


def refuse_in_worker(what: str) -> None:
    """Raises when a worker is importing a module function's script."""
    if IMPORTING_FOR_WORKER:
        from .errors import PnetError

        raise PnetError(
            "pnet-in-module-import",
            f"{what} was called while a worker imported the script of a module function: "
            'keep the script\'s work under `if __name__ == "__main__":`',
        )


def module(name: str, function: Optional[str] = None) -> Callable[[F], F]:
    """Makes the decorated function the command module function ``name.function`` (the
    function's own name when ``function`` is not given)::

        @pnet.module("geometry", "norm")
        def norm(p):                 # p: a pnet.Struct with fields x and y
            return (p.x ** 2 + p.y ** 2) ** 0.5

    The worker calls it with the in ports as keyword arguments, decoded by their types (a
    struct is a :class:`pnet.Struct`, a map a dict, a set a set, ...). It returns the value of
    its one out port, or a dict from out port to value (a tuple in the out ports' order for
    several), or None when it has no out port. Standard output and standard error go to the
    task's log; an exception fails the task with its traceback.

    :func:`pnet.run` and :meth:`pnet.Runtime.submit` put the launchers of the decorated
    functions that a net calls on the module path by themselves; :func:`write_modules` writes
    them for other uses (``gspc submit --module-path DIR``). The script that defines the
    function is imported again in each worker's call: keep its work under ``if __name__ ==
    "__main__":``.
    """

    def wrap(func: F) -> F:
        fname = function or func.__name__
        try:
            script: Optional[str] = os.path.abspath(inspect.getfile(func))
        except TypeError:
            script = None  # typed at a prompt: write_modules says so
        _REGISTRY[(name, fname)] = ModuleFunction(name, fname, func, script)
        setattr(func, "pnet_module", (name, fname))
        return func

    return wrap


def registered() -> list[ModuleFunction]:
    """The functions registered with :func:`module`."""
    return list(_REGISTRY.values())


def lookup(module_name: str, function: str) -> Optional[ModuleFunction]:
    return _REGISTRY.get((module_name, function))


def write_modules(directory: str, bundle: Any = None) -> list[str]:
    """Writes a launcher ``m.f`` (and its spec ``m.f.json``) into ``directory`` for every
    registered module function (those that ``bundle`` calls, when a bundle is given, with
    their ports' types); returns the launchers' paths."""
    os.makedirs(directory, exist_ok=True)
    calls: dict[tuple[str, str], tuple[list[tuple[str, str]], list[str]]] = {}
    if bundle is not None:
        for m, f, ins, outs in bundle.module_calls():
            calls[(m, f)] = (ins, outs)
    written = []
    for (m, f), mf in _REGISTRY.items():
        if bundle is not None and (m, f) not in calls:
            continue
        if mf.script is None or not os.path.exists(mf.script):
            raise TypeError(
                f"@pnet.module({m!r}, {f!r}): the function must be defined in a file that the "
                "workers can import (not typed at a prompt)"
            )
        ins, outs = calls.get((m, f), ([], []))
        spec = {
            "module": m,
            "function": f,
            "script": mf.script,
            "inputs": dict(ins),
            "outputs": outs if bundle is not None else None,
            "sys_path": [p for p in sys.path if p],
        }
        spec_path = os.path.join(directory, f"{m}.{f}.json")
        with open(spec_path, "w", encoding="utf-8") as out:
            json.dump(spec, out)
        launcher = os.path.join(directory, f"{m}.{f}")
        tmp = launcher + ".tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(
                "#!/bin/sh\n"
                f"# pnet: runs the Python function {m}.{f} of {mf.script}\n"
                f"exec {shlex.quote(sys.executable)} -m pnet.worker_entry "
                f"{shlex.quote(spec_path)}\n"
            )
        os.chmod(tmp, 0o755)
        os.replace(tmp, launcher)
        written.append(launcher)
    return written


def needed_by(bundle: Any) -> bool:
    """Whether the net calls a registered module function."""
    if not _REGISTRY:
        return False
    return any((m, f) in _REGISTRY for m, f, _, _ in bundle.module_calls())
