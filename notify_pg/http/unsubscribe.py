"""Framework-neutral HTTP handlers of one-click unsubscribe (U3, U4).

No session, no cookie: the token is the only credential. Like the inbox handlers of
`notify_pg.http.handlers` (which re-exports these), each is a plain function of request
values that returns a `notify_pg.http.responses.Response`, with its plan form
(`notify_pg.db.plan`) that ``notify serve``'s native routes run on an asyncio connection.

- `unsubscribe_post`: the RFC 8058 one-click ``POST`` on the ``List-Unsubscribe`` URL with the
  form body ``List-Unsubscribe=One-Click`` (``application/x-www-form-urlencoded`` or
  ``multipart/form-data``), optionally ``scope=all``: ``200`` with no body, ``400`` with no
  body for anything invalid (a token of a person the host has forgotten included), saying
  nothing about which part failed. Idempotent.
- `unsubscribe_get`: a ``GET`` on the same URL changes nothing: ``303`` to the host's page.
- `unsubscribe_info`: what a token would do (its categories), nothing about whose it is.
"""

from __future__ import annotations

import email.parser
import email.policy
import urllib.parse
from datetime import datetime
from typing import Final

from notify_core.inbox.categories import CATEGORY_BY_KEY
from notify_core.mail import UNSUBSCRIBE_PATH, verify_unsubscribe_token
from notify_pg.db.migrate import DEFAULT_SCHEMA
from notify_pg.db.plan import Plan, finished, run_plan
from notify_pg.db.seam import Conn
from notify_pg.http.responses import MAX_BODY_BYTES, NO_STORE, Response, one_value, parse_query
from notify_pg.http.responses import bare as _bare
from notify_pg.http.responses import json_answer as _json
from notify_pg.http.responses import media_type as _media_type
from notify_pg.inbox.host_categories import host_registry_plan
from notify_pg.mail.unsubscribe import unsubscribe_plan
from notify_pg.stores.store import generation_plan

__all__ = [
    "UNSUBSCRIBE_INFO_PATH",
    "UNSUBSCRIBE_PAGE",
    "unsubscribe_get",
    "unsubscribe_info",
    "unsubscribe_info_plan",
    "unsubscribe_post",
    "unsubscribe_post_plan",
]

#: The host's unsubscribe page a ``GET`` redirects to (it names the categories from the info
#: call and offers the one-click ``POST``, with or without ``scope=all``).
UNSUBSCRIBE_PAGE: Final = "/unsubscribe"
#: Where the reference app answers the info call.
UNSUBSCRIBE_INFO_PATH: Final = f"{UNSUBSCRIBE_PATH}/info"

_FORM: Final = "application/x-www-form-urlencoded"
_MULTIPART: Final = "multipart/form-data"
_NO_STORE: Final = NO_STORE


def _token(query: str | bytes) -> str | None:
    values = parse_query(query)
    return None if values is None else one_value(values, "t")


def _form(content_type: str | None, body: bytes) -> dict[str, list[str]] | None:
    """The fields of a form body (url-encoded or multipart), or ``None`` when unreadable."""
    if len(body) > MAX_BODY_BYTES:
        return None
    media = _media_type(content_type)
    if media in ("", _FORM):
        return parse_query(body)
    if media != _MULTIPART or content_type is None:
        return None
    # RFC 8058 prefers multipart/form-data; the standard library's MIME parser reads it.
    try:
        head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1")
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
        if not message.is_multipart() or message.defects:
            return None
        fields: dict[str, list[str]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if not isinstance(name, str) or not isinstance(payload, bytes):
                return None
            fields.setdefault(name, []).append(payload.decode("utf-8"))
        return fields
    except (UnicodeError, ValueError, TypeError, LookupError):
        return None


def _known_plan(schema: str) -> Plan[frozenset[str]]:
    """The categories a token may name: the registry, the host's own among them (N13)."""
    return frozenset((yield from host_registry_plan(schema)))


def unsubscribe_post(
    conn: Conn,
    *,
    secret: bytes,
    query: str | bytes,
    content_type: str | None,
    body: bytes,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Response:
    """Answer the one-click ``POST`` (U3, RFC 8058).

    Args:
        secret: the instance's unsubscribe secret (`notify_pg.mail.secret.unsubscribe_secret`).
        query: the URL's query string, holding the token as ``t``.
        content_type: the request's ``Content-Type`` (url-encoded or multipart form; absent
            reads as url-encoded).
        body: the request body: ``List-Unsubscribe=One-Click``, optionally ``scope=all``.
        at: the request's time (default now), recorded in the audit.

    Returns:
        ``200`` with no body once email is off for the token's categories (all of them with
        ``scope=all``; in-app untouched), however often it is repeated; ``400`` with no body
        for a missing, tampered or unknown token, a token of a person the host has forgotten
        (`notify_pg.forget_person`: nothing is written), or of an earlier generation of an id
        the host created again (`notify_pg.person_created`), or a body that is not the
        one-click form.
    """
    return run_plan(
        conn,
        unsubscribe_post_plan(
            secret=secret, query=query, content_type=content_type, body=body, at=at, schema=schema
        ),
    )


def unsubscribe_post_plan(
    *,
    secret: bytes,
    query: str | bytes,
    content_type: str | None,
    body: bytes,
    at: datetime | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Plan[Response]:
    """`unsubscribe_post` as a plan (`notify_pg.db.plan`: run blocking or async)."""
    form = _form(content_type, body)
    token = _token(query)
    if form is None or token is None or form.get("List-Unsubscribe") != ["One-Click"]:
        return _bare(400)
    scope_values = form.get("scope")
    if scope_values is None:
        scope = "token"
    elif scope_values == ["all"]:
        scope = "all"
    else:
        return _bare(400)
    known = yield from _known_plan(schema)
    found = verify_unsubscribe_token(secret, token, known_categories=known)
    if found is None:
        return _bare(400)
    if (yield from unsubscribe_plan(found, scope=scope, at=at, schema=schema)) is None:
        return _bare(400)  # the host forgot the person (or this generation): invalid (U3)
    return _bare(200)


def unsubscribe_get(*, query: str | bytes, page: str = UNSUBSCRIBE_PAGE) -> Response:
    """Answer a ``GET`` on the one-click URL (U4): ``303`` to the host's page, nothing changed.

    Mail scanners fetch every link of a message, so a ``GET`` that acted would unsubscribe
    people who never asked. The token goes along as ``t`` (whatever it is: the page's info
    call tells a valid token from an invalid one).
    """
    token = _token(query)
    target = page if token is None else f"{page}?{urllib.parse.urlencode({'t': token})}"
    return Response(status=303, headers=(("Location", target), _NO_STORE))


def unsubscribe_info(
    *,
    secret: bytes,
    query: str | bytes,
    conn: Conn | None = None,
    schema: str = DEFAULT_SCHEMA,
) -> Response:
    """Answer the info call (U4): ``{"categories": [...]}`` a token would turn off.

    It says nothing about whose token it is; an invalid token is a ``400`` with no body. Given
    ``conn``, a token of a person the host has forgotten, or of an earlier generation of an
    id created again, is invalid too (U3).
    """
    plan = unsubscribe_info_plan(
        secret=secret, query=query, forgotten=conn is not None, schema=schema
    )
    return finished(plan) if conn is None else run_plan(conn, plan)


def unsubscribe_info_plan(
    *, secret: bytes, query: str | bytes, forgotten: bool = True, schema: str = DEFAULT_SCHEMA
) -> Plan[Response]:
    """`unsubscribe_info` as a plan; ``forgotten``: check the person is not forgotten and the
    token is of their generation (the plan's only read)."""
    token = _token(query)
    if token is None:
        return _bare(400)
    # Without a connection (no read) only the built-in categories are known (N13).
    known = (yield from _known_plan(schema)) if forgotten else frozenset(CATEGORY_BY_KEY)
    found = verify_unsubscribe_token(secret, token, known_categories=known)
    if found is None or (
        forgotten and (yield from generation_plan(found.person, schema)) != found.generation
    ):
        return _bare(400)
    return _json(200, {"categories": list(found.categories)})
