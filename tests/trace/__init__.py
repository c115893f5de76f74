# ruff: noqa: A005  (tests/trace mirrors src/agentshark/trace; imported as tests.trace)
