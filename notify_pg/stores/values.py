"""Values the repositories return, and the adapter's configuration."""

from __future__ import annotations

from datetime import datetime, time

import attrs

from notify_core.hints.levels import Level, Preference, Target, parse_level
from notify_core.hints.quiet import QuietRule
from notify_core.values.instants import format_instant

__all__ = [
    "PutResult",
    "QuietFacts",
    "RuleResult",
    "StoreConfig",
    "StoredPreference",
    "StoredRule",
]


def _positive(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int or value < 1:
        raise ValueError(f"{attribute.name} must be a positive integer, not {value!r}")


def _level(value: object) -> Level:
    return parse_level(value, "/instance_default_level")


@attrs.frozen(kw_only=True)
class StoreConfig:
    """Settings of the adapter.

    Args:
        instance_default_level: the last step of the L3 chain (the instance default).
        event_payload_max_bytes: the largest event payload the log takes, as compact UTF-8
            JSON; a quiet-hours write whose complete list would exceed it is refused with
            ``limit_reached`` (the event must carry the whole list).
    """

    instance_default_level: Level = attrs.field(default=Level.MENTIONS, converter=_level)
    event_payload_max_bytes: int = attrs.field(default=65536, validator=_positive)


@attrs.frozen(kw_only=True)
class StoredPreference:
    """A stored row of ``notification_preferences``.

    Args:
        user_id: the person.
        target: the space, channel or thread.
        level: the level set.
        muted_until: the temporary mute, stored as given (also when past).
        version: 1 for a new row, + 1 on every change.
    """

    user_id: str
    target: Target
    level: Level
    muted_until: datetime | None
    version: int

    @property
    def preference(self) -> Preference:
        """The row as the core's `Preference`."""
        return Preference(level=self.level, muted_until=self.muted_until)

    def to_json(self) -> dict[str, object]:
        """Return the row as the ``preference`` member of ``notification_pref.updated``."""
        out: dict[str, object] = {
            "target": {"kind": self.target.kind.value, "id": self.target.id},
            "level": self.level.value,
        }
        if self.muted_until is not None:
            out["muted_until"] = format_instant(self.muted_until)
        out["version"] = self.version
        return out


@attrs.frozen(kw_only=True)
class PutResult:
    """The answer of a preference write.

    Args:
        preference: the stored row after the write.
        changed: ``False`` when the stored values were already equal (no event, same version).
    """

    preference: StoredPreference
    changed: bool


@attrs.frozen(kw_only=True)
class StoredRule:
    """A stored row of ``quiet_hours``, with its fields as stored.

    The zone is kept as stored even when it no longer loads; `quiet_rules` applies the UTC
    fallback when it builds the rules for evaluation.
    """

    id: str
    user_id: str
    weekdays: int
    start_local: time
    end_local: time
    time_zone: str | None
    enabled: bool
    version: int

    def same_values(self, rule: QuietRule) -> bool:
        """Tell whether ``rule`` has the stored values in all five fields (Q7)."""
        return (
            self.weekdays == rule.weekdays
            and self.start_local == rule.start_local
            and self.end_local == rule.end_local
            and self.time_zone == rule.time_zone
            and self.enabled == rule.enabled
        )

    def to_json(self) -> dict[str, object]:
        """Return the rule as an item of the ``quiet_hours.updated`` list (no null members)."""
        out: dict[str, object] = {
            "id": self.id,
            "weekdays": self.weekdays,
            "start_local": self.start_local.strftime("%H:%M"),
            "end_local": self.end_local.strftime("%H:%M"),
        }
        if self.time_zone is not None:
            out["time_zone"] = self.time_zone
        out["enabled"] = self.enabled
        out["version"] = self.version
        return out


@attrs.frozen(kw_only=True)
class RuleResult:
    """The answer of a quiet-hours write.

    Args:
        rule: the stored rule after the write.
        changed: ``False`` when a put carried the stored values (no event, same version).
    """

    rule: StoredRule
    changed: bool


@attrs.frozen(kw_only=True)
class QuietFacts:
    """What `in_quiet_hours` needs for one person (Q5, Q7).

    Args:
        user_zone: the person's zone for rules without one; absent when the person has none,
            ``"UTC"`` when the stored name no longer loads.
        rules: the person's enabled rules in id order; a rule whose stored zone no longer
            loads carries ``time_zone="UTC"``.
    """

    user_zone: str | None
    rules: tuple[QuietRule, ...]
