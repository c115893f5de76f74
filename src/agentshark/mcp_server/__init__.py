"""``agentshark mcp-server``: the captures as MCP tools for coding agents (:mod:`.server`)."""
