"""Cohere's own API: Chat v2 (``/v2/chat``) and v1 (``/v1/chat``), whole and streamed, and
the embed, rerank, generate and tokenize endpoints by name.

:mod:`~agentshark.apis.cohere.chat` recognizes and parses chat requests and whole
responses, :mod:`~agentshark.apis.cohere.stream` folds the v2 SSE stream and the v1 NDJSON
stream, :mod:`~agentshark.apis.cohere.messages` turns both versions' messages into parts
and reads usage and errors, :mod:`~agentshark.apis.cohere.endpoints` names the rest.
Cohere's OpenAI-compatible endpoint (``/compatibility/v1/chat/completions``) belongs to the
OpenAI Chat family.
"""
