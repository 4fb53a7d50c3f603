"""deploy/observability's Prometheus rules pass ``promtool check rules`` and their unit tests
(``promtool test rules``: each alert fires on the series that should fire it and not on its
healthy neighbour), and the Grafana dashboard is provisioning-ready: a fixed uid, its data source
a variable, every panel with a unique id and at least one query. What each expression returns
against a real tensorgate: tests/deploy/test_observability_e2e.py."""

from __future__ import annotations

import json
import subprocess

from tests.support import promql_exprs, tools

PROMETHEUS_DIR = promql_exprs.RULES.parent


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    path = tools.executable("promtool", "`make system-deps` installs Debian's prometheus")
    return subprocess.run(
        [path, *args], cwd=PROMETHEUS_DIR, capture_output=True, text=True, timeout=120, check=False
    )


def test_promtool_checks_the_rules() -> None:
    done = promtool("check", "rules", promql_exprs.RULES.name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 12 rules found" in done.stdout


def test_promtool_unit_tests_of_the_rules_pass() -> None:
    done = promtool("test", "rules", "tensorgate-rules.test.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_has_a_unit_test() -> None:
    tested = (PROMETHEUS_DIR / "tensorgate-rules.test.yaml").read_text()
    alerts = [name.split("/", 1)[1] for name in promql_exprs.rules() if name.startswith("alert/")]
    assert len(alerts) == 6
    assert [a for a in alerts if f"alertname: {a}\n" not in tested] == []


def test_the_dashboard_is_provisioning_ready() -> None:
    board = json.loads(promql_exprs.DASHBOARD.read_text())
    assert board["uid"] == "tensorgate" and "id" not in board
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
