"""A forgotten id on PostgreSQL (U1, U3 as amended by issue 38; N7, E4): refused until the
host creates it again (`person_created`), then a new person of the next generation, whose
mails carry ``"g"`` and whose tokens alone are valid; meanwhile no entry and no mail, even for
a person the host still names. Over the one-click ``POST`` and the info call, and end to end
over a log the replay parity also runs (tests/inbox/forgotten_and_site_names.jsonl)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from mailpg import Clock, Run, drain, smtp_server
from pgworld import SCHEMA

from notify_core.events.log import parse_event
from notify_core.inbox.categories import CATEGORY_BY_KEY
from notify_core.mail import unsubscribe_token, verify_unsubscribe_token
from notify_pg import forget_person, forgotten, generation, generations, person_created
from notify_pg import http as h
from notify_pg.inbox.reads import InboxPreferences
from notify_pg.mail.secret import unsubscribe_secret
from notify_pg.mail.smtp import Outgoing

Conn = psycopg.Connection[Any]
LOG = Path(__file__).resolve().parents[2] / "inbox" / "forgotten_and_site_names.jsonl"
FORM = "application/x-www-form-urlencoded"


def post(conn: Conn, secret: bytes, token: str) -> int:
    """The one-click ``POST`` of a token; its status (the info call agrees with it)."""
    answer = h.unsubscribe_post(
        conn,
        secret=secret,
        query=f"t={token}",
        content_type=FORM,
        body=b"List-Unsubscribe=One-Click",
        schema=SCHEMA,
    )
    info = h.unsubscribe_info(secret=secret, query=f"t={token}", conn=conn, schema=SCHEMA)
    assert info.status == answer.status
    return answer.status


def test_u3_forgotten_until_created_again_then_only_the_new_generation_s_tokens(
    conn: Conn,
) -> None:
    # No secret yet: forgetting makes one, so that a person forgotten before any mail went
    # is forgotten all the same.
    assert conn.execute(f"SELECT count(*) FROM {SCHEMA}.unsubscribe_secret").fetchone() == (0,)
    assert person_created(conn, "ana", SCHEMA) == 0  # never forgotten: changes nothing
    assert generation(conn, "ana", SCHEMA) == 0
    forget_person(conn, "ana", SCHEMA)
    secret = unsubscribe_secret(conn, schema=SCHEMA)
    old = unsubscribe_token(secret, "ana", ["mention"])
    assert forgotten(conn, "ana", SCHEMA) and generation(conn, "ana", SCHEMA) is None
    assert post(conn, secret, old) == 400
    forget_person(conn, "ana", SCHEMA)  # again before a creation: the same generation
    assert person_created(conn, "ana", SCHEMA) == 1
    assert not forgotten(conn, "ana", SCHEMA) and generation(conn, "ana", SCHEMA) == 1
    assert post(conn, secret, old) == 400  # the person forgotten stays forgotten
    new = unsubscribe_token(secret, "ana", ["mention"], 1)
    assert post(conn, secret, new) == 200
    assert InboxPreferences(SCHEMA).rows(conn, ["ana"]) == {"ana": {("mention", "email"): False}}
    assert person_created(conn, "ana", SCHEMA) == 1  # idempotent
    forget_person(conn, "ana", SCHEMA)
    assert post(conn, secret, new) == 400
    assert person_created(conn, "ana", SCHEMA) == 2
    assert post(conn, secret, new) == 400
    assert post(conn, secret, unsubscribe_token(secret, "ana", ["mention"], 2)) == 200
    assert post(conn, secret, unsubscribe_token(secret, "ana", ["mention"], 3)) == 400
    forget_person(conn, "cy", SCHEMA)
    assert generations(conn, ["ana", "ben", "cy", "ana"], SCHEMA) == {"ana": 2, "cy": None}
    assert generations(conn, [], SCHEMA) == {}
    # Still only digests: no id is stored.
    for (digest,) in conn.execute(f"SELECT digest FROM {SCHEMA}.forgotten_people"):
        assert b"ana" not in digest and b"cy" not in digest


def test_u3_e4_a_log_s_mails_carry_the_generations_and_only_the_current_one_unsubscribes(
    conn: Conn,
) -> None:
    """The parity log on PostgreSQL with the instance's own secret: a mail to each
    generation; afterwards every token of an earlier generation answers 400 and the current
    ones 200."""
    lines = LOG.read_text().splitlines()
    log = [parse_event(json.loads(text)) for text in lines]
    secret = unsubscribe_secret(conn, schema=SCHEMA)
    server = smtp_server()
    _handler, port = next(server)
    sent: list[Outgoing] = []
    try:
        clock = Clock(log[0].occurred_at)
        run = Run(conn, drain(port, clock, secret=secret, on_sent=sent.append), clock)
        run.feed(log)
        run.until(log[-1].occurred_at + timedelta(days=1))
    finally:
        next(server, None)
    tokens = []
    for outgoing in sent:
        header = str(outgoing.message["List-Unsubscribe"])
        token = header.split("?t=", 1)[1].rstrip(">")
        found = verify_unsubscribe_token(secret, token, known_categories=frozenset(CATEGORY_BY_KEY))
        assert found is not None
        tokens.append((found.person, found.generation, token))
    assert sorted({(person, g) for person, g, _ in tokens}) == [
        ("ana", 0),
        ("ana", 1),
        ("ana", 2),
        ("ben", 0),
        ("cy", 0),
        ("cy", 1),
    ]
    current = {"ana": 2, "ben": 0, "cy": 1}
    for person, g, token in tokens:
        assert post(conn, secret, token) == (200 if current[person] == g else 400), (person, g)
