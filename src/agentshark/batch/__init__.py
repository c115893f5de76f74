"""``agentshark batch``: many inputs, one Dask task each, then the traces joined across files.

Input: paths, globs, folders and fsspec URLs, expanded to files (:mod:`.inputs`). Output,
under ``DIR``:

* ``files/<key>/`` per input (``<key>``: the first 16 hex digits of the SHA-256 of its
  bytes), written by one task (:func:`.task.analyze_one`) on a Dask distributed cluster:
  ``report.json`` (the report of ``agentshark analyze FILE --format json``), ``tables/``
  (the Parquet tables of ``agentshark export parquet``), ``summary.json`` (its traces with
  the ids they can be joined by, :mod:`.keys`) and, last, ``done.json``: a re-run whose
  input has the same bytes and options finds it and skips the input;
* ``merged.json`` (:mod:`.merge`): the traces of every input, those of several files joined
  by the ids they share (W3C trace-id, tool call id, MCP session id, A2A context id,
  response id), each cross-file join recorded under ``joins``;
* ``manifest.json``: every input, its hash, status and counts (:mod:`.run`).

:mod:`agentshark.cli_batch` is the command line; this package imports dask only in
:mod:`.run`, where the tasks are submitted.
"""
