"""Who a request of the reference app acts for, and the proof that the host sent it.

The inbox, preference and live routes act for a person; the settings routes for an
administrator. `IdentityCheck` reads both from a request's headers, in one of three ways:

- **plain headers** (no proof): the person is the `USER_HEADER` (``X-Notify-User``) as the
  request carries it. Anyone who reaches the port can name anyone: only for loopback, or a
  proxy that removes the header from clients and sets it (``notify serve`` refuses any
  other address unless told ``--insecure-identity-header``). The settings routes are never
  served so: they answer ``403`` ``admin_needs_proof``.
- **a shared secret** (``proxy_secret``): the same headers, believed only on a request that
  carries the `PROXY_SECRET_HEADER` with the host's secret (compared in constant time); the
  administrator is the `ADMIN_HEADER` (``X-Notify-Admin``).
- **a signed token** (``jwt``, `JwtCheck`): the `TOKEN_HEADER` (``X-Notify-Identity``) holds
  a JWT signed with the host's key, with an expiry and the host's audience; the person is its
  ``sub``, an administrator a token whose `ADMIN_CLAIM` is ``true``. The plain headers are
  not read at all.

Both proofs may be required at once. A refusal is a JSON problem ``{"error": {"code", ...}}``:
``401`` ``unauthenticated`` (no person named), ``400`` ``invalid_user`` (a person that cannot
be stored), ``401`` ``invalid_proof`` (secret missing or wrong) or ``invalid_token`` (token
missing, expired, for another audience, or not signed with the key), ``403``
``admin_needs_proof`` or ``not_admin``. The secret and the token are never logged or echoed.

A header name differing from these only by ``_`` for ``-`` (``X-Notify_User``) is the same
key in a WSGI environ (``HTTP_X_NOTIFY_USER``); the reference server refuses such a request
before the app (`notify_pg.http.server`), and a host serving the WSGI app itself uses a server
that drops names with ``_`` (Werkzeug's, gunicorn 22's default) or a proxy that does (nginx).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from notify_pg.http.handlers import Response

__all__ = [
    "ADMIN_CLAIM",
    "ADMIN_HEADER",
    "IDENTITY_HEADERS",
    "JWT_ALGORITHMS",
    "PROXY_SECRET_HEADER",
    "TOKEN_HEADER",
    "USER_HEADER",
    "HeaderLookup",
    "IdentityCheck",
    "JwtCheck",
    "header_refusal",
    "person_of",
]

#: The header the person is taken from (plain headers, or behind the shared secret).
USER_HEADER: Final = "X-Notify-User"
#: The header the administrator of the settings routes is taken from (behind the secret).
ADMIN_HEADER: Final = "X-Notify-Admin"
#: The header carrying the host's shared secret (``notify serve --proxy-secret-file``).
PROXY_SECRET_HEADER: Final = "X-Notify-Proxy-Secret"
#: The header carrying the signed identity token (``notify serve --jwt-key-file``).
TOKEN_HEADER: Final = "X-Notify-Identity"
#: The claim that makes a token's ``sub`` an administrator (``true``; anything else: not).
ADMIN_CLAIM: Final = "notify_admin"
#: Every header the identity is read from, lower case: a request naming one with ``_`` in
#: place of ``-``, or naming one twice, is refused (`header_refusal`).
IDENTITY_HEADERS: Final = frozenset(
    h.lower() for h in (USER_HEADER, ADMIN_HEADER, PROXY_SECRET_HEADER, TOKEN_HEADER)
)
#: The algorithms a host's key may sign with (never ``none``).
JWT_ALGORITHMS: Final = (
    "HS256",
    "HS384",
    "HS512",
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)
#: A shared secret or HMAC key shorter than this is refused (RFC 7518 3.2 for HS256).
MIN_SECRET_BYTES: Final = 32

#: Reads one request header by name (case-insensitive), ``None`` when absent.
HeaderLookup = Callable[[str], str | None]

_JSON: Final = (("Content-Type", "application/json"), ("Cache-Control", "no-store"))
_UNAUTHENTICATED: Final = Response(
    status=401, headers=_JSON, body=b'{"error":{"code":"unauthenticated"}}'
)


def person_of(header: str | None) -> str | None:
    """The person a header or claim value names, or ``None`` when it names nobody usable.

    A NUL cannot be stored by PostgreSQL: such a person is a bad request, never a storage
    failure.
    """
    return header if header and "\x00" not in header else None


def _problem(status: int, code: str, message: str | None = None, header: str = "") -> Response:
    error: dict[str, str] = {"code": code}
    if message is not None:
        error["message"] = message
    if header:
        # RFC 6901: a "~" of the name is "~0" (a "/" cannot be in a header name).
        error["pointer"] = "/headers/" + header.replace("~", "~0")
    body = json.dumps({"error": error}, separators=(",", ":")).encode("utf-8")
    return Response(status=status, headers=_JSON, body=body)


def header_refusal(names: list[str]) -> Response | None:
    """The ``400`` for a request whose header names (as sent) could forge an identity.

    A name with ``_`` that reads as an identity header once ``_`` is ``-``
    (``X-Notify_User``), or an identity header given twice: a WSGI environ would merge them
    into the real header's value. Other names with ``_`` are not refused here: the server
    drops them, as nginx does. ``None`` when nothing is wrong.
    """
    seen: set[str] = set()
    for name in names:
        lower = name.lower()
        if "_" in lower and lower.replace("_", "-") in IDENTITY_HEADERS:
            message = f"a header name with '_' is refused: {name}"
            return _problem(400, "invalid_header", message, name)
        if lower in IDENTITY_HEADERS:
            if lower in seen:
                return _problem(400, "invalid_header", f"a header given twice: {name}", name)
            seen.add(lower)
    return None


@attrs.frozen(kw_only=True)
class JwtCheck:
    """How a signed identity token is verified (PyJWT, the ``serve`` extra).

    Args:
        key: the host's key: the shared HMAC key for ``HS*``, a PEM public key otherwise.
        audience: the ``aud`` a token must name (this service, as the host calls it).
        algorithms: the algorithms accepted (of `JWT_ALGORITHMS`).
        issuer: the ``iss`` a token must name; ``None``: not checked.
        leeway: seconds of clock difference allowed on ``exp`` and ``nbf``.

    Raises:
        ValueError: an unknown algorithm, a key that cannot be read for it, an HMAC key
            shorter than 32 bytes, or an empty audience (the message never holds the key).
    """

    key: str | bytes = attrs.field(repr=False)
    audience: str
    algorithms: tuple[str, ...] = ("HS256",)
    issuer: str | None = None
    leeway: float = 10.0
    _prepared: Any = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        from jwt.algorithms import get_default_algorithms
        from jwt.exceptions import InvalidKeyError

        if not self.audience:
            raise ValueError("the token's audience must not be empty")
        known = get_default_algorithms()
        prepared = []
        for name in self.algorithms:
            if name not in JWT_ALGORITHMS or name not in known:
                raise ValueError(f"unknown token algorithm {name!r}")
            raw = self.key.encode("utf-8") if isinstance(self.key, str) else self.key
            if name.startswith("HS") and len(raw) < MIN_SECRET_BYTES:
                raise ValueError(f"an {name} key must have at least {MIN_SECRET_BYTES} bytes")
            try:
                prepared.append(known[name].prepare_key(self.key))
            except (InvalidKeyError, ValueError, TypeError):
                raise ValueError(f"the key is not a key for {name}") from None
        if not prepared:
            raise ValueError("no token algorithm given")
        if len({type(p) for p in prepared}) > 1:
            raise ValueError("the algorithms need different kinds of key: give one kind")
        object.__setattr__(self, "_prepared", prepared[0])

    def claims(self, token: str) -> Mapping[str, Any] | None:
        """The verified claims of ``token``, or ``None`` when it is not to be believed
        (signature, ``exp``, ``aud``, ``iss``, ``nbf``; ``exp``, ``aud`` and ``sub`` are
        required)."""
        import jwt

        required = ["exp", "aud", "sub"] + (["iss"] if self.issuer is not None else [])
        try:
            return jwt.decode(
                token,
                self._prepared,
                algorithms=list(self.algorithms),
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": required},
            )
        except jwt.PyJWTError:
            return None


@attrs.frozen(kw_only=True)
class IdentityCheck:
    """The reference app's reading of who a request acts for (see the module's docstring).

    Args:
        proxy_secret: the host's shared secret (`PROXY_SECRET_HEADER`); ``None``: not asked.
        jwt: the verification of the signed token (`TOKEN_HEADER`); ``None``: plain headers.

    Raises:
        ValueError: a secret shorter than 32 bytes, or with characters a header cannot carry.
    """

    proxy_secret: bytes | None = attrs.field(default=None, repr=False)
    jwt: JwtCheck | None = None

    def __attrs_post_init__(self) -> None:
        secret = self.proxy_secret
        if secret is None:
            return
        if len(secret) < MIN_SECRET_BYTES:
            raise ValueError(f"the proxy secret must have at least {MIN_SECRET_BYTES} bytes")
        if any(b <= 0x20 or b >= 0x7F for b in secret):
            raise ValueError("the proxy secret must be printable ASCII without spaces")

    @property
    def proven(self) -> bool:
        """Whether a request must prove that the host sent it (a secret or a token)."""
        return self.proxy_secret is not None or self.jwt is not None

    def person(self, header: HeaderLookup) -> str | Response:
        """The person a request acts for, or the refusal to answer with."""
        refused = self._secret(header)
        if refused is not None:
            return refused
        if self.jwt is not None:
            claims = self._claims(header)
            if isinstance(claims, Response):
                return claims
            return person_of(claims["sub"]) or _invalid_token()
        named = header(USER_HEADER)
        person = person_of(named)
        if person is not None:
            return person
        if named:  # present, but no person can be named so
            return Response(
                status=400,
                headers=_JSON,
                body=b'{"error":{"code":"invalid_user","pointer":"/headers/X-Notify-User"}}',
            )
        return _UNAUTHENTICATED

    def admin(self, header: HeaderLookup) -> str | Response:
        """The administrator a settings request acts for, or the refusal to answer with."""
        if not self.proven:
            message = "the settings routes need a proxy secret or an identity token"
            return _problem(403, "admin_needs_proof", message)
        refused = self._secret(header)
        if refused is not None:
            return refused
        if self.jwt is not None:
            claims = self._claims(header)
            if isinstance(claims, Response):
                return claims
            admin = person_of(claims["sub"])
            if admin is None:
                return _invalid_token()
            if claims.get(ADMIN_CLAIM) is not True:
                return _problem(403, "not_admin", "the token does not name an administrator")
            return admin
        named = header(ADMIN_HEADER)
        admin = person_of(named)
        if admin is not None:
            return admin
        if named:
            return Response(
                status=400,
                headers=_JSON,
                body=b'{"error":{"code":"invalid_user","pointer":"/headers/X-Notify-Admin"}}',
            )
        return _UNAUTHENTICATED

    def _secret(self, header: HeaderLookup) -> Response | None:
        """``None`` when no secret is asked or the request carries it, else the ``401``."""
        if self.proxy_secret is None:
            return None
        given = header(PROXY_SECRET_HEADER)
        # Constant time, also in the length: the digest of both, never the bytes compared.
        if given is not None and hmac.compare_digest(
            _digest(given.encode("latin-1")), _digest(self.proxy_secret)
        ):
            return None
        message = "the request does not carry the host's proxy secret"
        return _problem(401, "invalid_proof", message, PROXY_SECRET_HEADER)

    def _claims(self, header: HeaderLookup) -> Mapping[str, Any] | Response:
        assert self.jwt is not None
        token = header(TOKEN_HEADER)
        claims = self.jwt.claims(token) if token else None
        if claims is None or not isinstance(claims.get("sub"), str):
            return _invalid_token()
        return claims


def _invalid_token() -> Response:
    message = "no identity token, or one expired, for another audience, or not signed by the host"
    return _problem(401, "invalid_token", message, TOKEN_HEADER)


def _digest(value: bytes) -> bytes:
    return hmac.digest(b"notify proxy secret", value, "sha256")
