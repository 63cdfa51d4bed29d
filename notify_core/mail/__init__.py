"""notify_core.mail: the pure parts of inbox email (docs/rules.md, E and U; docs/mail.md).

Like the rest of the core: no I/O, no clock, no randomness (G1); time and the unsubscribe
secret come in as arguments, and the facts of a category (its ``digest`` flag, the set of known
category keys) are arguments too, so this subpackage depends on no registry.

- `email_after_for` (E2): the one place an entry's email due time is computed, for the
  ``immediate``, ``hourly`` and ``daily`` schedules (`EmailSchedule`), with a per-person offset
  within the hour (`slot_offset`) and the zone chain person, site, UTC (`mail_zone`).
- `reschedule` (E3): the new due times of a person's pending entries after a schedule change.
- `unsubscribe_token` and `verify_unsubscribe_token` (U1, U2): one-click unsubscribe tokens
  (RFC 8058) signed with HMAC-SHA256 and verified strictly in constant time.
- `compose_mail` (E6): a mail as a value (subject, text and HTML bodies, the
  ``Auto-Submitted`` and ``List-Unsubscribe`` headers) in the person's language, from the
  catalogues of `notify_core.mail.catalogues`.
"""

from notify_core.mail.cadence import (
    DEFAULT_EMAIL_DELAY,
    EmailSchedule,
    QueuedEmail,
    Schedule,
    email_after_for,
    mail_zone,
    reschedule,
    slot_offset,
)
from notify_core.mail.message import (
    INBOX_PATH,
    MANAGE_PATH,
    UNSUBSCRIBE_PATH,
    Mail,
    MailEntry,
    MailSite,
    category_name,
    compose_mail,
    entry_line,
    mail_locale,
    section_name,
    unsubscribe_url,
)
from notify_core.mail.tokens import (
    MIN_SECRET_BYTES,
    TOKEN_VERSION,
    Unsubscribe,
    token_payload,
    unsubscribe_token,
    verify_unsubscribe_token,
)
from notify_core.values.errors import InvalidSchedule, InvalidUnsubscribe

__all__ = [
    "DEFAULT_EMAIL_DELAY",
    "INBOX_PATH",
    "MANAGE_PATH",
    "MIN_SECRET_BYTES",
    "TOKEN_VERSION",
    "UNSUBSCRIBE_PATH",
    "EmailSchedule",
    "InvalidSchedule",
    "InvalidUnsubscribe",
    "Mail",
    "MailEntry",
    "MailSite",
    "QueuedEmail",
    "Schedule",
    "Unsubscribe",
    "category_name",
    "compose_mail",
    "email_after_for",
    "entry_line",
    "mail_locale",
    "mail_zone",
    "reschedule",
    "section_name",
    "slot_offset",
    "token_payload",
    "unsubscribe_token",
    "unsubscribe_url",
    "verify_unsubscribe_token",
]
