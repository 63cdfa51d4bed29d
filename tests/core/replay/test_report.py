"""The replay report (``notify replay --report``): its data as values, and the HTML file.

The browser's view of the same file is tests/cli/test_report_browser.py.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from notify_cli.install import install_hint
from notify_cli.main import cli
from notify_cli.report import chart_specs, render_report, skip_table
from notify_core.replay.report import report_data
from notify_core.replay.run import Summary, compare

ROOT = Path(__file__).resolve().parents[3]
WEEK = ROOT / "examples" / "team-week.jsonl"


def _summary(pushes: dict[str, int], hours: dict[tuple[str, int], int]) -> Summary:
    summary = Summary()
    summary.pushes = Counter(pushes)
    summary.push_hours = Counter(hours)
    summary.decisions = Counter({"send": 10, "skip": 4})
    summary.sends_by_kind = Counter({"message": 8, "sync": 2})
    summary.quiet = 2
    summary.skips = Counter({"level": 3, "read": 1})
    summary.flush_counts = Counter({2: 3, 5: 1})
    return summary


def test_report_data_of_one_replay() -> None:
    summary = _summary({"u-a": 1, "u-b": 1, "u-c": 4}, {("message", 9): 4, ("dm", 23): 2})
    data = report_data([("policy", summary)])
    assert data["policies"] == ["policy"]
    by_hour = data["pushes_by_hour"]
    assert isinstance(by_hour, list) and len(by_hour) == 2 * 24  # every hour of both kinds
    assert {"policy": "policy", "hour": 9, "kind": "message", "pushes": 4} in by_hour
    assert {"policy": "policy", "hour": 10, "kind": "message", "pushes": 0} in by_hour
    # Badge syncs are no hint sends: the quiet share is of the 8 others, as in the summary.
    assert data["quiet"] == [
        {"policy": "policy", "sound": "quiet", "sends": 2},
        {"policy": "policy", "sound": "with sound", "sends": 6},
    ]
    assert data["pushes_per_recipient"] == [
        {"policy": "policy", "pushes": 1, "recipients": 2},
        {"policy": "policy", "pushes": 4, "recipients": 1},
    ]
    assert data["skips_by_reason"] == [
        {"policy": "policy", "reason": "level", "skips": 3},
        {"policy": "policy", "reason": "read", "skips": 1},
    ]
    assert data["messages_per_flush"] == [
        {"policy": "policy", "messages": 2, "flushes": 3},
        {"policy": "policy", "messages": 5, "flushes": 1},
    ]
    (totals,) = data["totals"]  # type: ignore[misc]
    assert totals["quiet_share"] == 0.25
    assert (totals["p50"], totals["p90"], totals["max"]) == (1, 4, 4)
    assert (totals["flushes"], totals["messages_flushed"]) == (4, 11)
    assert "difference" not in data


def test_report_data_of_a_comparison() -> None:
    a = _summary({"u-a": 3}, {("message", 9): 3})
    b = _summary({"u-a": 1, "u-b": 1}, {("message", 9): 1, ("dm", 2): 1})
    data = report_data([("A", a), ("B", b)])
    assert data["difference"] == compare(a, b)
    change = data["pushes_by_hour_change"]
    assert isinstance(change, list)
    assert {"hour": 9, "kind": "message", "change": -2} in change
    assert {"hour": 2, "kind": "dm", "change": 1} in change
    assert sum(int(row["change"]) for row in change) == -1
    rows = data["pushes_per_recipient"]
    assert isinstance(rows, list)
    assert {row["policy"] for row in rows} == {"A", "B"}


def test_user_text_is_escaped() -> None:
    hostile = '<img src=x onerror="alert(1)">&'
    a = _summary({hostile: 3}, {(hostile, 9): 3})
    b = _summary({hostile: 1}, {(hostile, 9): 1})
    page = render_report([("A", a), ("B", b)], "<log>.jsonl", [None, "<b>.toml"])
    assert "<img" not in page and "<log>" not in page and "<b>" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;" in page
    assert "&lt;log&gt;.jsonl" in page


def _offline(page: str) -> None:
    """No script, and nothing the browser would fetch: no src, no link, no CSS url()."""
    page = page.replace('<link rel="icon" href="data:,">', "", 1)  # an empty inline icon
    assert not re.search(r"<script|<link|<iframe|<img|\ssrc=|url\(|@import", page, re.I)
    # The only addresses are XML namespaces, which nothing fetches.
    for address in re.findall(r"https?://[^\"'\s<>]+", page):
        assert address.startswith("http://www.w3.org/"), address


def test_cli_writes_one_offline_file(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    result = CliRunner().invoke(cli, ["replay", str(WEEK), "--report", str(report)])
    assert result.exit_code == 0, result.output
    page = report.read_text("utf-8")
    _offline(page)
    charts = re.findall(r'data-chart="(\w+)"', page)
    assert charts == [
        "pushes_by_hour",
        "quiet",
        "pushes_per_recipient",
        "skips_by_reason",
        "messages_per_flush",
    ]
    assert page.count("<svg") == len(charts)


def test_cli_report_of_a_comparison(tmp_path: Path) -> None:
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text("coalesce_window_s = 90\n")
    b.write_text("coalesce_window_s = 0\n")
    report = tmp_path / "compare.html"
    result = CliRunner().invoke(
        cli,
        ["replay", str(WEEK), "--policy", str(a), "--compare", str(b), "--report", str(report)],
    )
    assert result.exit_code == 0, result.output
    page = report.read_text("utf-8")
    _offline(page)
    assert "Difference: B minus A" in page
    assert 'data-chart="pushes_by_hour_change"' in page
    # Both policies side by side: each chart titles its policy.
    assert "pushes per hour (UTC) (A)" in page and "pushes per hour (UTC) (B)" in page


def test_bad_report_path_is_one_line(tmp_path: Path) -> None:
    for path, reason in [
        (tmp_path / "missing" / "r.html", "no such directory"),
        (tmp_path, "is a directory"),
    ]:
        result = CliRunner().invoke(cli, ["replay", str(WEEK), "--report", str(path)])
        assert result.exit_code == 2
        assert result.stdout == ""  # refused before the replay
        assert result.stderr.count("\n") == 1 and reason in result.stderr, result.stderr


def test_missing_extra_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # import fails as if not installed
    result = CliRunner().invoke(cli, ["replay", str(WEEK), "--report", str(tmp_path / "r.html")])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and install_hint("report") in result.stderr
    assert "install -e '" in result.stderr  # from the clone the tests run in
    assert not (tmp_path / "r.html").exists()


def _layers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The single-view specs of a chart: itself, its layers, or those of each chart beside."""
    if "hconcat" in spec:
        return [view for part in spec["hconcat"] for view in _layers(part)]
    if "layer" in spec:
        return [view for part in spec["layer"] for view in _layers(part)]
    return [spec]


@pytest.mark.parametrize("policies", [1, 2])
def test_pushes_per_recipient_counts_people_whole(policies: int) -> None:
    # One recipient per bin: the axis that read 0.0, 0.2, ... 1.0.
    summary = _summary({"u-a": 20, "u-b": 100, "u-c": 190}, {("message", 9): 310})
    specs = chart_specs([(name, summary) for name in ["A", "B"][:policies]])
    bars = [v for v in _layers(specs["pushes_per_recipient"]) if v["mark"]["type"] == "bar"]
    assert len(bars) == policies
    for view in bars:
        axis = view["encoding"]["y"]["axis"]
        assert (axis["tickMinStep"], axis["format"]) == (1, "d")
        # Never more ticks than the domain's top: the steps are whole (see _whole_numbers).
        assert "domain('y')[1]" in axis["tickCount"]["expr"]


@pytest.mark.parametrize(("recipients", "top"), [(1, 1), (2, 2), (3, 3), (40, 40)])
def test_the_drawn_recipient_ticks_are_distinct_whole_numbers(recipients: int, top: int) -> None:
    # The spec alone did not do it (format "d" labelled a 0.5 tick "1" again): read the labels.
    summary = _summary({f"u-{n}": 7 for n in range(recipients)}, {("message", 9): 7})
    page = render_report([("policy", summary)], "log.jsonl", [None])
    figure = re.search(r'data-chart="pushes_per_recipient".*?</svg>', page, re.S)
    assert figure is not None
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", figure.group(0))
    labels = texts[texts.index("pushes per recipient") + 1 : texts.index("recipients")]
    assert labels == sorted(set(labels), key=int) and labels[0] == "0", labels
    assert all(label.isdigit() for label in labels) and int(labels[-1]) <= top, labels


def test_skips_by_reason_is_a_log_scale_beside_a_table_of_every_reason() -> None:
    a = _summary({"u-a": 1}, {("message", 9): 1})
    a.skips = Counter({"level": 760, "read": 1, "no_route": 6})
    b = _summary({"u-a": 1}, {("message", 9): 1})
    b.skips = Counter({"level": 700, "active_in_thread": 15})
    summaries = [("A", a), ("B", b)]
    views = _layers(chart_specs(summaries)["skips_by_reason"])
    assert len(views) == 2
    for view in views:
        x = view["encoding"]["x"]
        assert x["scale"]["type"] == "log"
        # A reason skipped once keeps a bar: the bars start below 1, unstacked.
        assert x["scale"]["domainMin"] < 1 and x["stack"] is None
        assert x["axis"]["values"] == [1, 10, 100, 1000]
    head, rows = skip_table(report_data(summaries))
    assert head == ["reason", "A", "B"]
    assert rows == [
        ["level", 760, 700],
        ["no_route", 6, 0],
        ["read", 1, 0],
        ["active_in_thread", 0, 15],
    ]
    page = render_report(summaries, "log.jsonl", [None, None])
    beside = re.search(r'<div class="beside">(.*?)</div>', page, re.S)
    assert beside is not None and 'data-chart="skips_by_reason"' in beside.group(1)
    assert "<td>active_in_thread</td><td>0</td><td>15</td>" in beside.group(1)


def _figure_texts(page: str, chart: str) -> list[str]:
    figure = re.search(rf'data-chart="{chart}".*?</figure>', page, re.S)
    assert figure is not None, chart
    return re.findall(r"<text[^>]*>([^<]*)</text>", figure.group(0))


def test_percentiles_of_one_value_share_a_named_line() -> None:
    """On a small log p90 and p99 fall on one value: one line named ``p90 = p99``, where two
    lines on top of each other showed one (issue 40 point 7); distinct values keep theirs."""
    pushes = {f"u-{n}": 3 for n in range(5)} | {"u-x": 9}
    summary = _summary(pushes, {("message", 9): 24})
    assert (summary.to_json()["push_volume_per_recipient"]) == {
        "recipients": 6,
        "p50": 3,
        "p90": 9,
        "p99": 9,
        "max": 9,
    }
    page = render_report([("policy", summary)], "log.jsonl", [None])
    texts = _figure_texts(page, "pushes_per_recipient")
    assert "p50" in texts and "p90 = p99" in texts
    assert "p90" not in texts and "p99" not in texts
    rules = [
        v
        for v in _layers(chart_specs([("policy", summary)])["pushes_per_recipient"])
        if v["mark"]["type"] == "rule"
    ]
    assert len(rules) == 1  # one layer of rules: one line per distinct value (2 here)


def test_a_policy_without_flushes_beside_one_with_them_says_none() -> None:
    """Compare mode: policy B sent no flush; its frame says "none" instead of staying empty."""
    a = _summary({"u-a": 1}, {("message", 9): 1})
    b = _summary({"u-a": 1}, {("message", 9): 1})
    b.flush_counts = Counter()
    page = render_report([("A", a), ("B", b)], "log.jsonl", [None, None])
    texts = _figure_texts(page, "messages_per_flush")
    assert "messages per flush (A)" in texts and "messages per flush (B)" in texts
    assert texts.count("none") == 1
    # With flushes on both sides, no label.
    both = render_report([("A", a), ("B", a)], "log.jsonl", [None, None])
    assert "none" not in _figure_texts(both, "messages_per_flush")
