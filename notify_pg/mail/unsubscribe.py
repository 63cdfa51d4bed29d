"""One-click unsubscribe on PostgreSQL (rule U3): turn a person's email off and audit it.

`unsubscribe` is what the one-click ``POST`` does once its token verified (`notify_pg.http.handlers`
answers the request): email off for the token's categories, or for every category with
``scope=all``, in-app choices untouched, one audit row with the token's person as the actor.
It is idempotent: a repeated request leaves the same choices (and audits an empty
``changed``). A token of a person `notify_pg.forget_person` erased is invalid: nothing is
written, nor for a token of an earlier generation of an id the host created again
(`notify_pg.person_created`: only the current generation's tokens are valid). A host with its
own HTTP layer calls it directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Final

import attrs

from notify_core.inbox.categories import Category
from notify_core.mail import Unsubscribe
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, all_rows, atomic, one_row, run_plan, touched
from notify_pg.db.seam import Conn, Seam
from notify_pg.inbox.host_categories import host_registry_plan
from notify_pg.inbox.reads import InboxPreferences
from notify_pg.stores.store import generation_plan

__all__ = [
    "SCOPES",
    "AuditedUnsubscribe",
    "audited_unsubscribes",
    "unsubscribe",
    "unsubscribe_plan",
]

#: ``token``: the token's categories; ``all``: every category (stop all email, N2).
SCOPES: Final = ("token", "all")


@attrs.frozen(kw_only=True)
class AuditedUnsubscribe:
    """One audited one-click unsubscribe of a person (the actor is the token's person).

    ``categories`` are those turned off; ``changed`` those whose email was on before.
    """

    scope: str
    token_categories: tuple[str, ...]
    categories: tuple[str, ...]
    changed: tuple[str, ...]
    at: datetime


def unsubscribe(
    conn: Conn,
    request: Unsubscribe,
    *,
    scope: str = "token",
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> AuditedUnsubscribe | None:
    """Turn email off for a verified token's categories (or all) and audit it, in one
    transaction (U3); ``None``, with nothing written, when the person is forgotten or the
    token is of another generation than the id's current one.

    Args:
        request: what `verify_unsubscribe_token` answered for the token.
        scope: ``token`` (the token's categories) or ``all`` (every category).
        at: the request's time (default now).

    Raises:
        ValueError: an unknown scope (a caller's mistake: the HTTP handler checks it).
        StorageError: PostgreSQL failed; nothing was changed.
    """
    return run_plan(conn, unsubscribe_plan(request, scope=scope, at=at, schema=schema))


def unsubscribe_plan(
    request: Unsubscribe,
    *,
    scope: str = "token",
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[AuditedUnsubscribe | None]:
    """`unsubscribe` as a plan (`notify_pg.db.plan`: run blocking or async)."""
    if scope not in SCOPES:
        raise ValueError(f"unknown unsubscribe scope {scope!r}")
    when = at or datetime.now(UTC)
    known = yield from host_registry_plan(schema)  # the host's own categories too (N13)
    chosen = sorted(known) if scope == "all" else sorted(request.categories)
    changed = yield from atomic(_unsubscribe_steps(request, scope, chosen, when, schema, known))
    if changed is None:
        return None
    return AuditedUnsubscribe(
        scope=scope,
        token_categories=tuple(request.categories),
        categories=tuple(chosen),
        changed=tuple(changed),
        at=when,
    )


def _unsubscribe_steps(
    request: Unsubscribe,
    scope: str,
    chosen: list[str],
    when: datetime,
    schema: str,
    known: Mapping[str, Category],
) -> Plan[list[str] | None]:
    """The transaction of `unsubscribe_plan`: the categories changed, ``None`` when the
    person is forgotten or the token of another generation (nothing written)."""
    seam = Seam("notify_pg", schema)
    prefs = InboxPreferences(schema)
    person = request.person
    # Two requests of one person at once: the second sees the first's choices, so only
    # one of them names a category as changed.
    yield from one_row(seam, "unsubscribe_lock_person", {"user_id": person})
    # After the lock: a forget_person of the person committed before it is seen here, and
    # one that runs now waits for this transaction (it takes the same lock).
    if (yield from generation_plan(person, schema)) != request.generation:
        return None
    stored = (yield from prefs.rows_plan([person])).get(person, {})
    changed = [key for key in chosen if stored.get((key, "email"), known[key].defaults.email)]
    for key in chosen:
        yield from prefs.set_plan(person, key, "email", False)
    yield from touched(
        seam,
        "unsubscribe_audit_insert",
        {
            "user_id": person,
            "scope": scope,
            "token_categories": list(request.categories),
            "categories": chosen,
            "changed": changed,
            "at": when,
        },
    )
    return changed


def audited_unsubscribes(
    conn: Conn, person: str, *, schema: str = DEFAULT_SCHEMA
) -> Sequence[AuditedUnsubscribe]:
    """Return the audited one-click unsubscribes of a person, oldest first."""
    rows = run_plan(
        conn, all_rows(Seam("notify_pg", schema), "unsubscribe_audit_of", {"user_id": person})
    )
    return [
        AuditedUnsubscribe(
            scope=scope,
            token_categories=tuple(token_categories),
            categories=tuple(categories),
            changed=tuple(changed),
            at=at,
        )
        for scope, token_categories, categories, changed, at in rows
    ]
