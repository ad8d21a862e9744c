"""GPUs through `nvidia-smi --query-gpu` and `--query-compute-apps`; "no GPU" when absent."""

from __future__ import annotations

import asyncio
import csv
import io
from dataclasses import dataclass

from agent.probes.values import is_small_number
from agent.protocol import GpuSample

GPU_FIELDS = "index,uuid,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw"
APP_FIELDS = "gpu_uuid,pid,used_memory"
TIMEOUT_S = 10.0


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
    except (OSError, RuntimeError, TimeoutError) as exc:
        return GpuReading((), f"nvidia-smi failed: {exc}")
    holders: dict[str, list[int]] = {}
    for row in apps:
        if len(row) >= 2 and is_small_number(row[1].strip()):
            holders.setdefault(row[0].strip(), []).append(int(row[1]))
    return GpuReading(tuple(_sample(row, holders) for row in gpus if len(row) >= 8))


async def _query(binary: str, query: str) -> list[list[str]]:
    process = await asyncio.create_subprocess_exec(
        binary, query, "--format=csv,noheader,nounits",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), TIMEOUT_S)
    if process.returncode != 0:
        raise RuntimeError(err.decode(errors="replace").strip() or f"exit {process.returncode}")
    return [row for row in csv.reader(io.StringIO(out.decode())) if row]


def _sample(row: list[str], holders: dict[str, list[int]]) -> GpuSample:
    index, uuid, name, util, used, total, temp, power = (cell.strip() for cell in row[:8])
    return GpuSample(
        index=int(index), name=name, utilization_pct=_number(util), memory_used_mib=_number(used),
        memory_total_mib=_number(total), temperature_c=_number(temp), power_w=_number(power),
        pids=tuple(holders.get(uuid, ())),
    )  # fmt: skip


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]" and friends
