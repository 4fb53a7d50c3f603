"""bench.measure.perf_native: perf's report rows become (share, names); headers, comments not."""

from __future__ import annotations

from pathlib import Path

from bench.measure import perf_native

REPORT = """\
# Total Lost Samples: 0
#
# Samples: 4K of event 'cpu-clock:ppp'
# Overhead  Shared Object         Symbol
# ........  ....................  ..............................
#
    13.20%  libpython3.11.so.1.0  [.] _PyEval_EvalFrameDefault
     0.40%  loop.cpython-311-x86_64-linux-gnu.so  [.] __pyx_f_6uvloop_4loop_6Handle__run

#
# (Cannot load tips.txt file, please install perf!)
"""


def test_report_rows_are_parsed_and_the_rest_skipped() -> None:
    assert perf_native.parse_report(REPORT) == [
        (13.2, "libpython3.11.so.1.0 [.] _PyEval_EvalFrameDefault"),
        (0.4, "loop.cpython-311-x86_64-linux-gnu.so [.] __pyx_f_6uvloop_4loop_6Handle__run"),
    ]


def test_record_samples_one_process_with_call_graphs_for_the_given_time() -> None:
    argv = perf_native.record(1234, 2.5, Path("/x/perf.data"))
    assert argv[:2] == ["perf", "record"]
    assert argv[argv.index("-p") + 1] == "1234" and "-g" in argv
    assert argv[-2:] == ["sleep", "2.5"] and argv[argv.index("-o") + 1] == "/x/perf.data"
