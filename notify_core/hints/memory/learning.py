"""How the in-memory store's parts learn from the event log: a table of handlers by type.

Each part applies the event types it has a method ``_on_<type with dots as underscores>``
for; `MemoryWorld.record` merges the tables of all parts into one, looked up by the event's
exact type, so a type no part knows (``user_created``) changes nothing (formats.md 2: an
unknown type is ignored and counted).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from notify_core.events.log import PAYLOADS, Event

__all__ = ["Handler", "handlers_of"]

#: Applies one event, given with its payload, to the part it is bound to.
Handler = Callable[[Event, Mapping[str, object]], None]


def handlers_of(part: object) -> dict[str, Handler]:
    """Return a part's handlers, bound to it, by the exact event type each applies.

    Args:
        part: a part of the store; its method ``_on_channel_created`` applies
            ``channel.created``.

    Returns:
        The event types of the spec (`notify_core.events.log.PAYLOADS`) the part applies, each
        with its bound handler.
    """
    return {
        kind: handler
        for kind in PAYLOADS
        if (handler := getattr(part, "_on_" + kind.replace(".", "_"), None)) is not None
    }
