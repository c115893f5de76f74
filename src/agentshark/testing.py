"""pytest support: assert on agent traffic from a capture or a recording.

Installed with agentshark, this module is a pytest plugin (entry point ``pytest11``), so
its fixture is there in every test without an import::

    def test_the_agent_asks_for_the_weather(agentshark_trace):
        report = agentshark_trace("tests/captures/agent.pcap", keylogs=["tests/captures/keys.log"])
        (call,) = report.calls(api="openai.chat", tool="get_current_weather")
        assert call.status == "ok"
        assert not report.incidents(severity="error")

``agentshark_trace(paths, **options)`` is :func:`agentshark.analyze` (same arguments,
redaction on by default), and the :class:`~agentshark.library.report.Report` it gives has
the queries (``calls(api=, model=, tool=, text=, status=)``, ``tool_calls``, ``traces``,
``incidents``...). Today it reads files: a capture, a HAR file a recording gateway wrote,
a cassette, an MCP stdio transcript. Running the test itself under a gateway or a live
capture (the fixture starting ``agentshark proxy`` and handing the test its trace) waits
for those commands; :func:`agentshark.live` with a :class:`~agentshark.library.live.LiveSource`
is the seam they plug into.

:func:`assert_no_incidents` fails a test with the incidents found, one per line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentshark.library.analyze import analyze
from agentshark.library.report import Report

__all__ = ["agentshark_trace", "assert_no_incidents"]


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
