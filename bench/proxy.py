"""The latency ``agentshark proxy`` adds to a streamed model call: time to first byte and
each chunk's delay, through the proxy vs straight to the upstream. Nothing is asserted.

The upstream is the proxy tests' HTTPS server (``tests/proxy/upstream.py``) in this process,
answering every request with the streamed chat completion recorded in
``../shared/captures/llm_sdk_openai`` (11 SSE events with ``[DONE]``, one write each,
``--gap`` ms apart), and noting when it hands each event to the transport
(``perf_counter``). httpx streams the response. An event's delay is its arrival at the
client (the first read that completes its bytes) minus its send time; time to first byte
is the first response bytes after the request was sent.

Direct: httpx -> upstream over TLS. Proxied: httpx -> ``agentshark proxy`` (reverse mode,
recording a HAR and printing the live view, as a user runs it) -> the upstream over TLS.
Runs alternate between the two. Needs ``.venv-proxy`` (``bash scripts/proxy_venv.sh``)::

    .venv/bin/python bench/proxy.py --runs 200 [--view calls]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.proxy.harness import ProxyRun  # noqa: E402
from tests.proxy.upstream import Upstream, replies_from_capture  # noqa: E402

BODY = {"model": "gpt-stub", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def _one(client: httpx.Client, url: str, up: Upstream) -> tuple[float, list[float]]:
    """(time to first byte, each event's delay), in seconds."""
    arrivals: list[tuple[float, int]] = []
    got = 0
    started = time.perf_counter()
    with client.stream("POST", url, json=BODY) as response:
        for chunk in response.iter_raw():
            got += len(chunk)
            arrivals.append((time.perf_counter(), got))
    sent = up.sent[-1]
    ends = []
    total = 0
    for event in up.replies.by_key[("POST", "/v1/chat/completions", True, False)][0].chunks:
        total += len(event)
        ends.append(total)
    delays = []
    for sent_at, end in zip(sent, ends, strict=True):
        arrived = next(t for t, n in arrivals if n >= end)
        delays.append(arrived - sent_at)
    return arrivals[0][0] - started, delays


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _row(name: str, values: list[float]) -> str:
    med, p95 = statistics.median(values) * 1000, _pct(values, 0.95) * 1000
    return f"{name:<28} median {med:8.3f} ms   p95 {p95:8.3f} ms   (n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="requests per path")
    parser.add_argument("--gap", type=float, default=5.0, help="ms between two events")
    parser.add_argument("--view", choices=("analyze", "calls"), default="analyze")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        replies = replies_from_capture("llm_sdk_openai")
        with Upstream(replies, Path(tmp), sse_delay=args.gap / 1000, repeat=True) as up:
            har = Path(tmp) / "bench.har"
            flags = ["--upstream", up.url, "--upstream-ca", str(up.cert), "-w", str(har)]
            flags += ["--view", args.view]
            with ProxyRun(flags) as proxy:
                direct = httpx.Client(verify=str(up.cert), timeout=60)
                proxied = httpx.Client(timeout=60)
                results: dict[str, tuple[list[float], list[float]]] = {
                    "direct": ([], []),
                    "proxy": ([], []),
                }
                for run in range(args.runs + 5):
                    for name, client, base in (
                        ("direct", direct, up.url),
                        ("proxy", proxied, proxy.url),
                    ):
                        ttfb, delays = _one(client, f"{base}/v1/chat/completions", up)
                        if run >= 5:  # warm-up: connections, TLS sessions, imports
                            results[name][0].append(ttfb)
                            results[name][1].extend(delays)
                direct.close()
                proxied.close()
    events = len(replies.by_key[("POST", "/v1/chat/completions", True, False)][0].chunks)
    print(
        f"{args.runs} streamed calls per path, {events} SSE events each, {args.gap:g} ms apart, "
        f"proxy --view {args.view}"
    )
    for name, (firsts, gaps) in results.items():
        print(_row(f"{name}: time to first byte", firsts))
        print(_row(f"{name}: event delay", gaps))
    added_ttfb = statistics.median(results["proxy"][0]) - statistics.median(results["direct"][0])
    added = statistics.median(results["proxy"][1]) - statistics.median(results["direct"][1])
    p95 = _pct(results["proxy"][1], 0.95) - _pct(results["direct"][1], 0.95)
    print(
        f"added by the proxy: time to first byte {added_ttfb * 1000:.3f} ms (median); "
        f"per event {added * 1000:.3f} ms (median), {p95 * 1000:.3f} ms (p95)"
    )


if __name__ == "__main__":
    main()
