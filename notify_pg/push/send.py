"""The push round: due push sends claimed, checked, sent and their results written.

`SendRound.send_pushes` runs three steps: step 1 in a transaction claims due push sends under a
lease and checks each (registration, age, access with the rights of now, provider) and computes
the badge; step 2 calls the providers outside any transaction under the process-wide
`notify_pg.push.providers.ProviderGate`; step 3 applies each result to the registration row
locked ``FOR UPDATE`` (`notify_core.hints.delivery.apply_result`) and schedules a retry
(`retry_delay`
with jitter, `retry_at`). A crash between steps 2 and 3 lets the lease expire and the push goes
again with the same notification id: at least once.

Provider results the database did not take are held (`SendRound.held_results`) and written
before anything else once it is back, so an outage never sends a push twice: `HeldResults`
writes them at the start of every pass of the loop, and the push round claims nothing while
any is held.

Logs carry counts, kind names (as the metrics do), reasons, outcomes, provider names and error
types: never a person, a thread, a message or a token (a token's hash prefix at most).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import attrs

from notify_core.hints.delivery import (
    Action,
    Notification,
    Outcome,
    RegistrationState,
    ResultClass,
    SendResult,
    apply_result,
    retry_at,
    retry_delay,
)
from notify_core.hints.pipeline import Pipeline
from notify_core.records import DeliveryChannel, RecordInEffect, RecordReason, verdict
from notify_core.values.kinds import THREAD_KINDS, Kind, kind_from_code, kind_name
from notify_pg.db.seam import Conn
from notify_pg.push.context import PushContext
from notify_pg.push.providers import PushProvider
from notify_pg.push.providers.announce import warn_unserved
from notify_pg.push.providers.fanout import send_all
from notify_pg.push.session import Session
from notify_pg.push.world import PgWorld
from notify_pg.stores.record_facts import governing, record_from_json
from notify_pg.stores.registrations import Registration

__all__ = ["HeldResults", "SendRound"]

_log = logging.getLogger("notify_pg.worker")

#: The skip reasons of a record at send time (M2, M3); their metric reason is ``preference``.
_RECORD_REASONS = frozenset(r.value for r in RecordReason)


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


@attrs.frozen
class _Claimed:
    id: int
    notification_id: str
    registration_id: str
    recipient: str
    kind: int
    thread: str | None
    message: str | None
    target: str | None
    quiet: bool
    count: int
    cleared: tuple[str, ...]
    due_at: datetime
    attempt: int
    #: The recipient's record in effect at the send (M1), ``None`` when none is.
    record: RecordInEffect | None = None


#: The claim's columns of a send's registration (`RegistrationRepository.from_send_row`).
_REGISTRATION = slice(13, 26)


def _claimed(row: tuple[Any, ...], now: datetime) -> _Claimed:
    ident, nid, reg, recipient, kind, thread, message, target, quiet, count = row[:10]
    cleared, due_at, attempt = row[10:13]
    latest = row[26]
    record = None if latest is None else governing([record_from_json(latest)], now)
    return _Claimed(
        ident,
        nid,
        reg,
        recipient,
        kind,
        thread,
        message,
        target,
        quiet,
        count,
        tuple(cleared),
        due_at.astimezone(UTC),
        attempt,
        record,
    )


@attrs.frozen
class _Prepared:
    claimed: _Claimed
    registration: Registration
    provider: PushProvider
    notification: Notification


class SendRound:
    """Push rounds of one worker, and the provider results it holds over a database failure.

    Args:
        push: what the push rounds of the worker share.
    """

    #: The round's name in logs, metrics and ``notify db status``.
    name = "push"

    def __init__(self, push: PushContext) -> None:
        self.push = push
        self._pool: ThreadPoolExecutor | None = None
        # Provider results not written yet (the database failed after the call): written
        # before anything else once it is back, so an outage never sends a push twice.
        self._held: list[tuple[_Prepared, SendResult]] = []
        #: The failure of this pass's first write of held results (`HeldResults`): raised by
        #: `run` instead of a round, so no push is claimed while results are held.
        self.held_failure: Exception | None = None
        self._lost = False

    def run(self, stop: threading.Event) -> int:
        """Run one push round (`send_pushes`); first raise the failure of this pass's write
        of held results, if it failed (`HeldResults`)."""
        failure, self.held_failure = self.held_failure, None
        if failure is not None:
            raise failure
        return self.send_pushes()

    def failure_fields(self) -> Mapping[str, object]:
        """``held``: the results waiting to be written, on every failed round's log line."""
        return {"held": len(self._held)} if self._held else {}

    def finish(self) -> None:
        """At the loop's stop, try the held results once more.

        Raises:
            StorageError: PostgreSQL failed again (these pushes may go once more).
        """
        if self._held:
            try:
                self.write_held_results()
            except Exception:
                self._lost = True
                raise

    def close(self) -> None:
        """Stop the provider threads (and say so when held results were given up)."""
        if self._lost and self._held:
            _log.error("push results lost", extra={"fields": {"held": len(self._held)}})
        self._lost = False
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def send_pushes(self) -> int:
        """Run one push round (claim and check, send, write the results); return the sends handled.

        Results held from an earlier round are written first; a round claims nothing while
        any is held. When the database fails while results are written, the results not
        written yet stay held (`held_results`) and the round raises: the worker writes them
        when the database is back and never calls the provider for them again.

        Raises:
            StorageError: PostgreSQL failed (results of provider calls made stay held).
        """
        started = time.perf_counter()
        handled = self.write_held_results()
        now = self.push.clock()
        prepared: list[_Prepared] = []
        with self.push.connection.transaction() as conn:
            # The claim returns each send's registration too (one statement, not two).
            rows = self.push.seam.all(
                conn,
                "claim_push_sends_for_send",
                {
                    "now": now,
                    "lease_until": now + self.push.config.send_lease,
                    "limit": self.push.config.send_batch,
                },
            )
            if not rows:
                return handled
            session = Session(conn)
            pipeline, _schedule = self.push.pipeline(session)
            claimed = [_claimed(row, now) for row in rows]
            found = {
                row[13]: self.push.registrations.from_send_row(row[_REGISTRATION])
                for row in rows
                if row[13] is not None
            }
            handled += len(claimed)
            prepared = self._step1(session, pipeline, claimed, found, now)
        results = self._step2(prepared)
        self._held.extend(zip(prepared, results, strict=True))
        self.write_held_results()
        duration_ms = _elapsed_ms(started)
        self.push.recorder.round_done("push", handled, duration_ms / 1000)
        fields = {"round": "push", "duration_ms": duration_ms, "sends": handled}
        _log.info("push round", extra={"fields": {**fields, "calls": len(prepared)}})
        return handled

    @property
    def held_results(self) -> int:
        """How many provider results wait to be written (the database failed meanwhile)."""
        return len(self._held)

    def write_held_results(self) -> int:
        """Write the provider results held over a database failure, in call order, in one
        transaction; return how many were written.

        Raises:
            StorageError: PostgreSQL failed again; the results stay held (none is written).
        """
        if not self._held:
            return 0
        try:
            written = self._step3(self._held)
        except Exception:
            _log.warning("push results held", extra={"fields": {"held": len(self._held)}})
            raise
        self._held = []
        for item, outcome, action, expired, counted, deactivated in written:
            self._written(item, outcome, action, expired, counted, deactivated)
        return len(written)

    def _step1(
        self,
        session: Session,
        pipeline: Pipeline,
        batch: Sequence[_Claimed],
        found: Mapping[str, tuple[Registration, RegistrationState]],
        now: datetime,
    ) -> list[_Prepared]:
        """Check the claimed sends of a round and build their notifications, set-based: the
        registrations (``found``, read with the claim), the recipients' facts and their
        badges are read for the whole batch at once; the skipped sends are finished with one
        statement."""
        conn = session.conn
        world = pipeline.world
        assert isinstance(world, PgWorld)
        # Facts of all recipients of the claimed sends are loaded together.
        session.batch = tuple(dict.fromkeys(c.recipient for c in batch))
        world.prefetch_allowed(
            list(dict.fromkeys((c.recipient, c.thread) for c in batch if c.thread is not None))
        )
        ready: list[tuple[_Claimed, Registration, PushProvider, Kind]] = []
        finished: list[tuple[_Claimed, str, str | None]] = []
        for claimed in batch:
            checked = self._check(world, claimed, found.get(claimed.registration_id), now)
            if isinstance(checked, str):
                finished.append((claimed, "skipped", checked))
                metric = "preference" if checked in _RECORD_REASONS else checked
                self.push.stats.skipped[metric] += 1
                self.push.recorder.push_skipped(metric, claimed.kind)
                if checked == "no_provider":
                    # One warning per provider and process, not a line per push.
                    warn_unserved(
                        found[claimed.registration_id][0].provider, self.push.unserved_warned
                    )
                else:
                    _log.info(
                        "push skipped",
                        extra={"fields": {"kind": kind_name(claimed.kind), "reason": checked}},
                    )
            else:
                ready.append(checked)
        if finished:
            _end(self.push, conn, finished, now)
        # Every push carries its recipient's badge at send time: counted for all at once.
        world.prefetch_badges(c.recipient for c, *_ in ready)
        badges: dict[str, list[str]] = {}
        prepared: list[_Prepared] = []
        for claimed, registration, provider, kind in ready:
            recipient = claimed.recipient
            counted = badges.get(recipient)
            if counted is None:
                counted = badges[recipient] = pipeline.counted_threads(recipient, now)
            cleared = tuple(t for t in claimed.cleared if t not in counted)
            notification = Notification(
                id=claimed.notification_id,
                kind=kind,
                thread=claimed.thread,
                message=claimed.message,
                target=claimed.target,
                quiet=claimed.quiet,
                count=claimed.count,
                badge=len(counted),
                cleared=cleared,
                instance_id=self.push.config.instance_id,
            )
            prepared.append(_Prepared(claimed, registration, provider, notification))
        return prepared

    def _check(
        self,
        world: PgWorld,
        claimed: _Claimed,
        found: tuple[Registration, RegistrationState] | None,
        now: datetime,
    ) -> str | tuple[_Claimed, Registration, PushProvider, Kind]:
        """One claimed send's checks of step 1: the skip reason, or what the send needs."""
        recipient = claimed.recipient
        if found is None:
            return "no_registration"
        registration, state = found
        devices = {d.id for d in world.devices(recipient)}
        if (
            not state.active
            or registration.user_id != recipient
            or registration.device_id not in devices
        ):
            return "no_registration"
        if now - claimed.due_at > self.push.config.max_age:
            return "expired"
        kind = kind_from_code(claimed.kind)
        info = world.user(recipient)
        if kind in THREAD_KINDS:
            allowed = claimed.thread is not None and world.allowed(recipient, claimed.thread)
        else:
            allowed = info is not None and info.active_human
            if kind is Kind.SECURITY:
                allowed = allowed and registration.device_id != claimed.target
        if not allowed:
            return "no_access"
        # M1-M3: the record in effect at the send may pause push or turn it off (the cap was
        # counted at the decision).
        held = verdict(claimed.record, DeliveryChannel.PUSH)
        if held is not None:
            return held.value
        provider = self.push.providers.get(registration.provider)
        if provider is None:
            return "no_provider"
        return claimed, registration, provider, kind

    def _pool_of(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(
                max_workers=self.push.config.max_concurrent_requests,
                thread_name_prefix="notify-push",
            )
        return self._pool

    def _step2(self, prepared: Sequence[_Prepared]) -> list[SendResult]:
        """Call the providers, up to ``max_concurrent_requests`` requests at once; the
        results in the order of ``prepared``.

        One call per push, on up to that many pool tasks that each take the next call not
        taken yet; with ``batch_sends`` the pushes of a provider that sends over one
        multiplexed connection go to it in one batch instead
        (`notify_pg.push.providers.fanout`: one hand-over, its streams started as request
        slots free up). A push's exception is its own transient
        failure (R1: ``retry``), logged with its provider and error type.
        """
        if not prepared:
            return []
        with self.push.stats_lock:
            self.push.stats.provider_calls += len(prepared)
        outcomes = send_all(
            [(item.provider, item.registration, item.notification) for item in prepared],
            gate=self.push.gate,
            pool=self._pool_of,
            limit=self.push.config.max_concurrent_requests,
            batch=self.push.config.batch_sends,
        )
        results: list[SendResult] = []
        for item, (answer, seconds) in zip(prepared, outcomes, strict=True):
            self.push.stats.provider_seconds += seconds
            self.push.recorder.send_duration(item.provider.name, seconds)
            if isinstance(answer, Exception):
                _log.warning(
                    "provider call failed",
                    extra={
                        "fields": {
                            "provider": item.provider.name,
                            "error_type": type(answer).__name__,
                            "token_ref": item.registration.token_ref,
                        }
                    },
                )
                answer = SendResult(result_class=ResultClass.RETRY)
            results.append(answer)
        return results

    def _step3(
        self, results: Sequence[tuple[_Prepared, SendResult]]
    ) -> list[tuple[_Prepared, str, str, bool, bool, str | None]]:
        """Apply provider results to their registrations, in call order, in one transaction:
        the rows locked ``FOR UPDATE`` with one statement (in id order), each result applied to
        the state the results before it left, the changed states, the finished and the retried
        sends written with one statement each. Returns per result what `_written` logs."""
        out: list[tuple[_Prepared, str, str, bool, bool, str | None]] = []
        with self.push.connection.transaction() as conn:
            states = self.push.registrations.lock_states(
                conn, [item.claimed.registration_id for item, _r in results]
            )
            changed: dict[str, RegistrationState] = {}
            finished: list[tuple[_Claimed, str, str | None]] = []
            retried: list[tuple[int, datetime]] = []
            for item, result in results:
                claimed = item.claimed
                now = self.push.clock()
                outcome, action, expired = "registration_gone", Action.DROP.value, False
                state = states.get(claimed.registration_id)
                if state is None:
                    finished.append((claimed, "dropped", None))
                    out.append((item, outcome, action, expired, False, None))
                    continue
                change = apply_result(state, result, now, self.push.config.max_failures)
                outcome, action = change.outcome.value, change.action.value
                deactivated = None
                if state.active and not change.state.active:
                    deactivated = change.state.disabled_reason
                if change.state != state:
                    states[claimed.registration_id] = change.state
                    changed[claimed.registration_id] = change.state
                at: datetime | None = None
                if change.action is Action.RETRY:
                    delay = retry_delay(
                        claimed.attempt,
                        self.push.config.retry_base,
                        self.push.config.retry_cap,
                        result.retry_after,
                        self.push.draw_jitter(),
                    )
                    at = retry_at(claimed.due_at, now, delay, self.push.config.max_age)
                    expired = at is None
                if at is not None:
                    retried.append((claimed.id, at))
                else:
                    finished.append((claimed, _ended(outcome, action), None))
                out.append((item, outcome, action, expired, True, deactivated))
            self.push.registrations.record_many(conn, list(changed.items()))
            if finished:
                _end(self.push, conn, finished, self.push.clock())
            if retried:
                self.push.seam.run(
                    conn,
                    "retry_push_sends",
                    {"ids": [i for i, _at in retried], "next_ats": [at for _i, at in retried]},
                )
        return out

    def _written(
        self,
        item: _Prepared,
        outcome: str,
        action: str,
        expired: bool,
        counted: bool,
        deactivated: str | None,
    ) -> None:
        """Count and log one written result: one line per provider call."""
        claimed = item.claimed
        if counted:
            self.push.stats.sent[outcome] += 1
            self.push.recorder.push_result(
                item.provider.name, claimed.kind, outcome, action, deactivated
            )
        _log.info(
            "push sent",
            extra={
                "fields": {
                    "provider": item.provider.name,
                    "kind": kind_name(claimed.kind),
                    "outcome": outcome,
                    "action": action,
                    "attempt": claimed.attempt,
                }
            },
        )
        if expired:
            self.push.stats.skipped["expired"] += 1
            self.push.recorder.push_skipped("expired", claimed.kind)
            _log.info(
                "push skipped",
                extra={"fields": {"kind": kind_name(claimed.kind), "reason": "expired"}},
            )


def _end(
    push: PushContext, conn: Conn, ended: Sequence[tuple[_Claimed, str, str | None]], at: datetime
) -> None:
    """Delete ended sends and keep each in ``push_deliveries`` with its outcome, reason and the
    record in effect at its end (M6), in one statement."""
    push.seam.run(
        conn,
        "end_push_sends",
        {
            "ids": [c.id for c, _o, _r in ended],
            "outcomes": [outcome for _c, outcome, _r in ended],
            "reasons": [reason for _c, _o, reason in ended],
            "records": [None if c.record is None else c.record.preference_id for c, *_ in ended],
            "at": at,
        },
    )


def _ended(outcome: str, action: str) -> str:
    """How a send that will not be tried again ended (``push_deliveries.outcome``)."""
    if outcome == Outcome.ACCEPTED.value:
        return "sent"
    return "failed" if action == Action.RETRY.value else "dropped"


class HeldResults:
    """The first round of a pass: write the provider results held over a database failure.

    A failure here does not end the pass: the consumer and due-work rounds still run (they
    claim no push send), and the push round then raises it instead of claiming (`SendRound`).

    Args:
        send: the push round whose results it writes.
    """

    #: Failures of this round are those of the push round.
    name = "push"

    def __init__(self, send: SendRound) -> None:
        self.send = send

    def run(self, stop: threading.Event) -> int:
        """Write the held results; return how many (a failure is kept for the push round)."""
        self.send.held_failure = None
        try:
            return self.send.write_held_results()
        except Exception as exc:  # raised by the push round, after the rounds that may run
            self.send.held_failure = exc
            return 0
