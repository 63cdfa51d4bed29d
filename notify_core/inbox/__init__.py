"""The inbox: the second pipeline, from a wiki's events to inbox entries (docs/inbox.md).

Pure like the rest of the core: the category registry as data (`categories`), access by
group rules (`access`), preferences stored only where they differ from the defaults
(`prefs`), the fan-out decision (`fanout`) and coalescing (`coalesce`). The pipeline's inbox
path (`pipeline`) runs them against ports, with an in-memory store (`memory`) for
``notify replay``.
"""

from notify_core.inbox.access import AccessCache, Group, Match, PageFacts, Rule, holds
from notify_core.inbox.categories import (
    CATEGORIES,
    CATEGORY_BY_KEY,
    SECTIONS,
    Candidates,
    Category,
    Channels,
    Origin,
    Permission,
    Section,
    categories_for,
    event_variant,
)
from notify_core.inbox.coalesce import EmailState, EntryState, coalesce, read
from notify_core.inbox.fanout import (
    EntryDecision,
    FanOut,
    InboxEvent,
    InboxSkip,
    PersonFacts,
    SkipDecision,
    fan_out,
    firing,
)
from notify_core.inbox.prefs import NO_PREFS, Delivery, InboxPrefs, InboxSettings, channels_for

__all__ = [
    "CATEGORIES",
    "CATEGORY_BY_KEY",
    "NO_PREFS",
    "SECTIONS",
    "AccessCache",
    "Candidates",
    "Category",
    "Channels",
    "Delivery",
    "EmailState",
    "EntryDecision",
    "EntryState",
    "FanOut",
    "Group",
    "InboxEvent",
    "InboxPrefs",
    "InboxSettings",
    "InboxSkip",
    "Match",
    "Origin",
    "PageFacts",
    "Permission",
    "PersonFacts",
    "Rule",
    "Section",
    "SkipDecision",
    "categories_for",
    "channels_for",
    "coalesce",
    "event_variant",
    "fan_out",
    "firing",
    "holds",
    "read",
]
