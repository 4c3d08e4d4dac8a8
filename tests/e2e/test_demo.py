"""``intentbus demo``: the whole job unattended, and with --approve / --reject."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable

import pytest

from intentbus.state import Status
from intentbus_cli import demo
from intentbus_cli.demo import run
from intentbus_cli.main import main
from intentbus_local import seed

TENANT = str(seed.latency_event(environment="production")["tenant_id"])


@pytest.mark.parametrize(
    ("flags", "said", "outcome", "desired"),
    [
        ([], "no terminal and no --approve/--reject: approving by itself", "COMPLETED", "2 -> 4"),
        (["--approve"], "operator@example.com: approved", "COMPLETED", "2 -> 4"),
        (["--reject"], "operator@example.com: rejected", "DENIED", "2 -> 2"),
    ],
)
def test_the_demo_waits_for_the_approval_and_shows_its_outcome(
    flags: list[str], said: str, outcome: str, desired: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", *flags]) == 0
    out = capsys.readouterr().out
    assert "the production scale-up waits for a person: http://127.0.0.1:" in out
    assert said in out
    timeline = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    stages = [row[2] for row in timeline]
    assert stages.index("authorize") < stages.index("approval")
    assert any(row[2:5] == ["authorize", "scale_service", "waiting"] for row in timeline)
    assert f": {outcome}" in out
    assert f"desired count: {desired}" in out


def test_a_decision_made_in_the_console_ends_the_prompt_and_the_demo_shows_its_outcome() -> None:
    said: list[str] = []
    asked: list[str] = []

    def decide_in_the_console(question: str, settled: Callable[[], bool]) -> str | None:
        asked.append(question)
        console = next(line for line in said if "waits for a person: " in line).split(": ", 1)[1]
        base, token = console.split("/v1/console?")[0], console.split("#token=")[1]
        headers = {"Authorization": token, "Content-Type": "application/json"}
        listed = urllib.request.Request(f"{base}/v1/tenants/{TENANT}/approvals", headers=headers)
        with urllib.request.urlopen(listed, timeout=30) as response:
            (approval,) = json.loads(response.read())["approvals"]
        reject = urllib.request.Request(
            f"{base}/v1/tenants/{TENANT}/approvals/{approval['approval_id']}/reject",
            data=json.dumps({"reason": "not now"}).encode(),
            method="POST",
            headers=headers,
        )
        urllib.request.urlopen(reject, timeout=30).close()
        deadline = time.monotonic() + 30
        while not settled():  # what the terminal prompt polls between keystrokes
            assert time.monotonic() < deadline, "the prompt never noticed the console's decision"
        return None

    result = run(mode="server", ask=decide_in_the_console, say=said.append)

    assert len(asked) == 1  # asked once, never again after the console decided
    assert "decided in the console: REJECTED by operator@example.com" in said
    assert result.state is not None
    assert result.state.status is Status.DENIED
    assert result.succeeded
    assert (result.desired_before, result.desired_after) == (2, 2)
    timeline = [line.split() for line in "\n".join(said).splitlines() if line[:1].isdigit()]
    assert any(row[2] == "approval" for row in timeline)  # the outcome and the timeline, not a 409


@pytest.mark.parametrize(
    ("raised", "line", "status"),
    [
        (EOFError, "intentbus: end of input: no answer was given, nothing was decided", 1),
        (KeyboardInterrupt, "intentbus: interrupted", 130),
    ],
)
def test_ctrl_d_or_ctrl_c_at_the_prompt_ends_the_demo_in_one_line(
    raised: type[BaseException],
    line: str,
    status: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def ask(question: str, settled: Callable[[], bool]) -> str | None:
        raise raised

    monkeypatch.setattr(demo, "terminal_prompt", lambda: ask)

    assert main(["demo", "--mode", "inprocess"]) == status
    assert capsys.readouterr().err.strip().splitlines() == [line]
