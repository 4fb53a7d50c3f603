"""The seeds' load test: the Locust file's requests, the file run headless by the scenario's own
runner against a real tensorgate over TF Serving's REST API (a few users for a few seconds; only
what was sent and answered is checked, never speed), and the report's section and plot."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

from bench.load import seed_images
from bench.report import seeds_report
from bench.report.plots import figures
from bench.scenarios.seeds import LOCUSTFILE, Way, payload_args, run_locust
from bench.systems.targets import Running

PROBE = """
import base64, json, runpy, struct, sys
from types import SimpleNamespace
ns = runpy.run_path(sys.argv[1])
seen = {}
for payload in ("rows", "tf-b64", "v2-binary", "upload"):
    options = SimpleNamespace(model_name="resnet50", payload=payload, image_dir=sys.argv[2],
                              body_file="", path="", content_type="")
    path, bodies = ns["requests"](options)
    body, headers = bodies[0]
    if payload == "rows":
        import numpy as np
        seen[payload] = [path, list(np.asarray(json.loads(body)["instances"]).shape)]
    elif payload == "tf-b64":
        seen[payload] = [path, base64.b64decode(json.loads(body)["instances"][0]["b64"]).hex()]
    elif payload == "v2-binary":
        cut = int(headers["Inference-Header-Content-Length"])
        header, data = json.loads(body[:cut]), body[cut:]
        (size,) = struct.unpack_from("<I", data)
        seen[payload] = [path, header["inputs"][0]["shape"], data[4:4 + size].hex(), len(bodies)]
    else:
        start = body.index(b"\\r\\n\\r\\n") + 4
        seen[payload] = [path, headers["Content-Type"], body[start:body.rindex(b"\\r\\n--")].hex()]
print(json.dumps(seen))
"""


def test_the_locust_file_sends_each_payload_as_its_api_takes_it(tmp_path: Path) -> None:
    jpeg = seed_images.write(tmp_path, "224x224", 2)[0].read_bytes()
    done = subprocess.run(  # its own process: importing locust patches the standard library
        [sys.executable, "-c", PROBE, str(LOCUSTFILE), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    seen = json.loads(done.stdout)
    assert seen["rows"] == ["/v1/models/resnet50:predict", [1, 224, 224, 3]]
    assert seen["tf-b64"] == ["/v1/models/resnet50:predict", jpeg.hex()]
    assert seen["v2-binary"] == ["/v2/models/resnet50/infer", [1], jpeg.hex(), 2]
    path, media_type, upload = seen["upload"]
    assert path == "/image" and media_type.startswith("multipart/form-data; boundary=")
    assert upload == jpeg.hex()


def test_a_headless_run_has_a_per_second_timeline_and_totals(
    rest_gateway: Running, tmp_path: Path
) -> None:
    # the scenario's runner with the MLP's TF Serving body (the file's own is ResNet50's)
    args = payload_args(Way("tensorgate-rest", "body"), rest_gateway, tmp_path)
    result = run_locust(rest_gateway, users=2, plateau_s=2, client_cpus=(), payload=args)
    assert "error" not in result, result
    assert result["failures"] == 0 and result["requests"] > 0
    timeline = result["timeline"]
    assert [row["t"] for row in timeline] == sorted(row["t"] for row in timeline)
    assert {row["users"] for row in timeline} <= {0, 1, 2} and timeline[-1]["users"] == 2
    assert all(row["failures_per_s"] == 0 for row in timeline)
    assert any(row["rps"] > 0 and not math.isnan(row["p50_ms"]) for row in timeline)

    slower = {**result, "p50_ms": result["p50_ms"] + 1, "p95_ms": result["p95_ms"] + 1}
    runs = {
        "tensorgate TF Serving REST (b64)": result,
        "tensorgate V2 REST (binary)": result,
        "FastAPI (UploadFile, PIL)": slower,
    }
    rows = {"tensorgate TF Serving REST (float rows)": result, "FastAPI (raw float32)": result}
    seeds = {
        "model": "mlp",
        "users": [2],
        "plateau_s": 2,
        "images": {"224x224": 8},
        "jpeg": {"2": runs},
        "rows": {"2": rows},
    }
    assert "seeds.png" in figures({"scenarios": {"seeds": seeds}})
    table = seeds_report.markdown(seeds, plotted=True)
    assert "![seeds](seeds.png)" in table
    assert any(line.startswith("| FastAPI (UploadFile, PIL) | ") for line in table)
    goals = seeds_report.goal_rows(seeds)
    assert [(g["case"], g["met"]) for g in goals] == [
        ("tensorgate TF Serving REST (b64)", True),
        ("tensorgate V2 REST (binary)", True),
        ("tensorgate TF Serving REST (float rows)", True),
    ]
