"""The runtime started by :meth:`pnet.Runtime.boot` (``python -m pnet._daemon``): the
persistent runtime of ``gspc daemon``, run in this process by the native part until a client
stops it."""

from __future__ import annotations

import argparse
import sys

from . import _native


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m pnet._daemon")
    p.add_argument("--state-dir", required=True)
    p.add_argument("--topology")
    p.add_argument("--module-path", action="append", default=[])
    p.add_argument("--worker")
    p.add_argument("--listen")
    p.add_argument("--max-retries", type=int)
    a = p.parse_args(argv)
    report = _native.serve(
        a.state_dir,
        topology=a.topology,
        module_path=a.module_path,
        worker_program=a.worker,
        listen=a.listen,
        max_retries=a.max_retries,
    )
    print(f"pnet daemon: {report}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
