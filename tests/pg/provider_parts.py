"""Parts of the provider tests: registrations, notifications, a recorder of alerts."""

from __future__ import annotations

from datetime import UTC, datetime

from notify_core.hints.delivery import Notification
from notify_pg.stores.registrations import Registration


class Alerts:
    """A `ProviderAlerts` that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def provider_paused(self, provider: str, reason: str) -> None:
        self.calls.append(("paused", provider, reason))

    def provider_resumed(self, provider: str) -> None:
        self.calls.append(("resumed", provider))


def registration(
    provider: str, token: str, *, id: str = "r-1", environment: str = "production"
) -> Registration:
    return Registration(
        id=id,
        user_id="u-alex",
        device_id="d-phone",
        provider=provider,
        environment=environment,
        app_id="com.example.chat",
        created_at=datetime(2026, 10, 1, tzinfo=UTC),
        token=token,
    )


HINT = Notification(
    id="0192b7d2-7a3e-7c1f-9d5e-0a1b2c3d4e5f",
    kind="mention",
    thread="t-42",
    message="m-7",
    badge=3,
    instance_id="i-1",
)
QUIET = Notification(id="n-2", kind="message", thread="t-42", message="m-8", quiet=True, badge=3)
SYNC = Notification(id="n-3", kind="sync", badge=1, cleared=["t-42", "t-43"], instance_id="i-1")
