"""Preference records in `notify replay` (M1-M6): hints and mails shaped by the record in
effect at their instant, and every push send and mail naming it.

The properties run generated logs (`tests.records_logs`) with any interleaving of record
transitions, messages and comments, and read the output against a plain model of the records.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import date, datetime
from typing import Any

import pytest
from hypothesis import given, settings

from notify_core.events.log import EventError
from notify_core.inbox.mailing import line_mail
from notify_core.inbox.sending import MailLine
from notify_core.replay.lines import dumps_item
from notify_core.replay.run import Replay
from notify_core.values.instants import parse_instant
from notify_core.values.record_rules import local_day
from tests.records_logs import PEOPLE, Step, records_log, steps

Model = dict[str, Any]


def replay(lines: list[str]) -> tuple[list[dict[str, Any]], Replay]:
    r = Replay(include_skips=True)
    out = []
    for item in r.run(lines):
        assert not isinstance(item, EventError), item
        out.append(json.loads(dumps_item(item)))
    return out, r


def record_at(log: list[str], person: str, at: datetime) -> Model | None:
    """The model: the person's record after every record event before ``at``."""
    current: Model | None = None
    for line in log:
        event = json.loads(line)
        if not event["type"].startswith("record.") or event["audience"] != person:
            continue
        if parse_instant(event["occurred_at"]) >= at:
            break
        payload = event["payload"]
        if event["type"] == "record.set":
            current = {"id": payload["preference_id"], "suspended": False, **payload["channels"]}
        elif event["type"] == "record.suspended":
            assert current is not None
            current = {**current, "suspended": True}
        else:
            current = None
    return current


def pushes(line: dict[str, Any]) -> bool:
    return line["decision"] == "send" and any(
        r["via"] in ("push", "push_delayed") for r in line.get("routes", ())
    )


@settings(max_examples=60, deadline=None)
@given(steps)
def test_m2_suspended_or_off_receives_nothing_on_either_channel(plan: list[Step]) -> None:
    log = records_log(plan)
    out, _ = replay(log)
    for line in out:
        person, at = line["recipient"], parse_instant(line["at"])
        rec = record_at(log, person, at)
        if line["trigger"] == "mail" and line["decision"] == "send":
            channel = "email"
        elif line["trigger"] in ("event", "flush", "release") and pushes(line):
            channel = "push"
        else:
            if line.get("reason") == "suspended":
                assert rec is not None and rec["suspended"]
            continue
        if rec is None:
            assert "record" not in line
            continue
        assert line["record"] == rec["id"]  # M6
        assert not rec["suspended"]  # M2
        assert rec.get(channel, {}).get("enabled", True) is not False  # M3


@settings(max_examples=60, deadline=None)
@given(steps)
def test_m4_deliveries_per_local_day_never_exceed_the_cap(plan: list[Step]) -> None:
    log = records_log(plan)
    out, _ = replay(log)
    counted: Counter[tuple[str, str, date]] = Counter()
    for line in out:
        if "record" not in line:
            continue
        person, at = line["recipient"], parse_instant(line["at"])
        if line["trigger"] == "mail":
            channel = "email"
        elif any(r["via"] == "push" for r in line["routes"]):
            channel = "push"
        else:
            continue  # a push_delayed route counts at its release
        key = (person, channel, local_day(at, PEOPLE[person]))
        counted[key] += 1
        rec = record_at(log, person, at)
        assert rec is not None
        cap = rec.get(channel, {}).get("max_per_day")
        if cap is not None:
            assert counted[key] <= cap


@settings(max_examples=20, deadline=None)
@given(steps)
def test_m6_replay_is_deterministic(plan: list[Step]) -> None:
    log = records_log(plan)
    assert replay(log)[0] == replay(log)[0]


def _chat(*steps_: Step) -> list[dict[str, Any]]:
    out, _ = replay(records_log(list(steps_)))
    return [line for line in out if line["trigger"] != "inbox" and line["recipient"] == "ana"]


def test_m4_a_push_cap_holds_back_the_third_of_a_day() -> None:
    cap = {"push": {"max_per_day": 2}}
    lines = _chat(
        (0, ("set", "ana", cap)),
        *[(30, ("message", "ben", {"ana"})) for _ in range(3)],
        (24 * 60, ("message", "ben", {"ana"})),
    )
    events = [h for h in lines if h["trigger"] == "event"]
    hints = [(h["decision"], h.get("reason"), h.get("record")) for h in events]
    assert hints == [
        ("send", None, "ana-1"),
        ("send", None, "ana-1"),
        ("skip", "frequency_cap", None),
        ("send", None, "ana-1"),  # the next local day
    ]


def test_m2_resuming_with_a_new_set_delivers_again() -> None:
    lines = _chat(
        (0, ("set", "ana", {"push": {"enabled": True}})),
        (1, ("suspend", "ana")),
        (1, ("message", "ben", {"ana"})),
        (1, ("set", "ana", {})),
        (5, ("message", "ben", {"ana"})),
    )
    got = [(h["decision"], h.get("reason"), h.get("record")) for h in lines]
    assert got == [("skip", "suspended", None), ("send", None, "ana-2")]


def test_m3_push_off_leaves_email_and_email_off_leaves_push() -> None:
    out, _ = replay(
        records_log(
            [
                (0, ("set", "ana", {"push": {"enabled": False}})),
                (1, ("comment", "ben", {"ana"})),
                (1, ("message", "ben", {"ana"})),
            ]
        )
    )
    mine = [(o["trigger"], o["decision"], o.get("reason")) for o in out if o["recipient"] == "ana"]
    assert ("event", "skip", "record_channel_off") in mine
    assert ("mail", "send", None) in mine


def test_m4_a_capped_mail_waits_to_the_local_midnight_as_one_digest() -> None:
    out, _ = replay(
        records_log(
            [
                (0, ("set", "ana", {"email": {"max_per_day": 1}})),
                *[(30, ("comment", "ben", {"ana"})) for _ in range(3)],
            ]
        )
    )
    mails = [o for o in out if o["trigger"] == "mail" and o["recipient"] == "ana"]
    got = [(m["at"], m["decision"], m.get("reason"), m.get("template")) for m in mails]
    assert got == [
        ("2026-03-27T20:33:00Z", "send", None, "single"),
        ("2026-03-27T21:04:00Z", "skip", "frequency_cap", None),
        ("2026-03-27T21:35:00Z", "skip", "frequency_cap", None),
        ("2026-03-27T23:00:00Z", "send", None, "digest"),  # midnight in Berlin
    ]
    assert mails[-1]["record"] == "ana-1"
    assert len(mails[-1]["entries"]) == 2


def test_m5_a_plain_record_mails_the_text_body_only() -> None:
    lines = records_log(
        [(0, ("set", "ana", {"email": {"format": "plain"}})), (1, ("comment", "ben", {"ana"}))]
    )
    r = Replay()
    mails = [m for m in r.run(lines) if isinstance(m, MailLine)]
    assert [m.plain for m in mails] == [True]
    assert line_mail(mails[0], r.inbox.wiki).mail.html == ""


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ({"type": "record.suspended", "payload": {"preference_id": "nope"}}, "record_refused"),
        ({"type": "record.set", "payload": {"preference_id": "x", "declared_channels": ["push"],
          "channels": {"email": {}}}}, "record_refused"),
        ({"type": "record.set", "payload": {"preference_id": "x", "declared_channels": []}},
         "degenerate_channel_set"),
        ({"type": "record.set", "payload": {"preference_id": "x", "declared_channels": ["push"]}},
         "record_refused"),
    ],
)  # fmt: skip
def test_a_refused_transition_is_a_bad_line(line: dict[str, Any], code: str) -> None:
    event = {"seq": 1, "occurred_at": "2026-03-27T20:00:00Z", "audience": "ana", **line}
    r = Replay()
    (error,) = list(r.run([json.dumps(event)]))
    assert isinstance(error, EventError)
    assert (error.code, error.line) == (code, 1)
    assert r.summary.bad_lines == 1
