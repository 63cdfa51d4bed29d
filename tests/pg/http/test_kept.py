"""Kept summaries (notify_pg.http.kept): a kept summary never outlives a notification of its
person, a read that saw a notification is not kept, nothing is kept or answered while the
hub does not listen."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_pg.http import kept as kept_module
from notify_pg.http.kept import KeptSummaries
from notify_pg.inbox.reads import InboxSummary

PEOPLE = ("ana", "bob", "cy")


def summary(n: int) -> InboxSummary:
    return InboxSummary(unread=n, latest_at=None, etag=f'"{n}"')


operations = st.lists(
    st.one_of(
        st.tuples(st.just("read"), st.sampled_from(PEOPLE), st.integers(0, 99)),
        st.tuples(st.just("forget"), st.sampled_from((*PEOPLE, None)), st.just(0)),
        st.tuples(st.just("late"), st.sampled_from(PEOPLE), st.integers(0, 99)),
        st.tuples(st.just("listen"), st.booleans(), st.just(0)),
    ),
    max_size=60,
)


@given(operations)
def test_h1_a_kept_summary_is_the_last_one_read_since_the_last_notification(
    steps: list[tuple[str, object, int]],
) -> None:
    """Against a model: what `get` answers is the value of the last read kept for the person
    with no notification of theirs, no lost listener and no concurrent notification since."""
    listening = [True]
    kept = KeptSummaries(lambda: listening[0])
    model: dict[str, int] = {}
    for kind, who, value in steps:
        if kind == "read":  # a read with no notification while it ran
            assert isinstance(who, str)
            kept.keep(who, "s1", (), summary(value), kept.generation)
            if listening[0]:
                model[who] = value
        elif kind == "late":  # a read during which any notification arrived
            assert isinstance(who, str)
            started = kept.generation
            kept.forget(["someone else"])
            kept.keep(who, "s1", (), summary(value), started)
        elif kind == "forget":
            kept.forget(None if who is None else [str(who)])
            if who is None:
                model.clear()
            else:
                model.pop(str(who), None)
        else:  # the hub listens or not; listening again comes with a forget of everyone
            if who and not listening[0]:
                kept.forget(None)
                model.clear()
            listening[0] = bool(who)
        for person in PEOPLE:
            got = kept.get(person, "s1", ())
            expected = model.get(person) if listening[0] else None
            assert (got.unread if got else None) == expected


def test_the_keys_are_per_site_and_hidden_sites_and_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = KeptSummaries(lambda: True)
    kept.keep("ana", "s1", ("s2",), summary(1), kept.generation)
    assert kept.get("ana", "s1", ()) is None and kept.get("ana", "s2", ("s2",)) is None
    assert kept.get("ana", "s1", ["s2"]) == summary(1)
    monkeypatch.setattr(kept_module, "MAX_KEPT", 2)
    kept.keep("bob", "s1", (), summary(2), kept.generation)
    kept.keep("cy", "s1", (), summary(3), kept.generation)  # over the bound: all forgotten
    assert len(kept) == 1 and kept.get("cy", "s1", ()) == summary(3)
