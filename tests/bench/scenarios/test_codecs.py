"""``python -m bench codecs``: a short real run writes every figure, and the report reads them
(never speed: only that each way was measured and the report says the ratio)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.cli import rebuild_report
from bench.measure.codecs import DECODERS, JSON_PATHS
from bench.scenarios.codecs import CodecsPlan, run


def test_a_short_run_measures_every_way_and_reports_the_ratio(tmp_path: Path) -> None:
    results = run(CodecsPlan(rounds=1, round_cpu_s=0.001), tmp_path)
    for size in ("224x224", "1000x750"):
        row = results["images"][size]
        assert "median_s" in row["simplejpeg"]["decode+resize"]
        assert "median_s" in row["pillow"]["decode"]
        assert "median_s" in row["tensorgate"]["image→tensor"]
        assert set(DECODERS) <= set(row)  # measured, or said unavailable
    assert set(JSON_PATHS) <= set(results["json"])
    assert "median_s" in results["json"]["tf-rows now (json_numbers)"]
    text = (tmp_path / "README.md").read_text()
    assert text.startswith("# Request codecs") and "| TF Serving rows | " in text
    saved = json.loads((tmp_path / "results.json").read_text())
    (tmp_path / "README.md").unlink()
    rebuild_report(tmp_path)
    assert saved["kind"] == "codecs" and (tmp_path / "README.md").read_text() == text
