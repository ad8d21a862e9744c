"""How numbers read on screen: tokens, rates, ETAs, ages and dataset rows. No Textual here.

Everything is derived from the agent's frozen snapshot, so the same text appears in the TUI, in
`status` and in reports. Every string that came from the host goes through `sanitise` on its way
into these texts; none of them holds markup.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.protocol import DatasetProgress, GpuSample, JobInfo, ServerStats, TrainingProgress
from console.model.safe_text import sanitise

STALE_AFTER_S = 5.0
"""A panel whose data is older than this shows as stale."""


def tokens(n: int | float | None) -> str:
    """10.7M, 912K, 850, or a dash."""
    if n is None:
        return "—"
    value = float(n)
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f}{unit}".replace(".0" + unit, unit)
    return f"{value:.0f}"


def duration(seconds: float | None) -> str:
    """2d 3h, 3h 12m, 4m 05s, 12s, or a dash."""
    if seconds is None:
        return "—"
    s = int(seconds)
    days, hours, minutes = s // 86400, s % 86400 // 3600, s % 3600 // 60
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {s % 60:02d}s"
    return f"{s}s"


def eta(progress: DatasetProgress) -> str:
    """ETA with its range: "3h 12m (2h 50m–3h 40m)"."""
    main = duration(progress.eta_s)
    if progress.eta_low_s is None or progress.eta_high_s is None or progress.eta_s is None:
        return main
    low, high = duration(progress.eta_low_s), duration(progress.eta_high_s)
    return main if low == high else f"{main} ({low}–{high})"


def share(done: int, total: int | None) -> float | None:
    """Done / total between 0 and any value, or None without a total."""
    return done / total if total else None


def bar(fraction: float | None, width: int = 12) -> str:
    """A text progress bar, full past 100 %."""
    if fraction is None:
        return " " * width
    filled = round(min(fraction, 1.0) * width)
    return "█" * filled + "░" * (width - filled)


@dataclass(frozen=True, slots=True)
class DatasetRow:
    """One dataset as the table shows it."""

    name: str
    responses: str
    budget_bar: str
    tokens: str
    rate: str
    eta: str
    overrun: str
    status: str


def dataset_row(progress: DatasetProgress) -> DatasetRow:
    """The cells of one dataset's row."""
    cap = (
        progress.target_responses if progress.stop_condition == "max_samples" else progress.prompts
    )
    fraction = share(progress.tokens, progress.budget)
    percent = f" {fraction * 100:5.1f}%" if fraction is not None else ""
    overrun = progress.projected_overrun_tokens or 0
    hours = progress.projected_overrun_hours
    return DatasetRow(
        name=sanitise(progress.name),
        responses=f"{progress.responses:,} / {cap or 0:,}",
        budget_bar=bar(fraction) + percent,
        tokens=f"{tokens(progress.tokens)} / {tokens(progress.budget)}",
        rate=f"{tokens(progress.tokens_per_s)}/s" if progress.tokens_per_s else "—",
        eta=eta(progress),
        overrun=f"+{tokens(overrun)}" + (f" ({duration(hours * 3600)})" if hours else "")
        if overrun
        else "—",
        status=sanitise(progress.status.replace("_", " ")),
    )


def job_uptime(job: JobInfo, now: float) -> str:
    """How long a job has run (or ran)."""
    if job.started_at is None:
        return "—"
    return duration((job.ended_at or now) - job.started_at)


def age(seconds: float | None) -> str:
    """How old data is: live, 12s old, 3m 05s old."""
    if seconds is None:
        return "no data yet"
    return "live" if seconds < STALE_AFTER_S else f"{duration(seconds)} old"


HEALTH = {True: "healthy", False: "down", None: "unknown"}
"""The word for the server's health."""


def server_text(server: ServerStats | None) -> str:
    """The server in a few lines of plain text (the first says its health in words: HEALTH)."""
    if server is None:
        return "SGLang: not probed yet"
    detail = sanitise(server.detail) if not server.healthy else ""
    what = "sglang-router" if server.is_router else "hosted API" if server.hosted else "SGLang"
    lines = [f"{what} {sanitise(server.url or '')}: {HEALTH[server.healthy]} {detail}".rstrip()]
    if server.model_path:
        lines.append(f"model {sanitise(server.model_path)}")
    load = {key: sanitise(value) for key, value in server.log_stats.items()}
    running = (
        server.running_requests if server.running_requests is not None else load.get("#running-req")
    )
    queued = (
        server.queued_requests if server.queued_requests is not None else load.get("#queue-req")
    )
    if running is not None:
        lines.append(
            f"running {running} · queued {queued} · token usage {server.token_usage or load.get('token usage', '—')}"
        )
    rate = server.gen_throughput_tokens_per_s or _float(load.get("gen throughput (token/s)"))
    if rate:
        lines.append(f"gen {tokens(rate)} tok/s")
    accept = server.accept_length or _float(load.get("accept len"))
    if accept:
        lines.append(f"accept length {accept:.2f}")
    return "\n".join(lines + server_part_lines(server))


def server_part_lines(server: ServerStats) -> list[str]:
    """One line per DP rank, or per worker behind a router, under the whole-server figures."""
    lines = []
    if server.is_router and server.total_workers is not None:
        lines.append(f"workers healthy {server.healthy_workers or 0} of {server.total_workers}")
    for part in server.parts:
        health = {True: "up", False: "down", None: ""}[part.healthy]
        figures = [
            health,
            f"load {part.load}" if part.load is not None and part.load >= 0 else "",
            f"running {part.running_requests}" if part.running_requests is not None else "",
            f"queued {part.queued_requests}" if part.queued_requests is not None else "",
            f"gen {tokens(part.gen_throughput_tokens_per_s)} tok/s"
            if part.gen_throughput_tokens_per_s is not None
            else "",
            f"usage {part.token_usage:.2f}" if part.token_usage is not None else "",
        ]
        lines.append(f"  {sanitise(part.name)}  " + " · ".join(f for f in figures if f))
    return lines


def gpu_text(gpus: tuple[GpuSample, ...], note: str) -> str:
    """One line per GPU: utilisation, memory, temperature, holder."""
    if not gpus:
        return sanitise(note) or "GPUs: not probed yet"
    return "\n".join(
        f"GPU{g.index} {g.utilization_pct or 0:.0f}% · {(g.memory_used_mib or 0) / 1024:.1f} / "
        f"{(g.memory_total_mib or 0) / 1024:.1f} GiB · {g.temperature_c or 0:.0f}°C"
        + (
            f" · {sanitise(', '.join(g.job_ids))}"
            if g.job_ids
            else (f" · pids {list(g.pids)}" if g.pids else "")
        )
        for g in gpus
    )


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


SPARK = "▁▂▃▄▅▆▇█"


def spark(values: tuple[float, ...], width: int = 24) -> str:
    """A one-line sparkline of the last `width` values."""
    tail = values[-width:]
    if not tail:
        return ""
    low, high = min(tail), max(tail)
    span = (high - low) or 1.0
    return "".join(SPARK[min(7, int((v - low) / span * 7))] for v in tail)


def training_text(
    items: tuple[TrainingProgress, ...],
    jobs: tuple[JobInfo, ...],
    measured_accept: float | None = None,
) -> str:
    """One block per training job: step, epoch, loss, acceptance and the best eval acceptance.

    `measured_accept` is what the drafter evaluation measured on the server, shown beside the
    best eval acceptance the trainer estimated.
    """
    names = {job.id: job.name for job in jobs}
    blocks = []
    for t in items:
        step = f"step {t.step or 0:,}" + (f"/{t.total_steps:,}" if t.total_steps else "")
        best = (
            f" (best {t.best_eval_acceptance:.2f} @ {t.best_eval_step})"
            if t.best_eval_acceptance
            else ""
        )
        accept = (
            f"accept len {t.acceptance_length:.2f}{best}" if t.acceptance_length else "accept len —"
        )
        if measured_accept is not None:
            accept += f" · measured {measured_accept:.2f}"
        loss = f"loss {t.loss:.3f}" if t.loss is not None else "loss —"
        blocks.append(
            f"{sanitise(names.get(t.job_id, t.job_id))}: {step} · epoch {t.epoch if t.epoch is not None else '—'} · "
            f"ETA {duration(t.eta_s)}\n  {loss} {spark(t.loss_history)}\n  {accept} {spark(t.acceptance_history)}"
        )
    return "\n".join(blocks)
