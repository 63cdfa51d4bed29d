"""The push path of notify_pg: the pipeline on PostgreSQL and the sending of hints.

- `notify_pg.push.session`, `world`, `preferences`, `schedule`: the ports of
  `notify_core.hints.ports` for one transaction (`Session`, `PgWorld`, `PgPreferences`,
  `PgSchedule`);
- `notify_pg.push.prefetch`: the world's batched reads (`WorldPrefetch`);
- `notify_pg.push.consume`, `due`, `send`: the push path's rounds (consumer, due work, push
  sends with the results held over an outage), sharing `notify_pg.push.context.PushContext`;
- `notify_pg.push.worker`: `Worker`, those rounds in the loop of `notify_pg.rounds.loop`;
- `notify_pg.push.providers`: the provider port, the process-wide gate and a fake;
- `notify_pg.push.recorder`: what the worker tells a metrics recorder.

It imports `notify_pg.stores`, `notify_pg.rounds` and `notify_pg.db`, never the inbox, mail
or HTTP wings. The ports and the providers are importable from here.
"""

from notify_pg.push.preferences import PgPreferences
from notify_pg.push.providers import FakeCall, FakeProvider, ProviderGate, PushProvider
from notify_pg.push.schedule import PgSchedule
from notify_pg.push.session import Session
from notify_pg.push.world import PgWorld

__all__ = [
    "FakeCall",
    "FakeProvider",
    "PgPreferences",
    "PgSchedule",
    "PgWorld",
    "ProviderGate",
    "PushProvider",
    "Session",
]
