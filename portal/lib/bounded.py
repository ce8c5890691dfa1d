"""What a process keeps in memory, bounded: when full, the oldest entry goes first."""

from __future__ import annotations


def bounded_put[K, V](entries: dict[K, V], key: K, value: V, *, size: int) -> None:
    """Store `value` under `key`, first dropping the entries stored longest ago so that
    `entries` holds at most `size`. The caller holds the lock that guards `entries`."""
    while len(entries) >= size:
        del entries[next(iter(entries))]
    entries[key] = value
