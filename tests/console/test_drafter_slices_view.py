"""The drafter panel and the report show each domain and prompt-length bucket."""

from __future__ import annotations

from agent.protocol import DrafterEvaluation, EvalLevel, EvalSlice
from console.cli.report import evaluation_section
from console.model.drafter_view import evaluation_lines

LEVEL = EvalLevel(1, 180.0, 100.0, 1.8, 2.6, 0.5, 0.7)
SLICES = (
    EvalSlice("domain", "math", 16, 1, 90.0, 100.0, 0.9, 1.6, 0.2),
    EvalSlice("domain", "code", 16, 1, 250.0, 100.0, 2.5, 3.4, 0.8),
    EvalSlice("length", "2,048+ tokens", 8, 1, 95.0, 100.0, 0.95, 1.7, None),
)
EVALUATION = DrafterEvaluation("e", "/o", 0.0, "1.80× at concurrency 1: faster; loses on domain math "
                               "(0.90×)", False, (LEVEL,), SLICES)  # fmt: skip


def test_each_slice_has_its_line_and_they_fold_to_one_where_room_is_short() -> None:
    lines = evaluation_lines(EVALUATION)
    assert lines[-3:] == [
        "  domain math (16 prompts, c=1): 0.90× · accept 1.60 · drafts 20% accepted",
        "  domain code (16 prompts, c=1): 2.50× · accept 3.40 · drafts 80% accepted",
        "  2,048+ tokens (8 prompts, c=1): 0.95× · accept 1.70",
    ]
    short = evaluation_lines(EVALUATION, height=3)
    assert short[-1] == "  math 0.90× · code 2.50× · 2,048+ tokens 0.95×"


def test_the_report_has_a_table_of_slices() -> None:
    section = "\n".join(evaluation_section(EVALUATION))
    assert "## Drafter" in section
    assert "| 1 | 180 | 100 | 1.80 | 2.60 |" in section
    assert "| domain math | 16 | 1 | 0.90 | 1.60 | 20% |" in section
    assert "| 2,048+ tokens | 8 | 1 | 0.95 | 1.70 | — |" in section
    assert evaluation_section(None) == []
