"""The batch send path of APNs and FCM (`send_many`) against the local servers: every push's
answer sorted into its own class in the order of the calls, one push's failure never another's,
each push taken once (counted by notification id at the server, also across GOAWAYs), the
request limit held, a configuration fault dropping one push and holding the others."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from provider_parts import HINT, Alerts, registration

from notify_core.hints.delivery import Notification, ResultClass, SendResult
from notify_pg.push.providers import ProviderGate
from notify_pg.push.providers.apns import ApnsKey, ApnsProvider
from notify_pg.push.providers.fcm import FcmProvider, ServiceAccount
from notify_pg.push.providers.h2client import Request
from notify_pg.push.providers.local.apns import LocalApns, apns_error
from notify_pg.push.providers.local.fcm import LocalFcm, fcm_error
from notify_pg.push.providers.local.h2server import Answer
from notify_pg.push.providers.local.tls import LocalCa
from notify_pg.stores.registrations import Registration

TEAM, KID, TOPIC = "TEAM123456", "KEY1234567", "com.example.chat"


class CountingSlots:
    """A `fanout.Slots` of ``limit`` slots that records the most taken at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self.most = 0
        self.taken = 0
        self._lock = threading.Lock()

    def take(self, wanted: int) -> int:
        with self._lock:
            got = min(wanted, self.limit - self.held)
            self.held += got
            self.taken += got
            self.most = max(self.most, self.held)
            return got

    def give(self, count: int = 1) -> None:
        with self._lock:
            self.held -= count
            assert self.held >= 0


def device(index: int) -> str:
    return f"{index:064x}"


def push(index: int, thread: str = "t") -> Notification:
    return Notification(id=f"n-{index}", kind="message", thread=thread, badge=1)


@pytest.fixture
def apns(ca: LocalCa) -> Iterator[LocalApns]:
    server = LocalApns(ca, latency=0.01).start()
    yield server
    server.close()


def apns_provider(
    server: LocalApns, ca: LocalCa, *, alerts: Alerts | None = None, team: str = TEAM
) -> ApnsProvider:
    key = ApnsKey.from_p8(server.team_key(TEAM, KID), key_id=KID, team_id=team)
    return ApnsProvider(
        key,
        production_url=server.server.url,
        sandbox_url="https://localhost:1",  # nothing listens: a sandbox push is a retry
        ca_file=ca.ca_file,
        max_age=timedelta(minutes=30),
        alerts=alerts,
    )


def test_apns_sorts_each_answer_of_a_batch_into_its_own_class_in_call_order(
    apns: LocalApns, ca: LocalCa
) -> None:
    programs: dict[int, Answer] = {
        3: apns_error(410, "Unregistered", timestamp_ms=1_790_000_000_000),
        7: apns_error(400, "BadDeviceToken"),
        11: apns_error(400, "DeviceTokenNotForTopic"),
        13: apns_error(429, "TooManyRequests", retry_after=120),
        17: apns_error(503, "ServiceUnavailable", retry_after=5),
        19: apns_error(413, "PayloadTooLarge"),
    }
    calls: list[tuple[Registration, Notification]] = []
    for i in range(60):
        apns.device(device(i), TOPIC)
        if i in programs:
            apns.program(device(i), programs[i])
        calls.append((registration("apns", device(i), id=f"r-{i}"), push(i)))
    calls[23] = (registration("apns", "../../x", id="r-23"), push(23))  # never sent
    calls[29] = (registration("apns", device(29), environment="sandbox"), push(29))
    provider = apns_provider(apns, ca)
    try:
        slots = CountingSlots(8)
        batch = provider.send_many(calls, slots)
        one_by_one = [provider.send(r, n) for r, n in calls]
    finally:
        provider.close()
    results = [result for result, _seconds in batch]
    assert results == one_by_one  # the same classes as one call each, push by push
    classes = {
        i: r.result_class.value for i, r in enumerate(results) if r.result_class != "accepted"
    }
    assert classes == {
        3: "disable",
        7: "disable",
        11: "disable",
        13: "throttled",
        17: "retry",
        19: "program_error",
        23: "disable",
        29: "retry",  # its host could not be reached: the others went out all the same
    }
    assert results[13] == SendResult(result_class="throttled", retry_after=timedelta(seconds=120))
    assert results[11].disable_reason == "topic_mismatch"
    assert all(seconds >= 0.01 for r, seconds in batch[:3])  # each its own request's time
    assert slots.most <= 8 and slots.held == 0  # every slot given back
    assert slots.taken == 59  # the bad token took none, the sandbox push one
    accepted = [p.payload["id"] for p in apns.received[: len(apns.received) // 2]]
    assert sorted(accepted) == sorted(  # type: ignore[type-var]
        f"n-{i}" for i in range(60) if i not in {*programs, 23, 29}
    )


def test_apns_batches_across_goaways_take_every_push_once(ca: LocalCa) -> None:
    server = LocalApns(ca, latency=0.02, goaway_after=40, open_devices=True).start()
    provider = apns_provider(server, ca)
    try:
        gate = ProviderGate(32)
        results = []
        for first in range(0, 300, 100):  # three rounds of a worker
            calls = [
                (registration("apns", device(i), id=f"r-{i}"), push(i))
                for i in range(first, first + 100)
            ]
            results += provider.send_many(calls, gate)
    finally:
        provider.close()
        server.close()
    assert [r.result_class.value for r, _s in results] == ["accepted"] * 300  # type: ignore[union-attr]
    taken = Counter(p.payload["id"] for p in server.received)
    assert sorted(taken) == sorted(f"n-{i}" for i in range(300))  # nothing lost
    assert set(taken.values()) == {1}  # nothing doubled
    assert server.server.connections >= 300 // (40 + 32)
    assert gate.take(32) == 32  # every slot was given back


def test_a_batch_waits_for_slots_other_threads_hold(apns: LocalApns, ca: LocalCa) -> None:
    provider = apns_provider(apns, ca)
    apns.device(device(1), TOPIC)
    gate = ProviderGate(2)
    assert gate.take(2) == 2  # another thread's requests hold both slots
    out: list[object] = []
    calls = [(registration("apns", device(1)), push(i)) for i in range(4)]
    sender = threading.Thread(target=lambda: out.extend(provider.send_many(calls, gate)))
    try:
        sender.start()
        time.sleep(0.1)
        assert apns.received == [] and out == []
        gate.give(2)
        sender.join(timeout=10)
    finally:
        provider.close()
    assert len(out) == 4 and len(apns.received) == 4


def test_a_wrong_team_drops_one_push_of_a_batch_and_holds_the_others(
    apns: LocalApns, ca: LocalCa, alerts: Alerts, caplog: pytest.LogCaptureFixture
) -> None:
    apns.device(device(1), TOPIC)
    provider = apns_provider(apns, ca, alerts=alerts, team="OTHERTEAM1")
    calls = [(registration("apns", device(1)), push(i)) for i in range(20)]
    try:
        with caplog.at_level(logging.INFO, logger="notify_pg.worker"):
            results = [r for r, _s in provider.send_many(calls, ProviderGate(8))]
            later = [r for r, _s in provider.send_many(calls, ProviderGate(8))]
    finally:
        provider.close()
    classes = Counter(r.result_class for r in results)  # type: ignore[union-attr]
    assert classes == {ResultClass.CONFIG_ERROR: 1, ResultClass.THROTTLED: 19}
    assert all(r.retry_after > timedelta(minutes=4) for r in results[1:])  # type: ignore[union-attr]
    assert {r.result_class for r in later} == {ResultClass.THROTTLED}  # type: ignore[union-attr]
    assert len(apns.received) == 0
    assert alerts.calls == [("paused", "apns", "InvalidProviderToken")]
    assert [r.getMessage() for r in caplog.records].count("push provider paused") == 1


@pytest.fixture
def fcm(ca: LocalCa) -> Iterator[LocalFcm]:
    server = LocalFcm(ca, latency=0.01).start()
    yield server
    server.close()


@pytest.fixture
def fcm_provider(
    fcm: LocalFcm, ca: LocalCa, alerts: Alerts, tmp_path: Path
) -> Iterator[FcmProvider]:
    account = ServiceAccount.from_json(Path(fcm.service_account(tmp_path / "a.json")).read_text())
    provider = FcmProvider(account, url=fcm.server.url, ca_file=ca.ca_file, alerts=alerts)
    yield provider
    provider.close()


def test_fcm_sorts_each_answer_of_a_batch_with_one_token(
    fcm: LocalFcm, fcm_provider: FcmProvider
) -> None:
    fcm.program("tok-2", fcm_error(404, "NOT_FOUND", "UNREGISTERED"))
    fcm.program("tok-4", fcm_error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", retry_after=60))
    fcm.program("tok-6", fcm_error(503, "UNAVAILABLE", "UNAVAILABLE", retry_after=9))
    fcm.program(
        "tok-8", fcm_error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", field="message.token")
    )
    calls = [(registration("fcm", f"tok-{i}", id=f"r-{i}"), push(i)) for i in range(40)]
    slots = CountingSlots(6)
    results = [r for r, _s in fcm_provider.send_many(calls, slots)]
    assert results[2] == SendResult(result_class="disable", disable_reason="token_invalid")
    assert results[4] == SendResult(result_class="throttled", retry_after=timedelta(seconds=60))
    assert results[6] == SendResult(result_class="retry", retry_after=timedelta(seconds=9))
    assert results[8] == SendResult(result_class="disable", disable_reason="token_invalid")
    others = [r for i, r in enumerate(results) if i not in (2, 4, 6, 8)]
    assert others == [SendResult(result_class="accepted")] * 36
    assert fcm.token_requests == 1
    assert slots.most <= 6 and slots.held == 0
    ids = Counter(m.message["data"]["id"] for m in fcm.received)  # type: ignore[index]
    assert sorted(ids) == sorted(f"n-{i}" for i in range(40) if i not in (2, 4, 6, 8))
    assert set(ids.values()) == {1}


def test_fcm_sends_a_batch_once_more_with_a_fresh_token_after_an_early_revocation(
    fcm: LocalFcm, fcm_provider: FcmProvider
) -> None:
    first = [(registration("fcm", "tok-1"), push(0))]
    assert fcm_provider.send_many(first, ProviderGate(4))[0][0] == SendResult(
        result_class="accepted"
    )
    fcm.revoke_all()
    calls = [(registration("fcm", f"tok-{i}"), push(i)) for i in range(1, 11)]
    results = [r for r, _s in fcm_provider.send_many(calls, ProviderGate(4))]
    assert results == [SendResult(result_class="accepted")] * 10
    assert fcm.token_requests == 2  # one trade for the whole batch's second try
    ids = Counter(m.message["data"]["id"] for m in fcm.received)  # type: ignore[index]
    assert set(ids.values()) == {1} and len(ids) == 11


def test_a_revoked_account_drops_one_push_of_a_batch_and_holds_the_others(
    fcm: LocalFcm, fcm_provider: FcmProvider, alerts: Alerts
) -> None:
    fcm.token_answers = [Answer(400, {}, b'{"error":"invalid_grant"}')]
    calls = [(registration("fcm", f"tok-{i}"), push(i)) for i in range(5)]
    results = [r for r, _s in fcm_provider.send_many(calls, ProviderGate(4))]
    assert [r.result_class.value for r in results] == ["config_error"] + ["throttled"] * 4  # type: ignore[union-attr]
    assert alerts.calls == [("paused", "fcm", "invalid_grant")]
    assert fcm.received == [] and fcm.token_requests == 1


def test_a_hint_in_a_batch_carries_what_one_call_carries(
    fcm: LocalFcm, fcm_provider: FcmProvider
) -> None:
    fcm_provider.send(registration("fcm", "tok-1"), HINT)
    fcm_provider.send_many([(registration("fcm", "tok-1"), HINT)], ProviderGate(1))
    alone, batched = (m.message for m in fcm.received)
    assert batched == alone


def test_answers_of_a_batch_that_do_not_come_in_time_are_retries_and_free_their_slots(
    ca: LocalCa,
) -> None:
    slow = LocalApns(ca, latency=1.0, open_devices=True).start()
    key = ApnsKey.from_p8(slow.team_key(TEAM, KID), key_id=KID, team_id=TEAM)
    provider = ApnsProvider(key, production_url=slow.server.url, ca_file=ca.ca_file, timeout=0.2)
    slots = CountingSlots(4)
    try:
        calls = [(registration("apns", device(i)), push(i)) for i in range(6)]
        results = [r for r, _s in provider.send_many(calls, slots)]
        connections = provider._clients["production"]._connections
        assert len(connections) == 1 and connections[0].streams == {}
    finally:
        provider.close()
        slow.close()
    assert results == [SendResult(result_class="retry")] * 6
    assert slots.held == 0 and slots.taken == 6 and slots.most == 4


def test_a_request_made_on_the_loop_that_fails_is_that_requests_outcome_alone(
    apns: LocalApns, ca: LocalCa
) -> None:
    apns.device(device(1), TOPIC)
    provider = apns_provider(apns, ca)
    client = provider._clients["production"]
    _token, good = provider._request(registration("apns", device(1)), push(1))

    def broken() -> Request:
        raise ValueError("no request")

    try:
        batch = client.batch(ProviderGate(2))
        batch.add([good, broken, lambda: good])
        outcomes = batch.close()
    finally:
        provider.close()
    answers = [answer for answer, _s in outcomes]
    assert isinstance(answers[1], ValueError)
    assert [getattr(a, "status", None) for a in answers] == [200, None, 200]
    assert len(apns.received) == 2
