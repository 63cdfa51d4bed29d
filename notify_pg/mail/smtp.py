"""Sending notification mails (E6): RFC 5322 messages, DKIM signatures and an SMTP client.

`mail_message` turns a `notify_core.mail.Mail` into an ``email.message.EmailMessage`` with
both bodies and every header; `DkimKey` signs its bytes over `DKIM_SIGNED_HEADERS`, which
include both ``List-Unsubscribe`` headers (Gmail and Yahoo honour one-click unsubscribe only
when the signature covers them), with dkimpy's canonicalization and the RSA or Ed25519
signature of ``cryptography`` (dkimpy's own RSA is pure Python, about 20 times slower);
`SmtpSender` sends over the standard library's ``smtplib``, configured by a URL, reusing one
connection for a batch.

A send that fails raises `MailSendError` with ``temporary`` set for what a later attempt may
cure (a 4xx answer, a lost connection): the caller puts the entries back (E5). Nothing here
touches the database: the drain's claims and leases on PostgreSQL are the caller's.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import smtplib
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from email import policy as email_policy
from email.headerregistry import BaseHeader, HeaderRegistry
from email.message import EmailMessage
from email.utils import format_datetime
from types import TracebackType
from typing import Final
from urllib.parse import parse_qs, unquote, urlsplit

import attrs
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from dkim.canonicalization import CanonicalizationPolicy

from notify_core.mail import Mail
from notify_core.values.errors import InvalidInput, NotifyError

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


class _HeaderClasses(HeaderRegistry):
    """The standard header registry, with each header's class made once per name and the
    headers of recent values kept.

    The standard one builds a new class for every header it parses (``type(...)`` in
    ``HeaderRegistry.__getitem__``), and every new class empties the interpreter's method
    cache; and most headers of a drain's mails repeat (``From``, ``Date``, the MIME headers of
    each part), while parsing one costs about 0.1 ms. Header objects are immutable strings,
    so messages can share them: building a message got four times faster, with the same bytes.
    """

    #: Parsed headers kept, at most (then forgotten all at once).
    KEEP: Final = 4096

    def __init__(self) -> None:
        super().__init__()
        self._made: dict[str, type[BaseHeader]] = {}
        self._parsed: dict[tuple[str, str], BaseHeader] = {}

    def __getitem__(self, name: str) -> type[BaseHeader]:
        key = name.lower()
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = super().__getitem__(name)
        return made

    def __call__(self, name: str, value: str) -> BaseHeader:
        if type(value) is not str:
            return super().__call__(name, value)
        key = (name, value)
        header = self._parsed.get(key)
        if header is None:
            if len(self._parsed) >= self.KEEP:
                self._parsed.clear()
            header = self._parsed[key] = super().__call__(name, value)
        return header

    def map_to_type(self, name: str, cls: type[BaseHeader]) -> None:
        """Register ``cls`` for the header ``name`` (what was made for it is forgotten)."""
        super().map_to_type(name, cls)
        self._made.pop(name.lower(), None)
        self._parsed.clear()


#: RFC 5322's own limit: a shorter one makes the email package fold a header without spaces
#: (the List-Unsubscribe URL) into RFC 2047 encoded words, which no mail client follows.
_POLICY: Final = email_policy.SMTP.clone(max_line_length=998, header_factory=_HeaderClasses())

#: The headers a DKIM signature covers: the usual ones plus both List-Unsubscribe headers
#: (E6; a default list covers List-Unsubscribe and not List-Unsubscribe-Post).
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

    ``unreachable``: the connection itself failed (refused, timed out, TLS or login failed):
    the server refused no mail, and no other mail can go before it is reachable again.

    Codes: ``smtp_rejected`` (the server answered an error; ``smtp_code`` holds it),
    ``smtp_unavailable`` (no connection, or it was lost).
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        temporary: bool,
        smtp_code: int | None = None,
        unreachable: bool = False,
    ) -> None:
        super().__init__(code, message)
        self.temporary = temporary
        self.smtp_code = smtp_code
        self.unreachable = unreachable


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
    if not mail.html:  # an empty html body: the text only (M5, "format": "plain")
        return message
    message.add_alternative(mail.html, subtype="html")
    # A boundary derived from the bodies (never found in them: they are quoted-printable or
    # base64) rather than a random one, so the same mail is the same bytes.
    bodies = hashlib.sha256(f"{mail.text}\0{mail.html}".encode()).hexdigest()
    message.set_boundary(f"=_notify_{bodies[:32]}")
    return message


#: DKIM's canonicalization: headers ``relaxed`` (a relay that refolds or recases a header does
#: not break the signature), body ``simple`` (dkimpy's default too).
_CANONICALIZATION: Final = CanonicalizationPolicy.from_c_value(b"relaxed/simple")

#: Line ends as smtplib sends them (``smtplib._fix_eols``): what is signed is what goes out.
_LINE_END: Final = re.compile(rb"\r\n|\n|\r(?!\n)")
#: A ``%`` not followed by two hex digits in an SMTP URL's user or password.
_BAD_ESCAPE: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")

#: RFC 8301: verifiers ignore RSA keys shorter than 1024 bits.
_MIN_RSA_BITS: Final = 1024

#: A DKIM-Signature header's lines stay within RFC 5322's recommended 78 characters.
_FOLD_AT: Final = 76


def _load_dkim_key(pem: bytes) -> RSAPrivateKey | Ed25519PrivateKey:
    def bad(why: str) -> InvalidInput:
        return InvalidInput("invalid_dkim_key", f"bad DKIM private key: {why}", "/dkim_key")

    try:
        key = load_pem_private_key(pem, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise bad("not an unencrypted PEM private key") from None
    if isinstance(key, RSAPrivateKey):
        if key.key_size < _MIN_RSA_BITS:
            raise bad(f"an RSA key of {key.key_size} bits (at least {_MIN_RSA_BITS})")
        return key
    if isinstance(key, Ed25519PrivateKey):
        return key
    raise bad("neither RSA nor Ed25519")


def _header_fields(head: bytes) -> list[tuple[bytes, bytes]]:
    """A message head's fields as (name, value), the value with its folds and final CRLF."""
    fields: list[list[bytes]] = []
    for line in head.split(b"\r\n"):
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1][1] += line + b"\r\n"
            continue
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise ValueError(f"not an RFC 5322 header line: {line[:40]!r}")
        fields.append([name, value + b"\r\n"])
    return [(name, value) for name, value in fields]


def _signed_fields(
    fields: Sequence[tuple[bytes, bytes]], names: Sequence[bytes]
) -> list[tuple[bytes, bytes]]:
    """RFC 6376 section 5.4.2: each name takes the last instance not taken yet, bottom up."""
    chosen = []
    below: dict[bytes, int] = {}
    for name in names:
        i = below.get(name, len(fields))
        while i > 0:
            i -= 1
            if fields[i][0].lower() == name:
                chosen.append(fields[i])
                break
        below[name] = i
    return chosen


#: Where `_fold` always starts a new line (the ``b=`` tag, so that the header hashed with
#: ``b=`` empty is folded exactly as the one sent).
_NEW_LINE: Final = b"\n"


def _tag_atoms(tags: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``tag=value`` items as (atom, separator) pairs, split where RFC 6376 allows FWS.

    The ``b=`` value splits every 4 characters, ``h=`` after each colon; the
    ``b=`` tag starts a line of its own.
    """
    atoms: list[tuple[bytes, bytes]] = []
    for n, (name, value) in enumerate(tags):
        end = b";" if n < len(tags) - 1 else b""
        first_sep = _NEW_LINE if name == b"b" else b" "
        if name == b"h":
            parts = [p + b":" for p in value.split(b":")]
            parts[-1] = parts[-1][:-1]
        elif name == b"b":
            parts = [value[i : i + 4] for i in range(0, len(value), 4)]
        else:
            parts = [value]
        parts = parts or [b""]
        parts[-1] += end
        atoms.append((name + b"=" + parts[0], first_sep))
        atoms.extend((part, b"") for part in parts[1:])
    return atoms


def _fold(atoms: Sequence[tuple[bytes, bytes]], column: int) -> bytes:
    """Join atoms, each after its separator, breaking lines before ``_FOLD_AT`` characters."""
    out = bytearray()
    for atom, sep in atoms:
        if sep == _NEW_LINE or (column + len(sep) + len(atom) > _FOLD_AT and column > 1):
            out += b"\r\n "
            column = 1
        else:
            out += sep
            column += len(sep)
        out += atom
        column += len(atom)
    return bytes(out)


@attrs.frozen(kw_only=True)
class DkimKey:
    """A DKIM signing key: selector, domain and the PEM private key (RSA or Ed25519).

    An RSA key signs ``rsa-sha256`` (RFC 6376), an Ed25519 key ``ed25519-sha256`` (RFC 8463);
    the signature is computed by ``cryptography`` (OpenSSL) from the key parsed once, here.
    The canonicalization (``relaxed/simple``) is dkimpy's.

    Raises:
        InvalidInput: ``invalid_dkim_key`` for a PEM that is not an unencrypted RSA key of at
            least 1024 bits or Ed25519 key; the message never repeats the key.
    """

    selector: str
    domain: str
    private_key: bytes = attrs.field(repr=False)
    _key: RSAPrivateKey | Ed25519PrivateKey = attrs.field(
        init=False,
        repr=False,
        eq=False,
        default=attrs.Factory(lambda self: _load_dkim_key(self.private_key), takes_self=True),
    )

    def __reduce__(self) -> tuple[Callable[..., DkimKey], tuple[str, str, bytes]]:
        # The parsed key (an OpenSSL object) does not pickle: a copy parses the PEM again.
        return _dkim_key, (self.selector, self.domain, self.private_key)

    @property
    def algorithm(self) -> str:
        """The signature's ``a=`` tag: ``rsa-sha256`` or ``ed25519-sha256``."""
        return "rsa-sha256" if isinstance(self._key, RSAPrivateKey) else "ed25519-sha256"

    def sign(self, message: bytes, *, now: float | None = None) -> bytes:
        """Return ``message`` with a ``DKIM-Signature`` header over `DKIM_SIGNED_HEADERS`.

        Line ends become CRLF (as smtplib sends them). ``now`` is the ``t=`` timestamp
        (seconds since the epoch; default: the clock).
        """
        message = _LINE_END.sub(b"\r\n", message)
        head, blank, body = message.partition(b"\r\n\r\n")
        if not blank:
            head, body = head.removesuffix(b"\r\n"), b""
        fields = _header_fields(head)
        names = [h.lower().encode() for h in DKIM_SIGNED_HEADERS]
        body_hash = hashlib.sha256(_CANONICALIZATION.canonicalize_body(body)).digest()
        stamp = int(time.time() if now is None else now)
        tags = [
            (b"v", b"1"),
            (b"a", self.algorithm.encode()),
            (b"c", _CANONICALIZATION.to_c_value()),
            (b"d", self.domain.encode()),
            (b"s", self.selector.encode()),
            (b"t", b"%d" % stamp),
            (b"h", b":".join(names)),
            (b"bh", base64.b64encode(body_hash)),
        ]
        name = b"DKIM-Signature"
        unsigned = _fold(_tag_atoms([*tags, (b"b", b"")]), len(name) + 1)
        hashed = _CANONICALIZATION.canonicalize_headers(
            [*_signed_fields(fields, names), (name, unsigned)]
        )
        # The signature's own header is hashed with b= empty and without its final CRLF.
        hashed[-1] = (hashed[-1][0], hashed[-1][1].removesuffix(b"\r\n"))
        data = b"".join(field + b":" + value for field, value in hashed)
        key = self._key
        if isinstance(key, RSAPrivateKey):
            signature = key.sign(data, padding.PKCS1v15(), hashes.SHA256())
        else:
            # RFC 8463 section 3: Ed25519 signs the SHA-256 hash of the data, not the data.
            signature = key.sign(hashlib.sha256(data).digest())
        signed = _fold(_tag_atoms([*tags, (b"b", base64.b64encode(signature))]), len(name) + 1)
        return name + b":" + signed + b"\r\n" + message


def _dkim_key(selector: str, domain: str, private_key: bytes) -> DkimKey:
    return DkimKey(selector=selector, domain=domain, private_key=private_key)


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
        if parts.path not in ("", "/"):
            raise bad("a path has no meaning in an SMTP URL")
        if parts.fragment or url.endswith("#"):
            raise bad("a fragment (#...) has no meaning in an SMTP URL")
        if _BAD_ESCAPE.search(parts.netloc):  # unquote would keep "%zz" as it is, silently
            raise bad("a bad percent escape in user or password (% must be followed by 2 hex)")
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
                tells whether to try again later, ``unreachable`` that no connection was
                made.
        """
        data = self._bytes(outgoing.message)
        if self._smtp is None:
            try:
                self._smtp = self._connect()
            except (smtplib.SMTPException, OSError) as exc:
                error = _failure(exc)
                error.unreachable = True
                raise error from None
        try:
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
