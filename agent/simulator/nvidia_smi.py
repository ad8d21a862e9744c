"""A stand-in for `nvidia-smi`: imaginary GPUs, held by the simulated server while it runs.

The demo's server and trainer are jobs with `gpu = true`, so the agent gates training on free
GPUs, and `doctor` wants a GPU reading. Where there is no GPU the demo points the host's
`nvidia_smi` here: the two queries the GPU probe makes (agent/probes/gpus.py) are answered in
nvidia-smi's own CSV (`--format=csv,noheader,nounits`), and the processes that hold the
imaginary GPUs are the simulator serving on `--serving-port` and the simulated trainers working
under `--workspace` (their working folder there: a job's is its folder in the agent's state),
found in /proc as nvidia-smi finds the processes using a GPU. Two demos on one machine each see
their own: a trainer of the other's never holds this one's GPUs.

    python -m agent.simulator.nvidia_smi --serving-port 30000 --workspace DIR --query-gpu=...
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from agent.host.procfs import all_pids, command_line

GPUS = 2
NAME = "Simulated GPU (demo)"
TOTAL_MIB = 81559
HELD_MIB = 70000
"""What each holder is shown using on every GPU: a tensor-parallel server fills them all."""


def holders(serving_port: int, workspace: Path) -> list[int]:
    """The simulated server on `serving_port` and the simulated trainers under `workspace`."""
    return sorted(pid for pid in all_pids() if _holds(pid, serving_port, workspace))


def _holds(pid: int, serving_port: int, workspace: Path) -> bool:
    argv = command_line(pid)
    if "agent.simulator.train" in argv:
        return _works_under(pid, workspace)
    return "agent.simulator" in argv and _port(argv) == serving_port


def _works_under(pid: int, workspace: Path) -> bool:
    try:
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:  # gone, or another user's
        return False
    return cwd == workspace or workspace in cwd.parents


def _port(argv: list[str]) -> int | None:
    if "--port" not in argv:
        return None
    value = argv[argv.index("--port") + 1 :][:1]
    return int(value[0]) if value and value[0].isdigit() else None


def gpu_rows(held: bool) -> list[str]:
    """`index, uuid, name, utilization, memory used, memory total, temperature, power`."""
    used, util, temp, power = (HELD_MIB, 96, 63, "598.20") if held else (3, 0, 34, "71.05")
    return [
        f"{index}, GPU-demo-{index}, {NAME}, {util}, {used}, {TOTAL_MIB}, {temp}, {power}"
        for index in range(GPUS)
    ]


def app_rows(pids: Sequence[int]) -> list[str]:
    """`gpu_uuid, pid, used_memory`: every holder on every GPU."""
    return [f"GPU-demo-{index}, {pid}, {HELD_MIB}" for pid in pids for index in range(GPUS)]


def main(argv: Sequence[str] | None = None) -> int:
    """Answer one query as nvidia-smi does, in CSV with no header and no units."""
    parser = argparse.ArgumentParser(prog="nvidia-smi (simulated)", description=__doc__)
    parser.add_argument("--serving-port", type=int, required=True)
    parser.add_argument("--workspace", type=Path, required=True, help="the demo's folder")
    parser.add_argument("--query-gpu")
    parser.add_argument("--query-compute-apps")
    parser.add_argument("--format", default="csv,noheader,nounits")
    args = parser.parse_args(argv)
    pids = holders(args.serving_port, args.workspace.resolve())
    if args.query_gpu:
        rows = gpu_rows(bool(pids))
    elif args.query_compute_apps:
        rows = app_rows(pids)
    else:
        rows = [f"{GPUS} x {NAME}: answers only --query-gpu and --query-compute-apps"]
    sys.stdout.write("".join(row + "\n" for row in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
