# ruff: noqa: A005  (tests/http mirrors src/agentshark/http; imported as tests.http)
