"""The container images' sizes and build times, printed at the end of a run that built them
(tests/deploy/test_image.py)."""

from __future__ import annotations

import pytest

from tests.support import image_podman


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not image_podman.BUILT:
        return
    terminalreporter.section("container images")
    for image in image_podman.BUILT:
        terminalreporter.write_line(
            f"{image.tag} ({image.target} target, {image.platform}): {image.size_mb:.0f} MB; "
            f"scripts/image.py build of the tag took {image.seconds:.0f} s (layers cached from "
            "earlier builds are reused)"
        )
