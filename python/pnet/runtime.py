"""A persistent runtime (``gspc boot``'s) driven from Python: :class:`Runtime` and :class:`Job`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Generator, Iterable, Mapping, Optional, Union

from . import _native
from .errors import JobCancelled, JobFailed, PnetError

PathLike = Union[str, "os.PathLike[str]"]


class Runtime:
    """A persistent runtime: workers that stay up and run the jobs submitted to them.

    :meth:`boot` starts one (a daemon process, as ``gspc boot`` does; ``with
    Runtime.boot(...) as rt:`` stops it at the end), :meth:`connect` reaches a running one by
    its state directory (one booted by ``gspc boot --state-dir DIR`` too). Methods may be
    called from several threads at once.
    """

    def __init__(self, state_dir: str, *, owned: bool = False,
                 process: Optional[subprocess.Popen[bytes]] = None) -> None:
        self.state_dir = os.path.abspath(state_dir)
        self._client = _native.Client(self.state_dir)
        self._owned = owned
        self._process = process
        self._modules_root: Optional[str] = None
        self._lock = threading.Lock()

    @classmethod
    def boot(
        cls,
        topology: Optional[str] = None,
        *,
        state_dir: Optional[PathLike] = None,
        module_path: Iterable[PathLike] = (),
        timeout: float = 60.0,
        max_retries: Optional[int] = None,
        listen: Optional[str] = None,
    ) -> "Runtime":
        """Starts a runtime with the workers of ``topology`` (a topology string such as
        ``"worker:4"``; default: one worker per core) on this host, waits until they have all
        joined, and returns it. ``state_dir`` (default: a new private temporary folder)
        holds its control socket, secret and ``daemon.log``; ``module_path`` is searched by
        the workers for every job. The daemon is ``python -m pnet._daemon``, in its own
        session; it lives until :meth:`stop` (or ``gspc stop --state-dir DIR``)."""
        from ._modules import refuse_in_worker

        refuse_in_worker("pnet.Runtime.boot")
        if state_dir is None:
            d = tempfile.mkdtemp(prefix="pnet-runtime-")
        else:
            d = os.path.abspath(os.fspath(state_dir))
            os.makedirs(d, mode=0o700, exist_ok=True)
        os.chmod(d, 0o700)
        planned = _native.plan_size(topology)
        secret = os.path.join(d, "secret")
        try:
            fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise PnetError(
                "gspc-already-running",
                f"{d} holds a runtime's secret already: connect to it with "
                "Runtime.connect, stop it, or boot into another state_dir",
            ) from None
        with os.fdopen(fd, "w") as f:
            f.write(_native.new_secret() + "\n")
        from . import find_worker

        args = [sys.executable, "-m", "pnet._daemon", "--state-dir", d]
        if topology is not None:
            args += ["--topology", topology]
        for m in module_path:
            args += ["--module-path", os.path.abspath(os.fspath(m))]
        worker = find_worker()
        if worker is None and planned > 0:
            os.unlink(secret)
            raise PnetError(
                "no-worker-program",
                "cannot find gspc-worker: set GSPC_WORKER or put it on PATH (cargo build "
                "--release -p pnet-worker)",
            )
        if worker is not None:
            args += ["--worker", worker]
        if max_retries is not None:
            args += ["--max-retries", str(max_retries)]
        if listen is not None:
            args += ["--listen", listen]
        log_path = os.path.join(d, "daemon.log")
        log = open(log_path, "ab")
        try:
            process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True,
            )
        finally:
            log.close()
        t0 = time.monotonic()
        while True:
            code = process.poll()
            if code is not None:
                raise PnetError(
                    "gspc-boot-failed",
                    f"the runtime exited during boot (status {code}); the end of "
                    f"{log_path}:\n{_tail(log_path)}",
                )
            try:
                status = _native.Client(d).status()
            except PnetError:
                status = None
            if status is not None:
                workers = status["workers"]
                dead = [w for w in workers if w["state"].startswith("exited")]
                if dead:
                    _native.Client(d).stop(False)
                    raise PnetError(
                        "gspc-boot-failed",
                        "workers exited before joining: "
                        + ", ".join(f"{w['name']} ({w['state']})" for w in dead)
                        + f"; see {log_path}:\n{_tail(log_path)}",
                    )
                if sum(w["state"] == "up" for w in workers) >= planned:
                    return cls(d, owned=True, process=process)
            if time.monotonic() - t0 > timeout:
                if status is not None:
                    _native.Client(d).stop(False)
                else:
                    process.terminate()
                raise PnetError(
                    "gspc-boot-timeout",
                    f"the runtime's workers did not all join within {timeout} s; see {log_path}",
                )
            time.sleep(0.05)

    @classmethod
    def connect(cls, state_dir: PathLike) -> "Runtime":
        """The runtime running in ``state_dir`` (its secret is read from there)."""
        return cls(os.fspath(state_dir))

    def submit(
        self,
        net: Any,
        inputs: Optional[Mapping[str, Any]] = None,
        *,
        name: Optional[str] = None,
        module_path: Iterable[PathLike] = (),
        search_paths: Iterable[PathLike] = (),
    ) -> "Job":
        """Submits a job and returns at once: ``net`` is a path (compiled here) or a
        :class:`pnet.Bundle`, ``inputs`` maps in ports to values (a :class:`pnet.Tokens` for
        several tokens), ``name`` is shown by ``gspc jobs``; ``module_path`` is searched
        before the runtime's (the launchers of the :func:`pnet.module` functions the net
        calls come first)."""
        from . import _bundle, _inputs, _modules

        _modules.refuse_in_worker("Runtime.submit")
        bundle = _bundle(net, search_paths)
        paths = [os.path.abspath(os.fspath(p)) for p in module_path]
        if not isinstance(net, _native.Bundle):
            paths.append(os.path.dirname(os.path.abspath(os.fspath(net))))
        if _modules.needed_by(bundle):
            with self._lock:
                if self._modules_root is None:
                    self._modules_root = tempfile.mkdtemp(prefix="pnet-modules-")
            here = tempfile.mkdtemp(dir=self._modules_root)
            _modules.write_modules(here, bundle)
            paths.insert(0, here)
        job = self._client.submit(bundle, _inputs(inputs), name=name, module_path=paths)
        return Job(self, job, bundle)

    def job(self, job_id: int, net: Any = None) -> "Job":
        """A job of this runtime by its id (``net``, a path or bundle, is needed for
        :meth:`Job.put_token` only)."""
        from . import _bundle

        return Job(self, job_id, _bundle(net) if net is not None else None)

    def status(self) -> dict[str, Any]:
        """The runtime's status: ``pid``, ``address``, ``workers`` (name, host, state,
        running task, ...), ``jobs_running``, ``jobs_total``, ``memory``."""
        return self._client.status()

    def jobs(self) -> list[dict[str, Any]]:
        """Every job: ``id``, ``net``, ``name``, ``state``, task counts, ``error``."""
        return self._client.jobs()

    def stop(self, wait: bool = False) -> dict[str, Any]:
        """Stops the runtime: cancels the running jobs (with ``wait``, waits for them
        first), stops the workers; returns what was stopped."""
        report = self._client.stop(wait)
        if self._process is not None:
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
        if self._modules_root is not None:
            shutil.rmtree(self._modules_root, ignore_errors=True)
        return report

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._owned:
            try:
                self.stop()
            except PnetError:
                pass

    def __repr__(self) -> str:
        return f"<pnet.Runtime {self.state_dir}>"


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "\n".join(f.read().splitlines()[-lines:])
    except OSError:
        return ""


class Job:
    """A job submitted to a :class:`Runtime`.

    ``wait(timeout)`` waits for its end, ``result()`` returns its outputs (a dict from out
    port to the list of its tokens) or raises :class:`pnet.JobFailed` /
    :class:`pnet.JobCancelled`; ``future()`` is a ``concurrent.futures.Future`` of the
    result, and ``await job`` awaits it in asyncio. Every method may be called from any
    thread; the blocking ones release the GIL.
    """

    def __init__(self, runtime: Runtime, job_id: int, bundle: Any) -> None:
        self.runtime = runtime
        self.id = job_id
        self._bundle = bundle
        self._outcome: Optional[tuple[str, Optional[dict[str, list[Any]]], dict[str, Any]]] = None
        self._lock = threading.Lock()
        self._future: Optional[concurrent.futures.Future[dict[str, list[Any]]]] = None

    def wait(self, timeout: Optional[float] = None) -> str:
        """Waits until the job has ended (at most ``timeout`` seconds; None: as long as it
        takes) and returns how: ``"done"``, ``"failed"`` or ``"cancelled"``. Raises
        ``TimeoutError`` when it has not ended in time."""
        if self._outcome is None:
            got = self.runtime._client.wait(self.id, timeout)
            if got is None:
                raise TimeoutError(f"job {self.id} has not ended within {timeout} s")
            with self._lock:
                if self._outcome is None:
                    self._outcome = got
        return self._outcome[0]

    def done(self) -> bool:
        """Whether the job has ended (asks the runtime, does not wait)."""
        if self._outcome is not None:
            return True
        return self.status()["state"] != "running"

    def result(self, timeout: Optional[float] = None) -> dict[str, list[Any]]:
        """The job's outputs: a dict from out port to the list of its tokens as Python
        values. Waits as :meth:`wait`; raises :class:`pnet.JobFailed` (the message names the
        transition) or :class:`pnet.JobCancelled`."""
        state = self.wait(timeout)
        assert self._outcome is not None
        _, outputs, info = self._outcome
        if state == "failed":
            raise JobFailed(info.get("code", "agent-job-failed"), info.get("message", ""))
        if state == "cancelled":
            raise JobCancelled("agent-cancelled", f"job {self.id} was cancelled")
        return dict(outputs or {})

    @property
    def info(self) -> dict[str, Any]:
        """After the end: ``firings``, ``tasks``, ``complete`` and ``warning`` (done), or
        ``code`` and ``message`` (failed)."""
        self.wait()
        assert self._outcome is not None
        return dict(self._outcome[2])

    def put_token(self, place: str, value: Any) -> None:
        """Puts a token on the ``put_token`` place ``place`` of the job's net, converted by
        the place's type."""
        if self._bundle is None:
            raise PnetError("no-net", "put_token needs the job's net: Runtime.job(id, net)")
        self.runtime._client.put_token(self._bundle, self.id, place, value)

    def close(self) -> None:
        """No more tokens will be put: the job ends once nothing is left to do."""
        self.runtime._client.close(self.id)

    def cancel(self) -> None:
        """Cancels the job (its running tasks are stopped)."""
        self.runtime._client.cancel(self.id)

    def status(self) -> dict[str, Any]:
        """The job as ``gspc jobs`` shows it: ``state`` (``running``, ``done``, ``failed``,
        ``cancelled``), ``tasks_running``, ``tasks_queued``, ``tasks_done``, ``elapsed_ms``,
        ``waiting``, ``error``."""
        for j in self.runtime._client.jobs():
            if j["id"] == self.id:
                return j
        raise PnetError("gspc-no-job", f"the runtime has no job {self.id}")

    def tasks(self) -> list[dict[str, Any]]:
        """The job's tasks: ``task``, ``transition``, ``module``, ``worker``, ``state``,
        times, ``error``, ``inputs``."""
        return self.runtime._client.tasks(self.id)["tasks"]

    def logs(self, task: Optional[int] = None) -> list[dict[str, Any]]:
        """What the job's tasks logged (one task, or all kept): ``task``, ``transition``,
        ``worker``, ``text``."""
        return self.runtime._client.logs(self.id, task)

    def future(self) -> "concurrent.futures.Future[dict[str, list[Any]]]":
        """A ``concurrent.futures.Future`` of :meth:`result`, completed by a thread that waits
        for the job (the same future for every call)."""
        with self._lock:
            if self._future is None:
                fut: concurrent.futures.Future[dict[str, list[Any]]] = concurrent.futures.Future()
                fut.set_running_or_notify_cancel()

                def waiter() -> None:
                    try:
                        fut.set_result(self.result())
                    except BaseException as e:  # noqa: BLE001 - handed to the future
                        fut.set_exception(e)

                threading.Thread(target=waiter, name=f"pnet-job-{self.id}", daemon=True).start()
                self._future = fut
            return self._future

    def __await__(self) -> Generator[Any, None, dict[str, list[Any]]]:
        return asyncio.wrap_future(self.future()).__await__()

    def __repr__(self) -> str:
        return f"<pnet.Job {self.id}>"
