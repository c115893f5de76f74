"""The measuring core of ``bench/run.py``: one command run in its own child process, timed
from before the fork to after the reap, with its peak RSS (``/usr/bin/time -v``, or
``os.wait4``'s rusage when GNU time is absent); the captures measured, with their counts from
``<capture>.truth.json``; and the untimed check runs that count what agentshark reported.
Nothing here asserts a timing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GNU_TIME = Path("/usr/bin/time")


@dataclass
class Command:
    """One measured command: ``argv`` run directly, or ``shell`` run by bash with pipefail."""

    tool: str
    argv: list[str] | None = None
    shell: str | None = None
    stdout_to_null: bool = True
    note: str = ""

    def display(self) -> str:
        return self.shell if self.shell is not None else shlex.join(self.argv or [])

    def base_argv(self) -> list[str]:
        if self.shell is not None:
            return ["bash", "-o", "pipefail", "-c", self.shell]
        assert self.argv is not None
        return self.argv


@dataclass
class Sample:
    wall: float
    rss_kib: int
    rc: int
    stdout: str
    stderr_tail: str


@dataclass
class Result:
    tool: str
    command: str
    samples: list[Sample] = field(default_factory=list)
    skipped: str | None = None
    check: str = ""  # agentshark's: exchanges counted in an extra, untimed run

    @property
    def ok(self) -> bool:
        return self.skipped is None and bool(self.samples) and all(s.rc == 0 for s in self.samples)

    @property
    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    @property
    def rss_mb(self) -> float:
        return max(s.rss_kib for s in self.samples) / 1024


# --------------------------------------------------------------------------- measuring


def _tail(text: str, lines: int = 12, chars: int = 2000) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])[-chars:]


def measure(cmd: Command, timeout: float) -> Sample:
    """Run ``cmd`` once in its own child process (own process group, so a timeout ends all of
    it): wall time from before the fork to after the reap, and the child's peak RSS."""
    with tempfile.TemporaryDirectory(prefix="agentshark-bench-") as tmp:
        err_path = Path(tmp) / "stderr"
        out_path = Path(tmp) / "stdout"
        time_path = Path(tmp) / "time"
        argv = cmd.base_argv()
        if GNU_TIME.exists():
            argv = [str(GNU_TIME), "-v", "-o", str(time_path), *argv]
        with err_path.open("wb") as err, out_path.open("wb") as out:
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stderr=err,
                stdout=subprocess.DEVNULL if cmd.stdout_to_null else out,
                start_new_session=True,
            )
            try:
                rss_kib = _reap(proc, timeout, t0)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return Sample(
                    wall=time.perf_counter() - t0,
                    rss_kib=0,
                    rc=-9,
                    stdout="",
                    stderr_tail=f"timed out after {timeout:.0f} s",
                )
            wall = time.perf_counter() - t0
        stderr = err_path.read_text(errors="replace")
        rc = proc.returncode
        if GNU_TIME.exists() and time_path.exists():
            report = time_path.read_text(errors="replace")
            m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
            rss_kib = int(m.group(1)) if m else rss_kib
            m = re.search(r"Exit status: (\d+)", report)
            rc = int(m.group(1)) if m else rc
            if "Command terminated by signal" in report:
                rc = rc or -1
        return Sample(
            wall=wall,
            rss_kib=rss_kib,
            rc=rc,
            stdout=out_path.read_text(errors="replace")[-10_000:],
            stderr_tail=_tail(stderr),
        )


def _reap(proc: subprocess.Popen[bytes], timeout: float, t0: float) -> int:
    """Wait for ``proc`` with ``os.wait4`` (its rusage covers the child and every descendant it
    reaped), returning the peak RSS in KiB."""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return int(usage.ru_maxrss)
        if time.perf_counter() - t0 > timeout:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        time.sleep(0.001)


def count_records(path: Path) -> int:
    """Packets in a classic pcap file, for a capture without a truth file (0 if not pcap)."""
    with path.open("rb") as f:
        head = f.read(24)
        if head[:4] not in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
            return 0
        n = 0
        while len(hdr := f.read(16)) == 16:
            f.seek(int.from_bytes(hdr[8:12], "little"), os.SEEK_CUR)
            n += 1
    return n


def warm_page_cache(path: Path) -> None:
    with path.open("rb") as f:
        while f.read(8 << 20):
            pass


def _check_report(cmd: Command, timeout: float) -> dict[str, Any] | str:
    """Run agentshark's command once more, untimed, into a file: its JSON report, or what went
    wrong (in parentheses)."""
    with tempfile.TemporaryDirectory(prefix="agentshark-bench-") as tmp:
        out = Path(tmp) / "report.json"
        proc = subprocess.run(
            [*cmd.base_argv(), "--no-progress", "-o", str(out)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0 or not out.exists():
            return f"(check run: rc {proc.returncode})"
        try:
            report = json.loads(out.read_text())
        except ValueError:
            return "(check run: not JSON)"
    return report if isinstance(report, dict) else "(check run: not a JSON object)"


def count_agentshark_exchanges(cmd: Command, timeout: float, want: int) -> str:
    """Count the exchanges of an untimed run's JSON report against the truth (so that a TLS
    capture it could not decrypt shows, instead of looking fast)."""
    report = _check_report(cmd, timeout)
    if isinstance(report, str):
        return report
    exchanges = report.get("exchanges")
    if not isinstance(exchanges, list):
        return "(check run: no exchanges list)"
    done = sum(1 for e in exchanges if isinstance(e, dict) and e.get("response"))
    return f"{len(exchanges)} exchanges, {done} with a response" + (
        "" if len(exchanges) == done == want else f" (truth: {want})"
    )


def _by_api(items: list[Any], weight: Callable[[dict[str, Any]], int]) -> str:
    counts: dict[str, int] = {}
    for item in items:
        if isinstance(item, dict):
            api = str(item.get("api", "?"))
            counts[api] = counts.get(api, 0) + weight(item)
    return ", ".join(f"{api} {n}" for api, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def count_agentshark_calls(cmd: Command, timeout: float, want: int) -> str:
    """What an untimed ``calls``/``analyze`` run found: its calls by API, the exchanges it
    recognized as an API it does not parse (``not_parsed``, by API), and its exchanges against
    the truth. On a capture of families not parsed yet, the ``calls`` row measures recognition
    and plain exchanges only: this line says so."""
    report = _check_report(cmd, timeout)
    if isinstance(report, str):
        return report
    calls = report.get("calls")
    exchanges = report.get("exchanges")
    if not isinstance(calls, list) or not isinstance(exchanges, list):
        return "(check run: no calls or exchanges list)"
    not_parsed = report.get("not_parsed")
    unparsed = not_parsed if isinstance(not_parsed, list) else []
    n_unparsed = sum(len(u.get("exchanges", [])) for u in unparsed if isinstance(u, dict))
    text = f"{len(calls)} calls ({_by_api(calls, lambda _: 1) or 'none'})"
    if n_unparsed:
        by_api = _by_api(unparsed, lambda u: len(u.get("exchanges", [])))
        text += f"; {n_unparsed} exchanges recognized, not parsed ({by_api})"
    return (
        text
        + f"; {len(exchanges)} exchanges"
        + ("" if len(exchanges) == want else f" (truth: {want})")
    )


def check_run(tool: str, cmd: Command, timeout: float, exchanges: int) -> str:
    """The untimed check of an agentshark row (empty for the other tools)."""
    if tool == "agentshark":
        return count_agentshark_exchanges(cmd, timeout, exchanges)
    if tool in ("agentshark_calls", "agentshark_analyze"):
        return count_agentshark_calls(cmd, timeout, exchanges)
    return ""


@dataclass
class Target:
    """One capture to measure, with its counts (from its truth file when there is one)."""

    capture: Path
    truth: dict[str, Any]
    truth_name: str
    size: int
    packets: int
    exchanges: int
    port: int
    keylog: Path | None
    role: str  # "capture", or "tls" / "baseline" in a decryption-cost run

    @classmethod
    def load(
        cls,
        capture: Path,
        truth_path: Path | None,
        port: int | None,
        keylog: Path | None,
        role: str,
    ) -> Target:
        truth_path = truth_path or capture.with_suffix(".truth.json")
        truth: dict[str, Any] = json.loads(truth_path.read_text()) if truth_path.exists() else {}
        return cls(
            capture=capture,
            truth=truth,
            truth_name=truth_path.name if truth else "missing",
            size=capture.stat().st_size,
            packets=int(truth.get("packets", 0)) or count_records(capture),
            exchanges=int(truth.get("exchanges", len(truth.get("requests", [])))),
            port=port or int(truth.get("port", 80)),
            keylog=keylog,
            role=role,
        )

    def describe(self) -> str:
        keys = f", key log {self.keylog.name}" if self.keylog else ""
        return (
            f"capture {self.capture}: {self.size / 1e6:.1f} MB, {self.packets:,} packets, "
            f"{self.exchanges:,} exchanges (truth: {self.truth_name}){keys}"
        )


def default_keylog(capture: Path) -> Path | None:
    """``<capture>.keys.log`` (what bench/make_capture.py --tls writes), when it exists."""
    path = capture.with_suffix(".keys.log")
    return path if path.exists() else None
