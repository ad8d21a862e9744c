"""The demo's eagle-console.toml: written as a user would for a real box, then loaded like one.

The demo runs from this file, so the example beside the workspace is never out of date.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from console.config import HostConfig, load_config
from console.config.toml_text import job_blocks, quoted
from console.demo.workspace import HIDDEN_STATES_QUOTA, OLD_RUN, Workspace, write_gpu_standin

DEMO_END_OF_TURN_ID = 4
"""`<|im_end|>` in the demo's tokenizer (agent.simulator.tokenizer.end_of_turn_id, checked by a
test): the simulated target stops its answers with it, as a chat model does."""

BUDGET = 100_000
"""Tokens per dataset: two or three minutes of simulated generation, not hours."""
OLD_RUN_BUDGET = 15_000
"""B3_math's own budget: its old run (no --token-budget, about 1,000 tokens/s) crosses it some
15 s after its first responses, so the overrun that `R` fixes is on screen within half a minute
of the rows appearing (at 50,000 it took 70-80 s); the run goes on towards its
--max-samples (about 200,000 tokens) for minutes more, so the moment lasts."""
DRAFT_VOCAB = 8000
TARGET_VOCAB = 32000
DRAFTER_ACCEPT_LENGTH = 2.7
"""The demo's "trained drafter": about what the stand-in trainer's last eval acceptance says."""
DRAFTER_DRAFT_TOKENS = 8
"""Verified per step: at concurrency 32 the drafter costs more than it saves (0.66x)."""
CAPTURE_TOKENS_PER_S = 60_000
"""The hidden-states stand-in's pace: the demo's million tokens in about 20 s, long enough to
watch its rate and ETA."""
RESTART = {"restart": "on-failure", "restart_delay_s": 2}
"""The servers and the runs come back by themselves when they crash (the demo crashes each once)."""


@dataclass(frozen=True, slots=True)
class SshAccess:
    """How the --ssh demo reaches its loopback server."""

    port: int
    user: str
    identity: Path
    known_hosts: Path
    ssh_config: Path


def write_demo_config(
    space: Workspace, sglang_port: int, ssh: SshAccess | None, drafter_port: int = 0
) -> HostConfig:
    """Write the config and load the demo host back from it (`drafter_port`: B's second server)."""
    lines = [
        "# The demo's host, written as the config for a real GPU box would be.",
        *headless_tip(space.config),
        "[hosts.demo]",
        *_connection(ssh),
        f"python = {quoted(sys.executable)}",
        f"state_dir = {quoted(space.state)}",
        f"deploy_roots = [{quoted(space.remote_script.parent)}]",
        f"nvidia_smi = {quoted(write_gpu_standin(space, sglang_port))}  # imaginary GPUs; a box has its own",
        "",
        "[hosts.demo.datasets]",
        f"root = {quoted(space.datasets)}",
        f"budget = {BUDGET}",
        f"budgets = {{ {OLD_RUN} = {OLD_RUN_BUDGET} }}",
        "",
        "[hosts.demo.sglang]",
        f'url = "http://127.0.0.1:{sglang_port}"',
        f"log = {quoted(space.root / 'sglang.log')}",
        '# api_key_file = "~/.sglang-key"  # for a server with --api-key: jobs get $EAGLE_API_KEY_FILE',
        "",
        "[[hosts.demo.deploy]]",
        f"local = {quoted(space.local_script)}",
        f"remote = {quoted(space.remote_script)}",
        "",
        *_jobs(space, sglang_port, drafter_port or sglang_port + 1),
    ]
    space.config.write_text("\n".join(lines))
    return load_config(space.config).host("demo")


def headless_tip(config: Path) -> list[str]:
    """The headless commands to try beside the TUI, each as it runs against this config."""
    command = f"{shlex.quote(console_command())} --config {shlex.quote(str(config))}"
    tries = ["status demo", "jobs demo", "autopilot demo", "report demo", "doctor demo",
             "events demo --since 1h", "deploy demo --dry-run", "apply demo --dry-run",
             f"redeploy demo {OLD_RUN} --token-budget {OLD_RUN_BUDGET}"]  # fmt: skip
    lines = ["# While the demo runs, try in another terminal:"]
    return [
        *lines, *(f"#   {command} {rest}" for rest in tries),
        "# and `start demo NAME`, `stop demo NAME` (jobs lists the names), each with --json",
    ]  # fmt: skip


def console_command() -> str:
    """How to run this eagle-console from another terminal, as the tips print it.

    Its bare name where the shell finds this very one, else its path: after `make demo` the
    venv is not on PATH, and the bare name was "command not found".
    """
    here = Path(sys.executable).parent / "eagle-console"
    found = shutil.which("eagle-console")
    if found is not None and Path(found).resolve() == here.resolve():
        return "eagle-console"
    return str(here) if here.exists() else "eagle-console"


def _connection(ssh: SshAccess | None) -> list[str]:
    if ssh is None:
        return ['ssh = "local"  # this machine: the agent runs as a subprocess, no SSH']
    return [
        f'ssh = "{ssh.user}@127.0.0.1:{ssh.port}"',
        f"known_hosts = {quoted(ssh.known_hosts)}  # the server's key, pinned before the first connect",
        f"identity = {quoted(ssh.identity)}",
        f"ssh_config = {quoted(ssh.ssh_config)}",
    ]


def _jobs(space: Workspace, sglang_port: int, drafter_port: int) -> list[str]:
    runner = ["{python}", "-m", "agent.pipeline.inference", "--server", "{sglang_url}",
              "--dataset-dir", "{dataset_dir}", "--tokenizer", str(space.tokenizer),
              "--concurrency", "6", "--max-new-tokens", "1200"]  # fmt: skip
    target = ["--speed", "2", "--mean-tokens", "120", "--sd-tokens", "90",
              "--tokens-per-prompt-token", "3", "--max-running-requests", "48",
              "--vocab-size", str(TARGET_VOCAB), "--stop-id", str(DEMO_END_OF_TURN_ID)]  # fmt: skip
    server = ["{python}", "-m", "agent.simulator", "--port", str(sglang_port), "--log-file",
              str(space.root / "sglang.log"), *target]  # fmt: skip
    drafter = ["{python}", "-m", "agent.simulator", "--port", str(drafter_port), "--log-file",
               str(space.root / "sglang-drafter.log"), *target,
               "--speculative-accept-length", str(DRAFTER_ACCEPT_LENGTH),
               "--speculative-num-draft-tokens", str(DRAFTER_DRAFT_TOKENS),
               "--speculative-draft-model-path", str(space.root / "drafter")]  # fmt: skip
    # the agent adds --exclude with the evaluation's --prompts: its prompts stay out of training
    export = ["{python}", "-m", "agent.pipeline.export", "--datasets-root", str(space.datasets),
              "--tokenizer", str(space.tokenizer), "--out", str(space.root / "export"),
              "--drop", "truncated,looping", "--chat-template", "lfm"]  # fmt: skip
    evaluate = ["{python}", "-m", "agent.pipeline.evaluate", "--server",
                f"http://127.0.0.1:{drafter_port}", "--baseline", "{sglang_url}",
                "--prompts", str(space.held_out), "--tokenizer", str(space.tokenizer),
                "--num-prompts", "32", "--concurrency", "1,8,32", "--max-new-tokens", "48",
                "--out", str(space.root / "eval")]  # fmt: skip
    vocab = ["{python}", "-m", "agent.pipeline.vocab", "--datasets-root", str(space.datasets),
             "--target-vocab-size", str(TARGET_VOCAB), "--draft-vocab-size", str(DRAFT_VOCAB),
             "--out", str(space.root / "vocab")]  # fmt: skip
    hidden_states = ["{python}", "-m", "agent.simulator.prepare_hidden_states", "--target-model-path",
                     str(space.target), "--data-path", str(space.root / "export" / "all" / "ids"),
                     "--output-path", str(space.hidden_states), "--max-length", "2048",
                     "--tokens-per-s", str(CAPTURE_TOKENS_PER_S)]  # fmt: skip
    train = ["{python}", "-m", "agent.simulator.train", "--steps", "600", "--step-s", "0.1",
             "--log-interval", "30", "--save-drafter", str(space.root / "drafter"),
             "--target-config", str(space.target / "config.json"), "--vocab-dir",
             str(space.root / "vocab")]  # fmt: skip
    jobs: dict[str, dict[str, object]] = {
        "sglang": {"argv": server, "kind": "server", "gpu": True, "grace_s": 10, **RESTART},
        "inference": {"argv": [*runner, "--token-budget", "{budget}"], "kind": "inference",
                      "per_dataset": True, "stop_signal": "SIGINT", "grace_s": 15, **RESTART},
        "inference-old": {"argv": [*runner, "--max-samples", "1000"], "kind": "inference",
                          "per_dataset": True, "stop_signal": "SIGINT", "grace_s": 15, **RESTART},
        "vocab": {"argv": vocab, "kind": "vocab"},
        # gpu = false as for the drafter's server below: on a box the capture holds the GPUs
        "hidden-states": {"argv": hidden_states, "kind": "hidden_states", "stop_signal": "SIGINT",
                          "grace_s": 10, "output_quota_gib": HIDDEN_STATES_QUOTA / 2**30},
        "train": {"argv": train, "kind": "train", "gpu": True, "stop_signal": "SIGINT", "grace_s": 10},
        "export": {"argv": export, "kind": "export"},
        # the drafter's server: gpu = false only because the demo's "GPUs" are imaginary; on a box
        # it runs on GPUs of its own, or the evaluation runs without --baseline
        "sglang-drafter": {"argv": drafter, "kind": "drafter_server", "grace_s": 10, **RESTART},
        "evaluate": {"argv": evaluate, "kind": "evaluate", "stop_signal": "SIGINT", "grace_s": 10},
    }  # fmt: skip
    return job_blocks("demo", jobs)
