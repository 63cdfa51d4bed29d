"""Scraping a ``/metrics`` endpoint over HTTP in the tests (worker and serve)."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int) -> tuple[str, Samples]:
    """GET /metrics over HTTP; the text and its samples parsed by prometheus_client."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name, frozenset(sample.labels.items())] = sample.value
    return text, samples


def by(samples: Samples, name: str, *labels: str) -> dict[tuple[str, ...], float]:
    """The samples of one metric keyed by the values of ``labels``."""
    out = {}
    for (sample, attrs), value in samples.items():
        if sample == name:
            got = dict(attrs)
            out[tuple(got[label] for label in labels)] = value
    return out
