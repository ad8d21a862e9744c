"""A job that fails carries its reason: the last line it wrote, safe and short.

The dashboard said "job inference (B3_math) exited with code 2" and the runner's clear reason
stayed in its log. Real daemon, real shims, real jobs that print and exit.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.protocol import (
    JOBS_LAUNCH,
    MAX_EXIT_REASON_CHARS,
    JobInfo,
    JobSpec,
    LaunchParams,
    PipelineConfig,
)
from console.link.agent_link import AgentLink
from console.link.local_link import open_local_link
from tests.support.operations import jobs_where

PY = sys.executable
HEAD = MAX_EXIT_REASON_CHARS * 2 // 5
LONG_REASON = (
    "what failed "
    + "x" * (HEAD - 12)
    + "…"
    + "x" * (MAX_EXIT_REASON_CHARS - HEAD - 12)
    + " what to do"
)
"""Cut in the middle: what failed at its head, what to do at its tail, both kept."""
SAYS = {
    "traceback": "import sys\nprint('working', flush=True)\nraise SystemExit('bad input: line 7')",
    "runner": "import sys; print('runner: the server refused the key in /k (HTTP 401)', "
    "file=sys.stderr); sys.exit(2)",
    "stamped": "import logging, sys; logging.basicConfig(format='%(asctime)s %(levelname)s "
    "%(message)s'); logging.error('disk \\x1b[31mfull\\x1b[0m'); print('\\n---\\n'); sys.exit(5)",
    "long": f"import sys; print('what failed ' + 'x' * {MAX_EXIT_REASON_CHARS * 3} + ' what to do'); "
    "sys.exit(1)",
    "silent": "import sys; sys.exit(3)",
    "longer than the tail": "import sys; print('what failed ' + 'x' * 6000 + ' what to do'); "
    "sys.exit(1)",
    "hostile": "import sys; print('\\x1b]0;owned\\x07bad \\u202ekey\\u200b\\x9b2J file\\x1b[2J'); "
    "sys.exit(1)",
    "fine": "print('all done')",
}
"""Each job's program: what it prints, and how it exits."""


@pytest.fixture
async def link(state_dir: Path) -> AsyncIterator[AgentLink]:
    jobs = {name: JobSpec((PY, "-c", code)) for name, code in SAYS.items()}
    jobs["missing"] = JobSpec(("/nonexistent/program", "--x"))
    agent = await open_local_link(state_dir, PipelineConfig(jobs=jobs))
    yield agent
    await agent.close()


async def ended(link: AgentLink, name: str) -> JobInfo:
    job: JobInfo = await link.call(JOBS_LAUNCH, LaunchParams(name), idempotency_key=name)
    found = await jobs_where(
        link, lambda js: any(j.id == job.id and j.ended_at is not None for j in js)
    )
    return next(j for j in found if j.id == job.id)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("traceback", "bad input: line 7"),
        ("runner", "the server refused the key in /k (HTTP 401)"),
        ("stamped", "ERROR disk full"),
        ("long", LONG_REASON),
        ("silent", None),
        ("missing", "cannot start '/nonexistent/program': No such file or directory"),
    ],
)
async def test_a_failed_job_carries_its_last_words_cleaned_and_cut(
    link: AgentLink, name: str, reason: str | None
) -> None:
    job = await ended(link, name)
    assert job.state == "failed"
    assert job.exit_reason == reason


async def test_a_job_that_exits_0_has_no_reason(link: AgentLink) -> None:
    job = await ended(link, "fine")
    assert (job.state, job.exit_code, job.exit_reason) == ("exited", 0, None)


async def test_a_last_line_longer_than_the_tail_read_still_gives_its_reason(
    link: AgentLink,
) -> None:
    job = await ended(link, "longer than the tail")
    reason = job.exit_reason or ""
    assert reason.startswith("…xxx")
    assert reason.endswith("x what to do"), "what to do, at the end of the line, is kept"
    assert len(reason) == MAX_EXIT_REASON_CHARS


async def test_a_last_line_of_escapes_and_invisible_characters_is_made_printable(
    link: AgentLink,
) -> None:
    job = await ended(link, "hostile")
    assert job.exit_reason == "bad key2J file"
