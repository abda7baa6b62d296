"""examples/python/pnet_demo.py runs and prints what it promises."""

import os
import subprocess
import sys

from conftest import ROOT


def test_the_example_script_runs():
    demo = os.path.join(ROOT, "examples/python/pnet_demo.py")
    p = subprocess.run(
        [sys.executable, demo], capture_output=True, text=True, timeout=600, check=False
    )
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "{'greeting': ['Hello, world!']}"
    assert lines[1] == "{'total': [Struct(x=40, y=60)]}"
    assert lines[2] == "{'length': [5.0]}"
    assert lines[3].startswith("line 8, column 21: [type_error] operands of `+`")
    assert lines[4] == "lengths: [1.0, 1.414, 2.236, 3.162, 4.123, 5.099, 6.083, 7.071]"
    assert lines[5] == "the first job's log: measuring Struct(x=0.0, y=1.0)"
    assert lines[6] == "[{'greeting': ['Hello, a!']}, {'greeting': ['Hello, b!']}]"
