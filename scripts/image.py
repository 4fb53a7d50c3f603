#!/usr/bin/env python3
"""Builds tensorgate's container images (deploy/Dockerfile) with podman: ``make image``,
``make image-tensorflow``, ``make image-openvino``; ``make test-image`` builds and runs the first
two (tests/deploy/test_image.py).

    python3 scripts/image.py build --target onnx          # -> tensorgate:0.1.0
    python3 scripts/image.py build --target tensorflow    # -> tensorgate:0.1.0-tf
    python3 scripts/image.py build --target openvino      # -> tensorgate:0.1.0-openvino
    python3 scripts/image.py base                         # prints the base image it would use
    python3 scripts/image.py clean                        # removes the images, cache and base

The base (the Dockerfile's ``BASE_IMAGE`` argument) is ``python:3.11-slim`` when that image is
here or can be pulled from its registry. Where no registry can be reached, an equivalent is
bootstrapped from Debian's packages, once, and reused (``localhost/tensorgate-base``): Debian 12
``minbase`` with ``python3``, ``python3-venv`` and ``ca-certificates`` by mmdebstrap, documentation
and translations left out, and a virtual environment at /usr/local so that ``python`` and ``pip``
are in /usr/local/bin as in python:3.11-slim; ``podman import`` makes it an image. The Dockerfile is
the same either way. ``--base IMAGE`` (``make image BASE_IMAGE=...``) names another base.

pip inside the build uses the same configuration as pip here: ``pip config list`` (files and
``PIP_*`` variables) is written to a pip.conf mounted read-only at /etc/pip.conf for the build's
``RUN`` steps, with the files and local indexes it names (certificate bundle, constraints,
``file://`` indexes, find-links folders) mounted read-only at their own paths. None of it is
copied into an image.

podman reads deploy/podman/containers.conf (``CONTAINERS_CONF``, unless already set): runc,
cgroupfs, and limits a sandbox allows. Needs root; scripts/image_deps.sh installs podman, runc and
mmdebstrap with apt-get.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
CONTAINERS_CONF = REPO / "deploy" / "podman" / "containers.conf"

TAGS = {
    "onnx": "tensorgate:0.1.0",
    "tensorflow": "tensorgate:0.1.0-tf",
    "openvino": "tensorgate:0.1.0-openvino",
}
REGISTRY_BASE = "docker.io/library/python:3.11-slim"
LOCAL_BASE = "localhost/tensorgate-base:3.11-bookworm"
PULL_TIMEOUT_S = 180

SUITE = "bookworm"
MIRRORS = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
PACKAGES = ("python3", "python3-venv", "ca-certificates")
# What python:3.11-slim leaves out too: manuals, documentation (but the copyrights), translations.
DPKG_OPTIONS = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/lintian/*",
)
# python and pip in /usr/local/bin, and no test folders in the standard library, as in
# python:3.11-slim; the image's apt keeps Debian's defaults.
CUSTOMIZE = (
    'chroot "$1" python3 -m venv /usr/local',
    'find "$1"/usr/lib/python3* "$1"/usr/local/lib/python3* -depth -type d'
    " \\( -name test -o -name tests -o -name idle_test \\) -exec rm -r {} +",
    'rm -f "$1"/etc/apt/apt.conf.d/99mmdebstrap',
)
IMPORT_CHANGES = ("ENV LANG=C.UTF-8", 'CMD ["python3"]')

# pip options whose values name local files or folders the build must see.
PIP_PATH_OPTIONS = (
    "cert",
    "client-cert",
    "constraint",
    "find-links",
    "index-url",
    "extra-index-url",
)


def say(message: str) -> None:
    print(f"image: {message}", file=sys.stderr, flush=True)


def podman_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(CONTAINERS_CONF))
    return env


def podman(*args: str, check: bool = True, quiet: bool = True) -> subprocess.CompletedProcess[str]:
    """``podman ARGS`` with this project's containers.conf; output captured when ``quiet``."""
    done = subprocess.run(
        ["podman", *args],
        env=podman_env(),
        text=True,
        capture_output=quiet,
        check=False,
    )
    if check and done.returncode != 0:
        detail = (done.stderr or "").strip() if quiet else ""
        raise SystemExit(f"image: podman {' '.join(args)} failed ({done.returncode}) {detail}")
    return done


def image_exists(name: str) -> bool:
    return podman("image", "exists", name, check=False).returncode == 0


def image_label(name: str, label: str) -> str:
    done = podman("image", "inspect", "--format", f'{{{{index .Labels "{label}"}}}}', name)
    return done.stdout.strip()


# --- the base ----------------------------------------------------------------------------------


def recipe() -> str:
    """A digest of everything the bootstrapped base is made from: a changed recipe rebuilds it."""
    parts = [SUITE, *MIRRORS, *PACKAGES, *DPKG_OPTIONS, *CUSTOMIZE, *IMPORT_CHANGES]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def host_apt_options() -> list[str]:
    """This machine's apt settings that a bootstrap through the same network needs (a mirror or
    proxy serving an archive snapshot makes apt here skip the Release files' expiry check)."""
    done = subprocess.run(
        ["apt-config", "shell", "VALID", "Acquire::Check-Valid-Until"],
        capture_output=True,
        text=True,
        check=False,
    )
    if "VALID='false'" in done.stdout:
        return ['--aptopt=Acquire::Check-Valid-Until "false"']
    return []


def bootstrap_base() -> None:
    """Debian's packages -> rootfs.tar (mmdebstrap) -> LOCAL_BASE (podman import)."""
    if shutil.which("mmdebstrap") is None:
        raise SystemExit("image: mmdebstrap is missing (scripts/image_deps.sh installs it)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tensorgate-base-", dir="/var/tmp") as scratch:
        rootfs = Path(scratch) / "rootfs.tar"
        command = [
            "mmdebstrap",
            "--quiet",
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
            *host_apt_options(),
            *(f"--dpkgopt={option}" for option in DPKG_OPTIONS),
            *(f"--customize-hook={hook}" for hook in CUSTOMIZE),
            SUITE,
            str(rootfs),
            *MIRRORS,
        ]
        subprocess.run(command, check=True)
        changes = [*IMPORT_CHANGES, f"LABEL tensorgate.base-recipe={recipe()}"]
        podman("import", *(f"--change={c}" for c in changes), str(rootfs), LOCAL_BASE)
    say(f"bootstrapped {LOCAL_BASE} from Debian's packages in {time.monotonic() - started:.0f} s")


def remove_stale_layers() -> None:
    """Untagged images (build cache) made on a bootstrapped base of another recipe: no build can
    use them any more. Images of other projects carry no such label and are left alone."""
    for _ in range(50):
        listed = json.loads(podman("image", "ls", "--all", "--format=json").stdout or "[]")
        stale = [
            image["Id"]
            for image in listed
            if not image.get("Names")
            and (image.get("Labels") or {}).get("tensorgate.base-recipe", recipe()) != recipe()
        ]
        removed = [i for i in stale if podman("rmi", i, check=False).returncode == 0]
        if not removed:
            return


def base_image(explicit: str | None) -> str:
    """The image to build on, local once this returns (the build itself never pulls)."""
    if explicit:
        if not image_exists(explicit):
            podman("pull", explicit, quiet=False)
        return explicit
    if image_exists(REGISTRY_BASE):
        return REGISTRY_BASE
    try:
        pulled = subprocess.run(
            ["podman", "pull", "--quiet", REGISTRY_BASE],
            env=podman_env(),
            capture_output=True,
            text=True,
            timeout=PULL_TIMEOUT_S,
            check=False,
        )
        reason = pulled.stderr.strip().splitlines()[-1] if pulled.returncode else ""
    except subprocess.TimeoutExpired:
        reason = f"no answer in {PULL_TIMEOUT_S} s"
    if not reason:
        return REGISTRY_BASE
    if image_exists(LOCAL_BASE) and image_label(LOCAL_BASE, "tensorgate.base-recipe") == recipe():
        say(f"{REGISTRY_BASE} cannot be pulled ({reason}); using {LOCAL_BASE}, built before")
        return LOCAL_BASE
    say(f"{REGISTRY_BASE} cannot be pulled ({reason}); bootstrapping {LOCAL_BASE}")
    bootstrap_base()
    return LOCAL_BASE


# --- pip's configuration, for the build ----------------------------------------------------------


def host_pip_config() -> dict[str, dict[str, str]]:
    """``pip config list`` of the pip here, as pip.conf sections (``PIP_*`` variables win, as in
    pip)."""
    for pip in ([sys.executable, "-m", "pip"], ["python3", "-m", "pip"], ["pip3"], ["pip"]):
        try:
            done = subprocess.run(
                [*pip, "config", "list"], capture_output=True, text=True, check=False
            )
        except FileNotFoundError:
            continue
        if done.returncode == 0:
            break
    else:
        return {}
    sections: dict[str, dict[str, str]] = {}
    from_env: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if not sep or "." not in key:
            continue
        section, _, option = key.rpartition(".")
        text = str(ast.literal_eval(value))
        if section == ":env:":
            from_env[option] = text
        else:
            sections.setdefault(section, {})[option] = text
    sections.setdefault("global", {}).update(from_env)
    return sections


def local_paths(sections: dict[str, dict[str, str]]) -> list[Path]:
    """The files and folders that pip's options name (for a ``file://`` index's ``simple`` folder,
    the folder above it, where its links lead)."""
    paths: set[Path] = set()
    for options in sections.values():
        for option, value in options.items():
            if option not in PIP_PATH_OPTIONS:
                continue
            for word in value.split():
                if word.startswith("file://"):
                    path = Path(word.removeprefix("file://"))
                    path = path.parent if path.name == "simple" else path
                elif word.startswith("/"):
                    path = Path(word)
                else:
                    continue
                if path.exists():
                    paths.add(path.resolve())
    return sorted(paths)


def pip_mounts(scratch: Path) -> list[str]:
    """``--volume`` arguments giving the build's RUN steps this machine's pip configuration."""
    sections = host_pip_config()
    if not sections.get("global") and len(sections) <= 1:
        return []
    conf = scratch / "pip.conf"
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{option} = {value}" for option, value in options.items()]
    conf.write_text("\n".join(lines) + "\n")
    conf.chmod(0o644)
    mounts = [f"--volume={conf}:/etc/pip.conf:ro"]
    mounts += [f"--volume={path}:{path}:ro" for path in local_paths(sections)]
    return mounts


# --- the images ----------------------------------------------------------------------------------


def image_id(name: str) -> str:
    done = podman("image", "inspect", "--format", "{{.Id}}", name, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def image_size_mb(name: str) -> float:
    return int(podman("image", "inspect", "--format", "{{.Size}}", name).stdout) / 1e6


def build(target: str, tag: str, base: str | None, no_cache: bool) -> None:
    started = time.monotonic()
    base = base_image(base)
    before = image_id(tag)
    with tempfile.TemporaryDirectory(prefix="tensorgate-pip-") as scratch:
        command = [
            "build",
            f"--file={DOCKERFILE}",
            f"--target={target}",
            f"--tag={tag}",
            f"--build-arg=BASE_IMAGE={base}",
            "--pull=never",
            "--layers",
            *(["--no-cache"] if no_cache else []),
            *pip_mounts(Path(scratch)),
            str(REPO),
        ]
        say("podman " + " ".join(command))
        podman(*command, quiet=False)
    after = image_id(tag)
    if before and before != after:
        # The previous build of this tag, now untagged; its layers that the new one shares stay.
        podman("rmi", before, check=False)
    remove_stale_layers()
    say(
        f"{tag} ({target} target, on {base}): {image_size_mb(tag):.0f} MB, "
        f"built in {time.monotonic() - started:.0f} s"
    )


def clean() -> None:
    """The images, the build cache this leaves and the bootstrapped base."""
    names = [n for n in (*TAGS.values(), LOCAL_BASE) if image_exists(n)]
    if names:
        podman("rmi", *names, check=False, quiet=False)
    podman("image", "prune", "--force", check=False, quiet=False)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="build an image")
    build_parser.add_argument("--target", choices=sorted(TAGS), default="onnx")
    build_parser.add_argument("--tag", help="default: tensorgate:0.1.0 (onnx), -tf, -openvino")
    build_parser.add_argument("--base", help="the BASE_IMAGE to build on")
    build_parser.add_argument("--no-cache", action="store_true", help="rebuild every layer")
    base_parser = commands.add_parser("base", help="print (and make) the base image")
    base_parser.add_argument("--base", help="the BASE_IMAGE to build on")
    commands.add_parser("clean", help="remove the images, their build cache and the base")
    args = parser.parse_args(argv)
    if shutil.which("podman") is None:
        raise SystemExit("image: podman is missing (scripts/image_deps.sh installs it)")
    if args.command == "build":
        build(args.target, args.tag or TAGS[args.target], args.base, args.no_cache)
    elif args.command == "base":
        print(base_image(args.base))
    else:
        clean()


if __name__ == "__main__":
    main()
