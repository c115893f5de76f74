"""Per-byte cost of captures against a reference capture, measured back to back.

``bench/run.py REF.pcap --compare OTHER.pcap[,MORE.pcap]`` runs the same agentshark commands
(default ``agentshark,agentshark_calls``) on every capture, interleaved: each rep runs a tool on
each capture in turn before the next tool, so that the load of a shared machine falls on all of
them alike and the ratios hold even when the absolute figures drift. The table gives each
capture's MB/s (median of the reps) and its cost per MB against the reference (reference MB/s /
its MB/s: above 1 means a megabyte of it takes longer), and, when both ``agentshark``
(``exchanges``) and ``agentshark_calls`` ran, the API layer alone: the median wall of ``calls``
minus that of ``exchanges``, per MB, and its ratio to the reference's. Nothing here asserts a
timing.
"""

from __future__ import annotations

import argparse

from measure import Command, Result, Target, check_run, measure, warm_page_cache

COMPARE_TOOLS = ("agentshark", "agentshark_calls")


def measure_interleaved(
    targets: list[Target],
    cmds: list[dict[str, Command | str]],
    tools: list[str],
    args: argparse.Namespace,
) -> list[dict[str, Result]]:
    """Each tool on each capture, rep by rep (rep 1: tool 1 on every capture, tool 2 on every
    capture...; then rep 2), then the untimed check runs; one result map per capture."""
    for target in targets:
        print(f"{target.describe()}; reps {args.reps}")
        warm_page_cache(target.capture)
    results: list[dict[str, Result]] = []
    for target_cmds in cmds:
        per: dict[str, Result] = {}
        for tool in tools:
            cmd = target_cmds[tool]
            per[tool] = (
                Result(tool, "", skipped=cmd)
                if isinstance(cmd, str)
                else Result(tool, cmd.display())
            )
        results.append(per)
    for rep in range(args.reps):
        for tool in tools:
            for target, target_cmds, per in zip(targets, cmds, results, strict=True):
                cmd, res = target_cmds[tool], per[tool]
                if isinstance(cmd, str) or (res.samples and res.samples[-1].rc != 0):
                    continue
                sample = measure(cmd, args.timeout)
                res.samples.append(sample)
                print(
                    f"  rep {rep + 1} {tool} {target.capture.name}: {sample.wall:.2f} s, "
                    f"{sample.rss_kib / 1024:.0f} MB RSS, rc {sample.rc}",
                    flush=True,
                )
    for target, target_cmds, per in zip(targets, cmds, results, strict=True):
        for tool, res in per.items():
            cmd = target_cmds[tool]
            if res.ok and isinstance(cmd, Command):
                res.check = check_run(tool, cmd, args.timeout, target.exchanges)
    return results


def _api_layer(target: Target, per: dict[str, Result]) -> float | None:
    """Seconds per MB that ``calls`` takes beyond ``exchanges`` on this capture."""
    plain, calls = per.get("agentshark"), per.get("agentshark_calls")
    if plain is None or calls is None or not plain.ok or not calls.ok:
        return None
    return (calls.wall - plain.wall) / (target.size / 1e6)


def cost_table(targets: list[Target], results: list[dict[str, Result]]) -> None:
    """Print each capture's MB/s per tool and its cost per MB against the first capture."""
    ref, ref_results = targets[0], results[0]
    print(f"\nper-byte cost against {ref.capture.name} (same run, interleaved)")
    head = (
        f"{'capture':<34} {'tool':<19} {'wall s':>7} {'MB/s':>7} {'cost/MB':>8} "
        f"{'exch/s':>8} {'RSS MB':>7}"
    )
    print(head)
    print("-" * len(head))
    for target, per in zip(targets, results, strict=True):
        mb = target.size / 1e6
        for tool, res in per.items():
            if not res.ok:
                print(f"{target.capture.name:<34} {tool:<19} no figure (skipped or failed)")
                continue
            base = ref_results.get(tool)
            cost = f"{'-':>8}"
            if base is not None and base.ok:
                cost = f"{(ref.size / base.wall) / (target.size / res.wall):7.2f}x"
            xs = target.exchanges / res.wall if target.exchanges else 0.0
            print(
                f"{target.capture.name:<34} {tool:<19} {res.wall:7.2f} {mb / res.wall:7.1f} "
                f"{cost} {xs:8.0f} {res.rss_mb:7.0f}"
            )
    ref_layer = _api_layer(ref, ref_results)
    print("\nAPI layer (calls wall - exchanges wall, per MB of pcap):")
    for target, per in zip(targets, results, strict=True):
        layer = _api_layer(target, per)
        if layer is None:
            print(f"  {target.capture.name}: needs ok agentshark and agentshark_calls rows")
            continue
        ratio = f", {layer / ref_layer:.2f}x the reference's" if ref_layer and ref_layer > 0 else ""
        print(f"  {target.capture.name}: {layer * 1e3:.1f} ms/MB{ratio}")
    print(
        "(cost/MB = reference MB/s / this MB/s; MB = 10^6 bytes of pcap; wall time includes "
        "process start)"
    )
