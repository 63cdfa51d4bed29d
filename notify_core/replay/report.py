"""The data of a replay report: the summary of one replay, or two side by side, as tables.

Values in, values out: `report_data` reads `Summary` values and answers plain rows (lists of
dicts of text and numbers) that a renderer turns into charts; the CLI renders them as one
self-contained HTML file (``notify replay --report``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from notify_core.replay.run import Summary, compare

__all__ = ["report_data"]

#: Hours of the day, in UTC (the log's instants).
HOURS = range(24)
#: The reasons a preference record holds a delivery back (M2-M4), in the order shown.
HELD_BACK = ("frequency_cap", "suspended", "record_channel_off")


def _policy_rows(policy: str, summary: Summary) -> dict[str, list[dict[str, object]]]:
    """The rows of one replay, each tagged with its policy's name."""
    kinds = sorted({kind for kind, _ in summary.push_hours})
    by_hour = [
        {"policy": policy, "hour": hour, "kind": kind, "pushes": summary.push_hours[(kind, hour)]}
        for kind in kinds
        for hour in HOURS
    ]
    sends = summary.decisions["send"] - summary.sends_by_kind["sync"]
    quiet = [
        {"policy": policy, "sound": "quiet", "sends": summary.quiet},
        {"policy": policy, "sound": "with sound", "sends": sends - summary.quiet},
    ]
    volumes = Counter(summary.pushes.values())
    per_recipient = [
        {"policy": policy, "pushes": pushes, "recipients": count}
        for pushes, count in sorted(volumes.items())
    ]
    skips = [
        {"policy": policy, "reason": reason, "skips": count}
        for reason, count in sorted(summary.skips.items())
    ]
    flushes = [
        {"policy": policy, "messages": messages, "flushes": count}
        for messages, count in sorted(summary.flush_counts.items())
    ]
    held = [
        {"policy": policy, "channel": channel, "reason": reason, "deliveries": count}
        for reason in HELD_BACK
        for channel, count in (
            ("push", summary.skips[reason]),
            ("email", summary.mail_skips[reason]),
        )
        if count
    ]
    return {
        "held_back": held,
        "pushes_by_hour": by_hour,
        "quiet": quiet,
        "pushes_per_recipient": per_recipient,
        "skips_by_reason": skips,
        "messages_per_flush": flushes,
    }


def report_data(summaries: Sequence[tuple[str, Summary]]) -> dict[str, object]:
    """Return the report of one replay, or of two (policy A, policy B) with the difference.

    Args:
        summaries: one or two (name of the policy, summary of its replay) pairs.

    Returns:
        ``policies`` (the names), ``totals`` (per policy: pushes, sends, quiet share, the
        summary's p50/p90/p99/max pushes per recipient, flushes and messages they report),
        one list of rows per chart, every row naming its policy (``pushes_by_hour``,
        ``quiet``, ``pushes_per_recipient``, ``skips_by_reason``, ``messages_per_flush``),
        ``held_back`` (hints and mails a preference record held back, by channel and reason:
        ``frequency_cap`` first, the deliveries over a cap, M4),
        and with two summaries ``difference`` (`compare`'s answer) and
        ``pushes_by_hour_change`` (B minus A per kind and hour).
    """
    if len(summaries) not in (1, 2):
        raise ValueError("a report is of one replay or two")
    charts: dict[str, list[dict[str, object]]] = {}
    totals: list[dict[str, object]] = []
    for name, summary in summaries:
        for chart, rows in _policy_rows(name, summary).items():
            charts.setdefault(chart, []).extend(rows)
        data = summary.to_json()
        volume = data["push_volume_per_recipient"]
        assert isinstance(volume, dict)
        totals.append(
            {
                "policy": name,
                "pushes": data["pushes"],
                "sends": summary.decisions["send"],
                "skips": summary.decisions["skip"],
                "quiet_share": data["quiet_share"],
                **volume,
                "flushes": sum(summary.flush_counts.values()),
                "messages_flushed": sum(n * c for n, c in summary.flush_counts.items()),
            }
        )
    out: dict[str, object] = {"policies": [name for name, _ in summaries], "totals": totals}
    out.update(charts)
    if len(summaries) == 2:
        (_, a), (_, b) = summaries
        out["difference"] = compare(a, b)
        kinds = sorted({kind for kind, _ in a.push_hours} | {kind for kind, _ in b.push_hours})
        out["pushes_by_hour_change"] = [
            {
                "hour": hour,
                "kind": kind,
                "change": b.push_hours[(kind, hour)] - a.push_hours[(kind, hour)],
            }
            for kind in kinds
            for hour in HOURS
        ]
    return out
