"""Generate the private protobuf package ``gateway._pb`` from ``protos/``.

Usage: ``python scripts/gen_protos.py [--out DIR]`` (default ``gateway/_pb``).

Runs ``grpc_tools.protoc`` over every ``.proto`` under ``protos/`` with the Python, gRPC
(only for files that declare a service) and mypy-protobuf (``.pyi``) generators, then
rewrites the generated imports so that ``tensorflow``, ``tensorflow_serving``, ``xla`` and
``inference`` (the Open Inference Protocol) become subpackages of ``gateway._pb`` (they must never
exist as top-level packages: they would shadow the real TensorFlow, or ``tritonclient``'s and other
V2 servers' modules). Adds ``__init__.py`` files and ``py.typed``.

The output is deterministic: the same sources and tool versions give the same bytes.
The output directory is replaced as a whole; the script refuses to replace a non-empty
directory that does not look like an earlier output (no ``py.typed``).
"""

from __future__ import annotations

import argparse
import importlib.resources
import logging
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2

logger = logging.getLogger("gen_protos")

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO_ROOT / "protos"
DEFAULT_OUT = REPO_ROOT / "gateway" / "_pb"
PACKAGE = "gateway._pb"
# Top-level proto packages that are re-rooted under PACKAGE.
ROOTS = ("tensorflow_serving", "tensorflow", "xla", "inference")

_ROOTS_ALT = "|".join(ROOTS)
# `from tensorflow.core.framework import tensor_pb2` (and `from xla...error_codes_pb2 import *`).
_FROM_RE = re.compile(rf"^(\s*from\s+)({_ROOTS_ALT})(?=[.\s])", re.MULTILINE)
# Dotted references to a generated module: imports, annotations in stubs and the module
# name passed to the protobuf builder. Never preceded by a dot or word character, so
# proto type names (".tensorflow.TensorProto") and attribute chains are left alone.
_MODULE_RE = re.compile(rf"(?<![\w.])((?:{_ROOTS_ALT})(?:\.\w+)*\.\w+_pb2(?:_grpc)?)\b")
_LEFTOVER_RE = re.compile(rf"^\s*(?:from|import)\s+(?:{_ROOTS_ALT})\b", re.MULTILINE)

_ROOT_INIT = '"""Generated protobuf code (private). Do not edit: run scripts/gen_protos.py."""\n'


class GenerationError(RuntimeError):
    """protoc failed, or its output could not be re-rooted under gateway._pb."""


def find_protos(proto_root: Path) -> list[str]:
    """Return every ``.proto`` under ``proto_root`` as sorted POSIX paths relative to it."""
    return sorted(p.relative_to(proto_root).as_posix() for p in proto_root.rglob("*.proto"))


def rewrite_imports(text: str) -> str:
    """Re-root references to generated modules under ``gateway._pb``."""
    text = _FROM_RE.sub(rf"\g<1>{PACKAGE}.\g<2>", text)
    return _MODULE_RE.sub(rf"{PACKAGE}.\g<1>", text)


def _plugin(name: str) -> Path | None:
    """Locate a protoc plugin next to the running interpreter, else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return beside
    found = shutil.which(name)
    return Path(found) if found else None


def _run_protoc(protos: list[str], dest: Path, descriptor_set: Path) -> None:
    include = importlib.resources.files("grpc_tools") / "_proto"
    mypy = _plugin("protoc-gen-mypy")
    if mypy is None:
        raise GenerationError("protoc-gen-mypy not found (install mypy-protobuf)")
    args = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"--proto_path={PROTO_ROOT}",
        f"--proto_path={include}",
        f"--python_out={dest}",
        f"--grpc_python_out={dest}",
        f"--plugin=protoc-gen-mypy={mypy}",
        f"--mypy_out={dest}",
        f"--descriptor_set_out={descriptor_set}",
    ]
    mypy_grpc = _plugin("protoc-gen-mypy_grpc")
    if mypy_grpc is not None:
        args += [f"--plugin=protoc-gen-mypy_grpc={mypy_grpc}", f"--mypy_grpc_out={dest}"]
    else:
        logger.warning("protoc-gen-mypy_grpc not found: no stubs for the *_pb2_grpc modules")
    result = subprocess.run(
        [*args, *protos], cwd=PROTO_ROOT, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise GenerationError(f"protoc failed ({result.returncode}):\n{result.stderr}")


def _files_with_services(descriptor_set: Path) -> set[str]:
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(descriptor_set.read_bytes())
    return {f.name for f in fds.file if f.service}


def _postprocess(gen: Path, protos: list[str], with_services: set[str]) -> None:
    """Drop empty gRPC modules, re-root imports, add package markers."""
    for proto in protos:
        if proto in with_services:
            continue
        stem = gen / proto.removesuffix(".proto")
        for suffix in ("_pb2_grpc.py", "_pb2_grpc.pyi"):
            Path(f"{stem}{suffix}").unlink(missing_ok=True)
    for path in sorted(gen.rglob("*.py*")):
        if path.suffix not in (".py", ".pyi"):
            continue
        text = rewrite_imports(path.read_text(encoding="utf-8"))
        leftover = _LEFTOVER_RE.search(text)
        if leftover:
            rel = path.relative_to(gen)
            raise GenerationError(f"{rel}: import not re-rooted: {leftover.group().strip()}")
        path.write_text(text, encoding="utf-8")
    for directory in sorted({p.parent for p in gen.rglob("*.py")} | {gen}):
        parent = directory
        while parent != gen.parent:
            init = parent / "__init__.py"
            if not init.exists():
                init.write_text(_ROOT_INIT if parent == gen else "", encoding="utf-8")
            parent = parent.parent
    (gen / "py.typed").write_text("", encoding="utf-8")


def _replace_dir(src: Path, out: Path) -> None:
    if out.exists():
        if not out.is_dir():
            raise GenerationError(f"--out {out} exists and is not a directory")
        if any(out.iterdir()) and not (out / "py.typed").exists():
            raise GenerationError(f"--out {out} is not empty and is not an earlier output")
        shutil.rmtree(out)
    shutil.copytree(src, out)


def generate(out: Path) -> list[Path]:
    """Generate the package into ``out`` (replacing it); return the files written."""
    protos = find_protos(PROTO_ROOT)
    if not protos:
        raise GenerationError(f"no .proto files under {PROTO_ROOT}")
    with tempfile.TemporaryDirectory(prefix="gen_protos_") as tmp:
        gen = Path(tmp) / "pb"
        gen.mkdir()
        descriptor_set = Path(tmp) / "descriptors.pb"
        _run_protoc(protos, gen, descriptor_set)
        _postprocess(gen, protos, _files_with_services(descriptor_set))
        _replace_dir(gen, out)
    return sorted(p for p in out.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="output directory, replaced as a whole (default: gateway/_pb)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    try:
        files = generate(args.out.resolve())
    except GenerationError as exc:
        logger.error("%s", exc)
        return 1
    logger.info("wrote %d files to %s", len(files), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
