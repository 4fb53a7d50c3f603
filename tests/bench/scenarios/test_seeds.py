"""The seeds' load test: the Locust file run headless by the scenario's own runner against a real
tensorgate over TF Serving's REST API (a few users for a few seconds; only what was sent and
answered is checked, never speed), and the report's section and plot from its result."""

from __future__ import annotations

import json
import math
import subprocess
import sys

from bench.report import seeds_report
from bench.report.plots import figures
from bench.scenarios.seeds import LOCUSTFILE, run_locust
from bench.systems.targets import Running


def test_the_locust_file_sends_tf_servings_row_format_of_the_resnet50_input() -> None:
    code = (  # in a process of its own: importing locust patches the standard library (gevent)
        f"import json, runpy; ns = runpy.run_path({str(LOCUSTFILE)!r}); "
        "body = json.loads(ns['tf_serving_body']()); "
        "import numpy as np; print(json.dumps(np.asarray(body['instances']).shape))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout) == [1, 224, 224, 3]


def test_a_headless_run_has_a_per_second_timeline_and_totals(rest_gateway: Running) -> None:
    # the scenario's runner with the MLP's TF Serving body (the file's own is ResNet50's)
    result = run_locust(rest_gateway, users=2, plateau_s=2, client_cpus=(), own_body=False)
    assert "error" not in result, result
    assert result["failures"] == 0 and result["requests"] > 0
    timeline = result["timeline"]
    assert [row["t"] for row in timeline] == sorted(row["t"] for row in timeline)
    assert {row["users"] for row in timeline} <= {0, 1, 2} and timeline[-1]["users"] == 2
    assert all(row["failures_per_s"] == 0 for row in timeline)
    assert any(row["rps"] > 0 and not math.isnan(row["p50_ms"]) for row in timeline)

    seeds = {"model": "mlp", "users": 2, "plateau_s": 2, "systems": {"tensorgate-rest": result}}
    assert "seeds.png" in figures({"scenarios": {"seeds": seeds}})
    table = seeds_report.markdown(seeds, plotted=True)
    assert "![seeds](seeds.png)" in table
    assert any(line.startswith(f"| tensorgate-rest | {result['requests']} | 0 |") for line in table)
