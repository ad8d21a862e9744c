"""A stand-in for `nvidia-smi`: imaginary GPUs, held by the simulated server while it runs.

The demo's server and trainer are jobs with `gpu = true`, so the agent gates training on free
GPUs, and `doctor` wants a GPU reading. Where there is no GPU the demo points the host's
`nvidia_smi` here: the two queries the GPU probe makes (agent/probes/gpus.py) are answered in
nvidia-smi's own CSV (`--format=csv,noheader,nounits`), and the processes that hold the
imaginary GPUs are the simulator serving on `--serving-port` and any simulated trainer, found in
/proc as nvidia-smi finds the processes using a GPU.

    python -m agent.simulator.nvidia_smi --serving-port 30000 --query-gpu=index,... --format=...
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agent.host.procfs import all_pids, command_line

GPUS = 2
NAME = "Simulated GPU (demo)"
TOTAL_MIB = 81559
HELD_MIB = 70000
"""What each holder is shown using on every GPU: a tensor-parallel server fills them all."""


def holders(serving_port: int) -> list[int]:
    """The pids of the simulated server on `serving_port` and of simulated trainers."""
    return sorted(pid for pid in all_pids() if _holds(command_line(pid), serving_port))


def _holds(argv: list[str], serving_port: int) -> bool:
    return "agent.simulator.train" in argv or (
        "agent.simulator" in argv and _port(argv) == serving_port
    )


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
    parser.add_argument("--query-gpu")
    parser.add_argument("--query-compute-apps")
    parser.add_argument("--format", default="csv,noheader,nounits")
    args = parser.parse_args(argv)
    pids = holders(args.serving_port)
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
