"""Sending notification mails (E6): RFC 5322 messages, DKIM signatures and an SMTP client.

`mail_message` turns a `notify_core.mail.Mail` into an ``email.message.EmailMessage`` with
both bodies and every header; `DkimKey` signs its bytes with ``dkimpy`` over
`DKIM_SIGNED_HEADERS`, which include both ``List-Unsubscribe`` headers (Gmail and Yahoo honour
one-click unsubscribe only when the signature covers them); `SmtpSender` sends over the
standard library's ``smtplib``, configured by a URL, reusing one connection for a batch.

A send that fails raises `MailSendError` with ``temporary`` set for what a later attempt may
cure (a 4xx answer, a lost connection): the caller puts the entries back (E5). Nothing here
touches the database: the drain's claims and leases on PostgreSQL are the caller's.
"""

from __future__ import annotations

import functools
import hashlib
import smtplib
import socket
import ssl
from collections.abc import Iterable, Sequence
from datetime import datetime
from email import policy as email_policy
from email.message import EmailMessage
from email.utils import format_datetime
from types import TracebackType
from typing import Final
from urllib.parse import parse_qs, unquote, urlsplit

import attrs
import dkim

from notify_core.errors import InvalidInput, NotifyError
from notify_core.mail import Mail

__all__ = [
    "DKIM_SIGNED_HEADERS",
    "DkimKey",
    "MailSendError",
    "Outgoing",
    "SendResult",
    "SmtpConfig",
    "SmtpSender",
    "mail_message",
]

#: RFC 5322's own limit: a shorter one makes the email package fold a header without spaces
#: (the List-Unsubscribe URL) into RFC 2047 encoded words, which no mail client follows.
_POLICY: Final = email_policy.SMTP.clone(max_line_length=998)

#: The headers a DKIM signature covers: the usual ones plus both List-Unsubscribe headers
#: (seed 004 section 10.4: a default list covers List-Unsubscribe and not List-Unsubscribe-Post).
DKIM_SIGNED_HEADERS: Final = (
    "From",
    "To",
    "Subject",
    "Date",
    "Message-ID",
    "MIME-Version",
    "Content-Type",
    "Auto-Submitted",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
)


class MailSendError(NotifyError):
    """A mail was not sent. ``temporary``: a later attempt may succeed (4xx, lost connection).

    Codes: ``smtp_rejected`` (the server answered an error; ``smtp_code`` holds it),
    ``smtp_unavailable`` (no connection, or it was lost).
    """

    def __init__(
        self, code: str, message: str, *, temporary: bool, smtp_code: int | None = None
    ) -> None:
        super().__init__(code, message)
        self.temporary = temporary
        self.smtp_code = smtp_code


def mail_message(
    mail: Mail,
    *,
    sender: str,
    to: str,
    date: datetime,
    message_id: str | None = None,
) -> EmailMessage:
    """Return the RFC 5322 message of a mail: text and HTML bodies and every header.

    Args:
        mail: the composed mail (`notify_core.mail.compose_mail`).
        sender: the ``From`` address.
        to: the recipient's address.
        date: the ``Date`` (an aware instant).
        message_id: the ``Message-ID`` without angle brackets; by default one derived from
            the date, the recipient and the subject, so the same mail gets the same id.
    """
    message = EmailMessage(policy=_POLICY)
    message["From"] = sender
    message["To"] = to
    message["Subject"] = mail.subject
    message["Date"] = format_datetime(date)
    if message_id is None:
        digest = hashlib.sha256(f"{date.isoformat()}\0{to}\0{mail.subject}".encode()).hexdigest()
        domain = sender.rpartition("@")[2] or "localhost"
        message_id = f"{digest[:32]}@{domain}"
    message["Message-ID"] = f"<{message_id}>"
    for name, value in mail.headers:
        message[name] = value
    message.set_content(mail.text)
    message.add_alternative(mail.html, subtype="html")
    # A boundary derived from the bodies (never found in them: they are quoted-printable or
    # base64) rather than a random one, so the same mail is the same bytes.
    bodies = hashlib.sha256(f"{mail.text}\0{mail.html}".encode()).hexdigest()
    message.set_boundary(f"=_notify_{bodies[:32]}")
    return message


@attrs.frozen(kw_only=True)
class DkimKey:
    """A DKIM signing key: selector, domain and the PEM private key (RSA or Ed25519)."""

    selector: str
    domain: str
    private_key: bytes = attrs.field(repr=False)

    def sign(self, message: bytes) -> bytes:
        """Return ``message`` with a ``DKIM-Signature`` header over `DKIM_SIGNED_HEADERS`."""
        signature: bytes = dkim.sign(
            message,
            self.selector.encode(),
            self.domain.encode(),
            self.private_key,
            include_headers=[h.encode() for h in DKIM_SIGNED_HEADERS],
        )
        return signature + message


@attrs.frozen(kw_only=True)
class SmtpConfig:
    """Where and how to send: host, port, TLS, credentials.

    Build it from a URL with `SmtpConfig.from_url`.
    """

    host: str
    port: int
    tls: bool = False
    starttls: bool = False
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=False)
    timeout: float = 30.0

    @classmethod
    def from_url(cls, url: str) -> SmtpConfig:
        """Read ``smtp://[user:password@]host[:port][?starttls=1&timeout=S]`` or ``smtps://``.

        ``smtp://`` defaults to port 25 (587 with STARTTLS), ``smtps://`` (TLS from the first
        byte) to 465. User and password are percent-decoded.

        Raises:
            InvalidInput: ``invalid_smtp_url`` for another scheme, no host, a bad port or
                option; the message never repeats the password.
        """

        def bad(why: str) -> InvalidInput:
            return InvalidInput("invalid_smtp_url", f"bad SMTP URL: {why}", "/smtp_url")

        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise bad("the port is not a number from 0 to 65535") from None
        if parts.scheme not in ("smtp", "smtps"):
            raise bad("the scheme must be smtp:// or smtps://")
        if not parts.hostname:
            raise bad("no host")
        query = parse_qs(parts.query, keep_blank_values=True, strict_parsing=False)
        unknown = set(query) - {"starttls", "timeout"}
        if unknown:
            raise bad(f"unknown option {sorted(unknown)[0]!r} (known: starttls, timeout)")
        flag = query.get("starttls", ["0"])[-1].lower()
        if flag not in ("0", "1", "true", "false", "yes", "no"):
            raise bad("starttls must be 1 or 0")
        starttls = flag in ("1", "true", "yes")
        tls = parts.scheme == "smtps"
        if tls and starttls:
            raise bad("smtps:// is TLS already: no starttls")
        try:
            timeout = float(query.get("timeout", ["30"])[-1])
        except ValueError:
            raise bad("timeout must be a number of seconds") from None
        if not 0 < timeout <= 3600:
            raise bad("timeout must be a number of seconds from 0 to 3600")
        if port is None:
            port = 465 if tls else (587 if starttls else 25)
        return cls(
            host=parts.hostname,
            port=port,
            tls=tls,
            starttls=starttls,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password is not None else None,
            timeout=timeout,
        )


@attrs.frozen(kw_only=True)
class Outgoing:
    """One message to send: envelope sender, recipients and the message."""

    sender: str
    recipients: tuple[str, ...]
    message: EmailMessage


@attrs.frozen(kw_only=True)
class SendResult:
    """What became of one message of a batch: sent, or the error (E5: the batch goes on)."""

    outgoing: Outgoing
    error: MailSendError | None = None

    @property
    def sent(self) -> bool:
        """The server accepted the message for every recipient."""
        return self.error is None


def _failure(exc: BaseException) -> MailSendError:
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _msg in exc.recipients.values()]
        code = max(codes) if codes else 550
        return MailSendError(
            "smtp_rejected",
            f"the SMTP server refused the recipients ({code})",
            temporary=400 <= code < 500,
            smtp_code=code,
        )
    if isinstance(exc, smtplib.SMTPResponseException):
        raw = exc.smtp_error
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")
        return MailSendError(
            "smtp_rejected",
            f"the SMTP server answered {exc.smtp_code} {text}".strip(),
            temporary=400 <= exc.smtp_code < 500,
            smtp_code=exc.smtp_code,
        )
    reason = str(exc) or type(exc).__name__
    return MailSendError(
        "smtp_unavailable", f"no SMTP connection: {reason}", temporary=True, smtp_code=None
    )


@functools.cache
def _local_hostname() -> str:
    # smtplib asks the resolver for the host's name on every connection (socket.getfqdn):
    # ~0.1 s each on a machine with slow DNS. The name does not change while we run.
    return socket.getfqdn()


class SmtpSender:
    """An SMTP client that keeps one connection open for a batch (a context manager).

    Example:
        with SmtpSender(SmtpConfig.from_url("smtp://mail.example:587?starttls=1")) as smtp:
            results = smtp.send_batch(outgoing)
    """

    def __init__(
        self,
        config: SmtpConfig,
        *,
        dkim_key: DkimKey | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.config = config
        self.dkim_key = dkim_key
        self.ssl_context = ssl_context
        self._smtp: smtplib.SMTP | None = None

    def __enter__(self) -> SmtpSender:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _connect(self) -> smtplib.SMTP:
        config = self.config
        smtp: smtplib.SMTP
        if config.tls:
            context = self._context()
            smtp = smtplib.SMTP_SSL(
                config.host,
                config.port,
                local_hostname=_local_hostname(),
                timeout=config.timeout,
                context=context,
            )
        else:
            smtp = smtplib.SMTP(
                config.host, config.port, local_hostname=_local_hostname(), timeout=config.timeout
            )
        try:
            smtp.ehlo()
            if config.starttls:
                smtp.starttls(context=self._context())
                smtp.ehlo()
            if config.username is not None:
                smtp.login(config.username, config.password or "")
        except BaseException:
            smtp.close()
            raise
        return smtp

    def _context(self) -> ssl.SSLContext:
        # Loading the system's CA certificates takes tens of milliseconds: once per sender,
        # and only for TLS.
        if self.ssl_context is None:
            self.ssl_context = ssl.create_default_context()
        return self.ssl_context

    def close(self) -> None:
        """Say QUIT and close the connection, if one is open."""
        smtp, self._smtp = self._smtp, None
        if smtp is None:
            return
        try:
            smtp.quit()
        except (smtplib.SMTPException, OSError):
            smtp.close()

    def _bytes(self, message: EmailMessage) -> bytes:
        data = message.as_bytes(policy=_POLICY)
        return self.dkim_key.sign(data) if self.dkim_key is not None else data

    def send(self, outgoing: Outgoing) -> None:
        """Send one message on the open connection (opened on first use).

        Raises:
            MailSendError: the server refused it or the connection failed; ``temporary``
                tells whether to try again later.
        """
        data = self._bytes(outgoing.message)
        try:
            if self._smtp is None:
                self._smtp = self._connect()
            refused = self._smtp.sendmail(outgoing.sender, list(outgoing.recipients), data)
        except smtplib.SMTPServerDisconnected as exc:
            self._smtp = None
            raise _failure(exc) from None
        except (smtplib.SMTPException, OSError) as exc:
            if isinstance(exc, smtplib.SMTPResponseException | smtplib.SMTPRecipientsRefused):
                self._reset()
            else:
                self._drop()
            raise _failure(exc) from None
        if refused:
            code = max(code for code, _msg in refused.values())
            raise MailSendError(
                "smtp_rejected",
                f"the SMTP server refused {len(refused)} recipient(s) ({code})",
                temporary=400 <= code < 500,
                smtp_code=code,
            )

    def _reset(self) -> None:
        """After a refused message the connection stays usable: RSET clears the transaction."""
        smtp = self._smtp
        if smtp is None:
            return
        try:
            smtp.rset()
        except (smtplib.SMTPException, OSError):
            self._drop()

    def _drop(self) -> None:
        smtp, self._smtp = self._smtp, None
        if smtp is not None:
            smtp.close()

    def send_batch(self, batch: Iterable[Outgoing]) -> Sequence[SendResult]:
        """Send every message on one connection; one failure never stops the batch (E5)."""
        results = []
        for outgoing in batch:
            try:
                self.send(outgoing)
            except MailSendError as error:
                results.append(SendResult(outgoing=outgoing, error=error))
            else:
                results.append(SendResult(outgoing=outgoing))
        return results
