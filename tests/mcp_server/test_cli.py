"""``agentshark mcp-server``'s command line: what it refuses before serving."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from agentshark.cli import main
from tests.helpers import ROOT


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["mcp-server", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_without_the_sdk_the_error_names_the_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # import mcp (and any mcp.* an earlier test imported) raises ImportError
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")] or ["mcp"]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in [m for m in sys.modules if m.startswith("agentshark.mcp_server.")]:
        monkeypatch.delitem(sys.modules, name)
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert err == (
        "agentshark: mcp-server needs the MCP SDK (mcp is missing): pip install 'agentshark[mcp]'\n"
    )


def test_a_root_that_is_not_a_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "--root", str(tmp_path / "nope"))
    assert (code, out) == (2, "")
    assert err == f"agentshark: --root {tmp_path / 'nope'}: not a folder\n"


def test_a_keylog_outside_the_root(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    keys = ROOT.parent / "shared" / "captures" / "llm_sdk_openai" / "keylog.txt"
    code, out, err = run(capsys, "--root", str(tmp_path), "--keylog", str(keys))
    assert (code, out) == (2, "")
    assert err.startswith(f"agentshark: --keylog {keys}: outside the server's root")


def test_a_port_in_use(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code, out, err = run(
            capsys, "--root", str(tmp_path), "--transport", "http", "--port", str(port)
        )
    assert (code, out) == (2, "")
    assert err.startswith(f"agentshark: cannot listen on 127.0.0.1:{port}: ")
