"""The export leaves the evaluation's prompts out of training by default.

A drafter's speedup measured on prompts it trained on is worthless, so an `export` job that runs
our export gets `--exclude FILE` for the prompts file of each `evaluate` job of the same host
(its `--prompts`), unless its argv names that file already. What was added is in the job's argv
(job.json, `jobs`), never hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath

from agent.jobs.spec import SpecError, render
from agent.probes.training.command import flag_value
from agent.protocol import JobSpec, PipelineConfig

EXPORT_MODULE = "agent.pipeline.export"


def with_evaluation_excluded(
    argv: tuple[str, ...], kind: str, pipeline: PipelineConfig, values: Mapping[str, str | None]
) -> tuple[str, ...]:
    """`argv`, with `--exclude` for each evaluation prompts file it does not name yet."""
    if kind != "export" or EXPORT_MODULE not in argv:
        return argv
    named = set(excluded_in(argv))
    added: list[str] = []
    for path in evaluation_prompts(pipeline, values):
        if path not in named:
            named.add(path)
            added += ["--exclude", path]
    return (*argv, *added)


def excluded_in(argv: tuple[str, ...]) -> list[str]:
    """The files an export's argv excludes already (`--exclude A B`, `--exclude=A`)."""
    found: list[str] = []
    taking = False
    for arg in argv:
        name, sep, inline = arg.partition("=")
        if name == "--exclude":
            taking = not sep
            found += [inline] if sep else []
        elif arg.startswith("-"):
            taking = False
        elif taking:
            found.append(arg)
    return found


def evaluation_prompts(pipeline: PipelineConfig, values: Mapping[str, str | None]) -> list[str]:
    """The `--prompts` file of each evaluate job, its placeholders filled where they can be."""
    found = []
    for name, spec in sorted(pipeline.jobs.items()):
        prompts = flag_value(spec.argv, "--prompts") if spec.kind == "evaluate" else None
        if not prompts:
            continue
        try:
            rendered = render(name, JobSpec((prompts,), cwd=spec.cwd), values)
        except SpecError:  # it needs a value only its own launch has: not knowable here
            continue
        path = PurePosixPath(rendered.argv[0])
        if not path.is_absolute() and rendered.cwd:  # the evaluation reads it from its own cwd
            path = PurePosixPath(rendered.cwd) / path
        found.append(str(path))
    return found
