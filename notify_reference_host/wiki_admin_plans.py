"""The reference wiki's administration ports as plans (`notify_pg.db.plan`): what ``notify
serve``'s native preference and settings routes read and write on an asyncio connection
(`notify_pg.mail.settings.PREFERENCE_CHANGE_PORTS`, `SETTINGS_CHANGE_PORTS`, and the status
card's ``inbox_plain_http_sites``). `notify_reference_host.wiki.ReferenceWiki` has them, and
runs each on a blocking connection for its port of the same name."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from psycopg.types.json import Jsonb

from notify_core.inbox.admin import InstanceSettings
from notify_core.inbox.categories import Section
from notify_core.inbox.prefs import Delivery
from notify_core.mail.cadence import EmailSchedule
from notify_pg.db.plan import Plan, all_rows, one_row, touched
from notify_pg.db.seam import Seam

__all__ = ["WikiAdminPlans"]


class WikiAdminPlans:
    """The plan forms of the reference wiki's administration ports (its ``_seam`` is the
    host's schema)."""

    _seam: Seam

    def _settings_row_plan(self) -> Plan[Any]:
        return (yield from one_row(self._seam, "wiki_settings"))

    def inbox_email_delay_plan(self) -> Plan[timedelta]:
        """`inbox_email_delay` as a plan (default 180 s)."""
        row = yield from self._settings_row_plan()
        return timedelta(seconds=180 if row is None else row[0])

    def inbox_retention_days_plan(self) -> Plan[int]:
        """`inbox_retention_days` as a plan (60 by default)."""
        row = yield from self._settings_row_plan()
        return 60 if row is None else int(row[1])

    def inbox_instance_settings_plan(self) -> Plan[InstanceSettings]:
        """`inbox_instance_settings` as a plan (the defaults without a row)."""
        row = yield from one_row(self._seam, "wiki_admin_settings")
        if row is None:
            return InstanceSettings()
        delay, retention, batch, sections = row
        return InstanceSettings(
            email_delay_s=int(delay),
            retention_days=int(retention),
            mail_batch_size=int(batch),
            sections={Section(k): Delivery(v) for k, v in sections.items()},
        )

    def inbox_set_instance_settings_plan(self, settings: InstanceSettings) -> Plan[None]:
        """`inbox_set_instance_settings` as a plan (``mail_configured`` is kept)."""
        value = settings.as_json()
        params = {**value, "sections": Jsonb(value["sections"])}
        yield from touched(self._seam, "wiki_put_admin_settings", params)

    def inbox_digest_schedules_plan(self) -> Plan[bool]:
        """`inbox_digest_schedules` as a plan."""
        row = yield from one_row(self._seam, "wiki_digest_schedules")
        return bool(row is not None and row[0])

    def inbox_set_schedule_plan(self, person: str, schedule: EmailSchedule) -> Plan[bool]:
        """`inbox_set_schedule` as a plan (``False``: the wiki has no such person)."""
        params = {
            "id": person,
            "email_schedule": schedule.schedule.value,
            "daily_hour": schedule.daily_hour,
        }
        return (yield from touched(self._seam, "wiki_set_schedule", params)) > 0

    def inbox_plain_http_sites_plan(self) -> Plan[list[str]]:
        """`inbox_plain_http_sites` as a plan."""
        return [str(r[0]) for r in (yield from all_rows(self._seam, "wiki_plain_http_sites"))]
