"""``notify worker --inbox-host MODULE:FACTORY``: a host plugs its own inbox ports (issue 11)."""

from __future__ import annotations

from typing import Any

import custom_inbox_host
import psycopg
import pytest
from click.testing import CliRunner
from pgworld import HOST_SCHEMA

from notify_cli.main import cli
from notify_cli.options import BadInput
from notify_cli.worker import load_inbox_host
from notify_reference_host.wiki import ReferenceWiki
from tests.pg.inbox.test_inbox_pg import edit, entries, wiki  # noqa: F401  (the fixture is used by name)


def test_h4_the_worker_fans_out_through_the_hosts_own_ports(
    conn: psycopg.Connection[Any],
    wiki: ReferenceWiki,  # noqa: F811
    db_dsn: str,
) -> None:
    """Ana and Cy watch p1; the host's ports hide Cy, so only Ana gets an entry."""
    edit(conn, 0)
    custom_inbox_host.CALLS.clear()
    result = CliRunner().invoke(
        cli,
        ["worker", "--dsn", db_dsn, "--once", "--inbox-host", "custom_inbox_host:quiet_cy"],
    )
    assert result.exit_code == 0, result.output
    assert custom_inbox_host.CALLS == [HOST_SCHEMA]
    assert [(r[0], r[3]) for r in entries(conn)] == [("ana", 1)]


def test_the_default_host_is_the_reference_wiki(
    conn: psycopg.Connection[Any],
    wiki: ReferenceWiki,  # noqa: F811
    db_dsn: str,
) -> None:
    edit(conn, 0)
    result = CliRunner().invoke(cli, ["worker", "--dsn", db_dsn, "--once"])
    assert result.exit_code == 0, result.output
    assert [(r[0], r[3]) for r in entries(conn)] == [("ana", 1), ("cy", 1)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("custom_inbox_host", "give MODULE:FACTORY"),
        (":quiet_cy", "give MODULE:FACTORY"),
        ("custom_inbox_host:", "give MODULE:FACTORY"),
        ("no_such_module_here:ports", "cannot import no_such_module_here (ModuleNotFoundError"),
        ("custom_inbox_host:nope", "custom_inbox_host has no nope"),
        ("custom_inbox_host:QuietCy.nope", "custom_inbox_host has no QuietCy.nope"),
        ("custom_inbox_host:NOT_CALLABLE", "NOT_CALLABLE is not callable"),
        ("custom_inbox_host:broken", "broken('host') failed (RuntimeError: no wiki configured)"),
        ("custom_inbox_host:incomplete", "the ports lack inbox_comment, inbox_email_delay"),
    ],
)
def test_a_bad_inbox_host_is_one_line(spec: str, message: str) -> None:
    with pytest.raises(BadInput) as raised:
        load_inbox_host(spec, "host")
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_mail_needs_the_mail_ports_too() -> None:
    class InboxOnly:
        pass

    for name in (
        "inbox_site",
        "inbox_page",
        "inbox_comment",
        "inbox_watchers",
        "inbox_reviewers",
        "inbox_people",
        "inbox_groups",
        "inbox_settings",
        "inbox_email_delay",
        "inbox_retention_days",
        "inbox_users",
    ):
        setattr(InboxOnly, name, lambda self, *a: None)
    custom_inbox_host.inbox_only = lambda schema: InboxOnly()  # type: ignore[attr-defined]
    assert isinstance(load_inbox_host("custom_inbox_host:inbox_only", "host"), InboxOnly)
    with pytest.raises(BadInput, match=r"the ports lack inbox_first_site \(.*MailHostPorts\)"):
        load_inbox_host("custom_inbox_host:inbox_only", "host", mail=True)
    assert isinstance(
        load_inbox_host("custom_inbox_host:quiet_cy", "host", mail=True), ReferenceWiki
    )


def test_a_bad_inbox_host_is_exit_2_on_the_command_line(db_dsn: str) -> None:
    result = CliRunner().invoke(
        cli, ["worker", "--dsn", db_dsn, "--once", "--inbox-host", "custom_inbox_host:broken"]
    )
    assert result.exit_code == 2
    assert "--inbox-host" in result.stderr and "Traceback" not in result.output
