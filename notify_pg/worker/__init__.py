"""The worker of notify_pg: every wing's rounds in one loop, built from plain options.

- `notify_pg.worker.build`: `build_worker` assembles the push path's rounds
  (`notify_pg.push`), the inbox's fan-out and purge (`notify_pg.inbox.rounds`) and the mail
  drain (`notify_pg.mail.rounds`) into one `notify_pg.rounds.loop.Loop` (what ``notify
  worker`` runs; docs/embedding.md).

It sits beside `notify_pg.http` (the handlers never import a worker) above the mail wing.
The push worker itself is `notify_pg.push.worker.Worker` (also ``from notify_pg import
Worker``), the loop `notify_pg.rounds.loop.Loop`.
"""

from notify_pg.worker.build import MailOptions, WorkerLoop, build_worker

__all__ = ["MailOptions", "WorkerLoop", "build_worker"]
