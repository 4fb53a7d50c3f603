#!/usr/bin/env python3
"""Builds tensorgate's container images (deploy/Dockerfile) with podman, each for linux/amd64
and linux/arm64 under one tag: ``make image``, ``make image-tensorflow``, ``make image-openvino``;
``make test-image`` builds and runs the first two (tests/deploy/test_image.py).

    python3 scripts/image.py build --target onnx          # -> tensorgate:0.1.0
    python3 scripts/image.py build --target tensorflow    # -> tensorgate:0.1.0-tf
    python3 scripts/image.py build --target openvino      # -> tensorgate:0.1.0-openvino
    python3 scripts/image.py build --arch arm64           # that architecture only
    python3 scripts/image.py base --arch arm64            # prints the base image it would use
    python3 scripts/image.py clean                        # removes the images, cache and bases

Each architecture is built on its own (``podman build --platform linux/ARCH``) as TAG-ARCH
(``tensorgate:0.1.0-arm64``), then TAG becomes a manifest list of them (``podman manifest
create`` and ``add``): ``podman run TAG`` on either kind of machine runs its own, and ``podman
manifest push --all TAG docker://REGISTRY/...`` pushes the one tag that Kubernetes nodes of both
architectures pull. Every target supports both architectures (:data:`ARCHITECTURES`: PyPI has
aarch64 wheels of every pinned dependency, TensorFlow's and OpenVINO's included). An architecture
the machine's CPU does not run is built and run under emulation: qemu-user-static registered
with binfmt_misc (scripts/image_deps.sh sets it up; ``emulation`` says what is missing).

The base (the Dockerfile's ``BASE_IMAGE`` argument) is ``python:3.11-slim`` of the architecture
when that image is here or can be pulled from its registry. Where no registry can be reached, an
equivalent is bootstrapped from Debian's packages for each architecture, once, and reused
(``localhost/tensorgate-base:3.11-bookworm-ARCH``): Debian 12 ``minbase`` with ``python3``,
``python3-venv`` and ``ca-certificates`` by mmdebstrap (``--architectures=ARCH``, its package
scripts run under emulation for a foreign one), documentation and translations left out, and a
virtual environment at /usr/local so that ``python`` and ``pip`` are in /usr/local/bin as in
python:3.11-slim; ``podman import --arch`` makes it an image. The Dockerfile is the same either
way. ``--base IMAGE`` (``make image BASE_IMAGE=...``) names another base, pulled for each
architecture.

pip inside the build uses the same configuration as pip here: ``pip config list`` (files and
``PIP_*`` variables) is written to a pip.conf mounted read-only at /etc/pip.conf for the build's
``RUN`` steps, with the files and local indexes it names (certificate bundle, constraints,
``file://`` indexes, find-links folders) mounted read-only at their own paths. None of it is
copied into an image.

podman reads deploy/podman/containers.conf (``CONTAINERS_CONF``, unless already set): runc,
cgroupfs, and limits a sandbox allows. Needs root; scripts/image_deps.sh installs podman, runc,
mmdebstrap and qemu-user-static with apt-get.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import platform
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
ARCHITECTURES = {
    "onnx": ("amd64", "arm64"),
    "tensorflow": ("amd64", "arm64"),
    "openvino": ("amd64", "arm64"),
}
"""The architectures each target is built for (Debian's and OCI's names): those for which every
package the target installs has a wheel on PyPI."""
REGISTRY_BASE = "docker.io/library/python:3.11-slim"
LOCAL_BASE = "localhost/tensorgate-base:3.11-bookworm"
"""The bootstrapped base's name; each architecture's is ``LOCAL_BASE-ARCH``."""
PULL_TIMEOUT_S = 180

QEMU = {"amd64": "x86_64", "arm64": "aarch64"}
"""Each architecture's name to the kernel (``uname -m``) and to qemu (``qemu-NAME-static``)."""
BINFMT = Path("/proc/sys/fs/binfmt_misc")

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


def image_arch(name: str) -> str:
    return podman("image", "inspect", "--format", "{{.Architecture}}", name).stdout.strip()


def image_id(name: str) -> str:
    done = podman("image", "inspect", "--format", "{{.Id}}", name, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


# --- the architectures ---------------------------------------------------------------------------


def native_arch() -> str:
    """This machine's architecture, by OCI's (and Debian's) name."""
    machine = platform.machine()
    return next((arch for arch, name in QEMU.items() if name == machine), machine)


def emulation_missing(arch: str) -> str | None:
    """Why containers of ``arch`` cannot run here; None when they can: the CPU's own, or a
    qemu-user handler registered with binfmt_misc with the F flag (the interpreter opened when it
    was registered, so that it runs inside a container's root too)."""
    if arch == native_arch():
        return None
    entry = BINFMT / f"qemu-{QEMU[arch]}"
    if not (BINFMT / "status").exists():
        return f"binfmt_misc is not mounted at {BINFMT}"
    if not entry.exists():
        return f"qemu-user-static is not registered with binfmt_misc ({entry} is missing)"
    lines = entry.read_text().splitlines()
    flags = next((line.split(":", 1)[1] for line in lines if line.startswith("flags:")), "")
    if lines[:1] != ["enabled"] or "F" not in flags:
        return f"{entry} is disabled or lacks the F flag, which containers need"
    return None


def require_emulation(arches: Sequence[str]) -> None:
    """SystemExit, saying what to do, unless every one of ``arches`` runs here."""
    for arch in arches:
        why = emulation_missing(arch)
        if why is not None:
            native = native_arch()
            raise SystemExit(
                f"image: {arch} images cannot be built on this {native} machine: {why}. "
                "`make image-deps` (as root) installs qemu-user-static and registers it with "
                "binfmt_misc, mounting it if needed; where it cannot be mounted (an unprivileged "
                "container), register qemu on the host (as root: `mount -t binfmt_misc binfmt_misc "
                f"{BINFMT}` and Debian's qemu-user-static) or build this machine's architecture "
                f"only: `make image IMAGE_ARCH={native}`"
            )


# --- the base ----------------------------------------------------------------------------------


def recipe() -> str:
    """A digest of everything the bootstrapped base is made from: a changed recipe rebuilds it."""
    parts = [SUITE, *MIRRORS, *PACKAGES, *DPKG_OPTIONS, *CUSTOMIZE, *IMPORT_CHANGES]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def local_base(arch: str) -> str:
    """The bootstrapped base of ``arch``."""
    return f"{LOCAL_BASE}-{arch}"


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


def bootstrap_base(arch: str) -> None:
    """Debian's packages of ``arch`` -> rootfs.tar (mmdebstrap; a foreign architecture's package
    scripts run under emulation) -> ``local_base(arch)`` (podman import)."""
    if shutil.which("mmdebstrap") is None:
        raise SystemExit("image: mmdebstrap is missing (scripts/image_deps.sh installs it)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tensorgate-base-", dir="/var/tmp") as scratch:
        rootfs = Path(scratch) / "rootfs.tar"
        command = [
            "mmdebstrap",
            "--quiet",
            "--variant=minbase",
            f"--architectures={arch}",
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
        podman(
            "import",
            f"--arch={arch}",
            *(f"--change={c}" for c in changes),
            str(rootfs),
            local_base(arch),
        )
    say(
        f"bootstrapped {local_base(arch)} from Debian's packages in "
        f"{time.monotonic() - started:.0f} s"
    )


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


def pulled(name: str, arch: str) -> str:
    """The id of ``name`` for ``arch``, pulled unless here (a registry's tag names one image per
    architecture; the local tag names the one pulled last, so the build is given the id)."""
    if not (image_exists(name) and image_arch(name) == arch):
        podman("pull", f"--platform=linux/{arch}", name, quiet=False)
    return image_id(name)


def base_image(explicit: str | None, arch: str) -> str:
    """The image of ``arch`` to build on, local once this returns (the build itself never
    pulls): ``explicit``, python:3.11-slim, or the bootstrapped base."""
    if explicit:
        return pulled(explicit, arch)
    if image_exists(REGISTRY_BASE) and image_arch(REGISTRY_BASE) == arch:
        return image_id(REGISTRY_BASE)
    try:
        done = subprocess.run(
            ["podman", "pull", "--quiet", f"--platform=linux/{arch}", REGISTRY_BASE],
            env=podman_env(),
            capture_output=True,
            text=True,
            timeout=PULL_TIMEOUT_S,
            check=False,
        )
        reason = done.stderr.strip().splitlines()[-1] if done.returncode else ""
    except subprocess.TimeoutExpired:
        reason = f"no answer in {PULL_TIMEOUT_S} s"
    if not reason:
        return image_id(REGISTRY_BASE)
    local = local_base(arch)
    if image_exists(local) and image_label(local, "tensorgate.base-recipe") == recipe():
        say(f"{REGISTRY_BASE} cannot be pulled ({reason}); using {local}, built before")
        return local
    say(f"{REGISTRY_BASE} cannot be pulled ({reason}); bootstrapping {local}")
    bootstrap_base(arch)
    return local


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


def image_size_mb(name: str) -> float:
    return int(podman("image", "inspect", "--format", "{{.Size}}", name).stdout) / 1e6


def qualified(name: str) -> str:
    """``name`` as podman stores it: a name without a registry is under ``localhost/``."""
    first, slash, _ = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return name
    return f"localhost/{name}"


def arch_tag(tag: str, arch: str) -> str:
    """The tag of one architecture's image: ``tensorgate:0.1.0-arm64``."""
    return f"{tag}-{arch}"


def build_arch(target: str, tag: str, base: str | None, arch: str, no_cache: bool) -> None:
    """``podman build --platform linux/ARCH`` of ``target`` as ``tag``."""
    started = time.monotonic()
    base_ref = base_image(base, arch)
    before = image_id(tag)
    with tempfile.TemporaryDirectory(prefix="tensorgate-pip-") as scratch:
        command = [
            "build",
            f"--file={DOCKERFILE}",
            f"--target={target}",
            f"--platform=linux/{arch}",
            f"--tag={tag}",
            f"--build-arg=BASE_IMAGE={base_ref}",
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
    say(
        f"{tag} ({target} target, linux/{arch}, on {base_ref}): {image_size_mb(tag):.0f} MB, "
        f"built in {time.monotonic() - started:.0f} s"
    )


def remove_tag(tag: str) -> None:
    """Whatever holds ``tag`` now: a manifest list, or an image (untagged, kept if tagged
    otherwise)."""
    if podman("manifest", "exists", tag, check=False).returncode == 0:
        podman("manifest", "rm", tag)
    elif image_exists(tag):
        podman("untag", tag, tag)


def join(tag: str, images: Sequence[str]) -> None:
    """``tag`` as a manifest list of ``images`` (one per architecture), made anew."""
    remove_tag(tag)
    podman("manifest", "create", tag)
    for image in images:
        podman("manifest", "add", tag, f"containers-storage:{qualified(image)}")
    listed = json.loads(podman("manifest", "inspect", tag).stdout)
    platforms = [m["platform"]["architecture"] for m in listed["manifests"]]
    say(f"{tag}: a manifest list of {', '.join(f'linux/{p}' for p in platforms)}")


def build(target: str, tag: str, base: str | None, no_cache: bool, arches: Sequence[str]) -> None:
    """Each of ``arches``' image of ``target`` (``tag-ARCH``), then ``tag`` joining them."""
    require_emulation(arches)
    for arch in arches:
        build_arch(target, arch_tag(tag, arch), base, arch, no_cache)
    join(tag, [arch_tag(tag, arch) for arch in arches])
    remove_stale_layers()


def clean() -> None:
    """The images and their manifest lists, the build cache this leaves and the bootstrapped
    bases."""
    for tag in TAGS.values():
        remove_tag(tag)
    arches = sorted(QEMU)
    names = [arch_tag(tag, arch) for tag in TAGS.values() for arch in arches]
    names += [local_base(arch) for arch in arches] + [LOCAL_BASE]
    names = [n for n in names if image_exists(n)]
    if names:
        podman("rmi", *names, check=False, quiet=False)
    podman("image", "prune", "--force", check=False, quiet=False)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="build an image for each architecture")
    build_parser.add_argument("--target", choices=sorted(TAGS), default="onnx")
    build_parser.add_argument("--tag", help="default: tensorgate:0.1.0 (onnx), -tf, -openvino")
    build_parser.add_argument("--base", help="the BASE_IMAGE to build on")
    build_parser.add_argument("--no-cache", action="store_true", help="rebuild every layer")
    build_parser.add_argument(
        "--arch",
        action="append",
        choices=sorted(QEMU),
        help="an architecture to build (repeatable); default: every one the target supports",
    )
    base_parser = commands.add_parser("base", help="print (and make) the base image")
    base_parser.add_argument("--base", help="the BASE_IMAGE to build on")
    base_parser.add_argument("--arch", choices=sorted(QEMU), default=native_arch())
    commands.add_parser("clean", help="remove the images, their build cache and the bases")
    args = parser.parse_args(argv)
    if shutil.which("podman") is None:
        raise SystemExit("image: podman is missing (scripts/image_deps.sh installs it)")
    if args.command == "build":
        arches = args.arch or ARCHITECTURES[args.target]
        unsupported = sorted(set(arches) - set(ARCHITECTURES[args.target]))
        if unsupported:
            parser.error(f"the {args.target} target is not built for {', '.join(unsupported)}")
        build(args.target, args.tag or TAGS[args.target], args.base, args.no_cache, arches)
    elif args.command == "base":
        require_emulation([args.arch])
        print(base_image(args.base, args.arch))
    else:
        clean()


if __name__ == "__main__":
    main()
