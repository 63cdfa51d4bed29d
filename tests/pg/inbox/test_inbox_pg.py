"""The inbox on real PostgreSQL (seed 004 sections 6-9, 12; docs/rules.md N5-N12, H1-H4)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pgworld import HOST_SCHEMA, SCHEMA

from notify_cli.main import cli
from notify_core.inbox.fanout import PersonFacts
from notify_core.inbox.ports import WikiUser
from notify_pg.db.seam import Conn, array_element, load_queries, text_array
from notify_pg.inbox.fanout import InboxFanOut, Written
from notify_pg.inbox.reads import InboxPreferences, InboxReads, emit, purge
from notify_pg.inbox.rounds import FanOutRound, PurgeRound
from notify_pg.push.recorder import NullRecorder
from notify_pg.rounds.connection import RoundConnection
from notify_pg.rounds.loop import Loop
from notify_reference_host.wiki import ReferenceWiki

Connect = Callable[[], psycopg.Connection[Any]]
T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
READ_ALL = [
    {"permission": "read_pages", "match": "all"},
    {"permission": "read_comments", "match": "all"},
]


@pytest.fixture
def wiki(conn: psycopg.Connection[Any]) -> ReferenceWiki:
    """A wiki with one site, a readers group, one page and three people."""
    w = ReferenceWiki(HOST_SCHEMA)
    with conn.transaction():
        w.add_site(conn, "s1", host="wiki.example")
        w.add_group(conn, "readers", READ_ALL)
        for person in ("ana", "bob", "cy"):
            w.add_user(conn, person, email=f"{person}@example.org", verified=True)
            w.add_member(conn, "readers", person)
        w.add_page(conn, "p1", "s1", "/docs/start", title="Start")
        w.watch(conn, "p1", "ana")
        w.watch(conn, "p1", "cy")
    return w


def many_watchers(conn: psycopg.Connection[Any], count: int, group_sets: int = 1) -> None:
    """``count`` people watching p1, spread over ``group_sets`` distinct sets of groups."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO host.wiki_users (id) SELECT 'w' || lpad(i::text, 6, '0') "
            "FROM generate_series(1, %s) i",
            [count],
        )
        conn.execute(
            "INSERT INTO host.wiki_groups (id, rules) SELECT 'g' || i, %s::jsonb "
            "FROM generate_series(0, %s) i",
            ['[{"permission": "read_pages", "match": "all"}]', group_sets - 1],
        )
        # Person i is in group g(i mod sets) and in readers: group_sets distinct sets.
        conn.execute(
            "INSERT INTO host.wiki_memberships (group_id, user_id) "
            "SELECT 'g' || (i %% %s), 'w' || lpad(i::text, 6, '0') FROM generate_series(1, %s) i",
            [group_sets, count],
        )
        conn.execute(
            "INSERT INTO host.wiki_watchers (page_id, user_id) "
            "SELECT 'p1', 'w' || lpad(i::text, 6, '0') FROM generate_series(1, %s) i",
            [count],
        )


def edit(conn: psycopg.Connection[Any], n: int, actor: str = "bob") -> int | None:
    return emit(
        conn,
        "page.edited",
        {"page": "p1"},
        actor=actor,
        occurred_at=T0 + timedelta(seconds=n),
        schema=SCHEMA,
    )


def entries(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT user_id, category, group_key, count, variants, in_app, email_state, read_at "
        "FROM notify.inbox_entries ORDER BY user_id, group_key, id"
    ).fetchall()


def fanout(wiki: ReferenceWiki, **kwargs: Any) -> InboxFanOut:
    return InboxFanOut(wiki, schema=SCHEMA, **kwargs)


def test_h4_emit_writes_one_outbox_row_and_never_fails_the_host(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """H4: the request writes one outbox row; emit never fails the host's transaction."""
    with conn.transaction():
        wiki.add_page(conn, "p2", "s1", "/docs/two")
        assert edit(conn, 1) is not None
        # A payload that cannot be stored: logged, None, and the host's work goes on.
        bad = emit(conn, "page.edited", {"page": object()}, actor="bob", schema=SCHEMA)
        assert bad is None
        wiki.add_page(conn, "p3", "s1", "/docs/three")
    assert conn.execute("SELECT count(*) FROM notify.inbox_outbox").fetchone() == (1,)
    assert conn.execute("SELECT count(*) FROM host.wiki_pages").fetchone() == (3,)
    # A failure on the server (here a check the row breaks): a WARNING, None, and the host's
    # transaction still commits its work.
    conn.execute(
        "ALTER TABLE notify.inbox_outbox ADD CONSTRAINT no_edits CHECK (type <> 'page.edited') "
        "NOT VALID"
    )
    with conn.transaction():
        assert edit(conn, 2) is None
        wiki.add_page(conn, "p4", "s1", "/docs/four")
    assert conn.execute("SELECT count(*) FROM host.wiki_pages").fetchone() == (4,)
    conn.execute("ALTER TABLE notify.inbox_outbox DROP CONSTRAINT no_edits")
    # N6: an origin no category fires for writes nothing; N5: nor does a site switched off.
    assert emit(conn, "page.created", {"page": "p9"}, origin="import", schema=SCHEMA) is None
    assert emit(conn, "page.edited", {"page": "p1"}, site_notifications=False) is None
    assert conn.execute("SELECT count(*) FROM notify.inbox_outbox").fetchone() == (1,)


def test_n10_the_same_event_twice_changes_nothing(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """N10: a fan-out of the same event again (a retry after a crash) counts nobody twice."""
    edit(conn, 1)
    fanout(wiki).drain(conn)
    conn.execute("UPDATE notify.inbox_outbox SET processed_at = NULL, claimed_at = NULL")
    fanout(wiki).drain(conn)
    assert [r[3] for r in entries(conn)] == [1, 1]


def test_n10_the_upsert_without_a_listener_is_the_returning_upsert_less_its_rows() -> None:
    """N10: the fan-out reads its rows back only for a listener; both statements coalesce alike
    because the file holds the statement once and the returning form extends it."""
    queries = load_queries("notify_pg")
    quiet, returning = queries["inbox_upsert"], queries["inbox_upsert_returning"]
    text = resources.files("notify_pg").joinpath("queries/inbox.sql").read_text("utf-8")
    assert text.count("INSERT INTO {schema}.inbox_entries") == 1
    assert returning.startswith(quiet + "\n")
    assert returning[len(quiet) :].lstrip().startswith("RETURNING e.id,")


def test_n7_people_and_users_in_one_read_equal_the_two_reads(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """N7, E2: the reference host's joint read answers what its two reads answer; a subclass
    that changes one of them is answered through it."""
    with conn.transaction():
        wiki.add_user(conn, "dee", kind="agent", active=False)
        conn.execute(
            "UPDATE host.wiki_users SET time_zone = 'Europe/Berlin', email_schedule = 'daily', "
            "daily_hour = 8 WHERE id = 'cy'"
        )
    ids = ["ana", "cy", "dee", "nobody"]
    people, users = wiki.inbox_people_and_users(conn, ids)
    assert (people, users) == (wiki.inbox_people(conn, ids), wiki.inbox_users(conn, ids))
    assert set(people) == {"ana", "cy", "dee"} and people["ana"].groups == {"readers"}
    assert users["cy"].daily_hour == 8 and not people["dee"].active
    # The host builds both named tuples by position: each equals its keyword-built value.
    assert people["dee"] == PersonFacts(active=False, human=False, groups=frozenset())
    assert people["ana"] == PersonFacts(
        groups=frozenset({"readers"}), email="ana@example.org", verified=True
    )
    assert users["cy"] == WikiUser(
        id="cy", time_zone="Europe/Berlin", email_schedule="daily", daily_hour=8
    )

    class NoDee(ReferenceWiki):
        def inbox_people(self, conn: Conn, ids: Sequence[str]) -> Mapping[str, PersonFacts]:
            return {k: v for k, v in super().inbox_people(conn, ids).items() if k != "dee"}

    assert set(NoDee(HOST_SCHEMA).inbox_people_and_users(conn, ids)[0]) == {"ana", "cy"}


class _TwoReads:
    """The reference wiki without its joint read: the fan-out asks people and users apart."""

    def __init__(self, wiki: ReferenceWiki) -> None:
        self._wiki = wiki

    def __getattr__(self, name: str) -> Any:
        if name == "inbox_people_and_users":
            raise AttributeError(name)
        return getattr(self._wiki, name)


def test_n7_a_host_without_the_joint_read_fans_out_alike(
    connect: Connect, wiki: ReferenceWiki
) -> None:
    """N7, E2: with or without `InboxPeopleAndUsers`, the same entries and due times."""
    tables = []
    for host in (wiki, _TwoReads(wiki)):
        with connect() as conn:
            conn.execute("TRUNCATE notify.inbox_entries, notify.inbox_outbox")
            wiki.set_settings(conn, mail_configured=True)
            conn.execute(
                "UPDATE host.wiki_users SET email_schedule = 'daily', daily_hour = 8 "
                "WHERE id = 'cy'"
            )
            edit(conn, 1)
            worker = InboxFanOut(host, schema=SCHEMA)  # type: ignore[arg-type]
            assert worker.drain(conn) == 1
            tables.append(
                conn.execute(
                    "SELECT user_id, email_state, email_after FROM notify.inbox_entries "
                    "ORDER BY user_id"
                ).fetchall()
            )
    assert tables[0] == tables[1]
    assert [r[1] for r in tables[0]] == ["pending", "pending"]
    assert tables[0][0][2] != tables[0][1][2]  # ana at once (after the delay), cy daily


def test_n10_ids_are_written_as_they_are_whatever_they_hold(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """N10: the fan-out's array literals keep quotes, backslashes, commas, braces and NULL."""
    odd = ['a"b', "c\\d", "e,f", "{g}", "NULL", " h ", "ü"]
    with conn.transaction():
        wiki.add_page(conn, 'p{"2\\}', "s1", "/docs/odd", title="Odd")
        for person in odd:
            wiki.add_user(conn, person, email="x@example.org", verified=True)
            wiki.add_member(conn, "readers", person)
            wiki.watch(conn, 'p{"2\\}', person)
    emit(conn, "page.edited", {"page": 'p{"2\\}'}, actor="bob", occurred_at=T0, schema=SCHEMA)
    assert fanout(wiki).drain(conn) == 1
    assert [(r[0], r[2]) for r in entries(conn)] == [
        (person, 'watched_page:p{"2\\}') for person in sorted(odd, key=str.encode)
    ]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]))))
def test_n10_a_text_array_literal_reads_back_as_the_strings_it_was_made_of(
    conn: psycopg.Connection[Any], items: list[str]
) -> None:
    """N10: the ids' array literal (joined when no element holds a quote or a backslash,
    quoted element by element otherwise) reads back as the same strings, in order."""
    literal = text_array(items)
    assert literal == "{" + ",".join(array_element(t) for t in items) + "}"
    assert conn.execute("SELECT %s::text[]", [literal]).fetchone() == (items,)


def test_n10_entries_are_the_same_with_and_without_a_listener(
    connect: Connect, wiki: ReferenceWiki
) -> None:
    """N10, N12: a listener changes what is read back, never what is written."""
    tables = []
    for listening in (False, True):
        with connect() as conn:
            conn.execute("TRUNCATE notify.inbox_entries, notify.inbox_outbox")
            wiki.set_settings(conn, mail_configured=True)
            heard: list[Written] = []
            worker = fanout(wiki, write_batch=2, on_written=heard.extend if listening else None)
            for n in range(3):
                edit(conn, n)
                worker.drain(conn)
            InboxReads(SCHEMA).read(conn, "ana", at=T0 + timedelta(minutes=1))
            edit(conn, 10, actor="cy")
            worker.drain(conn)
            tables.append(entries(conn))
            assert len(heard) == (7 if listening else 0)
    assert tables[0] == tables[1]
    assert [(r[0], r[3], r[6], r[7] is None) for r in tables[0]] == [
        ("ana", 3, "skipped", False),
        ("ana", 1, "pending", True),
        ("cy", 3, "pending", True),
    ]


def test_h4_batches_are_the_same_with_and_without_pipelines(
    connect: Connect, wiki: ReferenceWiki, monkeypatch: pytest.MonkeyPatch
) -> None:
    """H4, N10: with a libpq that has no pipeline (before 14) each batch's last statement and
    cursor run one after the other: the same entries, rows heard, batches and cursors."""
    with connect() as conn:
        many_watchers(conn, 23)
        wiki.set_settings(conn, mail_configured=True)
    runs = []
    for pipelines in (True, False):
        monkeypatch.setattr(
            psycopg.Pipeline, "is_supported", classmethod(lambda cls, on=pipelines: on)
        )
        with connect() as conn:
            conn.execute("TRUNCATE notify.inbox_entries, notify.inbox_outbox")
            heard: list[Written] = []
            cursors: list[Any] = []

            def batch_done(
                event: int, conn: psycopg.Connection[Any] = conn, cursors: list[Any] = cursors
            ) -> None:
                cursors.append(
                    conn.execute(
                        "SELECT cursor, processed_at IS NOT NULL FROM notify.inbox_outbox "
                        "WHERE id = %s",
                        [event],
                    ).fetchone()
                )

            worker = fanout(
                wiki, batch=10, write_batch=4, on_written=heard.extend, on_batch=batch_done
            )
            for n in range(2):
                edit(conn, n)
            assert worker.drain(conn) == 2
            runs.append(
                (
                    entries(conn),
                    sorted((w.user_id, w.count, w.inserted) for w in heard),
                    cursors,
                    worker.stats.batches,
                    worker.stats.entries,
                )
            )
    assert runs[0] == runs[1]
    rows, heard, cursors, batches, written = runs[0]
    assert len(rows) == 25 and {r[3] for r in rows} == {2}
    assert batches == 6 and written == 50 and len(heard) == 50
    # ana, cy and w000001-w000008; then ten; then the last five and the event done.
    assert cursors == [("w000008", False), ("w000018", False), ("w000018", True)] * 2


def test_n9_a_deletion_captures_its_watchers_in_the_emit(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """N9: the emit stores the watchers before the page and its watch rows go."""
    with conn.transaction():
        emit(
            conn,
            "page.deleted",
            {"page": "p1"},
            actor="bob",
            occurred_at=T0,
            capture_watchers=wiki.watchers_query("p1"),
            schema=SCHEMA,
        )
        wiki.delete_page(conn, "p1")
    assert conn.execute("SELECT recipients FROM notify.inbox_outbox").fetchone() == (["ana", "cy"],)
    fanout(wiki).drain(conn)
    assert [(r[0], r[2], r[4]) for r in entries(conn)] == [
        ("ana", "watched_page:p1", ["deleted"]),
        ("cy", "watched_page:p1", ["deleted"]),
    ]


def test_n9_a_delete_that_failed_after_its_emit_gives_nothing(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """formats.md page_exists: the page is still there when the fan-out runs: no entry."""
    emit(conn, "page.deleted", {"page": "p1"}, actor="bob", occurred_at=T0, schema=SCHEMA)
    worker = fanout(wiki)
    assert worker.drain(conn) == 1
    assert entries(conn) == []
    assert worker.stats.dropped == {"page_exists": 1}
    assert worker.stats.skips == {}


def test_n7_skipped_candidates_are_counted_by_reason_as_a_replay_counts_them(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """The fan-out stores no skip rows (docs/decisions.md) but counts skipped candidates by
    reason, per candidate and category, like a replay's summary."""
    with conn.transaction():
        wiki.add_user(conn, "dee", email="dee@example.org", verified=True)  # in no group
        wiki.add_user(conn, "eve", active=False)
        for person in ("bob", "dee", "eve"):
            wiki.watch(conn, "p1", person)
    edit(conn, 0)  # by bob
    worker = fanout(wiki)
    assert worker.drain(conn) == 1
    assert [r[0] for r in entries(conn)] == ["ana", "cy"]
    assert worker.stats.skips == {"actor": 1, "no_access": 1, "inactive": 1}
    assert worker.stats.dropped == {}


def test_n2_opted_in_people_are_read_from_the_partial_index(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """N2: page_created reaches only those who turned it on (a stored row)."""
    prefs = InboxPreferences(SCHEMA)
    prefs.set(conn, "cy", "page_created", "in_app", True)
    prefs.set(conn, "bob", "page_created", "in_app", True)
    prefs.set(conn, "ana", "watched_page", "in_app", True)  # the default: no row
    assert conn.execute(
        "SELECT user_id, category FROM notify.inbox_preferences ORDER BY 1"
    ).fetchall() == [("bob", "page_created"), ("cy", "page_created")]
    wiki.add_page(conn, "p2", "s1", "/docs/new", title="New")
    emit(conn, "page.created", {"page": "p2"}, actor="bob", occurred_at=T0, schema=SCHEMA)
    fanout(wiki).drain(conn)
    assert [(r[0], r[2], r[5], r[6]) for r in entries(conn)] == [
        ("cy", "page_created:p2", True, "none")
    ]


def test_h4_two_workers_never_take_the_same_event(
    connect: Connect, conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """H4: two workers draining one outbox at once never take the same event."""
    for n in range(120):
        edit(conn, n)
    taken: dict[str, list[int]] = {"a": [], "b": []}
    start = threading.Barrier(2)

    def work(name: str) -> None:
        c = connect()
        w = fanout(wiki, claim_limit=7, on_batch=taken[name].append)
        start.wait()
        w.drain(c)

    threads = [threading.Thread(target=work, args=(n,)) for n in taken]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not set(taken["a"]) & set(taken["b"])
    assert len(taken["a"]) + len(taken["b"]) == 120
    assert [r[3] for r in entries(conn)] == [120, 120]


def test_n10_forty_saves_give_one_entry_with_count_40_under_parallel_fanout(
    connect: Connect, conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """N10/H4: forty saves to a watched page, fanned out by two workers: one entry, count 40."""
    for n in range(40):
        edit(conn, n)
    start = threading.Barrier(2)

    def work() -> None:
        c = connect()
        w = fanout(wiki, claim_limit=3)
        start.wait()
        w.drain(c)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = entries(conn)
    assert [(r[0], r[3]) for r in rows] == [("ana", 40), ("cy", 40)]
    latest = conn.execute("SELECT max(updated_at) FROM notify.inbox_entries").fetchone()
    assert latest == (T0 + timedelta(seconds=39),)


def test_h4_a_worker_killed_mid_fan_out_is_resumed_from_its_cursor(
    connect: Connect, db_dsn: str, conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """H4: a worker killed (pg_terminate_backend) after its first batch: the other resumes
    from the cursor, with no doubled count and no lost entry."""
    many_watchers(conn, 2_500)
    edit(conn, 0)
    doomed = connect()

    def kill(_event: int) -> None:
        with psycopg.connect(db_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [doomed.info.backend_pid])

    first = fanout(wiki, on_batch=kill)
    with pytest.raises(Exception):  # noqa: B017 - the backend is gone, whatever psycopg says
        first.drain(doomed)
    assert first.stats.batches == 1
    cursor = conn.execute("SELECT cursor, processed_at FROM notify.inbox_outbox").fetchone()
    assert cursor == ("w000998", None)  # ana, cy and the first 998 of the w-people
    second = fanout(wiki, claim_timeout=timedelta(0))
    assert second.drain(conn) == 1
    assert second.stats.batches == 2  # from the cursor on: 1,000, then the last 502
    counts = conn.execute(
        "SELECT count(*), count(DISTINCT user_id), max(count), min(count) FROM notify.inbox_entries"
    ).fetchone()
    assert counts == (2_502, 2_502, 1, 1)


def test_n7_ten_thousand_candidates_in_six_group_sets_cost_six_access_evaluations(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """N7: access is computed once per distinct group set per event, across keyset batches."""
    many_watchers(conn, 10_000, group_sets=6)
    conn.execute("DELETE FROM host.wiki_watchers WHERE user_id IN ('ana', 'cy')")
    edit(conn, 0)
    worker = fanout(wiki)
    worker.drain(conn)
    assert worker.stats.batches == 11  # ten full batches; the eleventh finds the end
    assert worker.stats.access_evaluations == 6
    assert conn.execute("SELECT count(*) FROM notify.inbox_entries").fetchone() == (10_000,)


def test_h1_list_is_keyset_paginated_and_summary_has_an_etag(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """H1: 30 a page by (updated_at, id) descending; unread up to 100 ("99+"); an ETag."""
    with conn.transaction():
        for n in range(105):
            wiki.add_comment(conn, f"c{n}", "p1", author="bob", mentions=["ana"])
            emit(
                conn,
                "comment.created",
                {"comment": f"c{n}", "page": "p1", "mentions": ["ana"], "excerpt": f"hi {n}"},
                actor="bob",
                occurred_at=T0 + timedelta(seconds=n),
                schema=SCHEMA,
            )
    fanout(wiki).drain(conn)
    reads = InboxReads(SCHEMA)
    seen: list[int] = []
    after = None
    pages = 0
    while True:
        page = reads.list_entries(conn, "ana", after=after)
        pages += 1
        assert len(page.entries) <= 30
        seen.extend(e.id for e in page.entries)
        if page.next is None:
            break
        after = page.next
    assert pages == 4
    assert len(seen) == len(set(seen)) == 105
    first = reads.list_entries(conn, "ana").entries[0]
    assert (first.category, first.group_key, first.excerpt) == ("mention", "mention:c104", "hi 104")
    summary = reads.summary(conn, "ana")
    assert (summary.unread, summary.badge) == (100, "99+")
    assert summary.latest_at == T0 + timedelta(seconds=104)
    assert reads.summary(conn, "ana").etag == summary.etag  # nothing new: not modified
    # N5: a site switched off hides its entries (kept).
    assert reads.summary(conn, "ana", hidden_sites=["s1"]).unread == 0
    assert reads.read(conn, "ana", ids=[first.id]) == [first.id]
    assert len(reads.read(conn, "ana", categories=["mention"])) == 104
    after_read = reads.summary(conn, "ana")
    assert (after_read.unread, after_read.badge) == (0, "0")
    assert after_read.etag != summary.etag


def test_h2_reads_by_filter_view_and_dismiss_touch_only_ones_own_entries(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """H2: read one, by filter, on view (page / talk tab), dismiss; only one's own rows."""
    edit(conn, 0)
    wiki.add_comment(conn, "c1", "p1", author="bob")
    emit(
        conn,
        "comment.created",
        {"comment": "c1", "page": "p1"},
        actor="bob",
        occurred_at=T0 + timedelta(seconds=1),
        schema=SCHEMA,
    )
    fanout(wiki).drain(conn)
    reads = InboxReads(SCHEMA)
    ana = {e.category: e for e in reads.list_entries(conn, "ana").entries}
    assert set(ana) == {"watched_page", "watched_page_comment"}
    assert reads.dismiss(conn, "cy", ana["watched_page"].id) is False  # not cy's
    assert reads.read(conn, "cy", ids=[ana["watched_page"].id]) == []
    assert reads.read_on_view(conn, "ana", "p1", talk=True) == [ana["watched_page_comment"].id]
    assert reads.read_on_view(conn, "ana", "p1") == [ana["watched_page"].id]
    assert reads.summary(conn, "ana").unread == 0
    cy = reads.list_entries(conn, "cy").entries
    assert reads.read(conn, "cy", categories=["watched_page"]) == [
        e.id for e in cy if e.category == "watched_page"
    ]
    assert reads.dismiss(conn, "cy", cy[0].id) is True
    assert len(reads.list_entries(conn, "cy").entries) == 1


def test_h3_purge_deletes_old_entries_and_processed_outbox_rows_in_batches(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """H3: entries past retention (read or not) and outbox rows processed a day ago go."""
    edit(conn, 0)
    fanout(wiki).drain(conn)
    edit(conn, 1)  # not processed: stays
    now = datetime.now(UTC)
    assert purge(conn, now=now, schema=SCHEMA) == {"entries": 0, "outbox": 0, "deliveries": 0}
    counts = purge(conn, now=now + timedelta(days=61), batch=1, schema=SCHEMA)
    assert counts == {"entries": 2, "outbox": 1, "deliveries": 0}
    assert conn.execute("SELECT count(*) FROM notify.inbox_outbox").fetchone() == (1,)


@pytest.mark.parametrize("batch", [1, 2, 10_000])
def test_h3_the_purge_walks_the_people_and_resumes_at_the_last_one(
    conn: psycopg.Connection[Any], batch: int
) -> None:
    """H3: the purge walks the people (no index on updated_at, migration 0017): a batch that
    stops inside a person's old entries resumes at that person; newer entries stay."""
    now = datetime(2026, 11, 30, tzinfo=UTC)
    rows = [("ana", 70), ("ana", 61), ("ana", 3), ("bob", 90), ("cy", 1), ("dee", 65)]
    for n, (user, days) in enumerate(rows):
        at = now - timedelta(days=days)
        conn.execute(
            "INSERT INTO notify.inbox_entries (user_id, category, variant, group_key, variants, "
            "last_event, in_app, created_at, updated_at) "
            "VALUES (%s, 'watched_page', 'edited', %s, ARRAY['edited'], 1, true, %s, %s)",
            [user, f"k{n}", at, at],
        )
    assert purge(conn, now=now, batch=batch, schema=SCHEMA) == {
        "entries": 4,
        "outbox": 0,
        "deliveries": 0,
    }
    left = conn.execute("SELECT user_id, group_key FROM notify.inbox_entries ORDER BY 1, 2")
    assert left.fetchall() == [("ana", "k2"), ("cy", "k4")]


def test_h4_notify_worker_fans_out_the_outbox_and_h3_purges(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki, db_dsn: str
) -> None:
    """H4/H3: `notify worker` runs the inbox's round: the outbox is fanned out, and the purge
    runs at the worker's first round."""
    edit(conn, 0)
    old = edit(conn, 1)
    conn.execute(
        "UPDATE notify.inbox_outbox SET processed_at = now() - interval '2 days' WHERE id = %s",
        [old],
    )
    result = CliRunner().invoke(cli, ["worker", "--dsn", db_dsn, "--once"])
    assert result.exit_code == 0, result.output
    assert [(r[0], r[3]) for r in entries(conn)] == [("ana", 1), ("cy", 1)]
    assert conn.execute(
        "SELECT count(*) FROM notify.inbox_outbox WHERE processed_at IS NULL"
    ).fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM notify.inbox_outbox").fetchone() == (1,)


def test_h3_the_purge_round_purges_at_the_first_pass_and_then_once_per_period(
    conn: psycopg.Connection[Any], wiki: ReferenceWiki
) -> None:
    """H3: scheduled in the worker's loop: at the first pass, then once per ``purge_every``."""
    now = [T0 + timedelta(hours=1)]
    connection = RoundConnection(lambda: conn, schema=SCHEMA)
    worker = fanout(wiki)
    purging = PurgeRound(
        worker, connection, NullRecorder(), every=timedelta(days=90), clock=lambda: now[0]
    )
    loop = Loop([FanOutRound(worker, connection, NullRecorder()), purging], connection=connection)
    edit(conn, 0)
    assert loop.run_once() == 1  # one event fanned out; nothing old enough to purge
    assert purging.next_purge == now[0] + timedelta(days=90)
    now[0] += timedelta(days=70)
    assert loop.run_once() == 0  # the entries are past retention, but the purge waits its turn
    assert purging.purged == {"entries": 0, "outbox": 0, "deliveries": 0}
    now[0] += timedelta(days=20)
    assert loop.run_once() == 3  # the two entries and the processed outbox row
    assert purging.purged == {"entries": 2, "outbox": 1, "deliveries": 0}
