"""The demo's workspace: eight datasets named like a real run, a tokenizer, and scripts to deploy."""

from __future__ import annotations

import json
import os
import random
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from console.link.bundle import local_bundle

DATASETS = {
    "B1_sharegpt": (520, 40), "B2_ultrachat": (480, 30), "B3_math": (1200, 20), "B4_code": (400, 60),
    "B5_sharegpt4": (440, 50), "B6_wildchat": (520, 25), "B7_reasoning": (360, 80), "B8_openhermes": (480, 35),
}  # fmt: skip
"""Name -> (prompts, words per prompt)."""
MULTI_TURN = "B2_ultrachat"
"""The dataset of conversations: each assistant turn is regenerated in order, as on UltraChat."""
OLD_RUN = "B3_math"
"""The dataset whose run is the old invocation, with --max-samples and no budget."""
TARGET_CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8,
                 "num_hidden_layers": 4, "vocab_size": 32000, "torch_dtype": "bfloat16"}  # fmt: skip
"""The demo's target as its config.json says (hidden states of about 80 bytes a token)."""
HIDDEN_STATES_QUOTA = 1 << 30
"""The hidden-states folder's quota (`output_quota_gib = 1`)."""
STALE_ROOM = 16 << 20
"""What the stale capture leaves of the quota: less than the demo's ~100 MB of hidden states."""
WORDS = "explain write summarize solve prove compute the a of to and in question answer problem step code function python math story".split()


@dataclass(frozen=True, slots=True)
class Workspace:
    """Where the demo keeps everything; the folder names say what plays which part."""

    root: Path

    @property
    def datasets(self) -> Path:
        """One folder per dataset, as on the GPU box."""
        return self.root / "datasets"

    @property
    def state(self) -> Path:
        """The agent's state directory."""
        return self.root / "agent-state"

    @property
    def tokenizer(self) -> Path:
        """The small tokenizer, saved with a chat template."""
        return self.root / "tokenizer"

    @property
    def held_out(self) -> Path:
        """Prompts kept out of every dataset, for the drafter's evaluation (B)."""
        return self.root / "held_out.jsonl"

    @property
    def local_script(self) -> Path:
        """The script "on the laptop" that the user edits."""
        return self.root / "local" / "run_inference.py"

    @property
    def remote_script(self) -> Path:
        """Its older copy "on the box"."""
        return self.root / "remote" / "run_inference.py"

    @property
    def ssh(self) -> Path:
        """The loopback SSH server's keys, known_hosts and port (--ssh only)."""
        return self.root / "ssh"

    @property
    def config(self) -> Path:
        """The example config, which the demo itself loads."""
        return self.root / "eagle-console.toml"

    @property
    def target(self) -> Path:
        """The target model's config.json (no weights): what the hidden-states plan reads."""
        return self.root / "target"

    @property
    def hidden_states(self) -> Path:
        """Where the hidden-states stand-in writes, under a quota a stale capture nearly fills."""
        return self.root / "hidden-states"

    @property
    def stale_capture(self) -> Path:
        """An earlier capture's leftovers in that folder: the demo deletes it after the refusal."""
        return self.hidden_states / "stale-capture.tar"


def build_workspace(space: Workspace) -> None:
    """Datasets, tokenizer, scripts, and the target's config with its hidden states' folder."""
    space.root.mkdir(parents=True, exist_ok=True)
    write_datasets(space)
    subprocess.run(
        [sys.executable, "-m", "agent.simulator.tokenizer", str(space.tokenizer)],
        env=bundle_env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    prepare_scripts(space)
    write_target(space)


def write_target(space: Workspace) -> None:
    """The imaginary target's config.json, and a stale capture filling its output's quota.

    The hidden size is tiny so its hidden states take megabytes, not terabytes; the stale file is
    sparse (its size counts against the quota, as the plan counts sizes, but takes no disk).
    """
    space.target.mkdir(parents=True, exist_ok=True)
    (space.target / "config.json").write_text(json.dumps(TARGET_CONFIG, indent=2) + "\n")
    space.hidden_states.mkdir(parents=True, exist_ok=True)
    with space.stale_capture.open("wb") as handle:
        handle.truncate(HIDDEN_STATES_QUOTA - STALE_ROOM)


def write_datasets(space: Workspace, seed: int = 7) -> None:
    """Chat prompts of different sizes per dataset, and held-out prompts for the evaluation."""
    rng = random.Random(seed)
    with space.held_out.open("w") as handle:
        for index in range(32):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 40)))
            record = {"id": f"held-{index}", "messages": [{"role": "user", "content": text}]}
            handle.write(json.dumps(record) + "\n")
    for name, (count, words) in DATASETS.items():
        folder = space.datasets / name
        folder.mkdir(parents=True, exist_ok=True)
        turns = 3 if name == MULTI_TURN else 1
        with (folder / "prompts.jsonl").open("w") as handle:
            for index in range(count):
                record = {"id": f"{name}-{index}", "messages": _chat(rng, words, turns)}
                handle.write(json.dumps(record) + "\n")


def _chat(rng: random.Random, words: int, turns: int) -> list[dict[str, str]]:
    """User turns of about `words` words, with another model's answers between them."""
    messages = []
    for turn in range(rng.randint(1, turns) if turns > 1 else 1):  # one-turn chats draw as before
        if turn:
            messages.append({"role": "assistant", "content": " ".join(rng.choices(WORDS, k=8))})
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(words // 2, words * 2)))
        messages.append({"role": "user", "content": text})
    return messages


def prepare_scripts(space: Workspace) -> None:
    """A script on "the laptop" and an older copy "on the box", so `d` has drift to show."""
    space.local_script.parent.mkdir(exist_ok=True)
    space.remote_script.parent.mkdir(exist_ok=True)
    space.local_script.write_text('"""The fixed runner."""\nBUDGET_FLAG = "--token-budget"\n')
    space.remote_script.write_text('"""The old runner: no budget."""\n')


def write_gpu_standin(space: Workspace, serving_port: int) -> Path:
    """`bin/nvidia-smi` in the workspace: imaginary GPUs held by the demo's server on its port.

    The demo's server and trainer have `gpu = true` as on a real box; the host's `nvidia_smi`
    names this file, so the GPU panel, the training gate and `doctor` see GPUs.
    """
    standin = space.root / "bin" / "nvidia-smi"
    standin.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "agent.simulator.nvidia_smi",
        "--serving-port",
        str(serving_port),
        "--workspace",
        str(space.root),
    ]
    standin.write_text(
        "#!/bin/sh\n# The demo's stand-in for nvidia-smi: agent/simulator/nvidia_smi.py\n"
        f'PYTHONPATH={shlex.quote(str(local_bundle().source))} exec {shlex.join(command)} "$@"\n'
    )
    standin.chmod(0o755)
    return standin


def bundle_env() -> dict[str, str]:
    """The environment for the demo's own Python subprocesses: the agent package importable."""
    return dict(os.environ, PYTHONPATH=str(local_bundle().source))
