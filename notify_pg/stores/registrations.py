"""``push_registrations`` (docs/schema.md): the host's writes, notify's reads and result writes.

The host creates and removes registrations (`RegistrationRepository.register`,
`RegistrationRepository.remove`, from the host's own registration endpoint).
notify reads the active ones without their token (`RegistrationRepository.active`, the read port
of the pipeline) and, in the send step only, one registration with its token
(`RegistrationRepository.for_send`, or `for_send_many` for a batch); it writes nothing but the
delivery columns (`RegistrationRepository.record`, rule R1).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import attrs

from notify_core.hints.delivery import RegistrationState
from notify_pg.db.seam import Conn, Seam

__all__ = ["PushRegistration", "Registration", "RegistrationRepository", "token_ref"]


def token_ref(token: str) -> str:
    """Return the only form of a device token that may appear in a log: a hash prefix."""
    return hashlib.sha256(token.encode()).hexdigest()[:8]


@attrs.frozen(kw_only=True)
class PushRegistration:
    """An active registration as the read port shows it: never the token (kept out of facts)."""

    id: str
    user_id: str
    device_id: str
    provider: str
    environment: str
    app_id: str
    created_at: datetime
    last_success_at: datetime | None = None
    failure_count: int = 0


@attrs.frozen(kw_only=True)
class Registration:
    """What a provider needs to send one push: the registration with its token.

    The token is left out of ``repr`` and must never be logged; `token_ref` gives a hash
    prefix for logs.
    """

    id: str
    user_id: str
    device_id: str
    provider: str
    environment: str
    app_id: str
    created_at: datetime
    token: str = attrs.field(repr=False)

    @property
    def token_ref(self) -> str:
        """A short hash prefix of the token, the only form a log may carry."""
        return token_ref(self.token)


def _state(
    created_at: datetime,
    last_success_at: datetime | None,
    failure_count: int,
    disabled_at: datetime | None,
    disabled_reason: str | None,
) -> RegistrationState:
    return RegistrationState(
        failure_count=failure_count,
        created_at=created_at,
        last_success_at=last_success_at,
        disabled_at=disabled_at,
        disabled_reason=disabled_reason,
    )


class RegistrationRepository:
    """Reads and the result writes of ``push_registrations``.

    Args:
        schema: the library's schema.
    """

    def __init__(self, schema: str) -> None:
        self._seam = Seam("notify_pg", schema)

    def register(
        self,
        conn: Conn,
        *,
        id: str,
        user_id: str,
        device_id: str,
        auth_session_id: str,
        provider: str,
        token: str,
        app_id: str,
        environment: str = "production",
        created_at: datetime | None = None,
    ) -> None:
        """Store a registration (the host's registration endpoint; not called by notify).

        Raises:
            Conflict: the id, or the pair (provider, token), exists already.
            StorageError: a value the table's checks refuse (provider, environment).
        """
        self._seam.run(
            conn,
            "register_push",
            {
                "id": id,
                "user_id": user_id,
                "device_id": device_id,
                "auth_session_id": auth_session_id,
                "provider": provider,
                "token": token,
                "environment": environment,
                "app_id": app_id,
                "created_at": created_at,
            },
        )

    def remove(self, conn: Conn, registration_id: str) -> bool:
        """Remove a registration; True when it existed."""
        return self._seam.run(conn, "remove_push", {"id": registration_id}) > 0

    def active(self, conn: Conn, user_ids: Sequence[str]) -> dict[str, list[PushRegistration]]:
        """Return the active registrations of many people, grouped by person, each by id.

        It authorizes nothing: the caller selected the people.
        """
        rows = self._seam.all(conn, "active_registrations", {"user_ids": list(user_ids)})
        out: dict[str, list[PushRegistration]] = {}
        for reg_id, user_id, device_id, provider, env, app_id, created, success, failures in rows:
            out.setdefault(user_id, []).append(
                PushRegistration(
                    id=reg_id,
                    user_id=user_id,
                    device_id=device_id,
                    provider=provider,
                    environment=env,
                    app_id=app_id,
                    created_at=created.astimezone(UTC),
                    last_success_at=None if success is None else success.astimezone(UTC),
                    failure_count=failures,
                )
            )
        return out

    def for_send(
        self, conn: Conn, registration_id: str
    ) -> tuple[Registration, RegistrationState] | None:
        """Return one registration with its token and its delivery state (send step 1)."""
        row = self._seam.one(conn, "registration_for_send", {"id": registration_id})
        return None if row is None else _for_send(row)

    def for_send_many(
        self, conn: Conn, registration_ids: Sequence[str]
    ) -> dict[str, tuple[Registration, RegistrationState]]:
        """Return many registrations with token and delivery state in one query (the send
        step 1 of a batch); unknown ids are absent."""
        ids = list(dict.fromkeys(registration_ids))
        if not ids:
            return {}
        out: dict[str, tuple[Registration, RegistrationState]] = {}
        for row in self._seam.all(conn, "registrations_for_send", {"ids": ids}):
            registration, state = _for_send(row)
            out[registration.id] = (registration, state)
        return out

    @staticmethod
    def from_send_row(row: tuple[Any, ...]) -> tuple[Registration, RegistrationState]:
        """A registration with its token and delivery state from the columns of
        ``registrations_for_send`` (a query that joins them to what it claims)."""
        return _for_send(row)

    def lock_states(
        self, conn: Conn, registration_ids: Sequence[str]
    ) -> dict[str, RegistrationState]:
        """Lock many registration rows ``FOR UPDATE`` (in id order, so two batches never
        deadlock) and return their delivery states; gone ones are absent (step 3)."""
        ids = sorted(set(registration_ids))
        if not ids:
            return {}
        rows = self._seam.all(conn, "lock_registrations", {"ids": ids})
        return {row[0]: _state(*row[1:]) for row in rows}

    def record_many(self, conn: Conn, states: Sequence[tuple[str, RegistrationState]]) -> None:
        """Write the delivery columns of many registrations (one statement: a push round
        changes most of its registrations, ``last_success_at`` at least)."""
        if not states:
            return
        rows = [_record(i, s) for i, s in states]
        self._seam.run(
            conn,
            "record_deliveries",
            {
                "ids": [r["id"] for r in rows],
                "last_success_ats": [r["last_success_at"] for r in rows],
                "failure_counts": [r["failure_count"] for r in rows],
                "disabled_ats": [r["disabled_at"] for r in rows],
                "disabled_reasons": [r["disabled_reason"] for r in rows],
            },
        )

    def lock_state(self, conn: Conn, registration_id: str) -> RegistrationState | None:
        """Lock a registration row ``FOR UPDATE`` and return its delivery state (step 3)."""
        row = self._seam.one(conn, "lock_registration", {"id": registration_id})
        return None if row is None else _state(*row)

    def record(self, conn: Conn, registration_id: str, state: RegistrationState) -> None:
        """Write the delivery columns of a registration (after `apply_result`)."""
        self._seam.run(conn, "record_delivery", _record(registration_id, state))


def _for_send(row: tuple[Any, ...]) -> tuple[Registration, RegistrationState]:
    (reg_id, user_id, device_id, _session, provider, env, app_id, token, created, *rest) = row
    registration = Registration(
        id=reg_id,
        user_id=user_id,
        device_id=device_id,
        provider=provider,
        environment=env,
        app_id=app_id,
        created_at=created.astimezone(UTC),
        token=token,
    )
    return registration, _state(created, *rest)


def _record(registration_id: str, state: RegistrationState) -> dict[str, Any]:
    return {
        "id": registration_id,
        "last_success_at": state.last_success_at,
        "failure_count": state.failure_count,
        "disabled_at": state.disabled_at,
        "disabled_reason": None if state.disabled_reason is None else state.disabled_reason.value,
    }
