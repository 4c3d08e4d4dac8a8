"""``intentbus demo``: the whole job unattended, and with --approve / --reject."""

from __future__ import annotations

import pytest

from intentbus_cli.main import main


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
