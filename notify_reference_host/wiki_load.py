"""Loading a wiki's event log into PostgreSQL as a host would (the inbox's parity test).

`WikiLoader.feed` takes the wiki events of a log (formats.md section 4) in order. Per event, in
one transaction, it writes what the event changes in the reference host's wiki tables and, for
an activity, calls `notify_pg.inbox.reads.emit` as a host does (a deletion's emit captures the
watchers before the page goes; a comment edit's carries the mentions before the edit); reads,
dismissals and inbox choices go through `InboxReads` and `InboxPreferences`. After an
activity the fan-out runs at once (`InboxFanOut.drain`), as a replay fans out at once.

Entry ids: a replay names entries ``<person>:<group_key>:<n>``; the loader counts each
person's entries per key as the fan-out inserts them and maps those names to the table's ids,
so an ``inbox.read`` or ``inbox.dismissed`` of the log finds its rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from psycopg.types.json import Jsonb

from notify_core.events.log import Event, EventError
from notify_core.inbox.admin import check_delay, check_retention
from notify_core.inbox.payloads import strings
from notify_core.inbox.pipeline import ACTIVITY_TYPES
from notify_core.values.errors import InvalidInput
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.seam import Conn, Seam
from notify_pg.inbox.fanout import InboxFanOut, Written
from notify_pg.inbox.host_categories import declare_category
from notify_pg.inbox.reads import InboxPreferences, InboxReads, comment_deleted, emit
from notify_pg.mail.drain import reschedule_pending
from notify_pg.mail.settings import lock_retention
from notify_pg.stores.store import forget_person, person_created
from notify_reference_host.wiki import ReferenceWiki

__all__ = ["WikiLoader"]

_USER_DEFAULTS: Final[Mapping[str, Any]] = {
    "kind": "human",
    "active": True,
    "system": False,
    "email": None,
    "verified": False,
    "locale": None,
    "time_zone": None,
    "email_schedule": "immediate",
    "daily_hour": None,
    "name": None,
}


class WikiLoader:
    """Writes a wiki log's events into the reference host and the inbox, one transaction each.

    Args:
        wiki: the reference host's wiki.
        fanout: the fan-out that runs after each activity; its ``on_written`` is taken over.
        schema: notify's schema.
    """

    def __init__(
        self, wiki: ReferenceWiki, fanout: InboxFanOut, *, schema: str = DEFAULT_SCHEMA
    ) -> None:
        self.wiki = wiki
        self.fanout = fanout
        self.schema = schema
        self.reads = InboxReads(schema)
        self.prefs = InboxPreferences(schema)
        self.written: list[Written] = []
        #: replay entry id -> (person, table id)
        self.ids: dict[str, tuple[str, int]] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self._host = Seam("notify_reference_host", wiki.schema)
        fanout.on_written = self._on_written

    def _on_written(self, rows: Sequence[Written]) -> None:
        for row in rows:
            if row.inserted:
                key = (row.user_id, row.group_key)
                n = self._counts[key] = self._counts.get(key, 0) + 1
                self.ids[f"{row.user_id}:{row.group_key}:{n}"] = (row.user_id, row.id)
            self.written.append(row)

    def name_of(self, table_id: int) -> str:
        """Return the replay's name of an entry of the table."""
        for name, (_person, found) in self.ids.items():
            if found == table_id:
                return name
        raise KeyError(table_id)

    def feed(self, conn: Conn, event: Event) -> None:
        """Apply one event; after an activity, fan it out at once."""
        if event.type not in _HANDLERS:
            return
        with conn.transaction():
            self.apply(conn, event)
        if event.type in ACTIVITY_TYPES:
            self.fanout.drain(conn)

    @staticmethod
    def handles(event_type: str) -> bool:
        """Whether events of this type change the wiki (its world, the outbox or the inbox)."""
        return event_type in _HANDLERS

    def apply(self, conn: Conn, event: Event) -> None:
        """Write one event's change in the caller's transaction (emit included; the fan-out
        is the caller's: `feed` runs it after the commit, as a host's worker would)."""
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, conn, event, event.payload)

    def resume(self, conn: Conn) -> None:
        """Name the entries already in the inbox as a replay names them (a load that goes on
        after an earlier one: the log's reads and dismissals find their entries)."""
        notify = Seam("notify_reference_host", self.schema)
        self.ids.clear()
        self._counts.clear()
        for person, group_key, table_id in notify.all(conn, "loaded_entry_names"):
            key = (str(person), str(group_key))
            n = self._counts[key] = self._counts.get(key, 0) + 1
            self.ids[f"{person}:{group_key}:{n}"] = (str(person), int(table_id))

    def _emit(self, conn: Conn, event: Event, payload: Mapping[str, Any], **kw: Any) -> None:
        """Emit as a host does: with the switch of the page's site (N5)."""
        site_id = payload.get("site")
        if site_id is None:
            page_id = payload.get("page")
            if page_id is None:
                found = self.wiki.inbox_comment(conn, str(payload["comment"]))
                page_id = found.page if found is not None else None
            page = self.wiki.inbox_page(conn, str(page_id)) if page_id is not None else None
            site_id = page.site if page is not None else None
        site = self.wiki.inbox_site(conn, str(site_id)) if site_id is not None else None
        emit(
            conn,
            event.type,
            payload,
            actor=event.actor,
            origin=event.origin or "user",
            occurred_at=event.occurred_at,
            schema=self.schema,
            site_notifications=site is None or site.notifications,
            **kw,
        )

    # --- the world ---------------------------------------------------------------------------

    def _retention(self, conn: Conn, days: int, digests: bool, member: str) -> None:
        """H2a as in a replay: a refused event is a bad line (the caller holds the lock)."""
        try:
            check_retention(days, digests, f"/payload/{member}")
        except InvalidInput as exc:
            raise EventError(exc.code, exc.message, exc.pointer) from None

    def _settings(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        if p.get("retention_days") is not None:
            lock_retention(conn, self.schema)
            digests = self.wiki.inbox_digest_schedules(conn)
            self._retention(conn, int(p["retention_days"]), digests, "retention_days")
        if p.get("retention_days") is not None or p.get("email_delay_s") is not None:
            # H2a: no pair under which the purge takes an entry before its mail could go.
            lock_retention(conn, self.schema)
            delay = p.get("email_delay_s", self.wiki.inbox_email_delay(conn).total_seconds())
            days = p.get("retention_days", self.wiki.inbox_retention_days(conn))
            member = "retention_days" if "retention_days" in p else "email_delay_s"
            try:
                check_delay(delay, days, f"/payload/{member}")
            except InvalidInput as exc:
                raise EventError(exc.code, exc.message, exc.pointer) from None
        self._host.run(
            conn,
            "wiki_merge_settings",
            {
                "email_delay_s": p.get("email_delay_s"),
                "retention_days": p.get("retention_days"),
                "mail_configured": p.get("mail_configured"),
                "sections": Jsonb(dict(p.get("sections", {}))),
            },
        )

    def _site(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        names = ("host", "name", "https", "primary_locale", "time_zone", "notifications")
        params = {"id": p["site"], **{k: p.get(k) for k in names}}
        # The templates the event names, over those the site set (an empty one: the default).
        params["links"] = Jsonb(dict(p["links"])) if "links" in p else None
        self._host.run(conn, "wiki_merge_site", params)

    def _user(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        person = str(p["user"])
        row = self._host.one(conn, "wiki_user_row", {"id": person})
        user = dict(_USER_DEFAULTS) if row is None else dict(zip(_USER_DEFAULTS, row, strict=True))
        for name in strings(p.get("unset")):
            if name in _USER_DEFAULTS:
                user[name] = _USER_DEFAULTS[name]
        for name in _USER_DEFAULTS:
            if name in p:
                user[name] = p[name]
        if user["email_schedule"] == "daily" and user["daily_hour"] is None:
            raise EventError(
                "missing_member", "a daily email schedule needs daily_hour", "/payload/daily_hour"
            )
        was = (
            "immediate"
            if row is None
            else dict(zip(_USER_DEFAULTS, row, strict=True))["email_schedule"]
        )
        if user["email_schedule"] != was:
            lock_retention(conn, self.schema)
            days = self.wiki.inbox_retention_days(conn)
            self._retention(conn, days, user["email_schedule"] != "immediate", "email_schedule")
        before = self.wiki.inbox_users(conn, [person]).get(person)
        self._host.run(conn, "wiki_put_user", {"id": person, **user})
        if event.type == "user.created":
            # U3: the host tells notify, in its transaction; an id it forgot is a new person.
            person_created(conn, person, self.schema)
        after = self.wiki.inbox_users(conn, [person]).get(person)
        if before is not None and after is not None and before != after:
            # E3: the host moves the person's pending emails in the same transaction.
            reschedule_pending(
                conn,
                self.wiki,
                before,
                after,
                at=event.occurred_at,
                delay=self.wiki.inbox_email_delay(conn),
                schema=self.schema,
            )

    def _forgotten(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        """U3: the host deletes the person and, in the same transaction, has notify forget
        them (`notify_pg.forget_person`)."""
        person = str(p["user"])
        self._host.run(conn, "wiki_forget_user", {"id": person})
        forget_person(conn, person, self.schema)

    def _group(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        self.wiki.add_group(
            conn,
            str(p["group"]),
            list(p["rules"]),
            manage_system=p.get("manage_system") is True,
            permissions=sorted(strings(p.get("permissions"))),
        )

    def _declared(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        # N13: the host's emit path; a declaration the log refuses is a bad line, as in a replay.
        try:
            declare_category(conn, p, at=event.occurred_at, schema=self.schema)
        except InvalidInput as exc:
            raise EventError(exc.code, exc.message, exc.pointer) from None

    def _host_event(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        # N13: a host category's event; its site's switch, its category and scope are the
        # fan-out's (an instance category's event has no site).
        emit(
            conn,
            event.type,
            p,
            actor=event.actor,
            origin=event.origin or "user",
            occurred_at=event.occurred_at,
            schema=self.schema,
        )

    def _member(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        params = {"group_id": p["group"], "user_id": p["user"]}
        if event.type == "group.member_added":
            self._host.run(conn, "wiki_add_member", params)
        else:
            self._host.run(conn, "wiki_remove_member", params)

    def _review_rule(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        self._host.run(
            conn,
            "wiki_put_review_rule",
            {
                "id": p["rule"],
                "site_id": p["site"],
                "match": p["match"],
                "value": p.get("value"),
                "reviewer_groups": sorted(strings(p["reviewer_groups"])),
                "enabled": p["enabled"] is True,
            },
        )

    def _watch(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        params = {"page_id": p["page"], "user_id": p["user"]}
        if event.type == "page.watched":
            self._host.run(conn, "wiki_watch", params)
        else:
            self._host.run(conn, "wiki_unwatch", params)

    def _pref(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        person = str(event.audience)
        if event.type == "inbox_pref.stop_all_email":
            self.prefs.stop_all_email(conn, person)
        else:
            try:
                self.prefs.set(
                    conn, person, str(p["category"]), str(p["channel"]), p["enabled"] is True
                )
            except InvalidInput as exc:  # a category never declared (N13): a bad line
                raise EventError(exc.code, exc.message, f"/payload{exc.pointer or ''}") from None

    # --- activities --------------------------------------------------------------------------

    def _page_created(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        self.wiki.add_page(
            conn,
            str(p["page"]),
            str(p["site"]),
            str(p["path"]),
            locale=str(p["locale"]),
            title=str(p["title"]),
            tags=sorted(strings(p.get("tags"))),
        )
        self._emit(conn, event, p)

    def _page_changed(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        page = str(p["page"])
        if event.type == "page.deleted":
            # The emit carries the page as it was (N9): the fan-out never reads it back.
            self._emit(
                conn,
                event,
                p,
                capture_watchers=self.wiki.watchers_query(page),
                page_as_was=self.wiki.inbox_page(conn, page),
            )
            self.wiki.delete_page(conn, page)
            return
        self._host.run(
            conn,
            "wiki_change_page",
            {
                "id": page,
                "title": p.get("title"),
                "tags": sorted(strings(p["tags"])) if "tags" in p else None,
                "path": p.get("path"),
                "locale": p.get("locale"),
                "deleted": False if event.type == "page.restored" else None,
            },
        )
        if event.type != "page.restored":
            self._emit(conn, event, p)

    def _comment(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        comment = str(p["comment"])
        if event.type == "comment.deleted":
            self._host.run(conn, "wiki_delete_comment", {"id": comment})
            comment_deleted(conn, comment, schema=self.schema)
            return
        mentions = sorted(strings(p.get("mentions")))
        if event.type == "comment.edited":
            old = self.wiki.inbox_comment(conn, comment)
            previous = sorted(old.mentions) if old is not None else []
            self._host.run(
                conn,
                "wiki_change_comment",
                {"id": comment, "mentions": mentions, "excerpt": p.get("excerpt")},
            )
            self._emit(conn, event, {**p, "previous_mentions": previous})
            return
        author = p.get("author", event.actor)
        self.wiki.add_comment(
            conn,
            comment,
            str(p["page"]),
            author=None if author is None else str(author),
            parent=str(p["parent"]) if "parent" in p else None,
            mentions=mentions,
            excerpt=str(p["excerpt"]) if "excerpt" in p else None,
        )
        self._emit(conn, event, p)

    def _submission(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        self._host.run(
            conn,
            "wiki_put_submission",
            {"id": p["submission"], "page_id": p["page"], "author": p.get("author", event.actor)},
        )
        self._emit(conn, event, p)

    # --- reads -------------------------------------------------------------------------------

    def _viewed(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        self.reads.read_on_view(
            conn,
            str(event.audience),
            str(p["page"]),
            talk=p.get("talk") is True,
            at=event.occurred_at,
        )

    def _read(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        ids = None
        if "ids" in p:
            ids = [self.ids[name][1] for name in strings(p["ids"]) if name in self.ids]
        self.reads.read(
            conn,
            str(event.audience),
            ids=ids,
            page=str(p["page"]) if "page" in p else None,
            categories=sorted(strings(p["categories"])) if "categories" in p else None,
            at=event.occurred_at,
        )

    def _dismissed(self, conn: Conn, event: Event, p: Mapping[str, Any]) -> None:
        found = self.ids.get(str(p["id"]))
        if found is None:
            return
        person, table_id = found
        if event.audience in (None, person):
            self.reads.dismiss(conn, person, table_id)


_Handler = Callable[[WikiLoader, Conn, Event, Mapping[str, Any]], None]
_HANDLERS: Final[Mapping[str, _Handler]] = {
    "notifications.settings": WikiLoader._settings,
    "site.created": WikiLoader._site,
    "site.updated": WikiLoader._site,
    "user.created": WikiLoader._user,
    "user.updated": WikiLoader._user,
    "user.forgotten": WikiLoader._forgotten,
    "group.created": WikiLoader._group,
    "group.updated": WikiLoader._group,
    "category.declared": WikiLoader._declared,
    "category.event": WikiLoader._host_event,
    "group.member_added": WikiLoader._member,
    "group.member_removed": WikiLoader._member,
    "review_rule.set": WikiLoader._review_rule,
    "page.watched": WikiLoader._watch,
    "page.unwatched": WikiLoader._watch,
    "inbox_pref.updated": WikiLoader._pref,
    "inbox_pref.stop_all_email": WikiLoader._pref,
    "page.created": WikiLoader._page_created,
    "page.edited": WikiLoader._page_changed,
    "page.renamed": WikiLoader._page_changed,
    "page.deleted": WikiLoader._page_changed,
    "page.restored": WikiLoader._page_changed,
    "comment.created": WikiLoader._comment,
    "comment.edited": WikiLoader._comment,
    "comment.deleted": WikiLoader._comment,
    "submission.created": WikiLoader._submission,
    "submission.updated": WikiLoader._submission,
    "page.viewed": WikiLoader._viewed,
    "inbox.read": WikiLoader._read,
    "inbox.dismissed": WikiLoader._dismissed,
}
