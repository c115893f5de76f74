"""agentshark: see exactly what AI agents say on the wire.

Evidence in (pcap/pcapng captures, HAR files, VCR cassettes), HTTP exchanges out; later stages
turn them into model calls, tool executions and agent traces. The pipeline, top to bottom::

    sources -> net -> (tls) -> http -> framing -> (apis -> trace -> checks) -> output
"""

__version__ = "0.1.0"
