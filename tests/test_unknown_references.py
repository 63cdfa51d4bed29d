"""Nothing dropped silently: references to objects the log never created, unknown zones (Q3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from notify_cli.main import cli
from notify_core.events import PAYLOADS
from notify_core.replay import KNOWN, REFERENCES, Replay, dumps_item

SPEC_LOG = Path(__file__).resolve().parents[1] / "examples" / "spec-example.jsonl"
BASE = SPEC_LOG.read_text().splitlines()


def event(seq: int, kind: str, payload: dict[str, object], **envelope: object) -> str:
    obj: dict[str, object] = {"seq": seq, "type": kind, "occurred_at": "2026-10-23T09:30:00Z"}
    obj.update(envelope)
    obj["payload"] = payload
    return json.dumps(obj)


GHOSTS = [
    event(
        20,
        "message.created",
        {
            "message": "m-3",
            "thread": "t-42",
            "thread_seq": 3,
            "author": "u-ben",
            "origin": "human",
            "kind": "text",
            "mention_ids": ["u-ana", "u-ghost"],
        },
    ),
    event(21, "presence.changed", {"device": "d-ghost", "connected": True, "focus": ["t-42"]}),
    event(22, "access.granted", {"user": "u-ana", "target": {"kind": "space", "id": "s-ghost"}}),
    event(
        23,
        "device.registered",
        {"device": "d-x", "user": "u-ghost", "platform": "ios", "state": "active"},
    ),
    event(24, "read_state.updated", {"thread": "t-ghost", "last_read_seq": 1}, audience="u-ana"),
    event(25, "thread.created", {"thread": "t-new", "channel": "c-ghost", "main": False}),
]


def test_unknown_references_are_counted_by_type_and_written_as_skips(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join([*BASE, *GHOSTS]) + "\n")
    summary = tmp_path / "summary.json"
    with_skips = CliRunner().invoke(
        cli, ["replay", str(log), "--include-skips", "--summary-json", str(summary)]
    )
    assert with_skips.exit_code == 0, with_skips.output  # counted, not bad lines
    assert json.loads(summary.read_text())["unknown_references"] == {
        "channel": 1,
        "device": 1,
        "space": 1,
        "thread": 1,
        "user": 2,
    }
    skips = [
        json.loads(line)
        for line in with_skips.stdout.splitlines()
        if json.loads(line).get("reason") == "unknown_reference"
    ]
    assert [(s["seq"], s["reference"], s["pointer"]) for s in skips] == [
        (20, {"type": "user", "id": "u-ghost"}, "/payload/mention_ids/1"),
        (21, {"type": "device", "id": "d-ghost"}, "/payload/device"),
        (22, {"type": "space", "id": "s-ghost"}, "/payload/target/id"),
        (23, {"type": "user", "id": "u-ghost"}, "/payload/user"),
        (24, {"type": "thread", "id": "t-ghost"}, "/payload/thread"),
        (25, {"type": "channel", "id": "c-ghost"}, "/payload/channel"),
    ]
    assert skips[0] == {
        "seq": 20,
        "trigger": "event",
        "at": "2026-10-23T09:30:00Z",
        "decision": "skip",
        "reason": "unknown_reference",
        "reference": {"type": "user", "id": "u-ghost"},
        "pointer": "/payload/mention_ids/1",
    }
    assert "unknown references user" in with_skips.stderr  # the summary table names them
    without = CliRunner().invoke(cli, ["replay", str(log)])
    assert without.exit_code == 0
    assert "unknown_reference" not in without.stdout


def test_the_skip_lines_of_an_event_follow_its_hints() -> None:
    replay = Replay(include_skips=True)
    lines = [json.loads(dumps_item(h)) for h in replay.run([*BASE, GHOSTS[0]])]  # type: ignore[arg-type]
    of_20 = [line for line in lines if line.get("seq") == 20]
    assert [line.get("reason") for line in of_20][-1] == "unknown_reference"
    assert any(line.get("recipient") == "u-ana" for line in of_20)  # the mention still decided


def test_a_log_without_unknown_references_counts_none() -> None:
    replay = Replay(include_skips=True)
    for _ in replay.run(BASE):
        pass
    assert replay.summary.to_json()["unknown_references"] == {}


def test_the_reference_table_names_members_of_the_formats() -> None:
    for kind, refs in REFERENCES.items():
        assert kind in PAYLOADS, kind
        for member, object_type in refs:
            assert member == "@audience" or member in PAYLOADS[kind], (kind, member)
            assert object_type == "target" or object_type in KNOWN, (kind, object_type)


@pytest.mark.parametrize("zone", ["Mars/Olympus", "localtime", "posix/Europe/Berlin", ""])
def test_q3_a_person_in_an_unknown_zone_is_a_bad_line(tmp_path: Path, zone: str) -> None:
    lines = list(BASE)
    user = json.loads(lines[0])
    user["payload"]["time_zone"] = zone
    lines[0] = json.dumps(user)
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(cli, ["replay", str(log)])
    assert result.exit_code == 2
    assert f"{log}:1: bad event at /payload/time_zone: " in result.stderr
    assert "(unknown_time_zone)" in result.stderr
