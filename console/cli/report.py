"""`eagle-console report HOST`: a Markdown run report to paste into a ticket or a hand-off.

Host text is sanitised, and escaped so that Markdown shows it as typed: a dataset name never
turns into a link, emphasis or a new table cell where the report is pasted.
"""

from __future__ import annotations

import re
import time

from agent.protocol import DrafterEvaluation, Snapshot
from console.model.formatting import (
    DatasetRow,
    dataset_row,
    duration,
    gpu_text,
    server_text,
    tokens,
)
from console.model.safe_text import sanitise

MARKDOWN_SPECIAL = re.compile(r"[\\`*\[\]<>|~&]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
"""What Markdown would read as markup inline (an underscore inside a word never is)."""


def markdown_report(host: str, snapshot: Snapshot) -> str:
    """Datasets, budgets, ETA and projections, alerts, jobs, server, the drafter and GPUs."""
    taken = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snapshot.taken_at))
    lines = [
        f"# Run report: {md_text(host)} ({md_text(snapshot.host_name)})",
        "",
        f"Taken {taken}; datasets root {md_code(str(snapshot.datasets_root))}.",
        "",
    ]
    lines += ["## Datasets", "", "| dataset | responses | tokens | budget | rate | ETA | projected | overrun | status |",
              "|---|---:|---:|---|---:|---|---:|---:|---|"]  # fmt: skip
    for progress in snapshot.datasets:
        row = dataset_row(progress, snapshot.taken_at)
        lines.append(
            f"| {md_text(row.name)} | {row.responses} | {row.tokens} | {row.budget_bar.strip()} | {row.rate} | {_eta(row)} | "
            f"{tokens(progress.projected_tokens)} | {row.overrun} | {md_text(row.status)} |"
        )
    lines += ["", "## Alerts", ""] + (
        [f"- **{md_text(a.severity)}** {md_text(a.message)}" for a in snapshot.alerts] or ["None."]
    )
    lines += ["", "## Jobs", ""] + (
        [f"- {md_code(j.name)} {md_text(j.dataset or '')} pid {j.pid} {md_text(j.state)}"
         + (f", exit {j.exit_code}" if j.exit_code is not None else "")
         + (f", up {duration(snapshot.taken_at - j.started_at)}" if j.started_at and j.state == 'running' else "")
         for j in snapshot.jobs] or ["None."]
    )  # fmt: skip
    lines += [
        "",
        "## SGLang",
        "",
        *map(md_text, server_text(snapshot.server).split("\n")),
    ]
    lines += evaluation_section(snapshot.evaluation)
    lines += [
        "",
        "## GPUs",
        "",
        *map(md_text, gpu_text(snapshot.gpus, snapshot.gpu_note).split("\n")),
    ]
    return "\n".join([*lines, ""])


def evaluation_section(evaluation: DrafterEvaluation | None) -> list[str]:
    """The drafter's evaluation: the verdict, each level, each domain and prompt-length bucket."""
    if evaluation is None:
        return []
    lines = ["", "## Drafter", "", md_text(evaluation.verdict), "",
             "| concurrency | tokens/s | baseline | speedup | accept length |",
             "|---:|---:|---:|---:|---:|"]  # fmt: skip
    for level in evaluation.levels:
        lines.append(f"| {level.concurrency} | {level.tokens_per_s:,.0f} | "
                     f"{_figure(level.baseline_tokens_per_s, ',.0f')} | "
                     f"{_figure(level.speedup, '.2f')} | {_figure(level.accept_length, '.2f')} |")  # fmt: skip
    if evaluation.slices:
        lines += ["", "| domain or prompt length | prompts | concurrency | speedup | accept length "
                  "| drafts accepted |", "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
        for one in evaluation.slices:
            name = f"domain {one.name}" if one.kind == "domain" else one.name
            rate = f"{one.spec_accept_rate:.0%}" if one.spec_accept_rate is not None else "—"
            lines.append(f"| {md_text(name)} | {one.prompts} | {one.concurrency} | "
                         f"{_figure(one.speedup, '.2f')} | {_figure(one.accept_length, '.2f')} | "
                         f"{rate} |")  # fmt: skip
    return lines


def _figure(value: float | None, form: str) -> str:
    return format(value, form) if value is not None else "—"


def md_text(text: str) -> str:
    """Host text for Markdown: sanitised, every character Markdown would act on escaped."""
    return MARKDOWN_SPECIAL.sub(lambda found: "\\" + found.group(0), sanitise(text))


def md_code(text: str) -> str:
    """Host text as an inline code span (outside tables), fenced with longer backtick runs."""
    shown = sanitise(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def _eta(row: DatasetRow) -> str:
    return f"{row.eta} ({row.eta_range})" if row.eta_range != "—" else row.eta
