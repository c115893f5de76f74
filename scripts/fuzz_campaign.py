"""Fuzz campaign over every decoder and input reader (run outside CI; CI keeps Hypothesis).

Each target of tests/fuzz/targets.py is fuzzed by seeded mutation (tests/fuzz/mutate.py)
from its seeds in tests/data/fuzz_seeds/. The invariant: any bytes in, only events or
Diagnostics out, never an exception. Inputs whose outputs show a new behaviour (a new set of
output types and diagnostic codes) join the target's pool and are mutated in turn, a cheap
feedback that needs no coverage instrumentation.

The campaign runs targets round-robin in slices of ``--slice`` seconds until each has
``--goal`` inputs or ``--until`` (HH:MM) comes; its state (inputs and findings per target)
is kept in ``--out`` (bench/out/fuzz/ by default), so a stopped campaign resumes where it
was. Slice ``n`` of a target mutates with ``random.Random(f"{target}:{epoch}:{n}")``, where
``epoch`` is fixed when the state is created (so a campaign started afresh, after its state was
lost, does not run the same inputs again): a finding is reproducible from its saved input alone,
and a slice from the state's epoch and its number.

Inputs run by earlier campaigns whose state is gone are counted from ``--earlier``
(bench/fuzz_earlier.json: the per-target counts the session notes reported); ``run`` counts
them towards ``--goal`` and ``status`` shows them beside the state's own.

Each slice runs in a forked child (tests/fuzz/isolate.py) that writes every input into a
ring of the last 8 before running it: when a C extension takes the child down (a segfault,
glibc aborting on a corrupt heap), the input it was running is saved as a
``native-<SIGNAL>@<file:line>`` finding with the faulthandler stack and the 7 inputs before
it, tried again alone and after them in a fresh child ("reproduces: alone / after the 7
inputs before it / no"), and the campaign goes on (a target whose child died 3 times is set
aside for the run). ``--malloc-check`` runs everything under glibc's heap checks so that
corruption aborts close to its cause (slower, measured: 1.5x for the decoders and API
targets, 4-5x for HAR/VCR/stdio, 100x for the pipeline target, whose large buffers the
debug allocator checks at every realloc; use it with --only).
``--in-process`` runs the slices in the campaign's process, as before. Two campaigns on
disjoint ``--only`` lists use both cores and share one state (each writes only its targets'
entries, under a lock). Run it niced::

    nohup nice -n 19 .venv/bin/python scripts/fuzz_campaign.py run --until 12:10 &
    nohup nice -n 19 .venv/bin/python scripts/fuzz_campaign.py --malloc-check run &
    .venv/bin/python scripts/fuzz_campaign.py status
    .venv/bin/python scripts/fuzz_campaign.py replay bench/out/fuzz/findings/<target>/<file>
    .venv/bin/python scripts/fuzz_campaign.py seeds       # re-cut the committed seeds

Findings (an exception, an input slower than ``--slow`` seconds, a native crash) are saved
under ``findings/<target>/`` with the traceback, one per (exception type, innermost
agentshark line), the smallest input kept. Replay a native one under the heap checks:
``scripts/fuzz_campaign.py --malloc-check replay <file>`` (it dies as the child did).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import fcntl
import json
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.setrecursionlimit(10_000)

from tests.fuzz import seeds as seedlib  # noqa: E402
from tests.fuzz.isolate import Ring, crash_place, malloc_debug_env, run_forked  # noqa: E402
from tests.fuzz.mutate import Mutator  # noqa: E402
from tests.fuzz.targets import TARGETS, Target  # noqa: E402


class Hang(BaseException):
    """One input used more than --hang seconds of CPU (a BaseException: no harness catches
    it). CPU time, not wall time: a niced process on a busy machine waits for the CPU."""


def _alarm(signum: int, frame: Any) -> None:
    raise Hang


CONFIRM = 5.0  # seconds an input stopped by --hang is given to finish before it is a hang
POOL_CAP = 300  # inputs kept per target for mutation (seeds included)
POOL_INPUT_CAP = 16 << 10  # larger inputs are not added to the pool
MAX_DEATHS = 3  # a target whose child died this often is set aside for the rest of the run


def signature(out: list[Any]) -> frozenset[tuple[str, str]]:
    """What kinds of output an input produced: types and diagnostic codes (first 300)."""
    sig: set[tuple[str, str]] = set()
    for item in out[:300]:
        sig.add((type(item).__name__, str(getattr(item, "code", ""))))
        for diag in getattr(item, "diagnostics", ())[:20]:
            sig.add(("diag", str(getattr(diag, "code", ""))))
    return frozenset(sig)


def crash_key(exc: BaseException) -> str:
    """Exception type and the innermost frame inside agentshark (or the harness)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = next(
        (f for f in reversed(frames) if "/agentshark/" in f.filename),
        frames[-1] if frames else None,
    )
    place = f"{Path(where.filename).name}:{where.lineno}" if where else "?"
    return f"{type(exc).__name__}@{place}"


class Campaign:
    def __init__(self, out: Path, slow: float, hang: float) -> None:
        self.out = out
        self.slow = slow
        self.hang = hang
        signal.signal(signal.SIGVTALRM, _alarm)
        self.state_path = out / "state.json"
        self.state: dict[str, Any] = {"targets": {}}
        if self.state_path.exists():
            self.state = json.loads(self.state_path.read_text())
        # a state written before epochs existed keeps its slices' seeds (epoch "")
        self.epoch: str = self.state.get("epoch", "")
        self.pools: dict[str, list[list[bytes]]] = {}
        self.sigs: dict[str, set[frozenset[tuple[str, str]]]] = {}
        self.ring: Ring | None = None  # the last inputs, kept for the parent (--isolate)
        self.touched: set[str] = set()  # the targets whose entries this process changed

    def changed(self, name: str) -> dict[str, Any]:
        """The entry of a target this process is about to change (:meth:`save` writes it)."""
        self.touched.add(name)
        return self.stats(name)

    def stats(self, name: str) -> dict[str, Any]:
        entry: dict[str, Any] = self.state["targets"].setdefault(
            name, {"inputs": 0, "seconds": 0.0, "slices": 0, "findings": {}, "max_input_s": 0.0}
        )
        return entry

    def pool(self, target: Target) -> list[list[bytes]]:
        if target.name not in self.pools:
            pool = [s for s in seedlib.load(target.name) if len(s) == target.parts]
            saved = self.out / "pool" / target.name
            pool.extend(
                [base64.b64decode(p) for p in json.loads(path.read_text())]
                for path in sorted(saved.glob("*.parts"))[:POOL_CAP]
            )
            self.pools[target.name] = pool
            self.sigs[target.name] = self.load_sigs(target.name)
        return self.pools[target.name]

    def load_sigs(self, name: str) -> set[frozenset[tuple[str, str]]]:
        """The output signatures seen in earlier slices (so a slice does not re-add to the
        pool inputs whose behaviour it already holds)."""
        path = self.out / "sigs" / f"{name}.json"
        if not path.exists():
            return set()
        return {frozenset((a, b) for a, b in sig) for sig in json.loads(path.read_text())}

    def save_sigs(self, name: str) -> None:
        path = self.out / "sigs" / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(sorted(sorted(sig) for sig in self.sigs.get(name, ()))))

    def slice(self, target: Target, seconds: float, limit: int) -> int:
        """Fuzz ``target`` for ``seconds`` or ``limit`` inputs; the inputs run."""
        pool = self.pool(target)
        if not pool:
            return 0
        stats = self.changed(target.name)
        number = stats["slices"]
        seed = f"{target.name}:{self.epoch}:{number}" if self.epoch else f"{target.name}:{number}"
        rnd = random.Random(seed)
        mutator = Mutator(rnd, target.tokens)
        mutable = [i for i in range(target.parts) if i not in target.fixed]
        sigs = self.sigs[target.name]
        run = target.run
        ring = self.ring
        done = 0
        start, cpu = time.perf_counter(), time.process_time()
        end = start + seconds
        slowest = 0.0
        hang = self.hang * (10 if target.heavy else 1)
        slow = self.slow * (10 if target.heavy else 1)
        while done < limit:
            if done % 64 == 0 and time.perf_counter() > end:
                break
            base = rnd.choice(pool)
            parts = list(base)
            for k in rnd.sample(mutable, rnd.choice((1, 1, 1, len(mutable)))):
                other = rnd.choice(pool)[k]
                parts[k] = mutator.mutate(parts[k], other)
            if ring is not None:
                ring.put(done + 1, parts)
            t0 = time.process_time()  # CPU time: a niced process waits for the CPU
            try:
                signal.setitimer(signal.ITIMER_VIRTUAL, hang)
                try:
                    out = run(parts)
                finally:
                    signal.setitimer(signal.ITIMER_VIRTUAL, 0)
            except Hang:
                self.hung(target, parts)
                done += 1
                continue
            except Exception as exc:  # noqa: BLE001  (a finding: the invariant broke)
                self.finding(
                    target, parts, crash_key(exc), "".join(traceback.format_exception(exc))
                )
                done += 1
                continue
            took = time.process_time() - t0
            done += 1
            if took > slowest:
                slowest = took
                if took > slow:
                    self.finding(target, parts, "slow", f"{took:.2f} s of CPU for one input")
            sig = signature(out)
            if sig not in sigs:
                sigs.add(sig)
                if len(pool) < POOL_CAP and sum(map(len, parts)) <= POOL_INPUT_CAP:
                    pool.append(parts)
                    self.save_input(self.out / "pool" / target.name, parts)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
        stats["cpu_seconds"] = round(stats.get("cpu_seconds", 0.0) + cpu, 3)
        stats["cpu_inputs"] = stats.get("cpu_inputs", 0) + done  # inputs run with CPU counted
        stats["inputs"] += done
        stats["seconds"] = round(stats["seconds"] + elapsed, 3)
        stats["slices"] = number + 1
        stats["max_input_s"] = round(max(stats["max_input_s"], slowest), 4)
        stats["pool"] = len(pool)
        self.save_sigs(target.name)
        self.log(
            {
                "target": target.name,
                "slice": number,
                "inputs": done,
                "seconds": round(elapsed, 2),
                "rate": round(done / elapsed if elapsed else 0),
                "cpu": round(cpu, 2),
                "total": stats["inputs"],
                "findings": len(stats["findings"]),
            }
        )
        return done

    def hung(self, target: Target, parts: list[bytes]) -> None:
        """An input stopped after --hang seconds: confirmed as a hang if it also runs past
        CONFIRM seconds (for the first few per target), else recorded as slow."""
        stats = self.changed(target.name)
        confirmed = stats.setdefault("hangs_confirmed", 0)
        if confirmed >= 3:
            self.finding(target, parts, "hang", f"stopped after {self.hang} s (not re-run)")
            return
        t0 = time.process_time()
        try:
            signal.setitimer(signal.ITIMER_VIRTUAL, CONFIRM)
            try:
                target.run(parts)
            finally:
                signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        except Hang:
            stats["hangs_confirmed"] = confirmed + 1
            self.finding(target, parts, "hang", f"still running after {CONFIRM} s")
            return
        except Exception as exc:  # noqa: BLE001  (a finding)
            self.finding(target, parts, crash_key(exc), "".join(traceback.format_exception(exc)))
            return
        took = time.process_time() - t0
        self.finding(target, parts, "slow", f"{took:.2f} s of CPU for one input")

    def finding(
        self, target: Target, parts: list[bytes], key: str, text: str, error: str | None = None
    ) -> Path | None:
        """Record a finding (its smallest input is kept); the input's path if it was saved."""
        findings = self.changed(target.name)["findings"]
        size = sum(map(len, parts))
        entry = findings.get(key)
        if entry is not None:
            entry["count"] += 1
            if size >= entry["size"]:
                return None
        path = self.save_input(self.out / "findings" / target.name, parts, stem=stem_of(key))
        path.with_suffix(".txt").write_text(text)
        findings[key] = {
            "count": (entry or {"count": 1})["count"],
            "size": size,
            "input": str(path.relative_to(self.out)),
            "error": (error or text.strip().splitlines()[-1])[:300],
        }
        self.log({"target": target.name, "finding": key, "size": size})
        self.save()
        return path

    def native(
        self, target: Target, how: str, ring: list[tuple[int, list[bytes]]], err: str
    ) -> None:
        """The child running a slice of ``target`` died (``how``: the signal, or ``exit N``).

        The input it was running (the ring's newest) is the finding, the inputs before it
        are saved next to it (``<finding>.before/``), and each is tried again in a fresh
        child: alone, then after the ones before it, to say whether the crash reproduces.
        """
        stats = self.changed(target.name)
        number = stats["slices"]
        stats["slices"] = number + 1
        if not ring:
            self.log({"target": target.name, "slice": number, "died": how, "inputs": 0})
            return
        seq, parts = ring[-1]
        stats["inputs"] += seq  # the child died before saving its count: the ring has it
        scratch = self.out / "inflight" / "replay.stderr"
        alone = replay_forked(target, [parts], scratch)
        after = alone or replay_forked(target, [p for _, p in ring], scratch)
        repro = (
            "alone" if alone else f"after the {len(ring) - 1} inputs before it" if after else "no"
        )
        key = f"native-{how.replace(' ', '')}@{crash_place(err)}"
        first = next((ln for ln in err.splitlines() if ln.strip()), how)
        head = (
            f"{how} in a child running {target.name} slice {number}, input {seq}; "
            f"reproduces in a fresh process: {repro}\n"
            f"replay: scripts/fuzz_campaign.py --malloc-check replay <this .parts file>\n\n"
        )
        path = self.finding(target, parts, key, head + err, error=f"{first} (reproduces: {repro})")
        if path is not None:
            before = path.with_name(path.stem + ".before")
            for old in before.glob("*.parts"):
                old.unlink()
            for i, (s, p) in enumerate(ring[:-1]):
                self.save_input(before, p, stem=f"{i:02}-input{s}")
        self.log({"target": target.name, "slice": number, "died": how, "inputs": seq, "key": key})

    @staticmethod
    def save_input(folder: Path, parts: list[bytes], stem: str | None = None) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        data = json.dumps([base64.b64encode(p).decode() for p in parts])
        path = folder / f"{stem or format(abs(hash(data)), 'x')}.parts"
        path.write_text(data)
        return path

    def log(self, record: dict[str, Any]) -> None:
        record = {"time": dt.datetime.now().strftime("%H:%M:%S"), **record}
        with (self.out / "log.jsonl").open("a") as f:
            f.write(json.dumps(record) + "\n")

    def begin(self) -> None:
        """Create the state file, with its epoch, if there is none yet."""
        with (self.out / "state.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self.state_path.exists():
                self.state = {"targets": {}, "epoch": f"{time.time_ns():x}"}
                self.epoch = self.state["epoch"]
                self.state_path.write_text(json.dumps(self.state, indent=1))

    def save(self) -> None:
        """Write the entries this process changed into the state file, under a lock and
        over what is there now, so campaigns run side by side on disjoint ``--only`` lists
        (one per core) share one state."""
        with (self.out / "state.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state: dict[str, Any] = {"targets": {}}
            if self.state_path.exists():
                state = json.loads(self.state_path.read_text())
            for name in self.touched:
                state["targets"][name] = self.state["targets"][name]
            if self.epoch:
                state["epoch"] = self.epoch
            tmp = self.state_path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state, indent=1))
            tmp.replace(self.state_path)


def stem_of(key: str) -> str:
    return key.replace("@", "-").replace(":", "-")


def replay_forked(target: Target, inputs: list[list[bytes]], stderr: Path) -> bool:
    """Whether running ``inputs`` in order through ``target`` in a fresh child kills it
    (a minute at most; exceptions are not crashes here)."""

    def child() -> None:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(60)
        for parts in inputs:
            with contextlib.suppress(Exception):
                target.run(parts)

    how = run_forked(child, stderr)
    return how is not None and how != "SIGALRM"


def deadline_of(until: str | None) -> float:
    if not until:
        return float("inf")
    hour, minute = map(int, until.split(":"))
    now = dt.datetime.now()
    when = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if when <= now:  # a time already past today is tomorrow's (a run across midnight)
        when += dt.timedelta(days=1)
    return time.time() + (when - now).total_seconds()


def cmd_run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = args.only.split(",") if args.only else list(TARGETS)
    deadline = deadline_of(args.until)
    deaths: dict[str, int] = {}  # native crashes per target in this run
    earlier = load_earlier(args.earlier)
    Campaign(out, args.slow, args.hang).begin()

    def inputs(campaign: Campaign, name: str) -> int:
        return int(campaign.stats(name)["inputs"]) + earlier.get(name, 0)

    while time.time() < deadline:
        campaign = Campaign(out, args.slow, args.hang)  # the state the last slice left
        todo = [
            n
            for n in names
            if inputs(campaign, n) < args.goal
            and campaign.pool(TARGETS[n])
            and deaths.get(n, 0) < MAX_DEATHS
        ]
        if not todo:
            break
        for name in sorted(todo, key=lambda n: inputs(campaign, n)):
            left = args.goal - inputs(campaign, name)
            seconds = min(args.slice, max(1.0, deadline - time.time()))
            if args.in_process:
                campaign.slice(TARGETS[name], seconds, left)
                campaign.save()
            elif not slice_forked(args, TARGETS[name], seconds, left):
                deaths[name] = deaths.get(name, 0) + 1
                if deaths[name] == MAX_DEATHS:
                    campaign.log({"target": name, "set aside": f"{MAX_DEATHS} native crashes"})
            if time.time() >= deadline:
                break
        if args.in_process:
            campaign.save()
    cmd_status(args)


def slice_forked(args: argparse.Namespace, target: Target, seconds: float, limit: int) -> bool:
    """One slice in a forked child that records its inputs in a ring; if the child dies (a
    native crash), the input it was running becomes a finding and the campaign goes on.
    Whether the child lived."""
    out = Path(args.out)
    inflight = out / "inflight"
    ring = Ring(inflight / f"{target.name}.ring")
    ring.clear()
    err = inflight / f"{target.name}.stderr"

    def child() -> None:
        campaign = Campaign(out, args.slow, args.hang)
        campaign.ring = ring
        campaign.slice(target, seconds, limit)
        campaign.save()

    how = run_forked(child, err)
    if how is not None:
        campaign = Campaign(out, args.slow, args.hang)
        campaign.native(target, how, ring.read(), err.read_text(errors="replace"))
        campaign.save()
    return how is None


def load_earlier(path: str | None) -> dict[str, int]:
    """Per target, the inputs earlier campaigns ran whose state is gone (``--earlier``)."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text())
        return {str(k): int(v) for k, v in data["targets"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        sys.exit(
            f"fuzz_campaign: --earlier {path}: {exc} (a JSON object with 'targets': "
            "{name: inputs}; pass --earlier '' to count none)"
        )


def cmd_status(args: argparse.Namespace) -> None:
    """Per target: inputs run by earlier campaigns (``--earlier``) and by this state, wall and
    CPU seconds (CPU counted since the campaign logged it), inputs per CPU second, pool size,
    slowest input (CPU s), findings."""
    path = Path(args.out) / "state.json"
    state = json.loads(path.read_text()) if path.exists() else {"targets": {}}
    earlier = load_earlier(args.earlier)
    print(
        f"{'target':24} {'earlier':>9} {'inputs':>9} {'total':>9} {'wall s':>7} {'cpu s':>7} "
        f"{'per cpu s':>9} {'pool':>5} {'slowest':>7}  findings"
    )
    total = before = 0
    for name in TARGETS:
        s = state["targets"].get(name, {"inputs": 0, "seconds": 0, "findings": {}})
        total += s["inputs"]
        before += earlier.get(name, 0)
        cpu = s.get("cpu_seconds", 0.0)
        rate = f"{s.get('cpu_inputs', 0) / cpu:.0f}" if cpu else "-"
        finds = ", ".join(f"{k} x{v['count']}" for k, v in s["findings"].items()) or "-"
        print(
            f"{name:24} {earlier.get(name, 0):>9} {s['inputs']:>9} "
            f"{earlier.get(name, 0) + s['inputs']:>9} {s['seconds']:>7.0f} {cpu:>7.0f} "
            f"{rate:>9} {s.get('pool', 0):>5} {s.get('max_input_s', 0):>7.3f}  {finds}"
        )
    print(f"{'total':24} {before:>9} {total:>9} {before + total:>9}")


def cmd_replay(args: argparse.Namespace) -> None:
    path = Path(args.input)
    target = TARGETS[args.target or path.parent.name]
    parts = [base64.b64decode(p) for p in json.loads(path.read_text())]
    out = target.run(parts)
    print(f"{target.name}: {len(out)} outputs, no exception")


def fails(target: Target, parts: list[bytes], key: str, hang: float) -> bool:
    """Whether ``parts`` still gives the finding ``key`` (an exception key, "hang", or
    "native": a forked child running it dies)."""
    if key == "native":
        return replay_forked(target, [parts], Path(tempfile.gettempdir()) / "fuzz-min.stderr")
    signal.setitimer(signal.ITIMER_VIRTUAL, hang)
    try:
        target.run(parts)
    except Hang:
        return key == "hang"
    except Exception as exc:  # noqa: BLE001  (the finding being minimized)
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        return crash_key(exc) == key
    signal.setitimer(signal.ITIMER_VIRTUAL, 0)
    return False


def cmd_minimize(args: argparse.Namespace) -> None:
    """Cut a finding's input down (ranges removed while the same finding remains)."""
    signal.signal(signal.SIGVTALRM, _alarm)
    path = Path(args.input)
    target = TARGETS[args.target or path.parent.name]
    parts = [base64.b64decode(p) for p in json.loads(path.read_text())]
    key = args.key or path.stem.replace("-", "@", 1)
    if key.startswith("native"):
        key = "native"
    elif key != "hang":
        key = key[: key.rfind("-")] + ":" + key[key.rfind("-") + 1 :]
    if not fails(target, parts, key, args.hang):
        sys.exit(f"{path} does not give {key}")
    for k in range(len(parts)):
        size = max(1, len(parts[k]) // 2)
        while size >= 1:
            pos, changed = 0, False
            while pos < len(parts[k]):
                trial = [*parts[:k], parts[k][:pos] + parts[k][pos + size :], *parts[k + 1 :]]
                if fails(target, trial, key, args.hang):
                    parts, changed = trial, True
                else:
                    pos += size
            if not changed:
                size //= 2
    out = path.with_name(path.stem + ".min.parts")
    out.write_text(json.dumps([base64.b64encode(p).decode() for p in parts]))
    print(f"{out}: {[len(p) for p in parts]} bytes")
    for p in parts:
        print(repr(p))


def cmd_seeds(args: argparse.Namespace) -> None:
    written = seedlib.build()
    for name, size in written.items():
        print(f"{name:26} {size:>8} bytes")
    print(f"{'total':26} {sum(written.values()):>8} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "fuzz"))
    parser.add_argument(
        "--earlier",
        default=str(ROOT / "bench" / "fuzz_earlier.json"),
        help="per-target inputs of earlier campaigns whose state is gone ('' for none)",
    )
    parser.add_argument(
        "--malloc-check",
        action="store_true",
        help="re-run under glibc's heap checks (MALLOC_CHECK_=3, libc_malloc_debug.so, "
        "PYTHONMALLOC=malloc): heap corruption aborts close to its cause; slower",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run the campaign (resumes from --out)")
    p.add_argument("--goal", type=int, default=1_000_000, help="inputs per target")
    p.add_argument("--until", help="stop at this local time, HH:MM")
    p.add_argument("--slice", type=float, default=60.0, help="seconds per target per round")
    p.add_argument("--slow", type=float, default=0.1, help="a slow input (CPU s; x10 if heavy)")
    p.add_argument(
        "--hang",
        type=float,
        default=0.2,
        help="an input is stopped after this many CPU s (x10 if heavy)",
    )
    p.add_argument("--only", help="comma-separated target names")
    p.add_argument(
        "--in-process",
        action="store_true",
        help="run the slices in this process (faster to start; a native crash ends the run "
        "and loses its input)",
    )
    p.set_defaults(func=cmd_run)
    sub.add_parser("status", help="inputs and findings per target").set_defaults(func=cmd_status)
    p = sub.add_parser("replay", help="run one saved input (a findings or pool file)")
    p.add_argument("input")
    p.add_argument("--target", help="default: the input's folder name")
    p.set_defaults(func=cmd_replay)
    p = sub.add_parser("minimize", help="cut a finding's input down")
    p.add_argument("input")
    p.add_argument("--target")
    p.add_argument("--key", help="default: from the file name")
    p.add_argument("--hang", type=float, default=1.0)
    p.set_defaults(func=cmd_minimize)
    sub.add_parser("seeds", help="re-cut tests/data/fuzz_seeds from ../shared").set_defaults(
        func=cmd_seeds
    )
    args = parser.parse_args()
    if args.malloc_check and os.environ.get("MALLOC_CHECK_") != "3":
        env = {**os.environ, **malloc_debug_env()}
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    args.func(args)


if __name__ == "__main__":
    main()
