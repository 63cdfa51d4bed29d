"""`WikiMemory`: the inbox's host facts (`notify_core.inbox.ports.WikiFacts`) learnt from the
log, for ``notify replay`` and the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Final, TypeVar

import attrs

from notify_core.events.log import Event, EventError
from notify_core.inbox.access import Group, Rule, holds_host
from notify_core.inbox.admin import check_delay, check_retention
from notify_core.inbox.categories import Category, Section, registry
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.host_categories import declare
from notify_core.inbox.payloads import page_after, rule_from_payload, strings
from notify_core.inbox.ports import CommentInfo, PageInfo, SiteInfo, WikiUser
from notify_core.inbox.prefs import NO_PREFS, Delivery, InboxPrefs, InboxSettings
from notify_core.values.errors import InvalidInput
from notify_core.values.links import link_templates

__all__ = ["WikiMemory"]

_DEFAULT_DELAY: Final = timedelta(seconds=180)
_T = TypeVar("_T")


@attrs.frozen(kw_only=True)
class _ReviewRule:
    site: str
    rule: Rule
    reviewer_groups: tuple[str, ...]
    enabled: bool


@attrs.define
class _User:
    kind: str = "human"
    active: bool = True
    system: bool = False
    email: str | None = None
    verified: bool = False
    locale: str | None = None
    name: str | None = None
    time_zone: str | None = None
    email_schedule: str = "immediate"
    daily_hour: int | None = None


@attrs.define
class WikiMemory:
    """The wiki's facts of one replay, learnt from the event log (`WikiMemory.record`)."""

    sites: dict[str, SiteInfo] = attrs.field(factory=dict)
    pages: dict[str, PageInfo] = attrs.field(factory=dict)
    comments: dict[str, CommentInfo] = attrs.field(factory=dict)
    #: Comments deleted: no longer anyone's parent, yet created (a replay's unknown references).
    deleted_comments: dict[str, None] = attrs.field(factory=dict)
    submissions: dict[str, str] = attrs.field(factory=dict)
    watching: dict[str, dict[str, None]] = attrs.field(factory=dict)
    users: dict[str, _User] = attrs.field(factory=dict)
    members: dict[str, dict[str, None]] = attrs.field(factory=dict)
    groups_of: dict[str, frozenset[str]] = attrs.field(factory=dict)
    known_groups: dict[str, Group] = attrs.field(factory=dict)
    review_rules: dict[str, _ReviewRule] = attrs.field(factory=dict)
    prefs: dict[str, InboxPrefs] = attrs.field(factory=dict)
    inbox_settings: InboxSettings = attrs.field(factory=InboxSettings)
    delay: timedelta = _DEFAULT_DELAY
    retention_days: int = 60
    #: The host's own categories (N13), by key; `categories` is the registry with them.
    host_categories: dict[str, Category] = attrs.field(factory=dict)
    _registry: dict[str, Category] | None = attrs.field(default=None, init=False, repr=False)
    #: U3: how often each id was forgotten (``user.forgotten``), and the ids forgotten now
    #: (until a ``user.created``): no entry, no mail, whatever the log still says of them.
    forgotten_times: dict[str, int] = attrs.field(factory=dict)
    forgotten: dict[str, None] = attrs.field(factory=dict)
    # Derived: the facts of each person (built on first use, dropped when they change), the
    # people opted in per category, and one frozenset per distinct group set.
    _facts: dict[str, PersonFacts] = attrs.field(factory=dict, init=False, repr=False)
    _wiki_users: dict[str, WikiUser] = attrs.field(factory=dict, init=False, repr=False)
    _opted: dict[str, dict[str, None]] = attrs.field(factory=dict, init=False, repr=False)
    _group_sets: dict[frozenset[str], frozenset[str]] = attrs.field(
        factory=dict, init=False, repr=False
    )

    # --- the port ---------------------------------------------------------------------------

    def site(self, site: str) -> SiteInfo | None:
        """Return a site."""
        return self.sites.get(site)

    def first_site(self) -> str | None:
        """Return the first site created."""
        return next(iter(self.sites), None)

    def page(self, page: str) -> PageInfo | None:
        """Return a page, a deleted one as it was."""
        return self.pages.get(page)

    def comment(self, comment: str) -> CommentInfo | None:
        """Return a comment."""
        return self.comments.get(comment)

    def submission_page(self, submission: str) -> str | None:
        """Return a submission's page."""
        return self.submissions.get(submission)

    def watchers(self, page: str) -> Sequence[str]:
        """Return a page's watchers now."""
        return list(self.watching.get(page, ()))

    def reviewers(self, page: PageInfo) -> Sequence[str]:
        """Return the members of the reviewer groups of the enabled rules matching the page."""
        found: dict[str, None] = {}
        facts = page.access
        for rule in self.review_rules.values():
            if rule.enabled and rule.site == page.site and rule.rule.matches(facts):
                for group in rule.reviewer_groups:
                    found.update(self.members.get(group, {}))
        return list(found)

    def opted_in(self, category: str) -> Sequence[str]:
        """Return the people with a stored row turning a category on."""
        return list(self._opted.get(category, ()))

    def people(self, ids: Iterable[str]) -> Mapping[str, PersonFacts]:
        """Return the facts of the known people among ``ids``."""
        facts = self._facts
        if not isinstance(ids, (list, tuple, set, frozenset, dict)):
            ids = list(ids)  # read twice below
        try:  # the common case, every person's facts already built: one comprehension
            return {person: facts[person] for person in ids}
        except KeyError:
            pass
        out = {}
        users = self.users
        for person in ids:
            found = facts.get(person)
            if found is None:
                user = users.get(person)
                if user is None:
                    continue
                found = facts[person] = PersonFacts(
                    active=user.active and person not in self.forgotten,
                    human=user.kind == "human",
                    system=user.system,
                    groups=self.groups_of.get(person, frozenset()),
                    email=user.email,
                    verified=user.verified,
                    prefs=self.prefs.get(person, NO_PREFS),
                )
            out[person] = found
        return out

    def people_lookup(self, ids: Collection[str]) -> Mapping[str, PersonFacts]:
        """Return the facts of every known person among ``ids``, and maybe of others
        (`notify_core.inbox.ports.people_facts`): the cache itself once it holds them all,
        read only, so that a fan-out to thousands builds no mapping of its own."""
        facts = self._facts
        if all(map(facts.__contains__, ids)):
            return facts
        return self.people(ids)

    def users_cached(self) -> Mapping[str, WikiUser]:
        """Return `user` of the people already read, by id, read only
        (`notify_core.inbox.ports.users_of` asks `user` of the others)."""
        return self._wiki_users

    def user(self, user: str) -> WikiUser | None:
        """Return what the cadence reads of a person."""
        cached = self._wiki_users.get(user)
        if cached is not None:
            return cached
        found = self.users.get(user)
        if found is None:
            return None
        cached = self._wiki_users[user] = WikiUser(
            id=user,
            time_zone=found.time_zone,
            locale=found.locale,
            email_schedule=found.email_schedule,
            daily_hour=found.daily_hour,
        )
        return cached

    def generation(self, person: str) -> int:
        """Return the person's generation (U3): how often their id was forgotten (0: never);
        their unsubscribe tokens carry it as ``"g"`` (U1)."""
        return self.forgotten_times.get(person, 0)

    def names(self, ids: Iterable[str]) -> Mapping[str, str]:
        """Return the display names of the known people among ``ids`` who have one (E6)."""
        users = self.users
        out = {}
        for person in ids:
            found = users.get(person)
            if found is not None and found.name:
                out[person] = found.name
        return out

    def groups(self) -> Mapping[str, Group]:
        """Return every group."""
        return self.known_groups

    def categories(self) -> Mapping[str, Category]:
        """Return the registry: the seven launch categories and the host's own (N13)."""
        if self._registry is None:
            self._registry = registry(self.host_categories.values())
        return self._registry

    def holders(self, permission: str) -> Sequence[str]:
        """Return the people holding a host permission (N8, N13), sorted."""
        known = self.known_groups
        found: set[str] = set()
        for group, people in self.members.items():
            if holds_host(frozenset({group}), known, permission):
                found.update(people)
        return sorted(found)

    def settings(self) -> InboxSettings:
        """Return sections and mail configuration."""
        return self.inbox_settings

    def email_delay(self) -> timedelta:
        """Return the email delay."""
        return self.delay

    # --- recording the world ----------------------------------------------------------------

    def record(self, event: Event) -> None:
        """Apply what an event changes in the wiki's facts.

        Raises:
            EventError: a person left ``daily`` without a daily hour; nothing was changed.
        """
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, event, event.payload)

    def _changed(self, person: str) -> None:
        self._facts.pop(person, None)
        self._wiki_users.pop(person, None)

    def _on_user(self, event: Event, p: Mapping[str, object]) -> None:
        person = str(p["user"])
        if event.type == "user.created":
            self.forgotten.pop(person, None)  # U3: created again, a new generation
        old = self.users.get(person)
        user = attrs.evolve(old) if old is not None else _User()
        for name in strings(p.get("unset")):
            setattr(user, name, attrs.fields_dict(_User)[name].default)
        for name in attrs.fields_dict(_User):
            if name in p:
                setattr(user, name, p[name])
        if user.email_schedule == "daily" and user.daily_hour is None:
            raise EventError(
                "missing_member", "a daily email schedule needs daily_hour", "/payload/daily_hour"
            )
        if user.email_schedule != (old.email_schedule if old is not None else "immediate"):
            # H2a: no new digest while the purge could take its entries before the mail.
            _retention(self.retention_days, user.email_schedule != "immediate", "email_schedule")
        self.users[person] = user
        self._changed(person)

    def _on_forgotten(self, event: Event, p: Mapping[str, object]) -> None:
        """U3: the host forgot the person: their row, memberships, watches and inbox choices
        go, and the id is forgotten until a ``user.created`` (forgotten once more only if
        created since)."""
        person = str(p["user"])
        if person not in self.forgotten:
            self.forgotten[person] = None
            self.forgotten_times[person] = self.forgotten_times.get(person, 0) + 1
        self.users.pop(person, None)
        for members in self.members.values():
            members.pop(person, None)
        self.groups_of.pop(person, None)
        for watchers in self.watching.values():
            watchers.pop(person, None)
        self._set_prefs(person, NO_PREFS)
        del self.prefs[person]

    def _on_site(self, event: Event, p: Mapping[str, object]) -> None:
        site = str(p["site"])
        old = self.sites.get(site) or SiteInfo(id=site)
        known = ("host", "name", "https", "primary_locale", "time_zone", "notifications")
        changes: dict[str, object] = {k: p[k] for k in known if k in p}
        if "links" in p:
            # Member by member, like every update of the log (formats.md 4): a template not
            # named keeps its value, an empty one goes back to the default.
            links = {**old.links.own, **p["links"]}  # type: ignore[dict-item]
            changes["links"] = link_templates(links)
        self.sites[site] = attrs.evolve(old, **changes)  # type: ignore[arg-type]

    def _on_group(self, event: Event, p: Mapping[str, object]) -> None:
        raw = p["rules"]
        assert isinstance(raw, list)
        self.known_groups[str(p["group"])] = Group(
            rules=tuple(rule_from_payload(r) for r in raw),
            manage_system=p.get("manage_system") is True,
            permissions=strings(p.get("permissions")),
        )

    def _on_declared(self, event: Event, p: Mapping[str, object]) -> None:
        # N13: a declaration of a key already declared replaces it from this event on.
        category = _refused(declare, p)
        self.host_categories[category.key] = category
        self._registry = None

    def _on_member(self, event: Event, p: Mapping[str, object]) -> None:
        group, person = str(p["group"]), str(p["user"])
        members = self.members.setdefault(group, {})
        if event.type == "group.member_added":
            members[person] = None
        else:
            members.pop(person, None)
        groups = frozenset(g for g, people in self.members.items() if person in people)
        self.groups_of[person] = self._group_sets.setdefault(groups, groups)
        self._changed(person)

    def _on_review_rule(self, event: Event, p: Mapping[str, object]) -> None:
        self.review_rules[str(p["rule"])] = _ReviewRule(
            site=str(p["site"]),
            rule=rule_from_payload({"permission": "read_pages", **p}),
            reviewer_groups=tuple(sorted(strings(p["reviewer_groups"]))),
            enabled=p["enabled"] is True,
        )

    def _on_watch(self, event: Event, p: Mapping[str, object]) -> None:
        page, person = str(p["page"]), str(p["user"])
        if event.type == "page.watched":
            self.watching.setdefault(page, {})[person] = None
        else:
            self.watching.get(page, {}).pop(person, None)

    def _set_prefs(self, person: str, prefs: InboxPrefs) -> None:
        self.prefs[person] = prefs
        for people in self._opted.values():
            people.pop(person, None)
        for category, _channel in prefs.rows:
            if prefs.opted_in(category):
                self._opted.setdefault(category, {})[person] = None
        self._changed(person)

    def _on_pref(self, event: Event, p: Mapping[str, object]) -> None:
        person = str(event.audience)
        prefs = self.prefs.get(person, NO_PREFS)
        known = self.categories()
        if event.type == "inbox_pref.stop_all_email":
            self._set_prefs(person, prefs.stop_all_email(known))
        else:
            category = str(p["category"])
            changed = _refused(prefs.set, category, str(p["channel"]), p["enabled"] is True, known)
            self._set_prefs(person, changed)

    def _on_settings(self, event: Event, p: Mapping[str, object]) -> None:
        if "retention_days" in p:  # H2a, checked before anything changes
            digests = any(u.email_schedule != "immediate" for u in self.users.values())
            _retention(int(p["retention_days"]), digests, "retention_days")  # type: ignore[call-overload]
        if "retention_days" in p or "email_delay_s" in p:
            # H2a: no pair under which the purge takes an entry before its mail could go.
            delay = p.get("email_delay_s", self.delay.total_seconds())
            days = p.get("retention_days", self.retention_days)
            member = "retention_days" if "retention_days" in p else "email_delay_s"
            _refused(check_delay, delay, days, f"/payload/{member}")
        settings = self.inbox_settings
        sections = dict(settings.sections)
        for name, value in dict(p.get("sections", {})).items():  # type: ignore[call-overload]
            sections[Section(name)] = Delivery(value)
        mail = p.get("mail_configured", settings.mail_configured)
        self.inbox_settings = InboxSettings(sections=sections, mail_configured=mail is True)
        if "email_delay_s" in p:
            self.delay = timedelta(seconds=p["email_delay_s"])  # type: ignore[arg-type]
        if "retention_days" in p:
            self.retention_days = int(p["retention_days"])  # type: ignore[call-overload]

    def _on_page_created(self, event: Event, p: Mapping[str, object]) -> None:
        page = str(p["page"])
        self.pages[page] = PageInfo(
            id=page,
            site=str(p["site"]),
            path=str(p["path"]),
            locale=str(p["locale"]),
            title=str(p["title"]),
            tags=strings(p.get("tags")),
        )

    def _on_page_changed(self, event: Event, p: Mapping[str, object]) -> None:
        page = self.pages.get(str(p["page"]))
        if page is not None:
            self.pages[page.id] = page_after(page, event)
        if event.type == "page.deleted":
            self.watching.pop(str(p["page"]), None)  # N9: the watch rows go with the page

    def _on_comment(self, event: Event, p: Mapping[str, object]) -> None:
        comment = str(p["comment"])
        if event.type == "comment.deleted":
            if self.comments.pop(comment, None) is not None:
                self.deleted_comments[comment] = None
            return
        old = self.comments.get(comment)
        mentions = strings(p.get("mentions"))
        if old is not None:
            excerpt = str(p["excerpt"]) if "excerpt" in p else old.excerpt
            self.comments[comment] = attrs.evolve(old, mentions=mentions, excerpt=excerpt)
            return
        if event.type == "comment.edited":
            return  # a comment never created or deleted: nothing to edit (nor a page to read)
        author = p.get("author", event.actor)
        self.comments[comment] = CommentInfo(
            id=comment,
            page=str(p["page"]),
            author=None if author is None else str(author),
            parent=str(p["parent"]) if "parent" in p else None,
            mentions=mentions,
            excerpt=str(p["excerpt"]) if "excerpt" in p else None,
        )

    def _on_submission(self, event: Event, p: Mapping[str, object]) -> None:
        self.submissions[str(p["submission"])] = str(p["page"])


def _retention(days: int, digests: bool, member: str) -> None:
    """H2a as a bad line of the log: `check_retention`'s refusal, pointing into the payload."""
    _refused(check_retention, days, digests, f"/payload/{member}")


def _refused(check: Callable[..., _T], *args: object) -> _T:
    """Run a check (H2a, a declaration, a choice) as a bad line of the log: its refusal
    becomes an `EventError`; otherwise return its answer."""
    try:
        return check(*args)
    except InvalidInput as exc:
        pointer = exc.pointer
        if pointer is not None and not pointer.startswith("/payload"):
            pointer = f"/payload{pointer}"
        raise EventError(exc.code, exc.message, pointer) from None


_HANDLERS: Final = {
    "user.created": WikiMemory._on_user,
    "user.updated": WikiMemory._on_user,
    "user.forgotten": WikiMemory._on_forgotten,
    "site.created": WikiMemory._on_site,
    "site.updated": WikiMemory._on_site,
    "group.created": WikiMemory._on_group,
    "group.updated": WikiMemory._on_group,
    "category.declared": WikiMemory._on_declared,
    "group.member_added": WikiMemory._on_member,
    "group.member_removed": WikiMemory._on_member,
    "review_rule.set": WikiMemory._on_review_rule,
    "page.watched": WikiMemory._on_watch,
    "page.unwatched": WikiMemory._on_watch,
    "inbox_pref.updated": WikiMemory._on_pref,
    "inbox_pref.stop_all_email": WikiMemory._on_pref,
    "notifications.settings": WikiMemory._on_settings,
    "page.created": WikiMemory._on_page_created,
    "page.edited": WikiMemory._on_page_changed,
    "page.renamed": WikiMemory._on_page_changed,
    "page.deleted": WikiMemory._on_page_changed,
    "page.restored": WikiMemory._on_page_changed,
    "comment.created": WikiMemory._on_comment,
    "comment.edited": WikiMemory._on_comment,
    "comment.deleted": WikiMemory._on_comment,
    "submission.created": WikiMemory._on_submission,
    "submission.updated": WikiMemory._on_submission,
}
