"""The whole export: load the tokenizer once, export each dataset, merge, report."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.datasets.root_listing import DatasetsRootError, list_datasets
from agent.pipeline.export.dataset import DatasetExport, ExportContext, ExportError
from agent.pipeline.export.exclusions import (
    DEFAULT_NGRAM,
    ExclusionError,
    Exclusions,
    load_exclusions,
)
from agent.pipeline.export.held_out import HELD_OUT_SHARE
from agent.pipeline.export.marks import token_facts
from agent.pipeline.export.merged import MergedOutputs
from agent.pipeline.export.prompt_text import Decode
from agent.pipeline.export.report import (
    REPORT_JSON,
    REPORT_MD,
    dataset_record,
    flagged,
    roundtrip_line,
    screen_totals,
    screened_line,
    write_reports,
)
from agent.pipeline.export.roundtrip import ADDED_AFTER, SYSTEM_ADDED
from agent.pipeline.export.screening import PromptScreen
from agent.pipeline.export.specforge_templates import (
    SpecForgeTemplate,
    ends_without_more,
    same_turns_without_system,
    specforge_template,
)
from agent.pipeline.export.trainer_configs import TrainerSettings, write_trainer_configs
from agent.pipeline.tokenizer import TokenizerError, load_tokenizer


class UsageError(ExportError):
    """The command line asks for something that cannot be (exit 2)."""


@dataclass(frozen=True, slots=True)
class ExportOptions:
    """The command line, checked."""

    datasets_root: Path
    tokenizer: str
    out: Path
    datasets: tuple[str, ...] = ()
    trust_remote_code: bool = False
    formats: frozenset[str] = frozenset({"ids", "conversations"})
    drop: frozenset[str] = frozenset()
    weights: dict[str, float] = field(default_factory=dict)
    min_roundtrip_share: float = 0.99
    prompts_file: str = "prompts.jsonl"
    responses_file: str = "raw_responses.jsonl"
    chat_template: str | None = None
    """SpecForge's template name; without one the conversation form is not written."""
    max_length: int = 2048
    model: str | None = None
    """The target model's folder for the trainer configs (default: the tokenizer's)."""
    held_out_share: float = HELD_OUT_SHARE
    exclude: tuple[Path, ...] = ()
    """Evaluation prompts files: training records whose prompt shares an n-gram with one are left out."""
    ngram: int = DEFAULT_NGRAM
    loss_turns: str = "all"
    """A conversation regenerated turn by turn trains on every answer (all) or the last (last)."""

    def template(self) -> SpecForgeTemplate | None:
        """The named template, checked; UsageError naming the ones known."""
        if self.chat_template is None:
            return None
        try:
            return specforge_template(self.chat_template)
        except KeyError as exc:
            raise UsageError(f"--chat-template: {exc.args[0]}") from None


def export(options: ExportOptions) -> dict[str, Any]:
    """Export every dataset; returns the summary written to export_report.json."""
    folders = dataset_folders(options.datasets_root, options.datasets)
    unknown = sorted(set(options.weights) - {f.name for f in folders})
    if unknown:
        raise UsageError(f"--weights names {unknown[0]!r}, which is not a dataset exported here")
    try:
        tokenizer = load_tokenizer(options.tokenizer, trust_remote_code=options.trust_remote_code)
    except TokenizerError as exc:
        raise UsageError(str(exc)) from None
    exclusions = excluded_sets(options, tokenizer)
    context = ExportContext(
        options.out, options.tokenizer, tokenizer, token_facts(tokenizer), options.formats,
        options.drop, options.trust_remote_code, options.prompts_file, options.responses_file,
        options.template(), options.max_length, options.held_out_share,
        PromptScreen(exclusions, decoder(tokenizer)), options.loss_turns,
    )  # fmt: skip
    options.out.mkdir(parents=True, exist_ok=True)
    clear_leftovers(options.out)
    merged = MergedOutputs(options.out, options.formats, options.weights)
    records = []
    try:
        for folder in folders:
            report = DatasetExport(folder, context, merged).run()
            records.append(dataset_record(report, options.min_roundtrip_share))
            records[-1]["roundtrip"]["other_templates"] = templates_that_help(
                options.template(), records[-1]["roundtrip"].get("reasons", {})
            )
            progress(_dataset_line(records[-1]))
        merged.commit()
    except BaseException:
        merged.abort()
        raise
    summary = _summary(options, records, merged.summary())
    summary |= screen_totals(records, options.ngram, exclusions.files if exclusions else {})
    summary["advice"] = template_advice(options.template(), records)
    for line in summary["advice"]:
        progress(f"export: {line}")
    summary["trainers"] = write_trainer_configs(
        TrainerSettings(
            options.out, options.model or options.tokenizer, options.max_length,
            options.chat_template, sum(r["ids_lines"] for r in records),
            sum(r["conversation_lines"] for r in records),
        )
    )  # fmt: skip
    write_reports(options.out, records, summary)
    return summary | {"datasets": records}


def excluded_sets(options: ExportOptions, tokenizer: Any) -> Exclusions | None:
    """The --exclude files' n-grams, read before anything is written; UsageError for a bad one."""
    if not options.exclude:
        return None
    try:
        exclusions = load_exclusions(options.exclude, options.ngram, decoder(tokenizer))
    except ExclusionError as exc:
        raise UsageError(str(exc)) from None
    sets = ", ".join(
        f"{name} ({facts['prompts']:,} prompts)" for name, facts in exclusions.files.items()
    )
    progress(
        f"export: leaving out of training every record whose prompt shares {options.ngram} words "
        f"in a row with {sets}: {len(exclusions.index.hashes):,} n-grams"
    )
    return exclusions


def decoder(tokenizer: Any) -> Decode:
    """The text an input_ids prompt shows, for the contamination check."""
    return lambda ids: str(tokenizer.decode(ids, skip_special_tokens=True))


def template_advice(template: SpecForgeTemplate | None, records: list[dict[str, Any]]) -> list[str]:
    """What to change when the named template renders rows unlike what the model saw."""
    reasons = {why for r in records for why in r["roundtrip"].get("reasons", {})}
    if template is None:
        return []
    advice = []
    if SYSTEM_ADDED in reasons:
        others = same_turns_without_system(template)
        instead = f"; {', '.join(others)} mark turns the same way with none" if others else ""
        advice.append(
            f"SpecForge's {template.name!r} adds the system prompt {template.system_prompt!r} to "
            f"every conversation without one, which the model never saw{instead}"
        )
    if ADDED_AFTER in reasons:
        others = ends_without_more(template)
        instead = (
            f"; {', '.join(others)} end the turn without it" if others
            else "; no SpecForge template for these turns ends otherwise, so no template makes "
            "this form exact for this target: train from ids.jsonl, the exact tokens "
            "(trainers/specforge.json)"
        )  # fmt: skip
        advice.append(
            f"SpecForge's {template.name!r} ends every answer with {template.end_of_turn!r} and "
            f"puts loss on what follows the model's own end of turn, which it never "
            f"generated{instead}"
        )
    return advice


def templates_that_help(template: SpecForgeTemplate | None, reasons: dict[str, int]) -> list[str]:
    """Templates that would render this dataset's mismatched rows exactly, if any would.

    Only the template's own additions can be fixed by another template: a system prompt it adds
    or tokens after the end of turn. Ids that render otherwise are the tokenizer's, not its.
    """
    if template is None or not reasons:
        return []
    fixable = {SYSTEM_ADDED: same_turns_without_system, ADDED_AFTER: ends_without_more}
    if not set(reasons) <= set(fixable):
        return []
    helping = [set(fixable[why](template)) for why in reasons]
    return sorted(set.intersection(*helping))


def clear_leftovers(out: Path) -> int:
    """Remove what a killed export left in `out`, and the last report; returns how many files.

    The report goes first and comes back last, so it exists only beside a complete set of files.
    """
    stale = [out / REPORT_JSON, out / REPORT_MD, *out.glob(".export-index-*.sqlite")]
    stale += [*out.glob("*.partial"), *out.glob("*/*.partial"), *out.glob("*/*/*.partial")]
    removed = 0
    for path in stale:
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed += path.suffix in (".partial", ".sqlite")
    return removed


def dataset_folders(root: Path, names: tuple[str, ...]) -> list[Path]:
    """The dataset folders to export, in name order."""
    try:
        listing = list_datasets(str(root))
    except DatasetsRootError as exc:
        raise UsageError(str(exc)) from None
    for name in names:
        if name in listing.skipped:
            raise UsageError(f"dataset {root / name} {listing.skipped[name]}")
        if name not in listing.names:
            raise UsageError(f"no dataset {name!r} under {root}")
    return [root / name for name in listing.names if not names or name in names]


def _summary(
    options: ExportOptions, records: list[dict[str, Any]], merged: dict[str, Any]
) -> dict[str, Any]:
    checked = sum(r["roundtrip"]["checked"] for r in records)
    matched = sum(r["roundtrip"]["matched"] for r in records)
    tokens = sum(r["quality"]["tokens"] for r in records)
    seconds = sum(r["seconds"] for r in records)
    return {
        "finished_at": time.time(),
        "tokenizer": options.tokenizer,
        "formats": sorted(options.formats),
        "chat_template": options.chat_template,
        "max_length": options.max_length,
        "cut": {
            key: sum(r["cut"][key] for r in records)
            for key in ("records", "loss_tokens_cut", "records_without_loss")
        },
        "earlier_assistant_turns": sum(r["earlier_assistant_turns"] for r in records),
        "loss_turns": options.loss_turns,
        "conversations_exported": sum(r["conversations_exported"] for r in records),
        "turns_exported": sum(r["turns_exported"] for r in records),
        "sequence_tokens": sum(r["sequence_tokens"] for r in records),
        "longest_record": max((r["longest_record"] for r in records), default=0),
        "records": sum(r["ids_lines"] for r in records),
        "drop": sorted(options.drop),
        "min_roundtrip_share": options.min_roundtrip_share,
        "roundtrip": {
            "checked": checked,
            "matched": matched,
            "share": matched / checked if checked else None,
            "flagged": any(flagged(r) for r in records),
        },
        "other_tokenizer": {
            record["name"]: record["other_tokenizer"]["count"]
            for record in records
            if record["other_tokenizer"]["count"]
        },
        "tokens": tokens,
        "tokens_per_s": round(tokens / seconds, 1) if seconds > 0 else 0.0,
        "merged": merged,
    }


def _dataset_line(record: dict[str, Any]) -> str:
    quality = record["quality"]
    return (
        f"export: {record['name']}: {quality['answers']:,} answers, {quality['tokens']:,} tokens in "
        f"{record['seconds']:.2f} s ({record['tokens_per_s'] / 1e6:.2f}M tokens/s); "
        f"{record['ids_lines']:,} ids lines, {record['conversation_lines']:,} conversations; "
        f"{roundtrip_line(record)}{screened_line(record)}"
    )


def progress(line: str) -> None:
    """One line on stderr, where the console's log view shows it."""
    print(line, file=sys.stderr, flush=True)  # noqa: T201
