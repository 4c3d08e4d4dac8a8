"""Where moto runs: patched into this process, or as a threaded HTTP server on a free local port."""

from __future__ import annotations

import contextlib
import logging
import urllib.request
from typing import Any, Literal, Protocol

Mode = Literal["inprocess", "server"]


class MotoBackend(Protocol):
    @property
    def endpoint_url(self) -> str | None: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class InProcessMoto:
    """``moto.mock_aws``: fastest; every boto3 client in this process talks to it, no endpoint needed,
    and sends it unsigned requests (see unsigned.py), the pipeline's answered without HTTP
    (direct_calls.py); its sessions share botocore's loaded service models
    (service_models.py)."""

    def __init__(self) -> None:
        self._mock: Any = None
        self._models = contextlib.ExitStack()

    @property
    def endpoint_url(self) -> str | None:
        return None

    def start(self) -> None:
        from moto import mock_aws

        from intentbus_local import direct_calls, unsigned
        from intentbus_local.service_models import shared_service_models

        self._models.enter_context(shared_service_models())
        self._mock = mock_aws()
        self._mock.start()
        unsigned.started()
        direct_calls.started()

    def stop(self) -> None:
        if self._mock is not None:
            from intentbus_local import direct_calls, unsigned

            direct_calls.stopped()
            unsigned.stopped()
            self._mock.stop()
            self._mock = None
        self._models.close()


class ServerMoto:
    """moto's ThreadedMotoServer: real HTTP, reachable from other processes at ``endpoint_url``.

    The server thread shares moto's backends with this process, so state is reset on start and stop.
    """

    def __init__(self) -> None:
        self._server: Any = None
        self._endpoint: str | None = None

    @property
    def endpoint_url(self) -> str | None:
        return self._endpoint

    def start(self) -> None:
        from moto.server import ThreadedMotoServer

        # werkzeug logs every request to stderr; during an invocation that would land in the function's log.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self._endpoint = f"http://{host}:{port}"
        self.reset()

    def reset(self) -> None:
        if self._endpoint is None:
            return
        request = urllib.request.Request(f"{self._endpoint}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def stop(self) -> None:
        if self._server is None:
            return
        try:
            self.reset()
        finally:
            self._server.stop()
            self._server = None
            self._endpoint = None


def backend_for(mode: Mode) -> MotoBackend:
    if mode == "inprocess":
        return InProcessMoto()
    if mode == "server":
        return ServerMoto()
    raise ValueError(f"unknown local cloud mode {mode!r} (inprocess or server)")
