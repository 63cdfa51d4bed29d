"""Host categories (rule N13): declared in the log, then fanned out,
coalesced, mailed, unsubscribed and offered in the grid like a built-in category."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from inbox_log import WikiLog

from notify_cli.main import cli
from notify_core.events.log import EventError, parse_event
from notify_core.inbox import CATEGORY_BY_KEY, Group
from notify_core.inbox.access import holds, holds_host
from notify_core.inbox.admin import (
    PreferenceState,
    preference_change,
    preference_grid,
    visible_categories,
)
from notify_core.inbox.categories import registry
from notify_core.inbox.host_categories import declare, event_members, render
from notify_core.inbox.mailing import line_mail
from notify_core.inbox.prefs import InboxPrefs, InboxSettings
from notify_core.mail.cadence import EmailSchedule, email_after_for
from notify_core.mail.tokens import verify_unsubscribe_token
from notify_core.replay.lines import dumps_item
from notify_core.replay.run import Replay
from notify_core.values.errors import InvalidInput
from notify_core.values.instants import format_instant

EXAMPLE = Path(__file__).parents[3] / "examples" / "host-categories.jsonl"

STORAGE: dict[str, Any] = {
    "category": "storage_sync_failed",
    "section": "storage",
    "scope": "site",
    "defaults": {"in_app": True, "email": True},
    "priority": 50,
    "visible_to": "manage_storage",
    "candidates": {"permission": "manage_storage"},
    "group_key": ["target"],
    "strings": {
        "en": {
            "name": "Storage sync failed",
            "subject": "Sync of {target} failed",
            "line": "The sync of {target} failed: {error}",
        },
        "de": {
            "name": "Synchronisierung fehlgeschlagen",
            "subject": "Synchronisierung von {target} fehlgeschlagen",
            "line": "Synchronisierung von {target}: {error}",
        },
    },
}
LOGIN: dict[str, Any] = {
    "category": "failed_login",
    "section": "account",
    "scope": "instance",
    "origins": ["user"],
    "defaults": {"in_app": True, "email": True},
    "priority": 60,
    "candidates": {"named": True},
    "group_key": ["target"],
    "strings": {
        "en": {
            "name": "Failed sign-in",
            "subject": "Failed sign-in",
            "line": "A failed sign-in as {target}",
        }
    },
}


def host_log(mail: bool = True) -> WikiLog:
    log = WikiLog(mail=mail)
    log.add("site.created", {"site": "s2", "host": "two.example.org", "https": True})
    log.add("group.created", {"group": "admins", "manage_system": True, "rules": []})
    log.add(
        "group.created",
        {"group": "storage", "permissions": ["manage_storage"], "rules": []},
    )
    log.user("ana", groups=("storage",)).user("ben").user("root", groups=("admins",))
    log.user("de", groups=("storage",), locale="de")
    log.add("category.declared", STORAGE).add("category.declared", LOGIN)
    return log


def sync_failed(log: WikiLog, target: str = "git", site: str = "s1", **extra: Any) -> WikiLog:
    payload = {"category": "storage_sync_failed", "site": site, "target": target, "error": "x"}
    return log.tick().add("category.event", payload | extra, origin="import")


def login_failed(log: WikiLog, person: str, seconds: float = 10) -> WikiLog:
    payload = {"category": "failed_login", "target": person, "people": [person]}
    return log.tick(seconds).add("category.event", payload)


def replay(log: WikiLog | list[str], *, skips: bool = True) -> tuple[list[dict[str, Any]], Replay]:
    run = Replay(include_skips=skips)
    out = []
    for item in run.run(log.lines() if isinstance(log, WikiLog) else log):
        assert not isinstance(item, EventError), item
        out.append(json.loads(dumps_item(item)))
    return out, run


def errors(log: WikiLog) -> list[EventError]:
    return [item for item in Replay().run(log.lines()) if isinstance(item, EventError)]


# --- the declaration ----------------------------------------------------------------------------


def test_n13_a_declaration_is_a_category_beside_the_seven() -> None:
    category = declare(STORAGE)
    assert category.host and category.key == "storage_sync_failed"
    assert category.section == "storage" and category.scope == "site"
    assert category.origins == {"user", "import", "bulk"}  # all, when the host names none
    assert category.access is None and category.visible_to == "manage_storage"
    assert category.group_key({"target": "git", "error": "x"}) == "storage_sync_failed:git"
    assert category.strings_for("de") is not None
    assert category.strings_for("fr") == category.strings_for("en")
    known = registry([category])
    assert list(known)[:7] == list(CATEGORY_BY_KEY) and known[category.key] is category
    assert declare(LOGIN).section == "account" and declare(LOGIN).digest is False
    watching = declare({**LOGIN, "section": "watching"})
    assert watching.section is not None and watching.section == "watching"


@pytest.mark.parametrize(
    ("change", "code", "pointer"),
    [
        ({"category": "mention"}, "builtin_category", "/payload/category"),
        ({"strings": {"de": STORAGE["strings"]["de"]}}, "missing_member", "/payload/strings/en"),
        (
            {"strings": {"en": {"name": "n", "subject": "{0}", "line": "l"}}},
            "invalid_template",
            "/payload/strings/en/subject",
        ),
        (
            {"strings": {"en": {"name": "n", "subject": "s", "line": "{a.b}"}}},
            "invalid_template",
            "/payload/strings/en/line",
        ),
        (
            {"strings": {"en": {"name": "n", "subject": "s", "line": "{a!r}"}}},
            "invalid_template",
            "/payload/strings/en/line",
        ),
        (
            {"strings": {"en": {"name": "n", "subject": "s", "line": "{"}}},
            "invalid_template",
            "/payload/strings/en/line",
        ),
    ],
)
def test_n13_a_declaration_that_cannot_be_is_refused(
    change: dict[str, Any], code: str, pointer: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        declare({**STORAGE, **change})
    assert (info.value.code, info.value.pointer) == (code, pointer)


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"scope": "page"}, "/payload/scope"),
        ({"candidates": {"named": False}}, "/payload/candidates"),
        ({"candidates": {"permission": "p", "named": True}}, "/payload/candidates"),
        ({"defaults": {"in_app": True}}, "/payload/defaults"),
        ({"origins": []}, "/payload/origins"),
        ({"priority": 1.5}, "/payload/priority"),
        ({"strings": {"en": {"name": "n"}}}, "/payload/strings"),
    ],
)
def test_n13_the_log_checks_the_declaration_members(change: dict[str, Any], pointer: str) -> None:
    line = {
        "seq": 1,
        "type": "category.declared",
        "occurred_at": "2026-12-06T10:00:00Z",
        "payload": {**STORAGE, **change},
    }
    with pytest.raises(EventError) as info:
        parse_event(line)
    assert info.value.pointer == pointer


def test_n13_bad_declarations_and_events_are_bad_lines_naming_the_member() -> None:
    log = host_log()
    log.add("category.declared", {**STORAGE, "category": "watched_page"})
    log.add("category.event", {"category": "nope", "target": "t"})
    log.add("category.event", {"category": "mention", "target": "t"})
    log.add("category.event", {"category": "storage_sync_failed", "target": "t"})
    log.add("inbox_pref.updated", {"category": "nope", "channel": "email", "enabled": False},
            audience="ana")  # fmt: skip
    found = [(e.code, e.pointer) for e in errors(log)]
    assert found == [
        ("builtin_category", "/payload/category"),
        ("unknown_category", "/payload/category"),
        ("unknown_category", "/payload/category"),
        ("missing_member", "/payload/site"),
        ("unknown_category", "/payload/category"),
    ]


# --- access: group permissions (N8) -------------------------------------------------------------


def test_n8_a_group_permission_is_held_outright_and_manage_system_holds_them_all() -> None:
    groups = {
        "storage": Group(permissions=frozenset({"manage_storage"})),
        "admins": Group(manage_system=True),
        "readers": Group(),
    }
    assert holds_host(frozenset({"storage"}), groups, "manage_storage")
    assert holds_host(frozenset({"admins"}), groups, "manage_storage")
    assert not holds_host(frozenset({"readers"}), groups, "manage_storage")
    assert not holds_host(frozenset({"storage"}), groups, "manage_users")
    assert holds(frozenset({"storage"}), groups, "manage_storage", None)  # on no page


@given(
    st.dictionaries(
        st.sampled_from(["g1", "g2", "g3"]),
        st.builds(
            lambda admin, perms: Group(manage_system=admin, permissions=frozenset(perms)),
            st.booleans(),
            st.sets(st.sampled_from(["p1", "p2"])),
        ),
    ),
    st.frozensets(st.sampled_from(["g1", "g2", "g3", "g4"])),
    st.sampled_from(["p1", "p2"]),
)
def test_n8_a_host_permission_is_the_union_of_the_groups(
    groups: dict[str, Group], mine: frozenset[str], permission: str
) -> None:
    each = [holds_host(frozenset({g}), groups, permission) for g in mine]
    assert holds_host(mine, groups, permission) == any(each)


# --- fan-out, coalescing, cadence ---------------------------------------------------------------


def test_n13_candidates_by_permission_hold_it_and_the_actor_is_skipped() -> None:
    log = host_log()
    sync_failed(log).tick().add(
        "category.event",
        {"category": "storage_sync_failed", "site": "s2", "target": "t2"},
        actor="ana",
    )
    lines, _ = replay(log)
    entries = [(x["recipient"], x["decision"], x.get("reason")) for x in lines if "seq" in x]
    assert entries == [
        ("ana", "new", None),
        ("de", "new", None),
        ("root", "new", None),  # manage_system holds every host permission (N8)
        ("ana", "skip", "actor"),
        ("de", "new", None),
        ("root", "new", None),
    ]
    first = lines[0]
    assert first["site"] == "s1" and first["group_key"] == "storage_sync_failed:git"
    assert first["category"] == "storage_sync_failed" and first["variant"] == "new"


def test_n13_named_candidates_must_hold_visible_to() -> None:
    log = host_log()
    named = {**LOGIN, "category": "storage_note", "visible_to": "manage_storage"}
    log.add("category.declared", named)
    log.tick().add(
        "category.event", {"category": "storage_note", "target": "x", "people": ["ana", "ben"]}
    )
    lines, _ = replay(log)
    assert [(x["recipient"], x["decision"], x.get("reason")) for x in lines if "seq" in x] == [
        ("ana", "new", None),
        ("ben", "skip", "no_access"),
    ]


def test_n13_a_failed_login_coalesces_into_one_entry_and_one_mail_quiet_until_read() -> None:
    log = host_log()
    for _ in range(5):
        login_failed(log, "ben", 60)
    login_failed(log, "ben", 600)
    log.tick().add("inbox.read", {"categories": ["failed_login"]}, audience="ben")
    login_failed(log, "ben")
    lines, _ = replay(log)
    entries = [x for x in lines if x["trigger"] == "inbox"]
    mails = [x for x in lines if x["trigger"] == "mail"]
    assert [x["count"] for x in entries] == [1, 2, 3, 4, 5, 6, 1]
    assert {x["entry"] for x in entries[:6]} == {"ben:failed_login:ben:1"}
    assert entries[6]["entry"] == "ben:failed_login:ben:2"
    assert all("site" not in x for x in entries)  # an instance entry has no site
    assert [(m["recipient"], m["site"], m["entries"][0]["count"]) for m in mails] == [
        ("ben", "s1", 3),  # from the first site; the later ones join it quietly (E1)
        ("ben", "s1", 1),
    ]
    assert mails[0]["unsubscribe"] == ["failed_login"]


def test_n13_origins_sections_preferences_and_the_site_switch_apply() -> None:
    log = host_log()
    log.add("category.declared", {**LOGIN, "category": "noted", "section": "reviews"})
    log.add("notifications.settings", {"sections": {"reviews": "off"}})
    log.tick().add(
        "category.event", {"category": "noted", "target": "a", "people": ["ana"]}
    )  # section off
    log.tick().add(
        "category.event",
        {"category": "failed_login", "target": "ana", "people": ["ana"]},
        origin="import",
    )  # failed_login fires for user events only: nothing
    log.add("inbox_pref.updated", {"category": "storage_sync_failed", "channel": "in_app",
                                   "enabled": False}, audience="ana")  # fmt: skip
    log.add("inbox_pref.updated", {"category": "storage_sync_failed", "channel": "email",
                                   "enabled": False}, audience="ana")  # fmt: skip
    log.add("site.updated", {"site": "s2", "notifications": False})
    sync_failed(log, site="s2")
    sync_failed(log)
    lines, _ = replay(log)
    lines = [x for x in lines if "seq" in x]
    assert [(x["recipient"], x["decision"], x.get("reason"), x.get("site")) for x in lines] == [
        ("ana", "skip", "section_off", None),
        ("ana", "skip", "site_off", "s2"),
        ("de", "skip", "site_off", "s2"),
        ("root", "skip", "site_off", "s2"),
        ("ana", "skip", "preference", "s1"),
        ("de", "new", None, "s1"),
        ("root", "new", None, "s1"),
    ]


def test_n13_a_digest_category_waits_for_the_schedule() -> None:
    log = host_log()
    log.add("user.updated", {"user": "ana", "email_schedule": "hourly"})
    log.add("category.declared", {**STORAGE, "digest": True})
    sync_failed(log)
    log.add("category.declared", STORAGE)  # digest: no, always immediate (E2)
    sync_failed(log, "other")
    lines, _ = replay(log, skips=False)
    due = [x["email_after"] for x in lines if x.get("recipient") == "ana" and "seq" in x]
    at = datetime(2026, 11, 30, 8, 1, tzinfo=UTC)
    slot = email_after_for(
        EmailSchedule(schedule="hourly"),
        at,
        person="ana",
        digest=True,
        delay=timedelta(seconds=180),
    )
    assert due == [format_instant(slot), "2026-11-30T08:05:00Z"]


def test_n13_a_declaration_again_replaces_it_from_that_event_on() -> None:
    log = host_log()
    sync_failed(log, "a")
    log.add("category.declared", {**STORAGE, "defaults": {"in_app": True, "email": False}})
    sync_failed(log, "b")
    lines, run = replay(log, skips=False)
    emails = {(x["group_key"], x["recipient"]): x["email"] for x in lines if "seq" in x}
    assert emails[("storage_sync_failed:a", "ana")] == "pending"
    assert emails[("storage_sync_failed:b", "ana")] == "none"
    assert run.inbox.wiki.categories()["storage_sync_failed"].defaults.email is False


# --- mail, unsubscribe, the grid ----------------------------------------------------------------


def test_n13_the_mail_speaks_the_host_strings_in_the_persons_locale() -> None:
    log = host_log()
    sync_failed(log, "git", error="auth")
    run = Replay()
    sends = [
        item
        for item in run.run(log.lines())
        if getattr(item, "decision", None) == "send"
        and getattr(item, "recipient", "") in ("ana", "de")
    ]
    wiki = run.inbox.wiki
    by_person = {line.recipient: line_mail(line, wiki) for line in sends}  # type: ignore[union-attr]
    ana, de = by_person["ana"].mail, by_person["de"].mail
    assert ana.subject == "[wiki.example.org] Sync of git failed"
    assert "The sync of git failed: auth" in ana.text
    assert "https://wiki.example.org/notifications" in ana.text  # the link: the inbox
    assert de.subject == "[wiki.example.org] Synchronisierung von git fehlgeschlagen"
    assert "Synchronisierung von git: auth" in de.html
    token = ana.text.split("?t=")[1].split()[0]
    known = frozenset(wiki.categories())
    found = verify_unsubscribe_token(bytes(32), token, known_categories=known)
    assert found is not None and found.categories == ("storage_sync_failed",)


def test_n13_placeholders_are_the_events_members() -> None:
    members = event_members(
        {"category": "c", "people": ["a"], "target": "t", "n": 3, "tags": ["x", "y"]}
    )
    assert members == {"target": "t", "n": "3", "tags": '["x","y"]'}
    assert render("{target}: {n} {missing}", members) == "t: 3 {missing}"


def test_n13_the_grid_offers_a_host_category_to_those_holding_visible_to() -> None:
    known = registry([declare(STORAGE), declare(LOGIN)])
    groups = {"storage": Group(permissions=frozenset({"manage_storage"}))}
    state = PreferenceState(prefs=InboxPrefs(), schedule=EmailSchedule(schedule="immediate"))
    mine = visible_categories(known, frozenset({"storage"}), groups)
    theirs = visible_categories(known, frozenset(), groups)
    assert [c.key for c in mine][-2:] == ["failed_login", "storage_sync_failed"]
    assert [c.key for c in theirs][-1] == "failed_login"
    grid = preference_grid(state, InboxSettings(mail_configured=True), True, mine)
    row = grid["categories"][-1]
    assert row["category"] == "storage_sync_failed" and row["section"] == "storage"
    assert row["section_delivers"] == "email" and row["names"]["en"] == "Storage sync failed"
    changed = preference_change(
        state, {"categories": {"failed_login": {"email": False}}}, retention_days=60, known=known
    )
    assert changed.prefs.rows == {("failed_login", "email"): False}
    stopped = preference_change(state, {"stop_all_email": True}, retention_days=60, known=known)
    assert ("storage_sync_failed", "email") in stopped.prefs.rows
    with pytest.raises(InvalidInput):
        preference_change(state, {"categories": {"failed_login": {"email": False}}},
                          retention_days=60)  # fmt: skip


def test_n13_the_example_log_gives_its_expected_output() -> None:
    result = CliRunner().invoke(cli, ["replay", str(EXAMPLE), "--include-skips"])
    assert result.exit_code == 0, result.output
    expected = EXAMPLE.with_name("host-categories.expected.jsonl").read_text(encoding="utf-8")
    assert result.stdout == expected
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    categories = {x["category"] for x in lines if x["trigger"] == "inbox"}
    assert categories == {"storage_sync_failed", "failed_login"}
    logins = [x for x in lines if x["trigger"] == "mail" and x["recipient"] == "cy"]
    assert len(logins) == 1 and logins[0]["entries"][0]["count"] == 3
