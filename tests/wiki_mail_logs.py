"""Generated wiki logs with mail on, for the tests of what mails say (E6).

`wiki_mail_log(seed)` writes a small wiki from a seed: people with distinctive ids (so that a
scan for an id in a mail means something), some with a display name, some renamed or left
without one; a site with the default links or seed 004's routes, named or not; pages created
published, as a draft, or by a storage sync; edits by people and by syncs; comments with
mentions, replies and deletions; review suggestions; views and reads. Deterministic:
``random.Random(seed)``.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

START = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
READ_ALL = [
    {"permission": "read_pages", "match": "all"},
    {"permission": "read_comments", "match": "all"},
]
NAMES = ["Ada Lovelace", "Zoë Ångström", "Ben <b>&amp;</b>", "李雷", "O'Neil", "Ann\nLine"]
SEED_004_LINKS = {
    "unsubscribe": "/_api/notifications/unsubscribe?t={token}",
    "manage": "/_profile/notifications",
    "review": "/_inbox/review/{submission}",
}
#: A site's names: plain, with markup and non-ASCII, and none (the mails name its host).
SITE_NAMES = ["Ops-Wiki <Zürich> & Co", None, "Ops Wiki"]
PAGES = {"p1": ("ops/runbook", "Runbook"), "p2": ("team/on call", "On call"), "p3": ("faq", "FAQ")}


def person_ids(seed: int) -> list[str]:
    """The people of a log: ids no text of a mail could contain by chance."""
    rng = random.Random(f"ids-{seed}")
    return [f"u-{rng.getrandbits(40):010x}" for _ in range(6)]


def _site_name(seed: int) -> dict[str, str]:
    """The site's ``name`` (E6: what its mails call the wiki), or none (its host), drawn
    apart from the log's own draws so that the rest of a seed's log stays as it was."""
    name = random.Random(f"site-{seed}").choice(SITE_NAMES)
    return {} if name is None else {"name": name}


def wiki_mail_log(seed: int, steps: int = 40) -> list[str]:
    """A wiki log (JSON lines) from a seed."""
    rng = random.Random(seed)
    people = person_ids(seed)
    out: list[dict[str, Any]] = []
    now = START

    def add(kind: str, payload: dict[str, Any], **envelope: Any) -> None:
        event = {"seq": len(out) + 1, "type": kind, "occurred_at": _instant(now), **envelope}
        event["payload"] = payload
        out.append(event)

    add("notifications.settings", {"mail_configured": True, "email_delay_s": 180})
    add(
        "site.created",
        {
            "site": "s1",
            "host": "wiki.example.org",
            "https": True,
            **({"links": SEED_004_LINKS} if rng.random() < 0.5 else {}),
            **_site_name(seed),
        },
    )
    add("group.created", {"group": "all", "rules": READ_ALL})
    add("group.created", {"group": "rev", "rules": []})
    add(
        "review_rule.set",
        {"rule": "r1", "site": "s1", "match": "all", "reviewer_groups": ["rev"], "enabled": True},
    )
    for person in people:
        user: dict[str, Any] = {
            "user": person,
            "kind": "human",
            "email": f"{person}@example.org",
            "verified": True,
            "locale": rng.choice(["en", "de", "fr"]),
        }
        if rng.random() < 0.7:
            user["name"] = rng.choice(NAMES)
        add("user.created", user)
        add("group.member_added", {"group": "all", "user": person})
        if rng.random() < 0.4:
            add("group.member_added", {"group": "rev", "user": person})
        if rng.random() < 0.5:
            add(
                "inbox_pref.updated",
                {"category": "page_created", "channel": "email", "enabled": True},
                audience=person,
            )
    comments: list[str] = []
    for step in range(steps):
        now += timedelta(seconds=rng.choice([30, 90, 200, 400, 4000]))
        actor = rng.choice(people)
        page = rng.choice(list(PAGES))
        what = rng.choice(
            [
                *("create", "edit", "edit", "sync", "comment", "comment", "delete_comment"),
                *("watch", "submit", "view", "rename_user", "unname_user"),
            ]
        )
        if what == "create":
            path, title = PAGES[page]
            payload: dict[str, Any] = {
                "page": f"{page}-{step}",
                "site": "s1",
                "path": f"{path}/{step}",
                "locale": "en",
                "title": f"{title} {step}",
            }
            if rng.random() < 0.5:
                payload["publish_state"] = rng.choice(["draft", "published", "scheduled"])
            if rng.random() < 0.2:
                add("page.created", payload)  # a storage sync: no actor
            else:
                add("page.created", payload, actor=actor)
        elif what == "watch" or step < 6:
            path, title = PAGES[page]
            if not any(e["type"] == "page.created" and e["payload"]["page"] == page for e in out):
                payload = {"page": page, "site": "s1", "path": path, "locale": "en", "title": title}
                add("page.created", payload, actor=actor)
            for person in rng.sample(people, 3):
                add("page.watched", {"page": page, "user": person})
        elif not any(e["type"] == "page.created" and e["payload"]["page"] == page for e in out):
            continue
        elif what == "edit":
            add("page.edited", {"page": page}, actor=actor)
        elif what == "sync":
            add("page.edited", {"page": page}, origin="import")
        elif what == "comment":
            comment = f"c{step}"
            extra: dict[str, Any] = {
                "mentions": rng.sample(people, rng.choice([0, 1, 2])),
                "excerpt": rng.choice(["Looks good", "See the steps", "Why?"]),
            }
            if comments and rng.random() < 0.4:
                extra["parent"] = rng.choice(comments)
            add("comment.created", {"comment": comment, "page": page, **extra}, actor=actor)
            comments.append(comment)
        elif what == "delete_comment" and comments:
            add("comment.deleted", {"comment": rng.choice(comments)}, actor=actor)
        elif what == "submit":
            kind = rng.choice(["submission.created", "submission.updated"])
            add(kind, {"submission": f"sub-{page}", "page": page}, actor=actor)
        elif what == "view":
            add("page.viewed", {"page": page, "talk": rng.random() < 0.5}, audience=actor)
        elif what == "rename_user":
            add("user.updated", {"user": actor, "name": rng.choice(NAMES)})
        elif what == "unname_user":
            add("user.updated", {"user": actor, "unset": ["name"]})
    now += timedelta(days=2)
    add("notifications.settings", {})  # the drain runs up to here: every due mail goes
    return [json.dumps(e, ensure_ascii=False) for e in out]


def _instant(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")
