"""The agent reads the latest export's and evaluation's reports from their jobs' --out folders."""

from __future__ import annotations

import json
from pathlib import Path

from agent.probes.pipeline_reports import PipelineReports, out_dir
from agent.protocol import JobInfo

LEVEL = {"concurrency": 1, "tokens_per_s": 200.0, "baseline_tokens_per_s": 100.0, "speedup": 2.0,
         "accept_length": 2.9, "latency_p50_s": 0.5, "latency_p95_s": 0.7}  # fmt: skip


def job(kind: str, argv: tuple[str, ...], started: float, cwd: str | None = None) -> JobInfo:
    return JobInfo(f"{kind}-{started}", kind, kind, "exited", argv, started_at=started, cwd=cwd)


def test_out_dir_is_read_in_both_spellings() -> None:
    assert out_dir(("python", "-m", "x", "--out", "/o")) == "/o"
    assert out_dir(("python", "--out=/p")) == "/p"
    assert out_dir(("python", "--out")) is None


def test_the_latest_evaluation_is_read_and_a_broken_one_is_nothing(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    (tmp_path / "old" / "eval.json").write_text(json.dumps({"levels": [LEVEL], "verdict": "old"}))
    record = {"levels": [LEVEL], "verdict": "2.00× at concurrency 1: faster", "slower": False}
    (tmp_path / "new" / "eval.json").write_text(json.dumps(record))
    jobs = (job("evaluate", ("--out", "old"), 1.0, str(tmp_path)),
            job("evaluate", ("--out", str(tmp_path / "new")), 2.0))  # fmt: skip
    reports = PipelineReports()

    found = reports.evaluation(jobs)

    assert found is not None
    assert (found.job_id, found.verdict, found.levels[0].speedup) == (
        "evaluate-2.0",
        record["verdict"],
        2.0,
    )
    (tmp_path / "new" / "eval.json").write_text('{"levels": [{"concurrency": "many"}]')
    assert reports.evaluation(jobs) is None
    (tmp_path / "new" / "eval.json").write_text(
        json.dumps({"levels": [{"concurrency": 1}], "verdict": "x"})
    )
    assert reports.evaluation(jobs) is None  # fields missing: nothing, never an error
    assert reports.evaluation(jobs[:1]) is not None  # the relative --out, from the job's cwd
    assert reports.export(jobs) is None


def test_a_failed_export_is_read_with_its_first_difference_and_reason(tmp_path: Path) -> None:
    from agent.pipeline.export.__main__ import main
    from tests.support.export_data import KEEPS_TURNS, build_think_tokenizer, ids_of, write_jsonl
    from tests.support.export_data import response as answer

    vocab = build_think_tokenizer(tmp_path / "tok", KEEPS_TURNS)
    chat = [{"role": "user", "content": "why is the sum"}]
    write_jsonl(tmp_path / "d" / "B1" / "prompts.jsonl", [{"id": "a", "messages": chat}])
    write_jsonl(tmp_path / "d" / "B1" / "raw_responses.jsonl",
                [answer("a", ids_of(vocab, "the sum <|im_end|>"))])  # fmt: skip
    argv = ("--datasets-root", str(tmp_path / "d"), "--tokenizer", str(tmp_path / "tok"),
            "--out", str(tmp_path / "o"), "--chat-template", "qwen")  # fmt: skip
    assert main(list(argv)) == 1  # qwen adds a system prompt the model never saw
    failed = JobInfo("export-1", "export", "export", "failed", argv, started_at=1.0, exit_code=1)

    found = PipelineReports().export((failed,))

    assert found is not None
    assert found.roundtrip_flagged
    [dataset] = found.datasets
    assert dataset.first_mismatch.startswith("a at token 1 (the template adds a system prompt")


def test_the_new_evaluation_figures_are_read_and_a_bad_one_is_missing(tmp_path: Path) -> None:
    level = {
        **LEVEL,
        "accept_length_decode_steps": 2.8,
        "spec_accept_rate": 0.6,
        "warm_cache": True,
    }
    odd = {**LEVEL, "concurrency": 8, "accept_length_decode_steps": "NaN", "spec_accept_rate": True}
    (tmp_path / "eval.json").write_text(json.dumps({"levels": [level, odd], "verdict": "v"}))
    found = PipelineReports().evaluation((job("evaluate", ("--out", str(tmp_path)), 1.0),))
    assert found is not None
    first, second = found.levels
    assert (first.accept_length_decode_steps, first.spec_accept_rate, first.warm_cache) == (
        2.8, 0.6, True,
    )  # fmt: skip
    assert (second.accept_length_decode_steps, second.spec_accept_rate, second.warm_cache) == (
        None, None, False,
    )  # fmt: skip


def test_domains_and_lengths_are_read_and_a_row_that_is_not_one_is_left_out(
    tmp_path: Path,
) -> None:
    row = {"kind": "domain", "name": "math", "prompts": 16, "concurrency": 1,
           "tokens_per_s": 90.0, "baseline_tokens_per_s": 100.0, "speedup": 0.9,
           "accept_length": 1.6, "spec_accept_rate": 0.2, "mean_prompt_tokens": 120.5}  # fmt: skip
    bucket = {**row, "kind": "length", "name": "2,048+ tokens\x1b[2J", "speedup": None}
    broken = [{**row, "prompts": -1}, {**row, "tokens_per_s": "fast"}, "x", {"name": "n"}]
    record = {"levels": [LEVEL], "verdict": "v", "domains": [row, *broken],
              "lengths": [bucket] * 70}  # fmt: skip
    (tmp_path / "eval.json").write_text(json.dumps(record))
    found = PipelineReports().evaluation((job("evaluate", ("--out", str(tmp_path)), 1.0),))
    assert found is not None, "a bad slice never breaks the report"
    first, second = found.slices[:2]
    assert (first.kind, first.name, first.speedup, first.mean_prompt_tokens) == (
        "domain", "math", 0.9, 120.5,
    )  # fmt: skip
    assert (second.kind, second.name, second.speedup) == ("length", "2,048+ tokens[2J", None)
    assert len(found.slices) == 64, "bounded"
