"""A capture that will not fit is refused by the agent, and `t` asks before it starts one anyway.

A real agent (local link) with an export whose report counts 100,000 tokens, and a hidden-states
job whose 1 MiB quota cannot hold the 8 MB they need: the launch is refused with `no_room` and
the figures; `force` starts it; in the dashboard `t` shows the refusal in a confirm and starts it
only once confirmed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.protocol import (
    JOBS_LAUNCH,
    JOBS_LIST,
    JOBS_STOP,
    JobInfo,
    JobsParams,
    LaunchParams,
    StopParams,
)
from console.link.agent_link import AgentLink, AgentRequestError
from console.link.local_link import open_local_link
from console.ui.screens.confirm import ConfirmScreen
from tests.support.capture_jobs import capture_pipeline
from tests.support.local_app import SIZE
from tests.support.local_host_app import configured_app
from tests.support.operations import jobs_where, local_link
from tests.support.screen import wait_for


async def exported(link: AgentLink) -> None:
    """Run the export job (its report is already there) and wait for its end."""
    await link.call(JOBS_LAUNCH, LaunchParams("export"), idempotency_key="export-1")
    await jobs_where(
        link, lambda jobs: any(j.name == "export" and j.state == "exited" for j in jobs), 30
    )


async def test_the_agent_refuses_a_capture_that_will_not_fit_unless_forced(
    tmp_path: Path, state_dir: Path
) -> None:
    async with local_link(state_dir, capture_pipeline(tmp_path)) as link:
        await exported(link)
        with pytest.raises(AgentRequestError) as refused:
            await link.call(JOBS_LAUNCH, LaunchParams("hs"), idempotency_key="hs-1")
        assert refused.value.code == "no_room"
        detail = refused.value.detail
        assert detail.startswith("the hidden states will not fit: hs would write 7.7 MiB (")
        assert "the 1.0 MiB quota of" in detail
        assert "`start --force`" in detail
        forced: JobInfo = await link.call(
            JOBS_LAUNCH, LaunchParams("hs", force=True), idempotency_key="hs-2"
        )
        assert forced.name == "hs"
        await link.call(JOBS_STOP, StopParams(forced.id), idempotency_key="stop", timeout_s=60)


async def test_t_shows_the_refusal_and_starts_the_capture_only_once_confirmed(
    tmp_path: Path, state_dir: Path
) -> None:
    pipeline = capture_pipeline(tmp_path)
    setup = await open_local_link(state_dir, pipeline)
    await exported(setup)
    await setup.close()
    app = configured_app(state_dir, pipeline)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.connections["gpu"].link is not None)
        await pilot.press("t")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "hs will not fit: start it anyway?" in str(
            app.screen.query_one("#confirm-title").render()
        )
        text = str(app.screen.query_one("#confirm-text").render())
        assert "quota" in text
        assert "stopped (its stop signal) before the room runs out" in text
        link = app.connections["gpu"].link
        assert link is not None
        listed = (await link.call(JOBS_LIST, JobsParams())).jobs
        assert not any(j.name == "hs" for j in listed), "nothing started before the confirm"
        await pilot.click("#confirm")
        await jobs_where(
            link, lambda jobs: any(j.name == "hs" and j.state == "running" for j in jobs), 30
        )
        for job in (await link.call(JOBS_LIST, JobsParams())).jobs:
            if job.name == "hs":
                await link.call(JOBS_STOP, StopParams(job.id), idempotency_key="stop-hs",
                                timeout_s=60)  # fmt: skip
