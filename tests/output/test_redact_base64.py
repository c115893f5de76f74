"""Text carried in base64 (inline documents) is decoded, redacted and encoded again; data
(images, PDFs) is left alone after a small probe."""

from __future__ import annotations

import base64

import pytest

from agentshark.output.redact import NO_REDACTION, REDACTION

KEY = "sk-ant-api03-Zq9XwV8uT7sR6pO5nM4lK3jI2hG1fE0dC"
DOTENV = f"# settings\nDEBUG=1\nANTHROPIC_API_KEY={KEY}\nREGION=eu\n" * 20


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize("wrap", ["{}", "data:text/plain;base64,{}"])
def test_text_document_in_base64_is_redacted_and_stays_a_document(wrap: str) -> None:
    block = {"type": "document", "source": {"type": "base64", "data": wrap.format(_b64(DOTENV))}}
    out = REDACTION.json(block)["source"]["data"]
    prefix = wrap.format("")
    assert out.startswith(prefix)
    text = base64.b64decode(out[len(prefix) :]).decode()
    assert KEY not in text and KEY[10:] not in text
    assert text.count("[REDACTED sk-ant-") == 20 and "REGION=eu" in text
    assert NO_REDACTION.json(block) is block


def test_images_and_other_data_are_not_changed() -> None:
    blobs = [bytes(range(256)) * 8, b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + bytes(range(200)) * 10]
    for raw in blobs:
        data = base64.b64encode(raw).decode()
        assert REDACTION.text(data) == data
        assert REDACTION.json({"data": f"data:image/png;base64,{data}"}) == {
            "data": f"data:image/png;base64,{data}"
        }


def test_text_without_secrets_stays_byte_identical() -> None:
    plain = _b64("just a long note about the weather, nothing secret here. " * 10)
    assert REDACTION.text(plain) == plain


def test_a_cut_tail_and_a_bad_byte_do_not_hide_the_key() -> None:
    cut = _b64(DOTENV + "x")[:-2]  # the last group cut: its characters are kept as sent
    out = REDACTION.text(cut)
    assert out.endswith(cut[-2:]) and KEY not in base64.b64decode(out[: len(out) // 4 * 4]).decode()
    raw = DOTENV.encode() + b"\xff tail"
    out = REDACTION.text(base64.b64encode(raw).decode())
    decoded = base64.b64decode(out)
    assert KEY.encode() not in decoded and decoded.endswith(b"\xff tail")
