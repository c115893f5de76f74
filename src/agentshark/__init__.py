"""agentshark: see exactly what AI agents say on the wire.

Evidence in (pcap/pcapng captures, HAR files, VCR cassettes), HTTP exchanges out; later stages
turn them into model calls, tool executions and agent traces. The pipeline, top to bottom::

    sources -> net -> (tls) -> http -> framing -> (apis -> trace -> checks) -> output

The Python API (docs/api.md): :func:`analyze` files into a :class:`Report`; :func:`live`
follows files being written (or a :class:`LiveSource`, such as :class:`ProxySource`, the
recording gateway); :mod:`agentshark.testing` is the pytest plugin.
"""

__version__ = "0.1.0"  # before the imports: the modules below read it

from agentshark.library.analyze import analyze
from agentshark.library.gateway import ProxyError, ProxySource
from agentshark.library.live import ExchangeFeed, LiveSource, LiveUpdate, live
from agentshark.library.report import Report
from agentshark.library.views import (
    Call,
    CallError,
    Diagnostic,
    Exchange,
    Incident,
    Message,
    Part,
    Source,
    Span,
    Timing,
    ToolCall,
    Trace,
    Usage,
)

__all__ = [
    "Call",
    "CallError",
    "Diagnostic",
    "Exchange",
    "ExchangeFeed",
    "Incident",
    "LiveSource",
    "LiveUpdate",
    "Message",
    "Part",
    "ProxyError",
    "ProxySource",
    "Report",
    "Source",
    "Span",
    "Timing",
    "ToolCall",
    "Trace",
    "Usage",
    "__version__",
    "analyze",
    "live",
]
