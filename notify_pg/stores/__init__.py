"""The stores of notify_pg: repositories on the library's tables and the host's facts.

- `notify_pg.stores.preferences`, `quiet_hours`, `records`, `registrations`: one repository
  each, with exact concurrency semantics;
- `notify_pg.stores.events`: the event log and its writers;
- `notify_pg.stores.ports`: the host's ports (the facts a host answers) and
  `notify_pg.stores.facts`, which reads them in batches;
- `notify_pg.stores.values`, `subjects`: the values the repositories return and check;
- `notify_pg.stores.store`: `NotifyStore`, the repositories bound to one schema.

The stores import only `notify_pg.db`: no worker, push, inbox, mail or HTTP code.
"""

__all__: list[str] = []
