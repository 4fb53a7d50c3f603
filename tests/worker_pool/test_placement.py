"""Which workers host a servable: every one, or the N least busy (live ones first)."""

from __future__ import annotations

import pytest

from gateway.config.model_workers import parse_model_workers, workers_for
from gateway.worker_pool.placement import choose, hosted_counts


def test_zero_or_too_many_means_every_worker() -> None:
    assert choose(0, [3, 0, 1], [True] * 3) == (0, 1, 2)
    assert choose(5, [3, 0, 1], [True] * 3) == (0, 1, 2)


def test_the_least_busy_live_workers_are_chosen() -> None:
    assert choose(1, [3, 0, 1], [True] * 3) == (1,)
    assert choose(2, [3, 0, 1], [True] * 3) == (1, 2)
    assert choose(2, [0, 0, 0, 0], [True] * 4) == (0, 1)  # ties: lowest index
    assert choose(1, [2, 0, 1], [True, False, True]) == (2,)  # a dead slot only if needed
    assert choose(3, [2, 0, 1], [True, False, True]) == (0, 1, 2)


def test_models_spread_over_the_pool() -> None:
    placed: dict[str, tuple[int, ...]] = {}
    for name in ("a", "b", "c", "d"):
        placed[name] = choose(2, hosted_counts(placed.values(), 4), [True] * 4)
    assert placed == {"a": (0, 1), "b": (2, 3), "c": (0, 1), "d": (2, 3)}
    assert hosted_counts(placed.values(), 4) == [2, 2, 2, 2]


def test_model_workers_text() -> None:
    placement = parse_model_workers("resnet=1, bert = 2,*=3,")
    assert placement == {"resnet": 1, "bert": 2, "*": 3}
    assert workers_for("resnet", placement) == 1
    assert workers_for("other", placement) == 3
    assert workers_for("other", {"resnet": 1}) == 0
    for bad in ("resnet", "=2", "a=x", "a=0", "a=1,a=2"):
        with pytest.raises(ValueError, match="model_workers"):
            parse_model_workers(bad)
