"""Every PromQL expression deploy/ ships, by a name that says where it lives, ready to evaluate.

- the Grafana dashboard's panel targets (``panel/<title>/<refId>``) and its ``model`` variable
  (``label_values(m, l)`` becomes ``group by (l) (m)``), Grafana's variables substituted:
  ``$model`` → the models asked for, ``$__rate_interval`` and ``$__range`` → the window asked for;
- the Prometheus rules (``record/<name>``, ``alert/<name>``);
- prometheus-adapter's rule: its ``seriesQuery`` and its ``metricsQuery`` rendered for one pod as
  the adapter renders it for the HPA (``<<.Series>>``, ``<<.LabelMatchers>>``, ``<<.GroupBy>>``);
- the KEDA trigger's query (``deploy/k8s/shapes.py``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.support.paths import REPO_ROOT

OBSERVABILITY = REPO_ROOT / "deploy" / "observability"
DASHBOARD = OBSERVABILITY / "grafana" / "dashboards" / "tensorgate.json"
RULES = OBSERVABILITY / "prometheus" / "tensorgate-rules.yaml"
ADAPTER = OBSERVABILITY / "prometheus-adapter" / "config.yaml"


def dashboard(models: str, window_s: int, path: Path = DASHBOARD) -> dict[str, str]:
    board = json.loads(path.read_text())
    exprs: dict[str, str] = {}
    for panel in board["panels"]:
        for target in panel["targets"]:
            exprs[f"panel/{panel['title']}/{target['refId']}"] = target["expr"]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            found = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["query"]["query"])
            assert found, variable
            exprs[f"variable/{variable['name']}"] = f"group by ({found[2]}) ({found[1]})"
    window = f"{window_s}s"
    return {
        name: expr.replace("$model", models)
        .replace("$__rate_interval", window)
        .replace("$__range", window)
        for name, expr in exprs.items()
    }


def rules(path: Path = RULES) -> dict[str, str]:
    exprs = {}
    for group in yaml.safe_load(path.read_text())["groups"]:
        for rule in group["rules"]:
            kind = "record" if "record" in rule else "alert"
            exprs[f"{kind}/{rule[kind]}"] = rule["expr"]
    return exprs


def adapter(namespace: str, pod: str, path: Path = ADAPTER) -> dict[str, str]:
    (rule,) = yaml.safe_load(path.read_text())["rules"]
    series = rule["name"]["as"]
    rendered = (
        rule["metricsQuery"]
        .replace("<<.Series>>", series)
        .replace("<<.LabelMatchers>>", f'namespace="{namespace}",pod=~"{pod}"')
        .replace("<<.GroupBy>>", "pod")
    )
    return {"adapter/seriesQuery": rule["seriesQuery"], "adapter/metricsQuery": rendered}
