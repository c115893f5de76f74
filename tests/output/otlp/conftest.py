"""A real Arize Phoenix for the OTLP tests: ``phoenix serve`` on 127.0.0.1 with free ports
and a working directory of its own, started once per test session and stopped after.

Phoenix lives in its own venv, ``.venv-phoenix`` at the repository root, made by
``bash scripts/phoenix.sh``; without it the Phoenix tests skip and say so.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import ROOT

PHOENIX = ROOT / ".venv-phoenix" / "bin" / "phoenix"
START_TIMEOUT = 300.0  # seconds; it takes about 40 s on the 2-core machine


@dataclass(frozen=True)
class Phoenix:
    url: str  # http://127.0.0.1:PORT (REST API under /v1, OTLP/HTTP at /v1/traces)
    grpc: str  # http://127.0.0.1:PORT (OTLP/gRPC)
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    if not PHOENIX.exists():
        pytest.skip(
            "Arize Phoenix is not installed: run `bash scripts/phoenix.sh` "
            "(it installs arize-phoenix into .venv-phoenix)"
        )
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = work / "phoenix.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(PHOENIX), "serve"], env=env, stdout=out, stderr=subprocess.STDOUT, cwd=work
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _up(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                pytest.fail(f"phoenix serve did not come up (exit {proc.poll()}):\n{tail}")
            time.sleep(0.5)
        yield Phoenix(url=url, grpc=f"http://127.0.0.1:{grpc_port}", log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
