"""The mail drain on PostgreSQL (docs/rules.md E4-E5).

`MailDrain.drain_once` is one pass over the mail queue (the ``inbox_entries`` rows whose email is
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
   the instance's unsubscribe secret) and handed to the SMTP sender (one connection per pass).
4. **mark**, one statement per mail: ``sent`` with ``emailed_at``; a failure puts the rows back
   to ``pending`` 600 s later, and after the third attempt marks them ``failed``. A mark
   applies only while the claim's lease holds (``email_after`` is the lease), so a worker whose
   lease was taken over never overwrites the new claim. One failing person never stops the
   batch; an unreachable server (the connection itself failed) stops the pass: that mail
   failed (E5), and the rows not tried go back to ``pending`` at their due time before the
   claim, the claim's attempt undone (docs/decisions.md).

A stop (``stop``) is checked between mails: the rest of the claim goes back the same way. When
PostgreSQL fails in the middle of a pass, the mark of a mail already sent and the release of
the rows not tried are held (`notify_pg.mail.claims.MailWrites`) and written first when it is
back: no mail is sent twice by a worker that survives, nobody waits for a lease. At least once
is left only where a worker dies between a send and its mark; the mail sent again keeps its
``Message-ID`` (derived from stable ids, `notify_pg.mail.claims.message_id`).

`notify_pg.mail.rounds.MailRound`, the drain's round of a worker's loop, runs passes and
knows when to run again.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import attrs

from notify_core.inbox.access import PageFacts
from notify_core.inbox.categories import CATEGORY_BY_KEY, Category
from notify_core.inbox.drain import DrainAccess, MailPlan, MailSkip, plan_mails
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.mailing import actors_of, linked_pages, mail_entries, mail_site
from notify_core.inbox.ports import Entry, PageInfo, SiteInfo, WikiUser
from notify_core.inbox.prefs import InboxPrefs
from notify_core.mail import compose_mail, unsubscribe_token
from notify_core.records import RecordInEffect, RecordReason, next_local_midnight
from notify_core.values.errors import NotifyError
from notify_pg.db.errors import StorageError
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam, text_array
from notify_pg.inbox.host_categories import host_registry
from notify_pg.mail.claims import (
    DB_ERRORS,
    Claimed,
    MailWrites,
    Write,
    claimed_row,
    message_id,
)
from notify_pg.mail.ports import MailHostPorts, MailSender
from notify_pg.mail.records import MailRecords
from notify_pg.mail.reschedule import reschedule_pending
from notify_pg.mail.smtp import MailSendError, Outgoing, mail_message
from notify_pg.stores.store import generations

__all__ = [
    "LEASE",
    "MAX_ATTEMPTS",
    "RETRY_AFTER",
    "MailDrain",
    "MailDrainConfig",
    "MailDrainStats",
    "MailHostPorts",
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


#: People claimed per pass when neither the worker nor the instance says otherwise.
DEFAULT_PEOPLE: Final = 100


@attrs.frozen(kw_only=True)
class MailDrainConfig:
    """The drain's settings.

    Args:
        sender: the ``From`` and envelope sender address of every mail.
        people: people claimed per pass (the mail batch size of H2a, 1 to 1000); ``None``:
            the instance's ``mail_batch_size`` when the host keeps the administrator's settings
            (`notify_pg.mail.settings.AdminHostPorts`), else 100.
        lease: how long a claim holds its rows (E5: 600 s).
        retry_after: the pause before a failed send is tried again (E5: 600 s).
        max_attempts: attempts after which a failed send is ``failed`` (E5: 3).
    """

    sender: str
    people: int | None = attrs.field(
        default=None,
        validator=attrs.validators.optional([attrs.validators.ge(1), attrs.validators.le(1000)]),
    )
    lease: timedelta = LEASE
    retry_after: timedelta = RETRY_AFTER
    max_attempts: int = MAX_ATTEMPTS


@attrs.define
class MailDrainStats:
    """What the drain did: passes (`MailDrain.drain_once`), rows claimed, mails by outcome,
    entries by final state, passes stopped by an unreachable server and the rows they released
    untried."""

    passes: int = 0
    claimed: int = 0
    unreachable: int = 0
    released: int = 0
    mails: Counter[str] = attrs.field(factory=Counter)
    entries: Counter[str] = attrs.field(factory=Counter)


@attrs.frozen
class _Facts:
    """The host's facts of one pass: people (with their choices), sites, locales, the
    display names of who acted (E6: read once per pass, like the locales) and the entries'
    pages as they are now (N8 for the access check, N11 for the links)."""

    people: Mapping[str, PersonFacts] = attrs.field(factory=dict)
    sites: dict[str, SiteInfo | None] = attrs.field(factory=dict)
    users: Mapping[str, WikiUser] = attrs.field(factory=dict)
    names: Mapping[str, str] = attrs.field(factory=dict)
    pages: Mapping[str, PageInfo] = attrs.field(factory=dict)
    #: The registry of the pass: the seven and the host's own categories (N13).
    categories: Mapping[str, Category] = attrs.field(factory=lambda: CATEGORY_BY_KEY)
    records: MailRecords | None = None
    #: The generation of each person ever forgotten (U3: their tokens carry it; a person
    #: forgotten now gets no mail and is not here).
    generations: Mapping[str, int] = attrs.field(factory=dict)


def _registry(conn: Conn, entries: Sequence[Entry], schema: str) -> Mapping[str, Category]:
    """The registry a pass reads: the built-in categories, and the host's own (N13) read
    from PostgreSQL only when an entry is of one."""
    if all(e.category in CATEGORY_BY_KEY for e in entries):
        return CATEGORY_BY_KEY
    return host_registry(conn, schema=schema)


def _wanted(entries: Sequence[Entry], known: Mapping[str, Category]) -> set[str]:
    """The pages whose access the drain checks again (E4 over N8): those of the entries whose
    category needs a permission."""
    return {
        e.target.page
        for e in entries
        if e.target.page is not None and known[e.category].access is not None
    }


def _clock() -> datetime:
    return datetime.now(UTC)


class MailDrain:
    """The mail drain of one worker over the entries table (`notify_pg.mail.rounds.MailRound`
    runs it in the worker's loop).

    Args:
        host: the host's ports.
        sender: opens a sender (an SMTP connection) for a pass, when it has a mail to send.
        secret: returns the instance's unsubscribe secret (U1) on the worker's connection.
        config: the drain's settings.
        schema: the library's schema.
        clock: the current instant (tests drive it).
        on_sent: a test hook, called after each send and before its mark.
        on_done: called after each mail's mark with the pass's instant, the plan and what
            became of it: ``sent``, ``skipped``, ``failed`` (a failed send, retried or
            given up) or ``held`` (over a record's cap: pending to the person's next local
            midnight, M4).
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
        #: Whether the last pass stopped because the SMTP server was unreachable.
        self.unreachable = False
        #: Whether the last pass stopped early because the stop signal was set.
        self.stopped = False
        self._seam = Seam("notify_pg", schema)
        # Writes the database did not take (it failed meanwhile): written first when it is
        # back, so a mail sent before an outage is marked, never sent again by this worker.
        self._writes = MailWrites(self._seam, self.stats)
        # The advisory lock space of this schema's drain (one per schema, all workers alike).
        self._lock = f"notify_mail:{schema}"
        self._facts = _Facts()

    # --- one pass ----------------------------------------------------------------------------

    def _people(self, conn: Conn) -> int:
        """People to claim this pass: ``config.people`` when set (``notify worker
        --mail-batch``), else the instance's ``mail_batch_size`` when the host keeps the
        administrator's settings (`notify_pg.mail.settings.AdminHostPorts`), else 100."""
        if self.config.people is not None:
            return self.config.people
        read = getattr(self.host, "inbox_instance_settings", None)
        if read is None:
            return DEFAULT_PEOPLE
        # Read each pass: an administrator's change applies from the next drain on.
        return int(read(conn).mail_batch_size)

    def drain_once(self, conn: Conn, *, stop: threading.Event | None = None) -> int:
        """Claim, plan, send and mark one batch of people; return the rows claimed (0: none due).

        ``conn`` is in autocommit mode: the claim commits before any mail is sent, and each
        mark commits on its own. Writes held over a database failure are written first
        (`write_held`); nothing is claimed while any is held.

        The pass stops early, and releases the claimed rows of the mails it did not try
        (back to ``pending`` at their due time, the claim's attempt undone):

        - when the SMTP connection cannot be made: after that mail (a failed attempt, E5),
          setting `unreachable`;
        - when ``stop`` is set: before the next mail, setting `stopped` (the mail in
          progress completes);
        - when PostgreSQL fails: the mark of a mail already sent is held (the mail is never
          sent again by this worker), the release of the untried rows too, and the failure
          is raised; both are written when the database is back.

        Raises:
            StorageError: PostgreSQL failed (what this pass could not write is held).
        """
        self.unreachable = False
        self.stopped = False
        self.write_held(conn)
        now = self.clock()
        lease_until = now + self.config.lease
        with self._seam.transaction(conn):
            rows = self._seam.all(
                conn,
                "mail_claim",
                {
                    "now": now,
                    "lease_until": lease_until,
                    "people": self._people(conn),
                    "lock": self._lock,
                },
            )
        self.stats.passes += 1
        if not rows:
            return 0
        self.stats.claimed += len(rows)
        claimed = {c.entry.id: c for c in map(claimed_row, rows)}
        untried: list[Entry] = []
        failure: Exception | None = None
        try:
            plans = self._plan(conn, [c.entry for c in claimed.values()])
        except DB_ERRORS as exc:
            # Nothing tried: every row goes back once the database is back.
            plans, failure = [], exc
            untried = [c.entry for c in claimed.values()]
        sender: list[MailSender] = []
        secret: list[bytes] = []
        try:
            for plan in plans:
                rows_of_plan = plan.entries if plan.skip is not None else plan.sent
                if failure is not None or (self.unreachable and plan.skip is None):
                    untried.extend(rows_of_plan)
                    continue
                if stop is not None and stop.is_set():
                    # The stop reaches the drain between mails: the rest goes back at once.
                    self.stopped = True
                    untried.extend(rows_of_plan)
                    continue
                held = self._writes.held
                try:
                    self._one(conn, now, plan, lease_until, claimed, sender, secret)
                except DB_ERRORS as exc:
                    failure = exc
                    if self._writes.held == held:  # failed before its mail went: not tried
                        untried.extend(rows_of_plan)
        finally:
            if sender:
                sender[0].close()
        if untried:
            release = Write(
                "mail_release",
                {
                    "ids": [claimed[e.id].table_id for e in untried],
                    "dues": [claimed[e.id].due_at for e in untried],
                    "lease_until": lease_until,
                },
            )
            if failure is None:
                self._writes.write(conn, release)
            else:
                self._writes.hold(release)
        if self.unreachable:
            self.stats.unreachable += 1
            _log.warning("mail server unreachable", extra={"fields": {"released": len(untried)}})
        if failure is not None:
            _log.warning(
                "mail writes held",
                extra={"fields": {"held": self._writes.held, "untried": len(untried)}},
            )
            raise failure
        fields: dict[str, Any] = {"claimed": len(rows), "mails": len(plans)}
        if self.stopped:
            fields["released"] = len(untried)
        _log.info("mail round", extra={"fields": fields})
        return len(rows)

    def _one(
        self,
        conn: Conn,
        now: datetime,
        plan: MailPlan,
        lease_until: datetime,
        claimed: Mapping[str, Claimed],
        sender: list[MailSender],
        secret: list[bytes],
    ) -> None:
        """Send (or skip) one mail and mark it; ``sender`` and ``secret`` are the pass's,
        opened or read on first use."""
        if plan.skip is not None:
            self._mark(
                conn, "mail_skipped", plan.entries, lease_until, claimed, reason=plan.skip.value
            )
            self.stats.mails[f"skip_{plan.skip.value}"] += 1
            self.stats.entries["skipped"] += len(plan.entries)
            self._done(now, plan, "skipped")
            return
        record, held = _record_check(self._facts, plan)
        if held is not None:
            _hold(self, conn, now, plan, lease_until, claimed, record, held)
            return
        record_id = None if record is None else record.preference_id
        if not secret:
            secret.append(self.secret(conn))
        try:
            outgoing = self._outgoing(conn, plan, claimed, secret[0], record)
            if not sender:
                sender.append(self.sender())
            sender[0].send(outgoing)
        except MailSendError as error:
            # Nothing else can go now when the server is unreachable: the other mails wait
            # for the next pass rather than each waiting out its own connection timeout.
            self.unreachable = error.unreachable
            self._failed(conn, plan, lease_until, claimed, error.code, error.temporary)
            self._done(now, plan, "failed")
            return
        except NotifyError as error:  # a mail that cannot be composed fails alone
            if isinstance(error, StorageError):
                raise
            self._failed(conn, plan, lease_until, claimed, error.code, False)
            self._done(now, plan, "failed")
            return
        if self.on_sent is not None:
            self.on_sent(outgoing)
        self.stats.mails["sent"] += 1
        self.stats.entries["sent"] += len(plan.sent)
        self._mark(conn, "mail_sent", plan.sent, lease_until, claimed, record=record_id)
        self._done(now, plan, "sent")

    @property
    def held(self) -> int:
        """How many writes wait for the database (marks of mails sent, releases)."""
        return self._writes.held

    def write_held(self, conn: Conn) -> int:
        """Write what passes could not (the database failed meanwhile); return how many
        writes went (`notify_pg.mail.claims.MailWrites.write_held`)."""
        return self._writes.write_held(conn)

    def _done(self, now: datetime, plan: MailPlan, outcome: str) -> None:
        if self.on_done is not None:
            self.on_done(now, plan, outcome)

    def drain(
        self, conn: Conn, *, max_passes: int = 1_000, stop: threading.Event | None = None
    ) -> int:
        """Run passes (`drain_once`) until nothing is due, the SMTP server is unreachable,
        after ``max_passes`` or once ``stop`` is set; return the rows claimed."""
        total = 0
        for _ in range(max_passes):
            if stop is not None and stop.is_set():
                break
            done = self.drain_once(conn, stop=stop)
            total += done
            if done == 0 or self.unreachable or self.stopped:
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
        # The people's preference records and the mails that named one come with their
        # choices, in one query (M1, M4).
        records = MailRecords(self.clock())
        for user, category, channel, enabled, value in self._seam.all(
            conn,
            "mail_prefs_and_records_of",
            {"ids": text_array(list(people)), "now": records.now},
        ):
            if not records.take(user, channel, value):
                stored.setdefault(user, {})[(category, channel)] = bool(enabled)
        for user, choices in stored.items():
            people[user] = people[user]._replace(prefs=InboxPrefs(rows=choices))
        # U3: a person forgotten now gets no mail (inactive), whatever the host still says;
        # one created again signs with their generation.
        marks = generations(conn, ids, self.schema)
        for user, n in marks.items():
            if n is None and user in people:
                people[user] = people[user]._replace(active=False)
        sites: dict[str, SiteInfo | None] = {}

        def site_on(site: str) -> bool:
            if site not in sites:
                sites[site] = host.inbox_site(conn, site)
            info = sites[site]
            return info is None or info.notifications

        first = host.inbox_first_site(conn) if any(e.target.site is None for e in entries) else None
        known = _registry(conn, entries, self.schema)
        wanted = _wanted(entries, known)
        pages = _pages(host, conn, wanted | set(linked_pages(entries)))
        self._facts = _Facts(
            people=people,
            sites=sites,
            users=host.inbox_users(conn, ids),
            names=host.inbox_names(conn, actors_of(entries)),
            pages=pages,
            categories=known,
            records=records,
            generations={user: n for user, n in marks.items() if n is not None},
        )
        return plan_mails(
            entries,
            site_on=site_on,
            people=people,
            settings=host.inbox_settings(conn),
            first_site=first,
            access=_access(host, conn, wanted, pages),
            known=known,
        )

    def _outgoing(
        self,
        conn: Conn,
        plan: MailPlan,
        claimed: Mapping[str, Claimed],
        secret: bytes,
        record: RecordInEffect | None = None,
    ) -> Outgoing:
        """Compose the mail of a send (E6) for the person's address."""
        facts_now = self._facts
        if plan.site not in facts_now.sites:
            facts_now.sites[plan.site] = self.host.inbox_site(conn, plan.site)
        site = mail_site(plan.site, facts_now.sites[plan.site])
        person = plan.recipient
        facts = facts_now.people.get(person)
        user = facts_now.users.get(person)
        if facts is None or not facts.email:  # the plan skips them (N4): never reached
            raise MailSendError("no_address", "the person has no address", temporary=False)
        shown = mail_entries(
            plan.entries,
            names=facts_now.names,
            # N11: the excerpt (and the talk tab's anchor) only while the comment exists: a
            # deleted comment's entries lose their comment id (notify_pg.inbox.reads).
            comment_exists=lambda e: claimed[e.id].comment is not None,
            # N11: a link follows its page to where it is now, while it exists.
            pages=facts_now.pages,
            categories=facts_now.categories,
        )
        mail = compose_mail(
            shown,
            site=site,
            locale=user.locale if user is not None else None,
            token=unsubscribe_token(
                secret, person, plan.unsubscribe, facts_now.generations.get(person, 0)
            ),
            more=plan.more,
        )
        if record is not None and record.email.plain:  # M5: the text body only
            mail = attrs.evolve(mail, html="")
        sender = self.config.sender
        message = mail_message(
            mail,
            sender=sender,
            to=facts.email,
            date=self.clock(),
            message_id=message_id(plan, claimed, sender),
        )
        return Outgoing(sender=sender, recipients=(facts.email,), message=message)

    def _mark(
        self,
        conn: Conn,
        query: str,
        entries: Sequence[Entry],
        lease_until: datetime,
        claimed: Mapping[str, Claimed],
        *,
        reason: str | None = None,
        record: str | None = None,
    ) -> None:
        ids = [claimed[e.id].table_id for e in entries]
        params: dict[str, Any] = {"ids": ids, "at": self.clock(), "lease_until": lease_until}
        params["record"] = record  # the record that governed the mail (M6)
        if reason is not None:  # a skip records why (E4, `notify db status`)
            params["reason"] = reason
        self._writes.write(conn, Write(query, params))

    def _failed(
        self,
        conn: Conn,
        plan: MailPlan,
        lease_until: datetime,
        claimed: Mapping[str, Claimed],
        code: str,
        temporary: bool,
    ) -> None:
        now = self.clock()
        self.stats.mails["failed"] += 1
        params = {
            "ids": [claimed[e.id].table_id for e in plan.sent],
            "at": now,
            "retry_at": now + self.config.retry_after,
            "lease_until": lease_until,
            "max_attempts": self.config.max_attempts,
        }
        self._writes.write(
            conn, Write("mail_failed", params, {"code": code, "temporary": temporary})
        )


def _pages(host: MailHostPorts, conn: Conn, wanted: set[str]) -> dict[str, PageInfo]:
    """The pages of the pass's entries as the host holds them now (a deleted page as it
    was, flagged), each read once however many entries point at it."""
    pages: dict[str, PageInfo] = {}
    for page_id in sorted(wanted):
        page = host.inbox_page(conn, page_id)
        if page is not None:
            pages[page_id] = page
    return pages


def _access(
    host: MailHostPorts, conn: Conn, wanted: set[str], pages: Mapping[str, PageInfo]
) -> DrainAccess:
    """The groups of now and the pages of the entries that need a permission (``wanted``)
    for the drain's access check (E4 over N8).

    Access itself is computed once per page, group set and permission (`DrainAccess`).
    """
    facts: dict[str, PageFacts] = {p: pages[p].access for p in sorted(wanted) if p in pages}
    return DrainAccess(groups=host.inbox_groups(conn) if wanted else {}, pages=facts)


def _record_check(
    facts: _Facts, plan: MailPlan
) -> tuple[RecordInEffect | None, RecordReason | None]:
    """The record that governs a mail the checks of E4 let go, and why it holds the mail back
    (M2-M4; `notify_pg.mail.records.MailRecords.check`)."""
    if facts.records is None:
        return None, None
    user = facts.users.get(plan.recipient)
    return facts.records.check(plan.recipient, user.time_zone if user is not None else None)


def _hold(
    drain: MailDrain,
    conn: Conn,
    now: datetime,
    plan: MailPlan,
    lease_until: datetime,
    claimed: Mapping[str, Claimed],
    record: RecordInEffect | None,
    held: RecordReason,
) -> None:
    """A mail its record holds back (M2-M4): over the cap its rows wait, pending, to the
    person's next local midnight (the claim's attempt undone); suspended or off, skipped with
    the reason and the record (M6). ``on_done`` hears of it as a skip of the entries the
    mail would have sent, with the record's reason (``held`` for the cap)."""
    skip = MailPlan(
        recipient=plan.recipient, site=plan.site, entries=plan.sent, skip=MailSkip(held.value)
    )
    if held is RecordReason.FREQUENCY_CAP:
        user = drain._facts.users.get(plan.recipient)
        until = next_local_midnight(now, user.time_zone if user is not None else None)
        ids = [claimed[e.id].table_id for e in plan.sent]
        params = {
            "ids": ids,
            "until": until,
            "lease_until": lease_until,
            "at": now,
            "record": None if record is None else record.preference_id,
        }
        drain._writes.write(conn, Write("mail_wait", params))
        drain.stats.mails["skip_frequency_cap"] += 1
        drain._done(now, skip, "held")
        return
    record_id = None if record is None else record.preference_id
    drain._mark(
        conn, "mail_skipped", plan.sent, lease_until, claimed, reason=held.value, record=record_id
    )
    drain.stats.mails[f"skip_{held.value}"] += 1
    drain.stats.entries["skipped"] += len(plan.sent)
    drain._done(now, skip, "skipped")
