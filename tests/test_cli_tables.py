"""``agentshark export parquet|duckdb`` on the command line: what ``-o`` may be (said in one
line, exit 2, before any input is read), ``--force``, the missing extra, an interrupted or
failing export leaving nothing behind, and the rows written."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest

from agentshark.cli import main
from agentshark.output.tables import writer as writer_module
from agentshark.output.tables.schema import TABLES
from tests.helpers import ROOT

CAPTURE = str(ROOT / "tests" / "data" / "runs" / "seed004_shenzhen" / "capture.pcap")


def export(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["export", *argv, "--no-progress"])
    captured = capsys.readouterr()
    assert captured.out == ""  # the tables go to -o only
    return code, captured.err


def test_parquet_writes_every_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "new"  # created
    code, err = export(capsys, "parquet", CAPTURE, "-o", str(out))
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t.name}.parquet" for t in TABLES)
    assert pq.read_table(out / "calls.parquet").num_rows == 2
    assert err == (
        f"agentshark: wrote {out}: 3 exchanges, 2 calls, 6 messages, 10 parts, 1 tool_calls, "
        "4 spans, 1 traces, 2 connections, 1 sources\n"
    )
    schema = pq.read_schema(out / "calls.parquet")
    assert schema.field("gen_ai_usage_input_tokens").metadata[b"description"]


def test_duckdb_tables_carry_their_documentation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "x.duckdb"
    code, _ = export(capsys, "duckdb", CAPTURE, "-o", str(db))
    assert code == 0
    assert not list(tmp_path.glob("*.partial*"))
    con = duckdb.connect(str(db), read_only=True)
    comments = dict(
        con.execute(
            "SELECT table_name || '.' || column_name, comment FROM duckdb_columns() "
            "WHERE table_name = 'calls'"
        ).fetchall()
    )
    assert comments["calls.gen_ai_request_model"] == "model asked for"
    types = dict(
        con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'calls'"
        ).fetchall()
    )
    assert types["started"] == "TIMESTAMP WITH TIME ZONE"
    assert types["gen_ai_usage_input_tokens"] == "BIGINT"
    assert types["complete"] == "BOOLEAN"
    assert types["usage_raw"] == "JSON"
    assert types["gen_ai_response_finish_reasons"] == "VARCHAR[]"


@pytest.mark.parametrize("fmt", ["parquet", "duckdb"])
def test_an_earlier_export_is_replaced_only_with_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    target = tmp_path / ("t" if fmt == "parquet" else "t.duckdb")
    assert export(capsys, fmt, CAPTURE, "-o", str(target))[0] == 0
    before = sorted((p.name, p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    code, err = export(capsys, fmt, CAPTURE, "-o", str(target))
    assert code == 2
    assert err.startswith(f"agentshark: -o {target}: ")
    assert "add --force to replace" in err and err.count("\n") == 1
    assert sorted((p.name, p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == before
    assert export(capsys, fmt, CAPTURE, "-o", str(target), "--force")[0] == 0


def test_parquet_leaves_other_files_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert export(capsys, "parquet", CAPTURE, "-o", str(tmp_path))[0] == 0  # no table there yet
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("fmt", "where", "said"),
    [
        ("parquet", "missing/dir", "the directory {tmp}/missing does not exist (create it first"),
        ("duckdb", "missing/x.duckdb", "the directory {tmp}/missing does not exist"),
        ("parquet", "file.txt", "is a file; give a directory"),
        ("duckdb", "", "is a directory; give a file name"),
    ],
)
def test_output_that_cannot_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, where: str, said: str
) -> None:
    (tmp_path / "file.txt").write_text("x")
    target = tmp_path / where if where else tmp_path
    code, err = export(capsys, fmt, CAPTURE, "-o", str(target))
    assert code == 2
    assert said.format(tmp=tmp_path) in err and err.count("\n") == 1
    assert "Traceback" not in err


def test_a_missing_keylog_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = export(capsys, "duckdb", CAPTURE, "--keylog", "nope.log", "-o", str(tmp_path / "x"))
    assert code == 2 and "--keylog nope.log: no such file" in err


@pytest.mark.parametrize(("fmt", "module"), [("parquet", "pyarrow"), ("duckdb", "duckdb")])
def test_without_the_sql_extra(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fmt: str,
    module: str,
) -> None:
    real = builtins.__import__

    def no_module(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == module:
            raise ImportError(f"No module named {module!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_module)
    code, err = export(capsys, fmt, CAPTURE, "-o", str(tmp_path / "out"))
    assert code == 2
    assert err == (
        f"agentshark: export {fmt} needs {module}, which is not installed: "
        "pip install 'agentshark[sql]'\n"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fmt", ["parquet", "duckdb"])
@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError(28, "No space left on device")])
def test_a_cut_export_leaves_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fmt: str,
    failure: BaseException | type[BaseException],
) -> None:
    target = tmp_path / ("t" if fmt == "parquet" else "t.duckdb")
    assert export(capsys, fmt, CAPTURE, "-o", str(target))[0] == 0
    kept = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}

    def failing(self: writer_module.TableWriter, item: object) -> None:
        raise failure

    monkeypatch.setattr(writer_module.TableWriter, "write", failing)
    code, err = export(capsys, fmt, CAPTURE, "-o", str(target), "--force")
    if failure is KeyboardInterrupt:
        assert code == 130 and "interrupted" in err and "nothing written" in err
    else:
        assert code == 1 and "No space left on device" in err
    # the earlier export is still there, whole; no partial file is left
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == kept
