"""MCP over every transport: ``calls`` (one exchange -> one call), ``methods`` (what each
JSON-RPC method's params and results mean) and ``sessions`` (stdio and streamed messages
paired into calls across a session)."""
