"""``agentshark batch`` on a real Dask LocalCluster of two worker processes: the corpus
captures (each file's report is the one of ``analyze``), split captures merged back into the
traces of the whole capture, re-runs skipping what is done, a corrupt input failing alone,
``--local``, ``file://`` URLs and usage errors."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed", reason="the batch extra (dask, distributed)")
from distributed import LocalCluster  # after the skip

from agentshark.cli import main

REPO = Path(__file__).resolve().parents[2]
OWN = REPO / "tests" / "data" / "captures"
RUNS = REPO / "tests" / "data" / "runs"
SPLIT = REPO / "tests" / "data" / "split"
EXAMPLE = REPO / "examples" / "agent_chat.pcap"
KEYLOGS = sorted(str(p) for p in [*OWN.glob("*/keys.log"), *OWN.glob("*/keylog.txt")])
Json = Any


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """A LocalCluster of two worker processes on 127.0.0.1, ports 55550-55599."""
    cluster = LocalCluster(  # type: ignore[no-untyped-call]  # distributed's, untyped
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        scheduler_port=55550,
        dashboard_address="127.0.0.1:55551",
        worker_port="55552:55570",
        port="55571:55599",  # the nannies'
        silence_logs=logging.ERROR,
    )
    try:
        yield str(cluster.scheduler_address)
    finally:
        cluster.close()


def batch(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["batch", *argv])
    return code, capsys.readouterr().err


def load(path: Path) -> Json:
    return json.loads(path.read_bytes())


def manifest(out: Path) -> dict[str, dict[str, Json]]:
    return {f["url"]: f for f in load(out / "manifest.json")["files"]}


def test_the_corpus_on_two_workers(
    tmp_path: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every capture of tests/data (folders expanded), one task each: each report is the
    one `agentshark analyze` writes, with its tables. The only run seen in several files is
    proxy_sdk_run's, through agentshark proxy: the SDKs' side (client.pcap), the proxy's
    recording (recording.har) and the upstream side (capture.pcap) join by the response ids
    of the replayed Gemini responses; the stubs' counters (call_1, ctx-1...) join nothing."""
    out = tmp_path / "out"
    keys = [a for k in KEYLOGS for a in ("--keylog", k)]
    code, err = batch(capsys, str(OWN), str(RUNS), str(EXAMPLE), "--out", str(out),
                      "--scheduler", scheduler, *keys)  # fmt: skip
    assert code == 0, err
    files = manifest(out)
    assert len(files) >= 70
    assert {f["status"] for f in files.values()} == {"done"}
    assert f"{len(files)} inputs: {len(files)} done, 0 skipped" in err
    for url, entry in sorted(files.items())[::7]:  # every 7th: the report of analyze
        alone = tmp_path / "alone.json"
        args = ["analyze", url, "--format", "json", "--no-progress", "-o", str(alone), *keys]
        assert main([*args, "--jobs", "1"]) in (0, 1)
        assert (out / entry["report"]).read_bytes() == alone.read_bytes(), url
        assert (out / entry["tables"] / "calls.parquet").is_file()
    merged = load(out / "merged.json")
    by_key = {f["key"]: url for url, f in files.items()}
    proxy = {"client.pcap", "recording.har", "capture.pcap"}
    assert merged["joins"]
    for join in merged["joins"]:
        assert join["key"] == "response_id"
        seen = [by_key[k] for k in join["files"]]
        assert {Path(u).parent.name for u in seen} == {"proxy_sdk_run"}
        assert {Path(u).name for u in seen} == proxy, join
    for trace in merged["traces"]:  # each Gemini call: one span, seen in the three files
        for group in trace["same_calls"]:
            assert len(group) == 3
            models = [s for s in trace["spans"] if s["kind"] == "model"]
            assert [s["call_id"] for s in models] == [group[0]]
            assert models[0]["seen_as"] == group[1:]
    joined = sum(len(j["files"]) - 1 for j in merged["joins"])
    assert len(merged["traces"]) == sum(f["traces"] for f in files.values()) - joined
    assert merged["schema"] == "agentshark.report/1"


def _identities(report: Json, key: str = "") -> dict[str, tuple[Json, ...]]:
    """Call and exchange ids -> what names them in any capture of the same packets."""
    exchanges = {x["id"]: x for x in report["exchanges"]}
    out: dict[str, tuple[Json, ...]] = {}
    for x in report["exchanges"]:
        req = x["request"] or {}
        out[key + x["id"]] = ("exchange", req.get("method"), req.get("url"), req.get("started"))
    for c in report["calls"]:
        req = exchanges[c["exchange_id"]]["request"]
        out[key + c["id"]] = ("call", c["api"], c["operation"], req["url"], req["started"])
    return out


def _runs(traces: list[Json], names: dict[str, tuple[Json, ...]]) -> set[frozenset[Json]]:
    return {frozenset(names[c] for c in t["calls"]) for t in traces}


@pytest.mark.parametrize(
    ("case", "capture", "key"),
    [
        ("queue_agent_redis_traceparent", OWN / "queue_agent_redis_traceparent", "traceparent"),
        ("mcp_streamable_sessions", OWN / "mcp_streamable_sessions", "mcp_session"),
    ],
)
def test_a_split_capture_merges_into_the_traces_of_the_whole(
    tmp_path: Path,
    scheduler: str,
    capsys: pytest.CaptureFixture[str],
    case: str,
    capture: Path,
    key: str,
) -> None:
    """One run seen from two vantage points (scripts/split_capture.py: the capture's TCP
    connections in two pcaps): the merge rebuilds the traces of the whole capture, and says
    which id joined the two files."""
    parts = SPLIT / case
    record = load(parts / "split.json")
    import hashlib

    whole_bytes = (capture / "capture.pcap").read_bytes()
    assert record["source"]["sha256"] == hashlib.sha256(whole_bytes).hexdigest()
    files = [str(parts / p["file"]) for p in record["parts"].values()]
    out = tmp_path / "out"
    code, err = batch(capsys, *files, "--out", str(out), "--scheduler", scheduler)
    assert code == 0, err
    merged = load(out / "merged.json")
    entries = manifest(out)
    names: dict[str, tuple[Json, ...]] = {}
    for url in files:
        entry = entries[url]
        names.update(_identities(load(out / entry["report"]), f"{entry['key']}:"))
    whole = tmp_path / "whole.json"
    assert main(["analyze", str(capture / "capture.pcap"), "--format", "json", "-o",
                 str(whole), "--no-progress"]) == 0  # fmt: skip
    report = load(whole)
    assert _runs(merged["traces"], names) == _runs(report["traces"], _identities(report))
    joins = [j for j in merged["joins"] if j["key"] == key]
    assert joins, merged["joins"]
    assert sorted(joins[0]["files"]) == sorted(entries[u]["key"] for u in files)
    joined = [t for t in merged["traces"] if len(t["files"]) == 2]
    assert joined
    cross = [e for t in joined for e in t["evidence"] if e.get("cross_file")]
    assert {e["key"] for e in cross} >= {key}
    agents = [s for t in joined for s in t["spans"] if s["kind"] == "agent"]
    assert len(agents) == len(joined)  # one agent span per merged run
    if key == "traceparent":
        assert joined[0]["trace_id"] == joins[0]["value"] == report["traces"][0]["trace_id"]


def test_a_rerun_skips_what_is_done(
    tmp_path: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Done inputs are found by the SHA-256 of their bytes: a copy under another name is
    skipped too; other options do them again."""
    out = tmp_path / "out"
    first = RUNS / "seed004_shenzhen" / "capture.pcap"
    assert batch(capsys, str(first), "--out", str(out), "--scheduler", scheduler)[0] == 0
    report = out / manifest(out)[str(first)]["report"]
    stamp = report.stat().st_mtime_ns
    copy = tmp_path / "renamed.pcap"
    copy.write_bytes(first.read_bytes())
    code, err = batch(capsys, str(first), str(copy), "--out", str(out), "--scheduler", scheduler)
    assert code == 0
    assert "0 done, 2 skipped (done before)" in err
    assert {f["status"] for f in manifest(out).values()} == {"skipped"}
    assert report.stat().st_mtime_ns == stamp
    code, err = batch(capsys, str(first), "--out", str(out), "--scheduler", scheduler,
                      "--max-body", "1M")  # fmt: skip
    assert "1 done, 0 skipped" in err


def test_a_corrupt_input_fails_alone(
    tmp_path: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "corrupt.pcap"
    bad.write_bytes(b"\x00garbage, not a capture\xff" * 40)
    good = [str(p) for p in sorted(RUNS.glob("*/capture.pcap"))]
    out = tmp_path / "out"
    code, err = batch(capsys, good[0], str(bad), *good[1:], "--out", str(out),
                      "--scheduler", scheduler)  # fmt: skip
    assert code == 1
    said = [line for line in err.splitlines() if line.startswith(f"agentshark: {bad}")]
    assert len(said) == 1 and "not a format agentshark reads" in said[0]
    files = manifest(out)
    assert files[str(bad)]["status"] == "failed"
    assert "not a format agentshark reads" in files[str(bad)]["error"]
    assert all(files[g]["status"] == "done" for g in good)
    assert [f["status"] for f in load(out / "merged.json")["batch"]["files"]].count("done") == 5
    code, err = batch(capsys, *good, str(bad), "--out", str(out), "--scheduler", scheduler)
    assert code == 1
    assert "0 done, 5 skipped (done before), 1 failed" in err  # a failed input is tried again


def test_local_cluster_and_file_urls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--local 2 starts (and closes) a LocalCluster of two processes; a file:// URL of a
    folder is its inputs; progress is a line per input on stderr, off with --no-progress."""
    out = tmp_path / "out"
    url = (RUNS).as_uri()
    code, err = batch(capsys, url, "--out", str(out), "--local", "2", "--ports", "55500:55540")
    assert code == 0, err
    assert "on 2 Dask workers (dashboard http://127.0.0.1:55501/status)" in err
    assert sum(line.startswith("[") for line in err.splitlines()) == 5
    assert "[5/5]" in err
    code, err = batch(capsys, url, "--out", str(out), "--local", "1", "--ports", "55500:55540",
                      "--no-progress", "--dashboard", "none")  # fmt: skip
    assert code == 0
    assert err.splitlines() == [err.strip()] and "5 skipped" in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["missing.pcap"], "missing.pcap: no such file or folder"),
        ([str(RUNS / "*.nothing")], "the pattern matches no file"),
        ([str(REPO / "docs")], "the folder holds no capture"),
        ([str(EXAMPLE), "--keylog", "nope.log"], "--keylog nope.log: no such file"),
        ([str(EXAMPLE), "--scheduler", "tcp://127.0.0.1:55549"], "cannot connect"),
    ],
)
def test_bad_usage_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    code, err = batch(capsys, *argv, "--out", str(tmp_path / "out"))
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and said in err, err


def test_out_must_be_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    code, err = batch(capsys, str(EXAMPLE), "--out", str(tmp_path / "file"))
    assert code == 2 and "is a file" in err
    code, err = batch(capsys, str(EXAMPLE), "--out", str(tmp_path / "no" / "such"))
    assert code == 2 and "does not exist" in err


def test_without_dask_the_extra_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, err = batch(capsys, str(EXAMPLE), "--out", str(tmp_path))
    assert code == 2
    assert err == (
        "agentshark: batch needs distributed, which is not installed: "
        "pip install 'agentshark[batch]'\n"
    )


def test_ctrl_c_says_how_far_it_got(
    tmp_path: Path,
    scheduler: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("agentshark.batch.run.run_batch", interrupted)
    code, err = batch(capsys, str(EXAMPLE), "--out", str(tmp_path), "--scheduler", scheduler)
    assert code == 130
    assert "interrupted" in err and "manifest.json" in err and "Traceback" not in err


def test_the_dashboard_serves(scheduler: str) -> None:
    """bokeh comes with the extra: the cluster's dashboard answers (the tasks are there)."""
    import urllib.request

    with urllib.request.urlopen("http://127.0.0.1:55551/status", timeout=10) as page:
        assert page.status == 200
