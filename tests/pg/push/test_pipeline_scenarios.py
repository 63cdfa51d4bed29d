"""The integration list of seed 001 on PostgreSQL: the golden scenarios run through the worker
with fake providers, pushing after every event; what reaches the providers, the rows and the
logs are checked (the hints themselves equal the replay's: test_pipeline_parity)."""

from __future__ import annotations

import json
import logging
import tomllib
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgpipeline import START, PgRun
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.replay.run import policy_from_mapping
from notify_core.values.kinds import Kind
from notify_pg.push.providers import FakeCall, FakeProvider

ROOT = Path(__file__).resolve().parents[3]
REPLAY = ROOT / "tests" / "replay"
GOLDENS = sorted(p for p in REPLAY.glob("*.jsonl") if not p.name.endswith(".expected.jsonl"))


class Scenario:
    """A golden log run on PostgreSQL with fake apns and fcm providers."""

    def __init__(self, run: PgRun, log: Path) -> None:
        self.run = run
        self.log = log

    @property
    def calls(self) -> list[FakeCall]:
        out: list[FakeCall] = []
        for name in ("apns", "fcm"):
            provider = self.run.worker.push.providers[name]
            assert isinstance(provider, FakeProvider)
            out.extend(provider.calls)
        return out

    def calls_to(self, registration: str) -> list[FakeCall]:
        return [c for c in self.calls if c.registration_id == registration]


@pytest.fixture
def scenario(
    new_database: Callable[[str | None], str], pg_template: str
) -> Iterator[Callable[[str], Scenario]]:
    opened: list[tuple[psycopg.Connection[Any], PgRun]] = []

    def start(name: str) -> Scenario:
        log = REPLAY / f"{name}.jsonl"
        dsn = new_database(pg_template)
        conn = psycopg.connect(dsn, autocommit=True)
        policy = policy_from_mapping(tomllib.loads(log.with_suffix(".toml").read_text()))
        run = PgRun(dsn, conn, policy, providers=[FakeProvider("apns"), FakeProvider("fcm")])
        opened.append((conn, run))
        run.feed_lines(log.read_text().splitlines(), push=True)
        run.settle()
        return Scenario(run, log)

    yield start
    for conn, run in opened:
        run.worker.close()
        conn.close()


def expected_pushes(log: Path) -> list[tuple[str, str, str | None, str | None, str | None, int]]:
    """Every send of the golden output with a push route to a device holding a registration
    (the goldens register r-<device> for each phone) as (registration, kind, thread, message,
    target, count)."""
    registered = {
        json.loads(line)["payload"]["device"]
        for line in log.read_text().splitlines()
        if '"push.registered"' in line
    }
    out = []
    for line in log.with_name(log.stem + ".expected.jsonl").read_text().splitlines():
        hint = json.loads(line)
        if hint["decision"] != "send":
            continue
        for route in hint["routes"]:
            if route["via"] == "push" and route["device"] in registered:
                count = 0 if hint["kind"] == "sync" else hint.get("count", 0)
                out.append(
                    (
                        f"r-{route['device']}",
                        hint["kind"],
                        hint.get("thread"),
                        hint.get("message"),
                        hint.get("target"),
                        count,
                    )
                )
    return sorted(out, key=str)


@pytest.mark.parametrize("log", GOLDENS, ids=[p.stem for p in GOLDENS])
def test_every_push_route_reaches_its_provider_once(
    log: Path, scenario: Callable[[str], Scenario]
) -> None:
    """One provider call per hint and registration, carrying the hint's kind, thread, message,
    target and count; one notification id per hint and recipient."""
    s = scenario(log.stem)
    got = sorted(
        (
            c.registration_id,
            c.notification.kind.value,
            c.notification.thread,
            c.notification.message,
            c.notification.target,
            c.notification.count,
        )
        for c in s.calls
    )
    assert got == expected_pushes(log)
    assert len({c.notification.id for c in s.calls}) == len(s.calls)  # one device each here
    assert s.run.push_sends() == []


def test_ten_messages_in_one_window_give_at_most_two_hints(
    scenario: Callable[[str], Scenario],
) -> None:
    """TestTenMessagesInOneWindow_AtMostTwoHints: the first message goes at once with count 0,
    the flush at the window's end with count 10."""
    s = scenario("ten_messages")
    calls = [c for c in s.calls_to("r-alex-phone") if c.notification.kind is Kind.MESSAGE]
    assert [c.notification.count for c in calls] == [0, 10]
    assert calls[1].notification.message == "o10"  # the flush points at the newest message
    assert [c.notification.badge for c in calls] == [1, 1]  # t is unread, Alex follows it


def test_ten_messages_read_before_the_end_flush_sends_nothing(
    scenario: Callable[[str], Scenario],
) -> None:
    s = scenario("ten_messages_read_before_end")
    calls = [c for c in s.calls_to("r-alex-phone") if c.notification.kind is Kind.MESSAGE]
    assert [c.notification.count for c in calls] == [0]
    assert s.run.worker.stats.skipped["read"] == 1


def test_a_mention_inside_the_window_goes_at_once(scenario: Callable[[str], Scenario]) -> None:
    s = scenario("ten_messages_mention_inside")
    kinds = [
        (c.notification.kind.value, c.notification.count)
        for c in s.calls_to("r-alex-phone")
        if c.notification.kind is not Kind.SYNC
    ]
    assert kinds[:2] == [("message", 0), ("mention", 0)]
    assert kinds[-1][0] == "message" and kinds[-1][1] > 0
    assert sum(1 for k, _ in kinds if k == "message") == 2


def test_run_with_three_agent_messages_gives_exactly_one_run_done(
    scenario: Callable[[str], Scenario],
) -> None:
    """TestRunWithThreeAgentMessages_ExactlyOneRunDone: Alex gets run_done pointing at the
    third agent message; Sam gets one message hint for it; a message after the end gives
    normal hints."""
    s = scenario("run_completed")
    alex = [(c.notification.kind.value, c.notification.message) for c in s.calls_to("r-alex-phone")]
    sam = [(c.notification.kind.value, c.notification.message) for c in s.calls_to("r-sam-phone")]
    assert [a for a in alex if a[0] == "run_done"] == [("run_done", "a3")]
    assert ("message", "a3") in sam
    assert not [x for x in alex + sam if x[1] in ("a1", "a2")]


@pytest.mark.parametrize(
    ("name", "alex_kind"),
    [("run_failed", "run_failed"), ("run_cancelled", "message"), ("run_input_needed", None)],
)
def test_run_end_variants(
    scenario: Callable[[str], Scenario], name: str, alex_kind: str | None
) -> None:
    s = scenario(name)
    alex = [(c.notification.kind.value, c.notification.message) for c in s.calls_to("r-alex-phone")]
    if alex_kind is None:  # waits for input: input_needed to Alex, also with his mute on t
        assert ("input_needed", "a3") in alex
    else:
        assert (alex_kind, "a3") in alex


def test_agent_mention_during_a_run_goes_at_once(scenario: Callable[[str], Scenario]) -> None:
    """TestAgentMentionDuringRun_GoesAtOnce: Sam gets the mention at once and exactly one
    message at the end of the run."""
    s = scenario("agent_mention_during_run")
    sam = [(c.notification.kind.value, c.notification.message) for c in s.calls_to("r-sam-phone")]
    assert ("mention", "a2") in sam
    assert [m for m in sam if m[1] in ("a1", "a2", "a3") and m[0] == "message"] == [
        ("message", "a3")
    ]


def test_mention_without_read_right_leaves_no_trace(
    scenario: Callable[[str], Scenario], caplog: pytest.LogCaptureFixture
) -> None:
    """AZ-M48: Sam mentions Alex where Alex cannot read: no push send, no window, no release,
    no badge sync and no log record naming Alex; counted no_access."""
    caplog.set_level(logging.DEBUG)
    s = scenario("mention_without_read_right")
    conn = s.run.conn
    for table, column in (
        ("push_sends", "recipient"),
        ("windows", "recipient"),
        ("delayed_releases", "recipient"),
        ("badge_syncs", "recipient"),
    ):
        row = conn.execute(
            f"SELECT count(*) FROM {SCHEMA}.{table} WHERE {column} = 'alex'".encode()
        ).fetchone()
        assert row == (0,), table
    assert s.calls_to("r-alex-phone") == []
    assert s.run.worker.stats.skipped["no_access"] == 1
    text = "\n".join(f"{r.getMessage()} {getattr(r, 'fields', '')}" for r in caplog.records)
    assert "alex" not in text


def test_admin_hint_from_access_expiring_and_security_from_device_pending(
    scenario: Callable[[str], Scenario],
) -> None:
    """TestAdminHintFromAccessExpiring, TestSecurityHintFromDevicePending: one security hint
    with the pending device as target (never to it), one admin hint for g-1; none for g-2
    (admin_enabled false) and none to the agent."""
    s = scenario("security_and_admin")
    got = [
        (c.registration_id, c.notification.kind.value, c.notification.target, c.notification.thread)
        for c in s.calls
    ]
    assert got == [
        ("r-alex-phone", "security", "alex-new", None),
        ("r-alex-phone", "admin", "g-1", None),
    ]
    assert s.run.worker.stats.skipped["preference"] >= 1


def test_badge_count_and_sync(scenario: Callable[[str], Scenario]) -> None:
    """TestBadgeCount, TestBadgeSync: every push carries the badge at send time; a read that
    lowers it gives one sync at once with the read thread cleared, a second within the
    interval one more at its end, a read that changes nothing none."""
    s = scenario("badge_sync")
    calls = s.calls_to("r-alex-phone")
    hints = [(c.notification.kind.value, c.notification.badge) for c in calls]
    assert hints[:2] == [("message", 1), ("message", 2)]  # t, then t and t2 unread (level all)
    syncs = [c.notification for c in calls if c.notification.kind is Kind.SYNC]
    assert [(n.badge, n.cleared, n.thread, n.count, n.quiet) for n in syncs] == [
        (1, ("t",), None, 0, False),
        (0, ("t2",), None, 0, False),
    ]


def test_dm_hints(scenario: Callable[[str], Scenario]) -> None:
    """TestDMHint: Sam's message gives Alex one dm hint; the silent one none."""
    s = scenario("dm_hints")
    alex = [(c.notification.kind.value, c.notification.message) for c in s.calls_to("r-alex-phone")]
    assert alex == [("dm", "d1")]


def test_automatic_following(scenario: Callable[[str], Scenario]) -> None:
    """TestAutomaticFollowing: a human who writes in a thread that is not a main thread gets a
    row all and one notification_pref.updated, in the consumer's round; never in a main
    thread; an own row (Robin's mute) stays."""
    s = scenario("automatic_following")
    conn = s.run.conn
    rows = conn.execute(
        f"SELECT user_id, target_id, level, version FROM {SCHEMA}.notification_preferences"
        " WHERE target_kind = 'thread' ORDER BY 1, 2"
    ).fetchall()
    assert rows == [("alex", "t", "all", 1), ("robin", "t", "mute", 1), ("sam", "t", "all", 1)]
    appended = conn.execute(
        f"SELECT audience, actor, payload FROM {SCHEMA}.event_log"
        " WHERE type = 'notification_pref.updated' AND seq > 0 ORDER BY seq"
    ).fetchall()
    logged = [json.loads(line) for line in s.log.read_text().splitlines()]
    logged_prefs = sum(1 for e in logged if e["type"] == "notification_pref.updated")
    follows = appended[logged_prefs:]
    assert [(a, b, p["preference"]["target"]["id"]) for a, b, p in follows] == [
        ("alex", "alex", "t"),
        ("sam", "sam", "t"),
    ]
    assert all(
        p["preference"] == {"target": {"kind": "thread", "id": "t"}, "level": "all", "version": 1}
        for _a, _b, p in follows
    )
    # The follow event carries the time of the message it follows.
    times = conn.execute(
        f"SELECT occurred_at FROM {SCHEMA}.event_log WHERE type = 'notification_pref.updated'"
        " ORDER BY seq"
    ).fetchall()
    assert times[-2][0] == START + timedelta(seconds=10)


def test_following_never_for_agents_and_main_threads(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(dsn, conn)
        from pgpipeline import Log, lines_of

        log = Log().team()
        log.at(10).msg("a1", "lotse", seq=1, origin="agent")
        log.msg("h1", "alex", thread="c-main", seq=1)
        run.feed_lines(lines_of(log))
        rows = conn.execute(f"SELECT count(*) FROM {SCHEMA}.notification_preferences").fetchone()
        run.worker.close()
    assert rows == (0,)
    assert HOST_SCHEMA == "host"
