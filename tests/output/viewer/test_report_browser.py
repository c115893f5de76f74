"""The HTML report in a real Chromium: the example capture and the seed 004 Shenzhen run.

What the page must show is taken from the runs' own records (``truth.json``: what the client
sent and received), not from agentshark's output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentshark.cli import main
from tests.output.viewer.browser import Seen, browser, need_chromium, open_page

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "agent_chat.pcap"
SHENZHEN = ROOT / "tests" / "data" / "runs" / "seed004_shenzhen"


@pytest.fixture(scope="module", autouse=True)
def _chromium() -> None:
    need_chromium()


def _report(tmp_path: Path, *inputs: Path) -> str:
    out = tmp_path / "report.html"
    assert main(["report", *map(str, inputs), "-o", str(out)]) == 0
    return out.as_uri()


def _clean(seen: Seen) -> None:
    assert seen.errors == []
    assert seen.dialogs == []
    assert [c for c in seen.console if not c.startswith("debug")] == []
    assert all(u.startswith(("file:", "data:")) for u in seen.requests), seen.requests


def test_example_capture_trace_messages_search(tmp_path: Path) -> None:
    truth = json.loads(EXAMPLE.with_name("agent_chat.truth.json").read_text())
    first = truth["requests"][0]
    url = _report(tmp_path, EXAMPLE)
    seen = Seen()
    with browser() as ctx:
        page = open_page(ctx, url, seen)
        summary = page.inner_text("#summary")
        assert f"{len(truth['requests'])}\nCALLS" in summary.upper()
        page.click("#tab-calls")
        assert page.locator(".item[data-kind=call]").count() == len(truth["requests"])
        page.click("#tab-traces")
        # the trace of the first request: a tool call answered by the second request
        page.locator(".item[data-kind=trace]").first.click()
        page.wait_for_selector(".srow.k-model")
        page.locator(".srow.k-model").first.click()
        page.wait_for_selector(".part")
        detail = page.inner_text("#detail")
        assert first["model"] in detail
        for tc in first["tool_calls"]:
            assert tc["id"] in detail
            assert tc["name"] in detail
        assert "output message [0] part [1]" in detail
        # follow the first tool call to where its result went back to the model
        page.locator(".part.t-tool_call .lnk", has_text="→ result").first.click()
        page.wait_for_selector(".part.flash")
        flashed = page.inner_text(".part.flash")
        assert "input message [" in flashed and "tool_call_response" in flashed
        assert first["tool_calls"][0]["id"] in flashed
        # raw HTTP on demand: redacted
        page.click("#view-raw")
        raw = page.inner_text("#detail")
        assert "POST http" in raw and "/v1/chat/completions" in raw
        assert truth["fake_credentials_sent"]["authorization"].split()[-1] not in raw
        assert "[REDACTED" in raw
        # search narrows the list to the one trace whose call failed
        page.fill("#search", "this-model-does-not-exist")
        page.wait_for_selector(".count:has-text('1 of 5')")
        assert page.locator(".item[data-kind=trace]").count() == 1
        _clean(seen)


def test_shenzhen_run_tool_links_and_timeline(tmp_path: Path) -> None:
    truth = json.loads((SHENZHEN / "truth.json").read_text())
    tool = truth["tool_executions"][0]
    url = _report(tmp_path, SHENZHEN / "capture.pcap")
    seen = Seen()
    with browser() as ctx:
        page = open_page(ctx, url, seen)
        page.locator(".item[data-kind=trace]").first.click()
        page.wait_for_selector(".srow")
        kinds = [page.locator(".srow").nth(i).get_attribute("class") for i in range(4)]
        assert [k.split()[1] for k in kinds if k] == ["k-agent", "k-model", "k-tool", "k-model"]
        assert page.locator(".srow .bar").count() == 4
        assert page.locator(".srow.k-model .ttft").count() == 2  # the first-byte marks
        # the tool span: its call id, arguments and result, and links both ways
        page.locator(".srow.k-tool").click()
        detail = page.inner_text("#detail")
        assert truth["expected_spans"][1]["tool_call_id"] in detail
        assert json.loads(page.inner_text("#detail pre.code >> nth=0")) == tool["arguments"]
        page.click("#link-requested")
        page.wait_for_selector(".part.flash")
        assert "output message [0] part [1]" in page.inner_text(".part.flash")
        assert page.locator(".srow.on.k-model").count() == 1
        page.locator(".part.flash .lnk", has_text="→ result").click()
        page.wait_for_selector(".part.flash")
        assert "tool_call_response" in page.inner_text(".part.flash")
        # the answer the agent got, in the last model call's output
        page.locator(".srow.k-model").nth(1).click()
        assert truth["final_answer"] in page.inner_text("#detail")
        page.click("#view-category")
        cats = page.inner_text("#detail").lower()
        assert "tool results (1)" in cats and "answer (1)" in cats
        page.screenshot(path=str(tmp_path / "shenzhen.png"))
        _clean(seen)


def test_filters_and_incidents(tmp_path: Path) -> None:
    from tests.output.viewer.test_xss import _capture

    truth = json.loads(EXAMPLE.with_name("agent_chat.truth.json").read_text())
    failed = [r for r in truth["requests"] if r["status"] >= 400]
    url = _report(tmp_path, EXAMPLE, _capture(tmp_path))
    seen = Seen()
    with browser() as ctx:
        page = open_page(ctx, url, seen)
        page.click("#tab-calls")
        page.check("#filter-errors")
        assert page.locator(".item[data-kind=call]").count() == len(failed)
        page.uncheck("#filter-errors")
        page.select_option("#filter-model", "gpt-4o-2024-08-06")
        models = [r for r in truth["requests"] if r.get("model") == "gpt-4o-2024-08-06"]
        assert page.locator(".item[data-kind=call]").count() == len(models)
        page.select_option("#filter-model", "")
        page.select_option("#filter-api", "openai.chat")
        assert page.locator(".item[data-kind=call]").count() == len(truth["requests"]) + 1
        page.select_option("#filter-api", "")
        # the corpus call whose tool arguments are not JSON has an incident, with evidence
        page.check("#filter-incidents")
        assert page.locator(".item[data-kind=call]").count() == 1
        page.click("#tab-incidents")
        page.locator(".item[data-kind=incident]").first.click()
        page.wait_for_selector("#detail .incidents")
        box = page.locator("#detail .incidents")
        assert "not JSON" in box.inner_text()
        box.locator("summary", has_text="evidence").click()
        assert "{" in box.locator("pre").first.inner_text()
        _clean(seen)
