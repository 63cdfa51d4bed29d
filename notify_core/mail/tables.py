"""Decision-table functions of email cadence and unsubscribe tokens (formats.md section 4).

Each function takes the decoded JSON ``input`` of a case and returns the JSON answer; invalid
input raises a `NotifyError` with ``code`` and ``pointer``, which the table runner turns into
``{"error": {"code", "pointer"?}}``.

- ``email_after_for``: input ``{"now", "schedule", "daily_hour"?, "time_zone"?,
  "site_time_zone"?, "person", "category", "email_delay_s"}``; expect ``{"email_after"}``.
- ``unsubscribe_token``: input ``{"secret_hex", "person", "categories", "generation"?}``;
  expect ``{"token"}`` (U1: ``g`` only for a generation above 0).
- ``verify_unsubscribe_token``: input ``{"secret_hex", "token"}``; expect ``{"person",
  "categories", "generation"?}`` (a generation above 0 only) or ``{"error": {"code":
  "invalid_token"}}``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Final

from notify_core.mail.cadence import EmailSchedule, email_after_for
from notify_core.mail.tokens import (
    MIN_SECRET_BYTES,
    unsubscribe_token,
    verify_unsubscribe_token,
)
from notify_core.values.errors import InvalidInput, InvalidUnsubscribe
from notify_core.values.instants import format_instant, parse_instant, seconds

__all__ = ["mail_functions"]

Json = object
JsonObject = Mapping[str, Json]
TableFunction = Callable[[JsonObject], dict[str, Json]]

_HEX: Final = re.compile(r"(?:[0-9a-fA-F]{2})*")


def _member(obj: JsonObject, name: str, required: bool = True) -> Json:
    if not isinstance(obj, Mapping):
        raise InvalidInput("invalid_type", "the input must be an object", "")
    if name not in obj:
        if required:
            raise InvalidInput("missing_member", f"missing member {name!r}", f"/{name}")
        return None
    value = obj[name]
    if value is None:
        raise InvalidInput("null_value", f"{name!r} is null: omit it instead", f"/{name}")
    return value


def _str(obj: JsonObject, name: str, required: bool = True) -> str | None:
    value = _member(obj, name, required)
    if value is not None and not isinstance(value, str):
        raise InvalidInput("invalid_type", "expected a string", f"/{name}")
    return value


def _required_str(obj: JsonObject, name: str) -> str:
    value = _str(obj, name)
    assert value is not None
    return value


def _secret(obj: JsonObject) -> bytes:
    text = _required_str(obj, "secret_hex")
    if _HEX.fullmatch(text) is None:
        raise InvalidInput("invalid_secret", "secret_hex must be hexadecimal bytes", "/secret_hex")
    if len(text) < 2 * MIN_SECRET_BYTES:
        raise InvalidUnsubscribe(
            "weak_secret", f"the secret has fewer than {MIN_SECRET_BYTES} bytes", "/secret_hex"
        )
    return bytes.fromhex(text)


def _category_digest(digest: Mapping[str, bool], category: str) -> bool:
    if category not in digest:
        known = ", ".join(sorted(digest))
        raise InvalidInput(
            "unknown_category", f"unknown category {category!r} (known: {known})", "/category"
        )
    return digest[category]


def _email_after_for(digest: Mapping[str, bool], inp: JsonObject) -> dict[str, Json]:
    now = parse_instant(_member(inp, "now"), "/now")
    schedule = EmailSchedule(
        schedule=_member(inp, "schedule"),
        daily_hour=_member(inp, "daily_hour", required=False),  # type: ignore[arg-type]
    )
    due = email_after_for(
        schedule,
        now,
        person=_required_str(inp, "person"),
        digest=_category_digest(digest, _required_str(inp, "category")),
        time_zone=_str(inp, "time_zone", required=False),
        site_time_zone=_str(inp, "site_time_zone", required=False),
        delay=seconds(_member(inp, "email_delay_s"), "/email_delay_s"),
    )
    return {"email_after": format_instant(due)}


def _unsubscribe_token(inp: JsonObject) -> dict[str, Json]:
    secret = _secret(inp)
    person = _required_str(inp, "person")
    raw = _member(inp, "categories")
    if not isinstance(raw, list):
        raise InvalidInput("invalid_type", "expected an array", "/categories")
    for index, category in enumerate(raw):
        if not isinstance(category, str):
            raise InvalidInput("invalid_type", "expected a string", f"/categories/{index}")
    generation = inp.get("generation", 0)
    if type(generation) is not int:
        raise InvalidInput("invalid_type", "expected an integer", "/generation")
    return {"token": unsubscribe_token(secret, person, raw, generation)}


def _verify_unsubscribe_token(digest: Mapping[str, bool], inp: JsonObject) -> dict[str, Json]:
    secret = _secret(inp)
    found = verify_unsubscribe_token(
        secret, _required_str(inp, "token"), known_categories=digest.keys()
    )
    if found is None:
        # U2: one answer for every fault, without a pointer that would say which part failed.
        raise InvalidInput("invalid_token", "the token is not valid")
    answer: dict[str, Json] = {"person": found.person, "categories": list(found.categories)}
    if found.generation:  # G5: absent rather than 0 for a person never forgotten
        answer["generation"] = found.generation
    return answer


def mail_functions(digest: Mapping[str, bool]) -> dict[str, TableFunction]:
    """Return the table functions of this subpackage for a category registry.

    Args:
        digest: every known category key with its ``digest`` flag; `notify_core.replay.tables`
            passes the inbox registry's, so this subpackage imports no sibling.
    """
    flags = dict(digest)
    return {
        "email_after_for": functools.partial(_email_after_for, flags),
        "unsubscribe_token": _unsubscribe_token,
        "verify_unsubscribe_token": functools.partial(_verify_unsubscribe_token, flags),
    }
