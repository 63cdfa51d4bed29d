"""The contract of the devices part of `WorldFacts`, on both twins.

People's active devices (D5), their live connections (D4, D5) and the mobile devices with a
push registration (badge syncs). The memory twin keeps them in
`notify_core.hints.memory.devices.MemoryDevices`, learnt from ``device.*``, ``push.*`` and
``presence.changed``; PostgreSQL reads the reference host's tables and notify's
``push_registrations``, which the loader writes from the same events.
"""

from __future__ import annotations

from hint_twins import Twin
from pgpipeline import Log

from notify_core.hints.decide import Connection, Device


def people() -> Log:
    """Alex and Sam, humans; nothing else."""
    return Log().user("alex").user("sam")


def presence(log: Log, device: str, connected: bool, **extra: object) -> Log:
    return log.add("presence.changed", {"device": device, "connected": connected, **extra})


def register(log: Log, registration: str, device: str) -> Log:
    payload = {"registration": registration, "device": device, "provider": "apns"}
    return log.add("push.registered", payload)


def test_d5_active_devices_ordered_by_id_pending_and_unknown_left_out(world_twin: Twin) -> None:
    """D5: a person's active devices, by id; a pending device only once approved; nobody's
    devices for an unknown person or one without devices."""
    log = people()
    log.device("d-web", "alex", "web").device("d-a-phone", "alex", "ios")
    log.device("d-tablet", "alex", "android", state="pending")
    world_twin.feed(log.events)
    world = world_twin.world()
    assert world.devices("alex") == (
        Device(id="d-a-phone", platform="ios"),
        Device(id="d-web", platform="web"),
    )
    assert world.devices("sam") == ()
    assert world.devices("ghost") == ()
    world_twin.feed([Log().add("device.approved", {"device": "d-tablet"}).events[0]])
    assert [d.id for d in world_twin.world().devices("alex")] == ["d-a-phone", "d-tablet", "d-web"]


def test_d5_a_revoked_device_is_gone_with_its_connection(world_twin: Twin) -> None:
    log = people().device("d-laptop", "alex", "desktop").device("d-phone", "alex", "ios")
    presence(log, "d-laptop", True, focus=["t"])
    log.add("device.revoked", {"device": "d-laptop"})
    world_twin.feed(log.events)
    world = world_twin.world()
    assert [d.id for d in world.devices("alex")] == ["d-phone"]
    assert world.connections("alex") == ()


def test_d5_a_device_registered_again_by_another_person_leaves_its_old_owner(
    world_twin: Twin,
) -> None:
    """Decision 2026-11-30: a device registered again by another person is theirs alone."""
    log = people().device("d-phone", "alex", "ios").device("d-phone", "sam", "android")
    world_twin.feed(log.events)
    world = world_twin.world()
    assert world.devices("alex") == ()
    assert world.devices("sam") == (Device(id="d-phone", platform="android"),)


def test_d4_connections_carry_focus_and_idle_of_the_live_devices(world_twin: Twin) -> None:
    """D4: a live connection holds its focus and whether it is idle; the latest
    ``presence.changed`` of a device wins; a disconnect ends it; a device without a connection
    has none."""
    log = people().device("d-laptop", "alex", "desktop").device("d-web", "alex", "web")
    log.device("d-phone", "alex", "ios")
    presence(log, "d-laptop", True, focus=["t1"], idle=False)
    presence(log, "d-laptop", True, focus=["t1", "t2"], idle=True)
    presence(log, "d-web", True)
    presence(log, "d-web", False)
    world_twin.feed(log.events)
    world = world_twin.world()
    assert world.connections("alex") == (
        Connection(device="d-laptop", focus=frozenset({"t1", "t2"}), idle=True),
    )
    assert world.connections("sam") == ()
    assert world.connections("ghost") == ()


def test_d5_a_pending_devices_connection_is_not_the_persons(world_twin: Twin) -> None:
    """D5: connections are those of the person's active devices: a pending device's
    connection counts once the device is approved."""
    log = people().device("d-new", "alex", "desktop", state="pending")
    presence(log, "d-new", True, focus=["t"])
    world_twin.feed(log.events)
    assert world_twin.world().connections("alex") == ()
    world_twin.feed([Log().add("device.approved", {"device": "d-new"}).events[0]])
    assert world_twin.world().connections("alex") == (
        Connection(device="d-new", focus=frozenset({"t"}), idle=False),
    )


def test_b2_push_devices_are_active_mobile_devices_with_a_registration(world_twin: Twin) -> None:
    """The devices a badge sync goes to: active ``ios`` and ``android`` devices with a push
    registration; not a desktop with one, not a phone without one, not a revoked or pending
    phone, not a phone whose registrations are all gone."""
    log = people()
    for device, platform, state in (
        ("d-ios", "ios", "active"),
        ("d-android", "android", "active"),
        ("d-bare", "ios", "active"),
        ("d-desk", "desktop", "active"),
        ("d-gone", "ios", "active"),
        ("d-revoked", "android", "active"),
        ("d-pending", "ios", "pending"),
    ):
        log.device(device, "alex", platform, state=state)
    for device in ("d-ios", "d-android", "d-desk", "d-gone", "d-revoked", "d-pending"):
        register(log, f"r-{device}", device)
    register(log, "r-ios-2", "d-ios")
    log.add("push.unregistered", {"registration": "r-ios-2"})
    log.add("push.unregistered", {"registration": "r-d-gone"})
    log.add("device.revoked", {"device": "d-revoked"})
    register(log, "r-unknown", "d-unknown")  # a device nobody registered: no registration
    world_twin.feed(log.events)
    world = world_twin.world()
    assert world.push_devices("alex") == ("d-android", "d-ios")
    assert world.push_devices("sam") == ()
    assert world.push_devices("ghost") == ()
