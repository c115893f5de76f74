"""The viewer with 10,000 calls: how long the HTML report takes to build, load and scroll.

    python3 bench/viewer.py                  # 10,000 calls; bench/out/viewer_10000.har/.html
    python3 bench/viewer.py --calls 2000
    python3 bench/viewer.py --browse-only    # the browser figures again, same page

Input: a HAR file made here of OpenAI Chat Completions calls: agent runs of four calls each
(user question -> tool call -> tool result -> ... -> answer, linked by replayed history), plus
one long run of ``--long`` calls sharing one W3C ``traceparent`` (one trace with that many
model spans, for the waterfall). Measured, each once (a benchmark, not a test):

* ``analyze json``: ``agentshark analyze --format json`` of the same input, for comparison;
* ``build``: ``agentshark report`` in this process (analysis, projection, writing the page);
* ``load``: Chromium (``/usr/bin/chromium``, ``scripts/chromium.sh``) from navigation until
  the viewer has parsed its index and drawn the lists;
* ``calls tab``: switching the list to all calls;
* ``scroll calls``: the calls list scrolled from top to bottom in 300 steps, two frames each;
  the figures are the total and the slowest step; ``draw per step``: the same 300 steps drawn
  synchronously (the viewer's own work, DOM and layout, without waiting for frames);
* ``open long trace`` and ``scroll waterfall``: the same for the one long trace.

Run with ``nice -n 19`` on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from agentshark.cli import main as agentshark

OUT = Path(__file__).resolve().parent / "out"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
T0 = 1_790_000_000.0


def _entry(n: int, at: float, messages: list[Any], answer: dict[str, Any], tp: str | None) -> Any:
    req = {"model": "gpt-4o-mini", "messages": messages}
    resp = {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(at),
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": answer, "finish_reason": _finish(answer)}],
        "usage": {"prompt_tokens": 40 + 10 * len(messages), "completion_tokens": 20},
    }
    headers = [{"name": "Content-Type", "value": "application/json"}]
    if tp:
        headers.append({"name": "traceparent", "value": tp})
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 1000):03d}Z"
    return {
        "startedDateTime": stamp,
        "time": 300,
        "request": {
            "method": "POST",
            "url": "https://api.openai.com/v1/chat/completions",
            "httpVersion": "HTTP/1.1",
            "headers": headers,
            "postData": {"mimeType": "application/json", "text": json.dumps(req)},
        },
        "response": {
            "status": 200,
            "statusText": "OK",
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "content": {"mimeType": "application/json", "text": json.dumps(resp)},
        },
        "timings": {"send": 1, "wait": 250, "receive": 49},
    }


def _finish(answer: dict[str, Any]) -> str:
    return "tool_calls" if answer.get("tool_calls") else "stop"


def _tool_call(run: int, k: int) -> dict[str, Any]:
    args = json.dumps({"city": f"city {run}-{k}"})
    call = {"id": f"call_{run}_{k}", "type": "function", "function": {"name": "get_weather"}}
    call["function"]["arguments"] = args  # type: ignore[index]
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def make_har(calls: int, long: int) -> dict[str, Any]:
    entries = []
    at = T0
    n = 0
    run = 0
    while n < calls - long:
        messages: list[Any] = [{"role": "user", "content": f"Weather for trip {run}?"}]
        for k in range(min(4, calls - long - n)):
            last = k == 3 or n + 1 == calls - long
            answer = {"role": "assistant", "content": f"Run {run} done."} if last else None
            answer = answer or _tool_call(run, k)
            entries.append(_entry(n, at, list(messages), answer, None))
            messages.append(answer)
            if not last:
                result = {"role": "tool", "tool_call_id": f"call_{run}_{k}", "content": "sunny"}
                messages.append(result)
            at += 0.45
            n += 1
        run += 1
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    for k in range(long):
        tp = f"00-{trace}-{k + 1:016x}-01"
        question = [{"role": "user", "content": f"step {k} of the long run"}]
        answer = {"role": "assistant", "content": f"step {k} done"}
        entries.append(_entry(n, at, question, answer, tp))
        at += 0.35
        n += 1
    return {"log": {"version": "1.2", "creator": {"name": "bench/viewer.py"}, "entries": entries}}


SCROLL = """async ([sel, steps]) => {
  const box = document.querySelector(sel);
  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
  const t0 = performance.now(); let worst = 0;
  const step = (box.scrollHeight - box.clientHeight) / steps;
  for (let i = 1; i <= steps; i++) {
    const a = performance.now(); box.scrollTop = i * step; await frame(); await frame();
    worst = Math.max(worst, performance.now() - a);
  }
  return [performance.now() - t0, worst, box.querySelectorAll('.vrow').length];
}"""


WORK = """([which, steps]) => {
  const S = window.agentsharkViewer.state;
  const list = which === "list" ? S.list : S.wf;
  const box = list.box;
  const step = (box.scrollHeight - box.clientHeight) / steps;
  box.scrollTop = 0; list.refresh();
  const t0 = performance.now();
  for (let i = 1; i <= steps; i++) { box.scrollTop = i * step; list.draw(); void box.offsetHeight; }
  return (performance.now() - t0) / steps;
}"""


def browse(html: Path, long: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path="/usr/bin/chromium", args=ARGS, headless=True,
            viewport={"width": 1400, "height": 900},
        )  # fmt: skip
        page = ctx.new_page()
        t = time.perf_counter()
        page.goto(html.as_uri())
        page.wait_for_selector("body[data-ready]", state="attached", timeout=120_000)
        figures["load_s"] = time.perf_counter() - t
        t = time.perf_counter()
        page.click("#tab-calls")
        page.wait_for_selector(".item[data-kind=call]")
        figures["calls_tab_s"] = time.perf_counter() - t
        total, worst, rows = page.evaluate(SCROLL, ["#list", 300])
        figures |= {"scroll_calls_ms": total, "scroll_calls_worst_frame_ms": worst}
        figures["rows_in_dom"] = rows
        figures["calls_draw_ms_per_step"] = page.evaluate(WORK, ["list", 300])
        page.click("#tab-traces")
        t = time.perf_counter()
        page.locator(".item[data-kind=trace]", has_text="step 0 of the long run").click()
        page.wait_for_selector(".srow")
        figures["open_long_trace_s"] = time.perf_counter() - t
        total, worst, _ = page.evaluate(SCROLL, ["#waterfall", 300])
        figures |= {"scroll_waterfall_ms": total, "scroll_waterfall_worst_frame_ms": worst}
        figures["waterfall_draw_ms_per_step"] = page.evaluate(WORK, ["wf", 300])
        ctx.close()
    return figures


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--long", type=int, default=1000, help="calls in the one long trace")
    parser.add_argument("--browse-only", action="store_true", help="reuse the page made before")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    har = OUT / f"viewer_{args.calls}.har"
    html = har.with_suffix(".html")
    if args.browse_only:
        for name, value in browse(html, args.long).items():
            print(f"{name:34} {value:10.2f}")
        return
    har.write_text(json.dumps(make_har(args.calls, args.long)))
    t = time.perf_counter()
    assert (
        agentshark(["analyze", str(har), "--format", "json", "-o", str(har.with_suffix(".json"))])
        == 0
    )
    analyze = time.perf_counter() - t
    t = time.perf_counter()
    assert agentshark(["report", str(har), "-o", str(html)]) == 0
    figures = {"analyze_json_s": analyze, "build_s": time.perf_counter() - t}
    figures["html_mb"] = html.stat().st_size / 1e6
    figures |= browse(html, args.long)
    for name, value in figures.items():
        print(f"{name:34} {value:10.2f}")


if __name__ == "__main__":
    run()
