"""The mail drain on PostgreSQL (seed 004 section 10.3; docs/rules.md E4-E5).

`MailDrain.round` is one pass over the mail queue (the ``inbox_entries`` rows whose email is
``pending`` or ``sending``):

1. **claim**, in one short transaction: every due row of up to ``people`` people, earliest due
   first, taken with ``FOR UPDATE SKIP LOCKED`` under a per-person advisory lock (so all of a
   person's due rows go to one worker and into one mail). The rows become ``sending`` with a
   lease (``email_after`` = now + 600 s) and one more attempt; a row still ``sending`` after its
   lease lapsed (a worker that died between send and mark) is due again: at least once.
2. **plan**, with the host's facts of now: the core's `plan_mails` (E4) groups the rows into one
   mail per (person, site) and skips what a site switch, a section or the person's choice
   turned off.
3. **send**, with no transaction open: each mail is composed (`compose_mail`, E6, signed with
   the instance's unsubscribe secret) and handed to the SMTP sender (one connection per round).
4. **mark**, one statement per mail: ``sent`` with ``emailed_at``; a failure puts the rows back
   to ``pending`` 600 s later, and after the third attempt marks them ``failed``. A mark
   applies only while the claim's lease holds (``email_after`` is the lease), so a worker whose
   lease was taken over never overwrites the new claim. One failing person never stops the
   batch; an unreachable server (the connection itself failed) stops the round: that mail
   failed (E5), and the rows not tried go back to ``pending`` at their due time before the
   claim, the claim's attempt undone (docs/decisions.md).

`MailRound` runs rounds inside `notify worker` and knows when to run again: at the next due
``email_after`` (or a lease's end), at the latest after ``poll`` (the safety net for entries
other processes write), never by querying every second; after a round stopped by an
unreachable server, not before a backoff (doubling from ``backoff`` up to ``poll``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol

import attrs

from notify_core.errors import NotifyError
from notify_core.inbox.categories import CATEGORIES
from notify_core.inbox.coalesce import EmailState, EntryState
from notify_core.inbox.drain import MailPlan, plan_mails
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.pipeline import email_schedule
from notify_core.inbox.ports import Entry, EntryTarget, SiteInfo, WikiUser
from notify_core.inbox.prefs import InboxPrefs, InboxSettings
from notify_core.mail import (
    MailEntry,
    MailSite,
    QueuedEmail,
    compose_mail,
    reschedule,
    unsubscribe_token,
)
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam, text_array
from notify_pg.mail.smtp import MailSendError, Outgoing, mail_message

__all__ = [
    "LEASE",
    "MAX_ATTEMPTS",
    "RETRY_AFTER",
    "MailDrain",
    "MailDrainConfig",
    "MailDrainStats",
    "MailHostPorts",
    "MailRound",
    "MailSender",
    "reschedule_pending",
]

_log = logging.getLogger("notify_pg.mail")

#: How long a claim keeps its rows from other workers (E5).
LEASE: Final = timedelta(seconds=600)
#: How long a failed send waits before the next attempt (E5).
RETRY_AFTER: Final = timedelta(seconds=600)
#: Attempts (claims) after which a failed send is given up (E5).
MAX_ATTEMPTS: Final = 3


class MailHostPorts(Protocol):
    """What the drain reads of the host (a wiki), each on the worker's connection."""

    def inbox_site(self, conn: Conn, site: str) -> SiteInfo | None:
        """Return a site (host, scheme, primary locale, its switch N5), or ``None``."""

    def inbox_first_site(self, conn: Conn) -> str | None:
        """Return the instance's first site by creation (entries without a site, E4)."""

    def inbox_people(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, PersonFacts]:
        """Return the facts (address, verified, ...) of the known people among ``ids``."""

    def inbox_settings(self, conn: Conn) -> InboxSettings:
        """Return the sections and whether mail is configured."""

    def inbox_users(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, WikiUser]:
        """Return the locale (and schedule) of the known people among ``ids``."""


class MailSender(Protocol):
    """Sends one message (`notify_pg.mail.smtp.SmtpSender` is one); closed after each round."""

    def send(self, outgoing: Outgoing) -> None:
        """Send one message; raise `MailSendError` when it was not sent."""

    def close(self) -> None:
        """Release the connection."""


@attrs.frozen(kw_only=True)
class MailDrainConfig:
    """The drain's settings.

    Args:
        sender: the ``From`` and envelope sender address of every mail.
        people: people claimed per round (the seed's ``mailBatchSize``, 1 to 1000).
        lease: how long a claim holds its rows (E5: 600 s).
        retry_after: the pause before a failed send is tried again (E5: 600 s).
        max_attempts: attempts after which a failed send is ``failed`` (E5: 3).
    """

    sender: str
    people: int = attrs.field(
        default=100, validator=[attrs.validators.ge(1), attrs.validators.le(1000)]
    )
    lease: timedelta = LEASE
    retry_after: timedelta = RETRY_AFTER
    max_attempts: int = MAX_ATTEMPTS


@attrs.define
class MailDrainStats:
    """What the drain did: rounds, rows claimed, mails by outcome, entries by final state,
    rounds stopped by an unreachable server and the rows they released untried."""

    rounds: int = 0
    claimed: int = 0
    unreachable: int = 0
    released: int = 0
    mails: Counter[str] = attrs.field(factory=Counter)
    entries: Counter[str] = attrs.field(factory=Counter)


@attrs.frozen
class _Facts:
    """The host's facts of one round: people (with their choices), sites, locales."""

    people: Mapping[str, PersonFacts] = attrs.field(factory=dict)
    sites: dict[str, SiteInfo | None] = attrs.field(factory=dict)
    users: Mapping[str, WikiUser] = attrs.field(factory=dict)


@attrs.frozen
class _Claimed:
    entry: Entry
    table_id: int
    comment: str | None
    #: The row's due time before the claim (a release puts it back).
    due_at: datetime


def _clock() -> datetime:
    return datetime.now(UTC)


class MailDrain:
    """Mail drain rounds of one worker over the entries table.

    Args:
        host: the host's ports.
        sender: opens a sender (an SMTP connection) for a round, when it has a mail to send.
        secret: returns the instance's unsubscribe secret (U1) on the worker's connection.
        config: the drain's settings.
        schema: the library's schema.
        clock: the current instant (tests drive it).
        on_sent: a test hook, called after each send and before its mark.
        on_done: called after each mail's mark with the round's instant, the plan and what
            became of it: ``sent``, ``skipped`` or ``failed`` (a failed send, retried or
            given up).
    """

    def __init__(
        self,
        host: MailHostPorts,
        sender: Callable[[], MailSender],
        *,
        secret: Callable[[Conn], bytes],
        config: MailDrainConfig,
        schema: str = DEFAULT_SCHEMA,
        clock: Callable[[], datetime] = _clock,
        on_sent: Callable[[Outgoing], None] | None = None,
        on_done: Callable[[datetime, MailPlan, str], None] | None = None,
    ) -> None:
        self.host = host
        self.sender = sender
        self.secret = secret
        self.config = config
        self.schema = schema
        self.clock = clock
        self.on_sent = on_sent
        self.on_done = on_done
        self.stats = MailDrainStats()
        #: Whether the last round stopped because the SMTP server was unreachable.
        self.unreachable = False
        self._seam = Seam("notify_pg", schema)
        # The advisory lock space of this schema's drain (one per schema, all workers alike).
        self._lock = f"notify_mail:{schema}"
        self._facts = _Facts()

    # --- one round ---------------------------------------------------------------------------

    def round(self, conn: Conn) -> int:
        """Claim, plan, send and mark one batch of people; return the rows claimed (0: none due).

        ``conn`` is in autocommit mode: the claim commits before any mail is sent, and each
        mark commits on its own. When the SMTP connection cannot be made, the round stops
        after that mail (a failed attempt, E5), releases the rows of the mails it did not try
        and sets `unreachable`.
        """
        self.unreachable = False
        now = self.clock()
        lease_until = now + self.config.lease
        with self._seam.transaction(conn):
            rows = self._seam.all(
                conn,
                "mail_claim",
                {
                    "now": now,
                    "lease_until": lease_until,
                    "people": self.config.people,
                    "lock": self._lock,
                },
            )
        self.stats.rounds += 1
        if not rows:
            return 0
        self.stats.claimed += len(rows)
        claimed = {c.entry.id: c for c in map(_claimed, rows)}
        plans = self._plan(conn, [c.entry for c in claimed.values()])
        sender: MailSender | None = None
        secret: bytes | None = None
        untried: list[Entry] = []
        try:
            for plan in plans:
                if self.unreachable and plan.skip is None:
                    untried.extend(plan.sent)
                    continue
                if plan.skip is not None:
                    self._mark(conn, "mail_skipped", plan.entries, lease_until, claimed)
                    self.stats.mails[f"skip_{plan.skip.value}"] += 1
                    self.stats.entries["skipped"] += len(plan.entries)
                    self._done(now, plan, "skipped")
                    continue
                if secret is None:
                    secret = self.secret(conn)
                try:
                    outgoing = self._outgoing(conn, plan, claimed, secret)
                    if sender is None:
                        sender = self.sender()
                    sender.send(outgoing)
                except MailSendError as error:
                    self._failed(conn, plan, lease_until, claimed, error.code, error.temporary)
                    self._done(now, plan, "failed")
                    # Nothing else can go now: the other mails wait for the next round
                    # rather than each waiting out its own connection timeout.
                    self.unreachable = error.unreachable
                    continue
                except NotifyError as error:  # a mail that cannot be composed fails alone
                    self._failed(conn, plan, lease_until, claimed, error.code, False)
                    self._done(now, plan, "failed")
                    continue
                if self.on_sent is not None:
                    self.on_sent(outgoing)
                self._mark(conn, "mail_sent", plan.sent, lease_until, claimed)
                self.stats.mails["sent"] += 1
                self.stats.entries["sent"] += len(plan.sent)
                self._done(now, plan, "sent")
        finally:
            if sender is not None:
                sender.close()
        if self.unreachable:
            self._release(conn, untried, lease_until, claimed)
        _log.info(
            "mail round",
            extra={"fields": {"claimed": len(rows), "mails": len(plans)}},
        )
        return len(rows)

    def _release(
        self,
        conn: Conn,
        entries: Sequence[Entry],
        lease_until: datetime,
        claimed: Mapping[str, _Claimed],
    ) -> None:
        rows = [claimed[e.id] for e in entries]
        released = 0
        if rows:
            released = self._seam.run(
                conn,
                "mail_release",
                {
                    "ids": [c.table_id for c in rows],
                    "dues": [c.due_at for c in rows],
                    "lease_until": lease_until,
                },
            )
        self.stats.unreachable += 1
        self.stats.released += released
        _log.warning(
            "mail server unreachable",
            extra={"fields": {"released": released}},
        )

    def _done(self, now: datetime, plan: MailPlan, outcome: str) -> None:
        if self.on_done is not None:
            self.on_done(now, plan, outcome)

    def drain(self, conn: Conn, *, max_rounds: int = 1_000) -> int:
        """Run rounds until nothing is due or the SMTP server is unreachable; return the rows
        claimed."""
        total = 0
        for _ in range(max_rounds):
            done = self.round(conn)
            total += done
            if done == 0 or self.unreachable:
                break
        return total

    def next_due(self, conn: Conn) -> datetime | None:
        """Return when the next email falls due (a pending row, or a lease's end)."""
        row = self._seam.one(conn, "mail_next_due")
        return None if row is None or row[0] is None else row[0].astimezone(UTC)

    # --- steps -------------------------------------------------------------------------------

    def _plan(self, conn: Conn, entries: Sequence[Entry]) -> list[MailPlan]:
        host = self.host
        ids = sorted({e.person for e in entries})
        people = dict(host.inbox_people(conn, ids))
        stored: dict[str, dict[tuple[str, str], bool]] = {}
        for user, category, channel, enabled in self._seam.all(
            conn, "inbox_prefs_of", {"ids": text_array(list(people))}
        ):
            stored.setdefault(user, {})[(category, channel)] = bool(enabled)
        for user, choices in stored.items():
            people[user] = people[user]._replace(prefs=InboxPrefs(rows=choices))
        sites: dict[str, SiteInfo | None] = {}

        def site_on(site: str) -> bool:
            if site not in sites:
                sites[site] = host.inbox_site(conn, site)
            info = sites[site]
            return info is None or info.notifications

        first = host.inbox_first_site(conn) if any(e.target.site is None for e in entries) else None
        self._facts = _Facts(people=people, sites=sites, users=host.inbox_users(conn, ids))
        return plan_mails(
            entries,
            site_on=site_on,
            people=people,
            settings=host.inbox_settings(conn),
            first_site=first,
        )

    def _outgoing(
        self, conn: Conn, plan: MailPlan, claimed: Mapping[str, _Claimed], secret: bytes
    ) -> Outgoing:
        """Compose the mail of a send (E6) for the person's address."""
        facts_now = self._facts
        if plan.site not in facts_now.sites:
            facts_now.sites[plan.site] = self.host.inbox_site(conn, plan.site)
        info = facts_now.sites[plan.site]
        name = (info.host if info is not None else "") or plan.site
        site = MailSite(
            name=name,
            host=name,
            https=info.https if info is not None else True,
            primary_locale=info.primary_locale if info is not None else None,
        )
        person = plan.recipient
        facts = facts_now.people.get(person)
        user = facts_now.users.get(person)
        if facts is None or not facts.email:  # the plan skips them (N4): never reached
            raise MailSendError("no_address", "the person has no address", temporary=False)
        shown = [
            MailEntry(
                category=e.category,
                variant=e.state.variant,
                title=e.target.title,
                path=e.target.path,
                actor=e.state.actor,
                count=e.state.count,
                # N11: the excerpt only while the comment exists (a deleted comment's entries
                # lose their comment id, notify_pg.inbox.reads.comment_deleted).
                excerpt=e.target.excerpt if claimed[e.id].comment is not None else None,
            )
            for e in plan.entries
        ]
        mail = compose_mail(
            shown,
            site=site,
            locale=user.locale if user is not None else None,
            token=unsubscribe_token(secret, person, plan.unsubscribe),
            more=plan.more,
        )
        sender = self.config.sender
        message = mail_message(mail, sender=sender, to=facts.email, date=self.clock())
        return Outgoing(sender=sender, recipients=(facts.email,), message=message)

    def _mark(
        self,
        conn: Conn,
        query: str,
        entries: Sequence[Entry],
        lease_until: datetime,
        claimed: Mapping[str, _Claimed],
    ) -> int:
        ids = [claimed[e.id].table_id for e in entries]
        params = {"ids": ids, "at": self.clock(), "lease_until": lease_until}
        return self._seam.run(conn, query, params)

    def _failed(
        self,
        conn: Conn,
        plan: MailPlan,
        lease_until: datetime,
        claimed: Mapping[str, _Claimed],
        code: str,
        temporary: bool,
    ) -> None:
        now = self.clock()
        rows = self._seam.all(
            conn,
            "mail_failed",
            {
                "ids": [claimed[e.id].table_id for e in plan.sent],
                "at": now,
                "retry_at": now + self.config.retry_after,
                "lease_until": lease_until,
                "max_attempts": self.config.max_attempts,
            },
        )
        states = Counter(str(r[1]) for r in rows)
        self.stats.mails["failed"] += 1
        for state, count in states.items():
            self.stats.entries[state] += count
        _log.warning(
            "mail failed",
            extra={
                "fields": {
                    "code": code,
                    "temporary": temporary,
                    "entries": len(plan.sent),
                    "retry": states.get("pending", 0),
                    "given_up": states.get("failed", 0),
                }
            },
        )


def _claimed(row: tuple[Any, ...]) -> _Claimed:
    (
        id_,
        user,
        site,
        category,
        variant,
        variants,
        group_key,
        page,
        comment,
        actor,
        title,
        path,
        locale,
        excerpt,
        count,
        last_event,
        in_app,
        _attempts,
        read_at,
        created_at,
        updated_at,
        due_at,
    ) = row
    state = EntryState(
        count=int(count),
        variant=variant,
        variants=tuple(variants),
        email=EmailState.SENDING,
        last_event=str(last_event),
        in_app=bool(in_app),
        updated_at=updated_at.astimezone(UTC),
        actor=actor,
        read=read_at is not None,
    )
    entry = Entry(
        # Zero-padded: the plan orders ties of updated_at by id as text (E4: id descending).
        id=f"{int(id_):020d}",
        person=user,
        category=category,
        group_key=group_key,
        state=state,
        created_at=created_at.astimezone(UTC),
        target=EntryTarget(
            site=site,
            page=page,
            comment=comment,
            title=title,
            path=path,
            locale=locale,
            excerpt=excerpt,
        ),
    )
    return _Claimed(entry=entry, table_id=int(id_), comment=comment, due_at=due_at)


class MailRound:
    """The mail drain's round of `notify worker`: drain what is due, then sleep until the next
    email falls due (at the latest ``poll`` later).

    Args:
        drain: the drain of this worker.
        poll: the longest pause between two looks at the queue (entries written by other
            processes fall due without this worker hearing of them).
        max_rounds: drain rounds per call at most (the worker's other rounds go on).
        backoff: the pause after a round the SMTP server was unreachable, doubled after each
            such round in a row, ``poll`` at most.
    """

    #: The round's name in ``consumer_failures`` (`notify db status`).
    name: Final = "mail"

    def __init__(
        self,
        drain: MailDrain,
        *,
        poll: timedelta = timedelta(minutes=1),
        max_rounds: int = 20,
        backoff: timedelta = timedelta(seconds=5),
    ) -> None:
        self.drain = drain
        self.poll = poll
        self.max_rounds = max_rounds
        self.backoff = backoff
        self._wake: datetime | None = None
        self._unreachable = 0  # rounds in a row the SMTP server was unreachable

    def next_wake(self) -> datetime | None:
        """When this round next has work (``None``: at once)."""
        return self._wake

    def notice(self, due: Sequence[datetime | None]) -> None:
        """Take note of emails that fall due (entries this process just wrote)."""
        for at in due:
            if at is not None and (self._wake is None or at < self._wake):
                self._wake = at

    def __call__(self, conn: Conn) -> int:
        """Drain if something is due now; return the rows claimed."""
        now = self.drain.clock()
        if self._wake is not None and now < self._wake:
            return 0
        work = 0
        more = False
        for _ in range(self.max_rounds):
            done = self.drain.round(conn)
            work += done
            if done == 0 or self.drain.unreachable:
                break
        else:
            more = True
        now = self.drain.clock()
        if self.drain.unreachable:
            self._unreachable += 1
            pause = self.backoff * 2 ** min(self._unreachable - 1, 30)
            self._wake = now + min(pause, self.poll)
            return work
        self._unreachable = 0
        if more:
            self._wake = now
            return work
        wake = now + self.poll
        due = self.drain.next_due(conn)
        if due is not None and due < wake:
            wake = due
        self._wake = wake
        return work


#: The categories whose emails may wait for a digest (E3 moves only theirs).
_DIGEST: Final = frozenset(c.key for c in CATEGORIES if c.digest)


def reschedule_pending(
    conn: Conn,
    host: MailHostPorts,
    before: WikiUser,
    after: WikiUser,
    *,
    at: datetime,
    delay: timedelta,
    schema: str = DEFAULT_SCHEMA,
) -> int:
    """Move a person's pending emails after a change of their schedule (rule E3).

    The host calls it in the transaction that changes the person's ``email_schedule``,
    ``daily_hour`` or zone, with the person's values before and after and the change's time:
    every ``pending`` email of a digest category gets its due time anew from ``at`` under the
    new values (the core's `reschedule`); the others keep theirs, and an update that repeats
    the current values changes nothing. Returns how many rows moved.
    """
    seam = Seam("notify_pg", schema)
    old, new = email_schedule(before), email_schedule(after)
    if old == new and before.time_zone == after.time_zone:
        return 0
    rows = seam.all(conn, "mail_pending_of", {"user_id": after.id})
    if not rows:
        return 0
    zones: dict[str, str | None] = {}
    for _id, _category, _due, site in rows:
        if site is not None and site not in zones:
            info = host.inbox_site(conn, site)
            zones[site] = info.time_zone if info is not None else None
    moved = reschedule(
        (
            QueuedEmail(
                entry=str(id_),
                category=category,
                email="pending",
                email_after=due.astimezone(UTC),
                site_time_zone=zones.get(site) if site is not None else None,
            )
            for id_, category, due, site in rows
        ),
        person=after.id,
        old=old,
        new=new,
        old_time_zone=before.time_zone,
        new_time_zone=after.time_zone,
        now=at,
        digest_categories=_DIGEST,
        delay=delay,
    )
    if moved:
        ids = sorted(moved, key=int)
        seam.run(
            conn, "mail_reschedule", {"ids": [int(i) for i in ids], "dues": [moved[i] for i in ids]}
        )
    return len(moved)
