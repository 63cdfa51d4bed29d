"""The event log and its payloads (formats.md section 1).

Lives here: an event as a value and the log's reader with every payload check (`log`), and
the wiki events' payload members (`wiki`).

May import: `notify_core.values`. The wings that read events (hints, inbox, mail, replay)
import this one, never the other way round.
"""
