"""logs.*: the logs a console may read (the agent's own, SGLang's, every job's), by name."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from agent.errors import AgentError
from agent.jobs.supervisor import Supervisor
from agent.logs import NamedLog, log_size, read_chunk
from agent.protocol import (
    ErrorCode,
    LogChunk,
    LogInfo,
    LogReadParams,
    LogsList,
    LogsParams,
    PipelineConfig,
    Request,
)


class LogMethods:
    """Named logs: listed with their sizes, read in whole lines after an offset."""

    def __init__(
        self, daemon_log: Path, pipeline: Callable[[], PipelineConfig], supervisor: Supervisor
    ) -> None:
        self._daemon_log = daemon_log
        self._pipeline = pipeline
        self._supervisor = supervisor

    def named_logs(self) -> dict[str, NamedLog]:
        """The logs a console may read: the agent's own, SGLang's, and every job's output."""
        logs = {"agent": NamedLog("agent", self._daemon_log)}
        sglang_log = self._pipeline().sglang_log
        if sglang_log:
            logs["sglang"] = NamedLog("sglang", Path(sglang_log))
        for job in self._supervisor.jobs():
            if job.log_path:
                logs[f"job:{job.id}"] = NamedLog(f"job:{job.id}", Path(job.log_path))
        return logs

    def named_log(self, name: str) -> NamedLog:
        """One named log, or a not_found error listing the names there are."""
        logs = self.named_logs()
        if name not in logs:
            raise AgentError(
                ErrorCode.NOT_FOUND, f"no log {name!r}; logs: {', '.join(sorted(logs))}"
            )
        return logs[name]

    async def logs_list(self, request: Request[LogsParams]) -> LogsList:
        """Every named log with its size."""
        return LogsList(await asyncio.to_thread(self._log_list))

    def _log_list(self) -> tuple[LogInfo, ...]:
        return tuple(
            LogInfo(log.name, str(log.path), log_size(log.path))
            for log in self.named_logs().values()
        )

    async def logs_read(self, request: Request[LogReadParams]) -> LogChunk:
        """Whole lines of one log after an offset."""
        params = request.params
        log = await asyncio.to_thread(self.named_log, params.name)
        try:
            return await asyncio.to_thread(
                read_chunk, log, params.offset, params.inode, params.max_bytes
            )
        except OSError as exc:
            raise AgentError(ErrorCode.UNREADABLE, f"log {params.name}: {exc}") from None
