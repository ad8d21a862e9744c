"""The agent's one handler table: every protocol method, and the code that serves it.

Most methods are the daemon's (`AgentCore`); the subscriptions belong to one console's session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.core import AgentCore, Handler

if TYPE_CHECKING:
    from agent.session import Session


def handler_table(core: AgentCore, session: Session) -> dict[str, Handler]:
    """The handler of each method, for one session."""
    return {
        "hello": core.hello,
        "ping": core.ping,
        "snapshot": core.snapshot,
        "snapshot.watch": session.watch_snapshots,
        "jobs.list": core.jobs_list,
        "jobs.launch": core.jobs_launch,
        "jobs.stop": core.jobs_stop,
        "logs.list": core.logs_list,
        "logs.read": core.logs_read,
        "logs.subscribe": session.subscribe_log,
        "logs.unsubscribe": session.unsubscribe_log,
        "files.hash": core.files_hash,
        "files.install": core.files_install,
        "files.rollback": core.files_rollback,
        "audit.read": core.audit_read,
        "datasets.detail": core.datasets_detail,
        "tokenizer.check": core.tokenizer_check,
        "events.list": core.events_list,
    }
