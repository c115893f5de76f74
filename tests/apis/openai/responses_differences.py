"""Justified differences between agentshark and the openai SDK on the corpus.

Keys are (corpus file, exchange index, field); values say why agentshark is right. The list
is empty: on every compared field agentshark agrees with the SDK.

Not differences, but worth knowing when reading the oracle (``Oracle.notes``):

- The SDK's strict models reject real recordings: 259 bodies lack
  ``usage.input_tokens_details.cache_write_tokens`` (a field newer than them), older streams
  lack ``sequence_number``. The oracle then builds the models without validation
  (``construct_type``), as the SDK's own streaming code does.
- ``ResponseStreamState`` refuses streams it cannot follow: a background stream resumed with
  ``starting_after`` (no ``response.created``), GitHub Copilot's proxy, which rewrites
  response and item ids mid-stream. The oracle then takes the terminal event's response.
- vercel/ai's ``parallel-tool-call-wrapper.1.chunks.txt`` has two lines that are not JSON
  (its ``response.created`` and ``response.completed``): both sides see a stream without a
  terminal event (agentshark adds ``responses.bad_event`` diagnostics).
"""

from __future__ import annotations

DIFFERENCES: dict[tuple[str, int, str], str] = {}
