"""``drain``: SIGTERM under load, counting the calls the server accepted and then lost.

Each run starts tensorgate with its default front ends (``--frontends=0``: two here) and two
workers serving the MLP, drives steady Predict load over :data:`CONNECTIONS` gRPC connections
(one client thread each, calling back to back), and once :data:`SETTLED_CALLS` calls have been
answered sends SIGTERM to the server and waits for it to exit. Each call's outcome is counted:

- ``ok``; ``refused``: UNAVAILABLE from the drain ("the server is shutting down", or no
  connection could be made: the listeners are closed) — a call never accepted, which a client
  retries elsewhere;
- ``lost``: anything else — CANCELLED, INTERNAL, UNKNOWN, DEADLINE_EXCEEDED, an UNAVAILABLE whose
  connection broke under it (reset, socket closed) — an accepted call that did not finish.

Half the runs first SIGKILL one front end under the load and wait until its replacement listens
(``replaced``); the calls the kill itself fails are not counted (they are the kill's, not the
drain's). 0 lost in every run is the bar. The scenario counts calls, not time: it may run on a
busy machine.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections import Counter
from typing import Any

import grpc

from bench.measure.usage import by_role
from bench.scenarios.runner import Bench
from bench.systems.listening import listening_ports
from bench.systems.targets import Running

log = logging.getLogger(__name__)

SYSTEM = "tensorgate-2w"
CONNECTIONS = 16
SETTLED_CALLS = 300
"""Calls answered OK (after a replacement, if any) before the SIGTERM."""
WAIT_S = 60.0
REFUSALS = ("the server is shutting down", "failed to connect", "Connection refused")
"""UNAVAILABLE details that mean the call was never accepted."""


def classify(code: grpc.StatusCode, details: str) -> str:
    """``ok``, ``refused`` or ``lost`` (the module doc)."""
    if code == grpc.StatusCode.OK:
        return "ok"
    if code == grpc.StatusCode.UNAVAILABLE and any(r in details for r in REFUSALS):
        return "refused"
    return "lost"


class Clients:
    """:data:`CONNECTIONS` threads calling ``running``'s target back to back, each on its own
    connection, until :meth:`stop`; outcomes counted from :meth:`count_from_now` on."""

    def __init__(self, running: Running) -> None:
        target = running.target
        self._method, self._payload = target.method, target.payload
        self._channels = [
            grpc.insecure_channel(target.address, options=[("grpc.use_local_subchannel_pool", 1)])
            for _ in range(CONNECTIONS)
        ]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._epoch = 0
        self.outcomes: Counter[str] = Counter()
        self.lost: list[str] = []
        self._threads = [threading.Thread(target=self._call, args=(c,)) for c in self._channels]
        for thread in self._threads:
            thread.start()

    def count_from_now(self) -> None:
        """Count only calls started from now on."""
        with self._lock:
            self._epoch += 1
            self.outcomes.clear()
            self.lost.clear()

    def until_ok(self, calls: int) -> bool:
        """Wait (bounded) until ``calls`` counted calls were answered OK."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            with self._lock:
                if self.outcomes["ok"] >= calls:
                    return True
            time.sleep(0.05)
        return False

    def _call(self, channel: grpc.Channel) -> None:
        call = channel.unary_unary(self._method)
        while not self._stop.is_set():
            with self._lock:
                epoch = self._epoch
            try:
                call(self._payload, timeout=WAIT_S)
                code, details = grpc.StatusCode.OK, ""
            except grpc.RpcError as error:
                code, details = error.code(), str(error.details())
            outcome = classify(code, details)
            with self._lock:
                if epoch == self._epoch:
                    self.outcomes[outcome] += 1
                    if outcome == "lost":
                        self.lost.append(f"{code.name}: {details}")
            if outcome == "refused":
                time.sleep(0.001)  # the server is going: do not spin

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(WAIT_S)
        for channel in self._channels:
            channel.close()


def _replace_a_front_end(running: Running) -> bool:
    """SIGKILL one front end and wait (bounded) until a new one listens."""
    before = by_role(running.server.pid)["front end"]
    if not before:
        return False
    os.kill(before[0], signal.SIGKILL)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        new = [p for p in by_role(running.server.pid)["front end"] if p not in before]
        if new and listening_ports(new[0]):
            return True
        time.sleep(0.05)
    return False


def one_run(running: Running, *, replace: bool) -> dict[str, Any]:
    """One SIGTERM under load (after a replaced front end if ``replace``): its outcomes."""
    clients = Clients(running)
    try:
        if not clients.until_ok(SETTLED_CALLS):
            return {"error": "the load never settled"}
        if replace:
            if not _replace_a_front_end(running):
                return {"error": "no replacement front end listened"}
            clients.count_from_now()
            if not clients.until_ok(SETTLED_CALLS):
                return {"error": "the load never settled after the replacement"}
        running.server.process.send_signal(signal.SIGTERM)
        code = running.server.process.wait(WAIT_S)
    finally:
        clients.stop()
    return {"exit": code, **clients.outcomes, "lost_details": clients.lost[:5]}


def drain(bench: Bench) -> None:
    """``plan.drain_runs`` runs with the default front ends, as many after a replaced one."""
    section: dict[str, Any] = {"connections": CONNECTIONS, "runs": bench.plan.drain_runs}
    bench.results["scenarios"]["drain"] = section
    for case, replace in (("default", False), ("replaced", True)):
        runs = []
        for i in range(bench.plan.drain_runs):
            with bench.systems([SYSTEM], "mlp", ()) as running:
                if SYSTEM not in running:
                    return
                outcome = one_run(running[SYSTEM], replace=replace)
            runs.append(outcome)
            log.info("drain %s run %d: %s", case, i + 1, outcome)
        section[case] = {
            "runs": runs,
            "lost": sum(r.get("lost", 0) for r in runs),
            "runs_with_losses": sum(1 for r in runs if r.get("lost", 0)),
            "errors": sum(1 for r in runs if "error" in r),
            "ok": sum(r.get("ok", 0) for r in runs),
            "refused": sum(r.get("refused", 0) for r in runs),
        }
