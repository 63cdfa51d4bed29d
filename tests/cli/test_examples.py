"""examples/team-week.jsonl: the committed log is what examples/generate.py writes, and it
replays cleanly with every kind of hint and every trigger."""

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

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LOG = EXAMPLES / "team-week.jsonl"
Replayed = tuple[list[dict[str, Any]], dict[str, Any]]


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("team_week", EXAMPLES / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Replayed:
    summary_file = tmp_path_factory.mktemp("team-week") / "summary.json"
    result = CliRunner().invoke(
        cli, ["replay", str(LOG), "--summary-json", str(summary_file), "--include-skips"]
    )
    assert result.exit_code == 0, result.output
    hints = [json.loads(line) for line in result.stdout.splitlines()]
    return hints, json.loads(summary_file.read_text(encoding="utf-8"))


def test_committed_log_is_what_the_script_writes() -> None:
    generator = load_generator()
    assert LOG.read_text(encoding="utf-8") == generator.render(generator.build())


def test_log_size_and_world() -> None:
    events = [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines()]
    assert 300 <= len(events) <= 2_000
    types = Counter(e["type"] for e in events)
    for kind in (
        "quiet_hours.updated",
        "notification_pref.updated",
        "settings.updated",
        "presence.changed",
        "read_state.updated",
        "device.pending",
        "push.registered",
        "access.revoked",
        "access.expiring",
    ):
        assert types[kind] > 0, kind
    zones = {e["payload"].get("time_zone") for e in events if e["type"] == "user.created"}
    assert {"Europe/Berlin", "America/New_York", "Asia/Kathmandu"} <= zones
    states = {e["payload"]["state"] for e in events if e["type"] == "run.state_changed"}
    assert states == {"queued", "running", "waiting_input", "completed", "failed", "cancelled"}
    prefs = [e["payload"]["preference"] for e in events if e["type"] == "notification_pref.updated"]
    assert any(p["level"] == "mute" for p in prefs)
    assert any("muted_until" in p for p in prefs)
    channel_kinds = {e["payload"]["kind"] for e in events if e["type"] == "channel.created"}
    assert channel_kinds == {"text", "forum", "dm"}


def test_replay_exits_0_without_bad_lines(replayed: Replayed) -> None:
    result = CliRunner().invoke(cli, ["replay", str(LOG)])
    assert result.exit_code == 0, result.output
    assert "bad event" not in result.stderr
    _, summary = replayed
    assert summary["bad_lines"] == 0
    assert summary["unknown_event_types"] == {}


def test_every_kind_and_trigger_appears(replayed: Replayed) -> None:
    hints, summary = replayed
    kinds = set(summary["sends_by_kind"])
    assert kinds >= {
        "message",
        "mention",
        "dm",
        "run_done",
        "run_failed",
        "input_needed",
        "security",
        "admin",
        "sync",
    }
    assert {h["trigger"] for h in hints} == {"event", "flush", "release", "badge_sync"}
    vias = {via for routes in summary["routes_by_kind"].values() for via in routes}
    assert vias == {"gateway", "push", "push_delayed"}
    skips = summary["skips_by_reason"]
    for reason in ("level", "not_allowed", "admin_disabled", "active_in_thread"):
        assert skips.get(reason, 0) > 0, reason
    assert 0 < summary["quiet_share"] < 1  # quiet hours in several zones, some hints quiet


def test_the_mention_without_read_right_is_counted_not_written(
    replayed: Replayed,
) -> None:
    hints, summary = replayed
    assert summary["skips_by_reason"]["not_allowed"] >= 1
    assert not [h for h in hints if h["recipient"] == "u-hana" and h.get("thread") == "t-backend"]


def test_explain_a_decision_of_the_example() -> None:
    events = [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines()]
    waiting = next(
        e
        for e in events
        if e["type"] == "run.state_changed" and e["payload"]["state"] == "waiting_input"
    )
    result = CliRunner().invoke(
        cli, ["explain", str(LOG), "--seq", str(waiting["seq"]), "--recipient", "u-ben"]
    )
    assert result.exit_code == 0, result.output
    assert "D1" in result.stdout and "decision:" in result.stdout
