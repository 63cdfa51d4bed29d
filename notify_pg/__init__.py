"""notify_pg: notify on PostgreSQL (psycopg 3), in wings by concern.

The library owns one schema (default ``notify``) created by numbered migrations (`migrate`,
or ``notify db migrate``). Its wings, each importing only the ones below it:

- `notify_pg.db`: the database base (the SQL seam, migrations, errors, ids);
- `notify_pg.stores`: the repositories (preferences, quiet hours, records, registrations, the
  event log), the host's ports and `NotifyStore`;
- `notify_pg.rounds`: the loop that runs a worker's rounds and the connection they share;
- `notify_pg.push`: the push path (the pipeline's ports, the push rounds and `Worker`,
  providers);
- `notify_pg.inbox`: the inbox (the fan-out round, reads);
- `notify_pg.mail`: mail (the drain, SMTP with DKIM, the secret, unsubscribe);
- `notify_pg.http`: framework-neutral HTTP handlers and the reference app;
- `notify_pg.worker`: a worker process's loop built from options (`build_worker`);
- `notify_pg.ops`: metrics and the status query.

The demo host's schema and its adapter (`notify_reference_host`) are a package of their own
above this one: the adapter never imports them.

The names below are the stable imports; everything else is imported from the module that
holds it. See docs/postgresql.md.
"""

from notify_pg.db.errors import (
    Conflict,
    Forbidden,
    LimitReached,
    MigrationError,
    NotFound,
    PartitionError,
    StorageError,
)
from notify_pg.db.migrate import DEFAULT_SCHEMA, Migration, migrate, migrations
from notify_pg.ops.status import pipeline_status
from notify_pg.push import PgPreferences, PgSchedule, PgWorld, Session
from notify_pg.push.providers import FakeProvider, ProviderGate, PushProvider
from notify_pg.push.worker import HintSink, Worker, WorkerConfig, WorkerStats
from notify_pg.stores.events import EventLog, NewEvent, device_pending, payload_size, read_event_log
from notify_pg.stores.facts import DEFAULT_LEVEL_KEY, FactsReader
from notify_pg.stores.ports import (
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
from notify_pg.stores.preferences import PreferenceRepository
from notify_pg.stores.quiet_hours import QuietHoursRepository
from notify_pg.stores.records import PreferenceRecordRepository
from notify_pg.stores.registrations import PushRegistration, Registration, RegistrationRepository
from notify_pg.stores.store import (
    NotifyStore,
    forget_person,
    forgotten,
    generation,
    generations,
    person_created,
)
from notify_pg.stores.values import (
    PutResult,
    QuietFacts,
    RuleResult,
    StoreConfig,
    StoredPreference,
    StoredRule,
)

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
    "forgotten",
    "generation",
    "generations",
    "migrate",
    "migrations",
    "payload_size",
    "person_created",
    "pipeline_status",
    "read_event_log",
]
