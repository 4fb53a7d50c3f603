"""The memory fences of this machine's CPU, and the machine code the arm64 ones are made of (run
on arm64 by the channel's stress test inside the arm64 image: ``make test-image``)."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from channel.shm import fences

# This CPU's full barrier, then its return: what the arm64 fences are made of, on x86-64.
HOST_BARRIER = {"x86_64": bytes.fromhex("0faef0c3"), "aarch64": bytes.fromhex("bf3b03d5c0035fd6")}


def test_the_fences_run_and_name_this_machine() -> None:
    for order in (fences.fence, fences.release, fences.acquire):
        order()
    assert fences.IMPLEMENTATION.startswith(
        {"x86_64": "x86-64", "aarch64": "arm64"}[fences.MACHINE]
    )


def test_machine_code_runs_from_a_page_never_writable() -> None:
    barrier = HOST_BARRIER.get(platform.machine())
    if barrier is None:
        pytest.skip(f"no barrier instruction known for {platform.machine()}")
    function = fences.machine_function(barrier)
    function()
    maps = Path("/proc/self/maps").read_text().splitlines()
    pages = [
        line.split()[1] for line in maps if line.endswith("/memfd:tensorgate-fences (deleted)")
    ]
    assert pages and set(pages) == {"r-xp"}, pages
    assert not [line for line in maps if line.split()[1].startswith("rwx")]
