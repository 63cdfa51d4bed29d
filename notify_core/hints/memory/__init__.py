"""The in-memory store: every port of the pipeline on plain dictionaries, one twin per port.

It is the embedded default behind ``notify replay`` and the reference the PostgreSQL adapter
must agree with. It learns the world from the event log itself (`MemoryStore.record`), so
its size is bounded by the world's state (people, channels, threads, rows), never by the
log's length.

- `notify_core.hints.memory.store`: `MemoryStore`, the three twins composed (all ports at once);
- `notify_core.hints.memory.world`: `MemoryWorld` (`notify_core.hints.ports.WorldFacts`), with its
  parts
  `MemoryDevices` (`notify_core.hints.memory.devices`) and `MemoryMessages`
  (`notify_core.hints.memory.messages`);
- `notify_core.hints.memory.preferences`: `MemoryPreferences`
  (`notify_core.hints.ports.PreferenceFacts`);
- `notify_core.hints.memory.schedule`: `MemorySchedule` (`notify_core.hints.ports.Schedule`);
- `notify_core.hints.memory.learning`: how the parts apply events (a table of handlers by type).
"""

from notify_core.hints.memory.devices import MemoryDevices
from notify_core.hints.memory.messages import MemoryMessages
from notify_core.hints.memory.preferences import MemoryPreferences
from notify_core.hints.memory.schedule import MemorySchedule
from notify_core.hints.memory.store import MemoryStore
from notify_core.hints.memory.world import MemoryWorld

__all__ = [
    "MemoryDevices",
    "MemoryMessages",
    "MemoryPreferences",
    "MemorySchedule",
    "MemoryStore",
    "MemoryWorld",
]
