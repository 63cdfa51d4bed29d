"""Framework-neutral HTTP handlers of a person's notification preferences and of the instance's
notification settings (rules H2, H2a).

Like the inbox handlers of `notify_pg.http.handlers`: request values in (the person or
administrator the host authenticated, the ``Content-Type`` and the body bytes), a `Response`
out. Authentication is the host's: these functions trust the identity they are given, so a
host mounts the preference routes behind its sign-in (the caller's own preferences) and the
settings routes behind its administrator check (N8: ``manage_system``).

- `preferences_get`: the person's effective grid (``200``).
- `preferences_patch`: a change of it, member by member (``200`` with the new grid).
- `settings_get`: the instance's settings, whether mail is configured and the operator's
  status card (``200``, H2b).
- `settings_patch`: a change of them, member by member (``200`` with the new settings).

Every change is audited in the transaction that makes it (`notify_pg.mail.settings`); reads
are not. A malformed body, or a change H2a refuses, is a ``400`` with
``{"error": {"code", "message", "pointer"}}`` naming the member by its JSON pointer; nothing
is written then. A schedule change for a person the host does not know is a ``404``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Final

from notify_core.values.errors import InvalidInput
from notify_pg.db.errors import NotFound
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, run_plan
from notify_pg.db.seam import Conn
from notify_pg.http.responses import MAX_BODY_BYTES, Response
from notify_pg.http.responses import json_answer as _json
from notify_pg.http.responses import media_type as _media_type
from notify_pg.http.responses import problem as _problem
from notify_pg.mail.settings import (
    AdminHostPorts,
    change_preferences_plan,
    change_settings_plan,
    instance_settings_plan,
    preferences_plan,
)
from notify_pg.ops.status import operator_status_plan, plain_http_sites_plan

__all__ = [
    "preferences_get",
    "preferences_get_plan",
    "preferences_patch",
    "preferences_patch_plan",
    "settings_get",
    "settings_get_plan",
    "settings_patch",
    "settings_patch_plan",
]

#: The media types a change may be sent as (a JSON object; a merge patch is one too).
_JSON_TYPES: Final = ("application/json", "application/merge-patch+json")


def _body(content_type: str | None, body: bytes) -> object | Response:
    """The JSON value of a change's body, or the ``400`` that says why there is none."""
    if len(body) > MAX_BODY_BYTES:
        return _problem("body_too_large", f"the body is over {MAX_BODY_BYTES} bytes")
    if _media_type(content_type) not in _JSON_TYPES:
        return _problem("invalid_content_type", "the body must be application/json")
    try:
        value: object = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _problem("invalid_json", "the body is not a JSON object", "")
    if not isinstance(value, dict):
        return _problem("invalid_json", "the body is not a JSON object", "")
    return value


def _refused(exc: InvalidInput) -> Response:
    return _problem(exc.code, exc.message, exc.pointer if exc.pointer is not None else "")


def preferences_get(
    conn: Conn, host: AdminHostPorts, user: str, *, schema: str = DEFAULT_SCHEMA
) -> Response:
    """Answer the person's effective preference grid (H2a): ``200`` with
    `notify_core.inbox.admin.preference_grid`'s object. Not audited."""
    return run_plan(conn, preferences_get_plan(host, user, schema=schema))


def preferences_get_plan(
    host: AdminHostPorts, user: str, *, schema: str = DEFAULT_SCHEMA
) -> Plan[Response]:
    """`preferences_get` as a plan (`notify_pg.db.plan`; natively run when the host has the
    plan forms of `notify_pg.mail.settings.PREFERENCE_PORTS`)."""
    return _json(200, (yield from preferences_plan(host, user, schema=schema)))


def preferences_patch(
    conn: Conn,
    host: AdminHostPorts,
    user: str,
    *,
    content_type: str | None,
    body: bytes,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Response:
    """Change the person's grid member by member (H2, H2a) and answer the new grid.

    The body is a JSON object with the optional members ``categories`` (``{category:
    {in_app?, email?}}``), ``stop_all_email`` (``true``), ``email_schedule`` and
    ``daily_hour``. ``200`` with the grid; ``400`` naming the member at fault (an unknown
    category, a non-boolean choice, ``daily`` without an hour, a digest schedule while
    retention is under 2 days: ``invalid_retention``); ``404`` for a schedule change of a
    person the host does not know. One audit row, with the person as the actor, when
    something changed.
    """
    plan = preferences_patch_plan(
        host, user, content_type=content_type, body=body, at=at, schema=schema
    )
    return run_plan(conn, plan)


def preferences_patch_plan(
    host: AdminHostPorts,
    user: str,
    *,
    content_type: str | None,
    body: bytes,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[Response]:
    """`preferences_patch` as a plan (`notify_pg.db.plan`; natively run when the host has the
    plan forms of `notify_pg.mail.settings.PREFERENCE_CHANGE_PORTS`)."""
    value = _body(content_type, body)
    if isinstance(value, Response):
        return value
    try:
        grid = yield from change_preferences_plan(
            host, user, value, actor=user, at=at, schema=schema
        )
    except InvalidInput as exc:
        return _refused(exc)
    except NotFound:
        return _json(404, {"error": {"code": "not_found", "message": "no such person"}})
    return _json(200, grid)


def settings_get(conn: Conn, host: AdminHostPorts, *, schema: str = DEFAULT_SCHEMA) -> Response:
    """Answer the instance's settings (``email_delay_s``, ``retention_days``,
    ``mail_batch_size``, ``sections``), ``mail_configured`` and, read-only, ``status``: the
    operator's status card (H2b, `notify_pg.ops.status.operator_status`:
    the outbox backlog and its age, mails pending now and sent, failed and skipped over the
    last 24 hours, whether mail is configured, the sites served over plain http). Never the
    unsubscribe secret. Not audited."""
    return run_plan(conn, settings_get_plan(host, schema=schema))


def settings_get_plan(host: AdminHostPorts, *, schema: str = DEFAULT_SCHEMA) -> Plan[Response]:
    """`settings_get` as a plan (natively run when the host has the plan forms of
    `notify_pg.mail.settings.SETTINGS_PORTS` and of its ``inbox_plain_http_sites``)."""
    settings = yield from instance_settings_plan(host)
    status = yield from operator_status_plan(
        schema,
        mail_configured=bool(settings["mail_configured"]),
        plain_http=(yield from plain_http_sites_plan(host)),
    )
    return _json(200, {**settings, "status": status})


def settings_patch(
    conn: Conn,
    host: AdminHostPorts,
    admin: str,
    *,
    content_type: str | None,
    body: bytes,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Response:
    """Change the instance's settings member by member (H2, H2a) and answer them.

    The body is a JSON object with the optional members ``email_delay_s``, ``retention_days``,
    ``mail_batch_size`` (1-1000) and ``sections`` (``{section: off, in_app or email}``). ``200``
    with the settings; ``400`` naming the member at fault (``mail_configured`` and ``status`` are
    ``read_only``; the unsubscribe secret, like any other member, is ``unknown_member``; a retention
    under 2 days while anyone has an hourly or daily schedule is ``invalid_retention``, and so is a
    change that leaves ``email_delay_s`` at or above ``retention_days - 1`` days, named
    ``/retention_days`` when the body holds it, else ``/email_delay_s``). One audit row, with
    ``admin`` as the actor and ``instance`` as the subject, when something changed.
    """
    plan = settings_patch_plan(
        host, admin, content_type=content_type, body=body, at=at, schema=schema
    )
    return run_plan(conn, plan)


def settings_patch_plan(
    host: AdminHostPorts,
    admin: str,
    *,
    content_type: str | None,
    body: bytes,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[Response]:
    """`settings_patch` as a plan (natively run when the host has the plan forms of
    `notify_pg.mail.settings.SETTINGS_CHANGE_PORTS`)."""
    value = _body(content_type, body)
    if isinstance(value, Response):
        return value
    try:
        settings = yield from change_settings_plan(host, value, actor=admin, at=at, schema=schema)
    except InvalidInput as exc:
        return _refused(exc)
    return _json(200, settings)
