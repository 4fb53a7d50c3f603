"""scripts/image.py's rule for the other architecture's images: they run here when qemu-user is
registered with binfmt_misc, enabled and with the F flag (the interpreter opened at registration,
so that it is found inside a container's root). Read from a binfmt_misc folder the test writes,
as the kernel shows one; ``make test-image`` builds and runs the arm64 image for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.image_podman import IMAGE_SCRIPT, NATIVE_ARCH

FOREIGN = next(arch for arch in IMAGE_SCRIPT.QEMU if arch != NATIVE_ARCH)
HANDLER = f"qemu-{IMAGE_SCRIPT.QEMU[FOREIGN]}"


@pytest.fixture
def binfmt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty binfmt_misc folder the script reads instead of the kernel's."""
    monkeypatch.setattr(IMAGE_SCRIPT, "BINFMT", tmp_path)
    return tmp_path


def register(binfmt: Path, state: str, flags: str) -> None:
    (binfmt / "status").write_text("enabled\n")
    interpreter = f"/usr/libexec/qemu-binfmt/{IMAGE_SCRIPT.QEMU[FOREIGN]}-binfmt-P"
    (binfmt / HANDLER).write_text(f"{state}\ninterpreter {interpreter}\nflags: {flags}\n")


def test_this_machines_architecture_needs_no_emulation(binfmt: Path) -> None:
    assert IMAGE_SCRIPT.emulation_missing(NATIVE_ARCH) is None


def test_the_other_architecture_runs_with_qemu_registered_with_the_f_flag(binfmt: Path) -> None:
    register(binfmt, "enabled", "POF")
    assert IMAGE_SCRIPT.emulation_missing(FOREIGN) is None


@pytest.mark.parametrize(
    ("state", "flags", "why"),
    [
        (None, "", "binfmt_misc is not mounted"),
        ("", "", f"{HANDLER} is missing"),
        ("enabled", "PO", "lacks the F flag"),
        ("disabled", "POF", "is disabled"),
    ],
)
def test_what_is_missing_is_named(binfmt: Path, state: str | None, flags: str, why: str) -> None:
    if state is not None:
        (binfmt / "status").write_text("enabled\n")
    if state:
        register(binfmt, state, flags)
    assert why in (IMAGE_SCRIPT.emulation_missing(FOREIGN) or "")


def test_a_build_it_cannot_run_stops_before_podman_saying_what_to_do(binfmt: Path) -> None:
    with pytest.raises(SystemExit) as stopped:
        IMAGE_SCRIPT.require_emulation([NATIVE_ARCH, FOREIGN])
    message = str(stopped.value)
    assert "binfmt_misc is not mounted" in message
    assert "`make image-deps`" in message and f"IMAGE_ARCH={NATIVE_ARCH}" in message
