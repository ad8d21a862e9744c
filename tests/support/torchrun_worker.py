"""A tiny torchrun worker: join the group over gloo, sum the ranks, write what it saw, then act.

Run by torchrun (`python -m torch.distributed.run ... torchrun_worker.py OUT MODE NODE`) on each
box's part in the tests of jobs across boxes; NODE is the console's node rank for the box
({node_rank}). torch's own GROUP_RANK is c10d's: given in the order the boxes joined. MODE: `finish` exits 0; `sleep` waits to be stopped;
`fail-node-1` makes node 1's worker SIGKILL its torchrun, as a box that crashed: no torchrun on
node 1 is left to close the rendezvous, so node 0's waits for a collective that never comes (a
torchrun that fails in order closes it, and the others may notice and fail too).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from agent.host.signals import kill_process


def main() -> int:
    """Join, all-reduce, record, then finish, sleep or fail as MODE says."""
    out, mode, node = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    dist.init_process_group("gloo")
    total = torch.tensor([dist.get_rank() + 1.0])
    dist.all_reduce(total)
    seen = {"rank": dist.get_rank(), "world_size": dist.get_world_size(), "sum": total.item(),
            "node": node, "group_rank": int(os.environ["GROUP_RANK"]),
            "run_id": os.environ.get("TORCHELASTIC_RUN_ID")}  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rank{dist.get_rank()}.json").write_text(json.dumps(seen))
    if mode == "finish":
        dist.destroy_process_group()
        return 0
    if mode == "fail-node-1" and node == 1:
        print(f"node {node}: the box went down at step 1", file=sys.stderr, flush=True)
        kill_process(os.getppid(), signal.SIGKILL)  # torchrun itself, with no goodbye
        os._exit(3)
    while True:
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
