"""AZ-P5 on PostgreSQL (seed 001): no push is sent to anyone who cannot read its target at send
time, in random small worlds whose rights change between an event and its push.

The worlds of `strategies_world.small_world_logs` run through the worker step by step; push
rounds run after some events only (drawn), so grants and revocations fall between a hint's
decision and its send. Every provider call is held to an independent reference of the rights
(`reference_model.Reference`, D2) as the world stands when the call is made; every hint sent
at an event is held to the rights of that moment.
"""

from __future__ import annotations

import itertools
import sys
import tomllib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pgpipeline import POLICY, PgRun

from notify_core.replay.run import policy_from_mapping
from notify_core.values.kinds import THREAD_KINDS, Kind
from notify_pg.push.providers import FakeProvider
from notify_pg.push.worker import WorkerConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from reference_model import Reference
from strategies_world import seeded_small_world, small_world_logs


def check_calls(provider: FakeProvider, seen: int, ref: Reference, owner: dict[str, str]) -> int:
    """Hold the provider calls after the first ``seen`` to the rights of now; return the count."""
    for call in provider.calls[seen:]:
        n = call.notification
        person = owner[call.registration_id]
        if n.kind in THREAD_KINDS:
            assert n.thread is not None and ref.readable(person, n.thread), (
                f"AZ-P5: push to {person} who cannot read {n.thread} now ({n.kind.value})"
            )
        else:
            assert n.kind is Kind.SYNC and ref.users[person]["active"], f"AZ-P5: {n}"
    return len(provider.calls)


def run_world(
    events: list[dict[str, Any]],
    push_now: Callable[[], bool],
    new_database: Callable[[str | None], str],
    pg_template: str,
) -> dict[str, int]:
    """Run one world on a new database, pushing after the events ``push_now`` picks, and hold
    every push and every hint sent at an event to the reference; return what was checked."""
    dsn = new_database(pg_template)
    provider = FakeProvider("apns")
    ref = Reference()
    owner: dict[str, str] = {}
    seen = 0
    revoked_at_send = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        run = PgRun(
            dsn,
            conn,
            policy_from_mapping(tomllib.loads(POLICY)),
            providers=[provider],
            config=WorkerConfig(partitions=1),
        )
        stats = run.worker.stats
        try:
            for event in events:
                before = len(run.hints())
                run.feed(event)
                ref.apply(event)
                if event["type"] == "push.registered":
                    device = event["payload"]["device"]
                    owner[event["payload"]["registration"]] = device.rsplit("-", 1)[0]
                for hint in run.hints()[before:]:
                    if hint["trigger"] == "event" and hint["decision"] == "send":
                        assert "thread" not in hint or ref.readable(
                            hint["recipient"], hint["thread"]
                        ), f"AZ-P5 at decision time: {hint}"
                if push_now():
                    skipped = stats.skipped["no_access"]
                    run.push()
                    revoked_at_send += stats.skipped["no_access"] - skipped
                    seen = check_calls(provider, seen, ref, owner)
            skipped = stats.skipped["no_access"]
            run.settle()
            revoked_at_send += stats.skipped["no_access"] - skipped
            seen = check_calls(provider, seen, ref, owner)
        finally:
            run.worker.close()
    return {"calls": seen, "revoked_at_send": revoked_at_send}


@settings(
    max_examples=max(4, settings.default.max_examples // 40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(events=small_world_logs(max_steps=40), data=st.data())
def test_az_p5_no_push_to_anyone_who_cannot_read_at_send_time(
    events: list[dict[str, Any]],
    data: st.DataObject,
    new_database: Callable[[str | None], str],
    pg_template: str,
) -> None:
    """AZ-P5, D2: pushes (and the hints sent at an event) reach only people who can read the
    thread when they go out, whatever changed in between."""
    run_world(events, lambda: data.draw(st.booleans()), new_database, pg_template)


def test_az_p5_the_worlds_send_and_revoke_between_event_and_send(
    new_database: Callable[[str | None], str], pg_template: str
) -> None:
    """AZ-P5: the check is not vacuous: fixed worlds send pushes, and some pushes meet a right
    taken away after their event (skipped as ``no_access`` at send time)."""
    totals: Counter[str] = Counter()
    for seed in (1, 12, 17):  # fixed worlds in which rights change while pushes wait
        # Pushes go out after every tenth event only, so that rights change while many wait.
        pushes = itertools.cycle([False] * 9 + [True])
        world = seeded_small_world(seed, steps=50)
        totals.update(run_world(world, pushes.__next__, new_database, pg_template))
    assert totals["calls"] >= 10, totals
    assert totals["revoked_at_send"] >= 3, totals
