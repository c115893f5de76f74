"""Model content is untrusted: a capture full of markup and script shows as text and runs nothing.

The bodies carry ``<script>``, ``onerror=``, ``javascript:`` URLs, ``</script>`` (which would
end an inline data block written carelessly), U+2028, in message text, tool names and
arguments, model names, header values and a URL. Each payload would set ``window.__xss`` or
open a dialog if it ran. The page is checked as shipped (with its Content-Security-Policy) and
again with the policy bypassed, so that the viewer's own text-only rendering is what is proven.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentshark.cli import main
from agentshark.output.html_report import script_json
from tests.output.viewer.browser import Seen, browser, need_chromium, open_page
from tests.output.wire import request, response, tcp_pcap

SCRIPT = "<script>window.__xss=1;alert(1)</script>"
CLOSE = "</script><script>window.__xss=3;alert(3)</script><!--"
ONERROR = '<img src=x onerror="window.__xss=4;alert(4)">'
JS_URL = "javascript:window.__xss=2;alert(2)"
SVG = "<svg/onload=window.__xss=5>"
PAYLOADS = (SCRIPT, CLOSE, ONERROR, JS_URL, SVG)


def _chat_request() -> bytes:
    body = {
        "model": SVG,
        "messages": [
            {"role": "system", "content": SCRIPT},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": CLOSE + " line\u2028sep\u2029end"},
                    {"type": "image_url", "image_url": {"url": JS_URL}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_<b>1</b>",
                        "type": "function",
                        "function": {"name": ONERROR, "arguments": json.dumps({"q": CLOSE})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_<b>1</b>", "content": ONERROR},
        ],
    }
    return json.dumps(body).encode()


def _chat_response() -> bytes:
    body = {
        "id": "chatcmpl-" + SCRIPT,
        "object": "chat.completion",
        "created": 1,
        "model": SVG,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": CLOSE + ONERROR,
                    "tool_calls": [
                        {
                            "id": "call_" + JS_URL,
                            "type": "function",
                            "function": {"name": SCRIPT, "arguments": '{"x": "' + JS_URL + '"'},
                        }
                    ],
                },
                "finish_reason": SCRIPT,
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 6, "total_tokens": 11},
    }
    return json.dumps(body).encode()


def _capture(tmp_path: Path) -> Path:
    client = request("/v1/chat/completions", _chat_request(), "X-Evil: " + ONERROR)
    client += (
        b"GET /x?q=%3Cscript%3E HTTP/1.1\r\nHost: api.example\r\nX-Note: "
        + SCRIPT.encode()
        + b"\r\n\r\n"
    )
    server = response(_chat_response(), "X-Reply: " + CLOSE)
    server += response(CLOSE.encode())
    path = tmp_path / "xss.pcap"
    path.write_bytes(tcp_pcap(client, server))
    return path


def test_script_json_cannot_end_its_block() -> None:
    data = script_json({"a": CLOSE + "\u2028\u2029&<>"})
    for raw in (b"<", b">", b"&", "\u2028".encode(), "\u2029".encode()):
        assert raw not in data
    assert json.loads(data) == {"a": CLOSE + "\u2028\u2029&<>"}


def _html(tmp_path: Path) -> Path:
    out = tmp_path / "xss.html"
    assert main(["report", str(_capture(tmp_path)), "-o", str(out)]) == 0
    return out


def test_report_file_holds_no_payload_markup(tmp_path: Path) -> None:
    html = _html(tmp_path).read_text("utf-8")
    blocks = html.count('<script type="application/json"')
    assert html.lower().count("</script") == blocks + 1  # the blocks' and the viewer's own
    for payload in PAYLOADS:
        if "<" in payload:  # markup is escaped; a javascript: URL is only text
            assert payload not in html
    assert "<img" not in html and "<svg" not in html


def _visit_everything(page: Any) -> None:
    """Every list, span and view the viewer has, so that every string gets drawn."""
    for tab in ("calls", "incidents", "traces"):
        page.click(f"#tab-{tab}")
    page.locator(".item[data-kind=trace]").first.click()
    page.wait_for_selector(".srow")
    for i in range(page.locator(".srow").count()):
        page.locator(".srow").nth(i).click()
        for view in ("messages", "category", "raw", "json"):
            if page.locator(f"#view-{view}").count():
                page.click(f"#view-{view}")
                for btn in page.locator(".lnk", has_text="show all").all():
                    btn.click()
                for det in page.locator("#detail details").all():
                    det.evaluate("d => { d.open = true; }")
    page.click(".brand")  # the overview: inputs, not understood


@pytest.mark.parametrize("bypass_csp", [False, True], ids=["with-csp", "viewer-alone"])
def test_nothing_runs(tmp_path: Path, bypass_csp: bool) -> None:
    need_chromium()
    url = _html(tmp_path).as_uri()
    seen = Seen()
    with browser(bypass_csp=bypass_csp) as ctx:
        page = open_page(ctx, url, seen)
        _visit_everything(page)
        shown = page.inner_text("body")
        page.locator(".item[data-kind=trace]").first.click()
        page.locator(".srow.k-model").first.click()
        page.click("#view-messages")
        shown += page.inner_text("#detail")
        page.click("#view-raw")
        shown += page.inner_text("#detail")
        assert page.evaluate("typeof window.__xss") == "undefined"
        found = page.evaluate(
            "() => [document.querySelectorAll('img,svg,iframe,object,embed,a[href]').length,"
            " [...document.querySelectorAll('*')].filter(e => [...e.attributes]"
            ".some(a => a.name.startsWith('on'))).length,"
            " document.querySelectorAll('script:not([type])').length]"
        )
        assert found == [0, 0, 1]
    assert seen.dialogs == []
    assert seen.errors == []
    assert seen.console == []
    assert all(u == url for u in seen.requests), seen.requests
    # the payloads were drawn, as text
    for payload in (SCRIPT, ONERROR, SVG, JS_URL, "</script><script>window.__xss=3"):
        assert payload in shown, payload
