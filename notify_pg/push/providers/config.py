"""The providers of a worker, read from a TOML file (``notify worker --providers FILE``).

One table per provider (``[apns]``, ``[fcm]``, ``[webpush]``, ``[unifiedpush]``) names its ids,
its key file and, for tests and staging, its endpoints and a CA to trust; top-level
``pause_s`` and ``timeout_s`` apply to all, a table's own override them. Each secret (the APNs
``.p8`` key, the FCM service account, the VAPID key) comes from a file (``*_file``) or from an
environment variable (``*_env``, the variable's name): the file names only where it is, so the
configuration itself holds no secret. A secret is read and checked once, at start; no message
of this module shows one (only the file's path or the variable's name). Example::

    [apns]
    team_id = "TEAM123456"
    key_id = "KEY1234567"
    key_file = "/etc/notify/apns.p8"

    [fcm]
    service_account_env = "NOTIFY_FCM_ACCOUNT"

    [webpush]
    vapid_key_file = "/etc/notify/vapid.pem"
    subject = "mailto:ops@example.com"

See docs/push-providers.md for every key.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from notify_pg.push.providers import PushProvider
from notify_pg.push.providers.apns import APNS_PRODUCTION, APNS_SANDBOX, ApnsKey, ApnsProvider
from notify_pg.push.providers.fcm import FcmProvider, ServiceAccount
from notify_pg.push.providers.health import ProviderAlerts
from notify_pg.push.providers.webpush import Vapid, WebPushProvider

__all__ = ["PROVIDER_NAMES", "ProviderConfigError", "load_providers", "read_providers"]

#: A secret file larger than this is refused (a key is a few kilobytes; /dev/zero never ends).
_SECRET_LIMIT: Final = 64 * 1024

_COMMON: Final = {"pause_s", "timeout_s", "ca_file"}
_KEYS: Final[dict[str, set[str]]] = {
    "apns": _COMMON
    | {
        "team_id",
        "key_id",
        "key_file",
        "key_env",
        "production_url",
        "sandbox_url",
        "token_refresh_s",
    },
    "fcm": _COMMON | {"service_account_file", "service_account_env", "url", "token_uri"},
    "webpush": _COMMON | {"vapid_key_file", "vapid_key_env", "subject", "connections"},
}
_KEYS["unifiedpush"] = _KEYS["webpush"]
#: The providers a configuration may name (``push_registrations.provider`` values).
PROVIDER_NAMES: Final = tuple(sorted(_KEYS))


class ProviderConfigError(Exception):
    """The provider configuration cannot be used; the message says why (never a secret)."""


def _number(table: Mapping[str, Any], key: str, where: str, default: float) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ProviderConfigError(f"{where}.{key} must be a positive number")
    return float(value)


def _text(table: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or not value:
        raise ProviderConfigError(f"{where}.{key} must be a non-empty string")
    return value


def _secret(
    table: Mapping[str, Any], name: str, where: str, base: Path, environ: Mapping[str, str]
) -> str:
    """The secret ``name`` from ``name_file`` or ``name_env``: exactly one of them."""
    file_key, env_key = f"{name}_file", f"{name}_env"
    if (file_key in table) == (env_key in table):
        raise ProviderConfigError(f"{where}: give exactly one of {file_key} and {env_key}")
    if env_key in table:
        variable = _text(table, env_key, where)
        value = environ.get(variable)
        if not value:
            raise ProviderConfigError(f"{where}.{env_key}: the variable {variable} is not set")
        return value
    path = base / _text(table, file_key, where)
    try:
        with path.open("rb") as handle:
            data = handle.read(_SECRET_LIMIT + 1)
    except OSError as exc:
        raise ProviderConfigError(
            f"{where}.{file_key} {path}: cannot read ({exc.strerror or exc})"
        ) from None
    if len(data) > _SECRET_LIMIT:
        raise ProviderConfigError(f"{where}.{file_key} {path}: larger than a key can be")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ProviderConfigError(f"{where}.{file_key} {path}: not text") from None


def _ca(table: Mapping[str, Any], where: str, base: Path) -> str | None:
    if "ca_file" not in table:
        return None
    path = base / _text(table, "ca_file", where)
    if not path.is_file():
        raise ProviderConfigError(f"{where}.ca_file {path}: no such file")
    return str(path)


def _apns(table: Mapping[str, Any], ctx: _Context) -> PushProvider:
    text = ctx.secret(table, "key", "apns")
    try:
        key = ApnsKey.from_p8(
            text, key_id=_text(table, "key_id", "apns"), team_id=_text(table, "team_id", "apns")
        )
    except ValueError as exc:
        raise ProviderConfigError(f"apns key: {exc}") from None
    refresh = timedelta(seconds=_number(table, "token_refresh_s", "apns", 3000))
    if not timedelta(minutes=20) <= refresh < timedelta(hours=1):
        raise ProviderConfigError("apns.token_refresh_s lies between 1200 and 3599")
    return ApnsProvider(
        key,
        production_url=_text(table, "production_url", "apns", APNS_PRODUCTION),
        sandbox_url=_text(table, "sandbox_url", "apns", APNS_SANDBOX),
        refresh=refresh,
        **ctx.common(table, "apns"),
    )


def _fcm(table: Mapping[str, Any], ctx: _Context) -> PushProvider:
    text = ctx.secret(table, "service_account", "fcm")
    try:
        account = ServiceAccount.from_json(text)
    except ValueError as exc:
        raise ProviderConfigError(f"fcm service account: {exc}") from None
    token_uri = _text(table, "token_uri", "fcm") if "token_uri" in table else None
    return FcmProvider(
        account,
        url=_text(table, "url", "fcm", "https://fcm.googleapis.com"),
        token_uri=token_uri,
        **ctx.common(table, "fcm"),
    )


def _webpush(name: str) -> Callable[[Mapping[str, Any], _Context], PushProvider]:
    def build(table: Mapping[str, Any], ctx: _Context) -> PushProvider:
        text = ctx.secret(table, "vapid_key", name)
        subject = _text(table, "subject", name)
        if not subject.startswith(("mailto:", "https://")):
            raise ProviderConfigError(f"{name}.subject is a mailto: or https:// contact")
        try:
            vapid = Vapid.from_text(text, subject)
        except ValueError as exc:
            raise ProviderConfigError(f"{name} vapid key: {exc}") from None
        connections = int(_number(table, "connections", name, 32))
        return WebPushProvider(name, vapid, connections=connections, **ctx.common(table, name))

    return build


_BUILDERS: Final = {
    "apns": _apns,
    "fcm": _fcm,
    "webpush": _webpush("webpush"),
    "unifiedpush": _webpush("unifiedpush"),
}


class _Context:
    def __init__(
        self,
        top: Mapping[str, Any],
        base: Path,
        environ: Mapping[str, str],
        max_age: timedelta,
        alerts: ProviderAlerts | None,
    ) -> None:
        self.top = top
        self.base = base
        self.environ = environ
        self.max_age = max_age
        self.alerts = alerts

    def secret(self, table: Mapping[str, Any], name: str, where: str) -> str:
        return _secret(table, name, where, self.base, self.environ)

    def common(self, table: Mapping[str, Any], where: str) -> dict[str, Any]:
        pause = _number(table, "pause_s", where, _number(self.top, "pause_s", "top", 300))
        timeout = _number(table, "timeout_s", where, _number(self.top, "timeout_s", "top", 10))
        return {
            "ca_file": _ca(table, where, self.base),
            "timeout": timeout,
            "max_age": self.max_age,
            "pause": timedelta(seconds=pause),
            "alerts": self.alerts,
        }


def read_providers(
    text: str,
    *,
    base: Path = Path("."),
    max_age: timedelta = timedelta(hours=1),
    alerts: ProviderAlerts | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[PushProvider]:
    """Build the providers a configuration's TOML text names, each key checked.

    Args:
        text: the TOML.
        base: where relative file names start (the configuration file's folder).
        max_age: ``push.max_age`` (the pushes' expiry at the provider).
        alerts: where a provider's pause is reported.
        environ: the environment the ``*_env`` keys read (default: the process's).

    Raises:
        ProviderConfigError: not TOML, an unknown table or key, a missing or bad value, a
            secret that cannot be read or used.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProviderConfigError(f"not TOML: {exc}") from None
    env = os.environ if environ is None else environ
    top = {k: v for k, v in data.items() if not isinstance(v, dict)}
    unknown = sorted(set(top) - {"pause_s", "timeout_s"})
    unknown += sorted(k for k, v in data.items() if isinstance(v, dict) and k not in _KEYS)
    if unknown:
        raise ProviderConfigError(
            f"unknown key or table {unknown[0]!r} (tables: {', '.join(PROVIDER_NAMES)})"
        )
    ctx = _Context(top, base, env, max_age, alerts)
    providers: list[PushProvider] = []
    for name, table in data.items():
        if not isinstance(table, dict):
            continue
        extra = sorted(set(table) - _KEYS[name])
        if extra:
            raise ProviderConfigError(f"{name}: unknown key {extra[0]!r}")
        providers.append(_BUILDERS[name](table, ctx))
    return providers


def load_providers(
    path: str,
    *,
    max_age: timedelta = timedelta(hours=1),
    alerts: ProviderAlerts | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[PushProvider]:
    """Build the providers of a configuration file (`read_providers`; relative file names
    start at the file's folder).

    Raises:
        ProviderConfigError: the file cannot be read, or `read_providers` refuses it.
    """
    file = Path(path)
    try:
        text = file.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProviderConfigError(f"cannot read {path}: {exc}") from None
    return read_providers(text, base=file.parent, max_age=max_age, alerts=alerts, environ=environ)
