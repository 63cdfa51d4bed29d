"""One-click unsubscribe tokens (rules U1 and U2, RFC 8058), with the standard library only.

A token is ``base64url(payload) "." base64url(HMAC-SHA256(secret, payload))`` without padding,
where the payload is the canonical JSON ``{"c": [categories, sorted], "u": person, "v": 1}``,
plus ``"g": n`` for a person whose generation ``n`` is above 0 (U3: an id the host forgot
and created again; a token of an earlier generation is not theirs).
Tokens never expire: the only thing one can do is turn email off for one person. The secret is
32 random bytes the host generates once (the core draws no randomness, G1) and keeps apart from
any session secret, so that invalidating sessions never breaks a link in somebody's mailbox.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Set
from typing import Final

import attrs

from notify_core.values.errors import InvalidUnsubscribe, UsageError

__all__ = [
    "MIN_SECRET_BYTES",
    "TOKEN_VERSION",
    "Unsubscribe",
    "token_payload",
    "unsubscribe_token",
    "verify_unsubscribe_token",
]

#: The ``v`` member of every payload this library writes and accepts.
TOKEN_VERSION: Final = 1
#: The shortest secret accepted: the 32 bytes of U1 (an HMAC-SHA256 key of full strength).
MIN_SECRET_BYTES: Final = 32

_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]*")
_MEMBERS: Final = frozenset({"c", "u", "v"})
#: The members of a payload with a generation (U3).
_MEMBERS_G: Final = _MEMBERS | {"g"}


@attrs.frozen(kw_only=True)
class Unsubscribe:
    """What a valid token asks for: turn email off for ``categories`` of ``person``.

    ``categories`` are sorted and without repeats, as the token carries them; ``generation``
    is the person's generation the token was signed for (0: an id never forgotten, U3): a
    host honours it only while it is the id's current one.
    """

    person: str
    categories: tuple[str, ...]
    generation: int = 0


def _check_secret(secret: object) -> bytes:
    if not isinstance(secret, bytes | bytearray):
        raise UsageError("invalid_type", "the unsubscribe secret must be bytes")
    if len(secret) < MIN_SECRET_BYTES:
        raise InvalidUnsubscribe(
            "weak_secret",
            f"the unsubscribe secret has {len(secret)} bytes, at least {MIN_SECRET_BYTES} needed",
        )
    return bytes(secret)


def _utf8(text: str, code: str, pointer: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidUnsubscribe(code, f"not encodable as UTF-8: {text!r}", pointer) from None


def token_payload(person: str, categories: Iterable[str], generation: int = 0) -> bytes:
    """Return the canonical payload of U1: the bytes the MAC covers.

    UTF-8 of ``{"c": [categories, sorted, without repeats], "u": person, "v": 1}`` with sorted
    keys, no spaces and non-ASCII characters unescaped (``ensure_ascii=False``); with
    ``"g": generation`` when the person's generation is above 0 (U3).

    Raises:
        UsageError: ``person`` is not a string, ``categories`` not an iterable of strings,
            ``generation`` not an integer.
        InvalidUnsubscribe: no category (``no_categories``), text with a lone surrogate
            (``invalid_person``, ``invalid_category``), a negative generation
            (``invalid_generation``).

    Example:
        >>> token_payload("ana", ["watched_page", "mention"])
        b'{"c":["mention","watched_page"],"u":"ana","v":1}'
        >>> token_payload("ana", ["mention"], generation=2)
        b'{"c":["mention"],"g":2,"u":"ana","v":1}'
    """
    if not isinstance(person, str):
        raise UsageError("invalid_type", "person must be a string", "/person")
    if type(generation) is not int:
        raise UsageError("invalid_type", "generation must be an integer", "/generation")
    if generation < 0:
        raise InvalidUnsubscribe(
            "invalid_generation", "a generation is an integer >= 0", "/generation"
        )
    if isinstance(categories, str | bytes):
        raise UsageError(
            "invalid_type", "categories must be a collection of strings", "/categories"
        )
    keys = []
    for index, category in enumerate(categories):
        if not isinstance(category, str):
            raise UsageError("invalid_type", "a category must be a string", f"/categories/{index}")
        _utf8(category, "invalid_category", f"/categories/{index}")
        keys.append(category)
    if not keys:
        raise InvalidUnsubscribe(
            "no_categories", "an unsubscribe token names at least one category", "/categories"
        )
    _utf8(person, "invalid_person", "/person")
    body: dict[str, object] = {"c": sorted(set(keys)), "u": person, "v": TOKEN_VERSION}
    if generation:  # U1: a person never forgotten has tokens without it, as before
        body["g"] = generation
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode(text: str) -> bytes | None:
    # Strict: the base64url alphabet only, no padding, and canonical trailing bits (the text
    # must be exactly what encoding its bytes gives), so one token has one spelling.
    if len(text) % 4 == 1 or _BASE64URL.fullmatch(text) is None:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw if _encode(raw) == text else None


def _mac(secret: bytes, payload: bytes) -> bytes:
    return hmac.new(secret, payload, hashlib.sha256).digest()


def unsubscribe_token(
    secret: bytes, person: str, categories: Iterable[str], generation: int = 0
) -> str:
    """Return the one-click unsubscribe token of a mail (rule U1).

    Args:
        secret: the instance's unsubscribe secret (at least 32 bytes).
        person: the recipient's id.
        categories: the categories of the mail's entries (any order, repeats allowed).
        generation: the recipient's generation (U3: how often the host forgot the id before
            creating it again; 0, the default, writes no ``g``).

    Raises:
        UsageError: arguments of the wrong type.
        InvalidUnsubscribe: a secret shorter than 32 bytes (``weak_secret``) and the faults of
            `token_payload`.

    Example:
        >>> unsubscribe_token(bytes(32), "ana", ["watched_page", "mention"])[:20]
        'eyJjIjpbIm1lbnRpb24i'
    """
    key = _check_secret(secret)
    payload = token_payload(person, categories, generation)
    return f"{_encode(payload)}.{_encode(_mac(key, payload))}"


def _payload_facts(payload: bytes, known_categories: Set[str]) -> Unsubscribe | None:
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or obj.keys() not in (_MEMBERS, _MEMBERS_G):
        return None
    version, person, categories = obj["v"], obj["u"], obj["c"]
    # U2: ``g`` only when present, a positive JSON integer (true is no integer here).
    generation = obj.get("g", 0)
    if "g" in obj and (type(generation) is not int or generation < 1):
        return None
    if type(version) is not int or version != TOKEN_VERSION or not isinstance(person, str):
        return None
    if not isinstance(categories, list) or not categories:
        return None
    if not all(isinstance(c, str) and c in known_categories for c in categories):
        return None
    try:
        canonical = token_payload(person, categories, generation)
    except InvalidUnsubscribe:
        return None
    if canonical != payload:
        return None
    return Unsubscribe(person=person, categories=tuple(categories), generation=generation)


def verify_unsubscribe_token(
    secret: bytes, token: str, *, known_categories: Set[str]
) -> Unsubscribe | None:
    """Return what a token asks for, or ``None`` for any invalid token (rule U2).

    The token decodes strictly (base64url alphabet only, no padding, canonical trailing bits,
    no whitespace), its MAC is compared in constant time (`hmac.compare_digest`), and only
    then is the payload read: an object with exactly ``c``, ``u`` and ``v`` (and ``g``, a
    positive JSON integer, only when present), ``v`` the JSON integer 1, ``c`` a non-empty list
    of ``known_categories``, and the bytes exactly what `token_payload` writes for them. Whether
    the generation is the id's current one is the host's to check (U3). Every failure is the
    same ``None``, saying nothing about which part failed; no string makes this raise.

    Raises:
        UsageError: ``token`` is not a string or ``secret`` not bytes (a caller's mistake).
        InvalidUnsubscribe: a secret shorter than 32 bytes (``weak_secret``).

    Example:
        >>> token = unsubscribe_token(bytes(32), "ana", ["mention"])
        >>> verify_unsubscribe_token(bytes(32), token, known_categories={"mention"})
        Unsubscribe(person='ana', categories=('mention',))
        >>> verify_unsubscribe_token(bytes(32), token + "A", known_categories={"mention"})
    """
    key = _check_secret(secret)
    if not isinstance(token, str):
        raise UsageError("invalid_type", "a token must be a string", "/token")
    head, dot, tail = token.partition(".")
    if not dot:
        return None
    payload, mac = _decode(head), _decode(tail)
    if payload is None or mac is None:
        return None
    if not hmac.compare_digest(mac, _mac(key, payload)):
        return None
    return _payload_facts(payload, known_categories)
