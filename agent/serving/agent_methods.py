"""The requests about the agent itself, and the method objects of files, logs and records.

Each handler takes a typed params dataclass and returns a typed result dataclass, using the
daemon's parts (`agent.wiring.AgentParts`); jobs and operations have their handlers on their own
parts, routed in `handlers.py`.
"""

from __future__ import annotations

import os
import socket
import time
import urllib.parse

from agent.bundle import running_bundle_sha256
from agent.errors import AgentError
from agent.plans.tokenizer_check import check_tokenizer
from agent.protocol import (
    AGENT_VERSION,
    PROTOCOL_VERSION,
    AutopilotStatus,
    AutopilotStatusParams,
    DrafterCheck,
    DrafterCheckParams,
    ErrorCode,
    HelloParams,
    HelloResult,
    NotifyStatus,
    NotifyStatusParams,
    PingParams,
    PingResult,
    PipelineApplied,
    PipelineApplyParams,
    PipelineConfig,
    Request,
    Snapshot,
    SnapshotParams,
    TokenizerCheck,
    TokenizerCheckParams,
)
from agent.serving.file_methods import FileMethods
from agent.serving.log_methods import LogMethods
from agent.serving.record_methods import RecordMethods
from agent.wiring import PROBE_IDLE_S, AgentParts

FIRST_PROBE_WAIT_S = 10.0
"""How long a console's snapshot request waits for the agent's first probe of its server."""


class AgentMethods:
    """What a console asks of the agent, answered from the daemon's parts."""

    def __init__(self, parts: AgentParts) -> None:
        self.parts = parts
        config = parts.config.current
        self.files = FileMethods(config, parts.operations.staged_paths)
        self.logs = LogMethods(parts.paths.daemon_log, config, parts.supervisor)
        self.records = RecordMethods(config, parts.jobs.dataset_names, parts.history, parts.audit)

    async def hello(self, request: Request[HelloParams]) -> HelloResult:
        """Check the console speaks our protocol, and compare its config with the one we run.

        Looking never changes what the box does: the console's config is taken only by an agent
        that runs none yet; otherwise the answer names how it differs, and only
        `pipeline.apply`, asked for on purpose, replaces it.
        """
        params, config = request.params, self.parts.config
        if params.protocol_version != PROTOCOL_VERSION:
            raise AgentError(
                ErrorCode.UNSUPPORTED_VERSION,
                f"console {params.client_version} speaks protocol {params.protocol_version}, "
                f"agent {AGENT_VERSION} speaks protocol {PROTOCOL_VERSION}; "
                "run the same eagle-console version on both sides",
            )
        wanted = params.pipeline
        if wanted is not None:
            _check_notify(wanted)
        taken = wanted is not None and not config.kept
        if wanted is not None and taken:
            config.run(wanted)
        return HelloResult(
            protocol_version=PROTOCOL_VERSION,
            agent_version=AGENT_VERSION,
            bundle_sha256=running_bundle_sha256(),
            pid=os.getpid(),
            host_name=socket.gethostname(),
            started_at=self.parts.started_at,
            pipeline_taken=taken,
            pipeline_differences=config.differences_from(wanted),
        )

    async def pipeline_apply(
        self, request: Request[PipelineApplyParams], client: str
    ) -> PipelineApplied:
        """Run the console's config from now on (asked for on purpose); names what changed."""
        wanted, config = request.params.pipeline, self.parts.config
        _check_notify(wanted)
        differences = config.differences_from(wanted)
        if differences or not config.kept:
            config.run(wanted)
        if differences:
            message = f"config applied by {client}: {'; '.join(differences)}"
            await self.parts.history.add_event(
                "config_applied", "pipeline", message, asked_by=client
            )
        return PipelineApplied(differences)

    def refuse_if_differs(self, wanted: PipelineConfig | None) -> None:
        """Refuse to start anything for a console whose config is not the one we run.

        It would start the jobs of our config while its user reads theirs: the stale-copy
        mistake this console exists to prevent.
        """
        differences = self.parts.config.differences_from(wanted)
        if differences:
            raise AgentError(
                ErrorCode.CONFIG_DIFFERS,
                f"this console's config differs from the one the agent runs "
                f"({'; '.join(differences)}); nothing was started: apply it on purpose first "
                "(`eagle-console apply HOST`), or use the config the agent runs",
            )

    async def ping(self, request: Request[PingParams]) -> PingResult:
        """The agent's clock."""
        return PingResult(agent_time=time.time())

    async def tokenizer_check(self, request: Request[TokenizerCheckParams]) -> TokenizerCheck:
        """Load the configured tokenizer with the configured trust setting, bounded in time."""
        return await check_tokenizer(self.parts.config.pipeline, request.params.timeout_s)

    async def drafter_check(self, request: Request[DrafterCheckParams]) -> DrafterCheck:
        """Check a drafter checkpoint now: the path asked for, else the one to serve."""
        parts = self.parts
        return await parts.drafter_checks.check_now(await parts.snapshot_now(), request.params.path)

    async def autopilot_status(self, request: Request[AutopilotStatusParams]) -> AutopilotStatus:
        """Where the autopilot stands, with the restarts counted from a fresh snapshot."""
        return self.parts.autopilot.status(await self.parts.snapshot_now())

    async def notify_status(self, request: Request[NotifyStatusParams]) -> NotifyStatus:
        """How the webhook has fared since the daemon started (for `doctor`)."""
        return self.parts.notifier.status()

    async def snapshot(self, request: Request[SnapshotParams]) -> Snapshot:
        """Everything the dashboard shows, now.

        Asked right after the agent starts, it waits (10 s at most) for the first probe of the
        configured server, so the first `status --json` does not say `"server": null`.
        """
        parts = self.parts
        parts.probes.refresh_if_stale(parts.config.pipeline, PROBE_IDLE_S)
        await parts.probes.first_reading(FIRST_PROBE_WAIT_S)
        return await parts.snapshot_now()


def _check_notify(pipeline: PipelineConfig) -> None:
    notify = pipeline.notify
    if notify is not None and urllib.parse.urlsplit(notify.url).scheme not in ("http", "https"):
        raise AgentError(  # the console's config refuses it too; a peer's may not
            ErrorCode.INVALID_PARAMS, "notify.url must be an http or https URL"
        )
