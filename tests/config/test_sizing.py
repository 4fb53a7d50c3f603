"""The sizing policy: the worker/thread split that fits the CPUs, and how many front ends."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.config.machine import available_cpus
from gateway.config.settings import Settings
from gateway.config.sizing import resolve_frontends, resolve_worker_threads
from gateway.config.validation import SettingsError


def _threads(cpus: int, **flags: Any) -> tuple[int, int, int]:
    return resolve_worker_threads(Settings(model_base_path="/m", **flags), cpus=cpus)


def test_auto_is_one_single_threaded_worker_per_cpu() -> None:
    assert _threads(1) == (1, 1, 1)
    assert _threads(2) == (2, 1, 1)
    assert _threads(16) == (16, 1, 1)


def test_explicit_counts_fill_the_rest() -> None:
    assert _threads(8, tensorflow_intra_op_parallelism=2) == (4, 2, 1)
    assert _threads(8, tensorflow_intra_op_parallelism=3) == (2, 3, 1)
    assert _threads(8, workers=3) == (3, 2, 1)
    assert _threads(8, workers=2, tensorflow_inter_op_parallelism=2) == (2, 4, 2)
    assert _threads(8, tensorflow_session_parallelism=4) == (2, 4, 4)
    assert _threads(8, tensorflow_session_parallelism=4, tensorflow_inter_op_parallelism=1) == (
        8,
        1,
        1,
    )


def test_explicit_oversubscription_is_honoured_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.config.sizing"):
        assert _threads(2, workers=4, tensorflow_intra_op_parallelism=2) == (4, 2, 1)
    assert "oversubscribed" in caplog.text


@given(
    cpus=st.integers(1, 512),
    workers=st.integers(0, 64),
    intra=st.integers(0, 64),
    session=st.integers(0, 64),
)
def test_auto_derivation_never_oversubscribes(
    cpus: int, workers: int, intra: int, session: int
) -> None:
    got_workers, got_intra, got_inter = _threads(
        cpus,
        workers=workers,
        tensorflow_intra_op_parallelism=intra,
        tensorflow_session_parallelism=session,
    )
    wanted_intra = intra or session
    assert got_workers >= 1 and got_intra >= 1 and got_inter >= 1
    if workers:
        assert got_workers == workers
    if wanted_intra:
        assert got_intra == wanted_intra
    explicit_fits = workers <= cpus and wanted_intra <= cpus and workers * wanted_intra <= cpus
    if (workers == 0 or wanted_intra == 0) and explicit_fits:
        assert got_workers * got_intra <= cpus
    if workers == 0 and wanted_intra == 0:
        assert (got_workers, got_intra) == (cpus, 1)


def test_default_cpu_count_comes_from_the_machine() -> None:
    workers, intra, _ = resolve_worker_threads(Settings(model_base_path="/m"))
    assert workers * intra == available_cpus()


def test_a_cpu_budget_below_one_is_refused() -> None:
    with pytest.raises(SettingsError, match="cpus must be >= 1, got 0"):
        _threads(0)


@pytest.mark.parametrize(
    ("cpus", "flags", "expected"),
    [
        (1, {}, 1),  # one process, as before
        (2, {}, 2),
        (4, {}, 4),
        (8, {}, 8),
        (16, {}, 4),  # 16 workers: 64 channels at most
        (16, {"workers": 4}, 8),  # at most 8
        (64, {"tensorflow_intra_op_parallelism": 8}, 8),  # 8 workers of 8 threads
        (2, {"workers": 64}, 2),  # at least 2 on two CPUs
        (8, {"frontends": 3}, 3),  # as given
        (1, {"frontends": 2}, 2),
    ],
)
def test_front_ends_per_cpu_bounded_by_the_channels(
    cpus: int, flags: dict[str, int], expected: int
) -> None:
    settings = Settings(model_base_path="/m", **flags)  # type: ignore[arg-type]
    assert resolve_frontends(settings, cpus=cpus) == expected
