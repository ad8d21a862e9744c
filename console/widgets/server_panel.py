"""The SGLang server: health, model, load and a sparkline of generation throughput."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from agent.protocol import GpuSample, ServerStats
from console.model import tokens


class ServerPanel(Vertical):
    """Server health and load, with the throughput of the last minutes."""

    def compose(self) -> ComposeResult:
        """A text block and a sparkline."""
        yield Static(id="server-text")
        yield Sparkline([], id="server-throughput")

    def show(self, server: ServerStats | None, throughput: list[float]) -> None:
        """Render the latest reading."""
        self.query_one("#server-text", Static).update(server_text(server))
        self.query_one("#server-throughput", Sparkline).data = throughput or [0.0]


def server_text(server: ServerStats | None) -> str:
    """The server in a few lines."""
    if server is None:
        return "SGLang: not probed yet"
    health = {True: "[green]healthy[/]", False: "[red]down[/]", None: "unknown"}[server.healthy]
    lines = [
        f"SGLang {server.url or ''}: {health} {server.detail if not server.healthy else ''}".rstrip()
    ]
    if server.model_path:
        lines.append(f"model {server.model_path}")
    load = server.log_stats
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
    return "\n".join(lines)


def gpu_text(gpus: tuple[GpuSample, ...], note: str) -> str:
    """One line per GPU: utilisation, memory, temperature, holder."""
    if not gpus:
        return note or "GPUs: not probed yet"
    return "\n".join(
        f"GPU{g.index} {g.utilization_pct or 0:.0f}% · {tokens((g.memory_used_mib or 0) * 2**20)}B / "
        f"{tokens((g.memory_total_mib or 0) * 2**20)}B · {g.temperature_c or 0:.0f}°C"
        + (
            f" · {', '.join(g.job_ids)}"
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
