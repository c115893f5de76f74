"""``agentshark proxy`` and ``ca``: the command lines that cannot run say why (exit 2) before
anything listens; without mitmproxy, the error names the extra."""

from __future__ import annotations

import sys

import pytest

from agentshark.cli import main


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--upstream", "https://x", "--listen", "0.0.0.0:8080"], "not a loopback address"),
        (["--upstream", "https://x", "--listen", "192.168.1.5:8080"], "--allow-remote"),
        (["--upstream", "https://x", "--listen", "localhost"], "give HOST:PORT"),
        ([], "give --upstream URL"),
        (["--forward", "--upstream", "https://x"], "not both"),
        (["--route", "anthropic=https://x"], "starts with /"),
        (["--route", "/a=https://x", "--route", "/a/=https://y"], "two routes for one prefix"),
        (["--upstream", "https://x", "-w", "/no/such/dir/rec.har"], "does not exist"),
        (["--upstream", "https://x", "--upstream-ca", "/no/such.pem"], "no such file"),
    ],
)
def test_a_command_line_that_cannot_run_says_why(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["proxy", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentshark proxy: ") and said in err


def test_without_mitmproxy_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mitmproxy", None)
    assert main(["proxy", "--upstream", "https://api.openai.com"]) == 2
    assert main(["ca"]) == 2
    err = capsys.readouterr().err
    assert err.count("needs mitmproxy: pip install 'agentshark[proxy]'") == 2
