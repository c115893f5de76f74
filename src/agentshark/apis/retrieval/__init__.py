"""Retrieval services by role, recognized by their request and response schemas (never by host
or port): vector stores (:mod:`.vectors`, :mod:`.search`, :mod:`.weaviate`), rerankers
(:mod:`.rerank`), web search APIs (:mod:`.web`) and memory services (:mod:`.memory`); and
pgvector through SQL (:mod:`.pgvector`), read from a PostgreSQL operation's statement.

Input: an :class:`~agentshark.apis.view.ExchangeView` (pgvector: an
:class:`~agentshark.wire.events.Operation`). Output: a
:class:`~agentshark.apis.model.Call` whose ``operation`` is ``retrieval``, ``rerank`` or
``memory.*``, shaped as :mod:`agentshark.apis.documents` describes.
"""
