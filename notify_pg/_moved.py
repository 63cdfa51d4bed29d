"""The module paths of notify_pg before its wings (issue 24), still importable with a warning.

Until 2026-12 `notify_pg` was one flat folder of modules; hosts import some of them by path
(``from notify_pg.worker import Worker``). Each old path is an alias of the module that holds
its code now: importing it gives that same module object and emits one `DeprecationWarning`
naming the new path. Names exported by `notify_pg` itself are not deprecated.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Final

__all__ = ["MOVED", "install"]

#: Old module path -> the module that holds its code now.
MOVED: Final[dict[str, str]] = {
    "notify_pg.seam": "notify_pg.db.seam",
    "notify_pg.migrate": "notify_pg.db.migrate",
    "notify_pg.errors": "notify_pg.db.errors",
    "notify_pg.ids": "notify_pg.db.ids",
    "notify_pg.ports": "notify_pg.stores.ports",
    "notify_pg.facts": "notify_pg.stores.facts",
    "notify_pg.subjects": "notify_pg.stores.subjects",
    "notify_pg.values": "notify_pg.stores.values",
    "notify_pg.preferences": "notify_pg.stores.preferences",
    "notify_pg.quiet_hours": "notify_pg.stores.quiet_hours",
    "notify_pg.records": "notify_pg.stores.records",
    "notify_pg.registrations": "notify_pg.stores.registrations",
    "notify_pg.events": "notify_pg.stores.events",
    "notify_pg.store": "notify_pg.stores.store",
    "notify_pg.pipeline_ports": "notify_pg.push",
    "notify_pg.recorder": "notify_pg.push.recorder",
    "notify_pg.inbox_fanout": "notify_pg.inbox.fanout",
    "notify_pg.mail_drain": "notify_pg.mail.drain",
    "notify_pg.smtp": "notify_pg.mail.smtp",
    "notify_pg.mail_secret": "notify_pg.mail.secret",
    "notify_pg.unsubscribe": "notify_pg.mail.unsubscribe",
    "notify_pg.serve": "notify_pg.http.app",
    "notify_pg.metrics": "notify_pg.ops.metrics",
    "notify_pg.status": "notify_pg.ops.status",
}


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module that holds its code now."""

    def __init__(self, new: str) -> None:
        self._new = new
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self._new}: import it from there (or from notify_pg)",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(self._new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system set the alias's spec on the shared module object: give it back its
        # own, so that the module still names where it lives (pickling, reloads, tracebacks).
        module.__spec__ = self._spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of `MOVED` (and nothing else)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder of the old paths on `sys.meta_path` (once per process)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
