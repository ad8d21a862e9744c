"""A server whose job the agent is starting reads "starting" in its panel, not "down".

The demo's first dashboard said "unreachable: ... is the server up, on that port?" while the demo
was starting it; the agent's alert already said "starting" (agent/probes/cache.py), with the
same grace (SERVER_STARTING_GRACE_S).
"""

from __future__ import annotations

from agent.protocol import SERVER_STARTING_GRACE_S, JobInfo, ServerStats
from console.model.formatting import server_text, starting_server

DOWN = ServerStats("http://127.0.0.1:30000", False, "nothing listens on 127.0.0.1:30000")


def server(state: str, started_at: float) -> JobInfo:
    return JobInfo("sglang-1", "sglang", "server", state, (), started_at=started_at)  # type: ignore[arg-type]


def test_a_young_server_job_makes_a_down_reading_starting() -> None:
    young = server("running", 100.0)
    assert starting_server((young,), 130.0) == young
    assert server_text(DOWN, young) == "SGLang http://127.0.0.1:30000: starting (job sglang)"


def test_past_its_grace_or_ended_a_server_that_does_not_answer_is_down() -> None:
    old = server("running", 100.0)
    assert starting_server((old,), 100.0 + SERVER_STARTING_GRACE_S + 1) is None
    assert starting_server((server("failed", 100.0),), 130.0) is None
    assert server_text(DOWN, None).startswith("SGLang http://127.0.0.1:30000: down nothing listens")
    healthy = ServerStats("http://127.0.0.1:30000", True)
    assert "healthy" in server_text(healthy, server("running", 100.0)), "an answer is an answer"


def test_a_run_waiting_for_a_server_that_is_up_again_is_resuming() -> None:
    """The server panel said "healthy" while the datasets beside it said "waiting for server":
    the runner checks again on its own schedule; until then it is resuming."""
    from agent.protocol import DatasetProgress
    from console.model.formatting import dataset_row

    waiting = DatasetProgress(
        "B1", 10, 3, 300, 1000, status="waiting_for_server", writer_active=True
    )
    assert dataset_row(waiting, None, server_up=True).status == "resuming (server back)"
    assert dataset_row(waiting, None, server_up=False).status == "waiting for server"
