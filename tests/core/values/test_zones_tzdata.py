"""G1: zone data comes from the tzdata package only, never from the host's zone files.

A host whose zone files disagree with the package (older, or simply different) must not move
a due time: one log gives the same decisions on every machine. The replay summary names the
tzdata release it read.
"""

from __future__ import annotations

import json
import shutil
import zoneinfo
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from inbox_log import WikiLog

from notify_cli.main import cli
from notify_core.replay.lines import dumps_item
from notify_core.replay.run import Replay
from notify_core.values.zones import TZDATA_VERSION, _known_zones, load_zone

HAVANA = "America/Havana"
#: After Cuba's clocks would have gone back (1 November 2026).
WHEN = datetime(2026, 12, 2, 15, 0, tzinfo=UTC)


def _forget_zones() -> None:
    zoneinfo.ZoneInfo.clear_cache()
    load_zone.cache_clear()
    _known_zones.cache_clear()


@pytest.fixture
def disagreeing_host(tmp_path: Path) -> Iterator[Path]:
    """A TZPATH whose America/Havana is another zone's file (New York: UTC-5 in December, where
    the package's Havana, 2026f, stays at UTC-4)."""
    import tzdata

    source = Path(tzdata.__file__).parent / "zoneinfo" / "America" / "New_York"
    (tmp_path / "America").mkdir()
    shutil.copyfile(source, tmp_path / "America" / "Havana")
    _forget_zones()
    zoneinfo.reset_tzpath(to=[str(tmp_path)])
    try:
        yield tmp_path
    finally:
        zoneinfo.reset_tzpath()
        _forget_zones()


def havana_log() -> WikiLog:
    log = WikiLog()
    log.user("ana", email_schedule="daily", daily_hour=8, time_zone=HAVANA)
    log.user("ben").page("p1", "ops/runbook").watch("p1", "ana")
    log.now = WHEN
    return log.edit("p1")


def replayed(log: WikiLog) -> list[str]:
    run = Replay()
    return [dumps_item(item) for item in run.run(log.lines())]


def test_g1_a_replay_ignores_a_host_zone_file_that_disagrees(disagreeing_host: Path) -> None:
    """The host's file answers another offset (the test means something), yet the replay's
    due times are those of the tzdata package, even with the host's zone already cached."""
    host_zone = zoneinfo.ZoneInfo(HAVANA)  # fills the process-wide cache from the host file
    assert host_zone.utcoffset(WHEN.replace(tzinfo=None)) != load_zone(HAVANA).utcoffset(
        WHEN.replace(tzinfo=None)
    )
    with_host_file = replayed(havana_log())
    zoneinfo.reset_tzpath(to=[])
    _forget_zones()
    without = replayed(havana_log())
    assert with_host_file == without
    due = [json.loads(line)["email_after"] for line in without if '"trigger":"inbox"' in line]
    # 08:00 in the package's Havana plus ana's offset (under an hour).
    local = datetime.fromisoformat(due[0]).astimezone(load_zone(HAVANA))
    assert local.hour == 8


def test_g1_a_name_only_the_host_knows_is_no_zone(disagreeing_host: Path) -> None:
    """A zone file the package does not ship is unknown, whatever the host holds."""
    (disagreeing_host / "Mars").mkdir()
    shutil.copyfile(disagreeing_host / "America" / "Havana", disagreeing_host / "Mars" / "Base")
    assert "Mars/Base" in zoneinfo.available_timezones()
    from notify_core.values.errors import InvalidRule
    from notify_core.values.zones import validate_time_zone

    with pytest.raises(InvalidRule):
        validate_time_zone("Mars/Base")


def test_g1_the_replay_summary_names_the_tzdata_version(tmp_path: Path) -> None:
    import tzdata

    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(havana_log().lines()) + "\n")
    summary = tmp_path / "summary.json"
    result = CliRunner().invoke(cli, ["replay", str(log), "--summary-json", str(summary)])
    assert result.exit_code == 0, result.output
    assert TZDATA_VERSION == tzdata.IANA_VERSION
    assert json.loads(summary.read_text())["tzdata"] == tzdata.IANA_VERSION
