"""Explanations (D11) step by step: each step's rule, title, facts read and whether it ended
the decision, for one case of each path (issue 41: tooling reads these fields)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from notify_core.hints.decide import (
    Connection,
    Device,
    EventFacts,
    Policy,
    RecipientFacts,
    Switches,
    explain,
)
from notify_core.hints.levels import LevelFacts, Preference
from notify_core.hints.quiet import QuietRule

NOW = datetime(2026, 10, 23, 12, tzinfo=UTC)
POLICY = Policy(
    coalesce_window=timedelta(seconds=90), mobile_delay_when_desktop_active=timedelta(seconds=60)
)
PHONE = Device(id="d-phone", platform="ios")
LAPTOP = Device(id="d-laptop", platform="desktop")
FULL = LevelFacts(
    thread=Preference(level="all", muted_until=NOW + timedelta(hours=1)),
    channel=Preference(level="mentions"),
    space=Preference(level="mute", muted_until=NOW - timedelta(hours=1)),
    channel_default="all",
    direct_message=True,
    personal_default="mentions",
    instance_default="mute",
)
NOON = QuietRule(weekdays=127, start_local="13:00", end_local="15:00", time_zone="Europe/Berlin")
NIGHT = QuietRule(weekdays=127, start_local="22:00", end_local="07:00")


def event(kind: str = "message", **kw: object) -> EventFacts:
    thread = None if kind in ("security", "admin") else "t-1"
    fields: dict[str, object] = {"now": NOW, "kind": kind, "thread": thread, "policy": POLICY}
    return EventFacts(**(fields | kw))  # type: ignore[arg-type]


def person(**kw: object) -> RecipientFacts:
    fields: dict[str, object] = {
        "allowed": True,
        "level": LevelFacts(instance_default="all"),
        "devices": [PHONE],
    }
    return RecipientFacts(**(fields | kw))  # type: ignore[arg-type]


SCENARIOS: dict[str, tuple[EventFacts, RecipientFacts]] = {
    "muted_thread_row": (event("message"), person(level=FULL)),
    "mention_routes_and_quiet": (
        event("mention"),
        person(
            level=LevelFacts(channel=Preference(level="mentions"), instance_default="mute"),
            devices=[PHONE, LAPTOP],
            connections=[Connection(device="d-laptop", focus={"t-2"}, idle=False)],
            quiet_rules=[NIGHT, NOON],
            user_time_zone="Asia/Tokyo",
        ),
    ),
    "collected": (event("message"), person(window_end=NOW + timedelta(seconds=30))),
    "active": (
        event("mention"),
        person(
            devices=[PHONE, LAPTOP],
            connections=[Connection(device="d-laptop", focus={"t-1", "t-0"}, idle=False)],
        ),
    ),
    "admin_switch": (event("admin"), person(switches=Switches(admin_enabled=False))),
    "security": (
        event("security", exclude_device="d-phone"),
        person(devices=[PHONE, LAPTOP], quiet_rules=[NIGHT]),
    ),
    "input_needed_exempt": (
        event("input_needed"),
        person(
            run_starter=True,
            quiet_rules=[NIGHT],
            switches=Switches(input_needed_breaks_quiet_hours=True),
        ),
    ),
    "quiet_in_the_persons_zone": (
        event("message"),
        person(
            quiet_rules=[QuietRule(weekdays=127, start_local="07:00", end_local="09:00")],
            user_time_zone="America/New_York",
        ),
    ),
    "quiet_in_utc": (
        event("run_done"),
        person(
            run_starter=True,
            quiet_rules=[NIGHT, QuietRule(weekdays=127, start_local="11:00", end_local="13:00")],
        ),
    ),
    "no_route": (event("mention"), person(devices=[])),
    "input_needed_exempt_by_policy": (
        event("input_needed", policy=Policy(default_input_needed_breaks_quiet_hours=True)),
        person(run_starter=True, quiet_rules=[NIGHT]),
    ),
    "author": (event("mention"), person(author=True)),
    "not_allowed": (event("mention"), person(allowed=False)),
}


EXPECTED: dict[str, list[tuple[str, str, bool, dict[str, object]]]] = {
    "muted_thread_row": [
        ("D1", "recipient", False, {"author": False, "run_kind": False, "run_starter": False}),
        ("D2", "read right", False, {"allowed": True}),
        (
            "D3",
            "preference",
            True,
            {
                "kind": "message",
                "chain": [
                    {
                        "source": "thread",
                        "level": "all",
                        "muted_until": datetime(2026, 10, 23, 13, 0, tzinfo=UTC),
                    },
                    {"source": "channel", "level": "mentions"},
                    {
                        "source": "space",
                        "level": "mute",
                        "muted_until": datetime(2026, 10, 23, 11, 0, tzinfo=UTC),
                    },
                    {"source": "channel_default", "level": "all"},
                    {"source": "direct_message", "level": "all"},
                    {"source": "personal_default", "level": "mentions"},
                    {"source": "instance_default", "level": "mute"},
                ],
                "effective": "mute",
                "source": "thread",
                "muted_until": datetime(2026, 10, 23, 13, 0, tzinfo=UTC),
                "needs": ["all"],
            },
        ),
    ],
    "mention_routes_and_quiet": [
        ("D1", "recipient", False, {"author": False, "run_kind": False, "run_starter": False}),
        ("D2", "read right", False, {"allowed": True}),
        (
            "D3",
            "preference",
            False,
            {
                "kind": "mention",
                "chain": [
                    {"source": "channel", "level": "mentions"},
                    {"source": "instance_default", "level": "mute"},
                ],
                "effective": "mentions",
                "source": "channel",
                "needs": ["all", "mentions"],
            },
        ),
        (
            "D4",
            "active in thread",
            False,
            {
                "thread": "t-1",
                "connections": [{"device": "d-laptop", "focus": ["t-2"], "idle": False}],
            },
        ),
        (
            "D5",
            "routes",
            False,
            {
                "devices": [
                    {"device": "d-laptop", "platform": "desktop"},
                    {"device": "d-phone", "platform": "ios"},
                ],
                "exclude_device": None,
                "routes": [
                    {"device": "d-laptop", "via": "gateway"},
                    {"device": "d-phone", "via": "push_delayed"},
                ],
            },
        ),
        ("D6", "window", False, {"window_end": None, "coalesce_window_s": 90.0}),
        (
            "D7",
            "quiet hours",
            False,
            {"quiet": True, "matched_rule": 1, "rule_zone": "Europe/Berlin"},
        ),
    ],
    "collected": [
        ("D1", "recipient", False, {"author": False, "run_kind": False, "run_starter": False}),
        ("D2", "read right", False, {"allowed": True}),
        (
            "D3",
            "preference",
            False,
            {
                "kind": "message",
                "chain": [{"source": "instance_default", "level": "all"}],
                "effective": "all",
                "source": "instance_default",
                "needs": ["all"],
            },
        ),
        ("D4", "active in thread", False, {"thread": "t-1", "connections": []}),
        (
            "D5",
            "routes",
            False,
            {"devices": [{"device": "d-phone", "platform": "ios"}], "exclude_device": None},
        ),
        (
            "D6",
            "window",
            True,
            {
                "window_end": datetime(2026, 10, 23, 12, 0, 30, tzinfo=UTC),
                "coalesce_window_s": 90.0,
            },
        ),
    ],
    "active": [
        ("D1", "recipient", False, {"author": False, "run_kind": False, "run_starter": False}),
        ("D2", "read right", False, {"allowed": True}),
        (
            "D3",
            "preference",
            False,
            {
                "kind": "mention",
                "chain": [{"source": "instance_default", "level": "all"}],
                "effective": "all",
                "source": "instance_default",
                "needs": ["all", "mentions"],
            },
        ),
        (
            "D4",
            "active in thread",
            True,
            {
                "thread": "t-1",
                "connections": [{"device": "d-laptop", "focus": ["t-0", "t-1"], "idle": False}],
            },
        ),
    ],
    "admin_switch": [
        ("D1", "recipient", False, {"author": False, "run_kind": False, "run_starter": False}),
        ("D2", "read right", False, {"allowed": True}),
        (
            "D3",
            "preference",
            True,
            {"kind": "admin", "admin_enabled": False, "default_admin_enabled": True},
        ),
    ],
    "security": [
        ("D1", "recipient", False, {"author": False, "run_kind": False, "run_starter": False}),
        ("D2", "read right", False, {"allowed": True}),
        ("D3", "preference", False, {"kind": "security", "level": "ignored"}),
        ("D4", "active in thread", False, {"thread": None, "connections": []}),
        (
            "D5",
            "routes",
            False,
            {
                "devices": [
                    {"device": "d-laptop", "platform": "desktop"},
                    {"device": "d-phone", "platform": "ios"},
                ],
                "exclude_device": "d-phone",
                "routes": [{"device": "d-laptop", "via": "push"}],
            },
        ),
        ("D7", "quiet hours", False, {"quiet": False, "exempt": "security is never quiet"}),
    ],
    "input_needed_exempt": [
        ("D1", "recipient", False, {"author": False, "run_kind": True, "run_starter": True}),
        ("D2", "read right", False, {"allowed": True}),
        ("D3", "preference", False, {"kind": "input_needed", "level": "ignored"}),
        ("D4", "active in thread", False, {"thread": "t-1", "connections": []}),
        (
            "D5",
            "routes",
            False,
            {
                "devices": [{"device": "d-phone", "platform": "ios"}],
                "exclude_device": None,
                "routes": [{"device": "d-phone", "via": "push"}],
            },
        ),
        ("D6", "window", False, {"window_end": None, "coalesce_window_s": 90.0}),
        ("D7", "quiet hours", False, {"quiet": False, "exempt": "input_needed_breaks_quiet_hours"}),
    ],
    "quiet_in_the_persons_zone": [
        ("D1", "recipient", False, {"author": False, "run_kind": False, "run_starter": False}),
        ("D2", "read right", False, {"allowed": True}),
        (
            "D3",
            "preference",
            False,
            {
                "kind": "message",
                "chain": [{"source": "instance_default", "level": "all"}],
                "effective": "all",
                "source": "instance_default",
                "needs": ["all"],
            },
        ),
        ("D4", "active in thread", False, {"thread": "t-1", "connections": []}),
        (
            "D5",
            "routes",
            False,
            {
                "devices": [{"device": "d-phone", "platform": "ios"}],
                "exclude_device": None,
                "routes": [{"device": "d-phone", "via": "push"}],
            },
        ),
        ("D6", "window", False, {"window_end": None, "coalesce_window_s": 90.0}),
        (
            "D7",
            "quiet hours",
            False,
            {"quiet": True, "matched_rule": 0, "rule_zone": "America/New_York"},
        ),
    ],
    "quiet_in_utc": [
        ("D1", "recipient", False, {"author": False, "run_kind": True, "run_starter": True}),
        ("D2", "read right", False, {"allowed": True}),
        (
            "D3",
            "preference",
            False,
            {
                "kind": "run_done",
                "chain": [{"source": "instance_default", "level": "all"}],
                "effective": "all",
                "source": "instance_default",
                "needs": ["all", "mentions"],
            },
        ),
        ("D4", "active in thread", False, {"thread": "t-1", "connections": []}),
        (
            "D5",
            "routes",
            False,
            {
                "devices": [{"device": "d-phone", "platform": "ios"}],
                "exclude_device": None,
                "routes": [{"device": "d-phone", "via": "push"}],
            },
        ),
        ("D6", "window", False, {"window_end": None, "coalesce_window_s": 90.0}),
        ("D7", "quiet hours", False, {"quiet": True, "matched_rule": 1, "rule_zone": "UTC"}),
    ],
    "author": [
        ("D1", "recipient", True, {"author": True, "run_kind": False, "run_starter": False})
    ],
    "not_allowed": [
        ("D1", "recipient", False, {"author": False, "run_kind": False, "run_starter": False}),
        ("D2", "read right", True, {"allowed": False}),
    ],
    "no_route": [
        ("D1", "recipient", False, {"author": False, "run_kind": False, "run_starter": False}),
        ("D2", "read right", False, {"allowed": True}),
        (
            "D3",
            "preference",
            False,
            {
                "kind": "mention",
                "chain": [{"source": "instance_default", "level": "all"}],
                "effective": "all",
                "source": "instance_default",
                "needs": ["all", "mentions"],
            },
        ),
        ("D4", "active in thread", False, {"thread": "t-1", "connections": []}),
        ("D5", "routes", True, {"devices": [], "exclude_device": None}),
    ],
    "input_needed_exempt_by_policy": [
        ("D1", "recipient", False, {"author": False, "run_kind": True, "run_starter": True}),
        ("D2", "read right", False, {"allowed": True}),
        ("D3", "preference", False, {"kind": "input_needed", "level": "ignored"}),
        ("D4", "active in thread", False, {"thread": "t-1", "connections": []}),
        (
            "D5",
            "routes",
            False,
            {
                "devices": [{"device": "d-phone", "platform": "ios"}],
                "exclude_device": None,
                "routes": [{"device": "d-phone", "via": "push"}],
            },
        ),
        ("D6", "window", False, {"window_end": None, "coalesce_window_s": 90.0}),
        ("D7", "quiet hours", False, {"quiet": False, "exempt": "input_needed_breaks_quiet_hours"}),
    ],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_d11_every_step_names_what_it_read(name: str) -> None:
    ev, person_facts = SCENARIOS[name]
    explanation = explain(ev, person_facts)
    steps = [(s.rule, s.title, s.ended, dict(s.read)) for s in explanation.steps]
    assert steps == EXPECTED[name]


def test_d1_d3_gate_alone_defaults_to_a_plain_recipient() -> None:
    from notify_core.hints.decide import Skip, SkipReason, gate

    level = LevelFacts(instance_default="all")
    assert gate(event("mention"), allowed=True, level=level) is None
    assert gate(event("run_done"), allowed=True) == Skip(reason=SkipReason.NOT_RECIPIENT)
    assert gate(event("run_done"), allowed=True, run_starter=True, level=level) is None
