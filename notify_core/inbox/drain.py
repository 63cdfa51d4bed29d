"""The mail drain's plan (rules E4): due entries grouped into mails, as a pure function.

At a drain instant, each (person, site) with entries due gets one mail: ``single`` for one
entry, ``digest`` for several, at most `MAX_SHOWN` shown latest first (ties by id,
descending) with "and N more" for the rest; every entry sent is marked sent and its category
joins the mail's unsubscribe list. Entries whose site is switched off (``site_off``), whose
section no longer delivers email (``section_off``) or whose email is now off by the person's
choice or N4 (``preference``) are skipped, one skip per reason. The person is checked again
at the drain's own instant, as the fan-out checks them (N7): a person no longer active, no
longer human or now a system account gets no mail (``inactive``), and an entry whose target the
person can no longer read with its category's permission (N8, against the page as the host
holds it now: `DrainAccess`) is skipped as ``no_access``; access is computed once per page,
group set and permission. An entry that several reasons would skip takes the first of
``site_off``, ``inactive``, ``no_access``, ``section_off``, ``preference``. An entry without a
site goes with the instance's first site.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs

from notify_core.inbox.access import AccessCache, Group, PageFacts
from notify_core.inbox.categories import CATEGORY_BY_KEY, Category, Permission
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.ports import Entry
from notify_core.inbox.prefs import Delivery, InboxSettings

__all__ = ["MAX_SHOWN", "DrainAccess", "MailPlan", "MailSkip", "plan_mails"]

#: Entries a mail shows; the rest are "and N more" (E4).
MAX_SHOWN: Final = 50


class MailSkip(enum.StrEnum):
    """Why due entries are not sent (E4), in the order they are checked (an entry several
    reasons would skip takes the first)."""

    SITE_OFF = "site_off"
    INACTIVE = "inactive"
    NO_ACCESS = "no_access"
    SECTION_OFF = "section_off"
    PREFERENCE = "preference"
    # M2-M4, at the drain after the checks above: the person's preference record in effect.
    SUSPENDED = "suspended"
    RECORD_CHANNEL_OFF = "record_channel_off"
    FREQUENCY_CAP = "frequency_cap"


@attrs.define
class DrainAccess:
    """What the drain reads to check access again at its instant (E4 over N8).

    Args:
        groups: the instance's groups and their rules, as they are now.
        pages: each entry's page as the host holds it now (a deleted one as it was, N9). A
            page the host no longer knows at all is not checked again: nothing newer than
            what the fan-out checked is known of it (docs/decisions.md).

    ``evaluations`` counts the rule evaluations: one per page, group set and permission,
    however many entries and people share them (N7's batching, at the drain).
    """

    groups: Mapping[str, Group]
    pages: Mapping[str, PageFacts]
    _caches: dict[str, AccessCache] = attrs.field(factory=dict, init=False)

    @property
    def evaluations(self) -> int:
        """The rule evaluations made so far."""
        return sum(cache.evaluations for cache in self._caches.values())

    def readable(self, page: str, groups: frozenset[str], permission: Permission) -> bool:
        """Whether members of ``groups`` hold ``permission`` on ``page`` now (unknown: yes)."""
        cache = self._caches.get(page)
        if cache is None:
            facts = self.pages.get(page)
            if facts is None:
                return True
            cache = self._caches[page] = AccessCache(self.groups, facts)
        return cache.holds(groups, permission)


@attrs.frozen(kw_only=True)
class MailPlan:
    """One mail of a drain, or one reason its due entries were skipped.

    Args:
        recipient: the person.
        site: the site the mail comes from.
        entries: the entries shown (a send: at most `MAX_SHOWN`) or skipped, latest first.
        skip: why they are skipped; ``None`` for a send.
        template: ``single`` or ``digest`` (a send).
        more: entries sent but not shown.
        unsubscribe: the categories of every entry sent, sorted.
        sent: every entry the send marks sent (shown and not shown).
    """

    recipient: str
    site: str
    entries: tuple[Entry, ...]
    skip: MailSkip | None = None
    template: str | None = None
    more: int = 0
    unsubscribe: tuple[str, ...] = ()
    sent: tuple[Entry, ...] = ()


_by_id: Final = operator.attrgetter("id")
_by_updated_at: Final = operator.attrgetter("state.updated_at")


def _sort_latest_first(entries: list[Entry]) -> None:
    """Sort by (``updated_at``, id) descending, in place.

    Two stable sorts by one attribute each cost less than one sort by a key tuple built per
    entry (a drain sorts 100,000 of them); a reversed sort stays stable.
    """
    if len(entries) > 1:
        entries.sort(key=_by_id, reverse=True)
        entries.sort(key=_by_updated_at, reverse=True)


def plan_mails(
    due: Sequence[Entry],
    *,
    site_on: Callable[[str], bool],
    people: Mapping[str, PersonFacts],
    settings: InboxSettings,
    first_site: str | None,
    access: DrainAccess | None = None,
    known: Mapping[str, Category] = CATEGORY_BY_KEY,
) -> list[MailPlan]:
    """Group the entries due at a drain instant into mails and skips (E4).

    Args:
        due: the ``pending`` entries due at or before the instant.
        site_on: whether a site's notifications are on (N5).
        people: the facts of the entries' people (a person missing: ``inactive``, as the
            fan-out reads a candidate the host does not know).
        settings: sections and whether mail is configured (N3, N4).
        first_site: the instance's first site (by creation), for entries without a site;
            ``None``: such entries are skipped as ``site_off``.
        access: the groups and pages to check access again with (``None``: not checked).
        known: the registry (the host's own categories too, N13).

    Returns:
        By recipient, then site: the send first, then skips by reason (in text order).
    """
    groups: dict[tuple[str, str], list[Entry]] = {}
    fallback = first_site or ""
    for entry in due:
        key = (entry.person, entry.target.site or fallback)
        group = groups.get(key)
        if group is None:
            groups[key] = [entry]
        else:
            group.append(entry)
    mail_configured = settings.mail_configured
    # What a section delivers, once per category of the drain rather than once per entry.
    section_email = {
        key: settings.delivery(category.section) is Delivery.EMAIL
        for key, category in known.items()
    }
    # The verdict of a category for a person without stored choices whose email is possible
    # (most people): decided once per drain.
    by_default: dict[str, MailSkip | None] = {
        key: None
        if section_email[key] and category.defaults.email
        else (MailSkip.SECTION_OFF if not section_email[key] else MailSkip.PREFERENCE)
        for key, category in known.items()
    }
    sent_by_default = frozenset(key for key, verdict in by_default.items() if verdict is None)
    site_is_on: dict[str, bool] = {}
    plans: list[MailPlan] = []
    append = plans.append
    skips: list[MailPlan] = []  # a (person, site)'s skips, after its send
    person = None
    defaults_only = email_possible = active = False
    facts = None
    for (person_key, site), entries in sorted(groups.items()):
        if person_key != person:
            person = person_key
            facts = people.get(person)
            email_possible = (
                facts is not None and mail_configured and facts.verified and bool(facts.email)
            )
            active = facts is not None and facts.recipient
            # The defaults' verdicts hold only for a person still to be mailed at all.
            defaults_only = active and email_possible and facts is not None and not facts.prefs.rows
        on = site_is_on.get(site)
        if on is None:
            on = site_is_on[site] = bool(site) and site_on(site)
        # Within one (person, site) the reason depends only on the category: decided once
        # per category, and the entries are walked only when some are skipped.
        categories = {e.category for e in entries}
        verdicts: Mapping[str, MailSkip | None]
        if not on:
            verdicts = dict.fromkeys(categories, MailSkip.SITE_OFF)
        elif not active:
            verdicts = dict.fromkeys(categories, MailSkip.INACTIVE)
        elif defaults_only:
            verdicts = by_default
        else:
            verdicts = {
                key: (
                    MailSkip.SECTION_OFF
                    if not section_email[key]
                    else None
                    if facts is not None and email_possible and facts.prefs.choice(known[key]).email
                    else MailSkip.PREFERENCE
                )
                for key in categories
            }
        # Entries whose page the person can no longer read (E4 over N8): walked only when the
        # access is checked and some category of the group needs a permission.
        blocked: set[str] = set()
        if access is not None and on and active and facts is not None:
            person_groups = facts.groups
            for entry in entries:
                permission = known[entry.category].access
                page = entry.target.page
                if (
                    permission is not None
                    and page is not None
                    and not access.readable(page, person_groups, permission)
                ):
                    blocked.add(entry.id)
        send: list[Entry]
        if not blocked and (
            (defaults_only and on and categories <= sent_by_default)
            or not any([verdicts[key] for key in categories])
        ):
            send = entries
        else:
            send = []
            categories = set()
            reasons: dict[MailSkip, list[Entry]] = {}
            for entry in entries:
                reason = MailSkip.NO_ACCESS if entry.id in blocked else verdicts[entry.category]
                if reason is None:
                    send.append(entry)
                    categories.add(entry.category)
                else:
                    reasons.setdefault(reason, []).append(entry)
            for reason in sorted(reasons):
                skipped = reasons[reason]
                _sort_latest_first(skipped)
                skips.append(
                    MailPlan(recipient=person, site=site, entries=tuple(skipped), skip=reason)
                )
        if send:
            _sort_latest_first(send)
            sent = tuple(send)
            append(
                MailPlan(
                    recipient=person,
                    site=site,
                    entries=sent if len(sent) <= MAX_SHOWN else sent[:MAX_SHOWN],
                    template="single" if len(sent) == 1 else "digest",
                    more=max(0, len(sent) - MAX_SHOWN),
                    unsubscribe=tuple(sorted(categories)),
                    sent=sent,
                )
            )
        if skips:
            plans.extend(skips)
            skips.clear()
    return plans
