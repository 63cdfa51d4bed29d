"""Event logs with preference records, for the replay's tests of M1-M6.

`records_log(steps)` writes a small chat and wiki world (three people in three zones, each
with devices and a verified email) and then the given steps: messages and comments that
mention people, and record transitions. Record events fall at 15 s past a minute and
everything else at whole minutes, so no due work (windows of 90 s, delays of 60 s, mails
60 s after an entry, local midnights) ever shares an instant with a record event: the record
in effect at a line's instant is the last one before it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

START = datetime(2026, 3, 27, 20, 0, tzinfo=UTC)  # Europe's clocks move on the 29th
PEOPLE = {"ana": "Europe/Berlin", "ben": None, "cai": "Pacific/Apia"}
DEVICES = {"ana": [("ana-ios", "ios")], "ben": [("ben-and", "android")]}
DEVICES["cai"] = [("cai-desk", "desktop"), ("cai-ios", "ios")]
NAMES = tuple(PEOPLE)

#: One step: (minutes to wait, after the one every step waits, what happens).
Step = tuple[int, tuple[Any, ...]]

channel_values = st.fixed_dictionaries(
    {},
    optional={
        "enabled": st.booleans(),
        "max_per_day": st.integers(1, 2),
        "format": st.sampled_from(["plain", "rich"]),
    },
)
_mentions = st.sets(st.sampled_from(NAMES), min_size=1)
_activity = st.tuples(st.sampled_from(["message", "comment"]), st.sampled_from(NAMES), _mentions)
_set = st.tuples(
    st.just("set"),
    st.sampled_from(NAMES),
    st.fixed_dictionaries({}, optional={"push": channel_values, "email": channel_values}),
)
_pause = st.tuples(st.sampled_from(["suspend", "suspend", "delete"]), st.sampled_from(NAMES))
#: Steps close together (several deliveries a local day) with activity twice as likely.
steps = st.lists(
    st.tuples(st.integers(0, 180), st.one_of(_activity, _activity, _set, _pause)),
    max_size=40,
)


def records_log(plan: list[Step]) -> list[str]:
    """The log's lines: the world, then ``plan``; refused transitions are left out."""
    out: list[dict[str, Any]] = []
    now = START

    def add(kind: str, payload: dict[str, Any], at: datetime | None = None, **env: Any) -> None:
        when = (at or now).isoformat().replace("+00:00", "Z")
        out.append(
            {"seq": len(out) + 1, "type": kind, "occurred_at": when, **env, "payload": payload}
        )

    add("notifications.settings", {"mail_configured": True, "email_delay_s": 60})
    add("site.created", {"site": "w", "host": "w.example.org", "https": True})
    rules = [{"permission": p, "match": "all"} for p in ("read_pages", "read_comments")]
    add("group.created", {"group": "all", "rules": rules})
    add("space.created", {"space": "s"})
    add("channel.created", {"channel": "c", "space": "s", "kind": "text"})
    add("thread.created", {"thread": "t", "channel": "c", "main": True})
    for person, zone in PEOPLE.items():
        user = {"user": person, "kind": "human", "email": f"{person}@example.org"}
        add("user.created", {**user, "verified": True, **({"time_zone": zone} if zone else {})})
        add("group.member_added", {"group": "all", "user": person})
        add("access.granted", {"user": person, "target": {"kind": "space", "id": "s"}})
        for device, platform in DEVICES[person]:
            device_ = {"device": device, "user": person, "platform": platform}
            add("device.registered", {**device_, "state": "active"})
    add("page.created", {"page": "p", "site": "w", "path": "x", "locale": "en", "title": "X"})
    state: dict[str, tuple[str, str] | None] = dict.fromkeys(PEOPLE)  # person -> (id, status)
    ids = 0
    for wait, (what, *args) in plan:
        now += timedelta(minutes=wait + 1)  # after the record event of the step before
        at = now + timedelta(seconds=15)
        if what in ("message", "comment"):
            author, mentions = args
            n = len(out)
            if what == "message":
                payload = {"message": f"m{n}", "thread": "t", "thread_seq": n}
                payload |= {"author": author, "origin": "human", "kind": "text"}
                add("message.created", {**payload, "mention_ids": sorted(mentions)})
            else:
                comment = {"comment": f"c{n}", "page": "p", "mentions": sorted(mentions)}
                add("comment.created", comment, actor=author)
            continue
        person = args[0]
        held = state[person]
        if what == "set":
            ids += 1
            pid = f"{person}-{ids}"
            payload = {"preference_id": pid, "declared_channels": ["push", "email", "sms"]}
            payload["channels"] = args[1]
            if not args[1]:
                payload["channels"] = {"sms": "on"}
            add("record.set", payload, at, audience=person)
            state[person] = (pid, "active")
        elif held is not None and (what == "delete" or held[1] == "active"):
            kind = "record.suspended" if what == "suspend" else "record.deleted"
            add(kind, {"preference_id": held[0]}, at, audience=person)
            state[person] = (held[0], "suspended") if what == "suspend" else None
    return [json.dumps(e, separators=(",", ":")) for e in out]
