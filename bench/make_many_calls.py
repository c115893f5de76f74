"""A synthetic capture of many small LLM calls: a fleet of agents over hours of capture time.

    python3 bench/make_many_calls.py --calls 1000000      # out/many_calls_1000000.pcap (~1 min)

What `analyze` must hold flat in memory however many calls an input has (issue 16). The
capture is written directly (Ethernet, IPv4, TCP with handshakes, sequence numbers and FIN
closes; no ACK-only segments, which reassembly does not need) as HTTP/1.1 cleartext between
clients 10.1.x.y and a server 10.0.0.1:8000:

* agent runs of 1-8 model calls, 16 of them under way at any time, each next call of a run
  replaying the history (the previous input, the assistant's answer, and the tool result
  when it asked for a tool: a ``tool_calls`` entry with an id and JSON arguments, then a
  ``tool`` message with that id); 70 % OpenAI Chat Completions as JSON, 15 % the same as an
  SSE stream (``stream: true``, chunked), 15 % Anthropic Messages as JSON;
* keep-alive connections, 12 open at a time, each closed after 50-500 exchanges and replaced;
  a run's calls go over any of them, as a fleet's would;
* 5-50 ms between exchanges (1,000,000 calls span ~7.6 hours of capture time).

``<out>.truth.json`` holds the counts (calls, runs and their sizes, connections, by API) and
``<out>.runs.jsonl`` one line per run: its calls' exchange numbers (1-based, capture order).
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Doc = dict[str, Any]  # a JSON object
OUT = Path(__file__).resolve().parent / "out"
SERVER = bytes([10, 0, 0, 1])
PORT = 8000
ETHERNET = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"
RUNS_AT_ONCE = 16
CONNECTIONS_AT_ONCE = 12
SEGMENT = 32_000  # bytes of payload a TCP segment carries at most (loopback-sized)
SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01
CITIES = ["Paris", "Lima", "Oslo", "Pune", "Kyiv", "Quito", "Accra", "Hanoi", "Perth", "Turin"]


@dataclass(slots=True)
class Connection:
    number: int
    client: bytes
    port: int
    seq_c: int = 1001  # next client sequence number
    seq_s: int = 5001
    left: int = 0  # exchanges before it closes


@dataclass(slots=True)
class Run:
    number: int
    api: str  # "chat", "chat_stream" or "anthropic"
    size: int  # model calls it makes
    messages: list[Doc] = field(default_factory=list)
    done: int = 0
    exchanges: list[int] = field(default_factory=list)


class Writer:
    """pcap records, buffered and written in large pieces."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("wb")
        self._file.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        self._parts: list[bytes] = []
        self._size = 0
        self.packets = 0
        self.bytes = 24

    def packet(
        self,
        ts: float,
        src: bytes,
        dst: bytes,
        ports: tuple[int, int],
        seq: int,
        ack: int,
        flags: int,
        data: bytes = b"",
    ) -> None:
        tcp = struct.pack(
            ">HHIIBBHHH",
            ports[0],
            ports[1],
            seq & 0xFFFFFFFF,
            ack & 0xFFFFFFFF,
            5 << 4,
            flags,
            65535,
            0,
            0,
        )
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(data), 0, 0x4000, 64, 6, 0, src, dst)
        frame = ETHERNET + ip + tcp + data
        sec = int(ts)
        head = struct.pack("<IIII", sec, int((ts - sec) * 1e6), len(frame), len(frame))
        self._parts += (head, frame)
        self._size += 16 + len(frame)
        self.packets += 1
        if self._size >= 8 << 20:
            self.flush()

    def flush(self) -> None:
        self._file.write(b"".join(self._parts))
        self.bytes += self._size
        self._parts, self._size = [], 0

    def close(self) -> None:
        self.flush()
        self._file.close()


def _dumps(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _request(run: Run) -> bytes:
    if run.api == "anthropic":
        body = _dumps(
            {
                "model": "claude-haiku-4-5",
                "max_tokens": 256,
                "system": "You are a travel agent.",
                "tools": [
                    {
                        "name": "weather",
                        "description": "Weather of a city",
                        "input_schema": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                        },
                    }
                ],
                "messages": run.messages,
            }
        )
        path, extra = (
            b"/v1/messages",
            b"anthropic-version: 2023-06-01\r\nx-api-key: sk-ant-fake\r\n",
        )
    else:
        doc: Doc = {
            "model": "gpt-4o-mini",
            "messages": [{"role": "system", "content": "You are a travel agent."}, *run.messages],
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "weather",
                        "parameters": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                        },
                    },
                }
            ],
        }
        if run.api == "chat_stream":
            doc["stream"] = True
            doc["stream_options"] = {"include_usage": True}
        body = _dumps(doc)
        path, extra = b"/v1/chat/completions", b"authorization: Bearer sk-fake\r\n"
    return (
        b"POST "
        + path
        + b" HTTP/1.1\r\nHost: api.example\r\ncontent-type: application/json\r\n"
        + extra
        + b"content-length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


def _answer(run: Run, rng: random.Random) -> tuple[bytes, Doc, Doc | None]:
    """The response bytes, the assistant message to replay, the tool result (or None)."""
    n, last = run.done, run.done + 1 == run.size
    city = CITIES[(run.number + n) % len(CITIES)]
    tid = f"call_{run.number:x}_{n}_{rng.getrandbits(32):08x}"
    args = _dumps({"city": city}).decode()
    text = f"Run {run.number} step {n}: the weather in {city} is fine."
    usage_in, usage_out = 40 + 30 * n, 12 + n
    reply: Doc
    result: Doc | None
    deltas: list[Doc]
    if run.api == "anthropic":
        if last:
            content: list[Doc] = [{"type": "text", "text": text}]
            reply = {"role": "assistant", "content": content}
            result = None
        else:
            tid = "toolu_" + tid[5:]
            content = [{"type": "tool_use", "id": tid, "name": "weather", "input": {"city": city}}]
            reply = {"role": "assistant", "content": content}
            result = {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": tid, "content": f"{city}: 21 C"}
                ],
            }
        body = _dumps(
            {
                "id": f"msg_{run.number:x}{n:02d}{rng.getrandbits(40):010x}",
                "type": "message",
                "role": "assistant",
                "model": "claude-haiku-4-5",
                "content": content,
                "stop_reason": "end_turn" if last else "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": usage_in, "output_tokens": usage_out},
            }
        )
        return _json_response(body), reply, result
    cid = f"chatcmpl-{run.number:x}{n:02d}{rng.getrandbits(40):010x}"
    if last:
        message: Doc = {"role": "assistant", "content": text}
        result = None
        finish = "stop"
    else:
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": tid, "type": "function", "function": {"name": "weather", "arguments": args}}
            ],
        }
        result = {"role": "tool", "tool_call_id": tid, "content": f"{city}: 21 C"}
        finish = "tool_calls"
    usage = {
        "prompt_tokens": usage_in,
        "completion_tokens": usage_out,
        "total_tokens": usage_in + usage_out,
    }
    if run.api == "chat":
        body = _dumps(
            {
                "id": cid,
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
        )
        return _json_response(body), message, result
    head = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini",
    }
    if last:
        deltas = [
            {"role": "assistant", "content": ""},
            *({"content": w + " "} for w in text.split()),
        ]
    else:
        deltas = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": tid,
                        "type": "function",
                        "function": {"name": "weather", "arguments": ""},
                    }
                ],
            },
            {"tool_calls": [{"index": 0, "function": {"arguments": args}}]},
        ]
    events = [
        {**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    events.append({**head, "choices": [], "usage": usage})
    chunks = [b"data: " + _dumps(e) + b"\n\n" for e in events] + [b"data: [DONE]\n\n"]
    body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    return (
        (
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n" + body
        ),
        message,
        result,
    )


def _json_response(body: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


def _send(w: Writer, ts: float, conn: Connection, data: bytes, *, up: bool) -> None:
    ports = (conn.port, PORT) if up else (PORT, conn.port)
    src, dst = (conn.client, SERVER) if up else (SERVER, conn.client)
    for i in range(0, len(data), SEGMENT):
        piece = data[i : i + SEGMENT]
        if up:
            w.packet(ts, src, dst, ports, conn.seq_c, conn.seq_s, PSH | ACK, piece)
            conn.seq_c += len(piece)
        else:
            w.packet(ts, src, dst, ports, conn.seq_s, conn.seq_c, PSH | ACK, piece)
            conn.seq_s += len(piece)


def _open(w: Writer, ts: float, number: int, rng: random.Random) -> Connection:
    client = bytes([10, 1, (number >> 8) & 0xFF, number & 0xFF])
    conn = Connection(number, client, 20000 + number % 40000, left=rng.randint(50, 500))
    up, down = (conn.port, PORT), (PORT, conn.port)
    w.packet(ts, client, SERVER, up, 1000, 0, SYN)
    w.packet(ts, SERVER, client, down, 5000, 1001, SYN | ACK)
    w.packet(ts, client, SERVER, up, 1001, 5001, ACK)
    return conn


def _close(w: Writer, ts: float, conn: Connection) -> None:
    up, down = (conn.port, PORT), (PORT, conn.port)
    w.packet(ts, conn.client, SERVER, up, conn.seq_c, conn.seq_s, FIN | ACK)
    w.packet(ts, SERVER, conn.client, down, conn.seq_s, conn.seq_c + 1, FIN | ACK)
    w.packet(ts, conn.client, SERVER, up, conn.seq_c + 1, conn.seq_s + 1, ACK)


def make(calls: int, out: Path, seed: int) -> Doc:
    rng = random.Random(seed)
    w = Writer(out)
    ts = 1_760_000_000.0
    opened = 0
    conns = [_open(w, ts, i, rng) for i in range(CONNECTIONS_AT_ONCE)]
    opened = len(conns)
    runs: list[Run] = []
    finished: list[Run] = []
    started = 0
    made = 0
    apis: Counter[str] = Counter()
    while made < calls:
        while len(runs) < RUNS_AT_ONCE:
            api = rng.choices(["chat", "chat_stream", "anthropic"], [70, 15, 15])[0]
            run = Run(started, api, rng.randint(1, 8))
            run.messages.append(
                {"role": "user", "content": f"Plan trip {started} ({rng.random():.6f})"}
            )
            runs.append(run)
            started += 1
        run = runs[rng.randrange(len(runs))]
        slot = rng.randrange(len(conns))
        conn = conns[slot]
        ts += rng.uniform(0.005, 0.05)
        _send(w, ts, conn, _request(run), up=True)
        response, reply, result = _answer(run, rng)
        ts += rng.uniform(0.001, 0.02)
        _send(w, ts, conn, response, up=False)
        made += 1
        apis["anthropic.messages" if run.api == "anthropic" else "openai.chat"] += 1
        run.exchanges.append(made)
        run.done += 1
        run.messages.append(reply)
        if result is not None:
            run.messages.append(result)
        if run.done == run.size:
            runs.remove(run)
            finished.append(run)
        conn.left -= 1
        if conn.left <= 0:
            _close(w, ts, conn)
            conns[slot] = _open(w, ts, opened, rng)
            opened += 1
    for conn in conns:
        _close(w, ts, conn)
    w.close()
    finished += [r for r in runs if r.exchanges]  # cut short by the end of the capture
    finished.sort(key=lambda r: r.exchanges[0])
    with out.with_suffix(".runs.jsonl").open("w") as runs_file:
        for r in finished:
            runs_file.write(
                json.dumps({"run": r.number, "api": r.api, "exchanges": r.exchanges}) + "\n"
            )
    sizes = Counter(len(r.exchanges) for r in finished)
    return {
        "calls": made,
        "runs": len(finished),
        "run_sizes": dict(sorted(sizes.items())),
        "connections": opened,
        "packets": w.packets,
        "bytes": w.bytes,
        "by_api": dict(apis),
        "sse": sum(1 for r in finished if r.api == "chat_stream" for _ in r.exchanges),
        "seconds_of_capture": round(ts - 1_760_000_000.0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=1_000_000, help="model calls (default 1,000,000)")
    ap.add_argument("--out", type=Path, help="pcap to write (default out/many_calls_<N>.pcap)")
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args(argv)
    if args.calls < 1:
        print("make_many_calls: --calls must be 1 or more", file=sys.stderr)
        return 2
    out = args.out or OUT / f"many_calls_{args.calls}.pcap"
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    truth = make(args.calls, out, args.seed)
    truth["generated_seconds"] = round(time.perf_counter() - t0, 1)
    out.with_suffix(".truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    print(
        f"{out}: {truth['bytes'] / 1e6:.1f} MB, {truth['packets']} packets, {truth['calls']} calls "
        f"in {truth['runs']} runs, {truth['connections']} connections, "
        f"{truth['generated_seconds']} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
