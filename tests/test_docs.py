"""The README and docs tell the truth about the tree: every link resolves, every path they name
exists, and the flag reference is the one ``scripts/flag_reference.py`` writes.

Links: relative file links (``[x](docs/a.md)``, ``![x](plot.png)``, reference definitions) must
name a file or folder of the repository, and an ``#anchor`` must be a heading of the Markdown file
it points into (GitHub's slugs). Web links are not followed (no network). Paths: a code span
that reads as a repository path (its first folder is a top-level entry, or it ends in ``.py``)
must exist from the repository root or from ``gateway/`` (the docs name gateway's packages
short: ``serving/core.py``). Fenced code blocks are skipped by both.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"
)
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
PATH_SPAN = re.compile(r"^[A-Za-z0-9_][\w.-]*(/[\w.-]+)+/?$")


def docs_files(root: Path = ROOT) -> list[Path]:
    """The Markdown a reader is sent to: the README, docs/, and every package's README (bench
    reports under ``bench/results/`` are generated, and left out)."""
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return sorted(root / name for name in tracked if not name.startswith("bench/results/"))


def prose(text: str) -> str:
    """``text`` without its fenced code blocks (what is shown as code is not linked)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (code, emphasis and link targets stripped),
    lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of the Markdown file ``path`` (repeats get ``-1``, ``-2``, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(path.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> Iterator[str]:
    """The targets of ``text``'s inline links, images and reference definitions."""
    body = CODE_SPAN.sub("", prose(text))
    yield from INLINE_LINK.findall(body)
    yield from REFERENCE.findall(body)


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Each link of ``path`` that does not resolve in the repository, with why."""
    problems = []
    for target in links(path.read_text(encoding="utf-8")):
        if SCHEME.match(target) or target.startswith("//"):
            continue  # a web link: not followed here
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.is_relative_to(root):
            problems.append(f"{target}: outside the repository")
        elif not resolved.exists():
            problems.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{target}: no heading #{anchor} in {resolved.relative_to(root)}")
    return problems


def missing_paths(path: Path, root: Path = ROOT) -> list[str]:
    """Each repository path ``path`` names in a code span that does not exist."""
    top = {entry.name for entry in root.iterdir()}
    missing = []
    for _, span in CODE_SPAN.findall(prose(path.read_text(encoding="utf-8"))):
        name = span.strip()
        if not PATH_SPAN.match(name) or name.startswith("."):
            continue
        if name.split("/")[0] not in top and not name.endswith(".py"):
            continue
        if not any((base / name).exists() for base in (root, root / "gateway")):
            missing.append(name)
    return missing


def named(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", docs_files(), ids=named)
def test_every_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


@pytest.mark.parametrize(
    "path", [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], ids=named
)
def test_every_path_named_exists(path: Path) -> None:
    assert missing_paths(path) == []


def test_the_flag_reference_is_generated(tmp_path: Path) -> None:
    out = tmp_path / "flags.md"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "flag_reference.py"), str(out)],
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert out.read_text() == (ROOT / "docs" / "flags.md").read_text(), (
        "docs/flags.md is stale: run python scripts/flag_reference.py"
    )


def test_the_readme_is_a_front_page_that_starts_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 220
    first_block = lines[lines.index("```sh") + 1 :][:2]
    assert [line.split()[:2] for line in first_block] == [["make", "serve"], ["make", "test"]]


# -- the checker itself, on a repository of its own -----------------------------------------------


def _repo(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "gateway" / "serving").mkdir(parents=True)
    (tmp_path / "gateway" / "serving" / "core.py").write_text("")
    (tmp_path / "docs" / "a.md").write_text(
        "# Title\n\n## Where `runs` go: light ones\n\n## Where `runs` go: light ones\n"
    )
    return tmp_path


def test_a_broken_file_link_is_found(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    page = root / "README.md"
    page.write_text(
        "[ok](docs/a.md) [gone](docs/b.md) ![plot](docs/p.png) [web](https://x.org/y)\n"
    )
    assert broken_links(page, root) == ["docs/b.md: no such file", "docs/p.png: no such file"]


def test_a_broken_anchor_is_found(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    page = root / "docs" / "c.md"
    page.write_text(
        "[a](a.md#where-runs-go-light-ones) [b](a.md#where-runs-go-light-ones-1)\n"
        "[c](a.md#where-runs-go) [d](#local) [e](#nowhere)\n\n## Local\n"
    )
    assert broken_links(page, root) == [
        "a.md#where-runs-go: no heading #where-runs-go in docs/a.md",
        "#nowhere: no heading #nowhere in docs/c.md",
    ]


def test_links_in_code_are_not_followed(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    page = root / "README.md"
    page.write_text("```\n[x](missing.md)\n```\n`[y](missing.md)`\n[up](../outside.md)\n")
    assert broken_links(page, root) == ["../outside.md: outside the repository"]


def test_a_missing_path_is_found(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    page = root / "README.md"
    page.write_text(
        "`gateway/serving/core.py`, `serving/core.py`, `docs/`, `serving/gone.py`, `docs/x/`,\n"
        "`/v1/models`, `<base>/1/model.onnx`, `a/b` (not a repository path)\n"
    )
    assert missing_paths(page, root) == ["serving/gone.py", "docs/x/"]
