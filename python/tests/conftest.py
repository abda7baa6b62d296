"""Shared fixtures: the paths of the nets and one runtime for the runtime tests."""

import os

import pytest

import pnet

HERE = os.path.dirname(os.path.abspath(__file__))
NETS = os.path.join(HERE, "nets")
ROOT = os.path.dirname(os.path.dirname(HERE))


def net(name: str) -> str:
    """A net of tests/nets/."""
    return os.path.join(NETS, name)


def line_col(path: str, needle: str) -> tuple[int, int]:
    """The 1-based line and column of the first `needle` in the file."""
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            at = line.find(needle)
            if at >= 0:
                return i, at + 1
    raise AssertionError(f"{needle!r} is not in {path}")


@pytest.fixture(scope="session")
def runtime(tmp_path_factory):
    """A runtime with two workers, stopped at the end of the session."""
    state = tmp_path_factory.mktemp("runtime")
    with pnet.Runtime.boot("worker:2", state_dir=state / "rt", timeout=120) as rt:
        yield rt
