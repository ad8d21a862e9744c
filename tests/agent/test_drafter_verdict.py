"""The drafter check's report is read as a peer's answer: bounded, each field checked."""

from __future__ import annotations

import json

import pytest

from agent.plans.drafter_checks import MAX_FIELDS, MAX_TEXT, failed_text, verdict_of

FIELD = {"name": "d2t/t2d", "ok": False, "found": "no d2t", "expected": "d2t[K]", "fix": "save it"}


def report(**changes: object) -> bytes:
    body = {"checkpoint": "/c", "layout": "specforge", "server": "sglang", "ok": False,
            "fields": [FIELD]} | changes  # fmt: skip
    return json.dumps(body).encode()


def test_a_report_is_read_field_by_field() -> None:
    verdict = verdict_of("/c", report(), b"")
    assert (verdict.ok, verdict.layout, verdict.server) == (False, "specforge", "sglang")
    assert failed_text(verdict) == "d2t/t2d: no d2t, expected d2t[K]"


@pytest.mark.parametrize(
    ("out", "err", "said"),
    [
        (b"", b"Traceback ...\nModuleNotFoundError: No module named 'safetensors'\n",
         "no report: ModuleNotFoundError: No module named 'safetensors'"),
        (b"not json", b"", "no report: Expecting value"),
        (report(ok="yes"), b"", "no report: its verdict is not true or false"),
        (report(fields=[FIELD | {"ok": 1}]), b"", "no report: field 'd2t/t2d': ok is 1"),
        (report(fields="none"), b"", "no report: "),
        (b"[" * 100_000 + b"]" * 100_000, b"", "no report: "),
    ],
)  # fmt: skip
def test_a_report_that_is_not_one_is_no_verdict(out: bytes, err: bytes, said: str) -> None:
    verdict = verdict_of("/c", out, err)
    assert verdict.ok is None
    assert verdict.note.startswith(said)


def test_a_flood_of_fields_and_long_texts_is_cut() -> None:
    long = FIELD | {"found": "x" * 100_000}
    verdict = verdict_of("/c", report(fields=[long] * 1000), b"")
    assert len(verdict.fields) == MAX_FIELDS
    assert len(verdict.fields[0].found) == MAX_TEXT


def test_the_verdicts_kept_are_bounded_and_the_one_shown_stays() -> None:
    from agent.plans.drafter_checks import KEPT, DrafterChecks
    from agent.protocol import DrafterCheck, PipelineConfig
    from agent.tasks import TaskOwner

    checks = DrafterChecks(TaskOwner("test"), PipelineConfig)
    shown = ("/c0",)
    checks._latest = shown
    for index in range(KEPT * 3):
        checks._keep((f"/c{index}",), DrafterCheck(f"/c{index}", True))
    assert len(checks._verdicts) == KEPT
    assert checks.latest() == DrafterCheck("/c0", True)
    assert (f"/c{KEPT * 3 - 1}",) in checks._verdicts
