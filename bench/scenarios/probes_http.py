"""The hostile-caller probes of the REST server (``python -m bench probes``), each on one front
end (``--frontends=1``):

- :func:`api_docs`: ``--enable_api_docs`` with many models: the first GET of
  ``/v1/docs/openapi.json`` and the ones after it, HEADs, timed on a raw keep-alive connection
  (the figure is the server's answer plus loopback transfer); and Predicts a second alone and
  while four connections fetch the document in a loop.
- :func:`large_heads`: many connections each sending an unfinished request head of up to 128
  lines of 8190 bytes (what the parser allows line by line), then the same connections parking
  a head under ``--rest_api_max_header_bytes``; how they were answered, and the front end's
  memory before, while held and after they closed.
- :func:`unread_rest`: a client with a small receive buffer that sends Predicts with answers of
  several MB and never reads: when the server drops it (``--rest_api_write_timeout_seconds``),
  seen in ``/proc/net/tcp``, and the memory it held.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import statistics
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from bench.load.calls import PREDICT_METHOD, predict_payload
from bench.load.raw_grpc import readable
from bench.scenarios.probe_gateway import start_gateway
from bench.scenarios.probes_plan import ProbesPlan

log = logging.getLogger(__name__)

DOCS = "/v1/docs/openapi.json"
LINE_BYTES = 8190
"""The longest header line the server takes (nginx's 8 KiB buffer less CRLF)."""
HEAD_LINES = 128


# -- the API documents ----------------------------------------------------------------------------
class RawHttp:
    """One kept-alive HTTP/1.1 connection read with as few Python calls as possible: the time
    of an answer is the server's and the loopback's, not a client library's."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = bytearray(1 << 22)

    def fetch(self, method: str, path: str) -> tuple[int, int, float]:
        """``method path``: status, body bytes, seconds from sending to the last byte."""
        began = time.perf_counter()
        self.sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: probe\r\n\r\n".encode())
        view = memoryview(self.buffer)
        got = 0
        while True:
            got += self.sock.recv_into(view[got:])
            end = self.buffer.find(b"\r\n\r\n", 0, got)
            if end >= 0:
                break
        head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        status = int(head[0].split(" ")[1])
        length = 0
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.lower() == "content-length":
                length = int(value)
        body = 0 if method == "HEAD" else length
        total = end + 4 + body
        while got < total:
            got += self.sock.recv_into(view[got:total])
        return status, length, time.perf_counter() - began

    def close(self) -> None:
        self.sock.close()


def _predicts_per_s(target: str, request: bytes, seconds: float) -> float:
    with grpc.insecure_channel(target) as channel:
        call = channel.unary_unary(PREDICT_METHOD)
        done = 0
        began = time.monotonic()
        while time.monotonic() - began < seconds:
            call(request, timeout=10)
            done += 1
        return done / (time.monotonic() - began)


def _ms(seconds: Sequence[float]) -> dict[str, float]:
    times = sorted(s * 1e3 for s in seconds)
    return {
        "median_ms": round(statistics.median(times), 3),
        "p90_ms": round(times[int(0.9 * (len(times) - 1))], 3),
        "max_ms": round(times[-1], 3),
    }


def api_docs(plan: ProbesPlan, root: Path, models: Mapping[str, Path]) -> dict[str, Any]:
    """The API documents probe (module doc)."""
    served = {f"m{n}": models["doubled"] for n in range(plan.docs_models)}
    flags = ["--enable_api_docs", "--inline_runs=never"]
    gateway = start_gateway(root, "docs", served, flags)
    request = predict_payload("m0", {"x": np.ones((1, 1), np.float32)})
    try:
        client = RawHttp(gateway.rest_port)
        try:
            status, length, first = client.fetch("GET", DOCS)
            gets = [client.fetch("GET", DOCS)[2] for _ in range(plan.docs_gets)]
            heads = [client.fetch("HEAD", DOCS)[2] for _ in range(plan.docs_gets)]
        finally:
            client.close()
        alone = _predicts_per_s(gateway.target, request, 2.0)
        stop = threading.Event()

        def fetch_docs() -> None:
            fetcher = RawHttp(gateway.rest_port)
            with contextlib.closing(fetcher):
                while not stop.is_set():
                    fetcher.fetch("GET", DOCS)

        fetchers = [threading.Thread(target=fetch_docs, daemon=True) for _ in range(4)]
        for thread in fetchers:
            thread.start()
        try:
            beside = _predicts_per_s(gateway.target, request, 2.0)
        finally:
            stop.set()
            for thread in fetchers:
                thread.join()
        return {
            "models": plan.docs_models,
            "status": status,
            "document_bytes": length,
            "first_ms": round(first * 1e3, 2),
            "get": _ms(gets),
            "head": _ms(heads),
            "predicts_per_s_alone": round(alone),
            "predicts_per_s_beside_4_fetchers": round(beside),
        }
    finally:
        gateway.stop()


# -- large heads ----------------------------------------------------------------------------------
def _head_start() -> bytes:
    return b"GET /v1/models/tiled HTTP/1.1\r\nHost: probe\r\n"


def _padded_lines(total: int, line: int) -> bytes:
    """Header lines of ``line`` bytes each (CRLF included) adding up to about ``total``."""
    lines = []
    for n in range(max(1, total // line)):
        name = f"X-Pad-{n:03d}: ".encode()
        lines.append(name + b"a" * (line - len(name) - 2) + b"\r\n")
    return b"".join(lines)


def parked_answers(socks: Sequence[socket.socket], timeout_s: float) -> Counter[str]:
    """How the server answered each of ``socks``, all at once (one at a time, the last ones
    would be read after the header timeout): the status it sent, ``closed`` when it closed
    without one, ``reset``, or ``open`` when nothing came within ``timeout_s``."""
    ready = set(readable([sock.fileno() for sock in socks], timeout_s))
    found: Counter[str] = Counter()
    for sock in socks:
        if sock.fileno() not in ready:
            found["open"] += 1
            continue
        try:
            data = sock.recv(256)
        except BlockingIOError:
            found["open"] += 1
            continue
        except OSError:
            found["reset"] += 1
            continue
        parts = data.split(b" ")
        found[parts[1].decode(errors="replace") if len(parts) > 1 else "closed"] += 1
    return found


def _park(port: int, count: int, head: bytes) -> tuple[list[socket.socket], int]:
    """``count`` connections each sending what of ``head`` the kernel takes at once (the head
    is never finished); the sockets and the bytes sent."""
    socks, sent = [], 0
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError, OSError):
            sent += sock.send(head)
        socks.append(sock)
    return socks, sent


def large_heads(plan: ProbesPlan, root: Path, models: Mapping[str, Path]) -> dict[str, Any]:
    """The large-heads probe (module doc)."""
    gateway = start_gateway(root, "heads", {"tiled": models["tiled"]})
    result: dict[str, Any] = {"connections": plan.head_connections}
    try:
        rounds = {
            "full_lines": _head_start() + _padded_lines(HEAD_LINES * LINE_BYTES, LINE_BYTES),
            "under_cap": _head_start() + _padded_lines(plan.parked_head_bytes, 8000),
        }
        for name, head in rounds.items():
            idle = sum(gateway.front_end_rss_mb())
            gateway.reset_peak()
            log.info("%d connections parking %d-byte heads", plan.head_connections, len(head))
            socks, sent = _park(gateway.rest_port, plan.head_connections, head)
            try:
                time.sleep(1.0)  # the server reads what was sent
                held = sum(gateway.front_end_rss_mb())
                answers = parked_answers(socks, 0.2)
            finally:
                for sock in socks:
                    sock.close()
            time.sleep(2.0)  # the server sees them close
            result[name] = {
                "head_bytes_each": len(head),
                "bytes_sent": sent,
                "answers": dict(answers),
                "rss_mb_idle": round(idle, 1),
                "rss_mb_held": round(held, 1),
                "rss_mb_peak": round(gateway.peak_rss_mb(), 1),
                "rss_mb_after": round(sum(gateway.front_end_rss_mb()), 1),
            }
    finally:
        gateway.stop()
    return result


# -- a client that never reads --------------------------------------------------------------------
def _established(local_port: int, remote_port: int) -> bool:
    """Whether 127.0.0.1:``local_port`` has an established TCP connection to
    127.0.0.1:``remote_port`` (``/proc/net/tcp``)."""
    local = f"0100007F:{local_port:04X}"
    remote = f"0100007F:{remote_port:04X}"
    with open("/proc/net/tcp") as table:
        next(table)
        for row in table:
            fields = row.split()
            if fields[1] == local and fields[2] == remote:
                return fields[3] == "01"
    return False


def unread_rest(plan: ProbesPlan, root: Path, models: Mapping[str, Path]) -> dict[str, Any]:
    """The write-timeout probe (module doc)."""
    flags = [f"--rest_api_write_timeout_seconds={plan.write_timeout_s}"]
    gateway = start_gateway(root, "write-timeout", {"tiled": models["tiled"]}, flags)
    try:
        idle = sum(gateway.front_end_rss_mb())
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", gateway.rest_port))
        body = b'{"instances": [[0.5]]}'
        call = (
            b"POST /v1/models/tiled:predict HTTP/1.1\r\nHost: probe\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        sock.sendall(call * 4)
        sent = time.monotonic()
        client_port = sock.getsockname()[1]
        held = idle
        dropped = None
        while time.monotonic() - sent < plan.write_timeout_s + 15:
            held = max(held, sum(gateway.front_end_rss_mb()))
            if not _established(gateway.rest_port, client_port):
                dropped = time.monotonic() - sent
                break
            time.sleep(0.1)  # /proc has no event to wait on; bounded above
        sock.close()
        time.sleep(1.0)
        return {
            "write_timeout_s": plan.write_timeout_s,
            "answers_asked": 4,
            "dropped_after_s": None if dropped is None else round(dropped, 2),
            "rss_mb_idle": round(idle, 1),
            "rss_mb_held": round(held, 1),
            "rss_mb_after": round(sum(gateway.front_end_rss_mb()), 1),
        }
    finally:
        gateway.stop()
