"""A drafter server's command line at one draft setting, and the evaluation's at one folder.

SGLang takes `--speculative-num-steps`, `--speculative-eagle-topk` and
`--speculative-num-draft-tokens` (srt/server_args.py); vLLM takes `num_speculative_tokens` inside
its `--speculative-config` JSON (config/speculative.py). A value already in the argv is replaced
where it stands (`--flag V` or `--flag=V`), else the flag is added at the end. What cannot be set
(a setting for the other server, a --speculative-config that is not a JSON object) is a
ValueError saying so: the sweep refuses before it starts anything.
"""

from __future__ import annotations

import json

from agent.plans.drafter_inputs import VLLM_CONFIG_FLAGS, server_kind
from agent.probes.training.command import flag_value
from agent.protocol import DraftSetting

SGLANG_FLAGS = {
    "steps": "--speculative-num-steps",
    "topk": "--speculative-eagle-topk",
    "draft_tokens": "--speculative-num-draft-tokens",
}
VLLM_CONFIG = VLLM_CONFIG_FLAGS[0]


def setting_argv(argv: tuple[str, ...], setting: DraftSetting) -> tuple[str, ...]:
    """`argv` serving at `setting`; ValueError when this server cannot take it."""
    kind = server_kind(argv)
    if kind == "vllm":
        if setting.steps or setting.topk or setting.draft_tokens:
            raise ValueError("vLLM sets only num_speculative_tokens (--tokens), not steps, top-k "
                             "or draft tokens")  # fmt: skip
        if setting.speculative_tokens is None:
            return argv
        return _vllm(argv, setting.speculative_tokens)
    if kind != "sglang":
        raise ValueError("the drafter server's argv runs neither SGLang nor vLLM")
    if setting.speculative_tokens is not None:
        raise ValueError("SGLang sets steps, top-k and draft tokens, not vLLM's --tokens")
    for field, flag in SGLANG_FLAGS.items():
        value = getattr(setting, field)
        if value is not None:
            argv = with_flag(argv, flag, str(value))
    return argv


def setting_name(setting: DraftSetting) -> str:
    """`steps 3 · top-k 1 · draft tokens 4`, or `4 speculative tokens`."""
    parts = [
        f"{label} {value}" for label, value in (
            ("steps", setting.steps), ("top-k", setting.topk),
            ("draft tokens", setting.draft_tokens),
            ("speculative tokens", setting.speculative_tokens),
        ) if value is not None
    ]  # fmt: skip
    return " · ".join(parts) or "the job's own settings"


def with_flag(argv: tuple[str, ...], flag: str, value: str) -> tuple[str, ...]:
    """`flag value` in `argv`: replaced where it last stands (the one a parser keeps), else added."""
    parts = list(argv)
    for index in reversed(range(len(parts))):
        if parts[index] == flag and index + 1 < len(parts):
            parts[index + 1] = value
            return tuple(parts)
        if parts[index].startswith(flag + "="):
            parts[index] = f"{flag}={value}"
            return tuple(parts)
    return (*argv, flag, value)


def _vllm(argv: tuple[str, ...], tokens: int) -> tuple[str, ...]:
    text = flag_value(argv, *VLLM_CONFIG_FLAGS)
    if text is None:
        raise ValueError(f"the vLLM drafter server's argv has no {VLLM_CONFIG}")
    try:
        config = json.loads(text)
    except ValueError:
        config = None
    if not isinstance(config, dict):
        raise ValueError(f"its {VLLM_CONFIG} is not a JSON object: {text[:80]!r}")
    spelled = next(
        name for part in reversed(argv) if (name := part.partition("=")[0]) in VLLM_CONFIG_FLAGS
    )
    return with_flag(argv, spelled, json.dumps(config | {"num_speculative_tokens": tokens}))
