"""The send step of seed 001 note 11 on PostgreSQL: checks with the rights of now, the provider
call outside any transaction under the process-wide limit, results applied to the registration
row (R1), retries (R2), and what a push carries (R3)."""

from __future__ import annotations

import logging
import threading
import time
import tomllib
import typing
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg
import pytest
from pgpipeline import POLICY, START, Log, PgRun, lines_of
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.hints.delivery import Notification, SendResult
from notify_core.hints.levels import Target, TargetKind
from notify_core.replay.run import policy_from_mapping
from notify_core.values.kinds import Kind
from notify_pg.push.providers import FakeProvider, ProviderGate, PushProvider
from notify_pg.push.worker import WorkerConfig
from notify_pg.stores.registrations import Registration, RegistrationRepository

CONFIG = WorkerConfig(
    max_age=timedelta(minutes=30),
    retry_base=timedelta(seconds=10),
    retry_cap=timedelta(minutes=5),
    max_failures=3,
)


def world() -> Log:
    """Alex, Sam, Robin, the Owner, Lotse; space s, channel c, threads c-main and t; each
    human but Robin has a phone registered with apns (r-alex-phone ...)."""
    return Log().team()


@pytest.fixture
def run(new_database: Callable[[str | None], str], pg_template: str) -> Iterator[PgRun]:
    dsn = new_database(pg_template)
    with psycopg.connect(dsn, autocommit=True) as conn:
        provider = FakeProvider("apns")
        run = PgRun(
            dsn,
            conn,
            policy_from_mapping(tomllib.loads(POLICY)),
            providers=[provider],
            config=CONFIG,
        )
        run.feed_lines(lines_of(world()))
        yield run
        run.worker.close()


def provider(run: PgRun, name: str = "apns") -> FakeProvider:
    found = run.worker.push.providers[name]
    assert isinstance(found, FakeProvider)
    return found


def mention_alex(run: PgRun, at: float = 10, seq: int = 1) -> None:
    """Sam mentions Alex in t: one mention hint, one push send for r-alex-phone."""
    run.event(
        "message.created",
        {
            "message": f"m{seq}",
            "thread": "t",
            "thread_seq": seq,
            "author": "sam",
            "origin": "human",
            "kind": "text",
            "mention_ids": ["alex"],
        },
        actor="sam",
        at=START + timedelta(seconds=at),
    )


def registration(run: PgRun, reg: str = "r-alex-phone") -> dict[str, Any]:
    cur = run.conn.execute(
        f"SELECT failure_count, last_success_at, disabled_at, disabled_reason"
        f" FROM {SCHEMA}.push_registrations WHERE id = %s",
        [reg],
    )
    names = [d.name for d in cur.description or []]
    row = cur.fetchone()
    assert row is not None
    return dict(zip(names, row, strict=True))


def set_failures(run: PgRun, count: int, reg: str = "r-alex-phone") -> None:
    run.conn.execute(
        f"UPDATE {SCHEMA}.push_registrations SET failure_count = %s WHERE id = %s", [count, reg]
    )


# --- R3: a push carries only IDs, the kind, flags, a count and the badge ----------------------


def test_notification_carries_no_text() -> None:
    """Walk the types a provider receives: only IDs (str), the kind, flags, counts, ID lists."""
    allowed = {str, str | None, Kind, bool, int, tuple[str, ...]}
    hints = typing.get_type_hints(Notification)
    for field in attrs.fields(Notification):
        assert hints[field.name] in allowed, field.name
    assert {f.name for f in attrs.fields(Notification)} == {
        "id",
        "kind",
        "thread",
        "message",
        "target",
        "quiet",
        "count",
        "badge",
        "cleared",
        "instance_id",
    }
    send = typing.get_type_hints(PushProvider.send)
    assert send == {
        "registration": Registration,
        "notification": Notification,
        "return": SendResult,
    }
    # The registration hides its token from repr (and so from any log of the value).
    reg = Registration(
        id="r",
        user_id="u",
        device_id="d",
        provider="apns",
        environment="production",
        app_id="a",
        created_at=START,
        token="secret-token",
    )
    assert "secret-token" not in repr(reg)
    assert len(reg.token_ref) == 8


def test_push_send_rows_hold_no_text(run: PgRun) -> None:
    """The push_sends table has IDs, the kind code, flags, counts and instants: no text column
    other than IDs."""
    columns = run.conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = %s AND table_name = 'push_sends' ORDER BY ordinal_position",
        [SCHEMA],
    ).fetchall()
    text = {name for name, kind in columns if kind == "text"}
    assert text == {
        "notification_id",
        "registration_id",
        "recipient",
        "thread",
        "message",
        "target",
        "record",  # a preference id (M6)
    }
    assert dict(columns)["kind"] == "smallint"
    assert dict(columns)["cleared"] == "ARRAY"


# --- steps 1 to 3 -------------------------------------------------------------------------


def test_accepted_resets_failures_and_carries_the_badge(run: PgRun) -> None:
    set_failures(run, 2)
    mention_alex(run)
    assert run.push() == 1
    (call,) = provider(run).calls
    n = call.notification
    assert (n.kind, n.thread, n.message, n.target, n.quiet, n.count) == (
        Kind.MENTION,
        "t",
        "m1",
        None,
        False,
        0,
    )
    assert n.badge == 1  # t holds an unread mention of Alex (B1)
    assert call.registration_id == "r-alex-phone"
    state = registration(run)
    assert state["failure_count"] == 0 and state["last_success_at"] == START + timedelta(seconds=10)
    assert run.push_sends() == []
    assert run.worker.stats.sent["accepted"] == 1


@pytest.mark.parametrize("reason", ["token_invalid", "topic_mismatch", "sender_mismatch"])
def test_disable_deactivates_with_its_reason(run: PgRun, reason: str) -> None:
    provider(run).program("r-alex-phone", SendResult(result_class="disable", disable_reason=reason))
    mention_alex(run)
    run.push()
    state = registration(run)
    assert state["disabled_reason"] == reason
    assert state["disabled_at"] == START + timedelta(seconds=10)
    assert run.push_sends() == []
    assert run.worker.stats.sent["rejected_token"] == 1


def test_disable_with_invalid_since_before_created_at_changes_nothing(run: PgRun) -> None:
    provider(run).program(
        "r-alex-phone",
        SendResult(
            result_class="disable",
            disable_reason="token_invalid",
            invalid_since=START - timedelta(days=1),
        ),
    )
    mention_alex(run)
    run.push()
    assert registration(run)["disabled_at"] is None


def test_retry_counts_a_failure_and_schedules_the_next_attempt(run: PgRun) -> None:
    provider(run).program("r-alex-phone", SendResult(result_class="retry"))
    mention_alex(run)
    run.push()
    assert registration(run)["failure_count"] == 1
    (send,) = run.push_sends()
    # retry_delay(1, base 10 s, cap 5 min, no Retry-After, jitter 1) = 10 s after the attempt.
    assert (send["attempt"], send["next_at"]) == (2, START + timedelta(seconds=20))
    assert run.push() == 0  # not due yet
    run.at(START + timedelta(seconds=20))
    assert run.push() == 1
    assert registration(run)["failure_count"] == 2
    assert run.push_sends()[0]["next_at"] == START + timedelta(seconds=40)  # 2 * base


def test_retry_after_of_the_provider_is_respected(run: PgRun) -> None:
    provider(run).program(
        "r-alex-phone", SendResult(result_class="retry", retry_after=timedelta(seconds=90))
    )
    mention_alex(run)
    run.push()
    assert run.push_sends()[0]["next_at"] == START + timedelta(seconds=100)


def test_retry_at_max_failures_deactivates_and_drops(run: PgRun) -> None:
    set_failures(run, CONFIG.max_failures - 1)
    provider(run).program("r-alex-phone", SendResult(result_class="retry"))
    mention_alex(run)
    run.push()
    state = registration(run)
    assert state["disabled_reason"] == "repeated_failures"
    assert state["failure_count"] == CONFIG.max_failures
    assert run.push_sends() == []


def test_throttled_keeps_the_count_and_retries(run: PgRun) -> None:
    set_failures(run, 1)
    provider(run).program(
        "r-alex-phone", SendResult(result_class="throttled", retry_after=timedelta(seconds=30))
    )
    mention_alex(run)
    run.push()
    assert registration(run)["failure_count"] == 1
    assert run.push_sends()[0]["next_at"] == START + timedelta(seconds=40)
    assert run.worker.stats.sent["throttled"] == 1


@pytest.mark.parametrize("cls", ["config_error", "program_error"])
def test_config_and_program_errors_change_nothing_and_drop(run: PgRun, cls: str) -> None:
    set_failures(run, 1)
    provider(run).program("r-alex-phone", SendResult(result_class=cls))
    mention_alex(run)
    run.push()
    state = registration(run)
    assert (state["failure_count"], state["disabled_at"]) == (1, None)
    assert run.push_sends() == []
    assert run.worker.stats.sent["rejected_other"] == 1


def test_a_retry_past_max_age_is_dropped_as_expired(run: PgRun) -> None:
    provider(run).program(
        "r-alex-phone", SendResult(result_class="retry", retry_after=timedelta(hours=1))
    )
    mention_alex(run)
    run.push()
    assert run.push_sends() == []
    assert run.worker.stats.skipped["expired"] == 1


def test_a_provider_exception_is_a_transient_failure_and_the_token_is_never_logged(
    run: PgRun, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="notify_pg")
    provider(run).program("r-alex-phone", ConnectionError("token-r-alex-phone refused"))
    mention_alex(run)
    run.push()
    assert registration(run)["failure_count"] == 1
    assert run.push_sends()[0]["attempt"] == 2
    text = "\n".join(f"{r.getMessage()} {getattr(r, 'fields', '')}" for r in caplog.records)
    assert "provider call failed" in text
    assert "token-r-alex-phone" not in text  # the fake's token (WorldLoader: token-<id>)
    assert RegistrationRepository(SCHEMA).for_send(run.conn, "r-alex-phone") is not None
    ref = RegistrationRepository(SCHEMA).for_send(run.conn, "r-alex-phone")
    assert ref is not None and ref[0].token_ref in text  # a hash prefix at most


def test_too_old_is_dropped_without_a_call(run: PgRun) -> None:
    """TestPushSend_TooOld: the clock passes due_at + max_age before the send runs."""
    mention_alex(run)
    run.at(START + timedelta(seconds=10) + CONFIG.max_age + timedelta(seconds=1))
    run.push()
    assert provider(run).calls == []
    assert run.worker.stats.skipped["expired"] == 1
    assert run.push_sends() == []


def test_no_provider(run: PgRun) -> None:
    """TestPushSend_NoProvider: only apns is registered; a fcm registration gets no call."""
    run.conn.execute(
        f"UPDATE {SCHEMA}.push_registrations SET provider = 'fcm' WHERE id = 'r-alex-phone'"
    )
    mention_alex(run)
    run.push()
    assert provider(run).calls == []
    assert run.worker.stats.skipped["no_provider"] == 1
    assert run.push_sends() == []


def test_no_provider_warns_once_not_per_push(run: PgRun, caplog: pytest.LogCaptureFixture) -> None:
    """Pushes of a provider the worker does not serve are skipped with one warning per
    provider, not a line per push (issue 36: 5,003 lines in 5 s before)."""
    run.conn.execute(f"UPDATE {SCHEMA}.push_registrations SET provider = 'fcm'")
    with caplog.at_level(logging.INFO, logger="notify_pg.worker"):
        for seq, second in enumerate((10, 300, 600), start=1):
            mention_alex(run, at=second, seq=seq)
            run.push()
    assert run.worker.stats.skipped["no_provider"] >= 3
    messages = [r.getMessage() for r in caplog.records]
    assert messages.count("push provider missing") == 1
    assert "push skipped" not in messages
    (warning,) = [r for r in caplog.records if r.getMessage() == "push provider missing"]
    assert warning.levelno == logging.WARNING
    assert warning.fields["provider"] == "fcm"  # type: ignore[attr-defined]


def test_revocation_between_event_and_send(run: PgRun) -> None:
    """Seed 001 "Revocation between event and sending": Sam (level all on t) gets a hint; the
    right goes before the send runs: nothing is sent, counted no_access."""
    run.event(
        "notification_pref.updated",
        {"preference": {"target": {"kind": "thread", "id": "t"}, "level": "all", "version": 1}},
        actor="sam",
        audience="sam",
    )
    run.event(
        "message.created",
        {
            "message": "m1",
            "thread": "t",
            "thread_seq": 1,
            "author": "alex",
            "origin": "human",
            "kind": "text",
        },
        actor="alex",
        at=START + timedelta(seconds=10),
    )
    assert [s["recipient"] for s in run.push_sends()] == ["sam"]
    run.host.revoke(run.conn, "sam", Target(kind=TargetKind.SPACE, id="s"))
    run.push()
    assert provider(run).calls == []
    assert run.worker.stats.skipped["no_access"] == 1


@pytest.mark.parametrize(
    "change",
    [
        f"DELETE FROM {SCHEMA}.push_registrations WHERE id = 'r-alex-phone'",
        f"UPDATE {SCHEMA}.push_registrations SET disabled_at = now(), disabled_reason = 'logout'"
        " WHERE id = 'r-alex-phone'",
        f"UPDATE {HOST_SCHEMA}.devices SET state = 'revoked' WHERE id = 'alex-phone'",
    ],
    ids=["gone", "disabled", "device_revoked"],
)
def test_registration_gone_disabled_or_device_revoked_is_no_registration(
    run: PgRun, change: str
) -> None:
    mention_alex(run)
    assert len(run.push_sends()) == 1
    run.conn.execute(change.encode())
    run.push()
    assert provider(run).calls == []
    assert run.worker.stats.skipped["no_registration"] == 1
    assert run.push_sends() == []


def test_send_runs_outside_any_transaction(run: PgRun) -> None:
    seen: list[psycopg.pq.TransactionStatus] = []

    class Watching(FakeProvider):
        def send(self, registration: Registration, notification: Notification) -> SendResult:
            conn = run.worker.connection.conn
            assert conn is not None
            seen.append(conn.info.transaction_status)
            return super().send(registration, notification)

    run.worker.push.providers = {"apns": Watching("apns")}
    mention_alex(run)
    run.push()
    assert seen == [psycopg.pq.TransactionStatus.IDLE]


def test_the_gate_limits_concurrent_provider_requests(run: PgRun) -> None:
    """100 parallel sends with a blocking fake: never more than the limit at once."""
    repo = RegistrationRepository(SCHEMA)
    for i in range(99):
        repo.register(
            run.conn,
            id=f"r-extra-{i:02d}",
            user_id="alex",
            device_id="alex-phone",
            auth_session_id="s",
            provider="apns",
            token=f"extra-token-{i}",
            app_id="app",
        )
    release = threading.Event()
    blocking = FakeProvider("apns", gate=release)
    run.worker.push.providers = {"apns": blocking}
    run.worker.push.gate = ProviderGate(4)
    run.worker.push.config = attrs.evolve(CONFIG, send_batch=100, max_concurrent_requests=16)
    mention_alex(run)
    assert len(run.push_sends()) == 100
    sender = threading.Thread(target=run.push)
    sender.start()
    deadline = time.monotonic() + 10
    while blocking.active < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    assert blocking.active == 4
    release.set()
    sender.join(10)
    assert not sender.is_alive()
    assert len(blocking.calls) == 100
    assert blocking.max_active == 4
    assert run.push_sends() == []


def test_concurrent_calls_give_each_send_its_own_result_once(run: PgRun) -> None:
    """A round's provider calls run on several threads, each taking the next call not taken
    yet: every send is called once and its result lands on its own registration."""
    repo = RegistrationRepository(SCHEMA)
    regs = [f"r-extra-{i:02d}" for i in range(40)]
    for i, reg in enumerate(regs):
        repo.register(
            run.conn,
            id=reg,
            user_id="alex",
            device_id="alex-phone",
            auth_session_id="s",
            provider="apns",
            token=f"extra-token-{i}",
            app_id="app",
        )
    threads: set[int] = set()

    class Slow(FakeProvider):
        def send(self, registration: Registration, notification: Notification) -> SendResult:
            threads.add(threading.get_ident())
            time.sleep(0.002)  # calls overlap: several pool threads take part
            return super().send(registration, notification)

    slow = Slow("apns")
    retried = set(regs[::3])
    for reg in retried:
        slow.program(reg, SendResult(result_class="retry"))
    run.worker.push.providers = {"apns": slow}
    run.worker.push.config = attrs.evolve(CONFIG, send_batch=100, max_concurrent_requests=8)
    mention_alex(run)
    assert run.push() == 41
    assert sorted(c.registration_id for c in slow.calls) == sorted([*regs, "r-alex-phone"])
    assert 1 <= len(threads) <= 8
    for reg in regs:
        assert registration(run, reg)["failure_count"] == (1 if reg in retried else 0)
    assert sorted(s["registration_id"] for s in run.push_sends()) == sorted(retried)


def test_the_process_gate_is_shared() -> None:
    gate = ProviderGate.for_process(3)
    assert ProviderGate.for_process(50) is gate


def test_security_push_never_goes_to_the_pending_device(run: PgRun) -> None:
    """TestSecurityHintFromDevicePending: one security hint to Alex's other active devices."""
    run.event(
        "device.registered",
        {"device": "alex-new", "user": "alex", "platform": "android", "state": "pending"},
    )
    run.event(
        "device.pending",
        {"device": "alex-new", "platform": "android"},
        audience="alex",
        at=START + timedelta(seconds=10),
    )
    sends = run.push_sends()
    assert [(s["recipient"], s["registration_id"], s["kind"], s["target"]) for s in sends] == [
        ("alex", "r-alex-phone", 7, "alex-new")
    ]
    run.push()
    (call,) = provider(run).calls
    assert (call.notification.kind, call.notification.thread) == (Kind.SECURITY, None)


def test_clock_is_the_workers(run: PgRun) -> None:
    """Push rounds use the worker's clock, not the database's."""
    mention_alex(run)
    assert run.push_sends()[0]["due_at"] == START + timedelta(seconds=10)
    assert isinstance(run.clock(), datetime)


class _BatchRecorder(FakeProvider):
    """A `FakeProvider` that also takes a round's pushes in one batch, and records them."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.batches: list[list[str]] = []

    def send_many(
        self, calls: typing.Sequence[tuple[Registration, Notification]], slots: typing.Any
    ) -> list[tuple[SendResult | Exception, float]]:
        self.batches.append([registration.id for registration, _n in calls])
        return [(self.send(registration, n), 0.0) for registration, n in calls]


@pytest.mark.parametrize("batch_sends", [True, False])
def test_a_round_hands_its_pushes_to_a_batch_provider_at_once_unless_told_not_to(
    run: PgRun, batch_sends: bool
) -> None:
    repo = RegistrationRepository(SCHEMA)
    for i in range(9):
        repo.register(
            run.conn,
            id=f"r-extra-{i:02d}",
            user_id="alex",
            device_id="alex-phone",
            auth_session_id="s",
            provider="apns",
            token=f"extra-token-{i}",
            app_id="app",
        )
    provider = _BatchRecorder("apns")
    run.worker.push.providers = {"apns": provider}
    run.worker.push.config = attrs.evolve(CONFIG, send_batch=100, batch_sends=batch_sends)
    mention_alex(run)
    run.push()
    assert len(provider.calls) == 10 and run.push_sends() == []
    if batch_sends:
        assert [len(batch) for batch in provider.batches] == [10]
    else:
        assert provider.batches == []
