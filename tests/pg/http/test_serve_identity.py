"""Identity that cannot be spoofed (issue 39 point 1), over raw sockets against `notify serve`:
a header name with "_" never names the person or the administrator, on every route; the
proxy's shared secret and the signed token are the proofs a host can ask for; the settings
routes always ask for one; a non-loopback address is refused without one."""

from __future__ import annotations

import base64
import hmac
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jwt
import psycopg
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from pgworld import HOST_SCHEMA, SCHEMA
from webworld import body_json, edit, make_wiki, raw, request

from notify_core.mail import unsubscribe_token
from notify_pg.http.identity import IdentityCheck, JwtCheck, header_refusal
from notify_pg.inbox.reads import InboxPreferences, InboxReads
from notify_pg.mail.secret import unsubscribe_secret
from notify_pg.mail.settings import audit_log, instance_settings

Conn = psycopg.Connection[Any]
SECRET = "the-proxys-secret-0123456789abcdef"
KEY = "the-hosts-hmac-key-0123456789abcdef-xyz"
AUDIENCE = "notify.wiki.example"
JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def unread(conn: Conn, person: str) -> int:
    return InboxReads(SCHEMA).summary(conn, person).unread


def token(sub: Any = "ana", *, key: Any = KEY, alg: str = "HS256", **more: Any) -> str:
    return jwt.encode(claims(sub, **more), key, algorithm=alg)


def claims(sub: str = "ana", **more: Any) -> dict[str, Any]:
    return {"sub": sub, "aud": AUDIENCE, "exp": int(time.time()) + 300, **more}


def hmac_signed(header: dict[str, Any], payload: dict[str, Any], key: bytes) -> str:
    """A JWT signed by hand (PyJWT refuses some keys a forger would use)."""

    def part(value: dict[str, Any]) -> bytes:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=")

    signing = part(header) + b"." + part(payload)
    signature = base64.urlsafe_b64encode(hmac.digest(key, signing, "sha256")).rstrip(b"=")
    return (signing + b"." + signature).decode()


@contextmanager
def notify_serve(
    dsn: str, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[tuple[int, list[str]]]:
    """`notify serve` as a process: its port and, once stopped, its stderr lines."""
    command = ["serve", "--port", "0", "--schema", SCHEMA, "--host-schema", HOST_SCHEMA, *args]
    proc = subprocess.Popen(
        [sys.executable, "-m", "notify_cli", *command],
        env={**os.environ, "NOTIFY_DSN": dsn, **(env or {})},
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        while True:
            line = proc.stderr.readline()
            assert line, "notify serve ended before listening"
            lines.append(line)
            if json.loads(line)["msg"] == "listening":
                break
        yield int(json.loads(line)["port"]), lines
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
        lines += err.splitlines(keepends=True)
    assert proc.returncode == 0, err


def websocket(path: str, pairs: list[tuple[str, str]]) -> bytes:
    """A websocket handshake with the header ``pairs`` (a name may repeat), as raw bytes."""
    key = base64.b64encode(os.urandom(16)).decode()
    upgrade = [
        ("Upgrade", "websocket"),
        ("Sec-WebSocket-Key", key),
        ("Sec-WebSocket-Version", "13"),
        *pairs,
    ]
    return with_headers("GET", path, b"", upgrade).replace(
        b"Connection: close", b"Connection: Upgrade"
    )


def every_route(conn: Conn) -> list[tuple[str, str, bytes, dict[str, str]]]:
    """One request per route of `notify serve --host-schema --demo` (entries: bob's)."""
    (entry,) = [
        r[0] for r in conn.execute(f"SELECT id FROM {SCHEMA}.inbox_entries WHERE user_id = 'bob'")
    ]
    # The token is ana's: the unsubscribe routes read no identity, and bob's choices must
    # stay as they are whatever ana's requests do.
    t = unsubscribe_token(unsubscribe_secret(conn, schema=SCHEMA), "ana", ["watched_page"])
    query = urllib.parse.urlencode({"t": t})
    inbox = "/sites/s1/notifications"
    return [
        ("POST", f"/notifications/unsubscribe?{query}", b"List-Unsubscribe=One-Click", FORM),
        ("GET", f"/notifications/unsubscribe?{query}", b"", {}),
        ("GET", f"/notifications/unsubscribe/info?{query}", b"", {}),
        ("GET", f"/unsubscribe?{query}", b"", {}),
        ("GET", inbox, b"", {}),
        ("GET", f"{inbox}/summary", b"", {}),
        ("PUT", f"{inbox}/read", b"{}", JSON),
        ("PUT", f"{inbox}/{entry}/read", b"", {}),
        ("DELETE", f"{inbox}/{entry}", b"", {}),
        ("GET", "/notifications/preferences", b"", {}),
        ("PATCH", "/notifications/preferences", b'{"stop_all_email": true}', JSON),
        ("GET", "/notifications/admin/settings", b"", {}),
        ("PATCH", "/notifications/admin/settings", b'{"mail_batch_size": 7}', JSON),
        ("GET", "/demo", b"", {}),
        ("GET", "/nowhere", b"", {}),
    ]


def forged(proven: bool) -> list[list[tuple[str, str]]]:
    """Header lists that name bob (or an administrator) by a name the app must not read.

    Behind the secret, the proxy's own headers for ana come first, as a proxy that strips
    X-Notify-User (and only that spelling) from the client would send them."""
    proxy = [("X-Notify-User", "ana"), ("X-Notify-Proxy-Secret", SECRET)] if proven else []
    return [
        [*proxy, ("X-Notify_User", "bob")],
        [("x_notify_user", "bob"), *proxy],
        [*proxy, ("X-Notify_Admin", "root")],
        [("X-Notify-User", "bob"), ("X_Notify_Proxy_Secret", SECRET)],
        [*proxy, ("X-Notify-User", "bob")] if proven else [("X-Notify-User", "bob")] * 2,
    ]


def with_headers(method: str, target: str, body: bytes, pairs: list[tuple[str, str]]) -> bytes:
    """A request whose header list is given as pairs (a name may repeat)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: localhost", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in pairs]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@pytest.mark.parametrize("proven", [False, True], ids=["plain", "proxy-secret"])
def test_a_header_name_with_underscore_never_names_anyone_on_any_route(
    db_dsn: str, conn: Conn, tmp_path: Path, proven: bool
) -> None:
    """Issue 39.1: `X-Notify_User: bob` was read as X-Notify-User (both are
    HTTP_X_NOTIFY_USER in a WSGI environ). Now every route answers 400 naming the header,
    the websocket is refused, and nothing of bob's (or the instance's) changes."""
    wiki = make_wiki(conn)
    edit(conn, wiki)
    secret_file = tmp_path / "proxy-secret"
    secret_file.write_text(SECRET + "\n")
    args = ["--demo", *(["--proxy-secret-file", str(secret_file)] if proven else [])]
    routes = every_route(conn)
    with notify_serve(db_dsn, *args) as (port, lines):
        for method, target, body, extra in routes:
            for pairs in forged(proven):
                data = with_headers(method, target, body, [*extra.items(), *pairs])
                status, answer = raw(port, data)
                assert status == 400, (method, target, pairs, answer)
                error = body_json(answer)["error"]
                named = [n for n, _v in pairs if "_" in n] or ["X-Notify-User"]
                assert error["code"] == "invalid_header"
                # ASGI gives header names in lower case: the name as the server read it.
                assert error["pointer"] == f"/headers/{named[0].lower()}"
            # The same route without the forged header is served (not 400).
            good = [("X-Notify-User", "ana"), ("X-Notify-Proxy-Secret", SECRET)]
            status, answer = raw(port, with_headers(method, target, body, [*extra.items(), *good]))
            assert status != 400, (method, target, answer)
        for pairs in forged(proven):
            status, answer = raw(port, websocket("/notifications/live", pairs))
            assert status == 403, (pairs, answer)
        # Any other name with "_" is dropped, as nginx drops it: the request is served.
        status, _ = raw(
            port,
            request(
                "GET",
                "/sites/s1/notifications/summary",
                headers={
                    "X_Trace_Id": "1",
                    "X-Notify-User": "bob",
                    "X-Notify-Proxy-Secret": SECRET,
                },
            ),
        )
        assert status == 200
    assert unread(conn, "bob") == 1
    assert InboxPreferences(SCHEMA).rows(conn, ["bob"]).get("bob", {}) == {}
    assert instance_settings(conn, wiki)["mail_batch_size"] == 100
    # Only ana's own requests (the good ones) changed anything, and never as an admin.
    assert {a.actor for a in audit_log(conn, schema=SCHEMA)} <= {"ana"}
    assert not any(SECRET in line for line in lines)


def test_behind_the_proxy_secret_only_proven_requests_name_a_person(
    db_dsn: str, conn: Conn, tmp_path: Path
) -> None:
    wiki = make_wiki(conn)
    edit(conn, wiki)
    with notify_serve(db_dsn, env={"NOTIFY_PROXY_SECRET": SECRET}) as (port, lines):
        summary = "/sites/s1/notifications/summary"
        for proof in ({}, {"X-Notify-Proxy-Secret": SECRET[:-1]}, {"X-Notify-Proxy-Secret": ""}):
            status, answer = raw(
                port, request("GET", summary, headers={"X-Notify-User": "bob", **proof})
            )
            assert status == 401 and body_json(answer)["error"]["code"] == "invalid_proof"
        bob = {"X-Notify-User": "bob", "X-Notify-Proxy-Secret": SECRET}
        assert raw(port, request("GET", summary, headers=bob))[0] == 200
        status, answer = raw(
            port, request("PUT", "/sites/s1/notifications/read", b"{}", {**bob, **JSON})
        )
        assert status == 200 and len(body_json(answer)["read"]) == 1
        # The settings: X-Notify-Admin behind the same secret.
        admin = {"X-Notify-Admin": "root", "X-Notify-Proxy-Secret": SECRET}
        settings = "/notifications/admin/settings"
        assert raw(port, request("GET", settings, headers=admin))[0] == 200
        assert raw(port, request("GET", settings, headers={"X-Notify-Admin": "root"}))[0] == 401
        # The one-click unsubscribe needs no identity, so no proof either (RFC 8058).
        assert raw(port, request("GET", "/notifications/unsubscribe?t=x"))[0] == 303
    listening = next(json.loads(line) for line in lines if '"listening"' in line)
    assert listening["identity"] == "proxy_secret"
    assert not any(SECRET in line or SECRET[:-1] in line for line in lines)
    assert unread(conn, "bob") == 0 and unread(conn, "ana") == 1


def test_a_signed_token_names_the_person_and_the_administrator(
    db_dsn: str, conn: Conn, tmp_path: Path
) -> None:
    """`--jwt-key-file`: the person is the token's sub; X-Notify-User is not read; expiry,
    audience and signature are checked; an administrator is a token with notify_admin."""
    wiki = make_wiki(conn)
    edit(conn, wiki)
    key_file = tmp_path / "jwt.key"
    key_file.write_text(KEY)
    summary, settings = "/sites/s1/notifications/summary", "/notifications/admin/settings"
    args = ["--jwt-key-file", str(key_file), "--jwt-audience", AUDIENCE]
    with notify_serve(db_dsn, *args) as (port, lines):

        def get(target: str, headers: Mapping[str, str]) -> tuple[int | None, bytes]:
            return raw(port, request("GET", target, headers=headers))

        now = int(time.time())
        refused = [
            {"X-Notify-User": "bob"},  # the plain header names nobody now
            {"X-Notify-Identity": token(exp=now - 60)},
            {"X-Notify-Identity": token(aud="another.example")},
            {"X-Notify-Identity": token(key=KEY + "-but-another")},
            {"X-Notify-Identity": jwt.encode({"sub": "bob", "aud": AUDIENCE}, KEY)},  # no exp
            {"X-Notify-Identity": token(sub=7)},
            {"X-Notify-Identity": token(key=KEY * 2, alg="HS512")},  # not the one configured
            {"X-Notify-Identity": token().rsplit(".", 1)[0] + "."},  # signature cut off
            {"X-Notify-Identity": "not a token"},
        ]
        unsigned = hmac_signed({"alg": "none", "typ": "JWT"}, claims("bob"), b"").rsplit(".", 1)
        refused.append({"X-Notify-Identity": unsigned[0] + "."})
        for headers in refused:
            status, answer = get(summary, headers)
            assert status == 401, (headers, answer)
            assert body_json(answer)["error"]["code"] == "invalid_token"
        # ana's token with bob's plain header: ana's inbox is read, bob's is not touched.
        ana = {"X-Notify-Identity": token("ana"), "X-Notify-User": "bob", **JSON}
        status, answer = raw(port, request("PUT", "/sites/s1/notifications/read", b"{}", ana))
        assert status == 200 and len(body_json(answer)["read"]) == 1
        assert get(settings, {"X-Notify-Identity": token("root", notify_admin=True)})[0] == 200
        for headers in (
            {"X-Notify-Identity": token("ana")},
            {"X-Notify-Identity": token("ana", notify_admin="true")},
            {"X-Notify-Identity": token("ana"), "X-Notify-Admin": "ana"},
        ):
            status, answer = get(settings, headers)
            assert (status, body_json(answer)["error"]["code"]) == (403, "not_admin")
        assert raw(port, websocket("/notifications/live", []))[0] == 403
        ws = websocket("/notifications/live", [("X-Notify-Identity", token("ana"))])
        assert raw(port, ws, timeout=2)[0] == 101
    assert unread(conn, "ana") == 0 and unread(conn, "bob") == 1
    assert not any(KEY in line for line in lines)


def test_a_token_signed_with_a_private_key_is_verified_with_the_public_one(
    db_dsn: str, conn: Conn, tmp_path: Path
) -> None:
    make_wiki(conn)
    private = ec.generate_private_key(ec.SECP256R1())
    public = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (tmp_path / "host.pem").write_bytes(public)
    args = ["--jwt-key-file", str(tmp_path / "host.pem"), "--jwt-audience", AUDIENCE]
    args += ["--jwt-algorithm", "ES256", "--jwt-issuer", "https://wiki.example"]
    summary = "/sites/s1/notifications/summary"
    signed = token("ana", key=private, alg="ES256", iss="https://wiki.example")
    with notify_serve(db_dsn, *args) as (port, _lines):
        assert raw(port, request("GET", summary, headers={"X-Notify-Identity": signed}))[0] == 200
        for other in (
            token("ana", key=private, alg="ES256"),  # no issuer
            token("ana", key=private, alg="ES256", iss="https://elsewhere.example"),
            token("ana", key=ec.generate_private_key(ec.SECP256R1()), alg="ES256"),
            # The public key used as an HMAC secret (the algorithm confusion attack).
            hmac_signed({"alg": "HS256", "typ": "JWT"}, claims(iss="https://wiki.example"), public),
        ):
            status, _ = raw(port, request("GET", summary, headers={"X-Notify-Identity": other}))
            assert status == 401


def serve_refusal(*args: str, env: Mapping[str, str] | None = None) -> str:
    """`notify serve ARGS` refused before any database (the DSN reaches none): its stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "notify_cli", "serve", "--port", "0", *args],
        env={**os.environ, "NOTIFY_DSN": "host=/nonexistent port=1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("notify: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr


def test_serve_refuses_a_public_address_or_a_weak_proof_in_one_line(tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.write_text("tiny-secret-123\n")
    good = tmp_path / "good"
    good.write_text(SECRET)
    for host in ("0.0.0.0", "::", "192.0.2.7", "wiki.example"):
        said = serve_refusal("--host", host)
        assert f"--host {host} is not a loopback address" in said
        assert "--insecure-identity-header" in said
    said = serve_refusal("--proxy-secret-file", str(short))
    assert "at least 32 bytes" in said and "tiny-secret" not in said
    said = serve_refusal("--proxy-secret-file", str(tmp_path / "absent"))
    assert "--proxy-secret-file" in said and "No such file" in said
    said = serve_refusal("--proxy-secret-file", str(good), env={"NOTIFY_PROXY_SECRET": SECRET})
    assert "not both" in said and SECRET not in said
    said = serve_refusal("--jwt-key-file", str(good))
    assert "--jwt-audience" in said
    said = serve_refusal("--jwt-audience", AUDIENCE)
    assert "--jwt-key-file" in said
    said = serve_refusal("--jwt-audience", AUDIENCE, env={"NOTIFY_JWT_KEY": "short-key"})
    assert "at least 32 bytes" in said and "short-key" not in said
    said = serve_refusal(
        "--jwt-audience", AUDIENCE, "--jwt-algorithm", "ES256", env={"NOTIFY_JWT_KEY": KEY}
    )
    assert "not a key for ES256" in said and KEY not in said


@pytest.mark.parametrize("told", ["--insecure-identity-header", "--proxy-secret-file"])
def test_serve_binds_a_public_address_when_told_or_proven(
    db_dsn: str, tmp_path: Path, told: str
) -> None:
    secret = tmp_path / "secret"
    secret.write_text(SECRET)
    args = [told] if told.startswith("--insecure") else [told, str(secret)]
    with notify_serve(db_dsn, "--host", "0.0.0.0", *args) as (port, lines):
        headers = {"X-Notify-User": "ana", "X-Notify-Proxy-Secret": SECRET}
        assert (
            raw(port, request("GET", "/sites/s1/notifications/summary", headers=headers))[0] == 200
        )
    said = [json.loads(line) for line in lines]
    warned = [line for line in said if line["msg"] == "identity header trusted from any client"]
    listening = next(line for line in said if line["msg"] == "listening")
    if told.startswith("--insecure"):
        assert listening["identity"] == "header" and len(warned) == 1
    else:
        assert listening["identity"] == "proxy_secret" and warned == []


def test_header_refusal_names_a_forged_or_repeated_identity_header() -> None:
    """The rule itself: any case, "_" anywhere in the name; other names pass."""
    for names in (
        ["X_NOTIFY_USER"],
        ["x-notify_admin"],
        ["X-Notify-Identity", "x-notify-identity"],
    ):
        refused = header_refusal(names)
        assert refused is not None and refused.status == 400
    assert header_refusal(["X_Trace", "X-Notify-User", "X-Notify-Usr_"]) is None
    # A ~ in a name is escaped in the pointer (RFC 6901).
    refused = header_refusal(["X-Notify_User~"])
    assert refused is None
    refused = header_refusal(["x-notify_user", "x-notify-user"])
    assert refused is not None and b'"/headers/x-notify_user"' in refused.body


def test_identity_check_refuses_weak_secrets_and_keeps_them_out_of_its_repr() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        IdentityCheck(proxy_secret=b"short")
    with pytest.raises(ValueError, match="printable"):
        IdentityCheck(proxy_secret=b"a secret with spaces in it, 0123456789")
    check = IdentityCheck(proxy_secret=SECRET.encode(), jwt=JwtCheck(key=KEY, audience="a"))
    assert SECRET not in repr(check) and KEY not in repr(check)
