"""The trace stage of a long input, out of memory: what :class:`~agentshark.trace.collect.Analysis`
keeps goes to a temporary SQLite database once it holds more calls than it may keep, and the
traces are built group by group, so that memory follows the largest trace, not the input.

While the input is read, each kept call and unclaimed HTTP request is stored whole (pickled)
with the keys that may join it to others: the evidence :func:`~agentshark.trace.build.build_traces`
and :func:`~agentshark.trace.history.link_history` join by (traceparent trace-ids, grouping ids,
response ids, conversations, sessions, the fingerprints a replayed history is indexed and
looked up under, tool call ids, task ids) and the one the retry rules pair calls by (the same
request). When the input ends:

1. the calls sharing a key are put in one group (union-find; a key that only calls seeking it,
   or only calls offering it, carry joins nothing), then the MCP calls of one stdio
   connection, then a ``tools/list`` with the first model call offering its tools;
2. each tool call is put with every call or request that starts in its window (the window
   reaching to the group's last start, which covers the result's) and could be its
   execution or work (:func:`~agentshark.trace.build.may_execute`);
3. the groups are read back a few at a time and analysed as the whole input is: every way two
   calls can meet in the analysis is one of those joins, so a union of groups gives the same
   traces, links and incidents as the whole input gives for those calls;
4. the connection hints between traces (consecutive calls of two traces on one connection)
   are found over the whole input in the database, and the report's traces and incidents
   are read back in the whole input's order (traces by their first call's start, incidents
   by their call's place in the report, then by rule).

A group is more calls than the trace it ends as (calls that could have been joined are put
together), never fewer. The queue spans join traces through messages and are not done this
way: an input with queue messages is read back whole when it ends.
"""

from __future__ import annotations

import pickle
import sqlite3
import tempfile
from array import array
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from hashlib import blake2b
from pathlib import Path
from typing import Any

import orjson

from agentshark.apis.model import Call, Json, ToolCallPart, ToolCallResponsePart
from agentshark.errors import StoreError
from agentshark.trace.build import (
    HINT_GAP,
    TOOL_WINDOW,
    build_traces,
    defined_names,
    grouping_ids,
    is_execution,
    listed_names,
    may_execute,
    offered_in_order,
    tool_window_start,
)
from agentshark.trace.context import TraceParent, parse_traceparent
from agentshark.trace.history import is_model_call, link_history, replay_keys
from agentshark.trace.incidents import ranked_incidents
from agentshark.trace.model import Incident, Trace
from agentshark.trace.openapi import OpenApi, name_operations
from agentshark.trace.retrieval import is_work
from agentshark.trace.spans import HttpRequest

View = tuple[Trace, dict[str, Call], list[Incident]]  # a trace, its calls, its incidents
CALL, HTTP = 0, 1  # kinds of item
BOTH, OFFERED, SOUGHT = 0, 1, 2  # roles of a key: shared, offered, looked up
ROWS = 1024  # rows buffered before they are written
GROUP_CALLS = 400  # calls analysed at a time (whole groups, however large)
NO_CALL = 1 << 62  # the place of an incident without a call: after every call

_SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, kind INTEGER, pos INTEGER, exchange TEXT,
    late INTEGER, start REAL, t REAL, op INTEGER, stdio INTEGER, data BLOB);
CREATE TABLE keys (k INTEGER, role INTEGER, item INTEGER);
CREATE TABLE asks (item INTEGER, t REAL, part BLOB);
CREATE TABLE doers (item INTEGER, t REAL);
CREATE TABLE toolsets (names TEXT, late INTEGER, start REAL, pos INTEGER, item INTEGER);
CREATE TABLE lists (item INTEGER);
CREATE TABLE exchanges (id TEXT PRIMARY KEY, conn TEXT) WITHOUT ROWID;
CREATE TABLE traces (late INTEGER, start REAL, pos INTEGER, data BLOB);
CREATE TABLE uses (conn TEXT, started REAL, ended REAL, trace INTEGER, idx INTEGER,
    trace_id TEXT, call TEXT);
CREATE TABLE incidents (pos INTEGER, rank INTEGER, seq INTEGER, trace INTEGER, data BLOB);
CREATE TABLE hints (trace INTEGER, first INTEGER, seq INTEGER, data BLOB);
"""


def _key(kind: bytes, value: bytes) -> int:
    return int.from_bytes(blake2b(kind + value, digest_size=8).digest(), "little", signed=True)


def call_keys(call: Call) -> Iterator[tuple[int, int]]:
    """``(key, role)`` of each piece of evidence that may join ``call`` to another."""
    tp = call.ids.get("traceparent")
    if tp:
        yield from _traceparent_key(tp)
    for origin, name, value in grouping_ids(call):
        yield _key(b"g", "\0".join((origin, name, value)).encode()), BOTH
    if is_execution(call):
        yield _key(b"t", call.id.encode()), BOTH
    task_of = call.extras.get("task_of")
    if call.operation == "tasks/result" and isinstance(task_of, str):
        yield _key(b"t", task_of.encode()), BOTH
    if not is_model_call(call):
        return
    offered, sought, fingerprint = replay_keys(call)
    for k in offered:
        yield _key(b"h", k), OFFERED
    for k in sought:
        yield _key(b"h", k), SOUGHT
    for message in call.output_messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.id is not None:
                yield _key(b"u", part.id.encode()), OFFERED
    for message in call.input_messages:
        for part in message.parts:
            if isinstance(part, ToolCallResponsePart) and part.id is not None:
                yield _key(b"u", part.id.encode()), SOUGHT
    # the retry rules' "same request" (incident_rules_base.request_key): equal requests
    # have equal parameters and input fingerprints
    head = [call.api, call.operation, call.request_model, call.request_params]
    try:
        params = orjson.dumps(head, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        params = repr(head).encode()
    yield _key(b"q", params + fingerprint), BOTH


def _traceparent_key(value: str) -> Iterator[tuple[int, int]]:
    parsed = parse_traceparent(value)
    if isinstance(parsed, TraceParent):
        yield _key(b"p", parsed.trace_id.encode()), BOTH


@contextmanager
def _guard(where: str | None) -> Iterator[None]:
    """sqlite3 and OS errors of the store as one clear :class:`StoreError`."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        place = where or tempfile.gettempdir()
        raise StoreError(
            f"the temporary store of the analysis in {place} failed ({exc}): free space there, "
            "set TMPDIR to a directory with room, or keep more calls in memory with "
            "--keep-calls N"
        ) from None


class _Sets:
    """Union-find over item numbers."""

    def __init__(self, n: int) -> None:
        self.parent = array("q", range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(self, items: Sequence[int]) -> None:
        if len(items) < 2:
            return
        root = self.find(items[0])
        for other in items[1:]:
            r = self.find(other)
            if r != root:
                self.parent[r] = root


@dataclass(slots=True)
class Store:
    """The kept calls and requests of one input, on disk (module docstring)."""

    directory: str | None = None  # where the temporary database goes (default: TMPDIR)
    views: bool = False  # keep each trace's calls with it (the text view draws them)
    items: int = 0
    calls: int = 0
    http: int = 0
    all_started: bool = True  # every model call has a start time
    unclaimed: int = 0  # requests no family claimed and no trace took (after finish)
    _tmp: tempfile.TemporaryDirectory[str] | None = None
    _db: sqlite3.Connection | None = None
    _rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    _pending: dict[str, str] = field(default_factory=dict)  # exchange -> connection, unwritten

    def __post_init__(self) -> None:
        with _guard(self.directory):
            self._open()

    def _open(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="agentshark-", dir=self.directory)
        db = sqlite3.connect(Path(self._tmp.name) / "analysis.sqlite3", isolation_level=None)
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-8192"):
            db.execute(f"PRAGMA {pragma}")
        db.executescript(_SCHEMA)
        db.execute("BEGIN")
        self._db = db
        self._rows = {name: [] for name in ("items", "keys", "asks", "doers", "toolsets", "lists")}

    @property
    def db(self) -> sqlite3.Connection:
        assert self._db is not None, "the store is closed"
        return self._db

    # -- while the input is read -----------------------------------------------------------

    def add_exchange(self, exchange_id: str, connection: str) -> None:
        self._pending[exchange_id] = connection
        if len(self._pending) >= ROWS:
            self._write_exchanges()

    def has_exchange(self, exchange_id: str) -> bool:
        if exchange_id in self._pending:
            return True
        with _guard(self.directory):
            found = self.db.execute("SELECT 1 FROM exchanges WHERE id = ?", (exchange_id,))
            return found.fetchone() is not None

    def add_call(self, call: Call) -> None:
        item, pos = self.items, self.calls
        self.items, self.calls = item + 1, pos + 1
        started = call.timing.started
        stdio = call.api == "mcp" and call.extras.get("mcp_transport") == "stdio"
        data = pickle.dumps(call, pickle.HIGHEST_PROTOCOL)
        rows = self._rows
        rows["items"].append(
            (
                item,
                CALL,
                pos,
                call.exchange_id,
                started is None,
                started or 0.0,
                started,
                0,
                stdio,
                data,
            )
        )
        rows["keys"].extend((k, role, item) for k, role in call_keys(call))
        if is_execution(call) or is_work(call):
            rows["doers"].append((item, started))
        if call.api == "mcp" and listed_names(call) is not None:
            rows["lists"].append((item,))
        if is_model_call(call):
            if started is None:
                self.all_started = False
            start = tool_window_start(call)
            for message in call.output_messages:
                for part in message.parts:
                    if isinstance(part, ToolCallPart):
                        rows["asks"].append(
                            (item, start, pickle.dumps(part, pickle.HIGHEST_PROTOCOL))
                        )
            names = defined_names(call)
            if names:
                rows["toolsets"].append(
                    (orjson.dumps(names).decode(), started is None, started or 0.0, pos, item)
                )
        if len(rows["items"]) >= ROWS or len(rows["keys"]) >= 8 * ROWS:
            self._write()

    def add_http(self, req: HttpRequest, *, operation: bool) -> None:
        item, pos = self.items, self.http
        self.items, self.http = item + 1, pos + 1
        started = req.started
        data = pickle.dumps(req, pickle.HIGHEST_PROTOCOL)
        self._rows["items"].append(
            (
                item,
                HTTP,
                pos,
                req.exchange_id,
                started is None,
                started or 0.0,
                started,
                operation,
                0,
                data,
            )
        )
        if req.traceparent:
            self._rows["keys"].extend(
                (k, role, item) for k, role in _traceparent_key(req.traceparent)
            )
        self._rows["doers"].append((item, started))
        if len(self._rows["items"]) >= ROWS:
            self._write()

    def _write(self) -> None:
        with _guard(self.directory):
            self._write_rows()

    def _write_rows(self) -> None:
        db, rows = self.db, self._rows
        db.executemany("INSERT INTO items VALUES (?,?,?,?,?,?,?,?,?,?)", rows["items"])
        db.executemany("INSERT INTO keys VALUES (?,?,?)", rows["keys"])
        db.executemany("INSERT INTO asks VALUES (?,?,?)", rows["asks"])
        db.executemany("INSERT INTO doers VALUES (?,?)", rows["doers"])
        db.executemany("INSERT INTO toolsets VALUES (?,?,?,?,?)", rows["toolsets"])
        db.executemany("INSERT INTO lists VALUES (?)", rows["lists"])
        for name in rows:
            rows[name] = []
        self._write_exchanges()

    def _write_exchanges(self) -> None:
        with _guard(self.directory):
            self._write_pending()

    def _write_pending(self) -> None:
        self.db.executemany("INSERT OR REPLACE INTO exchanges VALUES (?,?)", self._pending.items())
        self._pending = {}

    # -- once the input has ended ----------------------------------------------------------

    def finish(self, model_hosts: Collection[str], openapi: OpenApi) -> None:
        """Group, analyse, and find the hints (module docstring)."""
        self._write()
        with _guard(self.directory):
            self._finish(model_hosts, openapi)

    def _finish(self, model_hosts: Collection[str], openapi: OpenApi) -> None:
        db = self.db
        db.execute("CREATE INDEX doers_t ON doers (t)")
        db.execute("CREATE INDEX items_exchange ON items (exchange, kind)")
        sets = _Sets(self.items)
        self._join_keys(sets)
        self._join_stdio(sets)
        self._join_lists(sets)
        removed = self._claimed()
        self._join_windows(sets, removed)
        kinds = bytearray(self.items)
        for item, kind in db.execute("SELECT id, kind FROM items WHERE kind = ?", (HTTP,)):
            kinds[item] = kind
        roots = array("q", (sets.find(i) for i in range(self.items)))
        del sets
        order = sorted(range(self.items), key=roots.__getitem__)
        total = db.execute("SELECT count(*) FROM items WHERE kind = ? AND op = 0", (HTTP,))
        self.unclaimed = total.fetchone()[0] - len(self._plain(removed))
        group: list[int] = []  # whole groups, analysed together
        begun, calls_in, with_calls = 0, 0, 0  # where the group being read begun in it
        for n, item in enumerate(order):
            group.append(item)
            calls_in += kinds[item] == CALL
            if n + 1 < len(order) and roots[order[n + 1]] == roots[item]:
                continue
            if calls_in == with_calls:
                del group[begun:]  # requests no call joined: no trace
            with_calls = calls_in
            begun = len(group)
            if calls_in >= GROUP_CALLS:
                self._analyse(group, removed, model_hosts, openapi)
                group, begun, calls_in, with_calls = [], 0, 0, 0
        if group:
            self._analyse(group, removed, model_hosts, openapi)
        del order, roots
        self._rank_traces()
        self._hints()

    def _plain(self, removed: set[int]) -> set[int]:
        """The requests of ``removed`` that are no operation of another protocol."""
        if not removed:
            return set()
        marks = ",".join("?" * len(removed))
        query = f"SELECT id FROM items WHERE op = 0 AND id IN ({marks})"  # noqa: S608
        return {row[0] for row in self.db.execute(query, tuple(removed))}

    def _join_keys(self, sets: _Sets) -> None:
        rows = self.db.execute("SELECT k, role, item FROM keys ORDER BY k")
        key: int | None = None
        members: list[tuple[int, int]] = []
        for k, role, item in rows:
            if k != key:
                _join_members(sets, members)
                key, members = k, []
            members.append((role, item))
        _join_members(sets, members)

    def _join_stdio(self, sets: _Sets) -> None:
        rows = self.db.execute(
            "SELECT e.conn, i.id FROM items i JOIN exchanges e ON e.id = i.exchange "
            "WHERE i.stdio = 1 ORDER BY e.conn"
        )
        conn: str | None = None
        members: list[int] = []
        for c, item in rows:
            if c != conn:
                sets.join(members)
                conn, members = c, []
            members.append(item)
        sets.join(members)

    def _join_lists(self, sets: _Sets) -> None:
        """A ``tools/list`` with the first model call of each tool set it matches."""
        lists = [row[0] for row in self.db.execute("SELECT item FROM lists")]
        if not lists:
            return
        first: dict[str, int] = {}
        for names, item in self.db.execute(
            "SELECT names, item FROM toolsets ORDER BY late, start, pos"
        ):
            first.setdefault(names, item)
        offered = [(orjson.loads(names), item) for names, item in first.items()]
        for item in lists:
            listed = listed_names(self._load(item))
            assert listed is not None
            for names, model in offered:
                if offered_in_order(listed, names):
                    sets.join([model, item])

    def _claimed(self) -> set[int]:
        """The requests a call claimed after all (an MCP call can come after its exchange)."""
        rows = self.db.execute(
            "SELECT id FROM items WHERE kind = ? AND exchange IN "
            "(SELECT exchange FROM items WHERE kind = ?)",
            (HTTP, CALL),
        )
        return {row[0] for row in rows}

    def _join_windows(self, sets: _Sets, removed: set[int]) -> None:
        """Each tool call with what could have run it (module docstring, step 2)."""
        db = self.db
        if db.execute("SELECT 1 FROM doers LIMIT 1").fetchone() is None:
            return
        latest = array("d", bytes(8 * self.items))  # by group: its latest start
        for item, t in db.execute("SELECT id, t FROM items WHERE t IS NOT NULL"):
            root = sets.find(item)
            latest[root] = max(latest[root], t)
        cache: dict[int, Call | HttpRequest] = {}
        for item, start, data in db.execute("SELECT item, t, part FROM asks").fetchall():
            part = pickle.loads(data)  # noqa: S301 (written by this process)
            if start is None:
                found = db.execute("SELECT item FROM doers WHERE t IS NULL")
            else:
                limit = max(start + TOOL_WINDOW, latest[sets.find(item)])
                found = db.execute("SELECT item FROM doers WHERE t BETWEEN ? AND ?", (start, limit))
            for (doer,) in found.fetchall():
                if doer in removed or sets.find(doer) == sets.find(item):
                    continue
                done = cache.get(doer)
                if done is None:
                    done = cache[doer] = self._load(doer)
                    if len(cache) > ROWS:
                        cache.clear()
                if may_execute(part, done):
                    sets.join([item, doer])

    def _load(self, item: int) -> Any:
        row = self.db.execute("SELECT data FROM items WHERE id = ?", (item,)).fetchone()
        return pickle.loads(row[0])  # noqa: S301 (written by this process)

    def _analyse(
        self, group: list[int], removed: set[int], model_hosts: Collection[str], openapi: OpenApi
    ) -> None:
        """Traces, hints' uses and incidents of whole groups, as the whole input gives them."""
        db = self.db
        calls: list[tuple[int, Call]] = []
        http: list[tuple[int, HttpRequest]] = []
        plain: set[str] = set()  # exchanges of requests that are no other protocol's operation
        for n in range(0, len(group), 500):
            part = group[n : n + 500]
            marks = ",".join("?" * len(part))
            query = f"SELECT id, kind, pos, exchange, op, data FROM items WHERE id IN ({marks})"  # noqa: S608
            for item, kind, pos, exchange, op, data in db.execute(query, part):
                if kind == CALL:
                    calls.append((pos, pickle.loads(data)))  # noqa: S301
                elif item not in removed:
                    http.append((pos, pickle.loads(data)))  # noqa: S301
                    if not op:
                        plain.add(exchange)
        calls.sort(key=lambda p: p[0])
        http.sort(key=lambda p: p[0])
        ordered = [c for _, c in calls]
        requests = [h for _, h in http]
        exchanges = list({c.exchange_id for c in ordered} | {h.exchange_id for h in requests})
        connection_of: dict[str, str] = {}
        for n in range(0, len(exchanges), 500):
            part_x = exchanges[n : n + 500]
            marks = ",".join("?" * len(part_x))
            query = f"SELECT id, conn FROM exchanges WHERE id IN ({marks})"  # noqa: S608
            connection_of.update(db.execute(query, part_x).fetchall())
        links = link_history(ordered, by_start=self.all_started)
        traces = build_traces(ordered, links, requests, model_hosts, connection_of)
        name_operations([s for t in traces for s in t.spans], openapi)
        place = {c.id: (c.timing.started is None, c.timing.started or 0.0, pos) for pos, c in calls}
        by_id = {c.id: c for c in ordered}
        rows = {t.trace_id: self._keep_trace(t, place, by_id, connection_of) for t in traces}
        db.executemany(
            "INSERT INTO incidents VALUES (?,?,?,?,?)",
            (
                (
                    calls[where][0] if where < len(calls) else NO_CALL,
                    rank,
                    seq,
                    rows.get(i.trace_id) if i.trace_id is not None else None,
                    _dumps(i),
                )
                for where, rank, seq, i in ranked_incidents(ordered, traces, links)
            ),
        )
        used = {cid for t in traces for cid in t.calls}
        self.unclaimed -= sum(
            1 for h in requests if h.exchange_id in used and h.exchange_id in plain
        )

    def _keep_trace(
        self,
        trace: Trace,
        place: dict[str, tuple[bool, float, int]],
        by_id: dict[str, Call],
        connection_of: dict[str, str],
    ) -> int | None:
        """Store ``trace`` (with its calls, for a view) and its calls' uses of connections."""
        late, start, pos = min(place[c] for c in trace.calls if c in place)
        kept: object = trace
        if self.views:
            kept = (trace, {c: by_id[c] for c in trace.calls if c in by_id})
        row = self.db.execute(
            "INSERT INTO traces VALUES (?,?,?,?)", (late, start, pos, _dumps(kept))
        ).lastrowid
        uses = []
        for idx, cid in enumerate(trace.calls):
            call = by_id.get(cid)
            conn = connection_of.get(call.exchange_id) if call is not None else None
            if call is None or conn is None or call.timing.started is None:
                continue
            end = call.timing.ended or call.timing.started
            uses.append((conn, call.timing.started, end, row, idx, trace.trace_id, cid))
        self.db.executemany("INSERT INTO uses VALUES (?,?,?,?,?,?,?)", uses)
        return row

    def _rank_traces(self) -> None:
        self.db.execute(
            "CREATE TABLE ranks AS SELECT rowid AS trace, "
            "row_number() OVER (ORDER BY late, start, pos) AS r FROM traces"
        )
        self.db.execute("CREATE UNIQUE INDEX ranks_trace ON ranks (trace)")

    def _hints(self) -> None:
        """:func:`~agentshark.trace.build.connection_hints` over every trace, in the database:
        a trace's hints come by connection (in the order the traces first use them), then
        by the pair's place on it."""
        db = self.db
        first = dict(
            db.execute(
                "SELECT u.conn, min(r.r * 4294967296 + u.idx) FROM uses u "
                "JOIN ranks r ON r.trace = u.trace GROUP BY u.conn"
            ).fetchall()
        )
        rows = db.execute(
            "SELECT u.conn, u.started, u.ended, r.r, u.trace_id, u.call FROM uses u "
            "JOIN ranks r ON r.trace = u.trace ORDER BY u.conn, u.started, r.r, u.idx"
        )
        out: list[tuple[int, int, int, bytes]] = []
        seq = 0
        previous: tuple[Any, ...] | None = None
        for use in rows:
            if previous is not None and previous[0] == use[0]:
                conn, _, end, r1, t1, a = previous
                _, start, _, r2, t2, b = use
                gap = start - end
                if r1 != r2 and 0 <= gap <= HINT_GAP:
                    for this, other in ((r1, t2), (r2, t1)):
                        hint = {
                            "origin": "connection",
                            "trace_id": other,
                            "connection": conn,
                            "calls": [a, b],
                            "gap": gap,
                        }
                        out.append((this, first[conn], seq, _dumps(hint)))
                        seq += 1
                    if len(out) >= ROWS:
                        db.executemany("INSERT INTO hints VALUES (?,?,?,?)", out)
                        out = []
            previous = use
        db.executemany("INSERT INTO hints VALUES (?,?,?,?)", out)

    def traces(self) -> Iterator[dict[str, Json]]:
        """The traces' JSON, in the report's order, with their hints."""
        for trace, _, _ in self.views_of(incidents=False):
            yield trace.to_json()

    def views_of(self, *, incidents: bool = True) -> Iterator[View]:
        """Each trace in the report's order, with its hints, its calls (when the store was
        made for views) and its incidents in the report's order."""
        with _guard(self.directory):
            yield from self._views(incidents=incidents)

    def _views(self, *, incidents: bool) -> Iterator[View]:
        db = self.db
        hints = _rows_by_rank(db, "SELECT trace, data FROM hints ORDER BY trace, first, seq")
        found = _rows_by_rank(
            db,
            "SELECT r.r, i.data FROM incidents i JOIN ranks r ON r.trace = i.trace "
            "ORDER BY r.r, i.pos, i.rank, i.seq"
            if incidents
            else "SELECT 0, NULL WHERE 0",
        )
        rows = db.execute(
            "SELECT r.r, t.data FROM traces t JOIN ranks r ON r.trace = t.rowid ORDER BY r.r"
        )
        for r, data in rows:
            kept = pickle.loads(data)  # noqa: S301 (written by this process)
            trace, calls = kept if isinstance(kept, tuple) else (kept, {})
            trace.hints = hints.take(r)
            yield trace, calls, found.take(r)

    def incidents(self) -> Iterator[Incident]:
        """The incidents in the report's order."""
        yield from self._incidents("SELECT data FROM incidents ORDER BY pos, rank, seq")

    def loose_incidents(self) -> Iterator[Incident]:
        """The incidents of no trace, in the report's order."""
        yield from self._incidents(
            "SELECT data FROM incidents WHERE trace IS NULL ORDER BY pos, rank, seq"
        )

    def _incidents(self, query: str) -> Iterator[Incident]:
        with _guard(self.directory):
            for (data,) in self.db.execute(query):
                yield pickle.loads(data)  # noqa: S301 (written by this process)

    def read_back(self) -> tuple[list[Call], list[HttpRequest], dict[str, str]]:
        """Everything kept, in the order it came (an input whose analysis needs it whole)."""
        self._write()
        with _guard(self.directory):
            return self._read_back()

    def _read_back(self) -> tuple[list[Call], list[HttpRequest], dict[str, str]]:
        calls: list[Call] = []
        http: list[HttpRequest] = []
        for kind, data in self.db.execute("SELECT kind, data FROM items ORDER BY id"):
            (calls if kind == CALL else http).append(pickle.loads(data))  # noqa: S301
        return calls, http, dict(self.db.execute("SELECT id, conn FROM exchanges").fetchall())

    def operations(self) -> list[str]:
        """The exchanges of the kept requests that are another protocol's operation."""
        rows = self.db.execute("SELECT exchange FROM items WHERE kind = ? AND op = 1", (HTTP,))
        return [row[0] for row in rows]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


class _RowsByRank:
    """The rows of a query ordered by trace rank, taken one rank at a time."""

    def __init__(self, rows: Iterator[tuple[int, bytes]]) -> None:
        self._rows = rows
        self._next = next(rows, None)

    def take(self, rank: int) -> list[Any]:
        out = []
        while self._next is not None and self._next[0] == rank:
            out.append(pickle.loads(self._next[1]))  # noqa: S301 (written by this process)
            self._next = next(self._rows, None)
        return out


def _rows_by_rank(db: sqlite3.Connection, query: str) -> _RowsByRank:
    return _RowsByRank(iter(db.execute(query)))


def _dumps(value: object) -> bytes:
    return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)


def _join_members(sets: _Sets, members: Iterable[tuple[int, int]]) -> None:
    """The items carrying one key: all of them if it is shared, else those offering it with
    those seeking it, when there are both."""
    both = [item for role, item in members if role == BOTH]
    sets.join(both)
    offered = [item for role, item in members if role == OFFERED]
    sought = [item for role, item in members if role == SOUGHT]
    if offered and sought:
        sets.join(offered + sought)
