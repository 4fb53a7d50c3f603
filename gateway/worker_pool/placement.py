"""Which workers host a servable: every worker, or the N least busy ones.

A TensorFlow model costs hundreds of MB per worker process, so tensorgate can load a version on a
subset of its workers (``--model_workers``). The choice is made once per load and kept: a worker
that dies and is respawned gets back exactly the servables placed on its slot, and the
dispatcher routes a servable's requests only to the workers holding it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def hosted_counts(placed: Iterable[Sequence[int]], workers: int) -> list[int]:
    """How many servables each of ``workers`` slots holds, given every placement."""
    counts = [0] * workers
    for indices in placed:
        for index in indices:
            counts[index] += 1
    return counts


def choose(count: int, hosted: Sequence[int], alive: Sequence[bool]) -> tuple[int, ...]:
    """The worker slots for a new servable, ascending.

    ``count``: how many (0, or more than there are: every slot). ``hosted[i]``: servables
    already placed on slot ``i``; ``alive[i]``: whether slot ``i`` runs a live worker now. Live
    workers come first, then those holding the fewest servables, then the lowest index, so
    models spread over the pool and a load never waits for a respawn when a live worker is free.
    """
    slots = range(len(hosted))
    if count <= 0 or count >= len(hosted):
        return tuple(slots)
    ranked = sorted(slots, key=lambda i: (not alive[i], hosted[i], i))
    return tuple(sorted(ranked[:count]))
