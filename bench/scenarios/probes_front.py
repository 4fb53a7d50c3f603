"""The hostile-caller probes of the rest of the front end (``python -m bench probes``): metrics,
connection slots and unread gRPC answers. Each starts one front end (``--frontends=1``: the
connection caps are a front end's own) with the light MLP or the 4 MiB-answer model:

- :func:`unknown_names`: token-less REST calls naming random models; the metrics page's size and
  scrape time before and after, how many of the names it carries, and a token holder's Predict.
- :func:`held_connections`: a token holder's Predict (on a new connection, once a second) while
  ``--rest_api_max_connections`` unauthenticated keep-alive REST connections poll ``/healthz``,
  then while ``--grpc_max_connections`` gRPC connections each hold a health ``Watch`` (opened
  again whenever it ends, as grpc's own health client does); then the same ``Watch`` holders
  with a short ``--grpc_idle_timeout_seconds``, re-opening and not.
- :func:`unread_answers`: Predicts with 4 MiB answers on one HTTP/2 connection whose receive
  window never opens (:class:`~bench.load.raw_grpc.RawGrpc`): how each call is answered, and
  the gateway's memory (with ``--inline_runs`` ``auto`` and ``never``), against a bare grpc.aio
  server answering as much.
"""

from __future__ import annotations

import http.client
import logging
import random
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from bench.load.calls import PREDICT_METHOD, predict_payload
from bench.load.raw_grpc import RawGrpc, readable
from bench.measure.usage import reset_peak, rss_bytes, status_bytes
from bench.scenarios.probe_gateway import MIB, TOKEN, ProbeGateway, start_gateway
from bench.scenarios.probes_plan import ProbesPlan
from bench.systems.procs import start_with_ready_fd

log = logging.getLogger(__name__)

WATCH_METHOD = "/grpc.health.v1.Health/Watch"
BEARER = {"authorization": f"Bearer {TOKEN}"}
MLP_BODY = b'{"instances": [[' + b",".join([b"0.5"] * 64) + b"]]}"


# -- metrics from unknown names -------------------------------------------------------------------
def _scrape(gateway: ProbeGateway) -> tuple[int, float]:
    began = time.monotonic()
    page = gateway.page()
    return len(page.encode()), time.monotonic() - began


def token_predict(port: int) -> tuple[int, float]:
    """A token holder's REST Predict of the MLP on a new connection: status and seconds."""
    began = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/v1/models/mlp:predict", body=MLP_BODY, headers=BEARER)
        answer = connection.getresponse()
        answer.read()
        status = answer.status
    except (OSError, http.client.HTTPException):
        status = 0
    finally:
        connection.close()
    return status, time.monotonic() - began


def unknown_names(plan: ProbesPlan, root: Path, models: Mapping[str, Path]) -> dict[str, Any]:
    """The unknown-names probe (module doc)."""
    gateway = start_gateway(root, "names", {"mlp": models["mlp"]}, metrics=True, tokens=True)
    try:
        size_before, scrape_before = _scrape(gateway)
        rng = random.Random(0)
        names = [f"m{rng.getrandbits(64):016x}" for _ in range(plan.unknown_calls)]

        def send(share: Sequence[str]) -> Counter[str]:
            statuses: Counter[str] = Counter()
            connection = http.client.HTTPConnection("127.0.0.1", gateway.rest_port, timeout=30)
            for name in share:
                try:
                    connection.request("POST", f"/v1/models/{name}:predict", body=MLP_BODY)
                    answer = connection.getresponse()
                    answer.read()
                    statuses[str(answer.status)] += 1
                except (OSError, http.client.HTTPException) as error:
                    statuses[type(error).__name__] += 1
                    connection.close()
                    connection = http.client.HTTPConnection("127.0.0.1", gateway.rest_port)
            connection.close()
            return statuses

        began = time.monotonic()
        with ThreadPoolExecutor(max_workers=4) as pool:
            counted = sum(pool.map(send, [names[i::4] for i in range(4)]), Counter())
        sent_s = time.monotonic() - began
        page = gateway.page()
        size_after, scrape_after = _scrape(gateway)
        status, predict_s = token_predict(gateway.rest_port)
        return {
            "calls": plan.unknown_calls,
            "seconds": round(sent_s, 1),
            "statuses": dict(counted),
            "page_bytes_before": size_before,
            "page_bytes_after": size_after,
            "scrape_ms_before": round(scrape_before * 1e3, 1),
            "scrape_ms_after": round(scrape_after * 1e3, 1),
            "names_on_page": sum(1 for name in names if name in page),
            "token_predict": {"status": status, "ms": round(predict_s * 1e3, 1)},
        }
    finally:
        gateway.stop()


# -- connection slots -----------------------------------------------------------------------------
class RestHolders:
    """``count`` keep-alive connections, each polling ``/healthz`` every ``every_s`` on a thread
    (a connection the server closed is opened again at the next poll)."""

    REQUEST = b"GET /healthz HTTP/1.1\r\nHost: probe\r\n\r\n"

    def __init__(self, port: int, count: int, every_s: float) -> None:
        self.port = port
        self.every_s = every_s
        self.socks: list[socket.socket | None] = [None] * count
        self.reopened = 0
        self.answered = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rest-holders", daemon=True)

    def __enter__(self) -> RestHolders:
        try:
            self._poll()
        except BaseException:
            self._close()
            raise
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._close()

    def _close(self) -> None:
        for sock in self.socks:
            if sock is not None:
                sock.close()

    def open_count(self) -> int:
        return sum(1 for sock in self.socks if sock is not None)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._poll()

    def _poll(self) -> None:
        for index, sock in enumerate(self.socks):
            if sock is None:
                try:
                    sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                except OSError:
                    continue
                self.reopened += 1
                self.socks[index] = sock
            try:
                sock.sendall(self.REQUEST)
            except OSError:
                sock.close()
                self.socks[index] = None
        self._read(deadline=time.monotonic() + 2.0)

    def _read(self, deadline: float) -> None:
        """Read the answers that come by ``deadline``; a closed connection is forgotten."""
        waiting = {sock.fileno(): (i, sock) for i, sock in enumerate(self.socks) if sock}
        while waiting and time.monotonic() < deadline:
            for fd in readable(waiting, 0.1):
                index, sock = waiting.pop(fd)
                try:
                    data = sock.recv(1 << 16)
                except OSError:
                    data = b""
                if data:
                    self.answered += 1
                else:
                    sock.close()
                    self.socks[index] = None


class WatchHolders:
    """``count`` gRPC connections each holding a health ``Watch`` (``reopen``: a Watch that ends
    is called again, a connection that closes is opened again), pumped on a thread."""

    def __init__(self, port: int, count: int, *, reopen: bool) -> None:
        self.port = port
        self.count = count
        self.reopen = reopen
        self.conns: list[RawGrpc | None] = []
        self.streams: list[int] = []
        self.watches_ended = 0
        self.reopened = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watch-holders", daemon=True)

    def _open(self) -> RawGrpc | None:
        try:
            return RawGrpc(self.port, timeout_s=5.0)
        except OSError:
            return None

    def __enter__(self) -> WatchHolders:
        try:
            for _ in range(self.count):
                conn = self._open()
                self.conns.append(conn)
                self.streams.append(conn.call(WATCH_METHOD, b"") if conn else 0)
        except BaseException:
            self._close()
            raise
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._close()

    def _close(self) -> None:
        for conn in self.conns:
            if conn is not None:
                conn.close()

    def watching(self) -> int:
        """Connections whose current Watch has been answered (the server holds it)."""
        return sum(
            1
            for conn, stream in zip(self.conns, self.streams, strict=True)
            if conn is not None
            and not conn.closed
            and stream
            and conn.streams[stream].state == "held"
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            live = [c for c in self.conns if c is not None and not c.closed]
            if live:
                readable([conn.fileno() for conn in live], 0.1)
            else:
                self._stop.wait(0.1)
            for index, conn in enumerate(self.conns):
                if conn is None or conn.closed:
                    if self.reopen and conn is not None:
                        self.conns[index] = conn = self._open()
                        if conn is not None:
                            self.reopened += 1
                            self.streams[index] = conn.call(WATCH_METHOD, b"")
                    continue
                conn.pump()
                stream = self.streams[index]
                if stream and conn.streams[stream].ended:
                    self.watches_ended += 1
                    self.streams[index] = 0  # counted once
                    if self.reopen and not conn.closed:
                        self.streams[index] = conn.call(WATCH_METHOD, b"")


def grpc_token_predict(target: str, request: bytes) -> tuple[str, float]:
    """A token holder's gRPC Predict (``request``) on a new connection: status and seconds."""
    began = time.monotonic()
    with grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)]) as ch:
        try:
            ch.unary_unary(PREDICT_METHOD)(
                request, timeout=2.0, metadata=(("authorization", f"Bearer {TOKEN}"),)
            )
            status = "OK"
        except grpc.RpcError as error:
            status = str(error.code().name)
    return status, time.monotonic() - began


def _token_tries(try_once: Any, seconds: float, opened: float | None = None) -> dict[str, Any]:
    """``try_once()`` → (status, seconds) once a second for ``seconds``: statuses, and when
    the first success came (seconds from the first try, and from ``opened``, the
    ``time.monotonic()`` the holders began to open, when given)."""
    began = time.monotonic()
    tries: list[tuple[float, Any, float]] = []
    while time.monotonic() - began < seconds:
        at = time.monotonic() - began
        status, took = try_once()
        tries.append((at, status, took))
        time.sleep(max(0.0, 1.0 - took))  # one try a second
    good = [at for at, status, _ in tries if status in (200, "OK")]
    return {
        "tries": len(tries),
        "served": len(good),
        "statuses": dict(Counter(str(status) for _, status, _ in tries)),
        "first_served_s": round(good[0], 1) if good else None,
        "first_served_after_open_s": round(good[0] + began - opened, 1)
        if good and opened is not None
        else None,
        "max_ms": round(max(took for _, _, took in tries) * 1e3, 1) if tries else None,
    }


def held_connections(plan: ProbesPlan, root: Path, models: Mapping[str, Path]) -> dict[str, Any]:
    """The connection-slot probes (module doc)."""
    served = {"mlp": models["mlp"]}
    request = predict_payload("mlp", {"x": np.zeros((1, 64), np.float32)})
    result: dict[str, Any] = {}
    gateway = start_gateway(root, "slots", served, tokens=True)
    try:
        log.info("%d keep-alive REST connections polling /healthz", plan.idle_connections)
        with RestHolders(gateway.rest_port, plan.idle_connections, plan.repoll_s) as holders:
            held = holders.open_count()
            tries = _token_tries(lambda: token_predict(gateway.rest_port), plan.hold_s)
            result["rest"] = {
                "connections": plan.idle_connections,
                "held": held,
                "holders_reopened": holders.reopened - plan.idle_connections,
                **tries,
            }
        log.info("%d gRPC connections holding a health Watch", plan.watch_connections)
        with WatchHolders(gateway.grpc_port, plan.watch_connections, reopen=True) as watchers:
            time.sleep(1.0)  # their answers in
            watching = watchers.watching()
            tries = _token_tries(lambda: grpc_token_predict(gateway.target, request), plan.hold_s)
            result["grpc"] = {"connections": plan.watch_connections, "watching": watching, **tries}
    finally:
        gateway.stop()
    flags = [f"--grpc_idle_timeout_seconds={plan.short_idle_s}"]
    gateway = start_gateway(root, "slots-short-idle", served, flags, tokens=True)
    try:
        for reopen in (True, False):
            log.info("Watch holders, idle timeout %g s, re-opening: %s", plan.short_idle_s, reopen)
            opened = time.monotonic()
            with WatchHolders(gateway.grpc_port, plan.watch_connections, reopen=reopen) as w:
                time.sleep(1.0)
                watching = w.watching()
                tries = _token_tries(
                    lambda: grpc_token_predict(gateway.target, request), plan.hold_s, opened
                )
                result[f"grpc_short_idle_{'reopening' if reopen else 'passive'}"] = {
                    "connections": plan.watch_connections,
                    "watching": watching,
                    "idle_timeout_s": plan.short_idle_s,
                    "watches_ended": w.watches_ended,
                    **tries,
                }
    finally:
        gateway.stop()
    return result


# -- unread gRPC answers --------------------------------------------------------------------------
def _unread_round(port: int, request: bytes, calls: int) -> tuple[RawGrpc, Counter[str]]:
    """``calls`` Predicts, one after another, on a new connection whose receive window stays
    shut; the connection (open) and how the calls were answered."""
    conn = RawGrpc(port, window=0)
    for _ in range(calls):
        if conn.closed:
            break
        conn.wait(conn.call(PREDICT_METHOD, request), timeout_s=0.5)
    time.sleep(1.0)
    conn.pump()
    return conn, Counter(stream.state for stream in conn.streams.values())


def _unread(port: int, pid: int, request: bytes, calls: int) -> dict[str, Any]:
    """Two rounds of :func:`_unread_round` (the second once the first's connection closed: is
    the first round's memory reused?), and ``pid``'s memory around them."""
    rss_before = rss_bytes(pid) / MIB
    reset_peak(pid)
    conn, states = _unread_round(port, request, calls)
    try:
        rss_held = rss_bytes(pid) / MIB
        time.sleep(5.0)  # still held a while later?
        rss_later = rss_bytes(pid) / MIB
    finally:
        conn.close()
    time.sleep(3.0)
    rss_closed = rss_bytes(pid) / MIB
    conn, again = _unread_round(port, request, calls)
    rss_second = rss_bytes(pid) / MIB
    conn.close()
    time.sleep(3.0)
    unanswered = states.get("held", 0) + states.get("waiting", 0)
    return {
        "calls": calls,
        "states": dict(states),
        "unsent_answers": unanswered,
        "rss_mb_before": round(rss_before, 1),
        "rss_mb_held": round(rss_held, 1),
        "rss_mb_5s_later": round(rss_later, 1),
        "rss_mb_after_close": round(rss_closed, 1),
        "second_round_states": dict(again),
        "rss_mb_second_round_held": round(rss_second, 1),
        "rss_mb_after_second_close": round(rss_bytes(pid) / MIB, 1),
        "rss_mb_peak": round(status_bytes(pid, "VmHWM") / MIB, 1),
        "rss_mb_added": round(rss_held - rss_before, 1),
        "mb_per_unsent_answer": round((rss_held - rss_before) / unanswered, 2)
        if unanswered
        else None,
    }


def unread_answers(plan: ProbesPlan, root: Path, models: Mapping[str, Path]) -> dict[str, Any]:
    """The unread-answers probe (module doc), and its bare grpc.aio baseline."""
    budget = plan.inflight_mib * MIB
    flags = ["--max_concurrent_requests=50", f"--max_inflight_bytes={budget}"]
    request = predict_payload("tiled", {"x": np.ones((1, 1), np.float32)})
    measured = {}
    for mode in ("auto", "never"):  # never: the same with no run in the front end
        gateway = start_gateway(
            root, f"unread-{mode}", {"tiled": models["tiled"]}, [*flags, f"--inline_runs={mode}"]
        )
        try:
            log.info("%d unread 4 MiB answers on tensorgate (%s)", plan.unread_calls, mode)
            measured[mode] = _unread(gateway.grpc_port, gateway.pid, request, plan.unread_calls)
        finally:
            gateway.stop()
    argv = [sys.executable, "-m", "bench.systems.peers.echo_server", "--port=0",
            f"--answer_bytes={plan.answer_mib * MIB}"]  # fmt: skip
    server, _ = start_with_ready_fd("echo-unread", argv, root / "echo-unread.log")
    try:
        log.info("%d unread answers on a bare grpc.aio server", plan.unread_baseline_calls)
        baseline = _unread(server.port, server.pid, request, plan.unread_baseline_calls)
    finally:
        server.stop()
    return {
        "answer_mib": plan.answer_mib,
        "max_inflight_mib": plan.inflight_mib,
        "tensorgate": measured["auto"],
        "tensorgate_never": measured["never"],
        "grpc_aio": baseline,
    }
