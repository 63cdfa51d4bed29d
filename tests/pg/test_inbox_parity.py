"""One inbox path, two stores: the example wiki log gives the same entries in a replay (in
memory) and on PostgreSQL (the reference host's wiki, emit, the fan-out round, the reads).

The PostgreSQL mail drain is not built yet, so the log runs with mail not configured (the
replay's drain would send and close entries the tables keep pending); everything else of the
log (N1-N12, H2: categories, access, sections, preferences, coalescing, reads, dismissals,
renames, deletions with their watchers, switched-off sites) is compared entry by entry.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from click.testing import CliRunner
from pgworld import HOST_SCHEMA, SCHEMA

from notify_cli.main import cli
from notify_core.events import parse_event
from notify_pg.inbox_fanout import InboxFanOut
from notify_pg.reference_host.wiki import ReferenceWiki
from notify_pg.reference_host.wiki_load import WikiLoader

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "wiki-week.jsonl"

Line = tuple[Any, ...]


def without_mail(lines: list[str]) -> list[str]:
    """The log with mail never configured (the PostgreSQL drain is not built yet)."""
    out = []
    for text in lines:
        obj = json.loads(text)
        if obj["type"] == "notifications.settings" and "mail_configured" in obj["payload"]:
            obj["payload"]["mail_configured"] = False
        out.append(json.dumps(obj))
    return out


def replay_entries(log: Path) -> list[Line]:
    result = CliRunner().invoke(cli, ["replay", str(log)])
    assert result.exit_code == 0, result.output
    out = []
    for text in result.stdout.splitlines():
        obj = json.loads(text)
        if obj.get("trigger") != "inbox":
            continue
        out.append(
            (
                obj["seq"],
                obj["recipient"],
                obj["category"],
                obj["group_key"],
                obj["entry"],
                obj["decision"],
                obj["count"],
                obj["in_app"],
                obj["email"],
            )
        )
    return out


def test_n10_the_wiki_week_gives_the_same_entries_in_a_replay_and_on_postgresql(
    tmp_path: Path, db_dsn: str, conn: psycopg.Connection[Any]
) -> None:
    """N1-N12 and H2 on both stores: every entry decision of the log, in order, is equal."""
    log = tmp_path / "wiki-week-no-mail.jsonl"
    lines = without_mail(LOG.read_text().splitlines())
    log.write_text("\n".join(lines) + "\n")
    expected = replay_entries(log)
    assert len(expected) > 200  # the log exercises the inbox

    wiki = ReferenceWiki(HOST_SCHEMA)
    loader = WikiLoader(wiki, InboxFanOut(wiki, schema=SCHEMA), schema=SCHEMA)
    got: list[Line] = []
    for text in lines:
        event = parse_event(json.loads(text))
        before = len(loader.written)
        loader.feed(conn, event)
        got.extend(
            sorted(
                (
                    event.seq,
                    w.user_id,
                    w.category,
                    w.group_key,
                    loader.name_of(w.id),
                    "new" if w.inserted else "coalesce",
                    w.count,
                    w.in_app,
                    w.email_state,
                )
                for w in loader.written[before:]
            )
        )
    by_seq: Callable[[Line], tuple[Any, ...]] = lambda line: (line[0], line[1], line[2])  # noqa: E731
    assert sorted(got, key=by_seq) == sorted(expected, key=by_seq)
