"""GPUs through `nvidia-smi --query-gpu` and `--query-compute-apps`; "no GPU" when absent.

`nvidia-smi` is whatever binary the config names: it runs bounded in time and output
(agent/host/bounded_process.py), and what it prints is read row by row, a row it cannot read
(or past MAX_GPUS) left out and said in the panel's note rather than failing the reading.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from agent.host.bounded_process import run_bounded
from agent.logs import reason_text
from agent.probes.values import figure, is_small_number
from agent.protocol import GpuSample

GPU_FIELDS = "index,uuid,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw"
APP_FIELDS = "gpu_uuid,pid,used_memory"
TIMEOUT_S = 10.0
MAX_OUTPUT_BYTES = 1024 * 1024
"""Far past any box's answer (a few hundred bytes a GPU)."""
MAX_GPUS = 64
"""Past any box: the rows after are left out (60,000 rows made a snapshot the console refuses)."""
MAX_APPS = 4096
MAX_NAME_CHARS = 100


@dataclass(frozen=True, slots=True)
class GpuReading:
    """The GPUs, or why there are none."""

    gpus: tuple[GpuSample, ...]
    note: str = ""


async def read_gpus(nvidia_smi: str = "nvidia-smi") -> GpuReading:
    """One reading of every GPU and which pids hold memory on it."""
    try:
        gpus = await _query(nvidia_smi, f"--query-gpu={GPU_FIELDS}")
        apps = await _query(nvidia_smi, f"--query-compute-apps={APP_FIELDS}")
    except FileNotFoundError:
        return GpuReading((), "no GPU: nvidia-smi not found")
    except (OSError, RuntimeError) as exc:
        return GpuReading((), f"nvidia-smi failed: {exc}")
    holders: dict[str, list[int]] = {}
    for row in apps[:MAX_APPS]:
        if len(row) >= 2 and is_small_number(row[1].strip()):
            holders.setdefault(row[0].strip(), []).append(int(row[1]))
    kept = gpus[:MAX_GPUS]
    samples = [sample for row in kept if (sample := _sample(row, holders)) is not None]
    notes = [f"{len(kept) - len(samples):,} of its {len(kept):,} GPU rows could not be read"]
    notes = notes if len(samples) < len(kept) else []
    if len(gpus) > MAX_GPUS:
        notes.append(f"it listed {len(gpus):,} GPUs, of which the first {MAX_GPUS} are shown")
    return GpuReading(tuple(samples), "nvidia-smi: " + "; ".join(notes) if notes else "")


async def _query(binary: str, query: str) -> list[list[str]]:
    answer = await run_bounded(
        (binary, query, "--format=csv,noheader,nounits"), TIMEOUT_S, MAX_OUTPUT_BYTES
    )
    if answer.timed_out:
        raise RuntimeError(f"no answer within {TIMEOUT_S:g} s (stopped)")
    if answer.flooded:
        raise RuntimeError(f"it printed more than {MAX_OUTPUT_BYTES:,} bytes (stopped)")
    if answer.returncode != 0:
        said = answer.err.decode(errors="replace").strip().splitlines()
        raise RuntimeError(reason_text(said[-1]) if said else f"exit {answer.returncode}")
    text = answer.out.decode(errors="replace").replace("\0", "")
    try:
        return [row for row in csv.reader(io.StringIO(text)) if row]
    except csv.Error as exc:  # a field past csv's limit, a quote never closed
        raise RuntimeError(f"its answer is not CSV: {exc}") from None


def _sample(row: list[str], holders: dict[str, list[int]]) -> GpuSample | None:
    """One GPU row, or None where it is not one (too short, or no index)."""
    if len(row) < 8 or not is_small_number(row[0].strip()):
        return None
    index, uuid, name, util, used, total, temp, power = (cell.strip() for cell in row[:8])
    return GpuSample(
        index=int(index), name=reason_text(name)[:MAX_NAME_CHARS], utilization_pct=_number(util),
        memory_used_mib=_number(used), memory_total_mib=_number(total),
        temperature_c=_number(temp), power_w=_number(power), pids=tuple(holders.get(uuid, ())),
    )  # fmt: skip


def _number(text: str) -> float | None:
    try:
        return figure(float(text))  # "inf" and "nan" are floats to Python, not readings
    except ValueError:
        return None  # "[N/A]" and friends
