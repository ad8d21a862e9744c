"""Operations: what the agent carries out in several steps on its own, whatever the link does.

A console asks once (a redeploy, a start on many datasets, the autopilot) and then follows: the
agent records each step before it takes it, finishes or rolls back after any link loss or its
own restart, and every console sees the same progress in the snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

OperationKind = Literal["redeploy", "generate", "sequence", "sweep"]
OperationState = Literal["running", "done", "failed", "rolled_back"]
"""rolled_back: the new code did not run, and the job runs its old code again."""
StepState = Literal["running", "done", "failed", "skipped"]
ENDED_OPERATION_STATES: tuple[OperationState, ...] = ("done", "failed", "rolled_back")


@dataclass(frozen=True, slots=True)
class StagedFile:
    """A file the console uploaded beside its target, for the agent to verify and swap in."""

    target: str
    staged: str
    sha256: str
    mode: int = 0o644


@dataclass(frozen=True, slots=True)
class RedeployParams:
    """Stop job `job_id`, swap in the staged files, start it again, watch it run the new code."""

    job_id: str
    argv: tuple[str, ...] | None = None
    """An edited argv for the new run only (still a list: never a shell string)."""
    files: tuple[StagedFile, ...] = ()


@dataclass(frozen=True, slots=True)
class GenerateParams:
    """Start per-dataset job `job` on each of `datasets`, one writer each."""

    job: str
    datasets: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DraftSetting:
    """One point of a draft-settings sweep; None leaves the server job's own value.

    SGLang's --speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens;
    vLLM's `num_speculative_tokens` in --speculative-config.
    """

    steps: int | None = None
    topk: int | None = None
    draft_tokens: int | None = None
    speculative_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class SweepParams:
    """Serve the drafter at each setting in turn, evaluate it, stop it; name the best per level."""

    server_job: str
    evaluate_job: str
    settings: tuple[DraftSetting, ...]


SequenceAction = Literal["stop", "wait_gpus", "start"]


@dataclass(frozen=True, slots=True)
class SequenceStep:
    """One step of a sequence: stop job `job_id`, wait for the GPUs, or start job `job`."""

    action: SequenceAction
    job_id: str | None = None
    job: str | None = None
    dataset: str | None = None
    force: bool = False
    """A start a person confirmed past a refusal that may be overruled (a failed drafter check)."""


@dataclass(frozen=True, slots=True)
class SequenceParams:
    """Steps to take in order, each once the one before it is done.

    A GPU hand-over: stop the holders, wait for the memory, start the job. B: the servers, then
    the evaluation.
    """

    subject: str
    steps: tuple[SequenceStep, ...]


@dataclass(frozen=True, slots=True)
class OperationStep:
    """One step of an operation, as it stands."""

    name: str
    state: StepState
    detail: str
    at: float


@dataclass(frozen=True, slots=True)
class OperationInfo:
    """An operation: what was asked, each step so far, and how it ended."""

    id: str
    kind: OperationKind
    subject: str
    """What it acts on, in words: "inference (B3_math)"."""
    state: OperationState
    steps: tuple[OperationStep, ...]
    started_at: float
    ended_at: float | None = None
    asked_by: str | None = None
    outcome: str = ""
    """One line once it ended: where the run stands and what to do, if anything."""
    job_id: str | None = None
    new_job_id: str | None = None

    @property
    def ended(self) -> bool:
        """True once it will take no further step."""
        return self.state in ENDED_OPERATION_STATES


@dataclass(frozen=True, slots=True)
class OperationsParams:
    """The operation `operation_id`, or every recent one when None."""

    operation_id: str | None = None


@dataclass(frozen=True, slots=True)
class OperationsList:
    """Operations under way and those ended lately, oldest first."""

    operations: tuple[OperationInfo, ...]
