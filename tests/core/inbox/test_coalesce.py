"""Coalesce, read and mail_done against the rules as written (N10-N12, E1; issue 41).

tests/core/inbox/test_inbox.py pins counts and variants; here every field of the entry is
compared with a plain restatement, over sequences of events that change the in-app choice,
the email switch and the actor (an actor-less event included) as they go, and the examples
pin the secondary fields: ``updated_at`` moving to each event's time and ``actor``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from notify_core.inbox import EmailState, EntryState, coalesce, read
from notify_core.inbox.coalesce import OPEN_EMAIL, mail_done
from notify_core.values.errors import NaiveDatetime, UsageError

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


def expected(
    entry: EntryState | None,
    event: str,
    variant: str,
    at: datetime,
    in_app: bool,
    email_on: bool,
    email_after: datetime | None,
    actor: str | None,
) -> EntryState:
    """N10-N12 and E1 as the rules state them."""
    if entry is not None and entry.last_event == event:
        return entry
    if entry is None:
        email = EmailState.PENDING if email_on else EmailState.NONE
        due = email_after if email_on else None
        count, variants = 1, (variant,)
    else:
        email, due = entry.email, entry.email_after
        if email is EmailState.NONE and email_on:
            email, due = EmailState.PENDING, email_after
        count = entry.count + 1
        variants = tuple(dict.fromkeys((*entry.variants, variant)))
    closed = not in_app and email not in (EmailState.PENDING, EmailState.SENDING)
    return EntryState(
        count=count,
        variant=variant,
        variants=variants,
        email=email,
        email_after=due,
        last_event=event,
        in_app=in_app,
        updated_at=at,
        actor=actor,
        read=closed,
    )


steps = st.lists(
    st.tuples(
        st.sampled_from(["ev1", "ev2", "ev3"]),
        st.sampled_from(["edited", "moved"]),
        st.integers(0, 3),  # minutes after the previous event: the same instant included
        st.booleans(),
        st.booleans(),
        st.sampled_from([None, "ana", "ben"]),
    ),
    min_size=1,
    max_size=8,
)


class TestAgainstTheRules:
    @given(steps=steps, start_email=st.sampled_from(list(EmailState)))
    def test_n10_e1_every_field_follows_the_rules(
        self,
        steps: list[tuple[str, str, int, bool, bool, str | None]],
        start_email: EmailState,
    ) -> None:
        entry: EntryState | None = None
        if start_email is not EmailState.NONE:
            due = T0 if start_email in OPEN_EMAIL else None
            entry = EntryState(
                count=1,
                variant="new",
                variants=("new",),
                email=start_email,
                email_after=due,
                last_event="ev0",
                in_app=True,
                updated_at=T0,
                actor="cy",
            )
        at = T0
        for event, variant, minutes, in_app, email_on, actor in steps:
            if entry is not None and entry.read:
                break
            at += timedelta(minutes=minutes)
            args = (event, variant, at, in_app, email_on, at + timedelta(minutes=5), actor)
            new = coalesce(
                entry,
                event=event,
                variant=variant,
                at=at,
                in_app=in_app,
                email_on=email_on,
                email_after=args[5],
                actor=actor,
            )
            assert new == expected(entry, *args)
            entry = new


class TestSecondaryFields:
    def start(self, **kw: object) -> EntryState:
        fields: dict[str, object] = {
            "event": "ev1",
            "variant": "edited",
            "at": T0,
            "in_app": True,
            "email_on": False,
            "email_after": None,
            "actor": "ana",
        } | kw
        return coalesce(None, **fields)  # type: ignore[arg-type]

    def test_n10_updated_at_moves_to_the_event_time(self) -> None:
        first = self.start()
        assert first.updated_at == T0 and first.actor == "ana"
        later = T0 + timedelta(hours=2)
        second = coalesce(
            first,
            event="ev2",
            variant="edited",
            at=later,
            in_app=True,
            email_on=False,
            email_after=None,
            actor="ben",
        )
        assert (second.updated_at, second.actor, second.email_after) == (later, "ben", None)

    def test_n10_an_actor_less_event_clears_the_actor(self) -> None:
        second = coalesce(
            self.start(),
            event="ev2",
            variant="moved",
            at=T0 + timedelta(seconds=1),
            in_app=True,
            email_on=False,
            email_after=None,
        )
        assert second.actor is None and second.read is False

    def test_e1_email_switched_on_later_starts_pending_with_the_new_due_time(self) -> None:
        due = T0 + timedelta(minutes=10)
        second = coalesce(
            self.start(),
            event="ev2",
            variant="edited",
            at=T0,
            in_app=True,
            email_on=True,
            email_after=due,
        )
        assert (second.email, second.email_after) == (EmailState.PENDING, due)

    def test_errors_say_what_went_wrong(self) -> None:
        with pytest.raises(UsageError) as taken:
            coalesce(
                read(self.start()),
                event="ev2",
                variant="edited",
                at=T0,
                in_app=True,
                email_on=False,
                email_after=None,
            )
        assert (taken.value.code, taken.value.message) == (
            "entry_read",
            "a read entry takes no events: start a new one",
        )
        with pytest.raises(UsageError) as missing:
            self.start(email_on=True)
        assert (missing.value.code, missing.value.message) == (
            "missing_email_after",
            "an email starts: email_after is required",
        )
        with pytest.raises(NaiveDatetime) as naive:
            self.start(email_on=True, email_after=datetime(2026, 11, 30, 9))
        assert naive.value.message.startswith("email_after is a naive datetime")
        with pytest.raises(NaiveDatetime) as at:
            self.start(at=datetime(2026, 11, 30, 9))
        assert at.value.message.startswith("at is a naive datetime")


class TestReadAndMailDone:
    def entry(self, email: EmailState, in_app: bool = True) -> EntryState:
        return EntryState(
            count=1,
            variant="new",
            variants=("new",),
            email=email,
            email_after=T0 if email in OPEN_EMAIL else None,
            last_event="ev1",
            in_app=in_app,
            updated_at=T0,
        )

    @pytest.mark.parametrize("email", list(EmailState))
    def test_e1_read_cancels_only_a_pending_email(self, email: EmailState) -> None:
        done = read(self.entry(email))
        assert done.read
        if email is EmailState.PENDING:
            assert (done.email, done.email_after) == (EmailState.SKIPPED, None)
        else:
            assert done == attrs.evolve(self.entry(email), read=True)
        assert read(done) is done

    @pytest.mark.parametrize("email", sorted(OPEN_EMAIL))
    @pytest.mark.parametrize("in_app", [True, False])
    @pytest.mark.parametrize("sent", [True, False])
    def test_e4_mail_done_closes_an_email_only_entry(
        self, email: EmailState, in_app: bool, sent: bool
    ) -> None:
        done = mail_done(self.entry(email, in_app), sent)
        assert done.email is (EmailState.SENT if sent else EmailState.SKIPPED)
        assert done.email_after is None
        assert done.read is (not in_app)

    @pytest.mark.parametrize("email", sorted(set(EmailState) - OPEN_EMAIL))
    def test_e4_mail_done_refuses_an_email_not_due(self, email: EmailState) -> None:
        with pytest.raises(UsageError) as err:
            mail_done(self.entry(email), True)
        assert (err.value.code, err.value.message) == (
            "email_not_due",
            f"an email in state {email} is not due",
        )
        assert self.entry(email).closed_by_email is False
        assert self.entry(email, in_app=False).closed_by_email is True
