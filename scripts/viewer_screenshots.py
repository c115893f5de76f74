"""Remake the viewer screenshots in docs/ (README): the seed 004 Shenzhen run's report.

    .venv/bin/python scripts/viewer_screenshots.py        # needs /usr/bin/chromium

Opens ``agentshark report tests/data/runs/seed004_shenzhen/capture.pcap`` in Debian's
chromium (scripts/chromium.sh) through Playwright and saves docs/viewer-trace.png (the trace:
tree, waterfall, the first model call's numbered messages) and docs/viewer-tool.png (the tool
execution with its links and its HTTP exchange).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from agentshark.cli import main

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "tests" / "data" / "runs" / "seed004_shenzhen" / "capture.pcap"
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


def shoot(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        html = Path(tmp) / "report.html"
        assert main(["report", str(RUN.relative_to(ROOT)), "-o", str(html)]) == 0
        ctx = p.chromium.launch_persistent_context(
            str(Path(tmp) / "profile"),
            executable_path="/usr/bin/chromium",
            args=ARGS,
            headless=True,
            viewport={"width": 1280, "height": 820},
        )
        page = ctx.new_page()
        page.goto(html.as_uri())
        page.wait_for_selector("body[data-ready]", state="attached")
        page.locator(".item[data-kind=trace]").first.click()
        page.locator(".srow.k-model").first.click()
        page.wait_for_selector(".part")
        page.locator(".part.t-tool_call").scroll_into_view_if_needed()
        page.screenshot(path=str(out / "viewer-trace.png"))
        page.locator(".srow.k-tool").click()
        page.click("#link-execution")
        page.screenshot(path=str(out / "viewer-tool.png"))
        ctx.close()


if __name__ == "__main__":
    os.chdir(ROOT)  # the page names its input as given: a path relative to the repository
    (ROOT / "docs").mkdir(exist_ok=True)
    shoot(ROOT / "docs")
