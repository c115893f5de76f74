"""A2A (Agent2Agent), versions 0.3 and 1.0: ``calls`` (agent card, JSON-RPC and REST
bindings) and ``parts`` (messages, tasks, artifacts -> parts)."""
