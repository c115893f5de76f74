"""pytest support: assert on agent traffic from a capture or a recording.

Installed with agentshark, this module is a pytest plugin (entry point ``pytest11``), so
its fixtures are there in every test without an import::

    def test_the_agent_asks_for_the_weather(agentshark_trace):
        report = agentshark_trace("tests/captures/agent.pcap", keylogs=["tests/captures/keys.log"])
        (call,) = report.calls(api="openai.chat", tool="get_current_weather")
        assert call.status == "ok"
        assert not report.incidents(severity="error")

``agentshark_trace(paths, **options)`` is :func:`agentshark.analyze` (same arguments,
redaction on by default), and the :class:`~agentshark.library.report.Report` it gives has
the queries (``calls(api=, model=, tool=, text=, status=)``, ``tool_calls``, ``traces``,
``incidents``...). It reads files: a capture, a HAR file a recording gateway wrote, a
cassette, an MCP stdio transcript.

``agentshark_proxy(upstream=URL, **options)`` runs the test's own agent under the gateway:
it starts ``agentshark proxy`` (:class:`~agentshark.library.gateway.ProxySource`, a child
process recording a HAR file in the test's ``tmp_path``) and gives a :class:`GatewayTrace`;
the test points its client at :attr:`GatewayTrace.url`, and :meth:`GatewayTrace.calls`
gives the calls recorded so far (waiting for as many as asked), :meth:`GatewayTrace.report`
stops the proxy and gives the whole recording's report. The proxy is stopped when the test
ends. mitmproxy may live in another environment (its h11 pin, ``scripts/proxy_venv.sh``):
``python=`` or ``AGENTSHARK_PROXY_PYTHON`` names that interpreter::

    def test_the_agent_calls_the_model(agentshark_proxy):
        gateway = agentshark_proxy(upstream="https://api.openai.com")
        client = openai.OpenAI(base_url=gateway.url + "/v1")
        client.chat.completions.create(model="gpt-4o-mini", messages=[...])
        (call,) = gateway.calls(at_least=1)
        assert call.status == "ok"

:func:`assert_no_incidents` fails a test with the incidents found, one per line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentshark.library.analyze import analyze
from agentshark.library.gateway import ProxySource
from agentshark.library.live import LiveUpdate
from agentshark.library.report import Report
from agentshark.library.views import Call
from agentshark.output.report import RenderOptions

__all__ = ["GatewayTrace", "agentshark_proxy", "agentshark_trace", "assert_no_incidents"]


@pytest.fixture
def agentshark_trace() -> Callable[..., Report]:
    """A function: ``agentshark_trace(paths, *, keylogs=(), redact=True, ...) -> Report``."""

    def load(paths: Any, **options: Any) -> Report:
        return analyze(paths, **options)

    return load


def assert_no_incidents(report: Report, *, severity: str | None = None) -> None:
    """Fail (AssertionError) when the report has incidents (of that ``severity`` only)."""
    found = report.incidents(severity=severity)
    if found:
        lines = "\n".join(f"  {i.severity} {i.rule}: {i.message}" for i in found)
        raise AssertionError(f"{len(found)} incident(s) in the traffic:\n{lines}")


class GatewayTrace:
    """A test's agent traffic through a running gateway (see the module docstring)."""

    def __init__(self, source: ProxySource, *, redact: bool = True) -> None:
        self.source = source
        self.url = source.url
        self.har = source.har
        self.updates: list[LiveUpdate] = []
        self._render = RenderOptions(redact=redact)
        self._redact = redact
        self._report: Report | None = None

    def calls(self, *, at_least: int = 0, timeout: float = 30.0) -> list[Call]:
        """The calls recorded so far; first waits (up to ``timeout`` seconds) until there
        are ``at_least`` of them, failing the test with the proxy's log if they do not come."""
        deadline = time.monotonic() + timeout
        while True:
            self._take(self.source.poll())
            found = [u.call for u in self.updates if u.call is not None]
            if len(found) >= at_least:
                return found
            if time.monotonic() > deadline or self.source.returncode is not None:
                pytest.fail(
                    f"{len(found)} of {at_least} calls came through the gateway in "
                    f"{timeout:.0f}s; its log:\n{self.source.log()}"
                )
            time.sleep(0.02)

    def report(self) -> Report:
        """Stop the gateway; the report of its whole recording (``analyze`` of the HAR)."""
        if self._report is None:
            self.close()
            self._report = analyze(self.har, redact=self._redact)
        return self._report

    def close(self) -> None:
        self._take(self.source.close())

    def _take(self, updates: list[Any]) -> None:
        self.updates.extend(LiveUpdate.of(u, self._render) for u in updates)


@pytest.fixture
def agentshark_proxy(tmp_path: Path) -> Iterator[Callable[..., GatewayTrace]]:
    """A function: ``agentshark_proxy(upstream=None, *, routes=None, redact=True, ...)
    -> GatewayTrace``, the options those of :class:`~agentshark.library.gateway.ProxySource`;
    each gateway started is stopped when the test ends."""
    started: list[GatewayTrace] = []

    def start(upstream: str | None = None, **options: Any) -> GatewayTrace:
        har = options.pop("har", tmp_path / f"gateway{len(started) + 1}.har")
        redact = bool(options.get("redact", True))
        trace = GatewayTrace(ProxySource(upstream=upstream, har=har, **options), redact=redact)
        started.append(trace)
        return trace

    yield start
    for trace in started:
        trace.close()
