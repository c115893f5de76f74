"""``--jobs N``: the report of N worker processes is the one of one process, byte for byte;
a worker that fails or dies is said in one line, never as a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentshark.cli import main
from agentshark.pipeline import jobs
from tests.helpers import CAPTURES

REPO = Path(__file__).resolve().parents[2]
OWN = REPO / "tests" / "data" / "captures"
EXAMPLE = REPO / "examples" / "agent_chat.pcap"


def _captures() -> list[tuple[str, list[str]]]:
    """Every corpus capture, with the key logs beside it."""
    found: list[tuple[str, list[str]]] = [(str(EXAMPLE), [])]
    for folder in sorted([*OWN.iterdir(), *CAPTURES.iterdir()]):
        if not folder.is_dir():
            continue
        keys = [str(p) for p in sorted(folder.iterdir()) if p.name in ("keys.log", "keylog.txt")]
        captures = [p for p in sorted(folder.iterdir()) if p.suffix in (".pcap", ".pcapng")]
        found.extend((str(capture), keys) for capture in captures)
    return found


CAPTURE_RUNS = _captures()


def _report(tmp_path: Path, args: list[str], n: int) -> bytes:
    out = tmp_path / f"jobs{n}.out"
    assert main([*args, "--jobs", str(n), "-o", str(out)]) in (0, 1)
    return out.read_bytes()


@pytest.mark.parametrize(
    ("capture", "keys"),
    CAPTURE_RUNS,
    ids=[str(Path(c).relative_to(Path(c).parents[1])) for c, _ in CAPTURE_RUNS],
)
def test_the_report_is_the_same_for_any_number_of_jobs(
    tmp_path: Path, capture: str, keys: list[str]
) -> None:
    args = ["analyze", capture, "--format", "json", "--no-progress"]
    for key in keys:
        args += ["--keylog", key]
    one = _report(tmp_path, args, 1)
    assert _report(tmp_path, args, 2) == one
    assert _report(tmp_path, args, 3) == one


@pytest.mark.parametrize("command", ["exchanges", "calls", "analyze"])
def test_several_inputs_of_several_kinds(tmp_path: Path, command: str) -> None:
    """Captures split, a HAR file and an MCP stdio transcript read whole by the first worker:
    ids numbered across all of them as one process does, connections per input."""
    inputs = [
        str(EXAMPLE),
        str(OWN / "proxy_sdk_run" / "recording.har"),
        str(OWN / "mcp_streamable_sessions" / "capture.pcap"),
        str(REPO / "tests" / "data" / "secrets" / "stdio" / "transcript.jsonl"),
        str(CAPTURES / "https_tls13_h2" / "capture.pcap"),
    ]
    for fmt in ("json", "text"):
        args = [command, *inputs, "--format", fmt, "--no-progress", "--wide"]
        args += ["--keylog", str(CAPTURES / "https_tls13_h2" / "keylog.txt")]
        one = _report(tmp_path, args, 1)
        assert b"e1" in one or fmt == "text"
        assert _report(tmp_path, args, 2) == one


def test_a_failing_worker_is_said_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = jobs.packet_owner  # type: ignore[attr-defined]

    def owner(linktype: int, data: bytes, n: int) -> int:
        if os.getpid() != parent and n == 2 and len(data) > 100:
            raise RuntimeError("the hash broke")
        return real(linktype, data, n)

    parent = os.getpid()
    monkeypatch.setattr(jobs, "packet_owner", owner)
    status = main(["exchanges", str(EXAMPLE), "--jobs", "2", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 1
    assert "Traceback" not in err
    assert err.startswith("agentshark: worker ")
    assert "failed on " + str(EXAMPLE) in err
    assert "RuntimeError: the hash broke" in err
    assert "--jobs 1" in err


def test_a_worker_that_dies_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = jobs.packet_owner  # type: ignore[attr-defined]
    parent = os.getpid()

    def owner(linktype: int, data: bytes, n: int) -> int:
        if os.getpid() != parent:
            os._exit(9)  # as the kernel's OOM killer would leave it
        return real(linktype, data, n)

    monkeypatch.setattr(jobs, "packet_owner", owner)
    status = main(["calls", str(EXAMPLE), "--jobs", "2", "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 1
    assert "Traceback" not in err
    assert "stopped before the end of the input (exit status 9" in err


def test_one_job_or_no_capture_runs_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert jobs.can_share([str(EXAMPLE)])
    assert not jobs.can_share([str(OWN / "proxy_sdk_run" / "recording.har")])
    assert not jobs.can_share(["-", str(EXAMPLE)])
    assert jobs.default_jobs() >= 1


_SLOW = """
import sys, time
import agentshark.pipeline.jobs as jobs
real = jobs.packet_owner
def slow(*args):
    time.sleep(0.05)
    return real(*args)
jobs.packet_owner = slow
from agentshark.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for the workers")
def test_ctrl_c_stops_every_worker(tmp_path: Path) -> None:
    """Ctrl-C reaches the terminal's whole process group: the workers ignore it, the parent
    stops them and exits 130 with its one line."""
    command = [sys.executable, "-c", _SLOW, "calls", str(EXAMPLE), "--jobs", "2"]
    proc = subprocess.Popen(
        [*command, "-o", str(tmp_path / "out")],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while len(_children(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = _children(proc.pid)
    assert len(workers) >= 2
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert "interrupted" in err
    for pid in workers:  # gone, or a zombie waiting for init
        assert _state(pid) in ("", "Z")


def _state(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""
