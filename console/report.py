"""`eagle-console report HOST`: a Markdown run report to paste into a ticket or a hand-off."""

from __future__ import annotations

import time

from agent.protocol import Snapshot
from console.model import dataset_row, duration, gpu_text, server_text, tokens


def markdown_report(host: str, snapshot: Snapshot) -> str:
    """Datasets, budgets, ETA and projections, alerts, jobs, server and GPUs."""
    taken = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snapshot.taken_at))
    lines = [
        f"# Run report: {host} ({snapshot.host_name})",
        "",
        f"Taken {taken}; datasets root `{snapshot.datasets_root}`.",
        "",
    ]
    lines += ["## Datasets", "", "| dataset | responses | tokens | budget | rate | ETA | projected | overrun | status |",
              "|---|---:|---:|---|---:|---|---:|---:|---|"]  # fmt: skip
    for progress in snapshot.datasets:
        row = dataset_row(progress)
        lines.append(
            f"| {row.name} | {row.responses} | {row.tokens} | {row.budget_bar.strip()} | {row.rate} | {row.eta} | "
            f"{tokens(progress.projected_tokens)} | {row.overrun} | {row.status} |"
        )
    lines += ["", "## Alerts", ""] + (
        [f"- **{a.severity}** {a.message}" for a in snapshot.alerts] or ["None."]
    )
    lines += ["", "## Jobs", ""] + (
        [f"- `{j.name}` {j.dataset or ''} pid {j.pid} {j.state}"
         + (f", exit {j.exit_code}" if j.exit_code is not None else "")
         + (f", up {duration(snapshot.taken_at - j.started_at)}" if j.started_at and j.state == 'running' else "")
         for j in snapshot.jobs] or ["None."]
    )  # fmt: skip
    lines += [
        "",
        "## SGLang",
        "",
        server_text(snapshot.server).replace("[green]", "").replace("[red]", "").replace("[/]", ""),
    ]
    lines += ["", "## GPUs", "", gpu_text(snapshot.gpus, snapshot.gpu_note), ""]
    return "\n".join(lines)
