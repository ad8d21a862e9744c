"""Filling in a job's argv, cwd and env for one launch, and refusing what is not safe.

Placeholders are bare names in braces ({dataset}); other braces pass through untouched. Values
are substituted into argv elements, never into a shell string, so a dataset name or an
argument reaches the job byte for byte. {trust_remote_code} is the one that is a whole element:
it becomes the flag or vanishes. What cannot be passed that way (a NUL byte, an unknown
placeholder, a dataset that is not a folder under the root) is refused with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from agent.protocol import JobSpec

PLACEHOLDERS = (
    "python", "bundle", "state_dir", "dataset", "dataset_dir", "budget", "sglang_url", "tokenizer",
    "trust_remote_code", "api", "model", "api_key_file", "best_checkpoint",
    "node_rank", "nnodes", "rdzv_id",
)  # fmt: skip
FROM_THE_SNAPSHOT = "{best_checkpoint}"
"""Filled from what the agent sees at launch (the training run's best evaluation's folder), not
from the config: a drafter server started with it serves the best weights, not the last."""
FLAG_PLACEHOLDER = "{trust_remote_code}"
"""An argv element of its own: --trust-remote-code when the host trusts its tokenizer's code,
else the element is left out (an empty argument would be a different command line)."""


class SpecError(Exception):
    """A job cannot be launched as asked; the message says why."""


class GpuBusyError(SpecError):
    """A GPU job cannot start while another job holds the GPUs."""

    def __init__(self, job: str, holders: list[str]) -> None:
        super().__init__(
            f"job {job} needs the GPUs, which {', '.join(holders)} hold(s); stop it first "
            "(the console offers to stop it and then start this job)"
        )
        self.holders = holders


@dataclass(frozen=True, slots=True)
class RenderedJob:
    """A job ready to exec."""

    argv: tuple[str, ...]
    cwd: str | None
    env: dict[str, str]


def render(
    name: str, spec: JobSpec, values: Mapping[str, str | None], argv: tuple[str, ...] | None = None
) -> RenderedJob:
    """Fill in `spec` (or the edited `argv`) with `values`; None values may not be used."""
    raw_argv = argv if argv is not None else spec.argv
    if not raw_argv:
        raise SpecError(f"job {name}: argv is empty")
    return RenderedJob(
        argv=tuple(
            _fill(name, f"argv[{i}]", part, values)
            for i, part in enumerate(raw_argv)
            if part != FLAG_PLACEHOLDER or values.get("trust_remote_code")
        ),
        cwd=_fill(name, "cwd", spec.cwd, values) if spec.cwd else None,
        env={key: _fill(name, f"env.{key}", value, values) for key, value in spec.env.items()},
    )


_SET_IN_CONFIG = {
    "tokenizer": "; set path under [hosts.NAME.tokenizer] in eagle-console.toml",
    "sglang_url": "; set url under [hosts.NAME.sglang] in eagle-console.toml",
    "model": "; set model under [hosts.NAME.sglang] in eagle-console.toml",
    "api_key_file": "; set api_key_file under [hosts.NAME.sglang] in eagle-console.toml",
    "best_checkpoint": (
        ": no training run's best evaluation has a checkpoint folder yet (the training panel's "
        "'best checkpoint' line says why)"
    ),
    **dict.fromkeys(
        ("node_rank", "nnodes", "rdzv_id"),
        (
            ": it is set for a job whose config names the boxes it spans (nodes = [...]), which the "
            "console starts on each of them"
        ),
    ),  # fmt: skip
}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A bare name in braces; any other brace (a dict literal in `python -c`) is left as it is."""


def _fill(name: str, where: str, template: str, values: Mapping[str, str | None]) -> str:
    def substitute(match: re.Match[str]) -> str:
        field = match[1]
        if field not in PLACEHOLDERS:
            raise SpecError(
                f"job {name}: {where} uses {{{field}}}; known placeholders: "
                + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
            )
        value = values.get(field)
        if field == "trust_remote_code" and (
            template != FLAG_PLACEHOLDER or not where.startswith("argv")
        ):
            raise SpecError(
                f"job {name}: {where} uses {{trust_remote_code}} in {template!r}; "
                "it may only be a whole argv element (it becomes --trust-remote-code or nothing)"
            )
        if value is None:
            raise SpecError(
                f"job {name}: {where} needs {{{field}}}, which has no value here"
                + _SET_IN_CONFIG.get(field, "")
            )
        return value

    text = _PLACEHOLDER.sub(substitute, template)
    if "\0" in text:
        raise SpecError(f"job {name}: {where} contains a NUL byte, which no argv can carry")
    return text


def check_dataset_name(name: str, known: set[str]) -> str:
    """`name` if it is one of the dataset folders; refuses paths and option-like names."""
    if name not in known:
        raise SpecError(f"no dataset {name!r} under the datasets root")
    if name.startswith(("-", ".")) or "/" in name:
        raise SpecError(f"dataset name {name!r} is not safe to pass to a job")
    return name


def uses_the_snapshot(spec: JobSpec) -> bool:
    """True when the job's argv, cwd or env names a value only a snapshot gives."""
    parts = (*spec.argv, spec.cwd or "", *spec.env.values())
    return any(FROM_THE_SNAPSHOT in part for part in parts)
