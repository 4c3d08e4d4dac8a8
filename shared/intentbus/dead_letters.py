"""The dead-letter sweep: a stage message that reached its DLQ all the same pauses its run for review.

The stage handler pauses a run on its message's last receive; what slips past it (the pause itself
failed, a crash on the last receive, a message dead-lettered before this deployment) is found here. A
scheduled function reads each stage's DLQ without deleting anything (the message stays there to redrive)
and pauses each message's running run with a ``HumanReviewRequired`` (``dead_lettered``: its stage and
receives; the error itself is in the stage function's logs). An input that already paused its run once
is left alone, so a retried run is not paused again by its old dead letter. validate's DLQ holds
producers' events, not runs: ``intentbus dlq`` is for those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from intentbus.failure_review import Cause, Failure, pause_for_failure, paused_for, pipeline_input
from intentbus.ports import WorkflowStore
from intentbus.stages.common import StageDeps


@dataclass(frozen=True)
class DeadLetter:
    """One message in a stage's DLQ."""

    message_id: str
    body: str
    receives: int
    """How often its stage received it before SQS moved it (its receive count when it moved)."""


class DeadLetters(Protocol):
    def peek(self, queue_url: str) -> list[DeadLetter]:
        """The queue's messages, left in it."""
        ...


@dataclass(frozen=True)
class Swept:
    """One dead letter the sweep looked at, and the run it paused if any."""

    stage: str
    message_id: str
    paused_run: str | None
    """The run it paused, or ``None`` (not a pipeline fact, the run was not running, or already reviewed)."""


def parse_queues(spec: str) -> dict[str, str]:
    """``stage=QUEUE_URL,...`` (``DEAD_LETTER_QUEUES``) as a dict."""
    queues: dict[str, str] = {}
    for part in (item.strip() for item in spec.split(",")):
        if part:
            stage, _, url = part.partition("=")
            queues[stage.strip()] = url.strip()
    return queues


@dataclass
class DeadLetterSweep:
    """Pauses the running run of each message found in a stage's DLQ."""

    deps: StageDeps
    store: WorkflowStore
    letters: DeadLetters
    queues: dict[str, str]
    """Stage -> its DLQ's URL."""

    def sweep(self) -> list[Swept]:
        swept: list[Swept] = []
        for stage, queue_url in self.queues.items():
            swept.extend(self._letter(stage, letter) for letter in self.letters.peek(queue_url))
        return swept

    def _letter(self, stage: str, letter: DeadLetter) -> Swept:
        incoming = pipeline_input(letter.body)
        if stage == "validate" or incoming is None or paused_for(self.store, incoming):
            return Swept(stage, letter.message_id, None)
        error = (
            f"message {letter.message_id} is in {stage}'s DLQ; its error is in the {stage} function's logs"
        )
        attempts = max(1, letter.receives - 1)  # less the sweep's own receive of it
        failure = Failure(stage=stage, error=error, attempts=attempts, cause=Cause.DEAD_LETTERED)
        paused = pause_for_failure(self.deps, self.store, incoming, failure, again=False)
        return Swept(stage, letter.message_id, incoming.run_id if paused is not None else None)
