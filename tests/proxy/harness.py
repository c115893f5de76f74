"""Run ``agentshark proxy`` (and ``mitmdump``) as a child process for the tests and bench.

mitmproxy lives in the venv of ``scripts/proxy_venv.sh`` (it cannot share the test venv,
see that script), or in the running interpreter when it has it; :data:`needs_mitmproxy`
skips a test when neither is there, naming the script.
"""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT

VENV_PYTHON = ROOT / ".venv-proxy" / "bin" / "python"


def proxy_python() -> str | None:
    """An interpreter that has mitmproxy and runs this tree's agentshark, or None."""
    if importlib.util.find_spec("mitmproxy") is not None:
        return sys.executable
    return str(VENV_PYTHON) if VENV_PYTHON.exists() else None


needs_mitmproxy = pytest.mark.skipif(
    proxy_python() is None,
    reason="mitmproxy is not installed: run `bash scripts/proxy_venv.sh` (its own venv)",
)


def agentshark(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``agentshark ARGS`` with the mitmproxy interpreter."""
    python = proxy_python()
    assert python is not None
    cmd = [python, "-m", "agentshark", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


class Child:
    """A child process whose stdout and stderr lines are collected as they come."""

    def __init__(self, cmd: Sequence[str], cwd: Path | None = None) -> None:
        self.process = subprocess.Popen(
            list(cmd),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, into: list[str]) -> None:
        for line in stream:
            into.append(line)  # noqa: PERF402  # as each line comes, for wait_for

    def wait_for(self, ready: Callable[[], bool], timeout: float = 90, what: str = "") -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if self.process.poll() is not None:
                time.sleep(0.2)  # the readers' last lines
                raise AssertionError(f"the child ended ({self.process.returncode}): {self.text}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}: {self.text}")
            time.sleep(0.02)

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(10)
        for reader in self._readers:
            reader.join(10)
        return code

    @property
    def text(self) -> str:
        return "".join(self.out) + "".join(self.err)


class ProxyRun(Child):
    """``agentshark proxy ARGS --listen 127.0.0.1:0 --format json`` (or ``fmt``); the port it
    took."""

    def __init__(self, args: Sequence[str], *, fmt: str = "json") -> None:
        python = proxy_python()
        assert python is not None
        cmd = [python, "-m", "agentshark", "proxy", "--listen", "127.0.0.1:0", "--format", fmt]
        super().__init__([*cmd, *args])
        self.wait_for(lambda: any("listening on" in line for line in self.err), what="listen")
        banner = next(line for line in self.err if "listening on" in line)
        self.port = int(banner.rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}"

    @property
    def updates(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in list(self.out) if line.startswith("{")]

    def exchanges(self) -> int:
        return sum(u["update"] == "exchange" for u in self.updates)

    def wait_exchanges(self, n: int) -> None:
        self.wait_for(lambda: self.exchanges() >= n, what=f"{n} exchanges")

    def wait_recorded(self, har: Path, n: int) -> None:
        """Until the HAR file ``har`` holds ``n`` entries (for the text view)."""

        def recorded() -> int:
            try:
                return len(json.loads(har.read_text())["log"]["entries"])
            except (OSError, ValueError):
                return 0

        self.wait_for(lambda: recorded() >= n, what=f"{n} entries in {har}")

    def __enter__(self) -> ProxyRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
