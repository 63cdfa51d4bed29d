"""The inbox's fan-out on PostgreSQL (docs/rules.md N5-N12, H4).

`InboxFanOut.fan_out_claim` claims up to 50 outbox events with ``FOR UPDATE SKIP LOCKED``,
each claim tied to the claiming session (`notify_pg.inbox.claims`: a worker takes its own
claims again at once, any worker those of a session that is gone, and any claim older than
the timeout), and fans each out in keyset batches of 1,000 candidates:

- candidates come through the host's ports (`InboxHostPorts`: watchers, reviewers, people,
  groups, pages, comments) and the library's own ``inbox_preferences`` (opt-ins); the sources
  are merged on the person's id so that every category of one person falls into one batch
  (one entry per person per event, N7);
- the pure decision is the core's `fan_out`, with one `AccessCache` for the whole event (a
  group set costs one access evaluation per event, however many batches);
- each batch is one transaction: the entries are coalesced by multi-row
  ``INSERT ... ON CONFLICT ... DO UPDATE`` statements of up to 500 rows, and the cursor (the
  last person done) is written on the event row, so a worker that dies mid-fan-out leaves the
  next worker to resume after the last committed batch, counting nobody twice.

The event row is locked for each batch and its claim checked, so a claim taken back from a
slow worker is never worked by two at once. A stop (``stop``, `notify worker`'s SIGTERM) is
checked between events: the event in progress is finished, the other claims given back.
The event as the fan-out sees it comes from `notify_pg.inbox.describe`, the write statements'
parameters from `notify_pg.inbox.statements`.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, Protocol, runtime_checkable

import attrs
import psycopg

from notify_core.events.log import Event
from notify_core.inbox.access import AccessCache, Group
from notify_core.inbox.categories import Candidates, Category
from notify_core.inbox.fanout import InboxEvent, PersonFacts, fan_out, firing
from notify_core.inbox.host_categories import HOST_EVENT
from notify_core.inbox.payloads import strings
from notify_core.inbox.pipeline import EmailAfter, scheduled_email_after
from notify_core.inbox.ports import CommentInfo, PageInfo, SiteInfo, WikiUser, created_as_draft
from notify_core.inbox.prefs import InboxPrefs, InboxSettings
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam, text_array
from notify_pg.inbox.claims import Claimed, OutboxClaims
from notify_pg.inbox.describe import describe, describe_host, host_values
from notify_pg.inbox.statements import EventFacts, entry_statements
from notify_pg.stores.store import generations

__all__ = [
    "CANDIDATE_BATCH",
    "CLAIM_LIMIT",
    "WRITE_BATCH",
    "FanOutStats",
    "InboxFanOut",
    "InboxHostPorts",
    "InboxPeopleAndUsers",
    "InboxPermissionHolders",
    "Written",
]

_log = logging.getLogger("notify_pg.inbox")

#: Events claimed per claim (`InboxFanOut.fan_out_claim`).
CLAIM_LIMIT: Final = 50
#: Candidates read per keyset batch.
CANDIDATE_BATCH: Final = 1_000
#: Entry rows per multi-row statement.
WRITE_BATCH: Final = 500


class InboxHostPorts(Protocol):
    """What the fan-out reads of the host (a wiki), each on the worker's connection."""

    def inbox_site(self, conn: Conn, site: str) -> SiteInfo | None:
        """Return a site (its notifications switch, N5), or ``None``."""

    def inbox_page(self, conn: Conn, page: str) -> PageInfo | None:
        """Return a page as it is now; a deleted page as it was, with ``deleted`` set."""

    def inbox_comment(self, conn: Conn, comment: str) -> CommentInfo | None:
        """Return a comment, or ``None``."""

    def inbox_watchers(self, conn: Conn, page: str, after: str, limit: int) -> Sequence[str]:
        """Return up to ``limit`` watchers of a page with ids above ``after``, in id order."""

    def inbox_reviewers(self, conn: Conn, page: PageInfo, after: str, limit: int) -> Sequence[str]:
        """Return up to ``limit`` members of the reviewer groups of the enabled review rules
        of the page's site matching the page, ids above ``after``, in id order, each once."""

    def inbox_people(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, PersonFacts]:
        """Return the facts (active, human, system, groups, address) of the known people."""

    def inbox_groups(self, conn: Conn) -> Mapping[str, Group]:
        """Return every group and its rules."""

    def inbox_settings(self, conn: Conn) -> InboxSettings:
        """Return the sections and whether mail is configured."""

    def inbox_email_delay(self, conn: Conn) -> timedelta:
        """Return the instance's email delay (E2)."""

    def inbox_retention_days(self, conn: Conn) -> int:
        """Return how many days entries are kept (H3, 60 by default)."""

    def inbox_users(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, WikiUser]:
        """Return what the cadence reads of the known people among ``ids``."""


@runtime_checkable
class InboxPermissionHolders(Protocol):
    """A port a host adds for host categories whose candidates hold a host permission (N8,
    N13: a group's ``permissions``, or ``manage_system``). A host without it has no such
    candidates (the fan-out warns once); the reference wiki has it."""

    def inbox_holders(self, conn: Conn, permission: str, after: str, limit: int) -> Sequence[str]:
        """Return up to ``limit`` people holding a host permission, ids above ``after``, in
        id order, each once."""


@runtime_checkable
class InboxPeopleAndUsers(Protocol):
    """A port a host may add: `InboxHostPorts.inbox_people` and ``inbox_users`` in one read.

    The fan-out asks it, when the host has it, once per batch for every candidate (the
    cadence then comes for people without email too), in place of the two reads.
    """

    def inbox_people_and_users(
        self, conn: Conn, ids: Sequence[str]
    ) -> tuple[Mapping[str, PersonFacts], Mapping[str, WikiUser]]:
        """Return what ``inbox_people`` and what ``inbox_users`` return for ``ids``."""


@attrs.frozen(kw_only=True)
class Written:
    """One entry as a fan-out left it: new (``inserted``) or coalesced.

    ``read`` is true for an email-only entry closed at once (N12).
    """

    event: int
    id: int
    user_id: str
    category: str
    group_key: str
    count: int
    in_app: bool
    email_state: str
    email_after: datetime | None
    read: bool
    inserted: bool


@attrs.define
class FanOutStats:
    """What the fan-out did: events done, entries written, batches, access evaluations, and the
    seconds spent in the entries' write statements (``write_s``, round trips included).

    ``skips`` counts the candidates that got no entry, by reason (``actor``, ``no_access``,
    ...: one per candidate and category, as a replay's summary counts them); ``dropped``
    counts the events that gave nobody anything before any candidate was read, by reason
    (``page_exists``: a deletion whose page is still there; ``site_off``: the site's switch,
    N5; ``unknown_page``). Neither is stored: skips are counts, never rows
    (docs/decisions.md).
    """

    events: int = 0
    entries: int = 0
    batches: int = 0
    access_evaluations: int = 0
    lost_claims: int = 0
    write_s: float = 0.0
    skips: Counter[str] = attrs.field(factory=Counter)
    dropped: Counter[str] = attrs.field(factory=Counter)


@attrs.frozen
class _Facts:
    """A batch's candidates (``ids``, sorted), their facts as the host answered them and
    their stored choices (``prefs``, by person); ``users``: ``None`` when the host reads the
    cadence apart (asked of the mailed, after the decisions); ``forgotten``: the candidates
    `notify_pg.forget_person` erased and the host has not created again (U3: ``inactive``)."""

    ids: tuple[str, ...]
    people: Mapping[str, PersonFacts]
    prefs: Mapping[str, dict[tuple[str, str], bool]]
    users: Mapping[str, WikiUser] | None
    forgotten: frozenset[str] = frozenset()


@attrs.frozen
class _Plan:
    """A batch decided: its write statements' parameters, entries and skips (by reason)."""

    statements: tuple[dict[str, Any], ...]
    entries: int
    skips: tuple[str, ...]


class _LostClaim(Exception):
    """The event's claim went to another worker (ours was older than the timeout, or its
    session looked gone)."""


class InboxFanOut:
    """The fan-out of one worker over the outbox (`notify_pg.inbox.rounds.FanOutRound` runs it
    in the worker's loop).

    Args:
        host: the host's ports.
        schema: the library's schema.
        worker: this worker's name (a unique suffix is added per instance).
        claim_timeout: a claim older than this is taken again by another worker, even while
            the session that took it lives (a claim whose session is gone is taken at once,
            `notify_pg.inbox.claims`).
        email_after: the cadence (E2): the person's schedule by default, as in a replay.
        batch: candidates per keyset batch; ``write_batch``: rows per statement.
        on_batch: a test hook, called after each committed batch with the event's id.
        on_written: called after each committed batch with the entries it wrote.
    """

    def __init__(
        self,
        host: InboxHostPorts,
        *,
        schema: str = DEFAULT_SCHEMA,
        worker: str = "worker",
        claim_timeout: timedelta = timedelta(minutes=5),
        email_after: EmailAfter = scheduled_email_after,
        batch: int = CANDIDATE_BATCH,
        write_batch: int = WRITE_BATCH,
        claim_limit: int = CLAIM_LIMIT,
        on_batch: Callable[[int], None] | None = None,
        on_written: Callable[[Sequence[Written]], None] | None = None,
    ) -> None:
        self.host = host
        self.schema = schema
        self.worker = f"{worker}:{uuid.uuid4().hex[:12]}"
        self.email_after = email_after
        self.batch = batch
        self.write_batch = write_batch
        self.on_batch = on_batch
        self.on_written = on_written
        self.stats = FanOutStats()
        self._seam = Seam("notify_pg", schema)
        self.claims = OutboxClaims(self._seam, self.worker, claim_timeout, claim_limit)
        #: Whether the last claim stopped early because the stop signal was set.
        self.stopped = False
        self._warned_holders = False

    def fan_out_claim(self, conn: Conn, *, stop: threading.Event | None = None) -> int:
        """Claim up to 50 events and fan each out; return how many were finished.

        ``conn`` is in autocommit mode: the claim and each batch commit on their own. With
        ``stop``, it stops between events once it is set (the event in progress is
        finished), gives the claims it did not start back at once and sets `stopped`. When
        PostgreSQL fails, the claims stay this worker's: its next claim takes them again at
        once, from their cursors (another worker takes them once this session is gone).
        """
        self.stopped = False
        claimed = self.claims.claim(conn)
        done = 0
        for at, event in enumerate(claimed):
            if stop is not None and stop.is_set():
                self.stopped = True
                released = self.claims.release(conn, [c.id for c in claimed[at:]])
                _log.info("inbox round stopped", extra={"fields": {"released": released}})
                break
            try:
                self._fan_out(conn, event)
            except _LostClaim:
                self.stats.lost_claims += 1
                continue
            done += 1
        self.stats.events += done
        return done

    def drain(
        self, conn: Conn, *, max_claims: int = 1_000, stop: threading.Event | None = None
    ) -> int:
        """Fan out claims (`fan_out_claim`) until the outbox has nothing to claim, after
        ``max_claims`` or once ``stop`` is set; return the events finished."""
        total = 0
        for _ in range(max_claims):
            if stop is not None and stop.is_set():
                break
            done = self.fan_out_claim(conn, stop=stop)
            total += done
            if done == 0 or self.stopped:
                break
        return total

    # --- one event ---------------------------------------------------------------------------

    def _fan_out(self, conn: Conn, claimed: Claimed) -> None:
        host, event = self.host, claimed.event
        if event.type == HOST_EVENT:  # a host category's event (N13)
            found = describe_host(conn, claimed, self.stats.dropped, self.schema)
        else:
            found = describe(conn, host, claimed, self.stats.dropped)
        if found is None:
            self.claims.finish(conn, claimed.id)
            return
        inbox, page = found
        site = host.inbox_site(conn, inbox.site) if inbox.site is not None else None
        if site is not None and not site.notifications:  # N5: no entry
            self.stats.dropped["site_off"] += 1
            self.claims.finish(conn, claimed.id)
            return
        groups = host.inbox_groups(conn)
        settings = host.inbox_settings(conn)
        delay = host.inbox_email_delay(conn)
        access = AccessCache(groups, inbox.page)
        sources = [(c, c.candidates) for c in firing(inbox)]
        values = (
            host_values(claimed, inbox)
            if inbox.host is not None
            else self._event_values(conn, claimed, inbox, page)
        )
        the_event = EventFacts(
            inbox=inbox,
            page=page,
            site=site,
            groups=groups,
            settings=settings,
            delay=delay,
            access=access,
            values=values,
        )
        candidates, end = self._batch(
            conn, claimed, event, inbox, page, sources, claimed.cursor or ""
        )
        plan: _Plan | None = None
        while True:
            written: list[Written] = []
            with self._seam.transaction(conn):
                if not self.claims.hold(conn, claimed.id):
                    raise _LostClaim
                if plan is None:
                    plan = self._plan(conn, the_event, candidates, self._facts(conn, candidates))
                for params in plan.statements[:-1]:
                    written.extend(self._send(conn, claimed, params))
                # The next batch is read now, before this batch's last statement: the server
                # then runs that statement, the cursor and the commit while this process
                # decides the next batch (a pipeline). Nothing of it is written before the
                # next batch holds the claim again; a lost claim drops it unwritten.
                # Only the last statement goes in the pipeline: the others run one round trip
                # each, so that with one row a statement (the benchmark's baseline) the writes
                # stay a loop of statements and their round trips.
                ahead: tuple[dict[str, list[str]], str | None] | None = None
                next_plan: _Plan | None = None
                plan_next: Callable[[], _Plan] | None = None
                if end is not None:
                    following, after = self._batch(conn, claimed, event, inbox, page, sources, end)
                    ahead = (following, after)
                    facts = self._facts(conn, following)
                    if facts.users is None:  # the host reads the cadence after the decisions
                        next_plan = self._plan(conn, the_event, following, facts)
                    else:  # pure: run while the server works
                        plan_next = functools.partial(self._plan, conn, the_event, following, facts)
                last_written, planned = self._finish_batch(conn, claimed, plan, end, plan_next)
                written.extend(last_written)
                if planned is not None:
                    next_plan = planned
                self.stats.entries += plan.entries
                self.stats.skips.update(plan.skips)
            self.stats.batches += 1
            self.stats.access_evaluations = access.evaluations
            if self.on_written is not None and written:
                self.on_written(written)
            if self.on_batch is not None:
                self.on_batch(claimed.id)
            if ahead is None:
                return
            candidates, end = ahead
            plan = next_plan

    def _finish_batch(
        self,
        conn: Conn,
        claimed: Claimed,
        plan: _Plan,
        end: str | None,
        plan_next: Callable[[], _Plan] | None,
    ) -> tuple[list[Written], _Plan | None]:
        """Send the batch's last statement and its cursor (or the event done) in a pipeline,
        run ``plan_next`` (the next batch's decisions) while the server runs them, and return
        what the last statement wrote (read back only for a listener) and the next plan.

        With a libpq too old for pipelines (before 14) the statements run one after the other
        and the next batch is decided after them.
        """
        if not psycopg.Pipeline.is_supported():
            written = self._send(conn, claimed, plan.statements[-1]) if plan.statements else []
            self.claims.mark(conn, claimed.id, end)
            return written, None if plan_next is None else plan_next()
        listening = self.on_written is not None
        planned: _Plan | None = None
        last = None
        with self._seam.translated(), conn.pipeline() as pipeline:
            started = time.perf_counter()
            if plan.statements:
                name = "inbox_upsert_returning" if listening else "inbox_upsert"
                last = conn.execute(self._seam.query(name), plan.statements[-1])
            self.claims.mark(conn, claimed.id, end)
            sending = time.perf_counter() - started
            if plan_next is not None:
                planned = plan_next()
            started = time.perf_counter()
            pipeline.sync()
            if last is not None:
                self.stats.write_s += sending + time.perf_counter() - started
            rows = last.fetchall() if last is not None and listening else []
        return [_written(claimed.id, r) for r in rows], planned

    def _batch(
        self,
        conn: Conn,
        claimed: Claimed,
        event: Event,
        inbox: InboxEvent,
        page: PageInfo,
        sources: Sequence[tuple[Category, Candidates]],
        after: str,
    ) -> tuple[dict[str, list[str]], str | None]:
        """One keyset batch of every source: the people with ids in ``(after, end]``.

        ``end`` is the smallest last id of the sources that filled their batch (``None``:
        every source is exhausted), so each person's categories all fall into one batch.
        """
        limit = self.batch
        read: dict[str, list[str]] = {}
        end: str | None = None
        for category, source in sources:
            if source is Candidates.WATCHERS:
                if claimed.recipients is not None:  # a deletion: captured at its emit (N9)
                    got = [r for r in claimed.recipients if r > after][:limit]
                else:
                    got = list(self.host.inbox_watchers(conn, page.id, after, limit))
            elif source is Candidates.REVIEWERS:
                got = list(self.host.inbox_reviewers(conn, page, after, limit))
            elif source is Candidates.OPTED_IN:
                got = [
                    r[0]
                    for r in self._seam.all(
                        conn,
                        "inbox_opted_in",
                        {"category": category.key, "after": after, "limit": limit},
                    )
                ]
            elif source is Candidates.PARENT_AUTHOR:
                got = [inbox.parent_author] if inbox.parent_author else []
                got = [g for g in got if g > after]
            elif source is Candidates.PERMISSION:  # N13: the holders of a host permission
                got = self._holders(conn, str(category.permission), after, limit)
            elif source is Candidates.NAMED:  # N13: the people the event names
                got = sorted(g for g in strings(event.payload.get("people")) if g > after)
            else:
                got = sorted(g for g in strings(event.payload.get("mentions")) if g > after)
            read[category.key] = got
            if source in _PAGED and len(got) >= limit and (end is None or got[-1] < end):
                end = got[-1]
        if end is not None:
            bound = end
            read = {key: [g for g in got if g <= bound] for key, got in read.items()}
        return read, end

    def _holders(self, conn: Conn, permission: str, after: str, limit: int) -> list[str]:
        """The holders of a host permission (`InboxPermissionHolders`); none, warned once,
        from a host without that port."""
        if isinstance(self.host, InboxPermissionHolders):
            return list(self.host.inbox_holders(conn, permission, after, limit))
        if not self._warned_holders:
            self._warned_holders = True
            _log.warning(
                "the host has no inbox_holders: categories by permission reach no one",
                extra={"fields": {"permission": permission}},
            )
        return []

    def _people(
        self, conn: Conn, ids: Sequence[str]
    ) -> tuple[
        Mapping[str, PersonFacts],
        dict[str, dict[tuple[str, str], bool]],
        Mapping[str, WikiUser] | None,
    ]:
        """The candidates' facts as the host answers them (a host may build them on first use:
        `_plan` copies them), their stored choices, and their cadence when the host reads
        both at once (`InboxPeopleAndUsers`; ``None``: asked later, of the mailed)."""
        users: Mapping[str, WikiUser] | None = None
        if isinstance(self.host, InboxPeopleAndUsers):
            people, users = self.host.inbox_people_and_users(conn, ids)
        else:
            people = self.host.inbox_people(conn, ids)
        stored: dict[str, dict[tuple[str, str], bool]] = {}
        for user, category, channel, enabled in self._seam.all(
            conn, "inbox_prefs_of", {"ids": text_array(ids)}
        ):
            stored.setdefault(user, {})[(category, channel)] = bool(enabled)
        return people, stored, users

    def _event_values(
        self, conn: Conn, claimed: Claimed, inbox: InboxEvent, page: PageInfo
    ) -> dict[str, Any]:
        """The columns every entry of the event shares (its page, actor, time: N11)."""
        event = claimed.event
        comment = inbox.ids.get("comment")
        excerpt = event.payload.get("excerpt")
        if comment is not None and excerpt is None:
            found = self.host.inbox_comment(conn, comment)
            excerpt = found.excerpt if found is not None else None
        return {
            "site_id": page.site,
            "variant": inbox.variant,
            "page_id": page.id,
            "comment_id": comment,
            "actor_id": event.actor,
            "title": page.title,
            "path": page.path,
            "locale": page.locale,
            "excerpt": None if excerpt is None else str(excerpt),
            "draft": created_as_draft(event),
            "last_event": claimed.id,
            "at": event.occurred_at,
            "members": None,
        }

    def _facts(self, conn: Conn, candidates: Mapping[str, Sequence[str]]) -> _Facts:
        """Read the facts of a batch's candidates (`_people`)."""
        ids = sorted({p for listed in candidates.values() for p in listed})
        if not ids:
            return _Facts(ids=(), people={}, prefs={}, users={})
        people, prefs, users = self._people(conn, ids)
        # U3: a forgotten id gets no entry, whatever the host still says of the person.
        marks = generations(conn, ids, self.schema)
        forgotten = frozenset(person for person, n in marks.items() if n is None)
        return _Facts(ids=tuple(ids), people=people, prefs=prefs, users=users, forgotten=forgotten)

    def _plan(
        self,
        conn: Conn,
        the_event: EventFacts,
        candidates: Mapping[str, Sequence[str]],
        facts: _Facts,
    ) -> _Plan:
        """Decide a batch (the core's `fan_out`) and build its write statements' parameters.

        Pure when ``facts.users`` is known; otherwise the host is asked the cadence of the
        mailed people first.
        """
        if not facts.ids:
            return _Plan(statements=(), entries=0, skips=())
        # The host's answer is copied here, not when it was read: a host that builds its
        # mapping on first use (the reference wiki) then converts its rows while the server
        # runs the last statement of the batch before (`_finish_batch`).
        people = dict(facts.people.items())
        for user, rows in facts.prefs.items():
            found = people.get(user)
            if found is not None:
                people[user] = found._replace(prefs=InboxPrefs(rows=rows))
        for user in facts.forgotten:
            found = people.get(user)
            if found is not None:
                people[user] = found._replace(active=False)
        result = fan_out(
            the_event.inbox,
            candidates,
            people,
            the_event.groups,
            the_event.settings,
            access=the_event.access,
        )
        users: Mapping[str, WikiUser]
        if facts.users is None:
            mailed = [d.recipient for d in result.entries if d.email]
            users = self.host.inbox_users(conn, mailed) if mailed else {}
        else:
            users = dict(facts.users.items())
        return _Plan(
            statements=entry_statements(
                the_event,
                result.entries,
                users,
                write_batch=self.write_batch,
                email_after=self.email_after,
            ),
            entries=len(result.entries),
            skips=tuple(skip.reason.value for skip in result.skips),
        )

    def _send(self, conn: Conn, claimed: Claimed, params: Mapping[str, Any]) -> list[Written]:
        """Run one write statement; the rows it wrote are read back only for a listener
        (``on_written``): without one, returning ten thousand rows costs both sides for
        nothing."""
        started = time.perf_counter()
        out: list[Written] = []
        if self.on_written is not None:
            rows = self._seam.all(conn, "inbox_upsert_returning", params)
            out = [_written(claimed.id, r) for r in rows]
        else:
            self._seam.run(conn, "inbox_upsert", params)
        self.stats.write_s += time.perf_counter() - started
        return out


_PAGED: Final = frozenset(
    {Candidates.WATCHERS, Candidates.REVIEWERS, Candidates.OPTED_IN, Candidates.PERMISSION}
)


def _written(event: int, row: tuple[Any, ...]) -> Written:
    id_, user, category, key, count, in_app, email, due, read_at, inserted = row
    return Written(
        event=event,
        id=int(id_),
        user_id=user,
        category=category,
        group_key=key,
        count=int(count),
        in_app=bool(in_app),
        email_state=email,
        email_after=due,
        read=read_at is not None,
        inserted=bool(inserted),
    )
