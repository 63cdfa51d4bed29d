"""Writes examples/wiki-week.jsonl: a week of a small wiki, for the inbox path of the replay.

    python examples/generate_wiki.py     # rewrites wiki-week.jsonl beside this script

Deterministic like examples/generate.py: a fixed seed, no clock, no randomness but
``random.Random(SEED)``; the committed log equals what this script writes
(tests/cli/test_examples_wiki.py checks it). Replay it:

    notify replay examples/wiki-week.jsonl --include-skips

The story, Monday 7 to Friday 11 December 2026 (UTC):
- Sites ``docs`` (Berlin) and ``handbook`` (New York); ``archive`` has notifications switched
  off. Mail is configured on Monday at 07:00 (nothing is emailed before).
- Groups: ``readers`` read everything; ``staff`` read everything but ``hr/`` pages (a deny
  rule); ``hr`` reads ``hr/``; ``admins`` manage the system; ``partners`` read pages tagged
  ``public`` only (no comments). Review rules send suggestions on ``docs`` to ``tech-writers``
  and on ``handbook/hr`` to ``hr``.
- People: Ana (admin), Ben, Chen (a daily digest at 09:00 Shanghai time, immediate from
  Friday afternoon), Dara (hr, hourly mails), Eli (a partner), Femi and Gus (tech writers),
  Hana (unverified address), Ivo (deactivated on Wednesday), a sync bot (system account).
- Watchers on most pages; Chen turns on new-page entries everywhere, Dara deletions; Ben
  wants watched pages in the inbox only, Femi no mentions at all; Gus stops all email on
  Thursday; the administrator switches the ``everything`` section to in-app only on
  Wednesday and ``reviews`` off for Friday morning.
- Every working day: edits (some publishing or scheduling), comments with replies and
  mentions (one edited to add a mention), suggestions and their updates, page views (some of
  the talk tab) and reads, a rename; on Tuesday a git import rewrites pages (origin
  ``import``); on Thursday a tag deletion removes two pages (origin ``bulk``) and one is
  restored, and the handbook's notifications are off for an hour (its due mails are skipped).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

SEED = 20261207
HERE = Path(__file__).resolve().parent
OUT = HERE / "wiki-week.jsonl"
MONDAY = datetime(2026, 12, 7, tzinfo=UTC)

ALL = [
    {"permission": "read_pages", "match": "all"},
    {"permission": "read_comments", "match": "all"},
]
GROUPS: dict[str, dict[str, object]] = {
    "readers": {"rules": ALL},
    "staff": {
        "rules": [
            *ALL,
            {"permission": "read_pages", "match": "path_prefix", "value": "hr/", "deny": True},
            {"permission": "read_comments", "match": "path_prefix", "value": "hr/", "deny": True},
        ]
    },
    "hr": {
        "rules": [
            {"permission": "read_pages", "match": "path_prefix", "value": "hr/"},
            {"permission": "read_comments", "match": "path_prefix", "value": "hr/"},
        ]
    },
    "admins": {"manage_system": True, "rules": []},
    "partners": {"rules": [{"permission": "read_pages", "match": "tag", "value": "public"}]},
    "tech-writers": {"rules": ALL},
}
#: person -> (groups, extra user members)
PEOPLE: dict[str, tuple[list[str], dict[str, object]]] = {
    "ana": (["admins", "readers"], {"locale": "de", "time_zone": "Europe/Berlin"}),
    "ben": (["staff"], {"time_zone": "America/New_York"}),
    "chen": (
        ["staff"],
        {"locale": "zh", "time_zone": "Asia/Shanghai", "email_schedule": "daily", "daily_hour": 9},
    ),
    "dara": (["staff", "hr"], {"time_zone": "Europe/Dublin", "email_schedule": "hourly"}),
    "eli": (["partners"], {}),
    "femi": (["staff", "tech-writers"], {"time_zone": "Africa/Lagos"}),
    "gus": (["staff", "tech-writers"], {"time_zone": "Australia/Sydney"}),
    "hana": (["readers"], {"verified": False}),
    "ivo": (["staff"], {}),
    "sync-bot": (["admins"], {"system": True}),
}
HUMANS = [p for p in PEOPLE if p != "sync-bot"]
#: Display names (E6: what mails call people); Ivo and the sync bot have none, so mails name
#: them by the neutral word.
NAMES: dict[str, str] = {
    "ana": "Ana Costa",
    "ben": "Ben Okafor",
    "chen": "Chen Wei",
    "dara": "Dara Byrne",
    "eli": "Eli Novak",
    "femi": "Femi Adeyemi",
    "gus": "Gus Larsen",
    "hana": "Hana Sato",
}
#: The handbook mounts its routes where seed 004 puts them (E6 link templates): no code.
HANDBOOK_LINKS: dict[str, str] = {
    "unsubscribe": "/_api/notifications/unsubscribe?t={token}",
    "manage": "/_profile/notifications",
    "inbox": "/_inbox",
    "review": "/_inbox/review/{submission}",
}
#: page -> (site, path, tags)
PAGES: dict[str, tuple[str, str, list[str]]] = {
    "p-install": ("docs", "guide/install", ["public"]),
    "p-upgrade": ("docs", "guide/upgrade", ["public"]),
    "p-api": ("docs", "reference/api", []),
    "p-faq": ("docs", "faq", ["public"]),
    "p-onboarding": ("handbook", "team/onboarding", []),
    "p-leave": ("handbook", "hr/leave", []),
    "p-salaries": ("handbook", "hr/salaries", ["confidential"]),
    "p-oncall": ("handbook", "team/oncall", []),
    "p-old-notes": ("archive", "notes/2019", []),
}


class WikiWeek:
    """Collects events at instants and writes them in time order, seq from 1."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.items: list[tuple[datetime, int, dict[str, object]]] = []
        self.comments: dict[str, list[str]] = {page: [] for page in PAGES}
        self.commented_at: dict[str, datetime] = {}
        self.count = 0

    def add(self, at: datetime, kind: str, payload: dict[str, object], **envelope: object) -> None:
        """Add an event at an instant (events at one instant keep their order)."""
        self.count += 1
        event: dict[str, object] = {"type": kind, "occurred_at": _instant(at), **envelope}
        event["payload"] = payload
        self.items.append((at, self.count, event))

    def events(self) -> list[dict[str, object]]:
        """The events in commit order, numbered."""
        out = []
        for seq, (_, _, event) in enumerate(sorted(self.items, key=lambda x: (x[0], x[1])), 1):
            out.append({"seq": seq, **event})
        return out


def _instant(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def world(week: WikiWeek) -> None:
    """Sites, groups, people, review rules, pages, watchers and choices: Sunday evening."""
    at = MONDAY - timedelta(hours=6)
    week.add(at, "notifications.settings", {"email_delay_s": 180, "retention_days": 60})
    for site, host, zone in (
        ("docs", "docs.example.org", "Europe/Berlin"),
        ("handbook", "handbook.example.org", "America/New_York"),
        ("archive", "archive.example.org", "UTC"),
    ):
        payload = {"site": site, "host": host, "https": site != "archive", "time_zone": zone}
        if site == "handbook":
            payload["links"] = HANDBOOK_LINKS
        week.add(at, "site.created", {**payload, "primary_locale": "en"})
    week.add(at, "site.updated", {"site": "archive", "notifications": False})
    for group, body in GROUPS.items():
        week.add(at, "group.created", {"group": group, **body})
    for person, (groups, extra) in PEOPLE.items():
        user: dict[str, object] = {"user": person, "kind": "human"}
        if person in NAMES:
            user["name"] = NAMES[person]
        user["email"] = f"{person}@example.org"
        user["verified"] = True
        week.add(at, "user.created", {**user, **extra})
        for group in groups:
            week.add(at, "group.member_added", {"group": group, "user": person})
    rules = (
        ("rr-docs", "docs", "all", None, ["tech-writers"]),
        ("rr-hr", "handbook", "path_prefix", "hr/", ["hr"]),
        ("rr-old", "handbook", "path_prefix", "team/", ["admins"]),
    )
    for rule, site, match, value, reviewers in rules:
        payload = {"rule": rule, "site": site, "match": match, "reviewer_groups": reviewers}
        if value is not None:
            payload["value"] = value
        week.add(at, "review_rule.set", {**payload, "enabled": rule != "rr-old"})
    for page, (site, path, tags) in PAGES.items():
        payload = {"page": page, "site": site, "path": path, "locale": "en", "title": page[2:]}
        week.add(at, "page.created", {**payload, "tags": tags}, actor="ana")
        watchers = week.rng.sample(HUMANS, 4)
        for person in sorted(set(watchers) | {"eli"} if "public" in tags else set(watchers)):
            week.add(at, "page.watched", {"page": page, "user": person})
    prefs = (
        ("chen", "page_created", "in_app", True),
        ("dara", "page_deleted", "in_app", True),
        ("dara", "page_deleted", "email", True),
        ("ben", "watched_page", "email", False),
        ("femi", "mention", "in_app", False),
        ("femi", "mention", "email", False),
    )
    for person, category, channel, enabled in prefs:
        payload = {"category": category, "channel": channel, "enabled": enabled}
        week.add(at, "inbox_pref.updated", payload, audience=person)


def day(week: WikiWeek, number: int) -> None:
    """One working day: edits, comments, suggestions, views and reads at random times."""
    rng = week.rng
    start = MONDAY + timedelta(days=number, hours=7)
    editors = [p for p in HUMANS if p not in ("eli", "hana")]
    for _ in range(14):
        at = start + timedelta(minutes=rng.randrange(0, 600))
        page = rng.choice(list(PAGES))
        actor = rng.choice(editors)
        variant = rng.choice(["edited"] * 6 + ["published", "scheduled", "unpublished"])
        payload: dict[str, object] = {"page": page}
        if variant != "edited":
            payload["variant"] = variant
        week.add(at, "page.edited", payload, actor=actor)
    for _ in range(8):
        at = start + timedelta(minutes=rng.randrange(0, 600))
        page = rng.choice(list(PAGES))
        actor = rng.choice(HUMANS)
        comment = f"c-{number}-{week.count}"
        payload = {"comment": comment, "page": page, "excerpt": f"note on {page[2:]}"}
        if week.comments[page] and rng.random() < 0.5:
            parent = rng.choice(week.comments[page])
            if week.commented_at[parent] < at:  # a reply follows its parent in the log
                payload["parent"] = parent
        if rng.random() < 0.5:
            payload["mentions"] = rng.sample([p for p in HUMANS if p != actor], 2)
        week.comments[page].append(comment)
        week.commented_at[comment] = at
        week.add(at, "comment.created", payload, actor=actor)
        if rng.random() < 0.25:
            mentions = [*payload.get("mentions", []), rng.choice(HUMANS)]  # type: ignore[list-item]
            edit = {"comment": comment, "mentions": sorted(set(mentions)), "excerpt": "edited"}
            week.add(at + timedelta(minutes=3), "comment.edited", edit, actor=actor)
    for _ in range(3):
        at = start + timedelta(minutes=rng.randrange(0, 600))
        page = rng.choice(["p-install", "p-api", "p-leave", "p-onboarding"])
        submission = f"sub-{page}-{rng.choice(['ben', 'hana', 'eli'])}"
        author = submission.rsplit("-", 1)[1]
        payload = {"submission": submission, "page": page, "author": author}
        week.add(at, "submission.created", payload, actor=author)
        week.add(at + timedelta(minutes=40), "submission.updated", payload, actor=author)
    for _ in range(10):
        at = start + timedelta(minutes=rng.randrange(0, 660))
        person = rng.choice(HUMANS)
        page = rng.choice(list(PAGES))
        week.add(at, "page.viewed", {"page": page, "talk": rng.random() < 0.4}, audience=person)
    for person in rng.sample(HUMANS, 2):
        at = start + timedelta(hours=10, minutes=rng.randrange(0, 60))
        week.add(at, "inbox.read", {}, audience=person)
    at = start + timedelta(hours=9)
    week.add(at, "inbox.read", {"categories": ["watched_page_comment"]}, audience="ana")


def story(week: WikiWeek) -> None:
    """The week's particular events, on top of the daily routine."""
    monday = MONDAY + timedelta(hours=7)
    week.add(monday, "notifications.settings", {"mail_configured": True})
    week.add(
        monday + timedelta(hours=3),
        "page.renamed",
        {"page": "p-faq", "path": "help/faq"},
        actor="femi",
    )
    week.add(
        monday + timedelta(hours=5),
        "page.created",
        {
            "page": "p-style",
            "site": "docs",
            "path": "guide/style",
            "locale": "en",
            "title": "Style guide",
            "publish_state": "draft",
        },
        actor="gus",
    )
    tuesday = MONDAY + timedelta(days=1, hours=2)
    for n, page in enumerate(["p-install", "p-upgrade", "p-api"]):
        week.add(tuesday + timedelta(seconds=n), "page.edited", {"page": page}, origin="import")
    week.add(
        tuesday + timedelta(seconds=5),
        "page.created",
        {
            "page": "p-changelog",
            "site": "docs",
            "path": "reference/changelog",
            "locale": "en",
            "title": "Changelog",
        },
        origin="import",
    )
    wednesday = MONDAY + timedelta(days=2, hours=8)
    week.add(wednesday, "notifications.settings", {"sections": {"everything": "in_app"}})
    week.add(wednesday, "user.updated", {"user": "ivo", "active": False})
    week.add(
        wednesday + timedelta(hours=1),
        "user.updated",
        {"user": "hana", "verified": True, "unset": ["locale"]},
    )
    thursday = MONDAY + timedelta(days=3, hours=9)
    week.add(thursday, "inbox_pref.stop_all_email", {}, audience="gus")
    for page in ("p-old-notes", "p-oncall"):
        week.add(
            thursday + timedelta(hours=2),
            "page.deleted",
            {"page": page},
            actor="ana",
            origin="bulk",
        )
    week.add(thursday + timedelta(hours=3), "page.restored", {"page": "p-oncall"}, actor="ana")
    week.add(thursday + timedelta(hours=4), "page.deleted", {"page": "p-style"}, actor="gus")
    friday = MONDAY + timedelta(days=4, hours=7)
    week.add(friday, "notifications.settings", {"sections": {"reviews": "off"}})
    week.add(
        friday + timedelta(hours=4), "notifications.settings", {"sections": {"reviews": "email"}}
    )
    week.add(friday + timedelta(hours=5), "group.member_removed", {"group": "hr", "user": "dara"})
    week.add(
        friday + timedelta(hours=6), "user.updated", {"user": "chen", "email_schedule": "immediate"}
    )
    week.add(
        thursday + timedelta(hours=1), "site.updated", {"site": "handbook", "notifications": False}
    )
    week.add(
        thursday + timedelta(hours=2), "site.updated", {"site": "handbook", "notifications": True}
    )


def build(seed: int = SEED) -> list[dict[str, object]]:
    """Return the events of the week, in commit order."""
    week = WikiWeek(seed)
    world(week)
    story(week)
    for number in range(5):
        day(week, number)
    return week.events()


def render(events: list[dict[str, object]]) -> str:
    """Return the log text: one compact JSON object per line, UTF-8 as is."""
    return "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in events)


def main() -> None:
    """Write the log beside this script."""
    OUT.write_text(render(build()), encoding="utf-8")


if __name__ == "__main__":
    main()
