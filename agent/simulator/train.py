"""`python -m agent.simulator.train`: a stand-in drafter trainer printing SpecForge-style lines.

For the demo and the tests: a tqdm bar per epoch with loss and acceptance in its postfix, and
`Eval - Step N [e/E], position i,  Acc: x` lines every --log-interval steps. Loss falls steadily;
acceptance rises and then sags a little, as real runs do. With --save-drafter it writes a drafter
folder at the end (agent/simulator/drafter_folder.py), which the demo's drafter server serves.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from agent.simulator.drafter_folder import write_drafter


def main(argv: list[str] | None = None) -> int:
    """Print training lines until the steps are done."""
    parser = argparse.ArgumentParser(prog="python -m agent.simulator.train", description=__doc__)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--step-s", type=float, default=0.05, help="seconds per step")
    parser.add_argument("--log-interval", type=int, default=20)
    parser.add_argument("--positions", type=int, default=3)
    parser.add_argument("--save-drafter", type=Path, help="write a drafter folder here at the end")
    parser.add_argument("--target-config", type=Path, help="the target's config.json")
    parser.add_argument("--vocab-dir", type=Path, help="the vocab job's --out (its d2t, t2d)")
    args = parser.parse_args(argv)
    if args.save_drafter is not None and args.target_config is None:
        parser.error("--save-drafter needs --target-config")
    per_epoch = max(1, args.steps // args.epochs)
    print("Starting training from epoch:0 step:0", flush=True)  # noqa: T201
    for step in range(1, args.steps + 1):
        epoch = (step - 1) // per_epoch
        loss = 4.0 * math.exp(-step / args.steps * 2) + 0.5
        accept = 0.45 + 0.35 * math.sin(min(step / args.steps, 0.9) * math.pi / 1.6)
        done = step - epoch * per_epoch
        remaining = (per_epoch - done) * args.step_s  # tqdm's bar counts its own epoch only
        bar = "█" * (10 * done // per_epoch)
        sys.stdout.write(
            f"\rTraining Epoch {epoch}: {100 * done // per_epoch:3d}%|{bar:<10}| {done}/{per_epoch} "
            f"[00:00<{int(remaining // 60):02d}:{int(remaining % 60):02d},  {1 / max(args.step_s, 1e-3):.2f}it/s, "
            f"loss={loss:.3f}, acc={accept:.3f}, acceptance_rate={accept:.3f}]"
        )
        sys.stdout.flush()
        if step % args.log_interval == 0:
            sys.stdout.write("\n")
            for position in range(args.positions):
                sys.stdout.write(
                    f"Eval - Step {step} [{epoch + 1}/{args.epochs}], position {position},  Acc: {accept * 0.9**position:.2f}\n"
                )
            sys.stdout.flush()
        time.sleep(args.step_s)
    print(f"\nTraining completed at step {args.steps}, saving final checkpoint...", flush=True)  # noqa: T201
    if args.save_drafter is not None:
        write_drafter(args.save_drafter, args.target_config, args.vocab_dir)
        print(f"saved the drafter to {args.save_drafter}", flush=True)  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
