"""examples/wiki-week.jsonl: the committed log is what examples/generate_wiki.py writes, and
it replays cleanly through the inbox path with every category, decision and skip reason."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from notify_cli.main import cli
from notify_core.inbox import CATEGORIES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LOG = EXAMPLES / "wiki-week.jsonl"
Replayed = tuple[list[dict[str, Any]], dict[str, Any]]


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wiki_week", EXAMPLES / "generate_wiki.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Replayed:
    summary_file = tmp_path_factory.mktemp("wiki-week") / "summary.json"
    result = CliRunner().invoke(
        cli, ["replay", str(LOG), "--summary-json", str(summary_file), "--include-skips"]
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return lines, json.loads(summary_file.read_text(encoding="utf-8"))


def test_committed_log_is_what_the_script_writes() -> None:
    generator = load_generator()
    assert LOG.read_text(encoding="utf-8") == generator.render(generator.build())


def test_the_world_of_the_week() -> None:
    events = [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines()]
    types = Counter(e["type"] for e in events)
    for kind in (
        "site.created",
        "group.created",
        "review_rule.set",
        "page.watched",
        "page.edited",
        "page.renamed",
        "page.deleted",
        "page.restored",
        "comment.created",
        "comment.edited",
        "submission.created",
        "submission.updated",
        "page.viewed",
        "inbox.read",
        "inbox_pref.updated",
        "inbox_pref.stop_all_email",
    ):
        assert types[kind] > 0, kind
    assert {e.get("origin") for e in events} >= {"import", "bulk"}


def test_every_category_decision_and_reason_appears(replayed: Replayed) -> None:
    lines, summary = replayed
    assert summary["bad_lines"] == 0 and summary["unknown_event_types"] == {}
    assert summary["unknown_references"] == {}  # every reply follows its parent
    assert set(summary["entries_by_category"]) == {c.key for c in CATEGORIES}
    assert {d for by in summary["entries_by_category"].values() for d in by} == {
        "new",
        "coalesce",
        "skip",
    }
    reasons = set(summary["entry_skips_by_reason"])
    assert reasons == {
        "actor",
        "inactive",
        "no_access",
        "preference",
        "section_off",
        "site_off",
        "lower_priority",
    }
    emails = {line["email"] for line in lines if "email" in line}
    assert emails == {"none", "pending", "sent", "skipped"}
    assert {line["trigger"] for line in lines} == {"inbox", "mail"}
    # E2: Chen's daily digest and Dara's hourly mails bundle entries; E4: the handbook's
    # hour without notifications skips what fell due then.
    assert set(summary["mails_by_template"]) == {"single", "digest"}
    assert summary["mail_skips_by_reason"] == {"site_off": 1}
    chen = [line for line in lines if line["trigger"] == "mail" and line["recipient"] == "chen"]
    assert any(line["template"] == "digest" for line in chen)


def test_the_partner_sees_public_pages_only(replayed: Replayed) -> None:
    lines, _ = replayed
    eli = [line for line in lines if line["recipient"] == "eli" and "entry" in line]
    assert eli
    assert all(line["category"] == "watched_page" for line in eli)  # no read_comments
