"""Inbox preferences (rules N2-N4): stored rows only where they differ from defaults.

A person's choices are rows ``(category, channel) -> enabled``, global across sites. Setting a
choice back to its category's default deletes the row, so no rows means the defaults and the
defaults stay in the registry. Sections (N3) and the mail facts (N4) are laid over the choice
when it is read, never written into it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final, cast

import attrs

from notify_core.inbox.categories import CATEGORY_BY_KEY, Category, Channels, Section
from notify_core.values.errors import InvalidInput

__all__ = [
    "CHANNELS",
    "NO_PREFS",
    "Delivery",
    "InboxPrefs",
    "InboxSettings",
    "channels_for",
]

#: The channels of a choice.
CHANNELS: Final = ("in_app", "email")


class Delivery(enum.StrEnum):
    """What a section may deliver (N3): nothing, the inbox only, or the inbox and email."""

    OFF = "off"
    IN_APP = "in_app"
    EMAIL = "email"


def _category(key: str, known: Mapping[str, Category]) -> Category:
    category = known.get(key)
    if category is None:
        raise InvalidInput("unknown_category", f"unknown category {key!r}", "/category")
    return category


@attrs.frozen(kw_only=True)
class InboxPrefs:
    """A person's stored inbox choices: only the rows that differ from the defaults (N2)."""

    rows: Mapping[tuple[str, str], bool] = attrs.field(factory=dict)

    def choice(self, category: Category) -> Channels:
        """Return the person's channels for a category: their rows over its defaults."""
        rows = self.rows
        if not rows:
            return category.defaults
        in_app = rows.get((category.key, "in_app"), category.defaults.in_app)
        email = rows.get((category.key, "email"), category.defaults.email)
        return Channels(in_app=in_app, email=email)

    def set(
        self,
        category: str,
        channel: str,
        enabled: bool,
        known: Mapping[str, Category] = CATEGORY_BY_KEY,
    ) -> InboxPrefs:
        """Return the choices with one channel of one category set (N2).

        A choice equal to the category's default removes the row instead of storing it.
        ``known``: the registry (`notify_core.inbox.categories.registry`: the host's own
        categories too, N13).

        Raises:
            InvalidInput: an unknown category (``unknown_category``) or channel
                (``unknown_channel``).
        """
        found = _category(category, known)
        if channel not in CHANNELS:
            raise InvalidInput("unknown_channel", f"unknown channel {channel!r}", "/channel")
        rows = dict(self.rows)
        if enabled == getattr(found.defaults, channel):
            rows.pop((category, channel), None)
        else:
            rows[(category, channel)] = enabled
        return InboxPrefs(rows=rows)

    def stop_all_email(self, known: Mapping[str, Category] = CATEGORY_BY_KEY) -> InboxPrefs:
        """Return the choices with email off for every category of the registry ``known``,
        offered or not (N2)."""
        prefs = self
        for key in known:
            prefs = prefs.set(key, "email", False, known)
        return prefs

    def opted_in(self, category: str) -> bool:
        """Tell whether the person turned a channel of a category on by a stored row."""
        return self.rows.get((category, "in_app")) is True or (
            self.rows.get((category, "email")) is True
        )


NO_PREFS: Final = InboxPrefs()


@attrs.frozen(kw_only=True)
class InboxSettings:
    """The instance's inbox settings: sections (N3) and whether mail is configured (N4).

    Args:
        sections: what each section delivers; an absent section delivers ``email``.
        mail_configured: outgoing mail works on this instance.
    """

    sections: Mapping[Section, Delivery] = attrs.field(factory=dict)
    mail_configured: bool = False

    def delivery(self, section: Section | str) -> Delivery:
        """Return what a section delivers (default ``email``; a host's own section, N13,
        always delivers ``email``)."""
        return self.sections.get(cast(Section, section), Delivery.EMAIL)


def channels_for(
    category: Category,
    prefs: InboxPrefs,
    delivery: Delivery,
    email_possible: bool,
) -> Channels:
    """Return the channels an entry of ``category`` reaches a person on (N2-N4).

    Args:
        category: the category.
        prefs: the person's stored choices.
        delivery: what the category's section delivers (not ``off``: that is a skip).
        email_possible: mail is configured and the person has a verified address (N4).
    """
    choice = prefs.choice(category)
    email = choice.email and email_possible and delivery is Delivery.EMAIL
    return Channels(in_app=choice.in_app, email=email)
