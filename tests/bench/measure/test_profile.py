"""bench.measure.profile: py-spy's collapsed stacks → samples, top self and inclusive frames."""

from __future__ import annotations

from bench.measure.profile import summarize_stacks

RAW = """\
MainThread;run (asyncio/base_events.py:600);_run_once (asyncio/base_events.py:1900);predict (gateway/serving/core.py:80) 6
MainThread;run (asyncio/base_events.py:600);_run_once (asyncio/base_events.py:1900) 3
reader;loop (gateway/parallel/link.py:40);predict (gateway/serving/core.py:80) 1
not a sample line
"""  # noqa: E501


def test_self_samples_land_on_the_last_frame_and_inclusive_counts_each_frame_once() -> None:
    total, top_self, top_incl = summarize_stacks(RAW)
    assert total == 10
    assert top_self == [
        ("predict (gateway/serving/core.py:80)", 7),
        ("_run_once (asyncio/base_events.py:1900)", 3),
    ]
    incl = dict(top_incl)
    assert incl["run (asyncio/base_events.py:600)"] == 9
    assert incl["predict (gateway/serving/core.py:80)"] == 7
    assert "MainThread" not in incl and "reader" not in incl  # the first frame is the thread


def test_nothing_sampled() -> None:
    assert summarize_stacks("") == (0, [], [])
