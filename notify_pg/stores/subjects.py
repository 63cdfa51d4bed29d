"""Who may use the preference and quiet-hour operations: humans only (docs/postgresql.md)."""

from __future__ import annotations

from notify_pg.db.errors import Forbidden
from notify_pg.db.seam import Conn
from notify_pg.stores.ports import PeoplePort

__all__ = ["require_humans"]


def require_humans(people: PeoplePort, conn: Conn, user_id: str, actor: str | None) -> None:
    """Refuse the call when the host knows the person or the actor as an agent or an app.

    Preferences and quiet hours are personal settings of humans; an agent's or an app's token
    gets ``403 forbidden`` with reason ``subject_kind_not_allowed`` on every one of the seven
    operations, before any target or rule is looked at (so the answer tells nothing about
    them). A principal the host does not know is not refused here: the host authenticated
    the caller, and the target and rule checks still apply.

    Raises:
        Forbidden: ``subject_kind_not_allowed``.
    """
    principals = [user_id] if actor is None or actor == user_id else [user_id, actor]
    known = people.users(conn, principals)
    if any(info.kind != "human" for info in known.values()):
        raise Forbidden()
