""":class:`ProxySource`: ``agentshark proxy`` as a :class:`~agentshark.library.live.LiveSource`.

The gateway runs as a child process, ``python -m agentshark proxy --listen 127.0.0.1:0 -w
FILE.har ...``, and the updates are those of a :class:`~agentshark.pipeline.follow.Follower`
on the HAR file it writes: the proxy keeps that file a whole document after every exchange,
and the follower reads a document again when it changed (:mod:`agentshark.sources.tail`), so
each exchange comes once it is recorded, with the calls, traces and incidents that
``agentshark analyze FILE.har`` gives once it is whole.

Why a child and a file rather than the gateway's addon pushing into an
:class:`~agentshark.library.live.ExchangeFeed` in this process: mitmproxy pins versions of
``h11`` that httpx (and so the openai and anthropic SDKs) cannot share one environment with
(``scripts/proxy_venv.sh``), so the process under test usually cannot import it; the child
may be another interpreter (``python=``, or the ``AGENTSHARK_PROXY_PYTHON`` environment
variable) that has the ``proxy`` extra. The recording is also the artifact a failing test
leaves behind (``har=``), and the HAR read back is the report the proxy's own live view
prints (tests/proxy/test_sdks.py).

Redaction: the recording is redacted unless ``redact=False`` (``--no-redact``); the updates'
JSON is redacted again by :func:`~agentshark.library.live.live` unless told otherwise.
A proxy that cannot start (no mitmproxy there, a bad route, a port in use) raises
:class:`ProxyError` with what it said; one that stops on its own is said by ``returncode``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from agentshark.pipeline.follow import Follower, Update

__all__ = ["ProxyError", "ProxySource"]

_BANNER = "listening on http://"


class ProxyError(RuntimeError):
    """The gateway could not start; the message is what it said."""


class ProxySource:
    """``agentshark proxy`` in reverse mode (``upstream=`` and/or ``routes={"/prefix": url}``)
    or forward mode (``forward=True``), started at once; clients use :attr:`url`.

    ``upstream_ca``, ``insecure``, ``keylog``, ``confdir``: the proxy's options of those
    names. ``har``: where the recording goes (default: a file in a temporary directory,
    removed by :meth:`close` unless ``keep=True``). ``python``: the interpreter that runs
    the proxy. ``timeout``: seconds to wait for it to listen, and for it to stop."""

    def __init__(
        self,
        *,
        upstream: str | None = None,
        routes: dict[str, str] | None = None,
        forward: bool = False,
        upstream_ca: str | os.PathLike[str] | None = None,
        insecure: bool = False,
        keylog: str | os.PathLike[str] | None = None,
        confdir: str | os.PathLike[str] | None = None,
        har: str | os.PathLike[str] | None = None,
        redact: bool = True,
        python: str | None = None,
        keep: bool = False,
        timeout: float = 60.0,
    ) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="agentshark-proxy-")
        self.har = Path(har) if har is not None else Path(self._dir.name) / "recording.har"
        self._keep = keep or har is not None
        self._timeout = timeout
        self._log = Path(self._dir.name) / "proxy.log"
        args = _arguments(upstream, routes or {}, forward=forward, redact=redact)
        for flag, value in (
            ("--upstream-ca", upstream_ca),
            ("--keylog", keylog),
            ("--confdir", confdir),
        ):
            if value is not None:
                args += [flag, str(value)]
        if insecure:
            args.append("--insecure")
        interpreter = python or os.environ.get("AGENTSHARK_PROXY_PYTHON") or sys.executable
        command = [interpreter, "-m", "agentshark", "proxy", "--listen", "127.0.0.1:0"]
        command += ["--view", "calls", "-w", str(self.har), *args]
        with self._log.open("wb") as log:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log
            )
        self.port = self._wait_listening()
        self.url = f"http://127.0.0.1:{self.port}"
        self._follower = Follower([str(self.har)])
        self._closed = False

    @property
    def returncode(self) -> int | None:
        """The proxy's exit status once it stopped, else None."""
        return self._process.poll()

    def log(self) -> str:
        """What the proxy wrote on standard error (its banner, its warnings; redacted)."""
        try:
            return self._log.read_text(errors="replace")
        except OSError:
            return ""

    def poll(self) -> list[Update]:
        """The updates of the exchanges recorded since the last poll; never blocks."""
        return [] if self._closed else self._follower.poll()

    def close(self) -> list[Update]:
        """Stop the proxy (SIGINT: the exchanges still open are recorded as incomplete, the
        recording closed), then the rest of the recording and the final traces."""
        if self._closed:
            return []
        self._stop()
        out = self._follower.close()
        self._closed = True
        if not self._keep:
            self.har.unlink(missing_ok=True)
        self._dir.cleanup()
        return out

    def __enter__(self) -> ProxySource:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _wait_listening(self) -> int:
        deadline = time.monotonic() + self._timeout
        while True:
            for line in self.log().splitlines():
                if _BANNER in line:
                    return int(line.rsplit(":", 1)[1])
            status = self._process.poll()
            if status is not None or time.monotonic() > deadline:
                said = self.log().strip() or "(nothing on standard error)"
                self._stop()
                self._dir.cleanup()
                why = f"exited with status {status}" if status is not None else "did not listen"
                raise ProxyError(f"agentshark proxy {why}: {said}")
            time.sleep(0.02)

    def _stop(self) -> None:
        if self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
            try:
                self._process.wait(self._timeout)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


def _arguments(
    upstream: str | None, routes: dict[str, str], *, forward: bool, redact: bool
) -> list[str]:
    args = ["--forward"] if forward else []
    if upstream is not None:
        args += ["--upstream", upstream]
    for prefix, url in routes.items():
        args += ["--route", f"{prefix}={url}"]
    if not redact:
        args.append("--no-redact")
    return args
