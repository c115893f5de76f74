"""Run by tests/pipeline/test_capture.py in a process of its own: the real ``openai`` SDK
calls the HTTPS stub at ``sys.argv[1]`` (a base URL) with ``SSLKEYLOGFILE`` and
``SSL_CERT_FILE`` set by the test, and prints what the SDK returned, as JSON: the client's
own records, the oracle of the test."""

from __future__ import annotations

import json
import sys
from typing import Any

import openai


def main() -> None:
    client = openai.OpenAI(base_url=sys.argv[1], api_key="sk-test-capture", max_retries=0)
    messages: Any = [{"role": "user", "content": "Say hello."}]
    plain = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
    records = [{"model": plain.model, "text": plain.choices[0].message.content}]
    stream: Any = client.chat.completions.create(
        model="gpt-4o-mini", messages=messages, stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    records.append({"model": plain.model, "text": text})
    print(json.dumps(records))


if __name__ == "__main__":
    main()
