"""Measure agentshark against the reading floor and tshark on one capture.

    python3 bench/run.py [CAPTURE] [--reps 3] [--tools agentshark,bare_loop,...]
    python3 bench/run.py bench/out/bench_tls13_h1.pcap [--keylog K] [--baseline CLEAR.pcap]
    python3 bench/run.py REF.pcap --compare OTHER.pcap[,...] [--tools agentshark,agentshark-calls]

CAPTURE defaults to bench/out/bench_h1.pcap; its counts come from ``<capture>.truth.json``
(written by ``bench/make_capture.py``). Each tool runs as its own child process, so the wall
time includes process start (page cache warm) and the peak RSS is that command's own (``/usr/bin/
time -v``, or ``os.wait4`` when GNU time is absent). With ``--reps N`` the median wall time is
kept (peak RSS: the largest). Prints a table (MB/s, packets/s, exchanges/s, peak RSS), the
ratios of agentshark to the others, and appends one JSON line per tool to
``bench/out/results.jsonl``. Nothing here asserts a timing.

Tools (``--tools``, comma-separated; default all):
  agentshark      agentshark exchanges FILE --format json > /dev/null
  agentshark_calls    agentshark calls FILE --format json > /dev/null
  agentshark_analyze  agentshark analyze FILE --format json > /dev/null
                  (every agentshark row with --jobs 1, or the --jobs N given: the rows
                  above measured one process; bench/jobs.py compares numbers of jobs)
                  (each agentshark row is checked by one more, untimed run: exchanges against
                  the truth; for calls/analyze the calls by API and the exchanges recognized
                  as an API that is not parsed)
  bare_loop       python bench/bare_loop.py FILE (record header + f.read per record)
  tshark_read     tshark -r FILE -q                     (reads only, no dissection)
  tshark_filter   tshark -r FILE -d ... -Y http -q      (dissects, prints nothing)
  tshark_fields   tshark ... -Y http -T fields -e http.request.method -e http.response.code
                  -e http.file_data | wc -l             (bodies as fields; lines = 2 x exchanges)
  tshark_json     tshark ... -Y http -T json | wc -c
A tool that is missing or fails gets a row saying so (with its stderr tail); the run goes on.
Tool names take ``-`` or ``_`` alike (``agentshark-calls``).

``--compare OTHER.pcap[,MORE.pcap]`` (``bench/compare.py``): the same tools (default
``agentshark,agentshark_calls``) on CAPTURE and each other capture, interleaved rep by rep, then
each one's cost per MB against CAPTURE and the API layer (calls minus exchanges) per MB: the
per-byte cost of one API family's traffic against another's, measured back to back.

TLS captures (``--keylog K``, found by itself as ``<capture>.keys.log``): agentshark gets
``--keylog K``; tshark gets ``-o tls.keylog_file:K -d tcp.port==PORT,tls``, filter
``http || http2``, and ``tshark_fields`` prints ``-e http.file_data -e http2.data.data``. The
same tools then run on the cleartext capture of the same workload (``--baseline``, default
bench/out/bench_h1.pcap, ``--baseline none`` to skip), with the same filter and fields, and the
decryption cost is printed per tool: cleartext MB/s / TLS MB/s and cleartext exchanges/s /
TLS exchanges/s (for an h2 capture that also counts HTTP/2 against HTTP/1.1).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import compare
from measure import (
    GNU_TIME,
    Command,
    Result,
    Target,
    check_run,
    default_keylog,
    measure,
    warm_page_cache,
)

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
OUT_DIR = BENCH_DIR / "out"
DEFAULT_CAPTURE = OUT_DIR / "bench_h1.pcap"
TSHARK_TOOLS = ("tshark_read", "tshark_filter", "tshark_fields", "tshark_json")
ALL_TOOLS = ("agentshark", "agentshark_calls", "agentshark_analyze", "bare_loop", *TSHARK_TOOLS)


# --------------------------------------------------------------------------- the tools


def find_agentshark(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    venv = REPO_ROOT / ".venv" / "bin" / "agentshark"
    return str(venv) if venv.exists() else shutil.which("agentshark")


def bare_loop_python() -> str:
    venv = REPO_ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def commands(
    capture: Path,
    port: int,
    args: argparse.Namespace,
    keylog: Path | None = None,
    *,
    tls_fields: bool = False,
) -> dict[str, Command | str]:
    """Each tool's command, or why it is skipped. With ``keylog`` the capture is TLS: tshark
    decrypts (``-d tcp.port==PORT,tls``) and agentshark gets ``--keylog``. ``tls_fields`` (set
    for both captures of a decryption-cost comparison) makes tshark filter ``http || http2`` and
    print the body fields of both versions, so that the two captures run the same command."""
    cap = shlex.quote(str(capture))
    out: dict[str, Command | str] = {}
    agentshark = find_agentshark(args.agentshark)
    keylog_opt = ["--keylog", str(keylog)] if keylog else []
    keylog_opt += ["--jobs", str(args.jobs)]  # options of every agentshark row: 1 unless asked
    out["agentshark"] = (
        Command(
            "agentshark", [agentshark, "exchanges", str(capture), *keylog_opt, "--format", "json"]
        )
        if agentshark
        else "agentshark not found (.venv/bin or PATH)"
    )
    out["agentshark_calls"] = (
        Command(
            "agentshark_calls",
            [agentshark, "calls", str(capture), *keylog_opt, "--format", "json"],
        )
        if agentshark
        else "agentshark not found (.venv/bin or PATH)"
    )
    out["agentshark_analyze"] = (
        Command(
            "agentshark_analyze",
            [agentshark, "analyze", str(capture), *keylog_opt, "--format", "json"],
        )
        if agentshark
        else "agentshark not found (.venv/bin or PATH)"
    )
    out["bare_loop"] = Command(
        "bare_loop",
        [bare_loop_python(), str(BENCH_DIR / "bare_loop.py"), str(capture)],
        stdout_to_null=False,
    )
    tshark = shutil.which("tshark")
    if tshark is None:
        reason = "tshark is not installed (bench/setup.sh --tshark installs it)"
        for tool in TSHARK_TOOLS:
            out[tool] = reason
        return out
    if keylog:
        decode = ["-o", f"tls.keylog_file:{keylog}", "-d", f"tcp.port=={port},tls"]
    else:
        decode = ["-d", f"tcp.port=={port},http"]
    if keylog or tls_fields:
        display = "http || http2"
        fields = "-e http.file_data -e http2.data.data"
    else:
        display = "http"
        fields = "-e http.request.method -e http.response.code -e http.file_data"
    shell_decode = shlex.join(decode)
    shell_display = shlex.quote(display)
    out["tshark_read"] = Command("tshark_read", [tshark, "-r", str(capture), "-q"])
    out["tshark_filter"] = Command(
        "tshark_filter", [tshark, "-r", str(capture), *decode, "-Y", display, "-q"]
    )
    out["tshark_fields"] = Command(
        "tshark_fields",
        shell=f"tshark -r {cap} {shell_decode} -Y {shell_display} -T fields {fields} | wc -l",
        stdout_to_null=False,
        note="output: lines",
    )
    out["tshark_json"] = Command(
        "tshark_json",
        shell=f"tshark -r {cap} {shell_decode} -Y {shell_display} -T json | wc -c",
        stdout_to_null=False,
        note="output: bytes of JSON",
    )
    return out


# --------------------------------------------------------------------------- reporting


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        model = next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")
            ),
            "",
        )
    tshark = shutil.which("tshark")
    tshark_version = ""
    if tshark:
        first = subprocess.run(
            [tshark, "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()
        tshark_version = first[0] if first else ""
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "tshark": tshark_version,
        "rss_from": "/usr/bin/time -v" if GNU_TIME.exists() else "os.wait4 rusage",
    }


def check_output(tool: str, stdout: str, truth: dict[str, Any], exchanges: int) -> str:
    """A one-line sanity check of what the tool printed against the truth file."""
    text = stdout.strip()
    if tool == "bare_loop" and text:
        packets = json.loads(text)["packets"]
        return f"{packets} packets" + (
            "" if packets == truth.get("packets") else f" (truth: {truth.get('packets')})"
        )
    if tool == "tshark_fields" and text.isdigit() and "HTTP/2" in truth.get("http_versions", {}):
        return f"{int(text)} lines (one per packet with HTTP/2 frames)"
    if tool == "tshark_fields" and text.isdigit():
        want = 2 * exchanges
        return f"{int(text)} lines" + (
            " = 2 x exchanges" if int(text) == want else f" (2 x exchanges = {want})"
        )
    if tool == "tshark_json" and text.isdigit():
        return f"{int(text) / 1e9:.2f} GB of JSON"
    return ""


def measure_tools(
    target: Target, tools: list[str], cmds: dict[str, Command | str], args: argparse.Namespace
) -> dict[str, Result]:
    print(f"{target.describe()}; reps {args.reps}")
    warm_page_cache(target.capture)
    results: dict[str, Result] = {}
    for tool in tools:
        cmd = cmds[tool]
        if isinstance(cmd, str):
            results[tool] = Result(tool, "", skipped=cmd)
            print(f"  {tool}: skipped: {cmd}")
            continue
        res = results[tool] = Result(tool, cmd.display())
        for rep in range(args.reps):
            sample = measure(cmd, args.timeout)
            res.samples.append(sample)
            print(
                f"  {tool} rep {rep + 1}: {sample.wall:.2f} s, {sample.rss_kib / 1024:.0f} MB "
                f"RSS, rc {sample.rc}",
                flush=True,
            )
            if sample.rc != 0:
                break
        if res.ok:
            res.check = check_run(tool, cmd, args.timeout, target.exchanges)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[2:]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("capture", nargs="?", type=Path, default=DEFAULT_CAPTURE)
    ap.add_argument("--truth", type=Path, help="default: <capture>.truth.json")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument(
        "--tools",
        help="comma-separated ('-' or '_' alike: agentshark-calls); default all, or "
        f"{','.join(compare.COMPARE_TOOLS)} with --compare",
    )
    ap.add_argument(
        "--compare",
        help="comma-separated captures measured with CAPTURE, interleaved rep by rep, for the "
        "per-byte cost of each against CAPTURE (bench/compare.py); each TLS one's key log is "
        "<capture>.keys.log",
    )
    ap.add_argument("--agentshark", help="the agentshark executable")
    ap.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="agentshark --jobs N (default 1; bench/jobs.py compares N)",
    )
    ap.add_argument("--port", type=int, help="HTTP port for tshark -d (default: from the truth)")
    ap.add_argument(
        "--keylog", type=Path, help="NSS key log of a TLS capture (default: <capture>.keys.log)"
    )
    ap.add_argument(
        "--baseline",
        default=str(DEFAULT_CAPTURE),
        help="cleartext capture measured with a TLS one, for the decryption cost ('none': skip)",
    )
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per command")
    ap.add_argument("--results", type=Path, default=OUT_DIR / "results.jsonl")
    args = ap.parse_args()

    capture: Path = args.capture.resolve()
    if not capture.exists():
        print(
            f"{capture} does not exist: make it with python3 bench/make_capture.py", file=sys.stderr
        )
        return 2
    keylog = args.keylog.resolve() if args.keylog else default_keylog(capture)
    if keylog is not None and not keylog.exists():
        print(f"{keylog} does not exist", file=sys.stderr)
        return 2
    default_tools = compare.COMPARE_TOOLS if args.compare else ALL_TOOLS
    tools = [
        t.strip().replace("-", "_")
        for t in (args.tools or ",".join(default_tools)).split(",")
        if t.strip()
    ]
    unknown = set(tools) - set(ALL_TOOLS)
    if unknown:
        ap.error(f"unknown tools: {', '.join(sorted(unknown))}")
    if args.compare:
        return run_compare(capture, keylog, tools, args)

    baseline: Target | None = None
    if keylog is not None and args.baseline != "none":
        base_path = Path(args.baseline).resolve()
        if base_path.exists() and base_path != capture:
            baseline = Target.load(base_path, None, None, None, "baseline")
        else:
            print(f"baseline {base_path} is missing: no decryption cost (make_capture.py)")
    target = Target.load(capture, args.truth, args.port, keylog, "tls" if baseline else "capture")
    cmds = commands(capture, target.port, args, keylog, tls_fields=baseline is not None)
    results = measure_tools(target, tools, cmds, args)
    report(results, target, args)
    if baseline is None:
        return 0
    print()
    base_cmds = commands(baseline.capture, baseline.port, args, None, tls_fields=True)
    base_results = measure_tools(baseline, tools, base_cmds, args)
    report(base_results, baseline, args)
    decryption_cost(target, results, baseline, base_results)
    return 0


def run_compare(
    capture: Path, keylog: Path | None, tools: list[str], args: argparse.Namespace
) -> int:
    """``--compare``: CAPTURE (the reference) and each other capture, interleaved, then each
    one's table and the per-byte cost table."""
    targets = [Target.load(capture, args.truth, args.port, keylog, "reference")]
    for name in (n.strip() for n in args.compare.split(",") if n.strip()):
        path = Path(name).resolve()
        if not path.exists():
            print(f"{path} does not exist: make it with python3 bench/make_capture.py")
            return 2
        targets.append(Target.load(path, None, None, default_keylog(path), "compare"))
    cmds = [commands(t.capture, t.port, args, t.keylog) for t in targets]
    results = compare.measure_interleaved(targets, cmds, tools, args)
    for target, per in zip(targets, results, strict=True):
        print(f"\n{target.describe()}")
        report(per, target, args)
    compare.cost_table(targets, results)
    return 0


def report(results: dict[str, Result], target: Target, args: argparse.Namespace) -> None:
    size, packets, exchanges = target.size, target.packets, target.exchanges
    head = (
        f"{'tool':<19} {'wall s':>8} {'MB/s':>9} {'kpkt/s':>9} {'exch/s':>9} {'RSS MB':>8}  check"
    )
    print()
    print(head)
    print("-" * len(head))
    info = machine()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    lines: list[str] = []
    for tool, res in results.items():
        row: dict[str, Any] = {
            "ts": stamp,
            "capture": str(target.capture),
            "pcap_bytes": size,
            "packets": packets,
            "exchanges": exchanges,
            "keylog": str(target.keylog) if target.keylog else None,
            "role": target.role,
            "tool": tool,
            "command": res.command,
            "reps": len(res.samples),
            "machine": info,
        }
        if res.skipped:
            print(f"{tool:<19} skipped: {res.skipped}")
            row.update(ok=False, skipped=res.skipped)
        elif not res.ok:
            last = res.samples[-1]
            print(f"{tool:<19} FAILED (rc {last.rc}); stderr tail:")
            for line in last.stderr_tail.splitlines():
                print(f"    | {line}")
            row.update(
                ok=False,
                rc=last.rc,
                stderr_tail=last.stderr_tail,
                wall_s=[round(s.wall, 4) for s in res.samples],
            )
        else:
            wall = res.wall
            check = res.check or check_output(tool, res.samples[-1].stdout, target.truth, exchanges)
            print(
                f"{tool:<19} {wall:8.2f} {size / 1e6 / wall:9.1f} {packets / wall / 1e3:9.1f} "
                f"{exchanges / wall:9.0f} {res.rss_mb:8.0f}  {check}"
            )
            row.update(
                ok=True,
                wall_median_s=round(wall, 4),
                wall_s=[round(s.wall, 4) for s in res.samples],
                mb_per_s=round(size / 1e6 / wall, 2),
                packets_per_s=round(packets / wall),
                exchanges_per_s=round(exchanges / wall),
                peak_rss_mb=round(res.rss_mb, 1),
                check=check,
            )
        lines.append(json.dumps(row))
    print(
        "(MB = 10^6 bytes of pcap; wall time includes process start; RSS is the peak of the "
        "command's own process tree)"
    )

    base = results.get("agentshark")
    print()
    if base is None:
        print("ratios: agentshark was not measured")
    elif not base.ok:
        print("ratios: agentshark did not run successfully, no ratios")
    else:
        for tool, res in results.items():
            if tool != "agentshark" and res.ok:
                print(
                    f"agentshark vs {tool:<19} MB/s ratio {res.wall / base.wall:7.3f}  "
                    f"(agentshark takes {base.wall / res.wall:6.2f}x its time), "
                    f"RSS ratio {base.rss_mb / res.rss_mb:.2f}"
                )
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as f:
        f.writelines(line + "\n" for line in lines)
    print(f"\nappended {len(lines)} results to {args.results}")


def decryption_cost(
    tls: Target, tls_results: dict[str, Result], clear: Target, clear_results: dict[str, Result]
) -> None:
    """Per tool, how much more a megabyte and an exchange of the TLS capture cost than of the
    cleartext one (both measured in this run, with the same tshark filter and fields)."""
    print(f"\ndecryption cost: {tls.capture.name} against {clear.capture.name} (this run)")
    head = (
        f"{'tool':<19} {'TLS MB/s':>9} {'clear MB/s':>10} {'cost/MB':>8} "
        f"{'TLS exch/s':>10} {'clear exch/s':>12} {'cost/exch':>9} {'RSS TLS/clear':>14}"
    )
    print(head)
    print("-" * len(head))
    for tool, res in tls_results.items():
        other = clear_results.get(tool)
        if not res.ok or other is None or not other.ok:
            why = "TLS run failed" if not res.ok else "cleartext run failed"
            print(f"{tool:<19} no ratio ({why})")
            continue
        t_mbs, c_mbs = tls.size / 1e6 / res.wall, clear.size / 1e6 / other.wall
        t_xs = tls.exchanges / res.wall if tls.exchanges else 0.0
        c_xs = clear.exchanges / other.wall if clear.exchanges else 0.0
        per_x = f"{c_xs / t_xs:8.2f}x" if t_xs and c_xs else f"{'-':>9}"
        print(
            f"{tool:<19} {t_mbs:9.1f} {c_mbs:10.1f} {c_mbs / t_mbs:7.2f}x "
            f"{t_xs:10.0f} {c_xs:12.0f} {per_x} {res.rss_mb / other.rss_mb:14.2f}"
        )
    print("(cost = cleartext rate / TLS rate: how many times longer a MB or an exchange takes)")


if __name__ == "__main__":
    sys.exit(main())
