"""A dataset's row says the same cap whatever else its run stops at.

B3's responses read "0 / 1,000" under `--max-samples 1000` and "70 / 1,200" once `R` had added
`--token-budget` to the same `--max-samples 1000`: the cap came from the stop condition's kind.
"""

from __future__ import annotations

from agent.protocol import DatasetProgress
from console.model.formatting import dataset_row


def test_a_budgeted_run_capped_by_samples_shows_its_sample_cap() -> None:
    """Beside its prompts: one denominator during the run and after it."""
    capped = DatasetProgress("B3_math", 1200, 70, 9_000, 50_000, status="running",
                             stop_condition="budget", target_responses=1000)  # fmt: skip
    assert dataset_row(capped).responses == "70 / 1,200 · cap 1,000"
    ended = DatasetProgress("B3_math", 1200, 507, 15_200, 15_000, status="over_budget")
    assert dataset_row(ended).responses == "507 / 1,200"


def test_a_dataset_with_no_target_counts_against_its_prompts() -> None:
    idle = DatasetProgress("B4_code", 1200, 0, 0, 50_000, status="pending")
    assert dataset_row(idle).responses == "0 / 1,200"
