"""E6 on the wire: notify_pg.mail.smtp against a real SMTP server (aiosmtpd) on loopback.

Mails arrive with both bodies and every header; a DKIM signature verifies on the received bytes
and covers both List-Unsubscribe headers; a 451 answer is a typed, temporary failure; a batch
reuses one connection and goes on past a refused message.
"""

from __future__ import annotations

import email
import socket
import ssl
from collections.abc import Iterator
from datetime import UTC, datetime
from email import policy
from pathlib import Path
from typing import Any

import dkim
import pytest
from aiosmtpd.controller import Controller
from mail_keys import PRIVATE_KEY, PUBLIC_KEY_B64

from notify_core.mail import MailEntry, MailSite, compose_mail, unsubscribe_token
from notify_core.values.errors import InvalidInput
from notify_pg.mail.smtp import (
    DkimKey,
    MailSendError,
    Outgoing,
    SmtpConfig,
    SmtpSender,
    mail_message,
)

AT = datetime(2026, 11, 30, 10, 3, tzinfo=UTC)
SITE = MailSite(name="Ops Wiki", host="wiki.example.org", https=True, primary_locale="en")


class Recorder:
    """An aiosmtpd handler that keeps what it receives, or refuses with a given answer."""

    def __init__(self) -> None:
        self.received: list[tuple[str, list[str], bytes]] = []
        self.sessions: set[int] = set()
        self.refuse: dict[str, str] = {}  # recipient -> answer to DATA

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        for rcpt in envelope.rcpt_tos:
            if rcpt in self.refuse:
                return self.refuse[rcpt]
        self.sessions.add(id(session))
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server() -> Iterator[tuple[Recorder, int]]:
    handler = Recorder()
    port = _free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield handler, port
    finally:
        controller.stop()


def _mail(person: str = "ana") -> Outgoing:
    mail = compose_mail(
        [
            MailEntry(
                category="mention",
                variant="new",
                title="Runbook",
                path="/ops/runbook",
                actor="cy",
                excerpt="@ana can you check step 3?",
            )
        ],
        site=SITE,
        locale="en",
        token=unsubscribe_token(bytes(32), person, ["mention"]),
    )
    message = mail_message(
        mail, sender="notifications@wiki.example.org", to=f"{person}@example.org", date=AT
    )
    return Outgoing(
        sender="notifications@wiki.example.org",
        recipients=(f"{person}@example.org",),
        message=message,
    )


def _dns(name: bytes, timeout: int = 5) -> bytes:
    assert name == b"notify._domainkey.wiki.example.org."
    return b"v=DKIM1; k=rsa; p=" + PUBLIC_KEY_B64.encode()


def test_e6_a_mail_arrives_with_both_bodies_and_every_header(
    server: tuple[Recorder, int],
) -> None:
    handler, port = server
    with SmtpSender(SmtpConfig.from_url(f"smtp://127.0.0.1:{port}")) as smtp:
        smtp.send(_mail())
    ((mail_from, rcpts, content),) = handler.received
    assert (mail_from, rcpts) == ("notifications@wiki.example.org", ["ana@example.org"])
    got = email.message_from_bytes(content, policy=policy.default)
    assert got["Auto-Submitted"] == "auto-generated"
    assert got["List-Unsubscribe"].startswith(
        "<https://wiki.example.org/notifications/unsubscribe?t="
    )
    assert got["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert got["Subject"] and got["Date"] and got["Message-ID"]
    assert got["To"] == "ana@example.org"
    text = got.get_body(("plain",))
    html = got.get_body(("html",))
    assert text is not None and html is not None
    assert "Runbook" in text.get_content() and "step 3" in text.get_content()
    assert "https://wiki.example.org/ops/runbook" in html.get_content()


def test_e6_the_dkim_signature_verifies_and_covers_both_list_unsubscribe_headers(
    server: tuple[Recorder, int],
) -> None:
    handler, port = server
    key = DkimKey(selector="notify", domain="wiki.example.org", private_key=PRIVATE_KEY)
    with SmtpSender(SmtpConfig.from_url(f"smtp://127.0.0.1:{port}"), dkim_key=key) as smtp:
        smtp.send(_mail())
    ((_from, _to, content),) = handler.received
    assert dkim.verify(content, dnsfunc=_dns)
    got = email.message_from_bytes(content, policy=policy.compat32)
    signature = " ".join(str(got["DKIM-Signature"]).split())
    tags = dict(
        part.strip().split("=", 1) for part in signature.replace(" ", "").split(";") if part
    )
    signed = {h.lower() for h in tags["h"].split(":")}
    assert {"list-unsubscribe", "list-unsubscribe-post", "from", "subject"} <= signed
    # A changed List-Unsubscribe-Post breaks the signature.
    tampered = content.replace(b"List-Unsubscribe=One-Click", b"List-Unsubscribe=Two-Click")
    assert tampered != content and not dkim.verify(tampered, dnsfunc=_dns)


def test_e6_a_451_is_a_temporary_typed_failure_and_the_batch_goes_on(
    server: tuple[Recorder, int],
) -> None:
    handler, port = server
    handler.refuse["ben@example.org"] = "451 4.3.0 try again later"
    handler.refuse["cy@example.org"] = "554 5.7.1 no"
    with SmtpSender(SmtpConfig.from_url(f"smtp://127.0.0.1:{port}")) as smtp:
        with pytest.raises(MailSendError) as caught:
            smtp.send(_mail("ben"))
        assert caught.value.temporary and caught.value.smtp_code == 451
        assert caught.value.code == "smtp_rejected" and not caught.value.unreachable
        results = smtp.send_batch([_mail("ana"), _mail("ben"), _mail("cy"), _mail("dan")])
    assert [r.sent for r in results] == [True, False, False, True]
    assert results[1].error is not None and results[1].error.temporary
    assert results[2].error is not None and not results[2].error.temporary
    assert [rcpt for _f, (rcpt,), _c in handler.received] == ["ana@example.org", "dan@example.org"]
    assert len(handler.sessions) == 1  # one connection for the whole batch


def test_e6_no_server_is_a_temporary_failure_without_a_traceback() -> None:
    port = _free_port()
    smtp = SmtpSender(SmtpConfig.from_url(f"smtp://127.0.0.1:{port}?timeout=2"))
    with smtp, pytest.raises(MailSendError) as caught:
        smtp.send(_mail())
    assert caught.value.code == "smtp_unavailable" and caught.value.temporary
    assert caught.value.unreachable  # no connection: the drain stops its round (E5)


def test_smtp_urls() -> None:
    config = SmtpConfig.from_url("smtp://u%40x:p%3Aw@mail.example?starttls=1")
    assert (config.host, config.port, config.starttls, config.tls) == (
        "mail.example",
        587,
        True,
        False,
    )
    assert (config.username, config.password) == ("u@x", "p:w")
    assert "p:w" not in repr(config)
    tls = SmtpConfig.from_url("smtps://mail.example")
    assert (tls.port, tls.tls) == (465, True)
    assert SmtpConfig.from_url("smtp://mail.example:2525").port == 2525
    for bad in (
        "http://mail.example",
        "smtp://",
        "smtp://mail.example:99999",
        "smtp://mail.example?starttls=maybe",
        "smtp://mail.example?bogus=1",
        "smtps://mail.example?starttls=1",
        "smtp://user:secret@mail.example?timeout=never",
    ):
        with pytest.raises(InvalidInput) as caught:
            SmtpConfig.from_url(bad)
        assert caught.value.code == "invalid_smtp_url"
        assert "secret" not in caught.value.message


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
@pytest.mark.filterwarnings("ignore:Session.login_data is deprecated")
def test_e6_user_and_password_from_the_url_log_in() -> None:
    from aiosmtpd.smtp import AuthResult, LoginPassword

    seen: list[tuple[bytes, bytes]] = []

    def authenticator(
        server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        assert isinstance(data, LoginPassword)
        seen.append((data.login, data.password))
        return AuthResult(success=data.password == b"p:w")

    handler = Recorder()
    port = _free_port()
    controller = Controller(
        handler,
        hostname="127.0.0.1",
        port=port,
        authenticator=authenticator,
        auth_require_tls=False,
        auth_required=True,
    )
    controller.start()
    try:
        with SmtpSender(SmtpConfig.from_url(f"smtp://u%40x:p%3Aw@127.0.0.1:{port}")) as smtp:
            smtp.send(_mail())
        anonymous = SmtpSender(SmtpConfig.from_url(f"smtp://127.0.0.1:{port}"))
        with anonymous, pytest.raises(MailSendError) as caught:
            anonymous.send(_mail("ben"))  # 530: authentication required
        url = f"smtp://u%40x:nope@127.0.0.1:{port}?timeout=2"
        with SmtpSender(SmtpConfig.from_url(url)) as wrong, pytest.raises(MailSendError) as login:
            wrong.send(_mail("cy"))  # the login itself fails (aiosmtpd answers slowly, if ever)
    finally:
        controller.stop()
    assert seen[0] == (b"u@x", b"p:w") and len(handler.received) == 1
    assert caught.value.code == "smtp_rejected" and caught.value.smtp_code == 530
    assert not caught.value.temporary and not caught.value.unreachable
    assert login.value.unreachable


TLS_DIR = Path(__file__).parents[2] / "mail"  # a self-signed certificate for 127.0.0.1 (100 years)


def _tls() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(TLS_DIR / "tls-cert.pem", TLS_DIR / "tls-key.pem")
    client = ssl.create_default_context(cafile=str(TLS_DIR / "tls-cert.pem"))
    return server, client


def test_e6_starttls_from_the_url_encrypts_before_sending() -> None:
    server_tls, client_tls = _tls()
    handler = Recorder()
    port = _free_port()
    controller = Controller(
        handler, hostname="127.0.0.1", port=port, tls_context=server_tls, require_starttls=True
    )
    controller.start()
    try:
        config = SmtpConfig.from_url(f"smtp://127.0.0.1:{port}?starttls=1")
        with SmtpSender(config, ssl_context=client_tls) as smtp:
            smtp.send(_mail())
        plain = SmtpSender(SmtpConfig.from_url(f"smtp://127.0.0.1:{port}"))
        with plain, pytest.raises(MailSendError) as caught:
            plain.send(_mail("ben"))  # 530: STARTTLS first
    finally:
        controller.stop()
    assert [rcpts for _f, rcpts, _c in handler.received] == [["ana@example.org"]]
    assert caught.value.code == "smtp_rejected" and not caught.value.temporary


def test_e6_smtps_speaks_tls_from_the_first_byte() -> None:
    server_tls, client_tls = _tls()
    handler = Recorder()
    port = _free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port, ssl_context=server_tls)
    controller.start()
    try:
        config = SmtpConfig.from_url(f"smtps://127.0.0.1:{port}")
        with SmtpSender(config, ssl_context=client_tls) as smtp:
            smtp.send(_mail())
        untrusted = SmtpSender(SmtpConfig.from_url(f"smtps://127.0.0.1:{port}?timeout=5"))
        with untrusted, pytest.raises(MailSendError) as caught:
            untrusted.send(_mail("ben"))  # the system's CAs do not know this certificate
    finally:
        controller.stop()
    assert len(handler.received) == 1
    assert caught.value.code == "smtp_unavailable" and caught.value.temporary
    assert caught.value.unreachable
