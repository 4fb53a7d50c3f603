"""A stop signal while the gateway is still starting: a model whose load keeps failing holds the
start through its retries (minutes); SIGTERM must end the process at once, cleanly, as
`podman stop` / Kubernetes expect, not be ignored until the retries run out."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.support.gateway_proc import gateway_command, wait_gone
from tests.support.inotify import IN_CLOSE_NOWRITE, PathEvents
from tests.support.leftovers import children


def test_sigterm_during_a_failing_first_load_stops_the_gateway(tmp_path: Path) -> None:
    version = tmp_path / "broken" / "1"
    version.mkdir(parents=True)
    model = version / "model.onnx"
    model.write_bytes(b"not an ONNX model")
    read_fd, write_fd = os.pipe()
    log = tmp_path / "gateway.log"
    args = [
        "--port=0",
        "--model_name=broken",
        f"--model_base_path={tmp_path / 'broken'}",
        "--workers=1",
        "--load_retry_interval_micros=600000000",  # ten minutes between attempts
        f"--ready_fd={write_fd}",
    ]
    with PathEvents(model, IN_CLOSE_NOWRITE) as reads:
        with open(log, "wb") as out:
            process = subprocess.Popen(
                gateway_command(args), stdout=out, stderr=subprocess.STDOUT, pass_fds=(write_fd,)
            )
        os.close(write_fd)
        try:
            reads.wait(1, "the first load read the model")  # and fails: next try in 600 s
            workers = children(process.pid)
            assert workers, "a worker process is running"
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, log.read_text()
            assert os.read(read_fd, 4096) == b"", "no ready line: the server never became ready"
            assert all(wait_gone(pid, 10) for pid in workers)
            assert "stop signal before the server was ready" in log.read_text()
        finally:
            os.close(read_fd)
            if process.poll() is None:
                process.kill()
                process.wait()
