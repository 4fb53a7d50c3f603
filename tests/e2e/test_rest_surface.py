"""The REST surface as a hostile client sees it, over raw sockets: every answer is TF Serving's
JSON ``{"error": ...}`` that never echoes the request, every connection and head is bounded, and
clients that only hold connections cannot keep others out."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.gateway_proc import GatewayProcess, running_gateway

JUNK = b"\x00\x01junk" + b"\xfe" * 4000
MAX_CONNECTIONS = 6


@dataclass
class Rest:
    gateway: GatewayProcess
    port: int

    def connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        return sock


@pytest.fixture(scope="module")
def rest(model_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rest]:
    logs = tmp_path_factory.mktemp("rest-surface")
    args = [
        "--model_name=mlp",
        f"--model_base_path={model_repo / 'mlp'}",
        "--workers=1",
        "--rest_api_port=-1",
        "--rest_api_header_timeout_seconds=0.5",
        "--rest_api_body_timeout_seconds=0.5",
        f"--rest_api_max_connections={MAX_CONNECTIONS}",
    ]
    with running_gateway(args, logs) as gateway:
        yield Rest(gateway, gateway.rest_port)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    closed: bool

    def error(self) -> str:
        assert self.headers.get("content-type") == "application/json", self
        message: str = json.loads(self.body)["error"]
        return message


def _read_answer(sock: socket.socket) -> Answer:
    """One HTTP response (Content-Length bodies), and whether the server closed afterwards."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before an answer: {data!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    closed = headers.get("connection", "").lower() == "close" and sock.recv(1) == b""
    return Answer(status, headers, rest[:length], closed)


def ask(rest: Rest, raw: bytes) -> Answer:
    with rest.connect() as sock:
        sock.sendall(raw)
        return _read_answer(sock)


def test_errors_of_the_http_parser_are_json_and_never_echo_the_request(rest: Rest) -> None:
    answer = ask(rest, b"FOO /v1/models/mlp HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (answer.status, answer.error()) == (501, "the request's HTTP method is not supported")
    answer = ask(rest, b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.status == 414
    assert answer.error() == "the request target is longer than 8190 bytes"
    answer = ask(rest, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 9000 + b"\r\n\r\n")
    assert answer.status == 431 and "longer than 8190 bytes" in answer.error()
    many = b"".join(b"X%d: a\r\n" % i for i in range(200))
    answer = ask(rest, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    assert answer.error() == "the request has more than 128 headers"
    raw = b"POST /v1/models/mlp:predict HTTP/1.0\r\nContent-Length: 5\r\n\r\n" + JUNK
    answer = ask(rest, raw)  # answered, then closed: the bytes after it are never read
    assert answer.status == 400 and answer.closed
    assert b"junk" not in answer.body and len(answer.body) < 200
    log = rest.gateway.log()
    assert "junk" not in log and "\\xfe" not in log and "Traceback" not in log


def test_methods_a_path_does_not_take_are_405_with_allow(rest: Rest) -> None:
    for method in ("PUT", "DELETE", "PATCH", "TRACE"):
        answer = ask(rest, f"{method} /v1/models/mlp HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert (answer.status, answer.headers["allow"]) == (405, "GET"), method
        assert answer.error() == f"this path answers GET, not {method}"
    answer = ask(rest, b"DELETE /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (answer.status, answer.headers["allow"]) == (405, "POST")
    answer = ask(rest, b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    assert (answer.status, answer.headers["allow"]) == (405, "GET, HEAD")
    with rest.connect() as sock:
        sock.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        head = sock.recv(65536)
    assert head.startswith(b"HTTP/1.1 200 OK")


def test_connect_is_answered_and_the_connection_closed(rest: Rest) -> None:
    """CONNECT /healthz answered 200 and then held the connection as a tunnel forever."""
    answer = ask(rest, b"CONNECT /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.status == 405
    assert answer.closed


def test_a_slow_request_head_is_cut_off(rest: Rest) -> None:
    """Slowloris: a connection that never finishes its headers is closed by the server."""
    with rest.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        assert sock.recv(65536) == b""  # closed by the server (the socket waits up to 60 s)


def test_a_stalled_chunked_body_gets_408(rest: Rest) -> None:
    raw = (
        b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nabc"
    )
    answer = ask(rest, raw)
    assert answer.status == 408
    assert "was not received within 0.5 s" in answer.error()
    assert answer.closed


@pytest.mark.parametrize("size", [b"ffffffffffffffff", b"10000000000", b"4000001"])
def test_a_chunk_declared_over_the_body_limit_is_refused_at_once(rest: Rest, size: bytes) -> None:
    """The chunk-size line alone is refused (400, not the body deadline's 408)."""
    raw = (
        b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        + size
        + b"\r\nabc"
    )
    answer = ask(rest, raw)
    assert answer.status == 400
    assert f"a chunk declares {int(size, 16)} bytes" in answer.error()
    assert answer.closed


def test_chunked_bodies_sent_piecemeal_are_served_on_one_connection(rest: Rest) -> None:
    """The chunk watch follows framing across reads and requests: nothing valid is refused."""
    body = json.dumps({"instances": [[0.5] * 64]}).encode()
    request = (
        b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"%x;ext=1\r\n" % 7
        + body[:7]
        + b"\r\n%x\r\n" % (len(body) - 7)
        + body[7:]
        + b"\r\n0\r\nX-Trailer: y\r\n\r\n"
    )
    with rest.connect() as sock:
        for _ in range(2):
            for i in range(0, len(request), 5):
                sock.sendall(request[i : i + 5])
            answer = _read_answer(sock)
            assert answer.status == 200, answer
            assert "predictions" in json.loads(answer.body)
            assert not answer.closed


def test_past_the_cap_the_longest_idle_connection_makes_room(rest: Rest) -> None:
    """Clients that only hold connections (idle keep-alive, a probe now and then) cannot keep a
    new client out: the connection idle longest is closed for it."""
    idle = [rest.connect() for _ in range(MAX_CONNECTIONS)]
    try:
        for sock in idle:  # every one of them is open and served (a request also keeps it alive)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _read_answer(sock).status == 200
        with rest.connect() as newcomer:
            newcomer.sendall(b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _read_answer(newcomer).status == 200
        assert idle[0].recv(1) == b""  # the oldest idle one was closed
        for sock in idle[1:]:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _read_answer(sock).status == 200
    finally:
        for sock in idle:
            sock.close()


def test_a_head_is_bounded_in_total_bytes_even_unfinished(rest: Rest) -> None:
    """Each line within 8190 bytes, but 40 KB of them: 431 (nginx's 32 KiB), also when the head
    never ends (counted as it arrives, not held until the header deadline)."""
    lines = b"".join(b"X%d: %s\r\n" % (i, b"a" * 8000) for i in range(5))
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + lines
    for raw in (head + b"\r\n", head):
        answer = ask(rest, raw)
        assert answer.status == 431 and answer.closed
        assert answer.error() == (
            "the request's headers are larger than 32768 bytes (--rest_api_max_header_bytes)"
        )


def test_not_found_never_quotes_the_path(rest: Rest) -> None:
    """A 404 quoting the path would send a caller's ``<script>`` back as the server's text."""
    answer = ask(rest, b"GET /%3Cscript%3Ealert(1)%3C/script%3E HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.status == 404 and "script" not in answer.error()
    assert answer.headers["x-content-type-options"] == "nosniff"
