"""API Gateway, played locally: HTTP on 127.0.0.1 turned into the REST proxy events the template declares.

Routes come from the SAM template's ``Api`` events (path, method, authorizer). The front plays the
authorizer too: a route with the Cognito authorizer gets the claims of the local user the front was
started for; an ``AWS_IAM`` route gets the local caller's ARN; ``NONE`` gets neither.

Being that user takes the front's session token, made when it starts and printed with the console's
URL (``console_url``: in the fragment, which no request carries): every authorized route needs it in
``Authorization``, and refuses a request from a page of another origin (its ``Origin`` or
``Sec-Fetch-Site``). A request for another host name (DNS rebinding) is refused whatever its route.
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

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
    sub: str = ""
    """The user's immutable id; by default one derived from the email."""
    groups: tuple[str, ...] = ("approvers",)

    @property
    def subject(self) -> str:
        return self.sub or str(uuid.uuid5(uuid.NAMESPACE_URL, f"intentbus-local-user:{self.email}"))

    def claims(self) -> dict[str, str]:
        """As API Gateway's Cognito authorizer passes an ID token's claims (every value a string)."""
        claims = {
            "email": self.email,
            "cognito:username": self.subject,
            "sub": self.subject,
            "custom:tenant_id": self.tenant_id,
        }
        if self.groups:
            claims["cognito:groups"] = ",".join(self.groups)
        return claims


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
        found = self.route(method, path)
        if found is not None:
            route, match = found
            prefix = f"/{route.stage}"
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

    def route(self, method: str, path: str) -> tuple[Route, re.Match[str]] | None:
        for route in self._routes:
            prefix = f"/{route.stage}"
            if route.method != method or not path.startswith(prefix + "/"):
                continue
            match = route.pattern.match(path[len(prefix) :])
            if match is not None:
                return route, match
        return None


class HttpFront:
    """Serves the template's APIs at ``http://127.0.0.1:<port>/<stage>/...`` until closed."""

    def __init__(
        self, template: LocalTemplate, invoke: Invoke, user: LocalUser, now: Callable[[], float]
    ) -> None:
        self.dispatcher = ApiDispatcher(template, invoke, user, now)
        self.session_token = secrets.token_urlsafe(32)
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

    @property
    def origins(self) -> frozenset[str]:
        port = self._server.server_address[1]
        return frozenset({f"http://127.0.0.1:{port}", f"http://localhost:{port}"})

    def console_url(self, tenant: str) -> str:
        """The console, signed in as the front's user: the session token rides in the fragment."""
        return f"{self.url}/v1/console?tenant={quote(tenant)}#token={self.session_token}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _serve(self, request: BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(request.path)
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length).decode(errors="replace") if length else None
        refusal = self._refusal(request, method, url.path)
        if refusal is not None:
            status, headers, payload = refusal
        else:
            status, headers, payload = self.dispatcher.handle(
                method, url.path, dict(parse_qsl(url.query)), body, dict(request.headers.items())
            )
        request.send_response(status)
        for name, value in headers.items():
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)

    def _refusal(
        self, request: BaseHTTPRequestHandler, method: str, path: str
    ) -> tuple[int, dict[str, str], bytes] | None:
        """What API Gateway and the authorizer would refuse, and what only a local front must."""
        if f"http://{request.headers.get('Host', '')}" not in self.origins:
            return _refused(403, "unknown host")
        found = self.dispatcher.route(method, path)
        if found is None or found[0].authorizer == "none":
            return None  # the page itself, which its own headers keep out of frames
        origin = request.headers.get("Origin")
        if origin is not None and origin not in self.origins:
            return _refused(403, "requests from another origin are refused")
        if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
            return _refused(403, "requests from another site are refused")
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), self.session_token.encode()):
            return _refused(401, "Unauthorized")
        return None


def _refused(status: int, message: str) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps({"message": message}).encode()


def _to_http(response: Any) -> tuple[int, dict[str, str], bytes]:
    if not isinstance(response, Mapping) or "statusCode" not in response:
        return 502, {"Content-Type": "application/json"}, b'{"message": "Internal server error"}'
    headers = {str(k): str(v) for k, v in (response.get("headers") or {}).items()}
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers[str(name)] = ", ".join(str(value) for value in values)
    body = response.get("body") or ""
    return int(response["statusCode"]), headers, str(body).encode()
