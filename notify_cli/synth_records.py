"""Preference records for `notify synth --records` (M1-M6): suspensions, channels off, caps.

`with_records` threads record events through a synthetic log: after any event, about one in
`RATE`, a person already created gets the next transition of their record: a first
``record.set`` (a push cap of 1 to 10 a local day, push off, a mail cap, plain mails), then
suspensions, resumptions (a new set) and deletions. Deterministic for a seed; ``seq`` is
renumbered and the total stays the number of events asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

from notify_cli.synth_logs import Chance

__all__ = ["RATE", "with_records"]

#: One record event after about this many events of the log.
RATE: Final = 200
_CHANNELS: Final = ["push", "email", "sms"]


def _values(rng: Chance) -> dict[str, object]:
    """The channel values of a new record: what notify reads, and some it does not."""
    channels: dict[str, object] = {}
    roll = rng.random()
    if roll < 0.6:
        channels["push"] = {"max_per_day": rng.choice((1, 2, 3, 5, 10))}
    elif roll < 0.7:
        channels["push"] = {"enabled": False}
    roll = rng.random()
    if roll < 0.3:
        channels["email"] = {"max_per_day": rng.between(1, 3)}
    elif roll < 0.5:
        channels["email"] = {"format": "plain"}
    elif roll < 0.55:
        channels["email"] = {"enabled": False}
    if not channels:
        channels["sms"] = "urgent-only"  # a value notify does not read
    return channels


def with_records(
    events: Iterable[dict[str, object]], *, seed: int, total: int
) -> Iterator[dict[str, object]]:
    """Yield ``events`` with record events among them, at most ``total`` in all.

    Example:
        >>> log = [{"seq": i, "type": "user.created", "occurred_at": "2026-10-19T06:00:00Z",
        ...         "payload": {"user": f"u{i}", "kind": "human"}} for i in range(1, 801)]
        >>> out = list(with_records(log, seed=1, total=800))
        >>> len(out), sorted({e["type"] for e in out})
        (800, ['record.set', 'user.created'])
    """
    rng = Chance(seed * 7919 + 37)
    people: list[str] = []
    held: dict[str, tuple[str, str]] = {}  # person -> (preference id, status)
    made = 0
    count = 0
    for event in events:
        if count >= total:
            return
        count += 1
        yield {**event, "seq": count}
        payload = event["payload"]
        human = isinstance(payload, dict) and payload.get("kind") == "human"
        if event["type"] == "user.created" and human:
            people.append(str(payload["user"]))  # type: ignore[index]
        if not people or rng.below(RATE) != 0 or count >= total:
            continue
        person = rng.choice(people)
        mine = held.get(person)
        roll = rng.random()
        if mine is None or (mine[1] == "suspended" and roll < 0.7) or roll < 0.3:
            made += 1
            pid = f"pref-{made}"
            kind = "record.set"
            record: dict[str, object] = {"preference_id": pid, "declared_channels": _CHANNELS}
            record["channels"] = _values(rng)
            held[person] = (pid, "active")
        elif mine[1] == "active" and roll < 0.8:
            kind, record = "record.suspended", {"preference_id": mine[0]}
            held[person] = (mine[0], "suspended")
        else:
            kind, record = "record.deleted", {"preference_id": mine[0]}
            del held[person]
        count += 1
        yield {
            "seq": count,
            "type": kind,
            "occurred_at": event["occurred_at"],
            "audience": person,
            "payload": record,
        }
