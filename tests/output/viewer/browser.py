"""A real headless Chromium for the viewer tests: Debian's ``chromium`` driven by Playwright.

``scripts/chromium.sh`` installs it (as root); Playwright's own browser downloads are never
used (``executable_path``). Every page opened records its console messages, page errors and
dialogs, so a test can prove that nothing ran that the viewer did not run itself.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
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


def need_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium: run scripts/chromium.sh (as root) to install it")
    pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is missing")


@dataclass
class Seen:
    """What a page did besides drawing: console lines, uncaught errors, dialogs, requests."""

    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


@contextmanager
def browser(*, bypass_csp: bool = False) -> Iterator[Any]:
    """A Chromium context with an empty profile (``--user-data-dir``, removed afterwards)."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory(prefix="agentshark-chromium-") as profile,
        sync_playwright() as p,
    ):
        ctx = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            args=ARGS,
            headless=True,
            viewport={"width": 1400, "height": 900},
            bypass_csp=bypass_csp,
        )
        try:
            yield ctx
        finally:
            ctx.close()


def open_page(ctx: Any, url: str, seen: Seen | None = None) -> Any:
    """``url`` opened and the viewer ready (its data index read and drawn)."""
    page = ctx.new_page()
    if seen is not None:
        page.on("console", lambda m: seen.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: seen.errors.append(str(e)))
        page.on("request", lambda r: seen.requests.append(r.url))

        def dialog(d: Any) -> None:
            seen.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
    page.goto(url)
    page.wait_for_selector("body[data-ready]", state="attached", timeout=20_000)
    return page
