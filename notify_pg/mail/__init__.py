"""Mail of notify_pg (docs/mail.md): the drain, SMTP with DKIM, the secret and unsubscribe.

- `notify_pg.mail.drain`: the drain that sends the mails that are due, with its ports
  (`notify_pg.mail.ports`), its claimed rows and the writes it holds over a database failure
  (`notify_pg.mail.claims`), and the reschedule of pending emails (`notify_pg.mail.reschedule`);
- `notify_pg.mail.rounds`: the drain as a round of a worker's loop;
- `notify_pg.mail.smtp`: the message, the SMTP client and DKIM signing;
- `notify_pg.mail.secret`: the instance's unsubscribe secret;
- `notify_pg.mail.unsubscribe`: what a valid one-click token changes, audited.

It imports `notify_pg.inbox` (the preferences an unsubscribe writes), `notify_pg.rounds` and
`notify_pg.db`.
"""

__all__: list[str] = []
