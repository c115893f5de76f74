"""The figures of the fault note: ``python -m tests.faults.report [--seeds N]``.

Runs every fault of ``inject.FAULTS`` over every capture of ``cases.INPUTS`` (and the
keep-alive capture of ``tests/data/faults``) with seeds 1..N, and prints Markdown tables, per
fault and per protocol, of exchanges and calls:

- unaffected identical: clean exchanges whose bytes no fault touched, identical after the
  fault (goal >= 99.5%);
- affected recovered identical: touched, yet identical;
- affected marked incomplete: touched, and said so (``complete: false``, or absent with a new
  diagnostic or gap on its connection or source);
- complete but different: the violations (``wrong``, ``absent_silent``, ``extra_complete``;
  goal 0), over affected and unaffected alike;
- affected only through HPACK state: of the affected, those whose own bytes no fault
  touched but whose header blocks depend on a touched message's through the dynamic table
  (``harness.state_flags``), and how many of them came out identical anyway;
- affected only by a possible lost reset: HTTP/2 exchanges whose stream was open when
  client bytes (of another message, or of none) were lost (``harness.reset_flags``: a
  RST_STREAM may have been among them);
- unaffected identical by touched bytes alone: the first figure with those two kinds counted
  as unaffected (what the suite reported before it followed them), so both show.

``--violations`` lists each violation with the first field that differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Iterable

from tests.faults.cases import ALL_INPUTS
from tests.faults.harness import Result, Verdict, run_case
from tests.faults.inject import FAULTS


def figures(verdicts: Iterable[Verdict]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for v in verdicts:
        if v.outcome.startswith("extra"):
            out["extra"] += 1
        elif v.affected:
            out["affected"] += 1
            out["affected_identical"] += v.outcome == "identical"
            out["affected_marked"] += v.outcome in ("incomplete", "absent_diag")
            out["affected_retimed"] += v.outcome == "retimed"
            out["state"] += v.via_state
            out["state_identical"] += v.via_state and v.outcome == "identical"
            out["reset"] += v.via == "reset"
            out["reset_identical"] += v.via == "reset" and v.outcome == "identical"
        else:
            out["unaffected"] += 1
            out["unaffected_identical"] += v.outcome == "identical"
            out["unaffected_marked"] += v.outcome in ("incomplete", "absent_diag")
        out["violations"] += v.violation
    # the figure by touched bytes alone (state-only exchanges counted as unaffected)
    out["bytes_unaffected"] = out["unaffected"] + out["state"] + out["reset"]
    out["bytes_unaffected_identical"] = (
        out["unaffected_identical"] + out["state_identical"] + out["reset_identical"]
    )
    return out


def _pct(n: int, total: int) -> str:
    return f"{n}/{total} ({100 * n / total:.1f}%)" if total else "-"


HEADER = (
    "| {label} | unaffected identical | affected recovered identical | "
    "affected marked incomplete | affected retimed (a retransmitted copy's time) | "
    "complete but different | affected only through HPACK state (identical) | "
    "affected only by a possible lost reset (identical) | "
    "unaffected identical by touched bytes alone |\n|---|---|---|---|---|---|---|---|---|"
)


def table(label: str, rows: dict[str, list[Verdict]]) -> str:
    lines = [HEADER.format(label=label)]
    for name, verdicts in rows.items():
        f = figures(verdicts)
        lines.append(
            f"| {name} | {_pct(f['unaffected_identical'], f['unaffected'])} | "
            f"{_pct(f['affected_identical'], f['affected'])} | "
            f"{_pct(f['affected_marked'], f['affected'])} | "
            f"{_pct(f['affected_retimed'], f['affected'])} | {f['violations']} | "
            f"{f['state']} ({f['state_identical']}) | "
            f"{f['reset']} ({f['reset_identical']}) | "
            f"{_pct(f['bytes_unaffected_identical'], f['bytes_unaffected'])} |"
        )
    return "\n".join(lines)


def run_all(seeds: int, inputs: list[str] | None, faults: list[str] | None) -> list[Result]:
    return [
        run_case(inp.name, inp.path, inp.keylog, fault, seed, resends=inp.resends)
        for inp in ALL_INPUTS
        if not inputs or inp.name in inputs
        for fault in faults or FAULTS
        for seed in range(1, seeds + 1)
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeds 1..N per fault and capture")
    ap.add_argument("--inputs", help="comma-separated capture names (default: all)")
    ap.add_argument("--faults", help="comma-separated fault names (default: all)")
    ap.add_argument("--violations", action="store_true", help="list every violation")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    results = run_all(
        args.seeds,
        args.inputs.split(",") if args.inputs else None,
        args.faults.split(",") if args.faults else None,
    )
    for kind in ("exchange", "call"):
        by_fault: dict[str, list[Verdict]] = defaultdict(list)
        by_tag: dict[str, list[Verdict]] = defaultdict(list)
        every: list[Verdict] = []
        for r in results:
            for v in r.verdicts:
                if v.kind != kind:
                    continue
                by_fault[r.fault].append(v)
                every.append(v)
                for tag in v.tags:
                    by_tag[tag].append(v)
        print(f"\n### {kind}s, per fault\n")
        print(table("fault", {**by_fault, "all faults": every}))
        print(f"\n### {kind}s, per protocol (all faults)\n")
        print(table("protocol", dict(sorted(by_tag.items()))))
    runs = len(results)
    print(f"\n{runs} runs, seeds 1..{args.seeds}, {time.monotonic() - t0:.1f} s")
    if args.violations:
        print("\n### violations\n")
        for r in results:
            for v in r.violations():
                print(f"- {r.input} {r.fault} seed {r.seed}: {v.outcome} {v.what} {v.diff}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
