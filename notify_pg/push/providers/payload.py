"""What each provider's push carries, built from one `Notification` (R3: ids, never text).

One vocabulary serves every provider: ``k`` (the kind, or ``sync``), ``id`` (the notification
id), ``thread``, ``message``, ``target``, ``quiet``, ``count``, ``badge``, ``instance`` and,
for a badge sync, ``cleared``. Members that are absent (no thread, count 0, not quiet) are left
out. The forms per provider (R3, docs/push-providers.md):

- APNs (`apns_payload`): ``aps`` with the badge, the thread as ``thread-id`` and, for a
  hint, an alert that names only a localisation key of the app (``hint.<kind>``) and
  ``mutable-content`` so the app fetches what it shows; ``sound`` unless quiet; the ids
  beside ``aps``. A badge sync is exactly ``{"aps":{"badge":n}}`` (``cleared`` ignored).
- FCM (`fcm_data`): a data message, every value a string; ``cleared`` is the ids joined
  by commas in their order, left out entirely when the data would pass `FCM_DATA_LIMIT`.
- Web Push and UnifiedPush (`webpush_payload`): the members as JSON with their own types,
  ``cleared`` as a list (left out entirely when it would not fit one record), encrypted
  (RFC 8291) before it leaves.
"""

from __future__ import annotations

import json
from typing import Final

from notify_core.hints.delivery import Notification
from notify_core.values.kinds import Kind

__all__ = [
    "FCM_DATA_LIMIT",
    "WEBPUSH_LIMIT",
    "apns_payload",
    "fcm_data",
    "is_visible",
    "members",
    "webpush_payload",
]

#: FCM's limit on a message's data, in bytes of its compact JSON (FCM documents 4096 bytes).
FCM_DATA_LIMIT: Final = 4096


def is_visible(notification: Notification) -> bool:
    """Whether the push interrupts (sound, high priority): a hint that is not quiet (D7);
    a quiet hint and a badge sync are delivered at normal priority."""
    return notification.kind is not Kind.SYNC and not notification.quiet


def members(notification: Notification) -> dict[str, str | int | bool | list[str]]:
    """The push's members with their JSON types, absent ones left out (R3: ids only)."""
    out: dict[str, str | int | bool | list[str]] = {
        "k": notification.kind.value,
        "id": notification.id,
    }
    if notification.thread is not None:
        out["thread"] = notification.thread
    if notification.message is not None:
        out["message"] = notification.message
    if notification.target is not None:
        out["target"] = notification.target
    if notification.quiet:
        out["quiet"] = True
    if notification.count:
        out["count"] = notification.count
    out["badge"] = notification.badge
    if notification.instance_id is not None:
        out["instance"] = notification.instance_id
    if notification.kind is Kind.SYNC:
        out["cleared"] = list(notification.cleared)
    return out


def _compact(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def apns_payload(notification: Notification) -> bytes:
    """The APNs JSON body (a badge sync: ``{"aps":{"badge":n}}`` only)."""
    if notification.kind is Kind.SYNC:
        return _compact({"aps": {"badge": notification.badge}})
    aps: dict[str, object] = {
        "alert": {"loc-key": f"hint.{notification.kind.value}"},
        "badge": notification.badge,
        "mutable-content": 1,
    }
    if notification.thread is not None:
        aps["thread-id"] = notification.thread
    if not notification.quiet:
        aps["sound"] = "default"
    body: dict[str, object] = {"aps": aps}
    body.update(members(notification))
    return _compact(body)


def fcm_data(notification: Notification, limit: int = FCM_DATA_LIMIT) -> dict[str, str]:
    """The FCM data message: every member a string; ``cleared`` comma-separated in order, or
    left out entirely when the data would not fit ``limit`` bytes (never a prefix)."""
    data: dict[str, str] = {}
    for key, value in members(notification).items():
        if key == "cleared":
            continue
        if isinstance(value, bool):
            data[key] = "1" if value else "0"
        else:
            data[key] = str(value)
    if notification.kind is Kind.SYNC and notification.cleared:
        with_cleared = {**data, "cleared": ",".join(notification.cleared)}
        if len(_compact(with_cleared)) <= limit:
            return with_cleared
    return data


#: The largest Web Push plaintext: one aes128gcm record of a 4096-byte message (RFC 8291:
#: 86 bytes of header, a 16-byte tag and the delimiter).
WEBPUSH_LIMIT: Final = 4096 - 86 - 17


def webpush_payload(notification: Notification, limit: int = WEBPUSH_LIMIT) -> bytes:
    """The Web Push (and UnifiedPush) plaintext: the members as compact JSON; a badge sync's
    ``cleared`` is left out entirely when it would not fit ``limit`` bytes (as for FCM)."""
    plain = _compact(members(notification))
    if len(plain) > limit and notification.kind is Kind.SYNC:
        return _compact({k: v for k, v in members(notification).items() if k != "cleared"})
    return plain
