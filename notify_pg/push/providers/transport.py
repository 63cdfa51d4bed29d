"""What the HTTP providers share: the client, Retry-After, the token's hash in logs.

Every provider talks HTTP through one `httpx.Client` per host (`client`): HTTP/2 where the
provider speaks it (APNs, FCM), so one connection multiplexes the concurrent sends of the
worker's threads; a ``ca_file`` trusts a private CA instead of the system's (tests, staging).
"""

from __future__ import annotations

import email.utils
import logging
import ssl
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import httpx

__all__ = ["client", "log_answer", "retry_after", "tls_context"]

_log = logging.getLogger("notify_pg.worker")

#: The longest Retry-After taken from a provider: a larger one is cut to this (the send is
#: dropped as expired at ``push.max_age`` anyway, R2).
_MAX_RETRY_AFTER = timedelta(days=1)


def client(
    *,
    http2: bool,
    ca_file: str | None,
    timeout: float,
    connections: int = 1,
) -> httpx.Client:
    """An HTTP client for one provider host.

    Args:
        http2: speak HTTP/2 (ALPN over TLS): the concurrent requests share one connection.
        ca_file: a PEM file of CA certificates to trust instead of the system's.
        timeout: seconds for connecting and for each read and write.
        connections: connections kept per host (HTTP/1.1 needs one per concurrent request).
    """
    return httpx.Client(
        http2=http2,
        http1=True,
        verify=tls_context(ca_file),
        timeout=httpx.Timeout(timeout),
        limits=httpx.Limits(
            max_connections=connections,
            max_keepalive_connections=connections,
            keepalive_expiry=600,
        ),
        trust_env=False,  # a proxy from the environment would see every push
        follow_redirects=False,
    )


def tls_context(ca_file: str | None) -> ssl.SSLContext:
    """A client TLS context that trusts ``ca_file`` (a PEM file of CA certificates), or the
    system's CAs when None."""
    return ssl.create_default_context(cafile=ca_file)


def retry_after(headers: Mapping[str, str], now: datetime | None = None) -> timedelta:
    """The Retry-After of an answer: delay seconds or an HTTP date (RFC 9110 10.2.3); zero
    when absent or unreadable, at most one day."""
    value = headers.get("retry-after")
    if not value:
        return timedelta(0)
    value = value.strip()
    if value.isdigit():
        delay = timedelta(seconds=int(value))
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return timedelta(0)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        delay = when - (now or datetime.now(UTC))
    return max(timedelta(0), min(delay, _MAX_RETRY_AFTER))


def log_answer(provider: str, status: int, reason: str, token_ref: str) -> None:
    """One line for an answer that is not an acceptance: the status and the provider's reason
    code, the token's hash prefix at most (never the token, the payload or an address)."""
    _log.info(
        "push provider answer",
        extra={
            "fields": {
                "provider": provider,
                "status": status,
                "reason": reason,
                "token_ref": token_ref,
            }
        },
    )
