"""The flat module paths of notify_pg before its wings still import, with a warning (issue 24).

Hosts import some modules by path (``from notify_pg.worker import Worker``); each old path is
now an alias of the module that holds its code (`notify_pg._moved.MOVED`).
"""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import notify_pg
from notify_pg._moved import MOVED


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_is_the_new_module_and_warns(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert [str(w.message) for w in caught if w.category is DeprecationWarning] == [
        f"{old} moved to {new}: import it from there (or from notify_pg)"
    ]
    # The shared module keeps naming where it lives.
    assert module.__spec__ is not None
    assert module.__spec__.name == new


def test_old_from_imports_give_the_same_objects() -> None:
    sys.modules.pop("notify_pg.store", None)
    with pytest.warns(DeprecationWarning, match="notify_pg.stores.store"):
        from notify_pg.store import NotifyStore  # type: ignore[import-not-found]
    assert NotifyStore is notify_pg.NotifyStore


def test_the_worker_path_is_a_package_again_and_imports_without_a_warning() -> None:
    """``notify_pg.worker`` is the worker wing (issue 24): its old names, no alias."""
    assert "notify_pg.worker" not in MOVED
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from notify_pg.worker import Clock, HintSink, Worker, WorkerConfig, WorkerStats

    assert Worker is notify_pg.Worker and WorkerConfig is notify_pg.WorkerConfig
    assert WorkerStats is notify_pg.WorkerStats and HintSink is notify_pg.HintSink
    assert Clock is not None


def test_old_paths_are_not_modules_any_more() -> None:
    """No old path is also a real module (an alias would hide it)."""
    for old in MOVED:
        spec = importlib.machinery.PathFinder.find_spec(
            old.rpartition(".")[2], list(notify_pg.__path__)
        )
        assert spec is None, f"{old} exists as a module: drop its alias from MOVED"


def test_names_of_the_package_import_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in notify_pg.__all__:
            assert getattr(notify_pg, name) is not None
