"""A person's preference grid and the instance's settings, read and changed member by member
(rules H2, H2a).

Pure decisions only: what a change request means, whether it is allowed, and what an audit
row records. The adapters (`notify_pg.mail.settings`, the HTTP handlers of
`notify_pg.http.admin`, the replay's `notify_core.inbox.memory`) read the current values, call
these functions and write what they answer.

- `preference_grid`: every category and channel with its default, whether the person's own
  row differs, and what is delivered now (N2-N4), with the person's email schedule.
- `preference_change`: a JSON change of the grid (``categories``, ``stop_all_email``,
  ``email_schedule``, ``daily_hour``), validated, applied to the current state.
- `InstanceSettings` and `settings_change`: ``email_delay_s``, ``retention_days``,
  ``mail_batch_size`` (1-1000) and ``sections``; never the unsubscribe secret.
- `check_retention` (H2a): under 2 days of retention no one may wait for an hourly or daily
  digest, since a daily digest's entry waits up to about 25 hours and the purge must not take
  it before its mail goes.
- `check_delay` (H2a): the email delay stays under ``retention_days - 1`` days, so that no
  entry is purged before its mail could go, whichever of the two a change moves.
- `audit_diff`: the members that changed, before and after (H2).

Every refusal is an `InvalidInput` with a code and the JSON pointer of the member at fault.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from notify_core.inbox.access import Group, holds_host
from notify_core.inbox.categories import CATEGORIES, CATEGORY_BY_KEY, SECTIONS, Category, Section
from notify_core.inbox.prefs import CHANNELS, Delivery, InboxPrefs, InboxSettings
from notify_core.mail.cadence import EmailSchedule, Schedule
from notify_core.mail.catalogues import FALLBACK_LOCALE
from notify_core.mail.message import category_name, section_name
from notify_core.values.errors import InvalidInput, InvalidSchedule
from notify_core.values.instants import MAX_DURATION

__all__ = [
    "DEFAULT_MAIL_BATCH_SIZE",
    "DEFAULT_RETENTION_DAYS",
    "MAX_MAIL_BATCH_SIZE",
    "MAX_RETENTION_DAYS",
    "MIN_DIGEST_RETENTION_DAYS",
    "InstanceSettings",
    "PreferenceState",
    "audit_diff",
    "check_delay",
    "check_retention",
    "preference_audit_json",
    "preference_change",
    "preference_grid",
    "schedule_json",
    "settings_change",
    "visible_categories",
]

#: The least retention under which a person may have an hourly or daily schedule (H2a).
MIN_DIGEST_RETENTION_DAYS: Final = 2
#: Entries are kept this many days unless the instance says otherwise (H3).
DEFAULT_RETENTION_DAYS: Final = 60
#: The longest retention accepted: a hundred years (a larger one overflows date arithmetic).
MAX_RETENTION_DAYS: Final = 36_500
#: People per mail drain round unless the instance says otherwise (H2a).
DEFAULT_MAIL_BATCH_SIZE: Final = 100
#: The largest mail batch the API accepts (H2a: 1-1000).
MAX_MAIL_BATCH_SIZE: Final = 1000
_MAX_DELAY_S: Final = int(MAX_DURATION.total_seconds())


def _refuse(code: str, message: str, pointer: str) -> InvalidInput:
    return InvalidInput(code, message, pointer)


def _object(value: object, pointer: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _refuse("invalid_json", "a JSON object is expected", pointer or "")
    return value


def _members(value: Mapping[str, Any], allowed: tuple[str, ...], pointer: str) -> None:
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise _refuse("unknown_member", f"unknown member {unknown[0]!r}", f"{pointer}/{unknown[0]}")


def _integer(value: object, low: int, high: int, code: str, what: str, pointer: str) -> int:
    # A JSON integer only: true/false and 3.0 are refused (booleans are ints in Python).
    if type(value) is not int or not low <= value <= high:
        raise _refuse(code, f"{what} is an integer from {low} to {high}", pointer)
    return value


def _boolean(value: object, pointer: str) -> bool:
    if not isinstance(value, bool):
        raise _refuse("invalid_boolean", "a boolean (true or false) is expected", pointer)
    return value


def check_retention(retention_days: int, digest_schedules: bool, pointer: str) -> None:
    """Refuse a retention under `MIN_DIGEST_RETENTION_DAYS` together with a digest (H2a).

    Args:
        retention_days: the retention the instance would have.
        digest_schedules: someone would have an ``hourly`` or ``daily`` schedule.
        pointer: the member to name (``/retention_days`` or ``/email_schedule``).

    Raises:
        InvalidInput: ``invalid_retention``, when both would hold at once.
    """
    if digest_schedules and retention_days < MIN_DIGEST_RETENTION_DAYS:
        raise _refuse(
            "invalid_retention",
            f"retention_days under {MIN_DIGEST_RETENTION_DAYS} while someone has an hourly or "
            "daily email schedule: a digest's entry would be purged before its mail goes",
            pointer,
        )


def check_delay(email_delay_s: float, retention_days: int, pointer: str) -> None:
    """Refuse an email delay at or above ``(retention_days - 1) * 86400`` seconds (H2a).

    An entry waits ``email_delay_s`` (and up to a day more for a daily digest) before its mail
    goes, and the purge takes it ``retention_days`` after it was written: a pair that lets the
    purge come first would drop pending mail. A retention of one day thus leaves no delay at
    all.

    Args:
        email_delay_s: the delay the instance would have, in seconds.
        retention_days: the retention it would have.
        pointer: the member the change named (``/retention_days`` or ``/email_delay_s``).

    Raises:
        InvalidInput: ``invalid_retention``.
    """
    limit = (retention_days - 1) * 86_400
    if email_delay_s >= limit:
        raise _refuse(
            "invalid_retention",
            f"email_delay_s {email_delay_s} is not under (retention_days - 1) days "
            f"({limit} s for {retention_days} days): entries would be purged before their mail "
            "goes",
            pointer,
        )


# --- the person's grid -------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class PreferenceState:
    """What a person's grid is made of: their stored choices and their email schedule."""

    prefs: InboxPrefs = attrs.field(factory=InboxPrefs)
    schedule: EmailSchedule = attrs.field(factory=EmailSchedule)


def schedule_json(schedule: EmailSchedule) -> dict[str, Any]:
    """The schedule as JSON members: ``email_schedule`` and, when set, ``daily_hour``."""
    out: dict[str, Any] = {"email_schedule": schedule.schedule.value}
    if schedule.daily_hour is not None:
        out["daily_hour"] = schedule.daily_hour
    return out


def preference_grid(
    state: PreferenceState,
    settings: InboxSettings,
    email_available: bool,
    categories: Iterable[Category] = CATEGORIES,
    *,
    locale: str = FALLBACK_LOCALE,
) -> dict[str, Any]:
    """Return a person's effective preference grid as a JSON object (H2a).

    ``categories`` holds every category of the registry in its order: its ``section`` and what
    that section delivers (N3), and per channel (``in_app``, ``email``) the person's choice
    (``enabled``), the category's ``default``, whether the person's own row differs (``own``)
    and whether an entry would reach them on it now (``effective``: the choice under the
    section and, for email, N4). ``email_available`` is N4 (mail configured, an address,
    verified); ``email_schedule`` and ``daily_hour`` the person's schedule. Each category
    and its section are named (``name``, ``section_name``) in the language of ``locale``, as
    the mails' catalogue names them (`notify_core.mail.category_name`). ``categories``:
    those the person sees (`visible_categories`: the host's own among them, N13, named by
    their own strings, with ``names`` per locale; a host's own section by its key).
    """
    rows = state.prefs.rows
    listed = []
    for category in categories:
        delivery = settings.delivery(category.section)
        choice = state.prefs.choice(category)
        row: dict[str, Any] = {
            "category": category.key,
            "name": category_name(category.key, locale),
            "section": str(category.section),
            "section_name": section_name(str(category.section), locale),
            "section_delivers": delivery.value,
        }
        own = category.strings_for(locale) if category.host else None
        if own is not None:  # a host category (N13): its own strings name it
            row["name"] = own.name
            row["names"] = {tag: found.name for tag, found in category.strings}
        for channel in CHANNELS:
            enabled = getattr(choice, channel)
            if channel == "in_app":
                effective = enabled and delivery is not Delivery.OFF
            else:
                effective = enabled and email_available and delivery is Delivery.EMAIL
            row[channel] = {
                "enabled": enabled,
                "default": getattr(category.defaults, channel),
                "own": (category.key, channel) in rows,
                "effective": effective,
            }
        listed.append(row)
    return {
        "email_available": email_available,
        **schedule_json(state.schedule),
        "categories": listed,
    }


def visible_categories(
    known: Mapping[str, Category],
    groups: frozenset[str],
    instance_groups: Mapping[str, Group],
) -> list[Category]:
    """Return the categories of the registry a person sees in their grid (N13): every
    built-in one, and a host category whose ``visible_to`` the person holds (N8)."""
    return [
        category
        for category in known.values()
        if category.visible_to is None or holds_host(groups, instance_groups, category.visible_to)
    ]


_PREFERENCE_MEMBERS: Final = ("categories", "stop_all_email", "email_schedule", "daily_hour")


def preference_change(
    state: PreferenceState,
    body: object,
    *,
    retention_days: int,
    known: Mapping[str, Category] = CATEGORY_BY_KEY,
) -> PreferenceState:
    """Apply a change of a person's grid, member by member; return the new state.

    ``body`` is a JSON object with the optional members ``categories`` (``{category: {in_app?,
    email?}}``, each a boolean), ``stop_all_email`` (``true``: email off for every category,
    N2; applied before ``categories``), ``email_schedule`` (``immediate``, ``hourly``,
    ``daily``) and ``daily_hour`` (0-23). Members not named keep their values. ``known``:
    the registry (the host's own categories too, N13).

    Raises:
        InvalidInput: a malformed body, naming the member by its JSON pointer
            (``unknown_member``, ``unknown_category``, ``invalid_boolean`` ...);
            ``missing_daily_hour`` for ``daily`` without an hour; ``invalid_retention`` for a
            schedule other than ``immediate`` while retention is under 2 days (H2a).
    """
    value = _object(body, "")
    _members(value, _PREFERENCE_MEMBERS, "")
    prefs = state.prefs
    if "stop_all_email" in value:
        if value["stop_all_email"] is not True:
            raise _refuse("invalid_boolean", "stop_all_email can only be true", "/stop_all_email")
        prefs = prefs.stop_all_email(known)
    if "categories" in value:
        changes = _object(value["categories"], "/categories")
        for key in sorted(changes):  # sorted: the first fault named is always the same one
            where = f"/categories/{_escape(key)}"
            if key not in known:
                raise _refuse("unknown_category", f"unknown category {key!r}", where)
            channels = _object(changes[key], where)
            _members(channels, CHANNELS, where)
            for channel in CHANNELS:
                if channel in channels:
                    enabled = _boolean(channels[channel], f"{where}/{channel}")
                    prefs = prefs.set(key, channel, enabled, known)
    schedule = state.schedule
    if "email_schedule" in value or "daily_hour" in value:
        name = value.get("email_schedule", schedule.schedule.value)
        if name not in tuple(Schedule):
            raise _refuse(
                "unknown_schedule",
                "email_schedule is immediate, hourly or daily",
                "/email_schedule",
            )
        hour = value.get("daily_hour", schedule.daily_hour)
        if "daily_hour" in value:
            hour = _integer(hour, 0, 23, "invalid_daily_hour", "daily_hour", "/daily_hour")
        try:
            schedule = EmailSchedule(schedule=name, daily_hour=hour)
        except InvalidSchedule as exc:
            raise _refuse(exc.code, exc.message, exc.pointer or "/email_schedule") from None
        if schedule.schedule is not state.schedule.schedule:
            check_retention(
                retention_days, schedule.schedule is not Schedule.IMMEDIATE, "/email_schedule"
            )
    return PreferenceState(prefs=prefs, schedule=schedule)


def _escape(key: str) -> str:
    """A member name as a JSON pointer token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


# --- the instance's settings -------------------------------------------------------------------


def _full_sections(sections: Mapping[Section, Delivery]) -> dict[Section, Delivery]:
    return {section: sections.get(section, Delivery.EMAIL) for section in SECTIONS}


@attrs.frozen(kw_only=True)
class InstanceSettings:
    """The instance's notification settings an administrator changes (H2a).

    The unsubscribe secret is not among them: it is never read nor written through here.
    Whether mail is configured belongs to the host's mail settings (``mail_configured`` is
    shown, never changed, by the handlers).

    Args:
        email_delay_s: the window before an entry's email (E2), seconds.
        retention_days: how long entries are kept (H3).
        mail_batch_size: people per mail drain round, 1-1000.
        sections: what each section delivers (N3); every section present.
    """

    email_delay_s: int = 180
    retention_days: int = DEFAULT_RETENTION_DAYS
    mail_batch_size: int = DEFAULT_MAIL_BATCH_SIZE
    sections: Mapping[Section, Delivery] = attrs.field(factory=dict, converter=_full_sections)

    def as_json(self) -> dict[str, Any]:
        """The settings as the handlers answer them (and as an audit row records them)."""
        return {
            "email_delay_s": self.email_delay_s,
            "retention_days": self.retention_days,
            "mail_batch_size": self.mail_batch_size,
            "sections": {s.value: d.value for s, d in self.sections.items()},
        }


_SETTINGS_MEMBERS: Final = ("email_delay_s", "retention_days", "mail_batch_size", "sections")


def settings_change(
    current: InstanceSettings, body: object, *, digest_schedules: bool
) -> InstanceSettings:
    """Apply a change of the instance's settings, member by member; return the new settings.

    ``body`` is a JSON object with the optional members ``email_delay_s`` (an integer of
    seconds, 0 to ten years), ``retention_days`` (1 to 36,500), ``mail_batch_size`` (1-1000)
    and ``sections`` (``{section: off|in_app|email}``, the sections named change).
    ``digest_schedules`` says whether anyone has an hourly or daily schedule now (H2a).

    Raises:
        InvalidInput: a malformed member, named by its JSON pointer; ``read_only`` for
            ``mail_configured`` and ``status`` (H2b); ``invalid_retention`` for a retention under 2
            days while someone has a digest schedule, or for a change of ``email_delay_s`` or
            ``retention_days`` that leaves the delay at or above ``retention_days - 1`` days (H2a,
            `check_delay`: named by ``/retention_days`` when the change holds it, else
            ``/email_delay_s``); ``unknown_member`` for anything else (the unsubscribe secret
            included).
    """
    value = _object(body, "")
    if "mail_configured" in value:
        raise _refuse(
            "read_only", "mail_configured follows the host's mail settings", "/mail_configured"
        )
    if "status" in value:  # H2b: the operator's status is answered, never written
        raise _refuse("read_only", "status is read-only: the pipeline's figures", "/status")
    _members(value, _SETTINGS_MEMBERS, "")
    changes: dict[str, Any] = {}
    if "email_delay_s" in value:
        changes["email_delay_s"] = _integer(
            value["email_delay_s"],
            0,
            _MAX_DELAY_S,
            "invalid_duration",
            "email_delay_s",
            "/email_delay_s",
        )
    if "retention_days" in value:
        changes["retention_days"] = _integer(
            value["retention_days"],
            1,
            MAX_RETENTION_DAYS,
            "invalid_retention",
            "retention_days",
            "/retention_days",
        )
    if "mail_batch_size" in value:
        changes["mail_batch_size"] = _integer(
            value["mail_batch_size"],
            1,
            MAX_MAIL_BATCH_SIZE,
            "invalid_batch_size",
            "mail_batch_size",
            "/mail_batch_size",
        )
    if "sections" in value:
        given = _object(value["sections"], "/sections")
        sections = dict(current.sections)
        for name in sorted(given):
            where = f"/sections/{_escape(name)}"
            if name not in tuple(Section):
                raise _refuse("unknown_section", f"unknown section {name!r}", where)
            if given[name] not in tuple(Delivery):
                raise _refuse("invalid_delivery", "a section delivers off, in_app or email", where)
            sections[Section(name)] = Delivery(given[name])
        changes["sections"] = sections
    new = attrs.evolve(current, **changes)
    if "retention_days" in changes:
        check_retention(new.retention_days, digest_schedules, "/retention_days")
    if "retention_days" in changes or "email_delay_s" in changes:
        member = "retention_days" if "retention_days" in changes else "email_delay_s"
        check_delay(new.email_delay_s, new.retention_days, f"/{member}")
    return new


# --- the audit ---------------------------------------------------------------------------------


def audit_diff(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the members that differ, as they were and as they are (nested objects member by
    member): what one audit row records (H2). Both empty: no change, nothing to audit.

    Example:
        >>> audit_diff({"a": 1, "s": {"x": 1, "y": 2}}, {"a": 1, "s": {"x": 1, "y": 3}})
        ({'s': {'y': 2}}, {'s': {'y': 3}})
    """
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        if isinstance(b, Mapping) and isinstance(a, Mapping):
            inner_b, inner_a = audit_diff(b, a)
            if inner_b or inner_a:
                old[key], new[key] = inner_b, inner_a
        elif b != a:
            # An absent member stays absent on its side (G5: no null).
            if key in before:
                old[key] = b
            if key in after:
                new[key] = a
    return old, new


def preference_audit_json(
    state: PreferenceState, known: Mapping[str, Category] = CATEGORY_BY_KEY
) -> dict[str, Any]:
    """A person's stored choices and schedule as an audit row records them."""
    categories: dict[str, dict[str, bool]] = {}
    for category in known.values():
        choice = state.prefs.choice(category)
        categories[category.key] = {"in_app": choice.in_app, "email": choice.email}
    return {**schedule_json(state.schedule), "categories": categories}
