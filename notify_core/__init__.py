"""notify_core: the pure decisions of notify.

Ground rules (behaviour.md G1-G5), which every module here keeps:
- no I/O whatsoever: no files, sockets, environment, clock or randomness; time comes in as an
  argument (``now``), randomness as an argument (``jitter``);
- inputs and outputs are immutable values (frozen attrs classes), changed with ``attrs.evolve``;
- invalid input raises one of the documented errors of `notify_core.errors`, each with a
  machine-readable ``code`` and, where a field is at fault, a JSON ``pointer``.
"""

from notify_core.errors import (
    InvalidDelivery,
    InvalidFacts,
    InvalidInput,
    InvalidKind,
    InvalidLevel,
    InvalidRule,
    NaiveDatetime,
    NotifyError,
    UsageError,
)
from notify_core.kinds import Kind, RunState, kind_code, kind_from_code, run_active
from notify_core.levels import (
    EffectiveLevel,
    Level,
    LevelFacts,
    LevelSource,
    Preference,
    Target,
    TargetKind,
    preference_unchanged,
    resolve_level,
)
from notify_core.quiet import (
    ALWAYS,
    QuietRule,
    in_quiet_hours,
    parse_local_time,
    quiet_until,
    rule_unchanged,
)

__all__ = [
    "ALWAYS",
    "EffectiveLevel",
    "InvalidDelivery",
    "InvalidFacts",
    "InvalidInput",
    "InvalidKind",
    "InvalidLevel",
    "InvalidRule",
    "Kind",
    "Level",
    "LevelFacts",
    "LevelSource",
    "NaiveDatetime",
    "NotifyError",
    "Preference",
    "QuietRule",
    "RunState",
    "Target",
    "TargetKind",
    "UsageError",
    "in_quiet_hours",
    "kind_code",
    "kind_from_code",
    "parse_local_time",
    "preference_unchanged",
    "quiet_until",
    "resolve_level",
    "rule_unchanged",
    "run_active",
]
