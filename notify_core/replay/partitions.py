"""Recipient partitions: how several consumers share one event log (docs/concepts.md).

Every decision, window, delayed release and badge sync belongs to one recipient, and the
facts it reads are the recipient's own or the host's. So a log can be consumed by ``count``
consumers side by side, each reading every event and deciding only for the recipients of its
partition; together they give exactly the hints of one consumer.

The hash is the first 28 bits of the MD5 digest of the recipient's id (UTF-8): stable across
processes and Python versions (unlike `hash`), and computable in SQL, where PostgreSQL's
``md5`` gives the same bits (`notify_pg` filters due work with it).
"""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import md5

import attrs

from notify_core.values.errors import UsageError

__all__ = ["Partition", "Partitions", "partition_of"]


def partition_of(key: str, count: int) -> int:
    """Return the partition of ``key`` among ``count`` partitions, in ``range(count)``.

    Args:
        key: a recipient's id.
        count: the number of partitions, at least 1.

    Raises:
        UsageError: ``count`` is below 1.

    Example:
        >>> partition_of("u1", 1)
        0
        >>> partition_of("u1", 4) == partition_of("u1", 4)
        True
    """
    if count < 1:
        raise UsageError("bad_partition", f"a partition count must be at least 1, not {count}")
    if count == 1:
        return 0
    # usedforsecurity=False: a spread, not a secret (FIPS builds allow it then).
    digest = md5(key.encode("utf-8", "surrogatepass"), usedforsecurity=False).digest()
    return (int.from_bytes(digest[:4], "big") >> 4) % count


def _check_index(instance: Partition, attribute: attrs.Attribute[int], value: int) -> None:
    if not 0 <= value < instance.count:
        raise UsageError(
            "bad_partition", f"a partition index must be in 0..{instance.count - 1}, not {value}"
        )


def _check_count(instance: Partition, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise UsageError("bad_partition", f"a partition count must be at least 1, not {value}")


@attrs.frozen
class Partition:
    """One of ``count`` recipient partitions; called with a recipient, says if it owns them.

    Hand it to `notify_core.hints.pipeline.Pipeline` as ``owns`` to decide for its recipients only.

    Args:
        index: which partition, in ``range(count)``.
        count: how many partitions share the log.

    Raises:
        UsageError: ``count`` below 1 or ``index`` out of range.

    Example:
        >>> parts = [Partition(i, 3) for i in range(3)]
        >>> sum(p("u1") for p in parts)
        1
    """

    index: int = attrs.field(validator=_check_index)
    count: int = attrs.field(validator=_check_count)

    def __call__(self, recipient: str) -> bool:
        """Return whether ``recipient`` belongs to this partition."""
        return partition_of(recipient, self.count) == self.index


def _sorted_indices(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(sorted(set(value)))


def _check_indices(instance: Partitions, attribute: attrs.Attribute[int], value: int) -> None:
    if not instance.indices or any(not 0 <= i < value for i in instance.indices):
        raise UsageError(
            "bad_partition",
            f"partition indices must be some of 0..{value - 1}, not {list(instance.indices)}",
        )


@attrs.frozen
class Partitions:
    """Some of ``count`` recipient partitions handled together (one round of a worker that
    found several partitions free at one position); called with a recipient, says if one of
    them owns the recipient.

    Args:
        indices: which partitions, ascending, each in ``range(count)``.
        count: how many partitions share the log.

    Raises:
        UsageError: ``count`` below 1, no index, or an index out of range.

    Example:
        >>> both = Partitions((0, 2), 3)
        >>> both("u1") == (Partition(0, 3)("u1") or Partition(2, 3)("u1"))
        True
    """

    indices: tuple[int, ...] = attrs.field(converter=_sorted_indices)
    count: int = attrs.field(validator=attrs.validators.and_(_check_count, _check_indices))

    def __call__(self, recipient: str) -> bool:
        """Return whether ``recipient`` belongs to one of these partitions."""
        return partition_of(recipient, self.count) in self.indices
