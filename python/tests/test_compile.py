"""pnet.compile: good nets give bundles, bad nets raise CompileError with the location."""

import os

import pytest

import pnet
from conftest import ROOT, line_col, net


def test_a_good_net_gives_a_bundle_with_its_ports(tmp_path):
    b = pnet.compile(os.path.join(ROOT, "examples/points/points.xpnet"))
    assert b.in_ports() == [("points", "point"), ("scale", "long")]
    assert b.out_ports() == [("total", "point")]
    assert not b.calls_modules()
    # A bundle saved as .pnet loads back and runs.
    b.save(tmp_path / "points.pnet")
    again = pnet.compile(tmp_path / "points.pnet")
    assert again.out_ports() == b.out_ports()


def test_a_bad_net_raises_with_file_line_and_column():
    path = net("bad.xpnet")
    with pytest.raises(pnet.CompileError) as info:
        pnet.compile(path)
    e = info.value
    assert (e.line, e.column) == line_col(path, '${n} + "one"')
    assert e.file == path
    assert e.code == "type_error"
    assert "operands of `+` must have the same type" in e.message
    assert [d.code for d in e.diagnostics] == ["type_error"]
    assert e.diagnostics[0].severity == "error"
    assert str(e).startswith(f"{path}:{e.line}:{e.column}: error[type_error]:")
    assert '${n} + "one"' in e.rendered  # the source line, as the compiler shows it
    assert isinstance(e, pnet.PnetError)


def test_a_missing_file_is_a_compile_error():
    with pytest.raises(pnet.CompileError) as info:
        pnet.compile(net("missing.xpnet"))
    assert info.value.code == "file_not_found"
    assert info.value.file == net("missing.xpnet")
    assert info.value.line is None
