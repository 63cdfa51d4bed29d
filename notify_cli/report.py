"""``notify replay --report``: one self-contained HTML file of charts, readable offline.

The rows come from `notify_core.replay.report.report_data`; each chart is a Vega-Lite spec built
with
Altair and rendered to inline SVG by ``vl-convert-python`` (no script, font or style fetched:
the page is HTML, CSS and SVG only). Both libraries are the ``report`` extra.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence
from typing import Any

from notify_cli.install import install_hint
from notify_cli.options import BadInput, write_file
from notify_core.replay.report import HELD_BACK, report_data
from notify_core.replay.run import Summary

__all__ = [
    "chart_specs",
    "check_report",
    "generator",
    "render_report",
    "skip_table",
    "write_report",
]

_WIDTH = 420
_HEIGHT = 220

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1000px;
       color: #1f2328; padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: 0.5rem 0; }
td, th { border: 1px solid #d0d7de; padding: 0.2rem 0.6rem; text-align: right; }
td:first-child, th:first-child { text-align: left; }
figure { margin: 0.5rem 0; } figcaption { color: #57606a; font-size: 0.9rem; }
.empty { color: #57606a; }
.beside { display: flex; flex-wrap: wrap; gap: 1.5rem; align-items: flex-start; }
"""


def _libraries() -> tuple[Any, Any]:
    try:
        import altair
        import vl_convert
    except ImportError:
        raise BadInput(f"--report needs the report extra: {install_hint('report')}") from None
    return altair, vl_convert


def _whole_numbers(alt: Any) -> Any:
    """A y axis of whole numbers only: people are counted whole.

    A week of a few recipients per bin had ticks 0.0, 0.2, ... 1.0. With ``tickMinStep=1``
    and ``format="d"`` a domain of 0 to 1 still had a tick at 0.5, labelled "1" a second time
    (vl-convert 1.9); so the tick count is also at most the domain's top: n ticks or fewer
    over 0 to n are whole steps (1, 2, 5, 10, ...). The scale is ``y``: the charts side by
    side share it.
    """
    return alt.Axis(
        tickMinStep=1,
        format="d",
        tickCount={"expr": "min(ceil(height / 40), domain('y')[1])"},
    )


def _svg(vlc: Any, chart: Any) -> str:
    svg: str = vlc.vegalite_to_svg(chart.to_dict())
    return svg


def _size(svg: str) -> tuple[str, str]:
    found = re.search(r'<svg[^>]*\swidth="([\d.]+)"[^>]*\sheight="([\d.]+)"', svg)
    assert found is not None, "vl-convert wrote an SVG without a size"
    return found.group(1), found.group(2)


def _figure(vlc: Any, name: str, chart: Any, caption: str) -> str:
    svg = _svg(vlc, chart)
    width, height = _size(svg)
    return (
        f'<figure class="chart" data-chart="{name}" data-width="{width}" '
        f'data-height="{height}">{svg}<figcaption>{html.escape(caption)}</figcaption></figure>'
    )


def _side_by_side(alt: Any, charts: list[Any]) -> Any:
    if len(charts) == 1:
        return charts[0]
    return alt.hconcat(*charts).resolve_scale(x="shared", y="shared")


def _rows(data: dict[str, object], key: str, policy: str) -> list[dict[str, object]]:
    rows = data[key]
    assert isinstance(rows, list)
    return [row for row in rows if row["policy"] == policy]


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = "".join(f"<th>{html.escape(str(h))}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1%}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _change(a: object, b: object) -> str:
    if isinstance(a, float) and isinstance(b, float):
        return f"{(b - a) * 100:+.1f} points"
    assert isinstance(a, int) and isinstance(b, int)
    return f"{b - a:+,}"


def chart_specs(summaries: Sequence[tuple[str, Summary]]) -> dict[str, dict[str, Any]]:
    """Return the Vega-Lite spec (Altair's JSON) of every chart the report of ``summaries`` draws.

    Keys are the charts' names (``data-chart`` in the page); a chart without rows is absent.

    Raises:
        BadInput: Altair is missing (the ``report`` extra).
    """
    alt, _ = _libraries()
    data = report_data(summaries)
    return {
        name: chart.to_dict()
        for name, chart in _charts(alt, data, [name for name, _ in summaries]).items()
    }


def _charts(alt: Any, data: dict[str, object], policies: list[str]) -> dict[str, Any]:
    """The report's Altair charts by name, in page order; a chart without rows is absent."""
    totals = data["totals"]
    assert isinstance(totals, list)
    charts: dict[str, Any] = {}

    def bars(key: str, build: Any, title: str) -> None:
        if any(_rows(data, key, p) for p in policies):
            charts[key] = _side_by_side(
                alt,
                [
                    build(rows, p) if (rows := _rows(data, key, p)) else none(p, title)
                    for p in policies
                ],
            )

    def titled(policy: str, text: str) -> str:
        return f"{text} ({policy})" if len(policies) == 2 else text

    def none(policy: str, title: str) -> Any:
        """The frame of a policy without rows beside one with some: labelled, not empty."""
        return (
            alt.Chart(alt.Data(values=[{"label": "none"}]), title=titled(policy, title))
            .mark_text(fontSize=16, color="#57606a")
            .encode(text="label:N", x=alt.value(_WIDTH / 2), y=alt.value(_HEIGHT / 2))
            .properties(width=_WIDTH, height=_HEIGHT)
        )

    # Pushes per hour of the day by kind.
    def by_hour(rows: list[dict[str, object]], policy: str) -> Any:
        return (
            alt.Chart(alt.Data(values=rows), title=titled(policy, "pushes per hour (UTC)"))
            .mark_bar()
            .encode(
                x=alt.X("hour:O", title="hour of the day (UTC)"),
                y=alt.Y("sum(pushes):Q", title="pushes"),
                color=alt.Color("kind:N", title="kind"),
            )
            .properties(width=_WIDTH, height=_HEIGHT)
        )

    bars("pushes_by_hour", by_hour, "pushes per hour (UTC)")

    # The quiet share of sends.
    def quiet(rows: list[dict[str, object]], policy: str) -> Any:
        return (
            alt.Chart(alt.Data(values=rows), title=titled(policy, "sends by sound"))
            .mark_bar()
            .encode(
                x=alt.X(
                    "sends:Q", stack="normalize", title="share of sends", axis=alt.Axis(format="%")
                ),
                color=alt.Color("sound:N", title=""),
            )
            .properties(width=_WIDTH, height=40)
        )

    # Always drawn: its two rows exist even when both are zero.
    charts["quiet"] = _side_by_side(alt, [quiet(_rows(data, "quiet", p), p) for p in policies])

    # Pushes per recipient: the distribution, and the summary's percentiles.
    def per_recipient(rows: list[dict[str, object]], policy: str) -> Any:
        total = next(t for t in totals if t["policy"] == policy)
        # Percentiles of one value share one line, named together ("p90 = p99"): drawn
        # apart, the later one hid the earlier (small logs).
        names: dict[object, list[str]] = {}
        for q in ("p50", "p90", "p99"):
            names.setdefault(total[q], []).append(q)
        marks = [{"at": at, "percentile": " = ".join(qs)} for at, qs in names.items()]
        histogram = (
            alt.Chart(alt.Data(values=rows))
            .mark_bar(opacity=0.6)
            .encode(
                x=alt.X("pushes:Q", bin=alt.Bin(maxbins=30), title="pushes per recipient"),
                y=alt.Y("sum(recipients):Q", title="recipients", axis=_whole_numbers(alt)),
            )
        )
        rules = (
            alt.Chart(alt.Data(values=marks))
            .mark_rule(strokeDash=[5, 3], strokeWidth=2)
            .encode(
                x="at:Q",
                color=alt.Color(
                    "percentile:N", title="percentile", sort=[m["percentile"] for m in marks]
                ),
            )
        )
        # Each line's name at its top, so that one line of several percentiles says so: on
        # the right of a line in the left half of the axis, on the left in the right half.
        top = max((float(str(row["pushes"])) for row in rows), default=0.0)

        def labels(side: str, values: list[dict[str, object]]) -> Any:
            return (
                alt.Chart(alt.Data(values=values))
                .mark_text(align=side, dx=3 if side == "left" else -3, baseline="top", fontSize=10)
                .encode(
                    x="at:Q",
                    y=alt.value(2),
                    text="percentile:N",
                    color=alt.Color("percentile:N", legend=None),
                )
            )

        right = [m for m in marks if float(str(m["at"])) > top / 2]
        left = [m for m in marks if m not in right]
        layers = [histogram, rules] + [
            labels(side, values) for side, values in (("left", left), ("right", right)) if values
        ]
        title = titled(policy, "pushes per recipient")
        return alt.layer(*layers, title=title).properties(width=_WIDTH, height=_HEIGHT)

    bars("pushes_per_recipient", per_recipient, "pushes per recipient")

    # Skips by reason, on a log scale: `level` alone is ~760 of the example week's 780 skips
    # and on a linear axis hid every other reason. The table beside the chart gives the counts.
    def skips(rows: list[dict[str, object]], policy: str) -> Any:
        return (
            alt.Chart(alt.Data(values=rows), title=titled(policy, "skips by reason (log scale)"))
            .mark_bar()
            .encode(
                y=alt.Y("reason:N", title=""),
                x=alt.X(
                    "skips:Q",
                    title="skips (log scale)",
                    # Bars from 0.5, so that a reason skipped once still has a visible bar
                    # (from 1, log 1 = 0 draws it with no length); unstacked, as a stacked
                    # bar would start at 0, which a log scale cannot place (no bar at all).
                    stack=None,
                    scale=alt.Scale(type="log", domainMin=0.5),
                    axis=alt.Axis(values=powers, format="d"),
                ),
            )
            .properties(width=_WIDTH - 100, height=alt.Step(18))
        )

    # Ticks at 1, 10, 100, ... only: the default 1, 2, 3, 10, 20, 30, ... ran together.
    skip_rows = data["skips_by_reason"]
    assert isinstance(skip_rows, list)
    most = max((int(row["skips"]) for row in skip_rows), default=1)
    powers = [1]
    while powers[-1] < most:  # up to the power the log scale's nice domain ends at
        powers.append(powers[-1] * 10)
    bars("skips_by_reason", skips, "skips by reason (log scale)")

    # Bundling: messages per flush.
    def flushes(rows: list[dict[str, object]], policy: str) -> Any:
        return (
            alt.Chart(alt.Data(values=rows), title=titled(policy, "messages per flush"))
            .mark_bar()
            .encode(
                x=alt.X("messages:O", title="messages a flush reports"),
                y=alt.Y("flushes:Q", title="flushes"),
            )
            .properties(width=_WIDTH, height=_HEIGHT)
        )

    bars("messages_per_flush", flushes, "messages per flush")
    return charts


def skip_table(data: dict[str, object]) -> tuple[list[str], list[list[object]]]:
    """The table beside the skips chart: every reason of any policy and its count per policy.

    Returns:
        The head (``reason`` and the policies' names) and one row per reason, most skipped
        first (by the first policy, then by name); a reason a policy never gave counts 0.
    """
    policies = data["policies"]
    rows = data["skips_by_reason"]
    assert isinstance(policies, list) and isinstance(rows, list)
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        counts.setdefault(str(row["reason"]), {})[str(row["policy"])] = int(row["skips"])
    order = sorted(counts, key=lambda r: (-counts[r].get(policies[0], 0), r))
    return (
        ["reason", *policies],
        [[reason, *(counts[reason].get(p, 0) for p in policies)] for reason in order],
    )


def held_back_table(data: dict[str, object], policies: Sequence[str]) -> str:
    """The hints and mails preference records held back (M2-M4): over a cap (a mail over its
    cap waits to the next local midnight), paused, channel off; per channel and policy."""
    rows = data["held_back"]
    assert isinstance(rows, list)
    if not rows:
        return '<p class="empty">No delivery held back by a preference record.</p>'
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for row in rows:
        key = (str(row["reason"]), str(row["channel"]))
        counts.setdefault(key, {})[str(row["policy"])] = int(row["deliveries"])
    order = {reason: i for i, reason in enumerate(HELD_BACK)}
    table = [
        [reason, channel, *(found.get(p, 0) for p in policies)]
        for (reason, channel), found in sorted(
            counts.items(), key=lambda i: (order[i[0][0]], i[0][1])
        )
    ]
    return _table(["reason", "channel", *policies], table)


def render_report(
    summaries: Sequence[tuple[str, Summary]], log: str, policy_files: Sequence[str | None]
) -> str:
    """Return the report's HTML: one replay, or two (policies A and B) side by side.

    Args:
        summaries: (policy name, summary) pairs, one or two.
        log: the log's name as the user gave it (shown, escaped).
        policy_files: the policy file of each replay (``None``: the defaults), shown escaped.

    Raises:
        BadInput: Altair or vl-convert-python is missing (the ``report`` extra).
    """
    alt, vlc = _libraries()
    data = report_data(summaries)
    policies = [name for name, _ in summaries]
    totals = data["totals"]
    assert isinstance(totals, list)
    charts = _charts(alt, data, policies)
    parts: list[str] = []
    title = f"Replay report: {log}"
    parts.append(f"<h1>{html.escape(title)}</h1>")
    described = [
        f"{name}: {'policy ' + file if file else 'default policy'}"
        for name, file in zip(policies, policy_files, strict=True)
    ]
    parts.append(f"<p>{html.escape('; '.join(described))}. Hours are UTC.</p>")

    # Totals, and with two policies the change from A to B.
    metrics = [
        ("pushes", "pushes"),
        ("sends", "sends (all routes)"),
        ("skips", "skips"),
        ("quiet_share", "quiet share of sends"),
        ("recipients", "recipients pushed to"),
        ("p50", "pushes per recipient p50"),
        ("p90", "pushes per recipient p90"),
        ("p99", "pushes per recipient p99"),
        ("max", "pushes per recipient max"),
        ("flushes", "flushes sent"),
        ("messages_flushed", "messages reported by flushes"),
    ]
    head = ["", *policies] + (["change"] if len(totals) == 2 else [])
    rows: list[list[object]] = []
    for key, what in metrics:
        values = [t[key] for t in totals]
        rows.append([what, *values] + ([_change(*values)] if len(values) == 2 else []))
    parts.append("<h2>Totals</h2>" + _table(head, rows))

    def figure(name: str, caption: str, empty: str) -> str:
        if name not in charts:
            return f'<p class="empty">{html.escape(empty)}</p>'
        return _figure(vlc, name, charts[name], caption)

    parts.append("<h2>Pushes per hour of the day, by kind</h2>")
    parts.append(figure("pushes_by_hour", "pushes by UTC hour", "No pushes."))
    parts.append("<h2>Quiet share</h2>")
    parts.append(figure("quiet", "sends delivered quietly (D7) and with sound", ""))
    parts.append("<h2>Pushes per recipient</h2>")
    parts.append(
        figure(
            "pushes_per_recipient",
            "recipients by number of pushes; dashed and named at the top: p50, p90, p99 of "
            "the summary (one line for percentiles of the same value)",
            "No pushes.",
        )
    )
    parts.append("<h2>Skips by reason</h2>")
    if "skips_by_reason" in charts:
        # The exact counts beside the log-scale bars, which show only their order of size.
        chart = figure("skips_by_reason", "skip decisions, log scale", "")
        parts.append(f'<div class="beside">{chart}{_table(*skip_table(data))}</div>')
    else:
        parts.append('<p class="empty">No skips.</p>')
    parts.append("<h2>Held back by preference records</h2>")
    parts.append(held_back_table(data, policies))
    parts.append("<h2>Bundling: messages per flush</h2>")
    parts.append(
        figure(
            "messages_per_flush",
            "flushes that sent (D8), by the unread count they report",
            "No flush sent.",
        )
    )

    if len(policies) == 2:
        parts.append(_difference(alt, vlc, data))
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="generator" content="{html.escape(generator())}">\n'
        # No icon to fetch: the file must not ask for anything, even a favicon.
        '<link rel="icon" href="data:,">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n"
        f"<body>\n{body}\n</body>\n</html>\n"
    )


def generator() -> str:
    """The report's ``generator`` meta: the versions of Altair and vl-convert that drew it.

    The same specs give other SVG under other versions; this names what drew a file, so a
    check of a committed report knows whether it can expect the very same bytes.
    """
    alt, vlc = _libraries()
    return f"notify replay --report; altair {alt.__version__}; vl-convert {vlc.__version__}"


def _difference(alt: Any, vlc: Any, data: dict[str, object]) -> str:
    diff = data["difference"]
    change = data["pushes_by_hour_change"]
    assert isinstance(diff, dict) and isinstance(change, list)
    parts = ["<h2>Difference: B minus A</h2>"]
    if any(row["change"] for row in change):
        chart = (
            alt.Chart(alt.Data(values=change), title="change of pushes per hour (B - A)")
            .mark_bar()
            .encode(
                x=alt.X("hour:O", title="hour of the day (UTC)"),
                y=alt.Y("sum(change):Q", title="pushes B - A"),
                color=alt.Color("kind:N", title="kind"),
            )
            .properties(width=2 * _WIDTH, height=_HEIGHT)
        )
        parts.append(_figure(vlc, "pushes_by_hour_change", chart, "pushes of B minus A, by hour"))
    else:
        parts.append('<p class="empty">The same pushes at every hour.</p>')
    kinds = diff["sends_by_kind"]
    assert isinstance(kinds, dict)
    parts.append(
        _table(
            ["sends of kind", "A", "B", "change"],
            [[k, r["a"], r["b"], f"{r['change']:+,}"] for k, r in kinds.items()],
        )
    )
    people = diff["recipients_changed"]
    assert isinstance(people, list)
    if people:
        parts.append(
            f"<p>{len(people):,} recipients get a different number of pushes; the most:</p>"
        )
        parts.append(
            _table(
                ["recipient", "pushes A", "pushes B", "change"],
                [[r["recipient"], r["a"], r["b"], f"{r['change']:+,}"] for r in people[:20]],
            )
        )
    return "\n".join(parts)


def check_report(path: str) -> None:
    """Refuse, before a replay, a report path that cannot be written or a missing extra.

    Raises:
        BadInput: one line naming the path (or the missing extra).
    """
    _libraries()
    folder = os.path.dirname(path) or "."
    if os.path.isdir(path):
        raise BadInput(f"--report {path}: is a directory")
    if not os.path.isdir(folder):
        raise BadInput(f"--report {path}: no such directory {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput(f"--report {path}: directory {folder} is not writable")


def write_report(
    path: str,
    summaries: Sequence[tuple[str, Summary]],
    log: str,
    policy_files: Sequence[str | None],
) -> None:
    """Render the report and write it to ``path`` (a failed write is `BadInput`)."""
    write_file(path, render_report(summaries, log, policy_files))
