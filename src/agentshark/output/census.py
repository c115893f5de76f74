"""What a run saw, counted as the items pass: the views' summaries and their reasons.

A :class:`Census` watches the pipeline's items on their way to a writer (it yields each one
unchanged) and keeps counts only, never the items: inputs read, exchanges, calls by API,
connections that carried no HTTP (TLS without keys among them), and the exchanges whose path
names an API family that is recognized but not parsed yet
(:func:`~agentshark.apis.registry.unparsed_api`), so that a view can say why it shows
nothing ("0 calls: 4 exchanges, none of a parsed API; 3 look like Gemini generateContent (not
parsed yet)") and what was done when the user stops it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

from agentshark.apis.gemini.live import is_live
from agentshark.apis.model import Call, Json
from agentshark.apis.openai.realtime import is_realtime
from agentshark.apis.registry import UNREADABLE, unparsed_api
from agentshark.errors import Diagnostic
from agentshark.model import Exchange
from agentshark.pipeline import ConnectionReport, Item, SourceReport

PARSED = (
    "OpenAI, Anthropic, Gemini, Bedrock, Ollama, Cohere, OpenAI Realtime, Gemini Live, MCP, A2A"
)
# Diagnostics of the stages under the API families: a cause (a decompression limit, bytes not
# captured, a head the parser gave up on), where a family's "not JSON" is a consequence.
_CAUSES = ("content.", "body.", "http.", "h2.", "tcp.", "tls.", "pcap.", "pcapng.", "net.")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 call``, ``2 calls``, ``0 calls``; ``many`` for irregular plurals."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def reasons(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """Why something is incomplete, causes first: the warnings and errors of
    ``diagnostics``, those of the lower stages before the API families' own."""
    found = [d for d in diagnostics if d.severity != "info"]
    return sorted(found, key=lambda d: not d.code.startswith(_CAUSES))


_CUT_SHORT = ("interrupted", "cancelled", "incomplete", "failed")


def unsaid_reason(call: Call) -> str:
    """Why ``call`` is incomplete when no diagnostic says so: it ended with a finish reason
    that is not a whole answer (a Live turn ``interrupted``, a Realtime response
    ``cancelled``), or else its exchange did not end in the capture."""
    cut = [r for r in call.finish_reasons if r in _CUT_SHORT]
    if cut:
        return f"it ended {', '.join(cut)} (its finish reason): not a whole answer"
    return f"its exchange {call.exchange_id} did not end in the capture"


class Census:
    def __init__(self, inputs: int) -> None:
        self.inputs = inputs
        self.inputs_done = 0
        self.unreadable = 0  # inputs with a source.* error
        self.exchanges = 0
        self.calls: Counter[str] = Counter()  # by api, before any --api filter
        self.connections = 0
        self.no_http = 0  # connections that carried no HTTP exchange
        self.encrypted = 0  # of which TLS that stayed encrypted
        self.no_keys = 0  # of which had no secret in the key logs (or no key log)
        self._unparsed: dict[str, tuple[str, str]] = {}  # exchange id -> (api, name)
        self._sessions: dict[str, str] = {}  # Realtime/Live exchange id -> kind, until a call
        self.unfinished: dict[str, list[Diagnostic]] = {}  # incomplete exchanges' diagnostics

    def watch(self, items: Iterator[Item]) -> Iterator[Item]:
        for item in items:
            self.count(item)
            yield item

    def count(self, item: Item) -> None:
        if isinstance(item, Exchange):
            self.exchanges += 1
            if not item.complete:
                self.unfinished[item.id] = list(item.diagnostics)
            found = unparsed_api(item)
            if found is not None:
                self._unparsed[item.id] = found
            kind = _session_kind(item) if item.messages is not None else None
            if kind is not None:  # a Realtime or Live session: its calls come after it
                self._sessions[item.id] = kind
        elif isinstance(item, Call):
            self.calls[item.api] += 1
            self._unparsed.pop(item.exchange_id, None)  # a parsed family claimed it after all
            self._sessions.pop(item.exchange_id, None)
        elif isinstance(item, ConnectionReport):
            self.connections += 1
            if item.exchanges == 0:
                self.no_http += 1
                if item.protocol == "tls":
                    self.encrypted += 1
                    codes = {d.code for d in item.diagnostics}
                    self.no_keys += "tls.no_keys" in codes
        elif isinstance(item, SourceReport) and item.format != "keylog":
            self.inputs_done += 1
            self.unreadable += any(d.code.startswith("source.") for d in item.diagnostics)

    def not_parsed(self) -> list[dict[str, Json]]:
        """The report's ``not_parsed`` section: per family name seen, its exchange ids."""
        groups: dict[tuple[str, str], list[Json]] = {}
        for exchange_id, key in self._unparsed.items():
            groups.setdefault(key, []).append(exchange_id)
        return [{"api": api, "name": name, "exchanges": ids} for (api, name), ids in groups.items()]

    def not_parsed_lines(self) -> list[str]:
        """One line per family: "3 exchanges look like Gemini generateContent (not parsed
        yet)"."""
        lines = []
        for group in self.not_parsed():
            ids = group["exchanges"]
            assert isinstance(ids, list)
            verb = "looks" if len(ids) == 1 else "look"
            name = str(group["name"])
            why = UNREADABLE.get(name, "not parsed yet")
            lines.append(f"{plural(len(ids), 'exchange')} {verb} like {name} ({why}): " + _ids(ids))
        return lines

    def _session_ids(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for ex_id, kind in self._sessions.items():
            out.setdefault(kind, []).append(ex_id)
        return out

    def why_no_calls(self, apis: Sequence[str] = ()) -> str:
        """Why no call is listed, from what the input held."""
        total = sum(self.calls.values())
        if total:
            others = ", ".join(f"{api} {n}" for api, n in sorted(self.calls.items()))
            return (
                f"{plural(total, 'call')} of other APIs ({others}) left out by "
                f"--api {' '.join(apis)}"
            )
        if self.exchanges:
            why = f"{plural(self.exchanges, 'exchange')}, none of a parsed API ({PARSED})"
            unparsed = len(self._unparsed)
            if unparsed:
                why += f"; {unparsed} of them of an API recognized but not parsed yet (below)"
            for kind, ids in sorted(self._session_ids().items()):
                what = plural(len(ids), f"{kind} session")
                why += f"; {what} over WebSocket with no model response in it ({', '.join(ids)})"
            return why
        why = self.why_no_exchanges()
        return why if why.startswith("no ") else "no HTTP exchanges: " + why

    def why_no_exchanges(self) -> str:
        """Why the input gave no HTTP exchange."""
        if self.encrypted:
            text = f"{plural(self.encrypted, 'TLS connection')} stayed encrypted"
            if self.no_keys:
                text += (
                    f" (no key for {'it' if self.encrypted == 1 else 'them'}: pass the key log "
                    "the client wrote through "
                    "SSLKEYLOGFILE with --keylog keys.log)"
                )
            others = self.no_http - self.encrypted
            if others:
                text += f"; {plural(others, 'other connection')} carried no HTTP"
            return text
        if self.no_http:
            return f"{plural(self.no_http, 'connection')}, none carrying HTTP"
        if self.inputs_done and self.unreadable == self.inputs_done:
            return "no input could be read"
        return "no HTTP exchanges in the input"

    def so_far(self) -> str:
        """What was done, for a user who stopped the run."""
        calls = sum(self.calls.values())
        done = f"{plural(self.exchanges, 'exchange')} and {plural(calls, 'call')} so far"
        if self.inputs_done < self.inputs:
            return (
                f"while reading input {self.inputs_done + 1} of {self.inputs} "
                f"({self.inputs_done} read whole), {done}"
            )
        return f"after reading all {plural(self.inputs, 'input')}, {done}"


def _ids(ids: list[Json], shown: int = 5) -> str:
    head = ", ".join(str(i) for i in ids[:shown])
    return head + (f"… (+{len(ids) - shown})" if len(ids) > shown else "")


def _session_kind(exchange: Exchange) -> str | None:
    if is_realtime(exchange):
        return "OpenAI Realtime"
    if is_live(exchange):
        return "Gemini Live"
    return None
