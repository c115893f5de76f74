"""HTTP: ordered byte streams -> events -> :class:`agentshark.model.Exchange`.

``h1`` parses HTTP/1.x in both directions of a connection into the version-neutral events
of ``events``; ``exchange`` assembles those events into exchanges; ``content`` undoes
``Content-Encoding`` on demand.
"""
