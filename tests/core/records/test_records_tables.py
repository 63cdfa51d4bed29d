"""The preference-record decision tables (formats.md section 1, rules.md#records, section 8, G5).

Runs every case of ``tests/tables/records.jsonl`` through `RECORD_FUNCTIONS` directly: an
answer is compared as is, a `NotifyError` as ``{"error": {"code", "pointer"?}}``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from notify_core.records import PreferenceStore
from notify_core.records.tables import (
    RECORD_FUNCTIONS,
    record_from_json,
    record_to_json,
    records_lifecycle,
)
from notify_core.values.errors import NotifyError

TABLE = Path(__file__).parents[2] / "tables" / "records.jsonl"


def load_cases() -> list[dict[str, object]]:
    cases = []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            cases.append(json.loads(line))
    return cases


CASES = load_cases()


def answer(function: str, case_input: dict[str, object]) -> dict[str, object]:
    try:
        return RECORD_FUNCTIONS[function](case_input)
    except NotifyError as err:
        return {"error": err.as_json()}


def no_null(value: object) -> bool:
    if isinstance(value, dict):
        return all(no_null(v) for v in value.values())
    if isinstance(value, list):
        return all(no_null(v) for v in value)
    return value is not None


def test_the_table_covers_the_lifecycle() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) >= 8
    assert len(set(ids)) == len(ids)
    assert {case["function"] for case in CASES} == set(RECORD_FUNCTIONS)


@pytest.mark.parametrize("case", CASES, ids=[str(case["id"]) for case in CASES])
def test_table_case(case: dict[str, object]) -> None:
    function, case_input = case["function"], case["input"]
    assert isinstance(function, str) and isinstance(case_input, dict)
    got = answer(function, case_input)
    assert got == case["expect"]
    assert no_null(got)  # G5


def test_records_round_trip_through_json() -> None:
    """What `record_to_json` writes, `record_from_json` reads back to an equal record."""
    for case in CASES:
        expect = case["expect"]
        assert isinstance(expect, dict)
        for i, obj in enumerate(expect.get("records", [])):
            record = record_from_json(obj, f"/records/{i}")
            assert record_to_json(record) == obj
    lifecycle = next(c for c in CASES if c["id"] == "seed002-vacation-suspend-and-replay")
    records = [record_from_json(r) for r in lifecycle["expect"]["records"]]  # type: ignore[index]
    store = PreferenceStore.from_records(records)
    assert store.current_for("user_u") == records[-1]


@pytest.mark.parametrize(
    ("case_input", "code", "pointer"),
    [
        ({}, "missing_member", "/steps"),
        ({"steps": {}}, "invalid_type", "/steps"),
        ({"steps": [1]}, "invalid_type", "/steps/0"),
        ({"steps": [{"principal_ref": "u"}]}, "missing_member", "/steps/0/op"),
        ({"steps": [{"op": "read"}]}, "missing_member", "/steps/0/preference_id"),
        ({"steps": [{"op": "read", "preference_id": 7}]}, "invalid_type", "/steps/0/preference_id"),
        ({"steps": [{"op": "read", "preference_id": "p", "x": 1}]}, "unknown_member", "/steps/0/x"),
        (
            {"steps": [{"op": "set", "now": "2026-03-01T09:00:00Z", "preference_id": "p",
                        "principal_ref": "u", "format": "plain"}]},
            "missing_member",
            "/steps/0/declared_channels",
        ),
        (
            {"declared_channels": "email",
             "steps": [{"op": "set", "now": "2026-03-01T09:00:00Z", "preference_id": "p",
                        "principal_ref": "u", "format": "plain"}]},
            "invalid_type",
            "/declared_channels",
        ),
        (
            {"declared_channels": ["email", 3],
             "steps": [{"op": "set", "now": "2026-03-01T09:00:00Z", "preference_id": "p",
                        "principal_ref": "u", "format": "plain"}]},
            "invalid_type",
            "/declared_channels/1",
        ),
        (
            {"declared_channels": ["email"],
             "steps": [{"op": "set", "now": "2026-03-01T09:00:00Z", "preference_id": "p",
                        "principal_ref": "u", "frequency_limit": {"per_day": [1, None]}}]},
            "null_value",
            "/steps/0/frequency_limit/per_day/1",
        ),
        (
            {"declared_channels": ["email"],
             "steps": [{"op": "set", "now": "2026-03-01T09:00:00Z", "preference_id": "p",
                        "principal_ref": "u", "channel_preferences": ["email"]}]},
            "invalid_type",
            "/steps/0/channel_preferences",
        ),
        ({"steps": [{"op": "in_effect_at", "principal_ref": "u", "at": "yesterday"}]},
         "invalid_instant", "/steps/0/at"),
    ],
)  # fmt: skip
def test_invalid_input_names_code_and_pointer(
    case_input: dict[str, object], code: str, pointer: str
) -> None:
    with pytest.raises(NotifyError) as info:
        records_lifecycle(case_input)
    assert info.value.as_json() == {"code": code, "pointer": pointer}
