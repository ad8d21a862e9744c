"""`python -m agent.simulator.train`: a stand-in drafter trainer printing SpecForge-style lines.

For the demo and the tests: a tqdm bar per epoch with loss and acceptance in its postfix, and
`Eval - Step N [e/E], position i,  Acc: x` lines every --log-interval steps. Loss falls steadily;
acceptance rises and then sags a little, as real runs do.
"""

from __future__ import annotations

import argparse
import math
import sys
import time


def main(argv: list[str] | None = None) -> int:
    """Print training lines until the steps are done."""
    parser = argparse.ArgumentParser(prog="python -m agent.simulator.train", description=__doc__)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--step-s", type=float, default=0.05, help="seconds per step")
    parser.add_argument("--log-interval", type=int, default=20)
    parser.add_argument("--positions", type=int, default=3)
    args = parser.parse_args(argv)
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
            f"[00:00<{int(remaining // 60):02d}:{int(remaining % 60):02d},  {1 / args.step_s:.2f}it/s, "
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
