"""``notify records``: preference records (rules.md#records) on PostgreSQL (the ``pg`` extra)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from notify_cli.install import install_hint
from notify_cli.options import BadInput, Utf8Text, dsn_option, schema_option

_CONNECT_TIMEOUT_S = 10

if TYPE_CHECKING:  # click >= 8.2 types ParamType generically; older ones cannot subscript it
    from notify_core.records import CheckFailure

    _ParamType = click.ParamType[datetime, Any]
else:
    _ParamType = click.ParamType


class InstantType(_ParamType):
    """An RFC 3339 instant with an offset (``2026-03-14T00:00:00Z``); bad text exits 2."""

    name = "instant"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse the text; a bad instant is one line on stderr and exit code 2."""
        if isinstance(value, datetime):
            return value
        from notify_core.values.errors import NotifyError
        from notify_core.values.instants import parse_instant

        try:
            return parse_instant(value)
        except NotifyError as exc:
            option = param.opts[0] if param is not None and param.opts else "instant"
            raise BadInput(f"{option}: {exc.message} (an RFC 3339 instant with offset)") from None


@click.group()
def records() -> None:
    """Preference records (needs psycopg: the pg extra).

    A principal's preferences as records that are never changed, only superseded, suspended
    or deleted; the rules of the store are in docs/rules.md#records.
    """


class GapBoundType(_ParamType):
    """A supersession gap bound in seconds (zero or more, finite); bad text exits 2."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse the number of seconds into a `timedelta`; bad text is one line and exit 2."""
        if isinstance(value, timedelta):
            return value
        try:
            number = float(value)
            if not math.isfinite(number) or number < 0:
                raise ValueError(value)
            return timedelta(seconds=number)
        except (ValueError, OverflowError):
            raise BadInput(
                f"--gap-bound: {value!r} is not a number of seconds of zero or more"
            ) from None


@records.command()
@dsn_option
@click.option(
    "--principal",
    "principal_ref",
    type=Utf8Text(),
    metavar="P",
    help="The principal reference, matched exactly (no case folding, no trimming).",
)
@click.option(
    "--delivery",
    "delivery_id",
    type=Utf8Text(),
    metavar="ID",
    help="Audit one delivery: push:<notification id> (a push) or mail:<entry id> (a mail).",
)
@click.option(
    "--from",
    "start",
    type=InstantType(),
    default=None,
    metavar="INSTANT",
    help="With --principal: list the person's deliveries from this RFC 3339 instant on.",
)
@click.option(
    "--to",
    "end",
    type=InstantType(),
    default=None,
    metavar="INSTANT",
    help="With --from: deliveries before this RFC 3339 instant [default: now].",
)
@click.option(
    "--time-zone",
    "time_zone",
    type=Utf8Text(),
    default=None,
    metavar="ZONE",
    help="The person's IANA zone, for the local day of a cap (M4) [default: UTC].",
)
@click.option(
    "--at",
    "at",
    type=InstantType(),
    default=None,
    metavar="INSTANT",
    help="Reconstruct the record in effect at this RFC 3339 instant [default: now].",
)
@click.option(
    "--gap-bound",
    "gap_bound",
    type=GapBoundType(),
    default="0",
    show_default=True,
    metavar="SECONDS",
    help="The supersession gap bound the store's deployment declares; notify_pg stamps both "
    "halves of a supersession with one instant, so 0.",
)
@schema_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def audit(
    dsn: str,
    principal_ref: str | None,
    delivery_id: str | None,
    start: datetime | None,
    end: datetime | None,
    time_zone: str | None,
    at: datetime | None,
    gap_bound: timedelta,
    schema: str,
    as_json: bool,
) -> None:
    """Print a principal's preference history and the record in effect at an instant; or
    the record that governed a delivery (--delivery), or a person's deliveries with their
    records (--principal with --from and --to).

    --delivery ID (a push: push:<notification id>, a mail: mail:<entry id>; a bare id is
    looked up as both) answers M6: the record in effect at the decision (a push: the hint's
    decision; a mail: its entry's latest fan-out) and at the send (the push send; the drain),
    each with its status then and whether it allowed the delivery (else the reason:
    suspended, record_channel_off, frequency_cap), the values it could not read, and whether
    the delivery was allowed under both. --json prints {"delivery", "channel", "recipient",
    "kind", "decided_at", "sent_at"?, "outcome", "reason"?, "decided_record"?, "record"?,
    "registrations"?, "at_decision", "at_send", "allowed"}, a reading being
    {"preference_id", "status", "allowed", "reason"?, "not_applied"?} or {"none": true}.

    --principal P --from A [--to B] lists P's pushes decided and mails sent or skipped in
    [A, B), each as --delivery answers it, and the hints a record held back ("held": at,
    kind, thread, reason, record). An unknown delivery id, --to not after --from or
    a bad zone: one line on stderr and exit code 2.

    The history is every record of the principal in recording order, deleted ones included,
    with status and the set, suspension and deletion instants. The record in effect at INSTANT
    is reconstructed from the stamps alone, each record governing [set_at, deleted_at)
    (docs/rules.md#records). A suspended record is in effect (delivery paused).

    Every supersession gap (a deleted record's deleted_at to its successor's set_at) is read
    against --gap-bound (Check 4.1-4.2): within it "supersession", beyond it "ambiguous" (the
    records alone cannot tell a supersession from a delete and a later set), below zero
    "backward" (a clock stepped back). Records whose own stamps are out of order (set,
    suspension, deletion) are named too, and so are failures of Check 3.1 (two records in effect),
    5.1 (a channel key the record does not declare) and 5.2 (no declared channels).

    --json prints {"principal_ref", "at", "records": [...], "in_effect": {"preference_id",
    "status_at"} or {"none": true}, "gap_bound_s", "supersessions": [{"prior", "successor",
    "gap_s", "reading"}], "stamps_out_of_order": [preference_id...], "check_failures":
    [{"check", "preference_ids", "channel"?}]}, records as in
    formats.md section 1 (absent members omitted).
    A bad DSN, an unreachable database, a bad instant or a bad bound: one line on stderr and
    exit code 2.
    """
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        from notify_core.records import check_failures, supersession_gaps
        from notify_core.records.tables import record_to_json
        from notify_core.values.errors import NotifyError
        from notify_core.values.instants import format_instant
        from notify_pg.db.errors import translate
        from notify_pg.stores.records import PreferenceRecordRepository
    except ImportError as exc:  # psycopg missing: the pg extra is not installed
        raise BadInput(f"records needs the pg extra ({install_hint('pg')}): {exc}") from None
    if not schema:
        raise BadInput("--schema must not be empty")
    if _deliveries(dsn, principal_ref, delivery_id, start, end, time_zone, at, schema, as_json):
        return
    assert principal_ref is not None
    instant = at if at is not None else datetime.now(UTC)  # the CLI is the host: it reads now
    try:
        # A wrong host must not hang the command: give up after a while unless the DSN says.
        if "connect_timeout" in conninfo_to_dict(dsn):
            conn = psycopg.connect(dsn, autocommit=True)
        else:
            conn = psycopg.connect(dsn, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S)
        with conn:
            store = PreferenceRecordRepository(schema).store_for(conn, principal_ref)
    except psycopg.Error as exc:
        raise BadInput(f"records audit: {translate(exc)}") from None
    except NotifyError as exc:
        raise BadInput(f"records audit: {exc}") from None
    history = store.history(principal_ref)
    governing = store.in_effect_at(principal_ref, instant)
    status_at = None if governing is None else governing.status_at(instant)
    gaps = supersession_gaps(history, gap_bound)
    out_of_order = [r.preference_id for r in history if not r.stamps_in_order]
    failures = check_failures(history)

    if as_json:
        in_effect: dict[str, object] = {"none": True}
        if governing is not None and status_at is not None:
            in_effect = {"preference_id": governing.preference_id, "status_at": status_at.value}
        out = {
            "principal_ref": principal_ref,
            "at": format_instant(instant),
            "records": [record_to_json(r) for r in history],
            "in_effect": in_effect,
            "gap_bound_s": gap_bound.total_seconds(),
            "supersessions": [
                {
                    "prior": g.prior,
                    "successor": g.successor,
                    "gap_s": g.gap.total_seconds(),
                    "reading": g.reading.value,
                }
                for g in gaps
            ],
            "stamps_out_of_order": out_of_order,
            "check_failures": [
                {
                    "check": f.check,
                    "preference_ids": list(f.preference_ids),
                    **({} if f.channel is None else {"channel": f.channel}),
                }
                for f in failures
            ],
        }
        click.echo(json.dumps(out, ensure_ascii=False, separators=(",", ":")))
        return

    table = Table(title=Text(f"preference records of {principal_ref!r}"), header_style="bold")
    # An audit never truncates: long values fold onto further lines.
    for column in ("#", "preference_id", "status", "set_at", "suspended_at", "deleted_at"):
        table.add_column(column, justify="right" if column == "#" else "left", overflow="fold")
    table.add_column("declared_channels", overflow="fold")
    table.add_column("preferences and metadata", overflow="fold")
    for number, record in enumerate(history, start=1):
        data = record_to_json(record)
        fields: dict[str, object] = {
            name: data[name]
            for name in ("channel_preferences", "frequency_limit", "quiet_hours", "format")
            if name in data
        }
        if "metadata" in data:
            fields["metadata"] = data["metadata"]
        table.add_row(
            str(number),
            Text(record.preference_id),
            record.status.value,
            format_instant(record.set_at),
            "" if record.suspended_at is None else format_instant(record.suspended_at),
            "" if record.deleted_at is None else format_instant(record.deleted_at),
            Text(", ".join(sorted(record.declared_channels))),
            Text(json.dumps(fields, ensure_ascii=False, separators=(",", ":"))),
        )
    console = Console(highlight=False)
    console.print(table)
    bound_s = _seconds(gap_bound)
    for g in gaps:
        console.print(
            Text(
                f"gap {g.prior} -> {g.successor}: {_seconds(g.gap)} s, {g.reading.value} "
                f"(bound {bound_s} s)"
            )
        )
    for preference_id in out_of_order:
        console.print(Text(f"stamps out of order (a clock stepped back): {preference_id}"))
    for f in failures:
        console.print(Text(f"check {f.check} failed: {', '.join(f.preference_ids)} ({_why(f)})"))
    if governing is None or status_at is None:
        console.print(Text(f"in effect at {format_instant(instant)}: none"))
    else:
        console.print(
            Text(
                f"in effect at {format_instant(instant)}: {governing.preference_id} "
                f"({status_at.value})"
            )
        )


def _deliveries(
    dsn: str,
    principal_ref: str | None,
    delivery_id: str | None,
    start: datetime | None,
    end: datetime | None,
    time_zone: str | None,
    at: datetime | None,
    schema: str,
    as_json: bool,
) -> bool:
    """Run the audit of deliveries when asked for (True); check the options' combination."""
    from notify_cli.records_deliveries import audit_delivery_command, audit_principal_deliveries

    if time_zone is not None:
        from notify_core.values.errors import NotifyError
        from notify_core.values.zones import validate_time_zone

        try:
            validate_time_zone(time_zone)
        except NotifyError as exc:
            raise BadInput(f"--time-zone: {exc.message}") from None
    if delivery_id is not None:
        if principal_ref is not None or start is not None or end is not None or at is not None:
            raise BadInput("--delivery excludes --principal, --from, --to and --at")
        audit_delivery_command(dsn, schema, delivery_id, time_zone, as_json)
        return True
    if principal_ref is None:
        raise BadInput("give --principal P or --delivery ID")
    if start is None and end is None:
        return False
    if start is None:
        raise BadInput("--to needs --from")
    if at is not None:
        raise BadInput("--at excludes --from and --to")
    until = end if end is not None else datetime.now(UTC)  # the CLI is the host: it reads now
    audit_principal_deliveries(dsn, schema, principal_ref, start, until, time_zone, as_json)
    return True


def _seconds(value: timedelta) -> str:
    """Seconds without a needless fraction: ``0``, ``5``, ``0.25``."""
    number = value.total_seconds()
    return str(int(number)) if number.is_integer() else str(number)


def _why(failure: CheckFailure) -> str:
    """What a failed conformance check means, in words."""
    if failure.check == "3.1":
        return "more than one record in effect"
    if failure.check == "5.1":
        return f"channel {failure.channel!r} is not among the record's declared channels"
    return "the record declares no channels"


@records.command("inbox-audit")
@dsn_option
@schema_option
@click.option(
    "--person",
    type=Utf8Text(),
    metavar="P",
    help="Only the changes of this person's preferences and schedule.",
)
@click.option("--instance", is_flag=True, help="Only the changes of the instance's settings.")
@click.option(
    "--since",
    type=InstantType(),
    default=None,
    metavar="INSTANT",
    help="Only changes at or after this RFC 3339 instant.",
)
@click.option(
    "--limit",
    type=click.IntRange(1, 100_000),
    default=100,
    show_default=True,
    metavar="N",
    help="The newest N changes.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of a table.")
def inbox_audit(
    dsn: str,
    schema: str,
    person: str | None,
    instance: bool,
    since: datetime | None,
    limit: int,
    as_json: bool,
) -> None:
    """Print the audited changes of inbox preferences and of the instance's settings (H2).

    One row per change, oldest first: when, who made it (actor), whose preferences it
    changed (the person, or "instance" for the settings), and the members before and after.
    Reads and dismissals are never audited; one-click unsubscribes have their own audit
    (notify_pg.mail.unsubscribe.audited_unsubscribes). --json prints one object per line:
    {"id", "at", "actor", "kind", "subject", "before", "after"}. A bad DSN, an unreachable
    database or both --person and --instance: one line on stderr and exit code 2.
    """
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        from notify_core.values.errors import NotifyError
        from notify_core.values.instants import format_instant
        from notify_pg.db.errors import translate
        from notify_pg.mail.settings import audit_log
    except ImportError as exc:  # psycopg missing: the pg extra is not installed
        raise BadInput(f"records needs the pg extra ({install_hint('pg')}): {exc}") from None
    if not schema:
        raise BadInput("--schema must not be empty")
    if person is not None and instance:
        raise BadInput("--person and --instance exclude each other")
    try:
        timeout = {} if "connect_timeout" in conninfo_to_dict(dsn) else {"connect_timeout": 10}
        with psycopg.connect(dsn, autocommit=True, **timeout) as conn:  # type: ignore[arg-type]
            rows = audit_log(
                conn, person=person, instance=instance, since=since, limit=limit, schema=schema
            )
    except psycopg.Error as exc:
        raise BadInput(f"records inbox-audit: {translate(exc)}") from None
    except NotifyError as exc:
        raise BadInput(f"records inbox-audit: {exc}") from None
    rows.reverse()  # oldest first, as a log reads
    if as_json:
        for row in rows:
            click.echo(json.dumps(row.as_json(), ensure_ascii=False, separators=(",", ":")))
        return
    table = Table(title=Text("audited changes of inbox preferences and settings"))
    for column in ("at", "actor", "subject", "before", "after"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            format_instant(row.at),
            Text(row.actor),
            Text(row.subject),
            Text(json.dumps(dict(row.before), ensure_ascii=False, separators=(",", ":"))),
            Text(json.dumps(dict(row.after), ensure_ascii=False, separators=(",", ":"))),
        )
    Console(highlight=False).print(table)
