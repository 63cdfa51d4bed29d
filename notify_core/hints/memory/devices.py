"""`MemoryDevices`: the devices part of the in-memory `notify_core.hints.ports.WorldFacts`.

People's devices, their live connections (presence) and push registrations, learnt from the
log (``device.*``, ``push.*``, ``presence.changed``). `MemoryWorld` answers the port's
``devices``, ``connections`` and ``push_devices`` from it.
"""

from __future__ import annotations

import attrs

from notify_core.events.log import Event
from notify_core.hints.decide import Connection, Device

__all__ = ["MemoryDevices"]

_MOBILE = ("ios", "android")


@attrs.define
class MemoryDevices:
    """Devices, presence and push registrations of one replay, in memory.

    Its handlers (``_on_*``) are applied by `MemoryWorld.record`.

    Args:
        devices_by_id: per device, its owner, the device and whether it is active.
        user_devices: per person, their active devices by id.
        registrations: per push registration, its device.
        presence: per connected device, its connection.
    """

    devices_by_id: dict[str, tuple[str, Device, bool]] = attrs.field(factory=dict)
    user_devices: dict[str, tuple[Device, ...]] = attrs.field(factory=dict)
    registrations: dict[str, str] = attrs.field(factory=dict)
    presence: dict[str, Connection] = attrs.field(factory=dict)
    # Derived indexes, kept by the handlers only: they make the per-recipient reads O(1).
    _connections: dict[str, tuple[Connection, ...]] = attrs.field(
        factory=dict, init=False, repr=False
    )
    _registered: dict[str, int] = attrs.field(factory=dict, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # The derived index of what a store is given at construction (usually nothing).
        for device in self.registrations.values():
            self._registered[device] = self._registered.get(device, 0) + 1

    def devices(self, user: str) -> tuple[Device, ...]:
        """Return a person's active devices."""
        return self.user_devices.get(user, ())

    def connections(self, user: str) -> tuple[Connection, ...]:
        """Return a person's live connections."""
        cached = self._connections.get(user)
        if cached is None:
            presence = self.presence
            cached = self._connections[user] = tuple(
                presence[device.id] for device in self.devices(user) if device.id in presence
            )
        return cached

    def push_devices(self, user: str) -> tuple[str, ...]:
        """Return the active mobile devices of a person with a push registration."""
        registered = self._registered
        return tuple(
            d.id for d in self.devices(user) if d.platform in _MOBILE and registered.get(d.id)
        )

    def _set_device(self, device_id: str, user: str, device: Device, active: bool) -> None:
        old = self.devices_by_id.get(device_id)
        if old is not None:
            self._connections.pop(old[0], None)
            if old[0] != user:  # the device changed hands: the old owner loses it
                kept = tuple(d for d in self.user_devices.get(old[0], ()) if d.id != device_id)
                self.user_devices[old[0]] = kept
        self._connections.pop(user, None)
        self.devices_by_id[device_id] = (user, device, active)
        mine = [d for d in self.user_devices.get(user, ()) if d.id != device_id]
        if active:
            mine.append(device)
        self.user_devices[user] = tuple(sorted(mine, key=lambda d: d.id))

    def _on_device_registered(self, event: Event, p: dict[str, object]) -> None:
        device = Device(id=str(p["device"]), platform=str(p["platform"]))
        self._set_device(device.id, str(p["user"]), device, p["state"] == "active")

    def _on_device_approved(self, event: Event, p: dict[str, object]) -> None:
        known = self.devices_by_id.get(str(p["device"]))
        if known is not None:
            self._set_device(known[1].id, known[0], known[1], True)

    def _on_device_revoked(self, event: Event, p: dict[str, object]) -> None:
        known = self.devices_by_id.get(str(p["device"]))
        if known is not None:
            self._set_device(known[1].id, known[0], known[1], False)
            self.presence.pop(known[1].id, None)

    def _on_push_registered(self, event: Event, p: dict[str, object]) -> None:
        registration, device = str(p["registration"]), str(p["device"])
        self._unregister(registration)
        self.registrations[registration] = device
        self._registered[device] = self._registered.get(device, 0) + 1

    def _on_push_unregistered(self, event: Event, p: dict[str, object]) -> None:
        self._unregister(str(p["registration"]))

    def _unregister(self, registration: str) -> None:
        device = self.registrations.pop(registration, None)
        if device is not None:
            left = self._registered[device] - 1
            if left:
                self._registered[device] = left
            else:
                del self._registered[device]

    def _on_presence_changed(self, event: Event, p: dict[str, object]) -> None:
        device = str(p["device"])
        known = self.devices_by_id.get(device)
        if known is not None:
            self._connections.pop(known[0], None)
        if p["connected"]:
            self.presence[device] = Connection(
                device=device,
                focus=frozenset(str(t) for t in p.get("focus", ())),  # type: ignore[attr-defined]
                idle=bool(p.get("idle", False)),
            )
        else:
            self.presence.pop(device, None)
