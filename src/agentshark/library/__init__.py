"""agentshark's Python API (docs/api.md): :func:`analyze` files into a :class:`Report`,
follow files being written with :func:`live`, and assert on agent traffic in tests
(:mod:`agentshark.testing`)."""
