"""Helpers of the image's build (deploy/Dockerfile), run by the base image's Python in /src:

``python buildtool.py requirements [EXTRA ...]``
    prints the requirements to install, one a line, from pyproject.toml: the base dependencies,
    or with arguments those of the named extras only. The build installs them, through
    constraints.txt, before it copies the sources, so that a change to the code alone reuses
    the installed dependencies.

``/opt/tensorgate/bin/python -I buildtool.py stage DIST DEST``
    copies every file the installed distribution DIST recorded (its RECORD: packages, bytecode,
    metadata, scripts) to DEST under the same absolute paths, times kept. The images copy DEST
    over the dependencies' virtualenv, so tensorgate itself is a layer of its own, a few MB,
    the only one a change to the code rebuilds.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
import tomllib
from pathlib import Path


def requirements(extras: list[str]) -> list[str]:
    with open("pyproject.toml", "rb") as file:
        project = tomllib.load(file)["project"]
    if not extras:
        return list(project["dependencies"])
    return [r for extra in extras for r in project["optional-dependencies"][extra]]


def stage(dist: str, dest: Path) -> int:
    """Copies DIST's installed files under DEST; returns how many. Run with ``python -I``, so that
    the metadata found is the installed one, not the build's ``*.egg-info`` beside this script."""
    copied = 0
    prefix = Path(sys.prefix).resolve()
    for file in importlib.metadata.distribution(dist).files or []:
        source = Path(str(file.locate())).resolve()
        if not source.is_relative_to(prefix):
            raise SystemExit(f"{dist}: {source} is not installed under {prefix}")
        if source.is_file():
            target = dest / source.relative_to("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            copied += 1
    return copied


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "requirements":
        print("\n".join(requirements(args)))
    elif command == "stage":
        print(f"staged {stage(args[0], Path(args[1]))} files of {args[0]}", file=sys.stderr)
    else:
        raise SystemExit(f"unknown command {command!r}")
