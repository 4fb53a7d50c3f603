"""bench.measure.cpustat: per-CPU busy time and steal from /proc/stat."""

from __future__ import annotations

from bench.measure.cpustat import CLK_TCK, busy_cores, parse, sample

STAT = """cpu  900 0 300 5000 10 0 5 0 0 0
cpu0 {u0} 0 100 2500 5 0 0 0 0 0
cpu1 {u1} 0 200 2500 5 0 5 {st} 0 0
intr 12345
"""


def _stat(u0: int, u1: int, st: int) -> str:
    return STAT.format(u0=u0, u1=u1, st=st)


def test_per_cpu_busy_counts_user_system_irq_and_steal_not_idle_or_iowait() -> None:
    s = parse(_stat(400, 500, 7))
    assert set(s) == {0, 1}
    assert s[0] == ((400 + 100) / CLK_TCK, 0.0)
    assert s[1] == ((500 + 200 + 5 + 7) / CLK_TCK, 7 / CLK_TCK)


def test_busy_cores_between_two_samples() -> None:
    before = parse(_stat(400, 500, 0))
    after = parse(_stat(400 + CLK_TCK, 500 + CLK_TCK // 2, CLK_TCK // 4))
    busy, steal = busy_cores(before, after, (1,), 1.0)
    assert busy == (CLK_TCK // 2 + CLK_TCK // 4) / CLK_TCK and steal == (CLK_TCK // 4) / CLK_TCK
    assert busy_cores(before, after, (0, 1), 2.0)[0] == (1.0 + busy) / 2
    assert busy_cores(before, after, (7,), 1.0) == (0.0, 0.0)
    assert busy_cores(before, after, (0,), 0.0) == (0.0, 0.0)


def test_this_machine_s_counters_are_readable() -> None:
    assert sample()
