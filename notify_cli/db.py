"""``notify db``: the PostgreSQL schema of notify (needs the ``pg`` extra)."""

from __future__ import annotations

import click

from notify_cli.options import BadInput, dsn_option, schema_option


@click.group()
def db() -> None:
    """Manage notify's PostgreSQL schema (needs psycopg: pip install 'notify-engine[pg]')."""


@db.command()
@dsn_option
@schema_option
@click.option(
    "--reference-host",
    "reference_host",
    default=None,
    metavar="NAME",
    help="Also create the reference host's tables in schema NAME (tests and the demo only).",
)
def migrate(dsn: str, schema: str, reference_host: str | None) -> None:
    """Apply notify's missing migrations to DSN; running it again changes nothing.

    Prints the applied migrations, one per line. A migration file changed after it was
    applied, an unreachable database or a bad DSN: a message on stderr and exit code 2.
    """
    try:
        from notify_core.errors import NotifyError
        from notify_pg import migrate as apply
        from notify_pg.reference_host import migrate_reference_host
    except ImportError as exc:  # psycopg missing: the pg extra is not installed
        raise BadInput(f"db needs the pg extra (pip install 'notify-engine[pg]'): {exc}") from None
    if not schema:
        raise BadInput("--schema must not be empty")
    try:
        applied = apply(dsn, schema)
        host_applied = migrate_reference_host(dsn, reference_host) if reference_host else []
    except NotifyError as exc:
        raise BadInput(f"db migrate: {exc}") from None
    for name in applied:
        click.echo(f"{schema}: applied {name}")
    for name in host_applied:
        click.echo(f"{reference_host}: applied {name}")
    if not applied and not host_applied:
        click.echo(f"{schema}: up to date", err=True)


@db.command()
@dsn_option
@schema_option
def status(dsn: str, schema: str) -> None:
    """Show the lag of each consumer and the backlog of due work, as JSON on stdout.

    Per consumer: its position, how many events lie after it, when it last moved. Due work:
    open and ended windows, delayed pushes, pending badge syncs and push sends (all, due now,
    leased by a worker), counted at the database's clock.
    """
    try:
        import json

        from notify_core.errors import NotifyError
        from notify_pg.status import pipeline_status
    except ImportError as exc:  # psycopg missing: the pg extra is not installed
        raise BadInput(f"db needs the pg extra (pip install 'notify-engine[pg]'): {exc}") from None
    try:
        report = pipeline_status(dsn, schema)
    except NotifyError as exc:
        raise BadInput(f"db status: {exc}") from None
    click.echo(json.dumps(report, indent=2))
