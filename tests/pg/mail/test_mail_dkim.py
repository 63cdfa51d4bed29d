"""E6: DKIM signatures of `notify_pg.mail.smtp.DkimKey`, checked by dkimpy's verifier.

The signature is computed by ``cryptography`` (RSA and Ed25519) over dkimpy's relaxed/simple
canonicalization; `dkim.verify` is an independent check of the header layout, the header
selection and the hashes. The end-to-end test over SMTP is in test_mail_smtp.py.
"""

from __future__ import annotations

import base64
import email
import pickle
import re
from datetime import UTC, datetime
from email import headerregistry, policy

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from mail_keys import PRIVATE_KEY, PUBLIC_KEY_B64, SHORT_RSA_KEY

from notify_core.mail import MailEntry, MailSite, compose_mail, unsubscribe_token
from notify_core.values.errors import InvalidInput
from notify_pg.mail import smtp
from notify_pg.mail.smtp import DkimKey, mail_message

AT = datetime(2026, 11, 30, 10, 3, tzinfo=UTC)
SITE = MailSite(name="Ops-Wiki Zürich", host="wiki.example.org", https=True)
SELECTOR_NAME = b"notify._domainkey.wiki.example.org."


def _message(locale: str = "en", entries: int = 1) -> bytes:
    entry = MailEntry(
        category="mention",
        variant="new",
        title="Übersicht der Läufe — a long title that makes the subject fold " * 2,
        path="/ops/runbook",
        actor="Zoë",
        excerpt="@ana can you check step 3?",
    )
    mail = compose_mail(
        [entry] * entries,
        site=SITE,
        locale=locale,
        token=unsubscribe_token(bytes(32), "ana", ["mention"]),
    )
    sender = "notifications@wiki.example.org"
    return mail_message(mail, sender=sender, to="ana@example.org", date=AT).as_bytes()


def _rsa_dns(name: bytes, timeout: int = 5) -> bytes:
    assert name == SELECTOR_NAME
    return b"v=DKIM1; k=rsa; p=" + PUBLIC_KEY_B64.encode()


def _tags(signed: bytes) -> dict[str, str]:
    got = email.message_from_bytes(signed, policy=policy.compat32)
    value = re.sub(r"\s+", "", str(got["DKIM-Signature"]))
    return dict(part.split("=", 1) for part in value.split(";") if part)


@pytest.mark.parametrize(("locale", "entries"), [("en", 1), ("de", 1), ("de", 60)])
def test_e6_an_rsa_signature_verifies_and_covers_both_list_unsubscribe_headers(
    locale: str, entries: int
) -> None:
    key = DkimKey(selector="notify", domain="wiki.example.org", private_key=PRIVATE_KEY)
    signed = key.sign(_message(locale, entries))
    assert dkim.verify(signed, dnsfunc=_rsa_dns)
    tags = _tags(signed)
    assert tags["a"] == "rsa-sha256" == key.algorithm
    assert tags["c"] == "relaxed/simple"
    assert {"list-unsubscribe", "list-unsubscribe-post", "from", "to", "subject"} <= set(
        tags["h"].split(":")
    )
    # Every line of the signature header stays within 78 characters.
    header = signed.split(b"\r\nFrom:", 1)[0]
    assert max(len(line) for line in header.split(b"\r\n")) <= 78
    for tampered in (
        signed.replace(b"List-Unsubscribe=One-Click", b"List-Unsubscribe=Two-Click"),
        signed.replace(b"unsubscribe?t=", b"unsubscribe?t=x"),
        signed.replace(b"step 3", b"step 4"),
    ):
        assert tampered != signed and not dkim.verify(tampered, dnsfunc=_rsa_dns)


def test_e6_a_relay_that_refolds_headers_keeps_the_signature_valid() -> None:
    key = DkimKey(selector="notify", domain="wiki.example.org", private_key=PRIVATE_KEY)
    signed = key.sign(_message())
    # relaxed header canonicalization: case of names, folding and runs of spaces may change.
    relayed = signed.replace(b"\r\nAuto-Submitted: ", b"\r\nauto-submitted:\r\n\t  ")
    assert relayed != signed and dkim.verify(relayed, dnsfunc=_rsa_dns)


def test_e6_the_signature_is_over_the_crlf_form_smtp_sends() -> None:
    key = DkimKey(selector="notify", domain="wiki.example.org", private_key=PRIVATE_KEY)
    crlf = _message()
    signed = key.sign(crlf.replace(b"\r\n", b"\n"), now=1_796_000_000)
    assert b"\n" not in signed.replace(b"\r\n", b"")
    assert signed == key.sign(crlf, now=1_796_000_000)  # RSA PKCS#1 v1.5 is deterministic
    assert _tags(signed)["t"] == "1796000000"
    assert dkim.verify(signed, dnsfunc=_rsa_dns)


def test_e6_an_ed25519_key_signs_ed25519_sha256_rfc_8463() -> None:
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )

    def dns(name: bytes, timeout: int = 5) -> bytes:
        assert name == SELECTOR_NAME
        return b"v=DKIM1; k=ed25519; p=" + base64.b64encode(public)

    key = DkimKey(selector="notify", domain="wiki.example.org", private_key=pem)
    signed = key.sign(_message("de"))
    assert key.algorithm == "ed25519-sha256" == _tags(signed)["a"]
    assert dkim.verify(signed, dnsfunc=dns)
    tampered = signed.replace(b"List-Unsubscribe=One-Click", b"List-Unsubscribe=Two-Click")
    assert not dkim.verify(tampered, dnsfunc=dns)


@pytest.mark.parametrize(
    ("pem", "why"),
    [
        (b"not a key", "not an unencrypted PEM private key"),
        (PRIVATE_KEY.replace(b"MIIE", b"MIIF"), "not an unencrypted PEM private key"),
        (SHORT_RSA_KEY, "an RSA key of 512 bits (at least 1024)"),
    ],
)
def test_e6_a_bad_dkim_key_is_a_clear_error_that_never_repeats_the_key(
    pem: bytes, why: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        DkimKey(selector="notify", domain="wiki.example.org", private_key=pem)
    assert caught.value.code == "invalid_dkim_key"
    assert why in str(caught.value)
    assert "MII" not in str(caught.value)


def test_the_key_is_never_in_a_repr() -> None:
    key = DkimKey(selector="notify", domain="wiki.example.org", private_key=PRIVATE_KEY)
    assert "PRIVATE" not in repr(key) and "RSAPrivateKey" not in repr(key)
    assert key == DkimKey(selector="notify", domain="wiki.example.org", private_key=PRIVATE_KEY)


def test_e6_a_message_is_the_same_bytes_as_with_the_standard_header_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # notify_pg.mail.smtp makes each header class once and shares the headers of repeated values
    # between messages (the standard registry parses each anew, four times slower); the bytes
    # must not change, built once or again from the shared headers.
    cases = [("en", 1), ("de", 3), ("en", 60), ("de", 1)]
    fast = [_message(locale, n) for locale, n in cases]
    assert [_message(locale, n) for locale, n in cases] == fast
    monkeypatch.setattr(smtp, "_POLICY", policy.SMTP.clone(max_line_length=998))
    assert [_message(locale, n) for locale, n in cases] == fast


def test_the_header_registry_forgets_what_a_new_type_replaces() -> None:
    registry = smtp._HeaderClasses()
    assert registry["Subject"] is registry["subject"]
    first = registry("Subject", "Hello")
    assert registry("Subject", "Hello") is first and str(first) == "Hello"
    registry.map_to_type("subject", headerregistry.UniqueAddressHeader)
    assert issubclass(registry["Subject"], headerregistry.UniqueAddressHeader)
    again = registry("Subject", "ana@example.org")
    assert isinstance(again, headerregistry.UniqueAddressHeader)
    for n in range(smtp._HeaderClasses.KEEP + 1):
        registry("X-N", str(n))
    assert len(registry._parsed) <= smtp._HeaderClasses.KEEP


def test_a_dkim_key_pickles_and_still_signs() -> None:
    key = DkimKey(selector="notify", domain="wiki.example.org", private_key=PRIVATE_KEY)
    copy = pickle.loads(pickle.dumps(key))
    assert copy == key and copy.algorithm == "rsa-sha256"
    assert copy.sign(_message(), now=1_796_000_000) == key.sign(_message(), now=1_796_000_000)


@pytest.mark.parametrize(
    "message",
    [
        b"From: a@wiki.example.org\r\nSubject: hi\r\n\r\nbody\r\n",
        b"From: a@wiki.example.org\r\nSubject: hi\r\n",
        b"From: a@wiki.example.org\r\n\r\n",
        b"From: a@wiki.example.org\r\nTo: x@y\r\nTo: z@y\r\n\r\nbody\r\n\r\n\r\n",
        b"From:\ta@wiki.example.org\nSubject:  spaced   out \n\tfolded\n\nbody  with  spaces \n",
    ],
    ids=["minimal", "no-body", "empty-body", "two-to-trailing-lines", "lf-folded"],
)
def test_e6_a_signature_verifies_on_messages_of_any_shape(message: bytes) -> None:
    # Headers of h= that are missing count as empty (they cannot be added later); a repeated
    # header is signed bottom up (h= names To once: the last To); empty lines at the end of
    # the body are not signed.
    key = DkimKey(selector="notify", domain="wiki.example.org", private_key=PRIVATE_KEY)
    signed = key.sign(message)
    assert dkim.verify(signed, dnsfunc=_rsa_dns)
    if b"To: z@y" in signed:
        assert not dkim.verify(signed.replace(b"To: z@y", b"To: w@y"), dnsfunc=_rsa_dns)


def test_a_header_line_without_a_colon_is_refused() -> None:
    key = DkimKey(selector="notify", domain="wiki.example.org", private_key=PRIVATE_KEY)
    with pytest.raises(ValueError, match="not an RFC 5322 header line"):
        key.sign(b"From: a@wiki.example.org\r\nno colon here\r\n\r\nbody\r\n")
