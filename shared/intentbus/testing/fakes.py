"""In-memory implementations of the ports, with the same conditional-write semantics as DynamoDB."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from intentbus.approval_record import Approval
from intentbus.envelope import Envelope
from intentbus.execution_claim import Claim, ClaimRequest, ClaimStatus
from intentbus.ids import canonical_json
from intentbus.journal import (
    ApprovalStatus,
    Authorization,
    Commit,
    CommitResult,
    CommitStatus,
    LogEntry,
    Snapshot,
    proof_key,
)
from intentbus.ports import KeyHeldByAnotherCommand, OutcomeInDoubt, SnapshotRequest
from intentbus.state import LEGACY_CHECKS, WorkflowState
from intentbus.stored_entry import StoredEntry


@dataclass
class InMemoryStore:
    """The workflow store in memory: runs, logs, approvals, resource versions and authorizations."""

    states: dict[tuple[str, str], WorkflowState] = field(default_factory=dict)
    logs: dict[tuple[str, str], dict[str, LogEntry]] = field(default_factory=dict)
    approvals: dict[str, Approval] = field(default_factory=dict)
    resources: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    """(tenant, resource) -> (version, the command that claimed it)."""
    authorizations: dict[tuple[str, str, str], Authorization] = field(default_factory=dict)
    """(tenant, run, command id) -> the command's recorded authorization."""
    calls: int = 0
    batch_calls: int = 0

    def snapshot(
        self,
        tenant_id: str,
        run_id: str,
        stage: str,
        input_id: str,
        *,
        resource: str | None = None,
        proofs: Sequence[tuple[str, str]] = (),
        authorization: str | None = None,
    ) -> Snapshot:
        self.calls += 1
        return self._read(
            SnapshotRequest(tenant_id, run_id, stage, input_id, resource, tuple(proofs), authorization)
        )

    def _read(self, request: SnapshotRequest) -> Snapshot:
        tenant_id, run_id, resource = request.tenant_id, request.run_id, request.resource
        log = self.logs.get((tenant_id, run_id), {})
        own = proof_key(request.stage, request.input_id)
        version = None if resource is None else self.resources.get((tenant_id, resource), (0, ""))[0]
        found: dict[str, LogEntry | StoredEntry] = {
            proof_key(s, i): log[proof_key(s, i)] for s, i in request.proofs if proof_key(s, i) in log
        }
        found.pop(own, None)
        authorization = request.authorization
        return Snapshot(
            state=self.states.get((tenant_id, run_id)),
            entry=log.get(own),
            resource_version=version,
            proofs=found,
            authorization=None
            if authorization is None
            else self.authorizations.get((tenant_id, run_id, authorization)),
        )

    def snapshots(self, requests: Sequence[SnapshotRequest]) -> dict[SnapshotRequest, Snapshot]:
        """Every request's snapshot for one call (``batch_calls``), as ``snapshot`` would read it."""
        self.batch_calls += 1
        return {request: self._read(request) for request in requests}

    def claim(
        self,
        *,
        tenant_id: str,
        run_id: str,
        command_id: str,
        resource: str | None,
        seen_version: int | None,
        authorization: str | None,
        now: datetime,
        definition: tuple[str, str] | None = None,
    ) -> Claim:
        """The execution guard's semantics (intentbus.adapters.dynamodb_guard), in memory."""
        self.calls += 1
        state = self.states.get((tenant_id, run_id))
        granted = self.authorizations.get((tenant_id, run_id, command_id))
        if state is None or (
            authorization is not None and (granted is None or granted.digest != authorization)
        ):
            return Claim(ClaimStatus.NOT_AUTHORIZED)
        if state.terminal:
            return Claim(ClaimStatus.RUN_ENDED, run_status=state.status.value)
        run_definition = (state.workflow, state.definition_version)
        if definition is not None and run_definition != definition:
            return Claim(ClaimStatus.RETIRED, run_status=state.status.value, run_definition=run_definition)
        if resource is None:
            return Claim(ClaimStatus.CLAIMED)
        seen = seen_version or 0
        version, holder = self.resources.get((tenant_id, resource), (0, ""))
        if version != seen and holder != command_id:
            return Claim(ClaimStatus.CONFLICT, holder=holder or None)
        self.resources[(tenant_id, resource)] = (seen + 1, command_id)
        return Claim(ClaimStatus.CLAIMED)

    def predates_authorizations(self, tenant_id: str, run_id: str) -> bool:
        self.calls += 1
        state = self.states.get((tenant_id, run_id))
        return state is not None and state.checks == LEGACY_CHECKS

    def commit(self, commit: Commit) -> CommitResult:
        self.calls += 1
        key = (commit.tenant_id, commit.run_id)
        log = self.logs.setdefault(key, {})
        entry_key = proof_key(commit.entry.stage, commit.entry.input_id)
        if entry_key in log:
            return CommitResult(CommitStatus.ALREADY_RECORDED, log[entry_key])
        current = self.states.get(key)
        if commit.create and current is not None:
            return CommitResult(CommitStatus.VERSION_CONFLICT)
        if (
            not commit.create
            and commit.expected_version is not None
            and (current is None or current.version != commit.expected_version)
        ):
            return CommitResult(CommitStatus.VERSION_CONFLICT)
        if commit.approval is not None:
            existing = self.approvals.get(commit.approval.approval_id)
            expected = None if existing is None else existing.status
            if expected != commit.approval_was:
                return CommitResult(CommitStatus.VERSION_CONFLICT)
        log[entry_key] = commit.entry
        if commit.state is not None:
            self.states[key] = commit.state
        if commit.authorization is not None:
            self.authorizations[(*key, commit.authorization.command_id)] = commit.authorization
        if commit.approval is not None:
            self.approvals[commit.approval.approval_id] = commit.approval
        return CommitResult(CommitStatus.COMMITTED)

    def approval(self, tenant_id: str, approval_id: str) -> Approval | None:
        found = self.approvals.get(approval_id)
        return found if found is not None and found.tenant_id == tenant_id else None

    def pending_approvals(self, tenant_id: str) -> list[Approval]:
        return sorted(
            (
                a
                for a in self.approvals.values()
                if a.tenant_id == tenant_id and a.status is ApprovalStatus.PENDING
            ),
            key=lambda a: a.expires_at,
        )

    def due_approvals(self, now: datetime) -> list[Approval]:
        due = [
            (a.sweep_key, a) for a in self.approvals.values() if a.sweep_key is not None and a.sweep_key < now
        ]
        return [approval for _, approval in sorted(due, key=lambda pair: pair[0])]

    def mark_announced(self, approval: Approval) -> None:
        self.calls += 1
        stored = self.approvals.get(approval.approval_id)
        if stored is not None and stored.status is approval.status:
            self.approvals[approval.approval_id] = stored.model_copy(update={"announced": True})

    def entries(self, tenant_id: str, run_id: str) -> list[LogEntry]:
        return sorted(
            self.logs.get((tenant_id, run_id), {}).values(), key=lambda entry: (entry.at, entry.version)
        )


@dataclass
class RecordingBus:
    """A bus that keeps what it is given to publish, and can fail the next calls."""

    published: list[Envelope] = field(default_factory=list)
    calls: int = 0
    fail_next: int = 0

    def publish(self, envelopes: Sequence[Envelope]) -> None:
        self.calls += 1
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("bus unavailable")
        self.published.extend(envelopes)


@dataclass
class ListQuarantine:
    """A quarantine that keeps what it is given in a list."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def put(
        self,
        *,
        stage: str,
        reason: str,
        field: str | None,
        body: str,
        message_id: str | None,
        raw_output: str | None = None,
    ) -> None:
        record = {"stage": stage, "reason": reason, "field": field, "body": body, "message_id": message_id}
        if raw_output is not None:
            record["raw_output"] = raw_output
        self.records.append(record)


@dataclass
class InMemoryRunner:
    """The idempotent runner in memory: each key's result, and the keys whose attempt lapsed."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    def bind(self, context: LambdaContext) -> None:
        return None

    payloads: dict[str, str] = field(default_factory=dict)
    lapsed: set[str] = field(default_factory=set)
    """Keys whose earlier attempt died in progress: the next run goes through ``after_lapse``."""

    def run(
        self,
        command: Envelope,
        work: Callable[[], dict[str, Any]],
        after_lapse: Callable[[], dict[str, Any]] | None = None,
        claim: ClaimRequest | None = None,
        dumped: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        key = f"{command.tenant_id}#{command.idempotency_key}"
        held = self.payloads.setdefault(key, canonical_json(command.payload))
        if held != canonical_json(command.payload):
            raise KeyHeldByAnotherCommand(f"{key} holds another payload")
        if key not in self.results:
            lapsed = key in self.lapsed
            self.lapsed.discard(key)
            try:
                self.results[key] = after_lapse() if lapsed and after_lapse is not None else work()
            except OutcomeInDoubt:
                self.lapsed.add(key)  # the in-progress record stays until its lease lapses
                raise
            except Exception:
                del self.payloads[key]  # as Powertools deletes the in-progress record
                raise
        return self.results[key]
