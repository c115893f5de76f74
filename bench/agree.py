"""Does agentshark read a bench capture whole? Its counts against the capture's truth file.

    .venv/bin/python bench/agree.py bench/out/bench_h3_300mb.pcap [--tshark]

Reads the capture through agentshark's pipeline (``agentshark.pipeline.run``, the key log
``<capture>.keys.log`` when there is one) and counts what the truth file
(``make_capture.py``'s, from the client's own records) counts: exchanges and those with a
response, statuses, SSE responses and their dispatched events with a data field (agentshark's
own SSE decoder on the reassembled body), connections; and what agentshark could not read:
QUIC packets not decrypted (``tls.quic.not_decrypted`` of each connection), TLS connections
not decrypted, diagnostics by code. With ``--tshark``, tshark with the key log is a second
oracle (QUIC captures only): its UDP datagrams, QUIC connections, and the client-initiated
bidirectional streams (the HTTP/3 requests) it saw STREAM frames of. Prints one line a count
(``ok`` or ``DIFFERS``); exit status 1 when any count differs.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentshark.framing import decode_stream
from agentshark.framing.events import SseEvent
from agentshark.model import Exchange
from agentshark.pipeline import Options, run
from agentshark.pipeline.reports import ConnectionReport


def agentshark_counts(capture: Path, keylog: Path | None) -> dict[str, Any]:
    """What agentshark's pipeline reads in ``capture``."""
    opts = Options(keylogs=[str(keylog)] if keylog else [])
    counts: collections.Counter[str] = collections.Counter()
    statuses: collections.Counter[str] = collections.Counter()
    diagnostics: collections.Counter[str] = collections.Counter()
    not_decrypted: collections.Counter[str] = collections.Counter()
    for item in run([str(capture)], opts):
        if isinstance(item, Exchange):
            counts["exchanges"] += 1
            diagnostics.update(d.code for d in item.diagnostics)
            resp = item.response
            if resp is None:
                continue
            counts["with_response"] += 1
            statuses[str(resp.status)] += 1
            ctype = next((v for k, v in resp.headers if k.lower() == "content-type"), "")
            if "text/event-stream" in ctype.lower():
                counts["sse_responses"] += 1
                events = decode_stream(resp.body.pieces, "sse")
                counts["sse_data_events"] += sum(
                    1 for ev in events if isinstance(ev, SseEvent) and ev.complete
                )
        elif isinstance(item, ConnectionReport):
            counts["connections"] += 1
            diagnostics.update(d.code for d in item.diagnostics)
            tls = item.tls or {}
            if tls and not tls.get("decrypted"):
                counts["tls_not_decrypted"] += 1
            quic = tls.get("quic") or {}
            for side, n in (quic.get("not_decrypted") or {}).items():
                not_decrypted[str(side)] += int(n) if isinstance(n, int) else 1
    return {
        **counts,
        "statuses": dict(statuses),
        "quic_not_decrypted": dict(not_decrypted),
        "diagnostics": dict(diagnostics.most_common()),
    }


def tshark_counts(capture: Path, keylog: Path, port: int) -> dict[str, int]:
    """tshark's view of a QUIC capture: UDP datagrams, QUIC connections, and the distinct
    (connection, client-initiated bidirectional stream) pairs it saw STREAM frames of."""
    proc = subprocess.run(
        [
            "tshark",
            "-r",
            str(capture),
            "-n",
            "-o",
            f"tls.keylog_file:{keylog}",
            "-d",
            f"udp.port=={port},quic",
            "-T",
            "fields",
            "-e",
            "udp.stream",
            "-e",
            "quic.connection.number",
            "-e",
            "quic.stream.stream_id",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    datagrams = 0
    connections: set[str] = set()
    streams: set[tuple[str, int]] = set()
    for line in proc.stdout.splitlines():
        datagrams += 1
        _, conn, sids = [*line.split("\t"), "", "", ""][:3]
        for c in conn.split(","):
            if c:
                connections.add(c)
        for sid in filter(None, sids.split(",")):
            if int(sid) % 4 == 0:
                streams.add((conn.split(",")[0], int(sid)))
    return {"datagrams": datagrams, "connections": len(connections), "requests": len(streams)}


def compare(name: str, got: object, want: object) -> bool:
    same = got == want
    print(f"  {name}: {got} (truth {want}) {'ok' if same else 'DIFFERS'}")
    return same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capture", type=Path)
    ap.add_argument("--keylog", type=Path, help="default <capture>.keys.log when it exists")
    ap.add_argument("--tshark", action="store_true", help="tshark as a second oracle (QUIC)")
    args = ap.parse_args()
    truth = json.loads(args.capture.with_suffix(".truth.json").read_text())
    keylog = args.keylog or args.capture.with_suffix(".keys.log")
    keylog = keylog if keylog.exists() else None
    got = agentshark_counts(args.capture, keylog)
    print(f"{args.capture.name}: agentshark")
    ok = all(
        [
            compare("exchanges", got.get("exchanges", 0), truth["exchanges"]),
            compare("with a response", got.get("with_response", 0), truth["exchanges"]),
            compare("statuses", got["statuses"], truth["statuses"]),
            compare("SSE responses", got.get("sse_responses", 0), truth["sse_responses"]),
            compare("SSE data events", got.get("sse_data_events", 0), truth["sse_data_events"]),
            compare("connections", got.get("connections", 0), truth["connections"]),
            compare("TLS connections not decrypted", got.get("tls_not_decrypted", 0), 0),
            compare("QUIC packets not decrypted", got["quic_not_decrypted"], {}),
        ]
    )
    print(f"  diagnostics by code: {got['diagnostics']}")
    if args.tshark and keylog is not None:
        seen = tshark_counts(args.capture, keylog, int(truth["port"]))
        print(f"{args.capture.name}: tshark")
        ok &= compare("UDP datagrams", seen["datagrams"], truth["packets"])
        ok &= compare("QUIC connections", seen["connections"], truth["connections"])
        ok &= compare("request streams", seen["requests"], truth["exchanges"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
