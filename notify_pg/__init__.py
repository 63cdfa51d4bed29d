"""notify_pg: the ports and stores of notify on PostgreSQL (psycopg 3).

The library owns one schema (default ``notify``) created by numbered migrations
(`migrate`, or ``notify db migrate``). `NotifyStore` binds the repositories to that schema and
to the host's facts (`notify_pg.ports`); `notify_pg.reference_host` is a small host schema with
its adapter for tests and the demo. `Worker` runs `notify_core.pipeline.Pipeline` on the
library's tables (consumer, due work, push sends; `notify_pg.pipeline_ports`). See
docs/postgresql.md.
"""

from notify_pg.errors import (
    Conflict,
    Forbidden,
    LimitReached,
    MigrationError,
    NotFound,
    PartitionError,
    StorageError,
)
from notify_pg.events import EventLog, NewEvent, device_pending, payload_size, read_event_log
from notify_pg.facts import DEFAULT_LEVEL_KEY, FactsReader
from notify_pg.migrate import DEFAULT_SCHEMA, Migration, migrate, migrations
from notify_pg.pipeline_ports import PgPreferences, PgSchedule, PgWorld, Session
from notify_pg.ports import (
    AccessPort,
    DevicesPort,
    DirectoryPort,
    HostPorts,
    NotificationPath,
    PeoplePort,
    PipelineHostPorts,
    PlacesPort,
    PresencePort,
    ReadStatePort,
    SettingsPort,
    StructurePort,
)
from notify_pg.preferences import PreferenceRepository
from notify_pg.push import FakeProvider, ProviderGate, PushProvider
from notify_pg.quiet_hours import QuietHoursRepository
from notify_pg.records import PreferenceRecordRepository
from notify_pg.registrations import PushRegistration, Registration, RegistrationRepository
from notify_pg.status import pipeline_status
from notify_pg.store import NotifyStore, forget_person
from notify_pg.values import (
    PutResult,
    QuietFacts,
    RuleResult,
    StoreConfig,
    StoredPreference,
    StoredRule,
)
from notify_pg.worker import HintSink, Worker, WorkerConfig, WorkerStats

__all__ = [
    "DEFAULT_LEVEL_KEY",
    "DEFAULT_SCHEMA",
    "AccessPort",
    "Conflict",
    "DevicesPort",
    "DirectoryPort",
    "EventLog",
    "FactsReader",
    "FakeProvider",
    "Forbidden",
    "HintSink",
    "HostPorts",
    "LimitReached",
    "Migration",
    "MigrationError",
    "NewEvent",
    "NotFound",
    "NotificationPath",
    "NotifyStore",
    "PartitionError",
    "PeoplePort",
    "PgPreferences",
    "PgSchedule",
    "PgWorld",
    "PipelineHostPorts",
    "PlacesPort",
    "PreferenceRecordRepository",
    "PreferenceRepository",
    "PresencePort",
    "ProviderGate",
    "PushProvider",
    "PushRegistration",
    "PutResult",
    "QuietFacts",
    "QuietHoursRepository",
    "ReadStatePort",
    "Registration",
    "RegistrationRepository",
    "RuleResult",
    "Session",
    "SettingsPort",
    "StorageError",
    "StoreConfig",
    "StoredPreference",
    "StoredRule",
    "StructurePort",
    "Worker",
    "WorkerConfig",
    "WorkerStats",
    "device_pending",
    "forget_person",
    "migrate",
    "migrations",
    "payload_size",
    "pipeline_status",
    "read_event_log",
]
