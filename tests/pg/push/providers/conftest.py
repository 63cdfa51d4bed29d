"""Fixtures of the provider tests: a test CA and a recorder of alerts."""

from __future__ import annotations

from pathlib import Path

import pytest
from provider_parts import Alerts

from notify_pg.push.providers.local.tls import LocalCa


@pytest.fixture(scope="session")
def ca(tmp_path_factory: pytest.TempPathFactory) -> LocalCa:
    return LocalCa.create(Path(tmp_path_factory.mktemp("ca")))


@pytest.fixture
def alerts() -> Alerts:
    return Alerts()
