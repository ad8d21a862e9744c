"""The agent's own state folder full: the checks its tests and the state_full scenario share.

A launch whose records do not fit is refused with a storage error that names the path in the
state folder, and no job process runs that the agent does not list.
"""

from __future__ import annotations

from pathlib import Path

from agent.host.procfs import all_pids, command_line, process_info
from agent.protocol import ErrorCode
from console.link.agent_link import AgentRequestError

PAGE = 4096


def storage_refusal_problem(answer: object, state_dir: Path) -> str | None:
    """What is wrong, if anything, with `answer` as the refusal of a launch that did not fit."""
    if not isinstance(answer, AgentRequestError) or answer.code != ErrorCode.STORAGE:
        return f"the launch was answered {answer!r}, not a storage error"
    if str(state_dir) not in answer.detail:
        return f"the storage error names no path in the state folder: {answer}"
    return None


def job_processes(marker: str) -> set[int]:
    """The live processes that have `marker` among their arguments (a job's own, unique path)."""
    return {
        pid for pid in all_pids()
        if (info := process_info(pid)) is not None and info.alive and marker in command_line(pid)
    }  # fmt: skip
