"""How numbers read on screen: tokens, rates, ETAs, ages and dataset rows. No Textual here.

Everything is derived from the agent's frozen snapshot, so the same text appears in the TUI, in
`status` and in reports. Every string that came from the host goes through `sanitise` on its way
into these texts; none of them holds markup.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from agent.protocol import (
    MAX_EXIT_REASON_CHARS,
    RATE_WINDOWS_S,
    SERVER_STARTING_GRACE_S,
    DatasetProgress,
    GpuSample,
    JobInfo,
    KeyProblem,
    ServerStats,
    TrainingProgress,
)
from console.model.safe_text import sanitise

STALE_AFTER_S = 5.0
"""A panel whose data is older than this shows as stale."""
RATE_FRESH_S = 60.0
"""A dataset whose last response is older than this has no rate now, though its writer lives
(a server gone down, say): the agent's windows would show the rate of minutes ago."""


def tokens(n: int | float | None) -> str:
    """10.7M, 912K, 850, or a dash."""
    if n is None:
        return "—"
    value = float(n)
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.1f}{unit}".replace(".0" + unit, unit)
    return f"{value:.0f}"


def byte_size(count: float) -> str:
    """Bytes in the largest binary unit that keeps one or more of them: 1.2 TiB, 640.0 GiB."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count:.0f} B"


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


def clock(at: float) -> str:
    """An epoch time as the user's local HH:MM."""
    return time.strftime("%H:%M", time.localtime(at))


def writing_live(progress: DatasetProgress, taken_at: float | None) -> bool:
    """A run writes the dataset and its responses still come: only then do its rate and ETA hold.

    `taken_at` is the snapshot's time, from which the last response is aged.
    """
    last = None if taken_at is None else progress.last_response_age_s(taken_at)
    return (
        progress.writer_active
        and not progress.writer_stopped
        and progress.status not in ("stalled", "waiting_for_server")
        and (last is None or last < RATE_FRESH_S)
    )


def live_rate(progress: DatasetProgress, taken_at: float | None) -> float | None:
    """Tokens per second while `writing_live`; None once its writer ended or stalled."""
    return progress.tokens_per_s if writing_live(progress, taken_at) else None


def eta(progress: DatasetProgress, taken_at: float | None = None) -> str:
    """ETA with its range: "3h 12m (2h 50m–3h 40m)"; once nothing writes it, when it ended.

    `taken_at` is the snapshot's time, from which the last response is aged.
    """
    main, spread = eta_alone(progress, taken_at), eta_range(progress, taken_at)
    return f"{main} ({spread})" if spread else main


def eta_alone(progress: DatasetProgress, taken_at: float | None = None) -> str:
    """The ETA without its range ("3h 12m"); once nothing writes it, when it ended."""
    return duration(progress.eta_s) if writing_live(progress, taken_at) else ended(progress)


def eta_range(progress: DatasetProgress, taken_at: float | None = None) -> str:
    """The ETA's range over the rate windows, "2h 50m–3h 40m"; "" when there is none."""
    if not writing_live(progress, taken_at) or progress.eta_s is None:
        return ""
    if progress.eta_low_s is None or progress.eta_high_s is None:
        return ""
    low, high = duration(progress.eta_low_s), duration(progress.eta_high_s)
    return "" if low == high else f"{low}–{high}"


def ended(progress: DatasetProgress) -> str:
    """What a dataset nobody is writing says in place of an ETA: when its last response came."""
    if progress.writer_stopped:
        return "writer stopped"
    if progress.writer_active:  # stalled, or waiting for the server: its status says which
        return "—"
    if progress.prompts == 0 and progress.responses == 0:
        return "no prompts"  # not "done": nothing was ever there to generate
    last = progress.last_response_at
    word = "done" if progress.generation_done else "ended"
    if last is None:
        return word if progress.generation_done else "—"
    return f"{word} {clock(last)}"


def window_rates_line(progress: DatasetProgress | None) -> str | None:
    """The rate over each window the agent sent ("tokens/s over 1 min 1.2K · ..."), or None."""
    if progress is None or not progress.tokens_per_s_by_window:
        return None
    windows = zip(RATE_WINDOWS_S, progress.tokens_per_s_by_window, strict=False)
    return "tokens/s over " + " · ".join(f"{w / 60:.0f} min {tokens(r)}" for w, r in windows)


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
    eta_range: str
    """"2h 50m–3h 40m", or "" when the rate windows agree (its own column: it folds first)."""
    overrun: str
    status: str


def dataset_row(
    progress: DatasetProgress, taken_at: float | None = None, server_up: bool = False
) -> DatasetRow:
    """The cells of one dataset's row, in a snapshot taken at `taken_at`.

    A run waiting for a server that the agent's probe finds up (`server_up`) is "resuming": its
    runner checks again on its own schedule, and the panel beside it already said "healthy".
    """
    fraction = share(progress.tokens, progress.budget)
    percent = f" {fraction * 100:5.1f}%" if fraction is not None else ""
    overrun = progress.projected_overrun_tokens or 0
    hours = progress.projected_overrun_hours if writing_live(progress, taken_at) else None
    return DatasetRow(
        name=sanitise(progress.name),
        responses=responses_text(progress),
        budget_bar=bar(fraction) + percent,
        tokens=f"{tokens(progress.tokens)} / {tokens(progress.budget)}",
        rate=f"{tokens(rate)}/s" if (rate := live_rate(progress, taken_at)) else "—",
        eta=eta_alone(progress, taken_at),
        eta_range=eta_range(progress, taken_at) or "—",
        overrun=f"+{tokens(overrun)}" + (f" ({duration(hours * 3600)})" if hours else "")
        if overrun
        else "—",
        status=dataset_status(progress, server_up),
    )


def responses_text(progress: DatasetProgress) -> str:
    """`70 / 1,200 · cap 1,000 · 150 turns`: of its prompts, a run's sample cap, the turns.

    It read x/1,000 (a run's --max-samples) during a run and 507/1,200 after it.
    """
    cap = progress.target_responses
    capped = f" · cap {cap:,}" if cap is not None and cap < progress.prompts else ""
    turns = f" · {progress.turn_records:,} turns" if progress.turn_records else ""
    return f"{progress.responses:,} / {progress.prompts:,}{capped}{turns}"


def dataset_status(progress: DatasetProgress, server_up: bool = False) -> str:
    """The status in words; waiting for a server that is up again is resuming."""
    if progress.status == "waiting_for_server" and server_up:
        return "resuming (server back)"
    return sanitise(progress.status.replace("_", " "))


ROW_REASON_CHARS = 36
"""A failed job's reason in its table row, where it shares the width with the other columns; the
whole of it is in the job_failed alert (a toast), the events and the headless `jobs`."""


def exit_reason(job: JobInfo, limit: int = MAX_EXIT_REASON_CHARS) -> str:
    """Why a failed job ended, as it may be shown: sanitised, cut to `limit`; "" when unknown."""
    reason = sanitise(job.exit_reason or "")
    return reason if len(reason) <= limit else reason[: limit - 1] + "…"


def exit_text(job: JobInfo) -> str:
    """The exit column: the signal or code, and a failed job's reason cut short: "2 · the ser…"."""
    code = job.exit_signal or ("" if job.exit_code is None else str(job.exit_code))
    reason = exit_reason(job, ROW_REASON_CHARS)
    return f"{code} · {reason}" if code and reason else code or reason


def job_uptime(job: JobInfo, now: float) -> str:
    """How long a job has run (or ran)."""
    if job.started_at is None:
        return "—"
    return duration((job.ended_at or now) - job.started_at)


def started_as(job: JobInfo) -> str:
    """How a job just launched runs: "pid 1234", or that it is still starting (no pid yet)."""
    if job.pid is not None:
        return f"pid {job.pid}"
    return "starting; its pid shows in the jobs table once it runs"


def age(seconds: float | None) -> str:
    """How old data is: live, 12s old, 3m 05s old."""
    if seconds is None:
        return "no data yet"
    return "live" if seconds < STALE_AFTER_S else f"{duration(seconds)} old"


HEALTH = {True: "healthy", False: "down", None: "unknown"}
"""The word for the server's health."""
KEY_WORDS: dict[KeyProblem, str] = {
    "refused": "key refused", "missing": "wants an API key", "unreadable": "key file unreadable",
}  # fmt: skip
"""The words after its health for a server that turns the probes' key away (the server_key
alert says which key and what to do)."""


def server_text(server: ServerStats | None, starting: JobInfo | None = None) -> str:
    """The server in a few lines of plain text (the first says its health in words: HEALTH).

    Load and rate are shown only while it is up: a down server's last log line is history,
    so it says since when it is down instead. A server whose job is `starting` (launched within
    the grace a model load takes) is said to be starting, not down: the demo's first screen said
    "unreachable: is the server up?" while it started it.
    """
    if server is None:
        return "SGLang: not probed yet"
    if starting is not None and server.healthy is False:
        what = "sglang-router" if server.is_router else "SGLang"
        return f"{what} {sanitise(server.url or '')}: starting (job {sanitise(starting.name)})"
    detail = sanitise(server.detail) if not server.healthy else ""
    what = "sglang-router" if server.is_router else "hosted API" if server.hosted else "SGLang"
    key = f" · {KEY_WORDS[server.key_problem]}" if server.key_problem else ""
    health = HEALTH[server.healthy] + key
    lines = [f"{what} {sanitise(server.url or '')}: {health} {detail}".rstrip()]
    if server.healthy is False and server.down_since is not None:
        lines.append(f"down since {clock(server.down_since)}")
    if server.model_path:
        lines.append(f"model {sanitise(server.model_path)}")
    if server.healthy is not True:
        return "\n".join(lines)
    return "\n".join(lines + _load_lines(server) + server_part_lines(server))


def starting_server(jobs: Sequence[JobInfo], now: float) -> JobInfo | None:
    """The agent's latest server job, when it is launching or loading within its start grace."""
    servers = sorted((j for j in jobs if j.kind == "server" and not j.external),
                     key=lambda j: j.started_at or 0.0)  # fmt: skip
    job = servers[-1] if servers else None
    if job is None or job.state not in ("starting", "running") or job.started_at is None:
        return None
    return job if now - job.started_at < SERVER_STARTING_GRACE_S else None


def _load_lines(server: ServerStats) -> list[str]:
    """Running, queued, usage, generation rate and acceptance of a server that is up."""
    load = {key: sanitise(value) for key, value in server.log_stats.items()}
    running, queued = _requests(server)
    lines = []
    if running is not None:
        usage = server.token_usage or load.get("token usage", "—")
        queue = f"{queued:g}" if queued is not None else "—"
        lines.append(f"running {running:g} · queued {queue} · token usage {usage}")
    rate = server_rate(server)
    if rate:
        lines.append(f"gen {tokens(rate)} tok/s")
    accept = server.accept_length or _float(load.get("accept len"))
    if accept:
        lines.append(f"accept length {accept:.2f}" + _acceptance(server))
    return lines


def _acceptance(server: ServerStats) -> str:
    """` · acceptance 41 % (0.62 0.35 0.26 by position)` where the server counts them."""
    if server.acceptance is None:
        return ""
    positions = " ".join(f"{rate:.2f}" for rate in server.position_acceptance[:8])
    return f" · acceptance {server.acceptance:.0%}" + (
        f" ({positions} by position)" if positions else ""
    )


def _requests(server: ServerStats) -> tuple[float | None, float | None]:
    """Requests running and queued: the probe's figures, else the server log's last batch line."""
    running: float | None = server.running_requests
    queued: float | None = server.queued_requests
    if running is None:
        running = _float(server.log_stats.get("#running-req"))
    if queued is None:
        queued = _float(server.log_stats.get("#queue-req"))
    return running, queued


def server_rate(server: ServerStats | None) -> float | None:
    """Generation tokens per second of a server that is up; 0 with no request running.

    None when it is down, unknown or not probed: its last log line is no rate of now.
    """
    if server is None or server.healthy is not True:
        return None
    running, _ = _requests(server)
    if running == 0:
        return 0.0
    return server.gen_throughput_tokens_per_s or _float(
        server.log_stats.get("gen throughput (token/s)")
    )


def server_part_lines(server: ServerStats) -> list[str]:
    """One line per DP rank (vLLM: engine), or per worker behind a router, under the totals."""
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


def _epoch(training: TrainingProgress) -> str:
    """The epoch, of how many when known: "epoch 2/3", "epoch 2" or "epoch —"."""
    if training.epoch is None:
        return "epoch —"
    return f"epoch {training.epoch}" + (f"/{training.epochs}" if training.epochs else "")


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
    """One block per training job: its step, the training figures and the evaluation's, apart.

    Step of its total, epoch and ETA; loss, accuracy and acceptance in training; the latest
    evaluation's on a line of its own; and where the total came from, or why there is none.
    `measured_accept` is what the drafter evaluation measured on the server, shown beside the
    best eval acceptance the trainer estimated.
    """
    names = {job.id: job.name for job in jobs}
    return "\n".join(
        "\n".join(_training_block(t, names.get(t.job_id, t.job_id), measured_accept)) for t in items
    )


def _training_block(t: TrainingProgress, name: str, measured_accept: float | None) -> list[str]:
    step = f"step {t.step or 0:,}" + (f"/{t.total_steps:,}" if t.total_steps else "")
    loss = f"loss {t.loss:.3f}" if t.loss is not None else "loss —"
    if t.loss_not_finite:
        loss = "loss NaN or inf (DIVERGED)"
    accuracy = f" · acc {t.accuracy:.2f}" if t.accuracy is not None else ""
    lines = [
        f"{sanitise(name)}: {step} · {_epoch(t)} · ETA {duration(t.eta_s)}",
        f"  {loss} {spark(t.loss_history)}{accuracy}",
    ]
    if t.zero_records > 1:
        lines.append(f"  loss or acc exactly 0 for {t.zero_records} logged steps: nothing learnt?")
    best = _best_eval(t, measured_accept)
    if t.eval is None or t.acceptance_length:
        accept = f"accept len {t.acceptance_length:.2f}" if t.acceptance_length else "accept len —"
        tail = best if t.eval is None else ""
        lines.append(f"  {accept}{tail} {spark(t.acceptance_history)}")
    if t.eval is not None:
        lines.append(f"  {_eval_line(t)}{best} {spark(t.eval.acceptance_history)}")
    if t.best_checkpoint or t.best_checkpoint_note:
        kept = t.best_checkpoint or f"unknown: {t.best_checkpoint_note}"
        lines.append(f"  best checkpoint {sanitise(kept)}")
    if t.total_note:
        lines.append(f"  total {'from' if t.total_steps else 'unknown:'} {sanitise(t.total_note)}")
    return lines


def _best_eval(t: TrainingProgress, measured_accept: float | None) -> str:
    """The best eval acceptance and the server's: ` (best 2.85 @ 800) · measured 2.66`."""
    below = f", {t.evals_since_best} eval(s) below it since" if t.evals_since_best else ""
    best = (
        f" (best {t.best_eval_acceptance:.2f} @ {t.best_eval_step}{below})"
        if t.best_eval_acceptance
        else ""
    )
    return best + (f" · measured {measured_accept:.2f}" if measured_accept is not None else "")


def _eval_line(t: TrainingProgress) -> str:
    """What was logged of an evaluation: `eval @ 1,000: loss 2.100 · acc 0.74 · accept len 2.81`."""
    evaluation = t.eval
    if evaluation is None:
        return "eval: —"
    parts = [
        f"loss {evaluation.loss:.3f}" if evaluation.loss is not None else "",
        f"acc {evaluation.accuracy:.2f}" if evaluation.accuracy is not None else "",
        f"accept len {evaluation.acceptance_length:.2f}" if evaluation.acceptance_length else "",
    ]
    step = f" @ {evaluation.step:,}" if evaluation.step is not None else ""
    return f"eval{step}: " + (" · ".join(part for part in parts if part) or "—")
