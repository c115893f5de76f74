"""Ollama's native API (``/api/chat``, ``/api/generate``, ``/api/embed``, model management).

:mod:`~agentshark.apis.ollama.chat` parses chat and generate (one JSON body, or an NDJSON
stream that ends with ``done: true``), :mod:`~agentshark.apis.ollama.messages` turns
messages into parts and reads usage, durations and errors, and
:mod:`~agentshark.apis.ollama.endpoints` names the other endpoints. Ollama's OpenAI-shaped
``/v1`` endpoints belong to the OpenAI families.
"""
