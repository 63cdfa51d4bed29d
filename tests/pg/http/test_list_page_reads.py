"""A page of the inbox list (H1) reads the host's sites and pages at once when the host has
the batched ports (``inbox_sites_by_id``, ``inbox_pages_by_id``): the statements a page costs
do not grow with the number of its sites and pages, and the answer is byte for byte the one
of a host that has only the per-item ports (``inbox_site``, ``inbox_page``)."""

from __future__ import annotations

import json
from typing import Any

import psycopg
from inbox_log import WikiLog
from pgworld import HOST_SCHEMA, SCHEMA

from notify_core.events.log import parse_event
from notify_pg.http.handlers import inbox_list
from notify_pg.http.responses import Response
from notify_pg.http.shown import plans_ready
from notify_pg.inbox.fanout import InboxFanOut
from notify_reference_host.wiki import ReferenceWiki
from notify_reference_host.wiki_load import WikiLoader

Conn = psycopg.Connection[Any]

#: The host's batched reads: a host without them is read once per site and per page.
BATCHED = ("inbox_sites_by_id", "inbox_pages_by_id")


class CountingCursor(psycopg.Cursor[Any]):
    """Counts the statements sent through a connection."""

    count = 0

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        CountingCursor.count += 1
        return super().execute(*args, **kwargs)


class PerItemHost:
    """The reference wiki as a host that has only the per-item ports (no batched reads)."""

    def __init__(self, wiki: ReferenceWiki) -> None:
        self._wiki = wiki

    def __getattr__(self, name: str) -> Any:
        if name.removesuffix("_plan") in BATCHED:
            raise AttributeError(name)
        return getattr(self._wiki, name)


def load(conn: Conn, log: WikiLog, start: int = 0) -> None:
    wiki = ReferenceWiki(HOST_SCHEMA)
    loader = WikiLoader(wiki, InboxFanOut(wiki, schema=SCHEMA), schema=SCHEMA)
    for text in log.lines()[start:]:
        loader.feed(conn, parse_event(json.loads(text)))


def add_sites(log: WikiLog, first: int, last: int) -> WikiLog:
    """Sites ``s<first>`` to ``s<last>``, two pages each that ana watches and femi edits;
    every other site German, every third on plain HTTP with its own page template."""
    for n in range(first, last + 1):
        site = f"s{n}"
        if n > 1:
            log.add("site.created", {"site": site, "host": f"w{n}.example.org", "https": True})
        if n % 2 == 0:
            log.add("site.updated", {"site": site, "primary_locale": "de", "name": f"Wiki {n}"})
        if n % 3 == 0:
            links = {"page": "http://{host}/w{path}"}
            log.add("site.updated", {"site": site, "https": False, "links": links})
        for k in (1, 2):
            page = f"p{n}-{k}"
            log.page(page, f"docs/{page}", actor="femi", site=site, title=f"Page {page}")
            log.watch(page, "ana")
            log.edit(page, actor="femi" if k == 1 else "gus")
    return log


def world() -> WikiLog:
    log = WikiLog()
    log.add("group.created", {"group": "rev", "rules": []})
    log.add(
        "review_rule.set",
        {"rule": "r1", "site": "s1", "match": "all", "reviewer_groups": ["rev"], "enabled": True},
    )
    log.user("ana", groups=("readers", "rev"), name="Ana Lima")
    log.user("femi", name="Femi Adeyemi")
    log.user("gus")  # no display name: the neutral word
    add_sites(log, 1, 3)
    log.tick().add("submission.created", {"submission": "sub 7", "page": "p1-1"}, actor="gus")
    log.comment("c1", "p2-1", "femi", mentions=["ana"], excerpt="see the table")
    # N11: a link follows a rename; a deleted page links to the snapshot's path.
    log.tick().add("page.renamed", {"page": "p3-1", "path": "moved/p3-1"}, actor="gus")
    return log


def listed(conn: Conn, host: Any) -> tuple[Response, int]:
    """The list of every site for ana, and the statements it cost."""
    conn.cursor_factory = CountingCursor
    CountingCursor.count = 0
    try:
        answer = inbox_list(conn, "ana", host=host, schema=SCHEMA)
        return answer, CountingCursor.count
    finally:
        conn.cursor_factory = psycopg.Cursor


def test_h1_a_page_reads_its_sites_and_pages_at_once_for_the_per_item_answer(conn: Conn) -> None:
    """Entries across sites (their schemes, templates, languages) and pages (renamed,
    deleted, a comment, a review): the same bytes, and 5 statements with 3 sites or 15."""
    wiki = ReferenceWiki(HOST_SCHEMA)
    per_item = PerItemHost(wiki)
    assert plans_ready(per_item)  # still served natively: the per-item plan forms are there
    log = world()
    load(conn, log)
    with conn.transaction():
        wiki.delete_page(conn, "p2-2")
    few, few_cost = listed(conn, wiki)
    few_per_item, few_per_item_cost = listed(conn, per_item)
    assert few.status == 200 and few.body == few_per_item.body
    shown = json.loads(few.body)["entries"]
    assert len({e["site"] for e in shown}) == 3 and len({e.get("page") for e in shown}) == 6
    by_link = {e["link"]: e for e in shown}
    # Each site's own scheme, template and language, the page where it is now (N11).
    assert by_link["http://w3.example.org/w/moved/p3-1"]["text"] == (
        "Someone moved Page p3-1 (2 times)"
    )
    assert by_link["https://w2.example.org/docs/p2-2"]["text"].endswith("Page p2-2 bearbeitet")
    assert by_link["https://w2.example.org/docs/p2-1#comment-c1"]["actor_name"] == "Femi Adeyemi"
    review = by_link["https://wiki.example.org/notifications/reviews/sub%207"]
    assert review["submission"] == "sub 7"
    # The list, the person, the actors' names, the sites, the pages: 5 statements; one read
    # per site (3) and per page (6) without the batched ports.
    assert few_cost == 5
    assert few_per_item_cost == 3 + 3 + 6

    start = len(log.events)
    load(conn, add_sites(log, 4, 15), start)
    many, many_cost = listed(conn, wiki)
    many_per_item, many_per_item_cost = listed(conn, per_item)
    assert many.body == many_per_item.body
    shown = json.loads(many.body)["entries"]
    sites = {e["site"] for e in shown}
    pages = {e["page"] for e in shown if "submission" not in e}
    assert (len(shown), len(sites), len(pages)) == (30, 15, 28)  # a full page
    assert many_cost == few_cost
    assert many_per_item_cost == 3 + len(sites) + len(pages)


def test_the_batched_reads_answer_what_the_per_item_reads_answer(conn: Conn) -> None:
    """The reference host's batched ports: the known ones among the ids, a deleted page as it
    was, each equal to its per-item read; an unknown id is left out."""
    wiki = ReferenceWiki(HOST_SCHEMA)
    load(conn, world())
    with conn.transaction():
        wiki.delete_page(conn, "p2-2")
    sites = wiki.inbox_sites_by_id(conn, ["s2", "s1", "s3", "nowhere"])
    assert sites == {s: wiki.inbox_site(conn, s) for s in ("s1", "s2", "s3")}
    pages = wiki.inbox_pages_by_id(conn, ["p2-2", "p3-1", "gone"])
    assert pages == {p: wiki.inbox_page(conn, p) for p in ("p2-2", "p3-1")}
    assert pages["p2-2"].deleted and pages["p3-1"].path == "moved/p3-1"
    assert wiki.inbox_sites_by_id(conn, []) == {} == wiki.inbox_pages_by_id(conn, [])
