"""Runs whose workflow definition this deployment no longer has: they end FAILED, with the reason.

A redeploy may drop a workflow (the ``Workflows`` parameter) or register another version of it. A run
started under the old definition cannot go on: when a fact of that run reaches a stage, and only once
the fact checks out against the record (rule 8, so no producer can end another's run this way), the
stage ends the run in its one write and publishes ``WorkflowFailed``, instead of quarantining the fact
or leaving the run RUNNING with nothing to move it.
"""

from __future__ import annotations

from intentbus import facts
from intentbus.envelope import Envelope
from intentbus.journal import Commit, LogEntry, Outcome, Snapshot
from intentbus.ports import WorkflowStore
from intentbus.stages.common import StageDeps, StageResult, commit_then_publish, pipeline_fact
from intentbus.state import Status, WorkflowState, settle


def why_retired(deps: StageDeps, state: WorkflowState | None) -> str | None:
    """Why the run cannot go on in this deployment; ``None`` for a run that can, has ended or is none."""
    if state is None or state.terminal:
        return None
    return deps.catalog.retired(state.workflow, state.definition_version)


def why_snapshot_retired(deps: StageDeps, snapshot: Snapshot) -> str | None:
    """``why_retired`` of the snapshot's run, told by what its stored item says when it says it: a stage
    that needs no more of the run reads no state."""
    run = snapshot.run_definition()
    return None if run is None else deps.catalog.retired(*run)


def end_run(
    deps: StageDeps,
    store: WorkflowStore,
    *,
    stage: str,
    incoming: Envelope,
    input_id: str,
    input_type: str,
    state: WorkflowState,
    reason: str,
) -> StageResult | None:
    """Records the input as applied with the run FAILED for ``reason`` (conditioned on the version read),
    then publishes WorkflowFailed. ``None`` on a version conflict: the caller reads again."""
    now = deps.clock.now()
    ended = settle(state, status=Status.FAILED, reason=reason, now=now)
    failed = pipeline_fact(
        incoming,
        stage=stage,
        type_name=facts.WORKFLOW_FAILED,
        time=now,
        version=ended.version,
        payload=facts.WorkflowFailed(workflow=state.workflow, status=ended.status.value, reason=reason),
    )
    entry = LogEntry(
        stage=stage,
        input_id=input_id,
        input_type=input_type,
        outcome=Outcome.APPLIED,
        at=now,
        version=ended.version,
        outputs=(failed,),
        summary={"reason": reason, "definition": f"{state.workflow}@{state.definition_version}"},
    )
    commit = Commit(
        entry=entry,
        tenant_id=state.tenant_id,
        run_id=state.run_id,
        expected_version=state.version,
        state=ended,
    )
    return commit_then_publish(deps, store, commit, incoming)
