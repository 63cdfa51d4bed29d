"""Reviewers per seed 004 section 4.3 (N1, N7: ``review_requested``), in a replay; the same
log on PostgreSQL in tests/pg/inbox/test_inbox_guards_pg.py.

Only members of the reviewer groups of enabled rules matching the page are told: holding
``manage_system`` makes nobody a recipient, a disabled rule reaches no one, a rule of another
site does not apply, the submitter is skipped as the actor, a guest's suggestion notifies
like anyone's, and an update coalesces into the reviewer's entry of the submission.
"""

from __future__ import annotations

import json

from inbox_log import WikiLog

from notify_core.events.log import EventError
from notify_core.replay.lines import dumps_item
from notify_core.replay.run import Replay


def review_log() -> WikiLog:
    log = WikiLog()
    log.add("site.created", {"site": "s2", "host": "other.example.org", "https": True})
    log.add("group.created", {"group": "admins", "manage_system": True, "rules": []})
    log.add("group.created", {"group": "rev", "rules": []})
    log.add("group.created", {"group": "rev2", "rules": []})
    for rule, site, groups, enabled in (
        ("r1", "s1", ["rev"], True),
        ("r2", "s1", ["rev2"], False),  # disabled: reaches no one
        ("r3", "s2", ["admins"], True),  # another site's rule
    ):
        log.add(
            "review_rule.set",
            {
                "rule": rule,
                "site": site,
                "match": "all",
                "reviewer_groups": groups,
                "enabled": enabled,
            },
        )
    log.user("ana", groups=("readers", "admins"), name="Ana")  # manage_system, no reviewer
    log.user("rita", groups=("rev",), name="Rita")
    log.user("rolf", groups=("rev2",), name="Rolf")
    log.user("sam", groups=("readers", "rev"), name="Sam")
    log.user("guest", groups=())  # the guest account: no name, no group
    log.page("p1", "guide/install", actor="sam")
    log.tick().add("submission.created", {"submission": "sub1", "page": "p1"}, actor="guest")
    log.tick().add("submission.updated", {"submission": "sub1", "page": "p1"}, actor="sam")
    log.tick().add("submission.created", {"submission": "sub2", "page": "p1"}, actor="sam")
    return log


def review_lines(lines: list[str]) -> list[tuple[int, str, str, str, int]]:
    """The replay's review entry decisions: (seq, recipient, decision, entry, count)."""
    out = []
    for item in Replay(include_skips=True).run(lines):
        assert not isinstance(item, EventError), item
        line = json.loads(dumps_item(item))
        if line["trigger"] == "inbox" and line["category"] == "review_requested":
            out.append(
                (
                    line["seq"],
                    line["recipient"],
                    line["decision"],
                    line.get("reason") or line.get("entry"),
                    line.get("count", 0),
                )
            )
    return out


def test_n1_reviewers_are_the_members_of_the_reviewer_groups_of_enabled_rules_only() -> None:
    log = review_log()
    first, update, second = (
        e["seq"] for e in log.events if str(e["type"]).startswith("submission.")
    )
    assert review_lines(log.lines()) == [
        # A guest's suggestion notifies; ana (manage_system) and rolf (a disabled rule) are
        # no candidates at all.
        (first, "rita", "new", "rita:review:sub1:1", 1),
        (first, "sam", "new", "sam:review:sub1:1", 1),
        # The update coalesces into the same entry; sam submitted it (the actor).
        (update, "rita", "coalesce", "rita:review:sub1:1", 2),
        (update, "sam", "skip", "actor", 0),
        (second, "rita", "new", "rita:review:sub2:1", 1),
        (second, "sam", "skip", "actor", 0),
    ]
