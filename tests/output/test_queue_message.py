"""A queue protocol's messages in the JSON report: every field written, absent identities as
null, and the payload redacted like any text the report holds."""

from __future__ import annotations

from agentshark.model import Exchange
from agentshark.output.report import RenderOptions, exchange_json
from agentshark.wire.events import Operation, QueueMessage

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"


def _exchange(messages: list[QueueMessage]) -> Exchange:
    op = Operation(
        protocol="amqp",
        kind="publish",
        index=0,
        command="basic.publish",
        statement=None,
        started=1.0,
        request_ended=1.0,
        response_started=None,
        ended=1.0,
        request_complete=True,
        response_complete=True,
        role="queue.publish",
        messages=messages,
    )
    return Exchange(
        id="e1", source=0, connection="c1", transport="amqp", request=None, response=None,
        operation=op,
    )  # fmt: skip


def test_messages_are_written_with_every_field() -> None:
    message = QueueMessage(
        system="amqp",
        action="publish",
        destination="tasks",
        routing_key="agent.run",
        correlation_id="c-7",
        headers={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        payload={"task": "search", "query": "weather"},
        size=38,
    )
    out = exchange_json(_exchange([message]), RenderOptions())["operation"]["messages"]
    assert len(out) == 1
    assert out[0]["destination"] == "tasks" and out[0]["routing_key"] == "agent.run"
    assert out[0]["offset"] is None and out[0]["message_id"] is None  # not carried: null
    assert out[0]["payload"] == {"task": "search", "query": "weather"}
    assert out[0]["headers"]["traceparent"].startswith("00-0af7")


def test_no_messages_no_field() -> None:
    assert "messages" not in exchange_json(_exchange([]), RenderOptions())["operation"]


def test_a_secret_in_a_payload_is_redacted() -> None:
    message = QueueMessage(system="amqp", action="publish", payload={"api_key": SECRET}, size=60)
    text = str(exchange_json(_exchange([message]), RenderOptions()))
    assert SECRET not in text
    raw = str(exchange_json(_exchange([message]), RenderOptions(redact=False)))
    assert SECRET in raw
