"""Answers cut at max_new_tokens, counted from the records while a run writes, and the warning.

Counted in every form a record gives its finish reason (the runner's string, SGLang's object, only
meta_info's), each id once, complete lines only, resumed across an agent restart; the warning
waits for enough answers, names the cap and the two ways out, and reaches the webhook.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from agent.datasets.finish_reasons import cut_at_length, finish_reason
from agent.datasets.progress import MIN_RESPONSES_TO_JUDGE_CUTS, dataset_alerts
from agent.datasets.scan_keeper import ScanKeeper
from agent.datasets.tracker import DatasetTracker, ResponseCounter
from agent.pipeline.export.quality import DROP_POLICIES
from agent.pipeline.inference.options import build_parser
from agent.protocol import Alert, DatasetProgress, DatasetsConfig, Snapshot
from agent.watch.scan_store import ScanStore
from tests.support.datasets import write_prompts
from tests.support.hostile_hooks import sending_to, settled


def record(rid: str, compact: bool = True, **fields: Any) -> str:
    """A response line with `fields` after its ids, compact as the runner writes or spaced."""
    line = {"id": rid, "output_ids": [1, 2, 3], "completion_tokens": 3, **fields}
    return json.dumps(line, separators=(",", ":") if compact else None) + "\n"


def cut(rid: str) -> str:
    return record(rid, finish_reason="length")


def whole(rid: str) -> str:
    return record(rid, finish_reason="stop")


def counted(path: Path, text: str) -> ResponseCounter:
    path.write_text(text)
    counter = ResponseCounter(path)
    counter.update()
    return counter


def append(path: Path, text: str) -> None:
    with path.open("a") as handle:
        handle.write(text)


def test_every_form_of_a_length_finish_is_counted(tmp_path: Path) -> None:
    sglang_object = {"type": "length", "length": 4096}
    lines = [
        cut("runner"),
        record("spaced", compact=False, finish_reason="length"),
        record("sglang", finish_reason=sglang_object),
        record("meta_only", meta_info={"id": "rid-1", "finish_reason": sglang_object}),
        record("meta_string", meta_info={"finish_reason": "length"}),
        '{"output_ids": [1], "finish_reason": "length", "id": "keys_reordered"}\n',
        whole("stopped"),
        record("meta_stop", meta_info={"finish_reason": {"type": "stop", "matched": 2}}),
        record("top_stop_wins", finish_reason="stop", meta_info={"finish_reason": "length"}),
        record("no_reason"),
        record("abort", finish_reason={"type": "abort"}),
    ]
    counter = counted(tmp_path / "raw_responses.jsonl", "".join(lines))
    assert (counter.responses, counter.truncated_responses) == (11, 6)


def test_a_torn_tail_is_counted_once_it_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    counter = counted(path, cut("a") + cut("b")[:-9])
    assert (counter.responses, counter.truncated_responses) == (1, 1)
    append(path, cut("b")[-9:])
    counter.update()
    assert (counter.responses, counter.truncated_responses) == (2, 2)


def test_a_duplicate_id_counts_once_as_its_first_record_says(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    counter = counted(path, cut("a") + cut("a") + whole("b") + cut("b"))
    assert (counter.responses, counter.truncated_responses) == (2, 1)
    append(path, cut("a") + cut("c"))
    counter.update()
    assert (counter.responses, counter.truncated_responses) == (3, 2)


def test_appends_are_counted_and_a_cut_file_is_counted_again(tmp_path: Path) -> None:
    path = tmp_path / "raw_responses.jsonl"
    counter = counted(path, cut("a") + whole("b"))
    append(path, cut("c") + cut("d") + whole("e"))
    counter.update()
    assert (counter.responses, counter.truncated_responses) == (5, 3)
    path.write_text(whole("a"))
    counter.update()
    assert (counter.responses, counter.truncated_responses) == (1, 0)


def test_the_complete_record_of_a_glued_line_is_counted_and_the_fragment_is_not(
    tmp_path: Path,
) -> None:
    glued = cut("torn")[:20] + cut("kept") + whole("next") + "{garbage\n"
    counter = counted(tmp_path / "raw_responses.jsonl", glued)
    assert (counter.responses, counter.truncated_responses) == (2, 1)
    assert counter.seen_ids == {"kept", "next"}
    assert counter.corrupt_lines == 2


def test_the_reader_takes_only_a_string_or_an_objects_type() -> None:
    assert finish_reason({"finish_reason": {"type": "stop"}}) == "stop"
    assert finish_reason({"finish_reason": ["length"]}) is None
    assert finish_reason({"meta_info": "length"}) is None
    assert finish_reason({"finish_reason": ""}) is None
    assert not cut_at_length({"finish_reason": {"type": 4096}})


def test_answers_cut_before_a_restart_still_count_after_it(tmp_path: Path) -> None:
    folder = tmp_path / "root" / "B1"
    write_prompts(folder, 10)
    path = folder / "raw_responses.jsonl"
    path.write_text(cut("p0") + whole("p1") + cut("p2"))
    assert life(tmp_path).truncated_responses == 2
    store = ScanStore(tmp_path / "state" / "scans")
    kept = store.load(str(path))
    store.close()
    assert kept is not None
    assert kept.counts["truncated_responses"] == 2
    append(path, cut("p3") + cut("p0"))
    resumed = life(tmp_path)
    assert (resumed.responses, resumed.truncated_responses) == (4, 3)


def life(tmp_path: Path) -> DatasetProgress:
    """One life of the agent's tracker, its scans kept at the end and taken up by the next."""
    (tmp_path / "state").mkdir(mode=0o700, exist_ok=True)
    store = ScanStore(tmp_path / "state" / "scans")
    keeper = ScanKeeper(store, keep_from_bytes=0)
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path / "root")), keeper=keeper)
    [progress] = tracker.progress()
    tracker.keep_scans()
    store.close()
    return progress


def dataset(responses: int, truncated: int, max_new_tokens: int | None = 4096) -> DatasetProgress:
    return DatasetProgress(
        "B3_math", 1000, responses, responses * 100, None, truncated_responses=truncated,
        max_new_tokens=max_new_tokens,
    )  # fmt: skip


def truncation_alerts(progress: DatasetProgress, share: float = 0.10) -> list[Alert]:
    alerts = dataset_alerts(progress, 0.02, 5.0, truncation_alert_share=share)
    return [alert for alert in alerts if alert.kind == "truncation_high"]


def test_the_warning_waits_for_enough_answers_and_a_share_past_the_threshold() -> None:
    assert MIN_RESPONSES_TO_JUDGE_CUTS == 50
    assert truncation_alerts(dataset(49, 40)) == []
    assert truncation_alerts(dataset(50, 5)) == []  # 10 % is not past 10 %
    assert truncation_alerts(dataset(100, 29), share=0.29) == []
    assert len(truncation_alerts(dataset(50, 6))) == 1
    assert len(truncation_alerts(dataset(100, 30), share=0.29)) == 1


def test_a_threshold_of_zero_turns_the_warning_off() -> None:
    assert truncation_alerts(dataset(1000, 1000), share=0.0) == []
    assert dataset(0, 0).truncated_share is None
    assert dataset(200, 50).truncated_share == 0.25


def test_the_warning_names_the_dataset_share_count_cap_and_both_ways_out() -> None:
    [alert] = truncation_alerts(dataset(1000, 123))
    assert (alert.kind, alert.severity, alert.subject, alert.raised_at) == (
        "truncation_high", "warning", "B3_math", 5.0,
    )  # fmt: skip
    assert alert.message == (
        "B3_math: 12.3% of its answers were cut at --max-new-tokens 4096 (123 of 1,000); "
        "raise --max-new-tokens, or drop them in the export with --drop truncated"
    )
    [unknown_cap] = truncation_alerts(dataset(1000, 123, max_new_tokens=None))
    assert "cut at --max-new-tokens (123 of 1,000)" in unknown_cap.message


def write_cut_dataset(root: Path, responses: int, truncated: int) -> None:
    folder = root / "B1"
    write_prompts(folder, responses)
    lines = [cut(f"p{i}") if i < truncated else whole(f"p{i}") for i in range(responses)]
    (folder / "raw_responses.jsonl").write_text("".join(lines))
    runner = {"state": "running", "pid": 1, "updated_at": 0.0, "max_new_tokens": 2048}
    (folder / "runner.json").write_text(json.dumps(runner))


def test_the_tracker_reports_the_count_the_cap_and_the_configured_warning(tmp_path: Path) -> None:
    write_cut_dataset(tmp_path, 60, 9)
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path)))
    [progress] = tracker.progress(1e9)
    assert (progress.truncated_responses, progress.max_new_tokens) == (9, 2048)
    [alert] = [a for a in tracker.alerts((progress,), 1e9) if a.kind == "truncation_high"]
    assert "15.0%" in alert.message
    assert "--max-new-tokens 2048" in alert.message
    quiet = DatasetTracker(DatasetsConfig(str(tmp_path), truncation_alert_share=0.2))
    quiet_progress = quiet.progress(1e9)
    assert all(a.kind != "truncation_high" for a in quiet.alerts(quiet_progress, 1e9))


async def test_the_warning_goes_to_the_webhook(tmp_path: Path) -> None:
    write_cut_dataset(tmp_path, 60, 30)
    tracker = DatasetTracker(DatasetsConfig(str(tmp_path)))
    progress = tracker.progress(1e9)
    alerts = tuple(tracker.alerts(progress, 1e9))
    posted: list[dict[str, Any]] = []
    async with sending_to(
        "http://hook.invalid/topic", lambda _, body, __: posted.append(json.loads(body))
    ) as notifier:
        await notifier.heard(Snapshot(time.time(), "gpu-0", str(tmp_path), progress, alerts))
        await settled(notifier, len(alerts))
    [body] = [body for body in posted if body["kind"] == "truncation_high"]
    assert (body["dataset"], body["severity"]) == ("B1", "warning")
    assert "50.0% of its answers were cut" in body["text"]


def test_the_advice_names_flags_the_runner_and_the_export_take() -> None:
    [alert] = truncation_alerts(dataset(100, 20))
    assert "raise --max-new-tokens" in alert.message
    assert "--max-new-tokens" in build_parser().format_help()
    assert "--drop truncated" in alert.message
    assert "truncated" in DROP_POLICIES
