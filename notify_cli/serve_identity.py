"""The identity options of ``notify serve``: the proof a host's requests carry (issue 39.1).

`identity_options` adds ``--proxy-secret-file``, ``--jwt-key-file``, ``--jwt-audience``,
``--jwt-issuer``, ``--jwt-algorithm`` and ``--insecure-identity-header``; `read_identity` turns
them into a `notify_pg.http.identity.IdentityCheck` and refuses to serve a non-loopback
address without a proof unless told ``--insecure-identity-header``. Secrets come from files
or the environment (``NOTIFY_PROXY_SECRET``, ``NOTIFY_JWT_KEY``), never from the command
line (where ``ps`` shows them), and no message or log line holds them.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from typing import Any, Final, TypeVar

import click

from notify_cli.options import BadInput, Utf8Text

__all__ = ["JWT_KEY_ENV", "PROXY_SECRET_ENV", "identity_options", "is_loopback", "read_identity"]

#: The environment variable that may hold the proxy secret instead of a file.
PROXY_SECRET_ENV: Final = "NOTIFY_PROXY_SECRET"
#: The environment variable that may hold the token key instead of a file.
JWT_KEY_ENV: Final = "NOTIFY_JWT_KEY"
#: The token algorithms offered (``notify_pg.http.identity.JWT_ALGORITHMS``, kept here so
#: that ``--help`` needs no import of the serve extra).
_ALGORITHMS: Final = (
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

F = TypeVar("F", bound=Callable[..., Any])


def identity_options(command: F) -> F:
    """Add the identity options to ``command`` (its function takes them as keywords)."""
    options = [
        click.option(
            "--proxy-secret-file",
            metavar="PATH",
            type=click.Path(dir_okay=False),
            help="Believe X-Notify-User and X-Notify-Admin only on requests carrying this "
            "file's secret (at least 32 printable ASCII bytes) in X-Notify-Proxy-Secret, "
            f"as the host's proxy sets it. {PROXY_SECRET_ENV} may hold the secret instead.",
        ),
        click.option(
            "--jwt-key-file",
            metavar="PATH",
            type=click.Path(dir_okay=False),
            help="Take the person from a signed token in X-Notify-Identity instead of "
            "X-Notify-User: a JWT verified with this key (HMAC key of 32 bytes or more, or "
            "a PEM public key), with exp and aud required, the person in sub and "
            f'"notify_admin": true for an administrator. {JWT_KEY_ENV} may hold the key '
            "instead.",
        ),
        click.option(
            "--jwt-audience",
            metavar="TEXT",
            type=Utf8Text(),
            help="The aud a token must name (needed with a token key).",
        ),
        click.option(
            "--jwt-issuer", metavar="TEXT", type=Utf8Text(), help="The iss a token must name."
        ),
        click.option(
            "--jwt-algorithm",
            type=click.Choice(_ALGORITHMS),
            default="HS256",
            show_default=True,
            help="The algorithm tokens are signed with.",
        ),
        click.option(
            "--insecure-identity-header",
            is_flag=True,
            help="Serve an address that is not loopback without a proxy secret or token key: "
            "then anyone who reaches the port acts as whoever X-Notify-User names.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address to listen on) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve to anything


def read_identity(
    *,
    host: str,
    proxy_secret_file: str | None,
    jwt_key_file: str | None,
    jwt_audience: str | None,
    jwt_issuer: str | None,
    jwt_algorithm: str,
    insecure_identity_header: bool,
) -> Any:
    """The `IdentityCheck` the options ask for, or `BadInput` (one line, no secret in it).

    Raises:
        BadInput: a secret or key that cannot be read or is too weak, a token key without
            an audience, or a non-loopback ``host`` without proof or
            ``--insecure-identity-header``.
    """
    from notify_pg.http.identity import IdentityCheck, JwtCheck

    secret = _secret("--proxy-secret-file", proxy_secret_file, PROXY_SECRET_ENV)
    key = _secret("--jwt-key-file", jwt_key_file, JWT_KEY_ENV)
    if key is None and (jwt_audience is not None or jwt_issuer is not None):
        raise BadInput(f"--jwt-audience and --jwt-issuer need --jwt-key-file (or {JWT_KEY_ENV})")
    jwt = None
    if key is not None:
        if not jwt_audience:
            raise BadInput("--jwt-key-file needs --jwt-audience (the aud tokens must name)")
        try:
            jwt = JwtCheck(
                key=key, audience=jwt_audience, algorithms=(jwt_algorithm,), issuer=jwt_issuer
            )
        except ValueError as exc:
            raise BadInput(f"--jwt-key-file: {exc}") from None
    try:
        identity = IdentityCheck(proxy_secret=secret, jwt=jwt)
    except ValueError as exc:
        raise BadInput(f"--proxy-secret-file: {exc}") from None
    if not identity.proven and not insecure_identity_header and not is_loopback(host):
        raise BadInput(
            f"--host {host} is not a loopback address: anyone reaching it could name any "
            "person in X-Notify-User; give --proxy-secret-file or --jwt-key-file "
            "(docs/operators.md), or --insecure-identity-header"
        )
    return identity


def _secret(option: str, path: str | None, env: str) -> bytes | None:
    """The bytes of a secret file (one trailing line end dropped) or of ``env``."""
    given = os.environ.get(env) or None
    if path is not None and given is not None:
        raise BadInput(f"give {option} or {env}, not both")
    if given is not None:
        return given.encode("utf-8").rstrip(b"\r\n")
    if path is None:
        return None
    try:
        with open(path, "rb") as file:
            return file.read().rstrip(b"\r\n")
    except OSError as exc:
        raise BadInput(f"{option} {path}: {exc.strerror or exc}") from None
