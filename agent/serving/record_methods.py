"""What the agent has recorded, asked for by a console: a dataset's detail, the timeline, the audit."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from agent.datasets.detail import dataset_detail
from agent.errors import AgentError
from agent.journal.audit import AuditLog
from agent.protocol import (
    AuditParams,
    AuditResult,
    DatasetDetail,
    DetailParams,
    ErrorCode,
    EventsList,
    EventsParams,
    PipelineConfig,
    Request,
)
from agent.watch.history import History, HistoryUnavailable

TOKEN_CURVE_SPAN_S = 24 * 3600.0
"""The dataset detail's tokens-over-time curve covers this much of the history."""
TOKEN_CURVE_POINTS = 240


class RecordMethods:
    """datasets.detail, events.list and audit.read: read from the files, the history and the audit."""

    def __init__(
        self,
        pipeline: Callable[[], PipelineConfig],
        dataset_names: Callable[[], set[str]],
        history: History,
        audit: AuditLog,
    ) -> None:
        self._pipeline = pipeline
        self._dataset_names = dataset_names
        self._history = history
        self._audit = audit

    async def datasets_detail(self, request: Request[DetailParams]) -> DatasetDetail:
        """Latest responses, finish reasons, length histogram and errors of one dataset."""
        params = request.params
        datasets = self._pipeline().datasets
        if datasets is None or params.name not in self._dataset_names():
            raise AgentError(
                ErrorCode.NOT_FOUND, f"no dataset {params.name!r} under the datasets root"
            )
        folder = Path(datasets.root) / params.name
        try:
            detail = await asyncio.to_thread(
                dataset_detail, params.name, folder, datasets.responses_file, params.recent
            )
        except OSError as exc:
            raise AgentError(ErrorCode.UNREADABLE, f"dataset {params.name}: {exc}") from None
        since = time.time() - TOKEN_CURVE_SPAN_S
        try:  # a history that cannot be read costs the curve, never the detail
            curve = await asyncio.to_thread(
                self._history.token_curve, params.name, since, TOKEN_CURVE_POINTS
            )
        except HistoryUnavailable:
            curve = ()
        budget = datasets.budgets.get(params.name, datasets.budget)
        return replace(detail, tokens_over_time=curve, budget=budget)

    async def events_list(self, request: Request[EventsParams]) -> EventsList:
        """The timeline of the last `since_s` seconds, from the history."""
        params = request.params
        since = time.time() - params.since_s
        try:
            return await asyncio.to_thread(self._history.timeline, since, params.limit)
        except HistoryUnavailable as exc:
            raise AgentError(ErrorCode.UNAVAILABLE, str(exc)) from None

    async def audit_read(self, request: Request[AuditParams]) -> AuditResult:
        """The newest audit entries."""
        return AuditResult(tuple(await asyncio.to_thread(self._audit.last, request.params.limit)))
