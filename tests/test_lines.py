"""`notify_core.lines` shapes every output line; the modules that held the shapes before still
give the same objects under the old names (users and older docs import them from there)."""

from __future__ import annotations

import importlib

import pytest

from notify_core import lines

OLD_HOMES = {
    "notify_core.replay": (
        "Item",
        "UnknownReference",
        "dumps_hint",
        "dumps_item",
        "dumps_json",
        "dumps_line",
        "hint_to_json",
    ),
    "notify_core.tables": ("decision_to_json",),
    "notify_core.inbox.pipeline": ("inbox_line_to_json", "mail_line_to_json"),
}


@pytest.mark.parametrize("module", sorted(OLD_HOMES))
def test_old_homes_give_the_objects_of_lines(module: str) -> None:
    old = importlib.import_module(module)
    for name in OLD_HOMES[module]:
        assert getattr(old, name) is getattr(lines, name), f"{module}.{name}"


def test_inbox_pipeline_still_refuses_names_it_never_had() -> None:
    pipeline = importlib.import_module("notify_core.inbox.pipeline")
    with pytest.raises(AttributeError, match="no_such_name"):
        pipeline.no_such_name  # noqa: B018


def test_wiki_payloads_keep_their_old_home() -> None:
    old = importlib.import_module("notify_core.inbox.payloads")
    new = importlib.import_module("notify_core.wiki_payloads")
    for name in new.__all__:
        assert getattr(old, name) is getattr(new, name)


def test_synth_left_the_core_without_an_alias() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("notify_core.synth")
    assert hasattr(importlib.import_module("notify_cli.synth_logs"), "synth_events")
