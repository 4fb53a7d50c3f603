"""``--model_workers``: how many worker processes host each model (tensorgate's placement).

Text form: comma-separated ``name=N``; ``*=N`` sets every model not named. A model with no entry
is loaded on every worker (TF Serving's behaviour: one process holds every model).
"""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_KEY = "*"


def name_values(flag: str, text: str, form: str) -> list[tuple[str, str]]:
    """The ``name=value`` items of a per-model flag (``--model_workers``, ``--model_runtimes``)
    as (name, value) pairs, empty items skipped; ValueError naming ``flag`` and the bad item: one
    without ``=`` (``form`` says what an item looks like), an empty name, a name given twice."""
    pairs: list[tuple[str, str]] = []
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"{flag} items are {form}, got {item!r}")
        if any(name == seen for seen, _ in pairs):
            raise ValueError(f"{flag} names {name} twice")
        pairs.append((name, value.strip()))
    return pairs


def parse_model_workers(text: str) -> Mapping[str, int]:
    """``name=N,...`` → ``{name: N}``. ValueError names the bad item: one without ``=``, an empty
    name, N not an integer >= 1, or a name given twice."""
    result: dict[str, int] = {}
    for name, value in name_values("model_workers", text, "name=N"):
        try:
            workers = int(value)
        except ValueError:
            workers = 0
        if workers < 1:
            raise ValueError(f"model_workers gives {name} {value!r}; N must be >= 1")
        result[name] = workers
    return result


def workers_for(model: str, placement: Mapping[str, int]) -> int:
    """The worker count ``placement`` gives ``model``; 0 means every worker."""
    return placement.get(model, placement.get(DEFAULT_KEY, 0))
