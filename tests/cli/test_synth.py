"""notify_cli.synth_logs and ``notify synth``: a deterministic, valid, large-instance event log."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from click.testing import CliRunner

from notify_cli.main import cli
from notify_cli.synth_logs import Chance, SynthConfig, synth_events
from notify_core.events.log import EventError
from notify_core.replay.lines import dumps_line
from notify_core.replay.run import Replay
from notify_core.values.instants import parse_instant

SMALL = SynthConfig(events=6_000, users=300, seed=3, max_fanout=120)


@pytest.fixture(scope="module")
def small_log() -> list[dict[str, object]]:
    return list(synth_events(SMALL))


def test_chance_is_stable_forever() -> None:
    """SplitMix64: the same seed gives the same numbers on every Python and platform."""
    chance = Chance(0)
    assert [chance.bits() for _ in range(3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]
    draws = Chance(7)
    assert all(0 <= draws.below(10) < 10 for _ in range(1000))
    assert sorted(Chance(1).sample(range(10), 10)) == list(range(10))
    assert len(set(Chance(1).sample(range(1000), 50))) == 50


def test_same_seed_same_log_other_seed_other_log(small_log: list[dict[str, object]]) -> None:
    assert list(synth_events(SMALL)) == small_log
    other = list(synth_events(SynthConfig(events=6_000, users=300, seed=4, max_fanout=120)))
    assert other != small_log


def test_exactly_the_events_asked_for_in_commit_order(small_log: list[dict[str, object]]) -> None:
    assert len(small_log) == SMALL.events
    assert [e["seq"] for e in small_log] == list(range(1, SMALL.events + 1))
    instants = [parse_instant(e["occurred_at"]) for e in small_log]
    assert instants == sorted(instants)
    assert list(synth_events(SynthConfig(events=0))) == []
    assert len(list(synth_events(SynthConfig(events=5, users=1000)))) == 5


def test_every_line_is_a_good_event_and_the_mix_is_rich(small_log: list[dict[str, object]]) -> None:
    replay = Replay(include_skips=True)
    lines = [dumps_line(event) for event in small_log]
    hints = list(replay.run(lines))
    assert not [h for h in hints if isinstance(h, EventError)]
    types = Counter(str(e["type"]) for e in small_log)
    for kind in (
        "message.created",
        "run.state_changed",
        "read_state.updated",
        "presence.changed",
        "notification_pref.updated",
        "quiet_hours.updated",
        "settings.updated",
        "access.granted",
        "access.revoked",
        "access.expiring",
        "device.pending",
    ):
        assert types[kind] > 0, kind
    assert types["message.created"] > types["read_state.updated"] > 0
    summary = replay.summary.to_json()
    assert set(summary["sends_by_kind"]) >= {"message", "mention", "dm", "run_done"}  # type: ignore[arg-type]
    assert summary["unknown_event_types"] == {}


def test_fan_outs_range_from_one_to_max(small_log: list[dict[str, object]]) -> None:
    readers: defaultdict[str, int] = defaultdict(int)
    for event in small_log:
        if event["type"] == "access.granted":
            target = event["payload"]["target"]  # type: ignore[index]
            readers[target["id"]] += 1  # type: ignore[index]
        if event["type"] == "message.created":
            break
    assert max(readers.values()) == SMALL.max_fanout
    assert min(readers.values()) == 1
    assert len(readers) == SMALL.users // 10


def test_config_is_checked() -> None:
    with pytest.raises(ValueError):
        SynthConfig(users=1)


def test_cli_streams_the_same_lines(small_log: list[dict[str, object]]) -> None:
    result = CliRunner().invoke(
        cli, ["synth", "--events=500", "--users=300", "--seed=3", "--max-fanout=120"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "".join(dumps_line(e) + "\n" for e in small_log[:500])


def test_cli_writes_a_file_and_refuses_bad_options(tmp_path: object) -> None:
    from pathlib import Path

    out = Path(str(tmp_path)) / "log.jsonl"
    result = CliRunner().invoke(cli, ["synth", "--events=50", "--users=20", f"--out={out}"])
    assert result.exit_code == 0, result.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == 50
    bad = CliRunner().invoke(cli, ["synth", "--users=1"])
    assert bad.exit_code == 2
    assert "Traceback" not in bad.output
