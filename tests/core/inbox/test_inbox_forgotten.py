"""A forgotten person in a replay (U1, U3 as amended by issue 38; N7, E4): ``user.forgotten``
takes their entries and pending mails, they get no entry and no mail while forgotten (even
when the log still names them, adds them to groups or updates them), and a ``user.created``
of the id makes a new person of the next generation, whose mails carry ``"g"``."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inbox_log import START, WikiLog

from notify_core.events.log import EventError, parse_event
from notify_core.inbox.categories import CATEGORY_BY_KEY
from notify_core.inbox.coalesce import transition
from notify_core.inbox.mailing import REPLAY_SECRET, line_mail
from notify_core.inbox.memory.entries import EntryMemory
from notify_core.inbox.memory.wiki import WikiMemory
from notify_core.inbox.pipeline import InboxLine, MailLine
from notify_core.inbox.ports import Entry, EntryTarget, forget_entries, generation_of
from notify_core.mail import verify_unsubscribe_token
from notify_core.replay.run import Replay

KNOWN = frozenset(CATEGORY_BY_KEY)


def run(log: WikiLog) -> tuple[Replay, list[object], list[tuple[str, int, str]]]:
    """Replay a log; its items, and each sent mail composed at its drain instant: the
    recipient, the generation its token carries and its subject."""
    replay = Replay()
    out, sent = [], []
    for item in replay.run(log.lines()):
        assert not isinstance(item, EventError), item
        out.append(item)
        if type(item) is MailLine and item.decision == "send":
            mail = line_mail(item, replay.inbox.wiki).mail
            header = dict(mail.headers)["List-Unsubscribe"]
            token = header.split("?t=", 1)[1].rstrip(">")
            checked = verify_unsubscribe_token(REPLAY_SECRET, token, known_categories=KNOWN)
            assert checked is not None and checked.person == item.recipient
            sent.append((item.recipient, checked.generation, mail.subject))
    return replay, out, sent


def sends(sent: list[tuple[str, int, str]], person: str) -> list[int]:
    """The generations of a person's mails, in order."""
    return [g for recipient, g, _ in sent if recipient == person]


def world() -> WikiLog:
    log = WikiLog()
    log.user("ana", name="Ana").user("ben", name="Ben").user("cy")
    return log.page("p1", "/ops/runbook").watch("p1", "ana", "cy")


def test_u3_a_forgotten_person_loses_entries_and_pending_mail() -> None:
    log = world().edit("p1")
    log.tick(30).add("user.forgotten", {"user": "ana"})
    replay, _, sent = run(log)
    assert [(r, g) for r, g, _ in sent] == [("cy", 0)]  # Ana's mail went with her
    store = replay.inbox.entries
    assert isinstance(store, EntryMemory)
    assert store.entries_of("ana") == [] and store.unread_of("ana") == []
    assert [e.person for e in store.entries.values()] == ["cy"]


def test_u3_n7_a_forgotten_person_the_log_still_names_gets_no_entry() -> None:
    log = world().edit("p1")
    log.tick(600).add("user.forgotten", {"user": "ana"})
    # The host still sends events for her: a mention, her row, a group and a watch back.
    log.comment("c1", "p1", "ben", mentions=["ana"])
    log.add("user.updated", {"user": "ana", "email": "ana@example.org", "verified": True})
    log.add("group.member_added", {"group": "readers", "user": "ana"})
    log.watch("p1", "ana").edit("p1").comment("c2", "p1", "ben", mentions=["ana"])
    log.tick(3600)
    _, _, sent = run(log)
    assert sends(sent, "ana") == [0]  # before she was forgotten; none after
    # With skips: each later event names her as inactive.
    lines = list(Replay(include_skips=True).run(log.lines()))
    after = [
        (str(item.decision), item.reason)
        for item in lines
        if isinstance(item, InboxLine) and item.recipient == "ana" and item.seq > 14
    ]
    assert after and all(reason == "inactive" for _, reason in after), after


def test_u3_created_again_a_new_person_of_the_next_generation() -> None:
    log = world().edit("p1")
    log.tick(600).add("user.forgotten", {"user": "ana"})
    log.add("user.forgotten", {"user": "ana"})  # twice before a creation: one generation
    log.tick().user("ana", name="Ana 2").watch("p1", "ana").edit("p1")
    log.tick(600).add("user.forgotten", {"user": "ana"})
    log.tick().user("ana").watch("p1", "ana").edit("p1")
    log.tick(600)
    replay, _, sent = run(log)
    assert sends(sent, "ana") == [0, 1, 2]
    assert sends(sent, "cy") == [0]  # quiet until read (E1)
    wiki = replay.inbox.wiki
    assert generation_of(wiki, "ana") == 2 and generation_of(wiki, "cy") == 0
    # Entry ids are never reused: the new person's entries count on.
    store = replay.inbox.entries
    assert isinstance(store, EntryMemory)
    assert [e.id for e in store.entries_of("ana")] == ["ana:watched_page:p1:3"]


def test_u3_a_forgotten_actor_is_someone_and_a_user_updated_does_not_create_again() -> None:
    log = world().comment("c1", "p1", "ben", mentions=["ana"])
    log.tick(30).add("user.forgotten", {"user": "ben"})
    log.add("user.updated", {"user": "cy", "name": "Cy"})
    log.add("user.forgotten", {"user": "cy"})
    log.add("user.updated", {"user": "cy", "kind": "human", "email": "cy@example.org"})
    log.tick().edit("p1", actor="ana")
    log.tick(600)
    replay, _, sent = run(log)
    assert [subject for *_, subject in sent] == ["[wiki.example.org] Someone mentioned you on p1"]
    assert replay.inbox.wiki.people(["cy"])["cy"].active is False


def test_u3_user_forgotten_names_a_user() -> None:
    line = {"seq": 1, "type": "user.forgotten", "occurred_at": "2026-11-30T08:00:00Z"}
    for payload, pointer in (({}, "/payload/user"), ({"user": ""}, "/payload/user")):
        with pytest.raises(EventError) as info:
            parse_event(json.loads(json.dumps({**line, "payload": payload})))
        assert info.value.pointer == pointer
    event = parse_event({**line, "payload": {"user": "ana"}})
    wiki = WikiMemory()
    wiki.record(event)  # a person the log never created: forgotten all the same
    assert wiki.generation("ana") == 1 and "ana" in wiki.forgotten


def _entry(person: str, key: str, n: int, minutes: int) -> Entry:
    at = START + timedelta(minutes=minutes)
    state = transition(None, f"e{n}", "edited", at, True, True, at + timedelta(minutes=3), "ben")
    target = EntryTarget(site="s1", page="p1", title="t", path="/p", locale="en")
    return Entry(f"{person}:{key}:{n}", person, "watched_page", key, state, at, target)


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(
        st.tuples(
            st.sampled_from(["ana", "ben", "cy"]),
            st.sampled_from(["k1", "k2"]),
            st.integers(0, 600),
        ),
        max_size=25,
    ),
    who=st.sampled_from(["ana", "ben", "cy"]),
)
def test_u3_forgetting_takes_every_entry_and_due_mail_of_the_person_and_nobody_else_s(
    items: list[tuple[str, str, int]], who: str
) -> None:
    store = EntryMemory()
    for n, (person, key, minutes) in enumerate(items):
        store.save(_entry(person, key, n, minutes))
    before = {i: e for i, e in store.entries.items() if e.person != who}
    forget_entries(store, who)
    assert store.entries == before
    assert store.unread_of(who) == []
    due = store.due(START + timedelta(days=1))
    assert all(e.person != who for e in due)
    assert sorted(e.id for e in due) == sorted(before)
