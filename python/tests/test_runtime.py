"""pnet.Runtime: boot, submit from many threads, put tokens, cancel, futures, asyncio, and
Python modules on the runtime's workers."""

import asyncio
import concurrent.futures
import os
import subprocess
import time

import pytest

import pnet
from conftest import ROOT, net

import pymodules  # noqa: F401 - registers the Python modules

HELLO = os.path.join(ROOT, "examples/hello/hello.xpnet")


def test_boot_gives_a_runtime_with_its_workers(runtime):
    st = runtime.status()
    assert [w["state"] for w in st["workers"]] == ["up", "up"]
    # Another client reaches it by its state directory.
    again = pnet.Runtime.connect(runtime.state_dir)
    assert again.status()["pid"] == st["pid"]
    # Booting into its state directory again is refused.
    with pytest.raises(pnet.PnetError, match="holds a runtime's secret already"):
        pnet.Runtime.boot("worker:1", state_dir=runtime.state_dir)


def test_twenty_jobs_submitted_concurrently_from_threads(runtime):
    bundle = pnet.compile(HELLO)

    def one(i):
        job = runtime.submit(bundle, {"name": f"job {i}"}, name=f"hello-{i}")
        return job.id, job.result(timeout=120)

    with concurrent.futures.ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(one, range(20)))
    assert [r for _, r in results] == [{"greeting": [f"Hello, job {i}!"]} for i in range(20)]
    assert len({job for job, _ in results}) == 20
    names = {j["name"] for j in runtime.jobs()}
    assert {f"hello-{i}" for i in range(20)} <= names


def test_python_modules_on_the_runtime_workers_with_futures(runtime):
    jobs = [
        runtime.submit(net("geometry.xpnet"), {"p": pnet.Struct(x=float(i), y=1.0), "tag": "t"})
        for i in range(4)
    ]
    futures = [j.future() for j in jobs]
    done = [f.result(timeout=120) for f in concurrent.futures.as_completed(futures)]
    assert len(done) == 4
    for i, job in enumerate(jobs):
        out = job.result()
        assert out["q"] == [pnet.Struct(x=1.0, y=float(i))]
        assert out["r"] == [pytest.approx((i * i + 1) ** 0.5)]
    # The job's tasks and what they logged.
    tasks = jobs[0].tasks()
    assert [t["transition"] for t in tasks] == ["mirror"]
    assert tasks[0]["state"] == "done" and tasks[0]["module"] == "geo.mirror"
    logs = jobs[0].logs()
    assert "mirroring Struct(x=0.0, y=1.0) (t)" in logs[0]["text"]
    assert jobs[0].status()["state"] == "done"
    assert jobs[0].info["tasks"] == 1




def test_await_jobs_in_asyncio(runtime):
    async def main():
        jobs = [runtime.submit(HELLO, {"name": str(i)}) for i in range(3)]
        return await asyncio.gather(*jobs)

    assert asyncio.run(main()) == [{"greeting": [f"Hello, {i}!"]} for i in range(3)]


def test_put_tokens_then_close(runtime):
    job = runtime.submit(net("inbox.xpnet"))
    for x in (1, 2, 3):
        job.put_token("inbox", x)
    with pytest.raises(TimeoutError):
        job.wait(timeout=0.3)  # it waits for more tokens
    with pytest.raises(ValueError, match=r"place `inbox`: expected an integer \(long\)"):
        job.put_token("inbox", "four")
    job.close()
    assert job.result(timeout=60) == {"doubled": [2, 4, 6]}


def test_cancel_a_running_job(runtime):
    job = runtime.submit(net("nap.xpnet"), {"ms": 60_000})
    t0 = time.monotonic()
    while job.status()["tasks_running"] == 0:
        assert time.monotonic() - t0 < 60, "the task did not start"
        time.sleep(0.05)
    job.cancel()
    assert job.wait(timeout=30) == "cancelled"
    with pytest.raises(pnet.JobCancelled):
        job.result()
    assert time.monotonic() - t0 < 50


def test_a_failed_job_raises_with_the_module_error(runtime):
    job = runtime.submit(net("nap.xpnet"), {"ms": -1})
    assert job.wait(timeout=60) == "failed"
    with pytest.raises(pnet.JobFailed, match="cannot sleep -1 ms"):
        job.result()
    with pytest.raises(pnet.JobFailed):
        job.future().result(timeout=10)


def test_blocking_calls_release_the_gil(runtime):
    job = runtime.submit(net("inbox.xpnet"))
    waiter = concurrent.futures.ThreadPoolExecutor(1).submit(job.result, 60)
    # While the other thread blocks in job.result(), this one runs Python code.
    count = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.5:
        count += 1
    assert not waiter.done() and count > 10_000
    job.put_token("inbox", 21)
    job.close()
    assert waiter.result(timeout=60) == {"doubled": [42]}


def test_boot_without_a_worker_program_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(pnet, "find_worker", lambda: None)
    with pytest.raises(pnet.PnetError, match="cannot find gspc-worker"):
        pnet.Runtime.boot("worker:1", state_dir=tmp_path / "rt")
    assert not (tmp_path / "rt" / "secret").exists()


def test_connect_to_a_runtime_booted_by_gspc(tmp_path):
    gspc = os.environ.get("PNET_GSPC")
    if not gspc:
        pytest.skip("PNET_GSPC (the gspc program) is not set")
    state = str(tmp_path / "gspc")
    boot = subprocess.run(
        [gspc, "boot", "--state-dir", state, "--topology", "worker:1"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert boot.returncode == 0, boot.stdout + boot.stderr
    try:
        rt = pnet.Runtime.connect(state)
        assert rt.status()["workers"][0]["state"] == "up"
        job = rt.submit(net("geometry.xpnet"), {"p": pnet.Struct(x=6.0, y=8.0), "tag": "g"})
        assert job.result(timeout=120) == {"q": [pnet.Struct(x=8.0, y=6.0)], "r": [10.0]}
        assert [j["id"] for j in rt.jobs()] == [job.id]
    finally:
        subprocess.run([gspc, "stop", "--state-dir", state], capture_output=True, timeout=120,
                       check=False)
