"""Listed entries as people read them (H1, N11, E6) over real HTTP: each carries its link
(the site's templates, following the page while it exists), a review its submission, the
actor's display name and the sentence the entry's mail names it by, in the person's
language; without the host's ports, the default templates' paths and English."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from inbox_log import WikiLog
from pgworld import HOST_SCHEMA, SCHEMA
from test_admin_http import call

from notify_core.events.log import parse_event
from notify_core.mail import MailEntry, MailSite, compose_mail, unsubscribe_token
from notify_pg.http.app import USER_HEADER, build_app, make_http_server, open_pool
from notify_pg.http.identity import IdentityCheck
from notify_pg.inbox.fanout import InboxFanOut
from notify_reference_host.wiki import ReferenceWiki
from notify_reference_host.wiki_load import WikiLoader

Conn = psycopg.Connection[Any]
ANA = {USER_HEADER: "ana"}


def load(conn: Conn, log: WikiLog, start: int = 0) -> None:
    wiki = ReferenceWiki(HOST_SCHEMA)
    loader = WikiLoader(wiki, InboxFanOut(wiki, schema=SCHEMA), schema=SCHEMA)
    for text in log.lines()[start:]:
        loader.feed(conn, parse_event(json.loads(text)))


@pytest.fixture
def served(db_dsn: str) -> Iterator[tuple[str, int]]:
    """The reference app with the reference wiki's ports (``notify serve --host-schema``)."""
    pool = open_pool(db_dsn)
    app = build_app(pool, schema=SCHEMA, admin_host=ReferenceWiki(HOST_SCHEMA))
    httpd = make_http_server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield ("127.0.0.1", httpd.server_port)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
        pool.close()


def wiki_log() -> WikiLog:
    log = WikiLog()
    log.add("group.created", {"group": "rev", "rules": []})
    log.add(
        "review_rule.set",
        {"rule": "r1", "site": "s1", "match": "all", "reviewer_groups": ["rev"], "enabled": True},
    )
    log.user("ana", groups=("readers", "rev"), name="Ana Lima")
    log.user("femi", name="Femi Adeyemi")
    log.user("gus")  # no display name
    log.page("p1", "docs/api", actor="femi", title="API").watch("p1", "ana")
    return log


def entries(base: tuple[str, int], site: str = "s1") -> list[dict[str, Any]]:
    status, page = call(base, "GET", f"/sites/{site}/notifications", headers=ANA)
    assert status == 200
    found: list[dict[str, Any]] = page["entries"]
    return found


def test_h1_an_entry_carries_its_link_its_sentence_and_the_actors_name(
    served: tuple[str, int], conn: Conn
) -> None:
    log = wiki_log()
    for _ in range(6):
        log.edit("p1", actor="femi")
    load(conn, log)
    (entry,) = entries(served)
    assert entry["link"] == "https://wiki.example.org/docs/api"
    assert entry["text"] == "Femi Adeyemi edited API (6 times)"
    assert entry["actor_name"] == "Femi Adeyemi" and entry["actor"] == "femi"
    assert "submission" not in entry
    # The sentence is the line the entry's mail names it by (E6), whatever the count.
    shown = MailEntry(
        category="watched_page",
        variant="edited",
        title="API",
        path="docs/api",
        actor="Femi Adeyemi",
        count=6,
    )
    mail = compose_mail(
        [shown],
        site=MailSite(name="wiki.example.org", host="wiki.example.org"),
        locale="en",
        token=unsubscribe_token(bytes(32), "ana", ["watched_page"]),
    )
    assert entry["text"] in mail.text and entry["link"] in mail.text


def test_n11_the_link_follows_a_rename_and_keeps_the_snapshot_once_deleted(
    served: tuple[str, int], conn: Conn
) -> None:
    """A rename after the event moves the link, never the title or path shown; once the page
    is deleted the link is the snapshot's path (its restore offer)."""
    log = wiki_log().edit("p1", actor="femi")
    load(conn, log)
    (read,) = entries(served)
    assert call(served, "PUT", f"/sites/s1/notifications/{read['id']}/read", headers=ANA)[0] == 200
    start = len(log.events)  # read, the entry keeps its snapshot; the rename is a new entry
    log.tick().add("page.renamed", {"page": "p1", "path": "reference/api"}, actor="gus")
    load(conn, log, start)
    (entry,) = [e for e in entries(served) if e["id"] == read["id"]]
    assert entry["link"] == "https://wiki.example.org/reference/api"
    assert (entry["title"], entry["path"]) == ("API", "docs/api")
    wiki = ReferenceWiki(HOST_SCHEMA)
    with conn.transaction():
        wiki.delete_page(conn, "p1")
    (entry,) = [e for e in entries(served) if e["id"] == read["id"]]
    assert entry["link"] == "https://wiki.example.org/docs/api"


def test_h1_a_review_links_to_its_submission_and_names_it_a_comment_anchors(
    served: tuple[str, int], conn: Conn
) -> None:
    log = wiki_log()
    log.tick().add("submission.created", {"submission": "sub 7", "page": "p1"}, actor="gus")
    log.comment("c1", "p1", "femi", mentions=["ana"], excerpt="see the table")
    load(conn, log)
    by_category = {e["category"]: e for e in entries(served)}
    review = by_category["review_requested"]
    assert review["submission"] == "sub 7"
    assert review["link"] == "https://wiki.example.org/notifications/reviews/sub%207"
    assert review["text"] == "Someone asks for your review of API"  # gus has no name
    assert "actor_name" not in review
    mention = by_category["mention"]
    assert mention["link"] == "https://wiki.example.org/docs/api#comment-c1"
    assert mention["text"] == "Femi Adeyemi mentioned you on API"


def test_h1_the_sentence_is_in_the_persons_language_and_links_use_the_sites_templates(
    served: tuple[str, int], conn: Conn
) -> None:
    log = wiki_log()
    log.add(
        "site.updated",
        {"site": "s1", "links": {"page": "https://{host}/_wiki{path}"}, "https": False},
    )
    log.add("user.updated", {"user": "ana", "locale": "de"})
    log.edit("p1", actor="femi").edit("p1", actor="femi")
    load(conn, log)
    (entry,) = entries(served)
    assert entry["text"] == "Femi Adeyemi hat API bearbeitet (2-mal)"
    assert entry["link"] == "https://wiki.example.org/_wiki/docs/api"


def test_h1_without_the_hosts_ports_a_link_is_the_default_path(db_dsn: str, conn: Conn) -> None:
    """``notify serve`` without ``--host-schema`` knows no host: the default templates' paths
    on the entry's site, English, the neutral word for the actor."""
    log = wiki_log().edit("p1", actor="femi")
    log.tick().add("submission.created", {"submission": "sub1", "page": "p1"}, actor="femi")
    load(conn, log)
    pool = open_pool(db_dsn)
    httpd = make_http_server(
        build_app(pool, schema=SCHEMA, identity=IdentityCheck()), "127.0.0.1", 0
    )
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        base = ("127.0.0.1", httpd.server_port)
        by_category = {e["category"]: e for e in entries(base)}
        sites = call(base, "GET", "/notifications/sites", headers=ANA)[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
        pool.close()
    assert by_category["watched_page"]["link"] == "/docs/api"
    assert by_category["watched_page"]["text"] == "Someone edited API"
    assert by_category["review_requested"]["link"] == "/notifications/reviews/sub1"
    assert by_category["review_requested"]["submission"] == "sub1"
    # Without the host, the sites of the person's entries are the inboxes offered.
    assert sites == {"sites": [{"id": "s1"}]}


def test_h1_the_sites_route_lists_the_inboxes_a_person_may_switch_between(
    served: tuple[str, int], conn: Conn
) -> None:
    """The host's sites with notifications on, by creation, named when they have a name; a
    site switched off is not offered (N5: its inbox is hidden)."""
    log = wiki_log()
    log.add("site.created", {"site": "s2", "host": "team.example.org", "https": False})
    log.add("site.updated", {"site": "s2", "name": "Team wiki"})
    log.add("site.created", {"site": "s3", "host": "old.example.org", "https": True})
    log.add("site.updated", {"site": "s3", "notifications": False})
    load(conn, log)
    status, answer = call(served, "GET", "/notifications/sites", headers=ANA)
    assert status == 200
    assert answer == {
        "sites": [
            {"id": "s1", "host": "wiki.example.org", "https": True},
            {"id": "s2", "host": "team.example.org", "https": False, "name": "Team wiki"},
        ]
    }
    assert call(served, "GET", "/notifications/sites")[0] == 401
