"""The in-memory twins of the inbox ports, one module per port; they back ``notify replay``
and the tests, and their size is bounded by the world's state, never by the log's length.

- `notify_core.inbox.memory.wiki`: `WikiMemory` (`notify_core.inbox.ports.WikiFacts`), the
  host's facts learnt from the log;
- `notify_core.inbox.memory.entries`: `EntryMemory` (`notify_core.inbox.ports.EntryStore`).
"""
