"""Make a big loopback capture of replayed agent traffic for the benchmark.

    python3 bench/make_capture.py              # bench/out/bench_h1.pcap, 220 MB
    python3 bench/make_capture.py --mb 440     # bench/out/bench_h1_440mb.pcap
    python3 bench/make_capture.py --tls        # bench/out/bench_tls13_h1.pcap + .keys.log
    python3 bench/make_capture.py --h2         # bench/out/bench_tls13_h2.pcap + .keys.log
    python3 bench/make_capture.py --families gemini,bedrock --mb 100
                                               # bench/out/bench_gemini_bedrock_100mb.pcap
    python3 bench/make_capture.py --families all   # bench/out/bench_all.pcap, every family

Real software on loopback: a hypercorn server (``bench/replay_server.py``) answers POST
/v1/chat/completions, /v1/responses and /v1/messages with the response bodies recorded in the
corpus cassettes (JSON, gzip JSON, SSE sent event by event), and ``--conns`` concurrent httpx
keep-alive connections send the recorded request bodies, each connection closed and reopened
after ``--per-conn`` exchanges, until tcpdump's file reaches ``--mb``. Every response is checked
byte for byte by the client. tcpdump must drop nothing: on drops the run is retried slower.

``--families`` picks the pool (``bench/pool.py``): the default ``openai,anthropic`` is the one
above, unchanged; ``gemini`` adds ``:generateContent`` / ``:streamGenerateContent`` (SSE with
``alt=sse``, else one JSON array sent element by element), ``bedrock`` the Converse and
InvokeModel endpoints (event streams sent frame by frame, byte-exact); ``all`` mixes the four.
Their requests carry fake credentials of the right kind (``x-goog-api-key`` or an OAuth Bearer,
SigV4 ``Authorization`` with ``X-Amz-Date``).

``--tls``: the same over TLS 1.3 (HTTP/1.1, ALPN http/1.1); ``--h2``: TLS 1.3 with ALPN h2, httpx
``http2=True`` against hypercorn's HTTP/2 (one stream at a time per connection, so the shape
stays that of the cleartext run). The certificate is self-signed for 127.0.0.1, made in a
temporary folder and thrown away; the client verifies it and writes the NSS key log
(``SSLContext.keylog_filename``, what ``SSLKEYLOGFILE`` sets) to ``<name>.keys.log``.

Writes ``bench/out/<name>.pcap``, ``<name>.truth.json`` (counts from the client's own records)
and ``<name>.exchanges.jsonl`` (one line per exchange, in completion order). The pool of
replayable exchanges is built once from the corpus and cached in ``bench/out/pool.json``
(``pool_<families>.json`` for the other pools).
The script installs what it needs (tcpdump via apt-get, a venv in ``bench/.venv-gen``) and
re-runs itself in that venv.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import importlib
import json
import random
import ssl
import sys
import tempfile
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, NamedTuple, TextIO, TypedDict, cast

import genlib
import pool

PATH_SUFFIXES = pool.PATH_SUFFIXES
MAX_BODY_BYTES = pool.MAX_BODY_BYTES
POOL_VERSION = pool.POOL_VERSION
build_pool = pool.build_pool


class ExchangeRecord(TypedDict):
    seq: int
    conn: int
    client_port: int
    http_version: str
    entry: int
    path: str
    family: str
    framing: str
    server_writes: int
    status: int
    sse: bool
    sse_data_events: int
    sse_done: int
    request_body_bytes: int
    response_body_bytes: int
    response_decoded_bytes: int
    ok: bool
    t_start: float
    t_end: float


# --------------------------------------------------------------------------- the pool


def load_pool(corpus: Path, pool_path: Path, rebuild: bool) -> dict[str, Any]:
    """The default pool (``bench/pool.py``); a module attribute so that
    ``scripts/make_fault_captures.py`` can narrow it."""
    return pool.load_pool(corpus, pool_path, rebuild)


# --------------------------------------------------------------------------- the client


def server_writes(entry: genlib.PoolEntry) -> int:
    """How many writes the replay server makes of the entry's body (one per stream piece)."""
    if "chunk_ends" in entry:
        return len(entry["chunk_ends"])
    return len(genlib.split_sse_events(genlib.response_bytes(entry))) if entry["sse"] else 1


class Fetched(NamedTuple):
    """What one exchange gave the client: its connection's client port, the response status,
    HTTP version and body bytes as framed (before content decoding), and the connection's
    (TLS version, cipher suite, ALPN, QUIC version), None when not over TLS."""

    client_port: int
    status: int
    http_version: str
    raw: bytes
    tls: tuple[str, str, str, str] | None


class Run:
    """The client side of one capture attempt: ``conns`` workers, each a sequence of
    keep-alive connections of ``per_conn`` exchanges, until ``stop`` is set. This class is
    httpx's (HTTP/1.1, or HTTP/2 with ``--h2``); :class:`H3Run` speaks HTTP/3."""

    http_version = "HTTP/1.1"

    def __init__(
        self,
        entries: list[genlib.PoolEntry],
        base_url: str,
        args: argparse.Namespace,
        conns: int,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.entries = entries
        self.expected = [genlib.response_bytes(e) for e in entries]
        self.decoded_len = [len(genlib.decoded_response_bytes(e)) for e in entries]
        self.bodies = [e["req_body"].encode() for e in entries]
        self.targets = [pool.entry_target(e) for e in entries]
        self.writes = [server_writes(e) for e in entries]
        self.headers = [[(k, v) for k, v in e["req_headers"]] for e in entries]
        self.base_url = base_url
        self.args = args
        self.conns = conns
        self.rng = random.Random(args.seed)
        self.stop = asyncio.Event()
        self.records: list[ExchangeRecord] = []
        self.connections = 0
        self.failures: list[str] = []
        self.ssl_context = ssl_context
        self.http2 = bool(args.h2)
        if self.http2:
            self.http_version = "HTTP/2"
        # client port -> (TLS version, cipher suite, ALPN, QUIC version) of that connection
        self.tls: dict[int, tuple[str, str, str, str]] = {}

    def connection(self) -> AbstractAsyncContextManager[Any]:
        """A new keep-alive connection (its client), closed on leaving."""
        httpx = importlib.import_module("httpx")
        return cast(
            AbstractAsyncContextManager[Any],
            httpx.AsyncClient(
                base_url=self.base_url,
                limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                timeout=60.0,
                http1=True,
                http2=self.http2,
                verify=self.ssl_context or True,
            ),
        )

    async def fetch(self, client: Any, idx: int) -> Fetched:
        """Exchange the pool entry ``idx`` on ``client``."""
        entry = self.entries[idx]
        async with client.stream(
            entry["method"], self.targets[idx], content=self.bodies[idx], headers=self.headers[idx]
        ) as resp:
            raw = b"".join([chunk async for chunk in resp.aiter_raw()])
            stream = resp.extensions["network_stream"]
            port = int(stream.get_extra_info("client_addr")[1])
            tls = None
            if self.ssl_context is not None and port not in self.tls:
                obj = stream.get_extra_info("ssl_object")
                tls = (obj.version(), obj.cipher()[0], obj.selected_alpn_protocol() or "", "")
            return Fetched(port, resp.status_code, resp.http_version, raw, tls)

    async def worker(self, wid: int) -> None:
        while not self.stop.is_set():
            self.connections += 1
            conn_no = self.connections
            async with self.connection() as client:
                for _ in range(self.args.per_conn):
                    if self.stop.is_set() or len(self.records) >= self.args.max_exchanges:
                        self.stop.set()
                        break
                    await self.exchange(client, conn_no, self.rng.randrange(len(self.entries)))

    async def exchange(self, client: Any, conn_no: int, idx: int) -> None:
        entry = self.entries[idx]
        t_start = time.time()
        got = await self.fetch(client, idx)
        if got.tls is not None:
            self.tls.setdefault(got.client_port, got.tls)
        status, version, raw = got.status, got.http_version, got.raw
        ok = (
            status == entry["status"] and raw == self.expected[idx] and version == self.http_version
        )
        if not ok and len(self.failures) < 20:
            self.failures.append(
                f"entry {idx} ({entry['source']}): {version} status {status}, "
                f"{len(raw)} bytes, expected {len(self.expected[idx])}"
            )
        sse = genlib.count_sse(raw) if entry["sse"] else None
        self.records.append(
            ExchangeRecord(
                seq=len(self.records),
                conn=conn_no,
                client_port=got.client_port,
                http_version=version,
                entry=idx,
                path=self.targets[idx],
                family=pool.entry_family(entry),
                framing=entry.get("framing", "sse" if entry["sse"] else "json"),
                server_writes=self.writes[idx],
                status=status,
                sse=entry["sse"],
                sse_data_events=sse["data_events"] if sse else 0,
                sse_done=sse["done_markers"] if sse else 0,
                request_body_bytes=len(self.bodies[idx]),
                response_body_bytes=len(raw),
                response_decoded_bytes=self.decoded_len[idx],
                ok=ok,
                t_start=round(t_start, 6),
                t_end=round(time.time(), 6),
            )
        )

    async def watch(self, pcap: Path, target_bytes: int) -> None:
        started = time.monotonic()
        last_report = started
        while not self.stop.is_set():
            await asyncio.sleep(0.25)
            size = pcap.stat().st_size if pcap.exists() else 0
            now = time.monotonic()
            if now - last_report >= 15:
                last_report = now
                genlib.log(
                    f"  {size / 1e6:7.1f} MB, {len(self.records)} exchanges, "
                    f"{len(self.records) / (now - started):.0f}/s"
                )
            if size >= target_bytes or now - started > self.args.max_seconds:
                self.stop.set()

    async def main(self, pcap: Path, target_bytes: int) -> None:
        watcher = asyncio.create_task(self.watch(pcap, target_bytes))
        await asyncio.gather(*(self.worker(w) for w in range(self.conns)))
        self.stop.set()
        await watcher


class H3Run(Run):
    """:class:`Run` over HTTP/3: each connection is aioquic's (``bench/h3client.py``), which
    verifies the certificate in ``cafile`` and appends its TLS secrets to ``keylog``; the
    request heads are the ones httpx sends over HTTP/2, made by its ``build_request``."""

    http_version = "HTTP/3"

    def __init__(
        self,
        entries: list[genlib.PoolEntry],
        port: int,
        args: argparse.Namespace,
        conns: int,
        cafile: Path,
        keylog: TextIO,
    ) -> None:
        super().__init__(entries, f"https://127.0.0.1:{port}", args, conns)
        self.h3client = importlib.import_module("h3client")  # aioquic: the h3 venv only
        self.port, self.cafile, self.keylog = port, cafile, keylog
        httpx = importlib.import_module("httpx")
        with httpx.Client(base_url=self.base_url) as builder:
            self.fields = [
                self.h3client.request_fields(
                    e["method"],
                    f"127.0.0.1:{port}",
                    self.targets[i],
                    builder.build_request(
                        e["method"],
                        self.targets[i],
                        content=self.bodies[i],
                        headers=self.headers[i],
                    ).headers.raw,
                )
                for i, e in enumerate(entries)
            ]

    def connection(self) -> AbstractAsyncContextManager[Any]:
        return cast(
            AbstractAsyncContextManager[Any],
            self.h3client.open_connection(self.port, self.cafile, self.keylog),
        )

    async def fetch(self, client: Any, idx: int) -> Fetched:
        status, raw = await client.request(self.fields[idx], self.bodies[idx])
        port = client.client_port()
        tls = client.tls_facts() if port not in self.tls else None
        return Fetched(port, status, self.http_version, raw, tls)


# --------------------------------------------------------------------------- orchestration


def summarize(records: list[ExchangeRecord]) -> dict[str, Any]:
    sse = [r for r in records if r["sse"]]
    return {
        "exchanges": len(records),
        "sse_responses": len(sse),
        "sse_data_events": sum(r["sse_data_events"] for r in sse),
        "sse_done_markers": sum(r["sse_done"] for r in sse),
        "json_responses": len(records) - len(sse),
        "request_body_bytes": sum(r["request_body_bytes"] for r in records),
        "response_body_bytes": sum(r["response_body_bytes"] for r in records),
        "response_decoded_bytes": sum(r["response_decoded_bytes"] for r in records),
        "connections": len({r["client_port"] for r in records}),
        "paths": dict(collections.Counter(r["path"] for r in records).most_common()),
        "families": dict(collections.Counter(r["family"] for r in records).most_common()),
        "framings": dict(collections.Counter(r["framing"] for r in records).most_common()),
        "stream_writes": {
            framing: sum(r["server_writes"] for r in records if r["framing"] == framing)
            for framing in sorted({r["framing"] for r in records} - {"json"})
        },
        "statuses": {
            str(k): v for k, v in collections.Counter(r["status"] for r in records).most_common()
        },
        "mismatches": sum(not r["ok"] for r in records),
    }


def client_ssl_context(cafile: Path, keylog: Path) -> ssl.SSLContext:
    """The client's context: TLS 1.3 only, trusting the throwaway certificate, writing the key
    log (what ``SSLKEYLOGFILE`` makes httpx do)."""
    ctx = ssl.create_default_context(cafile=str(cafile))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.keylog_filename = str(keylog)
    return ctx


def attempt(
    entries: list[genlib.PoolEntry],
    args: argparse.Namespace,
    tcpdump: str,
    pool_path: Path,
    pcap: Path,
    conns: int,
    sse_delay_ms: float,
    certs: dict[str, Path] | None,
) -> tuple[Run, dict[str, int], float]:
    server_log = genlib.OUT_DIR / f"{args.name}.server.log"
    keylog = genlib.OUT_DIR / f"{args.name}.keys.log"
    ssl_context = None
    if certs is not None:
        keylog.unlink(missing_ok=True)
        if not args.h3:
            ssl_context = client_ssl_context(certs["rsa"], keylog)
    server = genlib.start_replay_server(
        pool_path,
        args.port,
        sse_delay_ms,
        server_log,
        certfile=certs["rsa"] if certs else None,
        keyfile=certs["rsa_key"] if certs else None,
        quic=args.h3,
        python=Path(sys.executable) if args.h3 else genlib.GEN_PYTHON,
    )
    proto = "udp" if args.h3 else "tcp"
    dump = genlib.Tcpdump(tcpdump, pcap, args.port, buffer_kib=args.buffer_kib, proto=proto)
    try:
        dump.start()
        t0 = time.monotonic()
        target = int(args.mb * 1e6)
        if args.h3:
            assert certs is not None
            with keylog.open("w", buffering=1) as secrets:
                run: Run = H3Run(entries, args.port, args, conns, certs["rsa"], secrets)
                asyncio.run(run.main(pcap, target))
        else:
            scheme = "https" if certs else "http"
            run = Run(entries, f"{scheme}://127.0.0.1:{args.port}", args, conns, ssl_context)
            asyncio.run(run.main(pcap, target))
        client_seconds = time.monotonic() - t0
        if args.h3:  # a QUIC server that lost a client's CONNECTION_CLOSE keeps probing that
            genlib.stop_process(server)  # port: stop it first, so that tcpdump stops in quiet
        counters = dump.stop()
    finally:
        rc = genlib.stop_process(server)
    if rc not in (0, -15):
        genlib.log(f"replay server exited with {rc} (log: {server_log})")
    return run, counters, client_seconds


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mb", type=float, default=220, help="stop at this capture size (MB, 1e6)")
    ap.add_argument(
        "--name",
        help="output name (default bench_h1, bench_tls13_h1, bench_tls13_h2 or bench_h3, or with "
        "--families bench_<families>, bench_tls13_h1_<families>...; with _<mb>mb when --mb is "
        "not 220)",
    )
    ap.add_argument(
        "--families",
        default=",".join(pool.DEFAULT_FAMILIES),
        help="API families of the pool, comma-separated, or 'all' (known: "
        f"{', '.join(pool.FAMILIES)}; default {','.join(pool.DEFAULT_FAMILIES)}, the pool of "
        "the published figures); other pools name the capture bench_<families>[_<mb>mb]",
    )
    ap.add_argument("--tls", action="store_true", help="TLS 1.3, HTTP/1.1")
    ap.add_argument("--h2", action="store_true", help="TLS 1.3, ALPN h2 (implies --tls)")
    ap.add_argument("--h3", action="store_true", help="HTTP/3 over QUIC v1 (implies --tls)")
    ap.add_argument(
        "--port",
        type=int,
        help="default 18080, 18443 with --tls, 18444 with --h2, 18445 (UDP) with --h3",
    )
    ap.add_argument("--conns", type=int, default=6, help="concurrent keep-alive connections")
    ap.add_argument("--per-conn", type=int, default=200, help="exchanges before reconnecting")
    ap.add_argument("--sse-delay-ms", type=float, default=1.0, help="pause between SSE events")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", type=Path, default=genlib.CORPUS_DIR)
    ap.add_argument("--rebuild-pool", action="store_true")
    ap.add_argument("--buffer-kib", type=int, default=262144, help="tcpdump -B")
    ap.add_argument("--max-seconds", type=float, default=900, help="stop the client anyway")
    ap.add_argument("--max-exchanges", type=int, default=2_000_000)
    ap.add_argument("--attempts", type=int, default=3, help="tries when tcpdump drops packets")
    args = ap.parse_args()
    if args.h2 and args.h3:
        ap.error("--h2 and --h3 are two captures: make them one at a time")
    args.tls = args.tls or args.h2 or args.h3
    try:
        args.families = pool.parse_families(args.families)
    except ValueError as exc:
        ap.error(str(exc))
    variant = (
        "bench_h3"
        if args.h3
        else "bench_tls13_h2"
        if args.h2
        else "bench_tls13_h1"
        if args.tls
        else "bench_h1"
    )
    if tag := pool.families_tag(args.families):
        variant = f"{variant if args.tls else 'bench'}_{tag}"
    if args.name is None:
        args.name = variant if args.mb == 220 else f"{variant}_{args.mb:g}mb"
    if args.port is None:
        args.port = 18445 if args.h3 else 18444 if args.h2 else 18443 if args.tls else 18080

    if args.tls:
        genlib.ensure_debian_commands("openssl")
    if args.h3:
        genlib.reexec_in_venv(Path(__file__), genlib.GEN_H3_VENV, genlib.ensure_gen_h3_venv)
    else:
        genlib.reexec_in_gen_venv(Path(__file__))
    with tempfile.TemporaryDirectory(prefix="agentshark-bench-certs-") as tmp:
        certs = genlib.make_test_certs(Path(tmp)) if args.tls else None
        return make(args, certs)


def make(args: argparse.Namespace, certs: dict[str, Path] | None) -> int:
    t_total = time.monotonic()
    tcpdump = genlib.ensure_tcpdump()
    pool_path = genlib.OUT_DIR / pool.pool_file(args.families)
    if args.families == pool.DEFAULT_FAMILIES:  # the call scripts/make_fault_captures.py wraps
        pool_doc = load_pool(args.corpus.resolve(), pool_path, args.rebuild_pool)
    else:
        pool_doc = pool.load_pool(
            args.corpus.resolve(), pool_path, args.rebuild_pool, args.families
        )
    entries: list[genlib.PoolEntry] = pool_doc["entries"]
    pcap = genlib.OUT_DIR / f"{args.name}.pcap"

    conns, delay = args.conns, args.sse_delay_ms
    for n in range(1, args.attempts + 1):
        genlib.log(
            f"attempt {n}: {args.mb:g} MB on 127.0.0.1:{args.port}, {conns} connections, "
            f"SSE delay {delay:g} ms -> {pcap}"
        )
        run, counters, client_seconds = attempt(
            entries, args, tcpdump, pool_path, pcap, conns, delay, certs
        )
        dropped = counters["packets dropped by kernel"]
        if genlib.capture_complete(counters):
            break
        genlib.log(f"tcpdump lost packets ({counters}): retrying slower")
        conns, delay = max(2, conns - 2), delay * 2
    else:
        genlib.log("tcpdump kept dropping packets: giving up")
        return 1

    summary = summarize(run.records)
    packets = genlib.pcap_packet_count(pcap)
    truth: dict[str, Any] = {
        "capture": args.name,
        "pcap": pcap.name,
        "pcap_bytes": pcap.stat().st_size,
        "packets": packets,
        "port": args.port,
        "base_url": f"{'https' if certs else 'http'}://127.0.0.1:{args.port}",
        "link_type": "EN10MB (Linux loopback, zeroed MACs)",
        "http_versions": dict(collections.Counter(r["http_version"] for r in run.records)),
        **summary,
        "client_seconds": round(client_seconds, 2),
        "generation_seconds": round(time.monotonic() - t_total, 2),
        "tcpdump": counters,
        "settings": {
            "conns": conns,
            "per_conn": args.per_conn,
            "sse_delay_ms": delay,
            "seed": args.seed,
            "target_mb": args.mb,
            "buffer_kib": args.buffer_kib,
            "attempts": n,
        },
        "pool": {
            "entries": len(entries),
            "sse_entries": sum(e["sse"] for e in entries),
            "cassettes": pool_doc["cassettes"],
            "file": pool_path.name,
            "families": list(args.families),
        },
        "software": {
            **genlib.package_versions("hypercorn", "httpx", "h11", "httpcore"),
            "python": sys.version.split()[0],
            "tcpdump": genlib.tcpdump_version(tcpdump),
            "server": "hypercorn, plain ASGI replay app (bench/replay_server.py)",
            "client": "httpx.AsyncClient, one connection per client",
        },
        "definitions": {
            "exchanges": "request/response pairs completed by the client",
            "sse_data_events": "events with a data field dispatched by the event-stream rules "
            "(blank-line terminated), [DONE] included",
            "response_body_bytes": "body bytes after HTTP/1.1 chunked framing is removed, "
            "before gzip is undone",
            "response_decoded_bytes": "the same after gzip is undone",
            "connections": "distinct client TCP ports",
        },
    }
    if certs is not None:
        keylog = genlib.OUT_DIR / f"{args.name}.keys.log"
        truth["tls"] = {
            "keylog": keylog.name,
            "keylog_labels": genlib.keylog_labels(keylog),
            "certificate": "self-signed RSA 2048 for IP 127.0.0.1, made at run time",
            "connections_by": {
                what: dict(collections.Counter(facts[i] for facts in run.tls.values()))
                for i, what in enumerate(("version", "cipher", "alpn", "quic_version"))
                if i < 3 or args.h3
            },
        }
        truth["software"]["python_ssl"] = ssl.OPENSSL_VERSION
        truth["software"].update(genlib.package_versions("h2"))
        if args.h2 or args.h3:
            truth["definitions"]["response_body_bytes"] = (
                f"body bytes after HTTP/{3 if args.h3 else 2} DATA framing is removed, before "
                "gzip is undone"
            )
    if args.h3:
        truth["software"].update(genlib.package_versions("aioquic", "pylsqpack"))
        truth["software"]["server"] = (
            "hypercorn's HTTP/3 (aioquic, quic_bind), plain ASGI replay app "
            "(bench/replay_server.py)"
        )
        truth["software"]["client"] = (
            "aioquic H3Connection (bench/h3client.py), httpx's request heads, one request at a "
            "time per connection"
        )
        truth["definitions"]["connections"] = "distinct client UDP ports (QUIC connections)"
    genlib.write_json(genlib.OUT_DIR / f"{args.name}.truth.json", truth)
    with (genlib.OUT_DIR / f"{args.name}.exchanges.jsonl").open("w") as f:
        f.writelines(json.dumps(r) + "\n" for r in run.records)
    genlib.log(
        f"{pcap}: {truth['pcap_bytes'] / 1e6:.1f} MB, {packets} packets, "
        f"{summary['exchanges']} exchanges ({summary['sse_responses']} SSE, "
        f"{summary['sse_data_events']} data events), {summary['connections']} "
        f"connections, {summary['mismatches']} mismatches, dropped {dropped}, "
        f"{truth['generation_seconds']:.0f} s"
    )
    for failure in run.failures:
        genlib.log(f"mismatch: {failure}")
    return 1 if summary["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
