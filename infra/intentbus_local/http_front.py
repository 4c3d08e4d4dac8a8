"""API Gateway, played locally: HTTP on 127.0.0.1 turned into the REST proxy events the template declares.

Routes come from the SAM template's ``Api`` events (path, method, authorizer). The front plays the
authorizer too: a route with the Cognito authorizer gets the claims of the local user the front was
started for; an ``AWS_IAM`` route gets the local caller's ARN; ``NONE`` gets neither.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from intentbus_local.api_events import rest_request
from intentbus_local.template import LocalTemplate

Invoke = Callable[[str, Mapping[str, Any]], Any]
"""(function logical id, event) -> the function's response."""


@dataclass(frozen=True)
class Route:
    function: str
    method: str
    resource: str
    """The path template, e.g. ``/tenants/{tenant}/approvals``."""
    authorizer: str
    """``cognito``, ``iam`` or ``none``."""
    stage: str

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.resource) + "$")


@dataclass(frozen=True)
class LocalUser:
    email: str
    tenant_id: str
    caller_arn: str = "arn:aws:iam::123456789012:user/local-operator"

    def claims(self) -> dict[str, str]:
        return {
            "email": self.email,
            "cognito:username": self.email,
            "sub": self.email,
            "custom:tenant_id": self.tenant_id,
        }


def routes(template: LocalTemplate) -> list[Route]:
    resources = template.sam["Resources"]
    found: list[Route] = []
    for logical_id, resource in resources.items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        for event in resource.get("Properties", {}).get("Events", {}).values():
            if event.get("Type") != "Api":
                continue
            properties = event["Properties"]
            api = resources[properties["RestApiId"]["Ref"]]["Properties"]
            default = "cognito" if api.get("Auth", {}).get("DefaultAuthorizer") else "none"
            named = properties.get("Auth", {}).get("Authorizer")
            authorizer = {"AWS_IAM": "iam", "NONE": "none", None: default}.get(named, "cognito")
            found.append(
                Route(
                    function=logical_id,
                    method=properties["Method"].upper(),
                    resource=properties["Path"],
                    authorizer=authorizer,
                    stage=str(api.get("StageName", "v1")),
                )
            )
    return found


class ApiDispatcher:
    """Turns a request into the API Gateway event its route declares and invokes the route's function;
    what the HTTP front does per request, callable without a server (the fault harness decides this way).
    """

    def __init__(
        self, template: LocalTemplate, invoke: Invoke, user: LocalUser, now: Callable[[], float]
    ) -> None:
        self._routes = routes(template)
        self._invoke = invoke
        self.user = user
        self._now = now

    def handle(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        body: str | None,
        headers: Mapping[str, str],
        *,
        user: LocalUser | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """``path`` includes the stage (``/v1/...``); ``user`` is the caller, by default the front's."""
        caller = user or self.user
        for route in self._routes:
            prefix = f"/{route.stage}"
            if route.method != method or not path.startswith(prefix + "/"):
                continue
            match = route.pattern.match(path[len(prefix) :])
            if match is None:
                continue
            event = rest_request(
                method=method,
                path=path[len(prefix) :],
                resource=route.resource,
                path_parameters=match.groupdict(),
                stage=route.stage,
                body=body,
                query=query or None,
                headers=headers,
                now=self._now(),
                claims=caller.claims() if route.authorizer == "cognito" else None,
                caller_arn=caller.caller_arn if route.authorizer == "iam" else None,
            )
            response = self._invoke(route.function, event)
            return _to_http(response)
        return (
            404,
            {"Content-Type": "application/json"},
            json.dumps({"message": "Missing Authentication Token"}).encode(),
        )


class HttpFront:
    """Serves the template's APIs at ``http://127.0.0.1:<port>/<stage>/...`` until closed."""

    def __init__(
        self, template: LocalTemplate, invoke: Invoke, user: LocalUser, now: Callable[[], float]
    ) -> None:
        self.dispatcher = ApiDispatcher(template, invoke, user, now)
        front = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                front._serve(self, "GET")

            def do_POST(self) -> None:
                front._serve(self, "POST")

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="intentbus-http-front", daemon=True
        )
        self._thread.start()

    @property
    def user(self) -> LocalUser:
        return self.dispatcher.user

    @user.setter
    def user(self, user: LocalUser) -> None:
        self.dispatcher.user = user

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _serve(self, request: BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(request.path)
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length).decode() if length else None
        status, headers, payload = self.dispatcher.handle(
            method, url.path, dict(parse_qsl(url.query)), body, dict(request.headers.items())
        )
        request.send_response(status)
        for name, value in headers.items():
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)


def _to_http(response: Any) -> tuple[int, dict[str, str], bytes]:
    if not isinstance(response, Mapping) or "statusCode" not in response:
        return 502, {"Content-Type": "application/json"}, b'{"message": "Internal server error"}'
    headers = {str(k): str(v) for k, v in (response.get("headers") or {}).items()}
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers[str(name)] = ", ".join(str(value) for value in values)
    body = response.get("body") or ""
    return int(response["statusCode"]), headers, str(body).encode()
