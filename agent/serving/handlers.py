"""The agent's one handler table: every protocol method, and the code that serves it.

Most methods are answered from the daemon's parts (`AgentMethods`, and the jobs' and operations'
own handlers); the subscriptions belong to one console's session.
Each entry goes through `route`, so mypy checks that a handler takes its method's params and
returns its method's result; the table itself forgets those types, as any table of mixed
methods must, and the decoder has already checked the params against the same method.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from agent.host import autostart
from agent.protocol import (
    AUDIT_READ,
    AUTOPILOT_CONTROL,
    AUTOPILOT_STATUS,
    AUTOSTART_SET,
    AUTOSTART_STATUS,
    DATASETS_DETAIL,
    DRAFTER_CHECK,
    EVENTS_LIST,
    FILES_HASH,
    FILES_INSTALL,
    FILES_ROLLBACK,
    HELLO,
    JOBS_LAUNCH,
    JOBS_LIST,
    JOBS_STOP,
    LOGS_LIST,
    LOGS_READ,
    LOGS_SUBSCRIBE,
    LOGS_UNSUBSCRIBE,
    NOTIFY_STATUS,
    OPERATIONS_GENERATE,
    OPERATIONS_LIST,
    OPERATIONS_REDEPLOY,
    OPERATIONS_SEQUENCE,
    OPERATIONS_SWEEP,
    PING,
    PIPELINE_APPLY,
    SNAPSHOT,
    SNAPSHOT_WATCH,
    TOKENIZER_CHECK,
    AnyMethod,
    AutopilotParams,
    Done,
    LogSubscribeParams,
    LogUnsubscribeParams,
    Method,
    PipelineConfig,
    Request,
    SequenceParams,
    WatchParams,
)
from agent.serving.agent_methods import AgentMethods

Handler = Callable[[Request[Any]], Awaitable[object]]
"""A handler whose params type is not known statically: what a table of mixed methods holds."""


class Session(Protocol):
    """What the handlers use of one console's session: its subscriptions and who it is."""

    client: str
    pipeline: PipelineConfig | None
    """The config this console sent at hello (None: it sent none)."""

    async def watch_snapshots(self, request: Request[WatchParams]) -> Done:
        """Send snapshots to this console every interval."""
        ...

    async def subscribe_log(self, request: Request[LogSubscribeParams]) -> Done:
        """Send a log's new lines to this console."""
        ...

    async def unsubscribe_log(self, request: Request[LogUnsubscribeParams]) -> Done:
        """Stop sending a log's lines."""
        ...


P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Route:
    """One method and the handler that serves it."""

    method: AnyMethod
    handler: Handler


def route(method: Method[P, R], handler: Callable[[Request[P]], Awaitable[R]]) -> Route:
    """Pair `method` with `handler`, checked by mypy to take its params and return its result."""
    return Route(method, handler)


def routes(agent: AgentMethods, session: Session) -> tuple[Route, ...]:
    """Every method the agent serves, with its handler, for one session."""
    operations = agent.parts.operations
    return (
        route(HELLO, agent.hello),
        route(PING, agent.ping),
        route(SNAPSHOT, agent.snapshot),
        route(SNAPSHOT_WATCH, session.watch_snapshots),
        route(JOBS_LIST, agent.parts.jobs.jobs_list),
        route(JOBS_LAUNCH, with_config(agent, session, agent.parts.jobs.jobs_launch)),
        route(JOBS_STOP, agent.parts.jobs.jobs_stop),
        route(LOGS_LIST, agent.logs.logs_list),
        route(LOGS_READ, agent.logs.logs_read),
        route(LOGS_SUBSCRIBE, session.subscribe_log),
        route(LOGS_UNSUBSCRIBE, session.unsubscribe_log),
        route(FILES_HASH, agent.files.files_hash),
        route(FILES_INSTALL, agent.files.files_install),
        route(FILES_ROLLBACK, agent.files.files_rollback),
        route(AUDIT_READ, agent.records.audit_read),
        route(DATASETS_DETAIL, agent.records.datasets_detail),
        route(TOKENIZER_CHECK, agent.tokenizer_check),
        route(DRAFTER_CHECK, agent.drafter_check),
        route(EVENTS_LIST, agent.records.events_list),
        route(NOTIFY_STATUS, agent.notify_status),
        route(OPERATIONS_REDEPLOY, started(agent, session, operations.redeploy)),
        route(OPERATIONS_GENERATE, started(agent, session, operations.generate)),
        route(OPERATIONS_SEQUENCE, started(agent, session, operations.sequence, _sequence_starts)),
        route(OPERATIONS_SWEEP, started(agent, session, operations.sweep)),
        route(OPERATIONS_LIST, operations.listing),
        route(AUTOPILOT_STATUS, agent.autopilot_status),
        route(
            AUTOPILOT_CONTROL,
            started(agent, session, agent.parts.autopilot.control, _autopilot_starts),
        ),
        route(AUTOSTART_STATUS, autostart.handle_status(agent.parts.paths.root)),
        route(AUTOSTART_SET, autostart.handle_set(agent.parts.paths.root)),
        route(PIPELINE_APPLY, asked_by(session, agent.pipeline_apply)),
    )


def asked_by(
    session: Session, handler: Callable[[Request[P], str], Awaitable[R]]
) -> Callable[[Request[P]], Awaitable[R]]:
    """`handler` told which console asked (for the record of an operation it starts)."""

    async def handle(request: Request[P]) -> R:
        return await handler(request, session.client)

    return handle


def started(
    agent: AgentMethods,
    session: Session,
    handler: Callable[[Request[P], str], Awaitable[R]],
    starts: Callable[[P], bool] = lambda params: True,
) -> Callable[[Request[P]], Awaitable[R]]:
    """An operation's `handler`: told which console asked, and refused as `with_config` says."""
    return with_config(agent, session, asked_by(session, handler), starts)


def with_config(
    agent: AgentMethods,
    session: Session,
    handler: Callable[[Request[P]], Awaitable[R]],
    starts: Callable[[P], bool] = lambda params: True,
) -> Callable[[Request[P]], Awaitable[R]]:
    """`handler`, refused when it `starts` jobs for a console whose config is not the agent's.

    The jobs started would be those of the agent's config, not the ones its user reads.
    """

    async def handle(request: Request[P]) -> R:
        if starts(request.params):
            agent.refuse_if_differs(session.pipeline)
        return await handler(request)

    return handle


def _sequence_starts(params: SequenceParams) -> bool:
    return any(step.action == "start" for step in params.steps)


def _autopilot_starts(params: AutopilotParams) -> bool:
    return params.action != "pause"


def handler_table(agent: AgentMethods, session: Session) -> dict[AnyMethod, Handler]:
    """The handler of each method, for one session, keyed by the method constant."""
    return {each.method: each.handler for each in routes(agent, session)}
