"""Golden report cases: input files (relative to the repository root) -> expected JSON report.

Regenerate after a reviewed change with::

    .venv/bin/python -m tests.golden.regen

and read the diff (``git diff tests/golden``) before committing it.

Every file a case reads from ../shared (inputs and key logs) is pinned by its SHA-256 in
``inputs.sha256.json``: when a shared file is re-made, the case fails naming that file
instead of showing a report diff. After reviewing the new file, re-pin with::

    .venv/bin/python -m tests.golden.regen --pin-inputs
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent

# name -> (inputs, extra CLI arguments; a first argument "calls" or "analyze" runs that
# command)
CASES: dict[str, tuple[list[str], list[str]]] = {
    "http1_cleartext": (["../shared/captures/http1_cleartext/capture.pcap"], ["--events"]),
    "mcp_http_plain": (["../shared/captures/mcp_http_plain/capture.pcap"], ["--events"]),
    "a2a_jsonrpc_v03": (["../shared/captures/a2a_jsonrpc_v03/capture.pcap"], []),
    "https_tls13_h2": (
        ["../shared/captures/https_tls13_h2/capture.pcap"],
        ["--keylog", "../shared/captures/https_tls13_h2/keylog.txt"],
    ),
    "https_tls13_h2_no_keys": (["../shared/captures/https_tls13_h2/capture.pcap"], []),
    "https_tls12_h1_dsb": (["../shared/captures/https_tls12_h1/capture.dsb.pcapng"], []),
    "calls_llm_sdk_openai_and_anthropic": (
        [
            "../shared/captures/llm_sdk_openai/capture.pcap",
            "../shared/captures/llm_sdk_anthropic/capture.dsb.pcapng",
        ],
        ["calls", "--keylog", "../shared/captures/llm_sdk_openai/keylog.txt"],
    ),
    "example_agent_chat": (["examples/agent_chat.pcap"], ["--events"]),
    "h2c_prior_knowledge": (["../shared/captures/h2c_prior_knowledge/capture.pcap"], []),
    "tls13_chacha20_h1": (
        ["tests/data/captures/tls13_chacha20_h1/capture.pcap"],
        ["--keylog", "tests/data/captures/tls13_chacha20_h1/keys.log", "--events"],
    ),
    "h2_rst_stream": (
        ["tests/data/captures/h2_rst_stream/capture.pcap"],
        ["--keylog", "tests/data/captures/h2_rst_stream/keys.log"],
    ),
    "calls_example_agent_chat": (["examples/agent_chat.pcap"], ["calls"]),
    "calls_tls_h2_and_cassettes": (
        [
            "tests/data/captures/h2_rst_stream/capture.pcap",
            "../shared/corpus/pydantic__pydantic-ai/tests/models/cassettes/test_anthropic/"
            "test_anthropic_model_thinking_part_stream.yaml",
            "../shared/corpus/pydantic__pydantic-ai/tests/models/cassettes/test_openai_responses/"
            "test_openai_responses_model_mcp_server_tool_stream.yaml",
        ],
        ["calls", "--keylog", "tests/data/captures/h2_rst_stream/keys.log"],
    ),
    "analyze_example_agent_chat": (["examples/agent_chat.pcap"], ["analyze"]),
    "analyze_seed004_shenzhen": (["tests/data/runs/seed004_shenzhen/capture.pcap"], ["analyze"]),
    "analyze_mcp_legacy_sse_and_stdio": (
        [
            "tests/data/captures/mcp_legacy_sse/capture.pcap",
            "../shared/captures/mcp_stdio_time/transcript.jsonl",
        ],
        ["analyze"],
    ),
    "har_and_cassette": (
        [
            "tests/data/documents/chat_and_ws.har",
            "../shared/corpus/pydantic__pydantic-ai/tests/models/cassettes/test_anthropic/"
            "test_anthropic_model_thinking_part_stream.yaml",
        ],
        ["--events"],
    ),
}


PINS = GOLDEN / "inputs.sha256.json"


def expected_path(name: str) -> Path:
    return GOLDEN / f"{name}.json"


def shared_files(name: str) -> list[str]:
    """The files under ../shared that case ``name`` reads: its inputs and its key logs."""
    inputs, args = CASES[name]
    keylogs = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--keylog"]
    return sorted({p for p in [*inputs, *keylogs] if p.startswith("../shared/")})


def sha256(path: str) -> str:
    """The SHA-256 of ``path``, relative to the repository root."""
    return hashlib.sha256((GOLDEN.parent.parent / path).read_bytes()).hexdigest()


def pinned() -> dict[str, str]:
    """Shared file -> the SHA-256 the golden reports were made from."""
    data: dict[str, str] = json.loads(PINS.read_text())
    return data
