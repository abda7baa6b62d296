"""pnet: compile and run GPI-Space Petri nets from Python.

- :func:`compile` compiles an ``.xpnet`` file (diagnostics raise :class:`CompileError` with
  ``file``, ``line``, ``column``, ``code``, ``message`` and all ``diagnostics``);
- :func:`run` runs a net once, as ``gspc-run`` does, and returns its output tokens as Python
  values: ``pnet.run("examples/hello/hello.xpnet", {"name": "world"})`` gives
  ``{"greeting": ["Hello, world!"]}``;
- :class:`Runtime` boots (or connects to) a persistent runtime, as ``gspc boot`` does, and
  submits jobs to it (:class:`Job`: ``wait``, ``result``, ``put_token``, ``cancel``,
  ``status``, ``tasks``, ``logs``, ``future()`` and ``await job``);
- :func:`module` turns a Python function into a command module that the workers run.

Values: ``control`` is None, the integer types and ``bigint`` are ``int``, ``float`` and
``double`` are ``float``, ``char`` and ``string`` are ``str``, ``bool`` is ``bool``,
``bytearray`` is ``bytes``, ``list`` is ``list``, ``set`` and ``bitset`` are ``set``,
``map`` is ``dict``, a struct is a :class:`Struct` (fields as attributes); inside sets and
map keys lists are tuples and sets frozensets. Inputs are converted by their port's type,
through the toolchain's one JSON encoding of values (runtime/worker/MODULES.md).

Everything that blocks releases the GIL. Workers are the ``gspc-worker`` program: found
through ``GSPC_WORKER``, ``PATH``, beside the Python executable, or in the ``target/``
folder of the checkout the package was built from.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import warnings
from typing import Any, Iterable, Mapping, Optional, Union

from . import _native
from ._modules import module, registered, write_modules
from ._values import Struct, Tokens
from .errors import CompileError, Diagnostic, JobCancelled, JobFailed, PnetError
from .runtime import Job, Runtime

__all__ = [
    "Bundle",
    "CompileError",
    "CompileWarning",
    "Diagnostic",
    "Job",
    "JobCancelled",
    "JobFailed",
    "PnetError",
    "Runtime",
    "RunResult",
    "Struct",
    "Tokens",
    "compile",
    "find_worker",
    "module",
    "registered",
    "run",
    "run_details",
    "write_modules",
]

__version__: str = _native.VERSION

Bundle = _native.Bundle

_ERRORS: dict[str, type[PnetError]] = {
    "agent-job-failed": JobFailed,
    "agent-no-worker": JobFailed,
    "agent-stuck": JobFailed,
}


class _NativeError(PnetError):
    """Errors raised by the native part: turned into the subclass of their code."""

    def __new__(cls, code: str, message: str) -> PnetError:  # type: ignore[misc]
        sub = _ERRORS.get(code, PnetError)
        e = PnetError.__new__(sub, code, message)
        e.__init__(code, message)  # type: ignore[misc]
        return e


_native._register(Struct, _NativeError)

PathLike = Union[str, "os.PathLike[str]"]


def compile(path: PathLike, search_paths: Iterable[PathLike] = ()) -> Bundle:
    """Compiles the net at ``path`` (an ``.xpnet`` file; a ``.pnet`` bundle is read, a
    ``.workload`` file lowered and compiled) and returns its :class:`Bundle`.

    ``search_paths`` are the folders searched for included files (``pnetc -I``). Errors raise
    :class:`CompileError`; each warning is issued as a :class:`CompileWarning` (Python's
    ``warnings``; turn them into errors with ``warnings.simplefilter("error",
    pnet.CompileWarning)``).
    """
    bundle, diags, rendered = _native.compile(
        os.fspath(path), [os.fspath(p) for p in search_paths]
    )
    diagnostics = [
        Diagnostic(
            d["severity"], d["code"], d["message"], d["file"], d["line"], d["column"],
            tuple(d["notes"]),
        )
        for d in diags
    ]
    if bundle is None:
        raise CompileError(diagnostics, rendered)
    for d in diagnostics:
        if d.severity == "warning":
            warnings.warn(str(d), CompileWarning, stacklevel=2)
    return bundle


class CompileWarning(UserWarning):
    """A warning of the compiler (its text: ``file:line:column: warning[code]: message``)."""


def _bundle(net: Union[PathLike, Bundle], search_paths: Iterable[PathLike] = ()) -> Bundle:
    if isinstance(net, Bundle):
        return net
    return compile(net, search_paths)


def _inputs(inputs: Optional[Mapping[str, Any]]) -> list[tuple[str, list[Any]]]:
    """``{port: value}`` (a :class:`Tokens` for several tokens) as ``[(port, [tokens])]``."""
    out = []
    for port, v in (inputs or {}).items():
        out.append((port, list(v) if isinstance(v, Tokens) else [v]))
    return out


def find_worker() -> Optional[str]:
    """The ``gspc-worker`` program the workers run: ``$GSPC_WORKER``, else ``gspc-worker`` on
    ``PATH``, beside the Python executable, or in ``target/release`` or ``target/debug`` of
    the checkout this package was built from (the newest); None when there is none."""
    env = os.environ.get("GSPC_WORKER")
    if env:
        return env
    found = shutil.which("gspc-worker")
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "gspc-worker")
    if os.path.exists(beside):
        return beside
    target = os.path.join(os.path.dirname(_native.SOURCE_DIR), "target")
    builds = [
        os.path.join(target, profile, "gspc-worker") for profile in ("release", "debug")
    ]
    builds = [b for b in builds if os.path.exists(b)]
    if builds:
        return max(builds, key=os.path.getmtime)
    return None


class RunResult(dict):
    """The output tokens of a run (a dict from out port to the list of its tokens) with
    ``firings``, ``tasks``, ``complete`` (False when the net stopped with an out port empty
    or tokens left) and ``warning`` (what was left, or None)."""

    firings: int
    tasks: int
    complete: bool
    warning: Optional[str]


def run_details(
    net: Union[PathLike, Bundle],
    inputs: Optional[Mapping[str, Any]] = None,
    *,
    topology: Optional[str] = None,
    module_path: Iterable[PathLike] = (),
    search_paths: Iterable[PathLike] = (),
    seed: Optional[int] = None,
    max_firings: Optional[int] = None,
    logs: Optional[PathLike] = None,
    trace: Optional[PathLike] = None,
    jit: Optional[str] = None,
) -> RunResult:
    """:func:`run`, returning a :class:`RunResult` (the outputs with the run's figures)."""
    from ._modules import refuse_in_worker

    refuse_in_worker("pnet.run")
    bundle = _bundle(net, search_paths)
    paths = [os.fspath(p) for p in module_path]
    # As gspc-run: the net's folder is searched too (after the given ones).
    if not isinstance(net, Bundle):
        paths.append(os.path.dirname(os.path.abspath(os.fspath(net))))
    tmp = None
    try:
        if _modules_needed(bundle):
            tmp = tempfile.mkdtemp(prefix="pnet-modules-")
            write_modules(tmp, bundle)
            paths.insert(0, tmp)
        outputs, info = _native.run(
            bundle,
            _inputs(inputs),
            topology=topology,
            module_path=paths,
            worker_program=find_worker(),
            seed=seed,
            max_firings=max_firings,
            logs=os.fspath(logs) if logs is not None else None,
            trace=os.fspath(trace) if trace is not None else None,
            jit=jit,
        )
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    result = RunResult(outputs)
    for k, v in info.items():
        setattr(result, k, v)
    return result


def run(
    net: Union[PathLike, Bundle],
    inputs: Optional[Mapping[str, Any]] = None,
    *,
    topology: Optional[str] = None,
    module_path: Iterable[PathLike] = (),
    search_paths: Iterable[PathLike] = (),
    seed: Optional[int] = None,
    max_firings: Optional[int] = None,
    logs: Optional[PathLike] = None,
    trace: Optional[PathLike] = None,
    jit: Optional[str] = None,
) -> dict[str, list[Any]]:
    """Runs a net once (as ``gspc-run`` does, in this process) and returns a dict from out
    port to the list of its tokens as Python values.

    ``net`` is a path (compiled on the fly) or a :class:`Bundle`; ``inputs`` maps in ports to
    values, converted by the port's type (a :class:`Tokens` puts several tokens). Workers
    start from ``topology`` (a topology string like ``"worker:2"``; default: one per core)
    only when the net calls modules; they search ``module_path`` (and the net's folder, and
    the launchers of the :func:`module` functions it calls). A failed run raises
    :class:`JobFailed` naming the transition; Ctrl-C cancels the run
    (``KeyboardInterrupt``). Expressions run as with ``gspc-run``: ``jit`` is ``"auto"`` (the
    default, or ``$PNET_JIT``), ``"on"`` or ``"off"``; ``seed`` and ``max_firings`` are its
    ``--seed`` and ``--max-firings``, ``logs`` a folder for the tasks' logs, ``trace`` a
    Chrome trace file."""
    return dict(
        run_details(
            net,
            inputs,
            topology=topology,
            module_path=module_path,
            search_paths=search_paths,
            seed=seed,
            max_firings=max_firings,
            logs=logs,
            trace=trace,
            jit=jit,
        )
    )


def _modules_needed(bundle: Bundle) -> bool:
    from ._modules import needed_by

    return needed_by(bundle)
