"""``notify records audit --delivery`` and ``--principal --from --to``: the deliveries records
governed (docs/rules.md#records, M6), on PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from notify_cli.options import BadInput

if TYPE_CHECKING:
    from notify_core.records import DeliveryAudit, RecordReading
    from notify_pg.db.seam import Conn
    from notify_pg.ops.deliveries import Delivery, Hold

__all__ = ["audit_delivery_command", "audit_principal_deliveries"]


def _reading(reading: RecordReading | None) -> dict[str, Any]:
    if reading is None:
        return {"none": True}
    out: dict[str, Any] = {
        "preference_id": reading.preference_id,
        "status": reading.status.value,
        "allowed": reading.allowed,
    }
    if reading.reason is not None:
        out["reason"] = reading.reason.value
    if reading.not_applied:
        out["not_applied"] = list(reading.not_applied)
    return out


def _delivery_json(delivery: Delivery, audit: DeliveryAudit) -> dict[str, Any]:
    from notify_core.values.instants import format_instant

    out: dict[str, Any] = {
        "delivery": delivery.id,
        "channel": delivery.channel,
        "recipient": delivery.recipient,
        "kind": delivery.kind,
        "decided_at": format_instant(delivery.decided_at),
    }
    if delivery.sent_at is not None:
        out["sent_at"] = format_instant(delivery.sent_at)
    out["outcome"] = delivery.outcome
    if delivery.reason is not None:
        out["reason"] = delivery.reason
    if delivery.decided_record is not None:
        out["decided_record"] = delivery.decided_record
    if delivery.record is not None:
        out["record"] = delivery.record
    if delivery.registrations:
        out["registrations"] = list(delivery.registrations)
    out["at_decision"] = _reading(audit.at_decision)
    out["at_send"] = _reading(audit.at_send)
    out["allowed"] = audit.allowed
    return out


def _words(reading: dict[str, Any]) -> str:
    if reading.get("none"):
        return "no record in effect"
    text = f"{reading['preference_id']} ({reading['status']}): "
    text += "allowed" if reading["allowed"] else f"held back ({reading['reason']})"
    if reading.get("not_applied"):
        text += "; not applied: " + ", ".join(reading["not_applied"])
    return text


def _connect(dsn: str) -> Conn:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    timeout = {} if "connect_timeout" in conninfo_to_dict(dsn) else {"connect_timeout": 10}
    return psycopg.connect(dsn, autocommit=True, **timeout)  # type: ignore[arg-type]


def audit_delivery_command(
    dsn: str, schema: str, delivery_id: str, time_zone: str | None, as_json: bool
) -> None:
    """Print the audit of one delivery (a push: ``push:<notification id>``, a mail:
    ``mail:<entry id>``); an unknown id is one line on stderr and exit code 2."""
    import psycopg

    from notify_core.values.errors import NotifyError
    from notify_pg.db.errors import translate
    from notify_pg.ops.deliveries import audit_one, find_delivery

    try:
        with _connect(dsn) as conn:
            delivery = find_delivery(conn, delivery_id, schema=schema)
            audit, _history = audit_one(conn, delivery, time_zone=time_zone, schema=schema)
    except psycopg.Error as exc:
        raise BadInput(f"records audit: {translate(exc)}") from None
    except NotifyError as exc:
        raise BadInput(f"records audit: --delivery: {exc.message}") from None
    out = _delivery_json(delivery, audit)
    if as_json:
        click.echo(json.dumps(out, ensure_ascii=False, separators=(",", ":")))
        return
    console = Console(highlight=False)
    for name in ("delivery", "channel", "recipient", "kind", "decided_at", "sent_at", "outcome"):
        if name in out:
            console.print(Text(f"{name}: {out[name]}"))
    for name in ("reason", "decided_record", "record"):
        if name in out:
            console.print(Text(f"{name}: {out[name]}"))
    console.print(Text(f"at the decision: {_words(out['at_decision'])}"))
    console.print(Text(f"at the send: {_words(out['at_send'])}"))
    verdict = "allowed" if out["allowed"] else "NOT allowed"
    console.print(Text(f"{verdict} under the records that governed it"))


def _hold_json(hold: Hold) -> dict[str, Any]:
    from notify_core.values.instants import format_instant

    out: dict[str, Any] = {"at": format_instant(hold.at), "kind": hold.kind}
    if hold.thread is not None:
        out["thread"] = hold.thread
    out.update(reason=hold.reason, record=hold.record)
    return out


def audit_principal_deliveries(
    dsn: str,
    schema: str,
    principal: str,
    start: datetime,
    end: datetime,
    time_zone: str | None,
    as_json: bool,
) -> None:
    """Print a person's deliveries in [start, end) with the records that governed them, and
    the hints a record held back."""
    import psycopg

    from notify_core.values.errors import NotifyError
    from notify_core.values.instants import format_instant
    from notify_pg.db.errors import translate
    from notify_pg.ops.deliveries import audit_one, deliveries_of, holds_of
    from notify_pg.stores.records import PreferenceRecordRepository

    if end <= start:
        raise BadInput("--to: must be after --from")
    rows: list[dict[str, Any]] = []
    try:
        with _connect(dsn) as conn:
            history = PreferenceRecordRepository(schema).history(conn, principal)
            found = deliveries_of(conn, principal, start, end, schema=schema)
            for delivery in found:
                audit, _ = audit_one(
                    conn, delivery, time_zone=time_zone, history=history, schema=schema
                )
                rows.append(_delivery_json(delivery, audit))
            held = [_hold_json(h) for h in holds_of(conn, principal, start, end, schema=schema)]
    except psycopg.Error as exc:
        raise BadInput(f"records audit: {translate(exc)}") from None
    except NotifyError as exc:
        raise BadInput(f"records audit: {exc}") from None
    if as_json:
        out = {
            "principal_ref": principal,
            "from": format_instant(start),
            "to": format_instant(end),
            "deliveries": rows,
            "held": held,
        }
        click.echo(json.dumps(out, ensure_ascii=False, separators=(",", ":")))
        return
    _print_deliveries(principal, rows, held)


def _print_deliveries(
    principal: str, rows: Sequence[dict[str, Any]], held: Sequence[dict[str, Any]]
) -> None:
    console = Console(highlight=False)
    table = Table(title=Text(f"deliveries to {principal!r}"), header_style="bold")
    for column in ("delivery", "kind", "decided_at", "sent_at", "outcome", "record", "allowed"):
        table.add_column(column, overflow="fold")
    for row in rows:
        record = row["at_send"].get("preference_id") or row["at_decision"].get("preference_id")
        table.add_row(
            Text(row["delivery"]),
            Text(row["kind"]),
            row["decided_at"],
            row.get("sent_at", ""),
            row["outcome"] + (f" ({row['reason']})" if "reason" in row else ""),
            Text(record or "none"),
            "yes" if row["allowed"] else "NO",
        )
    console.print(table)
    for hold in held:
        thread = f" in {hold['thread']}" if "thread" in hold else ""
        console.print(
            Text(
                f"held back at {hold['at']}: {hold['kind']}{thread} "
                f"({hold['reason']}, record {hold['record']})"
            )
        )
