"""A RabbitMQ server of its own, on free ports, for tests and ``intentbus local run --ingress rabbitmq``.

Debian's ``rabbitmq-server`` (``apt-get install rabbitmq-server``) is started from its scripts directly,
not as the system service: its own epmd (``ERL_EPMD_PORT``, started here so that it is stopped here),
node, distribution and AMQP ports, a unique node name, and its database, logs, cookie and (empty)
plugin list in a temporary directory. ``start`` polls until an AMQP connection succeeds, with a deadline;
``stop`` shuts the node down and ends what it started, by process id.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

from intentbus.errors import ConfigurationError

SCRIPTS = Path("/usr/lib/rabbitmq/bin")
BOOT_DEADLINE_SECONDS = 60.0
STOP_DEADLINE_SECONDS = 20.0
_POLL_INTERVAL = 0.2


class RabbitMqUnavailable(ConfigurationError):
    """No RabbitMQ here, it did not start, or the one named cannot be reached: the message says which."""


class QuietPika:
    """pika logs every refused connection at ERROR, with a traceback: not while the node is booting."""

    def __enter__(self) -> None:
        self._logger = logging.getLogger("pika")
        self._level = self._logger.level
        self._logger.setLevel(logging.CRITICAL)

    def __exit__(self, *exc: object) -> None:
        self._logger.setLevel(self._level)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def installed() -> bool:
    return (SCRIPTS / "rabbitmq-server").exists() and shutil.which("epmd") is not None


class RabbitMqServer:
    def __init__(self, *, boot_deadline_seconds: float = BOOT_DEADLINE_SECONDS) -> None:
        self.port = free_port()
        self._dist_port = free_port()
        self._epmd_port = free_port()
        self._deadline = boot_deadline_seconds
        self._dir: Path | None = None
        self._epmd: subprocess.Popen[bytes] | None = None
        self._node: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    def __enter__(self) -> RabbitMqServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        if not installed():
            raise RabbitMqUnavailable(
                "rabbitmq-server is not installed: apt-get install rabbitmq-server (Debian's package)"
            )
        self._dir = Path(tempfile.mkdtemp(prefix="intentbus-rabbitmq-"))
        (self._dir / "enabled_plugins").write_text("[].\n")
        environment = self._environment(self._dir)
        log = (self._dir / "server.log").open("wb")
        try:
            self._epmd = subprocess.Popen(
                ["epmd", "-port", str(self._epmd_port)], stdout=log, stderr=log, env=environment
            )
            self._node = subprocess.Popen(
                [str(SCRIPTS / "rabbitmq-server")],
                stdout=log,
                stderr=log,
                env=environment,
                cwd=self._dir,
                start_new_session=True,  # its own group: stopped whole, not by a Ctrl-C meant for us
            )
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        finally:
            log.close()

    def _environment(self, base: Path) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(base),  # the Erlang cookie
            "ERL_EPMD_PORT": str(self._epmd_port),
            "RABBITMQ_NODENAME": f"intentbus-{uuid.uuid4().hex[:12]}@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(self._dist_port),
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_PID_FILE": str(base / "rabbitmq.pid"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq"),  # none: the defaults
            "RABBITMQ_CONF_ENV_FILE": str(base / "rabbitmq-env.conf"),  # none: not the system's
        }

    def _wait_until_ready(self) -> None:
        import pika
        import pika.exceptions

        deadline = time.monotonic() + self._deadline
        quiet = QuietPika()
        with quiet:
            self._poll_until_ready(deadline, pika, pika.exceptions.AMQPError)

    def _poll_until_ready(self, deadline: float, pika: Any, refused: type[Exception]) -> None:
        while True:
            assert self._node is not None
            if self._node.poll() is not None:
                raise RabbitMqUnavailable(f"rabbitmq-server exited ({self._node.returncode}): {self._tail()}")
            try:
                pika.BlockingConnection(pika.URLParameters(self.url)).close()
                return
            except refused:
                pass
            if time.monotonic() > deadline:
                raise RabbitMqUnavailable(
                    f"rabbitmq-server not ready after {self._deadline} s: {self._tail()}"
                )
            time.sleep(_POLL_INTERVAL)

    def _tail(self) -> str:
        if self._dir is None:
            return ""
        try:
            return (self._dir / "server.log").read_text(errors="replace")[-800:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self._node is not None and self._node.poll() is None:
            os.killpg(self._node.pid, signal.SIGTERM)  # the node shuts down and ends its helpers
            try:
                self._node.wait(timeout=STOP_DEADLINE_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(self._node.pid, signal.SIGKILL)
                self._node.wait()
        self._node = None
        if self._epmd is not None and self._epmd.poll() is None:
            self._epmd.terminate()
            self._epmd.wait()
        self._epmd = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
