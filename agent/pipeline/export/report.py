"""quality.json and quality.md per dataset, and export_report.json / .md over all of them."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from agent.pipeline.export.quality import LENGTH_EDGES
from agent.pipeline.export.tallies import DatasetReport
from agent.pipeline.export.writers import write_whole

REPORT_JSON = "export_report.json"
REPORT_MD = "export_report.md"


def dataset_record(report: DatasetReport, threshold: float) -> dict[str, Any]:
    """The JSON form of one dataset's report, with its round-trip verdict."""
    record = dataclasses.asdict(report)
    share = report.roundtrip.share
    record["roundtrip"]["share"] = share
    # as quality.json names them (`id`, not the dataclass's `answer_id`): the agent's reader took
    # a flagged export's examples for a broken report and showed none at all
    record["roundtrip"]["examples"] = [m.as_record() for m in report.roundtrip.examples]
    record["roundtrip"]["flagged"] = share is not None and share < threshold
    record["roundtrip"]["threshold"] = threshold
    record["quality"]["length_edges"] = list(LENGTH_EDGES)
    record["tokens_per_s"] = round(report.tokens_per_s, 1)
    return record


def flagged(record: dict[str, Any]) -> bool:
    """True when the dataset's round trip is below the threshold."""
    return bool(record["roundtrip"]["flagged"])


def write_reports(out: Path, records: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    """Every report file."""
    for record in records:
        folder = out / record["name"]
        folder.mkdir(parents=True, exist_ok=True)
        write_whole(folder / "quality.json", json.dumps(record, indent=1) + "\n")
        write_whole(folder / "quality.md", dataset_markdown(record))
    whole = summary | {"datasets": records}
    write_whole(out / REPORT_JSON, json.dumps(whole, indent=1) + "\n")
    write_whole(
        out / REPORT_MD, "\n".join([_summary_markdown(summary), *map(dataset_markdown, records)])
    )


def roundtrip_line(record: dict[str, Any]) -> str:
    """One line about a dataset's round trip, loud when it is below the threshold."""
    trip = record["roundtrip"]
    if not trip["checked"]:
        return f"{record['name']}: no conversation to check"
    line = (
        f"{record['name']}: {trip['matched']:,} of {trip['checked']:,} conversations "
        f"({floor_percent(trip['share'])}) train in SpecForge on exactly the tokens sent and "
        "generated"
    )
    if not trip["flagged"]:
        return line
    first = trip["examples"][0] if trip["examples"] else None
    where = (
        f"; first difference at position {first['position']} ({first['where']}): expected "
        f"{first['expected']}, the template gives {first['rendered']}{_detail(first)}"
        if first
        else ""
    )
    reasons = "; ".join(f"{n:,} {why}" for why, n in sorted(trip.get("reasons", {}).items()))
    others = trip.get("other_templates") or []
    instead = (
        f", or name --chat-template {' or '.join(others)}"
        if others
        else (" (no other SpecForge template renders these rows as the model saw them)")
    )
    return (
        f"ROUND TRIP FAILED: {line}, below the {floor_percent(trip['threshold'])} asked for"
        f"{where}{f' (reasons: {reasons})' if reasons else ''}. Those rows are left out of "
        f"specforge.jsonl; train from ids.jsonl (the exact tokens: trainers/specforge.json){instead}"
    )


def screen_totals(
    records: list[dict[str, Any]], ngram: int, files: dict[str, Any]
) -> dict[str, Any]:
    """export_report.json's totals of the records training left out for their prompt."""
    contaminated: dict[str, int] = {}
    for record in records:
        for name, count in record["contaminated"].items():
            contaminated[name] = contaminated.get(name, 0) + count
    return {
        "exclude": {"ngram": ngram, "sets": files},
        "contaminated": contaminated,
        "duplicate_prompts_across_datasets": sum(
            sum(r["duplicate_prompts_across_datasets"].values()) for r in records
        ),
        "repeated_prompts": sum(r["repeated_prompts"] for r in records),
    }


def screened_line(record: dict[str, Any]) -> str:
    """What a dataset's progress line adds when training left records out for their prompt."""
    parts = [
        f"{sum(counts.values()):,} {what} ({_by_name(counts)})"
        for what, counts in (
            ("contaminated", record["contaminated"]),
            ("prompts of an earlier dataset", record["duplicate_prompts_across_datasets"]),
        )
        if counts
    ]
    return f"; left out of training: {', '.join(parts)}" if parts else ""


def floor_percent(share: float | None) -> str:
    """A share as a percentage rounded down, so a share below a threshold never reads equal."""
    if share is None:
        return "—"
    return f"{math.floor(share * 10_000) / 100:.2f}%"


def _detail(example: dict[str, Any]) -> str:
    return f" ({example['detail']})" if example.get("detail") else ""


def _summary_markdown(summary: dict[str, Any]) -> str:
    trip = summary["roundtrip"]
    share = floor_percent(trip["share"])
    verdict = "**FAILED**" if trip["flagged"] else "ok"
    merged = summary["merged"]
    lines = [
        "# Training-data export",
        "",
        f"Tokenizer `{summary['tokenizer']}`; forms {', '.join(summary['formats'])}; "
        f"dropped: {', '.join(summary['drop']) or 'nothing'}.",
        "",
        f"Round trip in SpecForge's `{summary['chat_template']}` template: {share} of "
        f"{trip['checked']:,} conversations train on exactly the tokens sent and generated "
        f"(threshold {floor_percent(summary['min_roundtrip_share'])}): {verdict}."
        if summary["chat_template"]
        else "No conversation form: name SpecForge's chat template with --chat-template to "
        "write one; ids.jsonl holds every record exactly.",
        "",
        _cut_line(summary["cut"], summary["max_length"]),
        "",
        _screen_markdown(summary),
        "",
        f"Earlier assistant turns: {summary['earlier_assistant_turns']:,} conversations have "
        "them as the dataset wrote them (`--turns last`); `train_only_last_turn: true` (in "
        "trainers/) keeps their loss off.",
        "",
        f"Conversations regenerated turn by turn: {summary['conversations_exported']:,} "
        f"({summary['turns_exported']:,} turns), loss on "
        + (
            "every regenerated answer."
            if summary["loss_turns"] == "all"
            else "the last answer only."
        ),
        "",
        *(f"**{line}.**\n" for line in summary.get("advice", [])),
        f"Trainer settings: `{summary['trainers']['folder']}` "
        f"({', '.join(summary['trainers']['files'])}).",
        "",
        f"Merged (`all/`): weights {merged['weights'] or 'all 1'}; lines {merged['lines']}.",
        "",
    ]
    return "\n".join(lines)


def dataset_markdown(record: dict[str, Any]) -> str:
    """quality.md of one dataset."""
    quality = record["quality"]
    answers = max(1, quality["answers"])
    rows = [
        ("prompts", record["prompts"]),
        ("answers read", quality["answers"]),
        ("output tokens", quality["tokens"]),
        ("length-capped (finish length)", _share(quality["truncated"], answers)),
        ("empty", _share(quality["empty"], answers)),
        ("looping", _share(quality["looping"], answers)),
        ("reasoning", ", ".join(f"{k} {v:,}" for k, v in sorted(quality["reasoning"].items()))),
        ("finish reasons", ", ".join(f"{k} {v:,}" for k, v in sorted(quality["finish_reasons"].items()))),
        ("dropped (--drop)", ", ".join(f"{k} {v:,}" for k, v in quality["dropped"].items()) or "none"),
        ("duplicates skipped", record["duplicates_skipped"]),
        ("contaminated: shares an n-gram with an --exclude set (left out)",
         _by_name(record["contaminated"]) or "none"),
        ("prompt of an earlier dataset (left out)",
         _by_name(record["duplicate_prompts_across_datasets"]) or "none"),
        ("prompts repeated within the dataset (kept)", record["repeated_prompts"]),
        ("held out for the evaluation (held_out/)",
         f"{record['held_out']:,} prompts ({record['held_out_answered']:,} answers left out)"),
        ("prompts without an answer", record["unanswered_prompts"]),
        ("answers without a prompt", record["no_prompt"]["count"]),
        ("prompt no longer encodes as sent", record["prompt_mismatch"]["count"]),
        ("answered under another tokenizer (left out)", record["other_tokenizer"]["count"]),
        ("ids beyond the vocabulary", record["out_of_vocab"]["count"]),
        ("corrupt lines", record["corrupt_lines"]),
        ("ids.jsonl lines", record["ids_lines"]),
        ("specforge.jsonl lines", record["conversation_lines"]),
        *(
            (f"left out of specforge.jsonl: {why}", f"{left['count']:,} (first {left['first']})")
            for why, left in sorted(record["conversations_left_out"].items())
        ),
        (f"longer than max_length {record['cut']['max_length']:,}", _cut_cell(record["cut"])),
    ]  # fmt: skip
    lines = [f"## {record['name']}", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {_cell(value)} |" for name, value in rows]
    trip = roundtrip_line(record)
    lines += ["", f"**{trip}**" if record["roundtrip"]["flagged"] else trip, ""]
    lines += ["Length histogram (output tokens):", "", "| from | answers |", "|---|---|"]
    lines += [
        f"| {edge:,} | {count:,} |"
        for edge, count in zip(quality["length_edges"], quality["length_counts"], strict=True)
        if count
    ]
    return "\n".join(lines) + "\n"


def _by_name(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count:,}" for name, count in sorted(counts.items()))


def _screen_markdown(summary: dict[str, Any]) -> str:
    sets = summary["exclude"]["sets"]
    if not sets:
        return (
            "No evaluation set excluded (`--exclude FILE`): training may hold its prompts. "
            f"Prompts of an earlier dataset left out: {summary['duplicate_prompts_across_datasets']:,}."
        )
    named = ", ".join(f"`{name}` ({facts['prompts']:,} prompts)" for name, facts in sets.items())
    left = _by_name(summary["contaminated"]) or "none"
    return (
        f"Decontamination: {summary['exclude']['ngram']}-grams of {named}; contaminated records "
        f"left out: {left}. Prompts of an earlier dataset left out: "
        f"{summary['duplicate_prompts_across_datasets']:,}."
    )


def _cut_line(cut: dict[str, Any], max_length: int) -> str:
    return f"Longer than max_length {max_length:,} (the trainer cuts there): {_cut_cell(cut)}."


def _cut_cell(cut: dict[str, Any]) -> str:
    if not cut["records"]:
        return "none"
    return (
        f"{cut['records']:,} records; {cut['loss_tokens_cut']:,} generated tokens cut, "
        f"{cut['records_without_loss']:,} records left with none"
    )


def _share(count: int, total: int) -> str:
    return f"{count:,} ({count / total:.1%})"


def _cell(value: object) -> str:
    text = f"{value:,}" if isinstance(value, int) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")
