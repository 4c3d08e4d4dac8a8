"""A throwaway ``redis-server`` (Debian's) on a free port: no persistence, its own directory, stopped after.

For the tests, the fault harness and the bench: execute's idempotency store against a real Redis.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

START_SECONDS = 10.0


class RedisUnavailable(RuntimeError):
    """No ``redis-server`` on PATH, or it did not answer in time."""


@dataclass
class RedisServer:
    host: str
    port: int
    process: subprocess.Popen[bytes]
    args: list[str]

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def restart(self) -> None:
        """Stop and start again on the same port: with no persistence, every key is gone."""
        _stop(self.process)
        self.process = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_ready(self.host, self.port, self.process)


@contextlib.contextmanager
def redis_server() -> Iterator[RedisServer]:
    executable = shutil.which("redis-server")
    if executable is None:
        raise RedisUnavailable("redis-server is not installed (Debian: apt-get install redis-server)")
    with tempfile.TemporaryDirectory(prefix="intentbus-redis-") as directory:
        port = _free_port()
        args = [executable, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory]
        args += ["--save", "", "--appendonly", "no", "--protected-mode", "yes"]
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = RedisServer("127.0.0.1", port, process, args)
        try:
            _wait_ready(server.host, port, process)
            yield server
        finally:
            _stop(server.process)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_ready(host: str, port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RedisUnavailable(f"redis-server exited with {process.returncode} on port {port}")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2) as conn:
            conn.sendall(b"PING\r\n")
            if conn.recv(16).startswith(b"+PONG"):
                return
        time.sleep(0.02)  # the server is starting: poll again until the deadline
    _stop(process)
    raise RedisUnavailable(f"redis-server did not answer on port {port} within {START_SECONDS:.0f} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
