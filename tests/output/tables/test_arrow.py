"""Rows become record batches a bounded number at a time, with the schema's types."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from agentshark.output.tables.arrow import Batches, arrow_schema
from agentshark.output.tables.schema import BY_NAME, Table


def _row(table: Table, **values: object) -> dict[str, object]:
    return {name: values.get(name) for name in table.names}


def test_batches_are_bounded_by_rows_and_by_text() -> None:
    got: list[tuple[str, int]] = []
    batches = Batches(
        lambda table, batch: got.append((table.name, batch.num_rows)), rows=3, size=100
    )
    messages = BY_NAME["messages"]
    for i in range(7):
        batches.add("messages", _row(messages, call_id="c", direction="input", message_index=i))
    assert got == [("messages", 3), ("messages", 3)]  # the seventh row is held
    parts = BY_NAME["parts"]
    batches.add("parts", _row(parts, call_id="c", type="text", content="x" * 150))
    assert got[-1] == ("parts", 1)  # 150 characters of text: past the 100 a batch may hold
    batches.flush()
    assert got[-1] == ("messages", 1)
    assert batches.written["messages"] == 7 and batches.written["parts"] == 1


def test_values_take_the_schemas_types() -> None:
    got: list[pa.RecordBatch] = []
    batches = Batches(lambda table, batch: got.append(batch))
    calls = BY_NAME["calls"]
    batches.add(
        "calls",
        _row(
            calls,
            call_id="call1",
            started=1795990466.49505,
            usage_raw={"prompt_tokens": 3, 1: [None]},
            gen_ai_response_finish_reasons=["stop"],
            gen_ai_usage_input_tokens=3,
            complete=False,
        ),
    )
    batches.flush()
    (batch,) = got
    assert batch.schema == arrow_schema(calls)
    (row,) = batch.to_pylist()
    assert row["started"] == dt.datetime(2026, 11, 29, 22, 14, 26, 495050, tzinfo=dt.UTC)
    assert row["usage_raw"] == '{"prompt_tokens":3,"1":[null]}'
    assert row["gen_ai_response_finish_reasons"] == ["stop"]
    assert (row["gen_ai_usage_input_tokens"], row["complete"], row["ended"]) == (3, False, None)
    assert str(batch.schema.field("usage_raw").type) == "extension<arrow.json>"
