"""`fanout.send_all`: each push's outcome in call order whatever mix of batch and per-call
providers, each push sent once, a failure confined to its own push (or its own provider's
batch), the gate's slots all given back."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor

from hypothesis import given, settings
from hypothesis import strategies as st
from provider_parts import registration

from notify_core.hints.delivery import Notification, ResultClass, SendResult
from notify_pg.push.providers import FakeProvider, ProviderGate
from notify_pg.push.providers.fanout import Sent, Slots, batch_of, send_all
from notify_pg.stores.registrations import Registration

ANSWERS = [
    SendResult(result_class=ResultClass.ACCEPTED),
    SendResult(result_class=ResultClass.RETRY),
    SendResult(result_class=ResultClass.DISABLE, disable_reason="token_invalid"),
]


class BatchFake:
    """A batch provider: answers by registration id (an ``Exception`` is that push's own
    failure), records every push it was handed and how many slots it held at once."""

    def __init__(self, name: str, answers: dict[str, SendResult | Exception]) -> None:
        self._name = name
        self.answers = answers
        self.sent: list[str] = []
        self.one_by_one: list[str] = []
        self.fail_batch: Exception | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def send(self, reg: Registration, notification: Notification) -> SendResult:
        with self._lock:
            self.one_by_one.append(notification.id)
        answer = self.answers[reg.id]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def send_many(
        self, calls: Sequence[tuple[Registration, Notification]], slots: Slots
    ) -> list[Sent]:
        if self.fail_batch is not None:
            raise self.fail_batch
        out: list[Sent] = []
        for reg, notification in calls:
            assert slots.take(1) == 1
            with self._lock:
                self.sent.append(notification.id)
            out.append((self.answers[reg.id], 0.001))
            slots.give(1)
        return out


def _pool() -> Executor:
    return ThreadPoolExecutor(4)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, len(ANSWERS))), min_size=0, max_size=40),
    st.booleans(),
)
def test_every_push_gets_its_own_outcome_in_call_order_and_is_sent_once(
    plan: list[tuple[int, int]], batch: bool
) -> None:
    failure = ConnectionError("this push only")
    expected: list[SendResult | Exception] = [
        ANSWERS[a] if a < len(ANSWERS) else failure for _p, a in plan
    ]
    answers = {f"r-{i}": e for i, e in enumerate(expected)}
    fake = FakeProvider("webpush", {k: [v] for k, v in answers.items()})
    apns, fcm = BatchFake("apns", answers), BatchFake("fcm", answers)
    providers = [apns, fcm, fake]
    calls = [
        (
            providers[p],
            registration("x", "t", id=f"r-{i}"),
            Notification(id=f"n-{i}", kind="sync", badge=0),
        )
        for i, (p, _a) in enumerate(plan)
    ]
    gate = ProviderGate(3)
    with ThreadPoolExecutor(3) as pool:
        outcomes = send_all(calls, gate=gate, pool=lambda: pool, limit=3, batch=batch)
    assert [answer for answer, _s in outcomes] == expected
    sent = Counter(apns.sent + fcm.sent + apns.one_by_one + fcm.one_by_one)
    sent.update(c.notification.id for c in fake.calls)
    assert sent == {f"n-{i}": 1 for i in range(len(plan))}
    if not batch:
        assert apns.sent == [] and fcm.sent == []
    assert gate.take(3) == 3  # every slot given back


def test_a_failed_batch_is_each_of_its_pushes_failure_and_no_other_providers() -> None:
    accepted = SendResult(result_class=ResultClass.ACCEPTED)
    apns = BatchFake("apns", {"r-0": accepted, "r-2": accepted})
    apns.fail_batch = TimeoutError("the whole batch")
    fcm = BatchFake("fcm", {"r-1": accepted})
    calls = [
        (
            provider,
            registration("x", "t", id=f"r-{i}"),
            Notification(id=f"n-{i}", kind="sync", badge=0),
        )
        for i, provider in enumerate([apns, fcm, apns])
    ]
    outcomes = send_all(calls, gate=ProviderGate(2), pool=_pool, limit=2)
    assert [type(answer).__name__ for answer, _s in outcomes] == [
        "TimeoutError",
        "SendResult",
        "TimeoutError",
    ]


def test_one_providers_batch_runs_in_the_calling_thread() -> None:
    accepted = SendResult(result_class=ResultClass.ACCEPTED)
    apns = BatchFake("apns", {f"r-{i}": accepted for i in range(5)})
    calls = [
        (apns, registration("x", "t", id=f"r-{i}"), Notification(id=f"n-{i}", kind="sync", badge=0))
        for i in range(5)
    ]

    def no_pool() -> Executor:
        raise AssertionError("no pool for one unit of work")

    assert len(send_all(calls, gate=ProviderGate(1), pool=no_pool, limit=1)) == 5
    assert batch_of(apns) is apns and batch_of(FakeProvider("x")) is None
