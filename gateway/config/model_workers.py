"""``--model_workers``: how many worker processes host each model (tensorgate's placement).

Text form: comma-separated ``name=N``; ``*=N`` sets every model not named. A model with no entry
is loaded on every worker (TF Serving's behaviour: one process holds every model).
"""

from __future__ import annotations

from collections.abc import Mapping

DEFAULT_KEY = "*"


def parse_model_workers(text: str) -> Mapping[str, int]:
    """``name=N,...`` → ``{name: N}``. ValueError names the bad item: one without ``=``, an empty
    name, N not an integer >= 1, or a name given twice."""
    result: dict[str, int] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"model_workers items are name=N, got {item!r}")
        try:
            workers = int(value.strip())
        except ValueError:
            workers = 0
        if workers < 1:
            raise ValueError(f"model_workers gives {name} {value.strip()!r}; N must be >= 1")
        if name in result:
            raise ValueError(f"model_workers names {name} twice")
        result[name] = workers
    return result


def workers_for(model: str, placement: Mapping[str, int]) -> int:
    """The worker count ``placement`` gives ``model``; 0 means every worker."""
    return placement.get(model, placement.get(DEFAULT_KEY, 0))
