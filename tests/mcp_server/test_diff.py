"""diff_runs' definition, on a report and copies of it changed in one known way each."""

from __future__ import annotations

import copy
from typing import Any

import agentshark
from agentshark.mcp_server.diff import diff_reports
from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "agent_chat.pcap"
BASE = agentshark.analyze(EXAMPLE)


def changed(edit: Any) -> agentshark.Report:
    data = copy.deepcopy(BASE.to_json())
    edit(data)
    return agentshark.Report.from_json(data)


def diff(after: agentshark.Report) -> dict[str, Any]:
    return diff_reports(BASE, after, limit=20, max_chars=300)


def call(data: dict[str, Any], call_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in data["calls"] if c["id"] == call_id)
    return found


def test_a_run_is_identical_to_itself() -> None:
    d = diff(agentshark.analyze(EXAMPLE))
    assert d["identical"] is True
    assert d["steps"] == {
        "changed_total": 0,
        "changed": [],
        "only_before_total": 0,
        "only_before": [],
        "only_after_total": 0,
        "only_after": [],
    }
    assert d["counts"]["steps"] == {"before": 6, "after": 6}


def test_new_tool_call_ids_are_no_change() -> None:
    def new_ids(data: dict[str, Any]) -> None:
        for c in data["calls"]:
            for m in c["input_messages"] + c["output_messages"]:
                for p in m["parts"]:
                    if p.get("id"):
                        p["id"] = "call_" + p["id"][::-1]

    assert diff(changed(new_ids))["identical"] is True


def test_a_changed_tool_argument_and_finish_reason_are_named() -> None:
    def edit(data: dict[str, Any]) -> None:
        c1 = call(data, "call1")
        c1["output_messages"][0]["parts"][0]["arguments"] = {"location": "Portland, OR"}
        c1["finish_reasons"] = ["length"]

    d = diff(changed(edit))
    assert d["identical"] is False
    (step,) = d["steps"]["changed"]
    assert (step["step"], step["before"], step["after"]) == (0, "call1", "call1")
    assert set(step["changes"]) == {"tool_calls", "finish_reasons"}
    assert step["changes"]["finish_reasons"] == {"before": ["tool_calls"], "after": ["length"]}
    after = step["changes"]["tool_calls"]["after"]
    assert after[0] == {"name": "get_current_weather", "arguments": {"location": "Portland, OR"}}
    assert d["finish_reasons"] == {
        "length": {"before": 0, "after": 1},
        "tool_calls": {"before": 3, "after": 2},
    }
    assert d["tool_calls"] == {}  # the same tools, as often


def test_a_changed_prompt_names_the_message() -> None:
    def edit(data: dict[str, Any]) -> None:
        call(data, "call5")["input_messages"][0]["parts"][0]["content"] = "What's 6 + 6?"
        call(data, "call2")["system_instructions"][0]["content"] = "Be terse."

    d = diff(changed(edit))
    by_call = {s["before"]: s["changes"] for s in d["steps"]["changed"]}
    assert set(by_call) == {"call2", "call5"}
    assert by_call["call2"]["system"] == {
        "before": "You're a helpful assistant.",
        "after": "Be terse.",
    }
    change = by_call["call5"]["input"]
    assert change["first_difference"] == 0
    assert change["after"]["parts"][0]["content"] == "What's 6 + 6?"
    assert change["messages"] == {"before": 1, "after": 1}


def test_a_missing_step_a_new_error_and_a_new_incident() -> None:
    def edit(data: dict[str, Any]) -> None:
        dropped = data["calls"].pop()  # call6, and its trace
        data["traces"] = [t for t in data["traces"] if dropped["id"] not in t["calls"]]
        call(data, "call5")["error"] = {
            "status": 500,
            "type": None,
            "code": None,
            "message": "boom",
        }
        data["incidents"].append(
            {
                "rule": "tools.repeated_call",
                "severity": "warning",
                "message": "again",
                "call_id": "call3",
                "trace_id": None,
                "evidence": {},
            }
        )

    d = diff(changed(edit))
    assert [c["id"] for c in d["steps"]["only_before"]] == ["call6"]
    (step,) = d["steps"]["changed"]
    assert step["changes"]["status"] == {"before": "ok", "after": "error"}
    assert step["changes"]["error"] == {"before": None, "after": "boom"}
    assert d["tool_calls"] == {
        "get_country": {"before": 1, "after": 0},
        "get_product_name": {"before": 1, "after": 0},
    }
    assert d["incidents"]["by_rule"] == {"tools.repeated_call": {"before": 0, "after": 1}}
    assert [i["message"] for i in d["incidents"]["more_after"]] == ["again"]
    assert d["counts"]["steps"] == {"before": 6, "after": 5}
