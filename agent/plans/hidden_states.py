"""The hidden-states plan: the bytes the job will write, beside the free space where it writes.

Users lose whole runs to disks nobody planned for ("68k samples … requires 740 GB",
SafeAILab/EAGLE #30; 12+ TB for 300k samples, SpecForge #195). speculators' tutorial gives the formula: tokens ×
captured layers × hidden size × dtype bytes. Here every factor is read, never assumed:

- tokens: the export report's `sequence_tokens`, each record's prompt and answer cut at the
  trainer's max length (the positions the capture runs over);
- the layers captured and what else a sample holds, per trainer (the file layouts read from each
  trainer's code, docs/file-formats.md "Hidden states"):
  SpecForge 0.2.0 writes `hidden_state [1, seq, H]` and `aux_hidden_state [1, seq, 3H]` in the
  target's dtype, with `input_ids` and `loss_mask` (int64) per token (the keys its reader needs,
  runtime/data_plane/offline_reader.py:46); speculators 0.9.0 writes `hidden_states [seq, 4, H]`
  (three auxiliary layers and the last) with `token_ids` (int64) (train/data.py 310-329);
- H and the dtype: the target's config.json (`hidden_size`, `torch_dtype`/`dtype`; under
  `text_config` for the multimodal and nested configs Kimi-K2.5 and DeepSeek-VL use), found by the
  job's `--target-model-path`, else beside the configured tokenizer;
- the room: free bytes of the filesystem holding the job's output (`--output-path`,
  `--output-dir`, else its working folder), less a margin.

Blocking (it reads config.json and asks the filesystem): run it in a reader thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.datasets.disk_space import free_bytes, size_text
from agent.plans.capture_output import FolderUse, Progress, running_id
from agent.probes.training.command import flag_value
from agent.probes.training.config_files import UnreadableConfigError, read_mapping
from agent.protocol import (
    LIVE_JOB_STATES,
    Alert,
    ExportSummary,
    HiddenStatesPlan,
    JobInfo,
    JobSpec,
    PipelineConfig,
)

CAPTURED_LAYERS = 4
"""Three auxiliary layers and the last one's hidden state, in both trainers' files."""
ID_BYTES = {"specforge": 16, "speculators": 8}
"""Per token: SpecForge's input_ids and loss_mask, speculators' token_ids (int64 each)."""
FILE_BYTES = {"specforge": 2368, "speculators": 256, "": 0}
"""Per sample file, past its tensors: torch.save's zip container with its four entries (2.2-2.5 KB
measured: its headers name the file, each tensor is aligned to 64 bytes), a safetensors header."""
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4, "float8_e4m3fn": 1}
DEFAULT_DTYPE = "bfloat16"
MARGIN_SHARE = 0.05
"""Kept free past the plan: file-system overhead, logs, a sample written twice on a retry."""
_TRAINERS = {"prepare_hidden_states": "specforge", "data_generation_offline": "speculators"}
OUTPUT_FLAGS = ("--output-path", "--output-dir", "--output")
MODEL_FLAGS = ("--target-model-path", "--model", "--verifier-name-or-path")


def hidden_states_plan(
    pipeline: PipelineConfig, export: ExportSummary | None, jobs_folder: Path, floor_bytes: int = 0,
    progress: ProgressOf | None = None,
) -> HiddenStatesPlan | None:  # fmt: skip
    """The plan for the configured hidden-states job, or None when there is none.

    `jobs_folder` is where a job with no cwd runs (the agent's job folders): a relative output
    path is read from there. `progress` measures what the job has written to its output folder,
    and how fast (`CaptureMeter.progress` for the job's run now under way); without it the plan
    is made as if nothing were written yet.
    """
    found = next(
        ((name, spec) for name, spec in pipeline.jobs.items() if spec.kind == "hidden_states"),
        None,
    )
    if found is None:
        return None
    name, spec = found
    trainer = next(
        (t for marker, t in _TRAINERS.items() if any(marker in a for a in spec.argv)), ""
    )
    output = _output(spec, jobs_folder)
    unknown, per_token, target = _per_token(spec, trainer, pipeline)
    tokens = export.sequence_tokens if export is not None else None
    records = export.records if export is not None else None
    if tokens is None:
        unknown.append("the exported records' tokens (run the export, or again: an older one "
                       "did not count them)")  # fmt: skip
    cut = _cut_mismatch(spec, export)
    if cut.startswith("unknown: "):
        unknown.append(cut.removeprefix("unknown: "))
    needed = (
        tokens * per_token + (records or 0) * FILE_BYTES[trainer]
        if tokens is not None and per_token is not None and not unknown
        else None
    )
    measured = progress(name, output) if progress is not None else Progress(None, None, False)
    room = _room(output, spec.output_quota_bytes, measured.use)
    written = measured.use.sample_bytes if measured.use is not None else None
    remaining = None if needed is None else max(0, needed - (written or 0))
    margin = (
        int((remaining or 0) * MARGIN_SHARE) if room.by_quota
        else max(floor_bytes, int((remaining or 0) * MARGIN_SHARE))
    )  # fmt: skip
    fits = None if remaining is None or room.free is None else remaining + margin <= room.free
    note = (
        f"unknown: {'; '.join(unknown)}" if unknown
        else f"{tokens:,} tokens × {per_token:,} bytes ({trainer}){cut}"
    )  # fmt: skip
    rate = measured.bytes_per_s
    eta = remaining / rate if remaining is not None and rate else None
    return HiddenStatesPlan(
        name, trainer, tokens, per_token, needed, str(output), room.free, margin, fits, note,
        *target, records, written, measured.use.sample_files if measured.use else None,
        spec.output_quota_bytes, room.by_quota, rate, measured.current, eta,
    )  # fmt: skip


def _cut_mismatch(spec: JobSpec, export: ExportSummary | None) -> str:
    """Where the job cuts records at another length than the export counted them at.

    Longer: the tokens are not known (`unknown: …`); shorter: the plan is an upper bound (said
    in the note); the same, or a flag not given: nothing.
    """
    flag = flag_value(spec.argv, "--max-length")
    counted = export.max_length if export is not None else None
    job = int(flag) if flag is not None and flag.isdigit() else None
    if job is None or counted is None or job == counted:
        return ""
    if job > counted:
        return (f"unknown: the tokens at the job's --max-length {job:,} (the export counted them "
                f"cut at {counted:,}: export again with --max-length {job})")  # fmt: skip
    return f", at most: the job cuts at {job:,}, the export counted at {counted:,}"


ProgressOf = Callable[[str, Path], Progress]
"""What the job named has written to the folder, and how fast (`CaptureMeter.progress`)."""


@dataclass(frozen=True, slots=True)
class Room:
    """The bytes the job may still write, and whether a quota rather than the disk bounds them."""

    free: int | None
    by_quota: bool


def _room(output: Path, quota: int | None, use: FolderUse | None) -> Room:
    """The least of the filesystem's free space and what the quota leaves (None: unknown)."""
    free = free_bytes(output)
    if quota is None:
        return Room(free, False)
    if use is None and output.is_dir():  # too many entries to count: what it leaves is unknown
        return Room(free, False)
    left = max(0, quota - (use.all_bytes if use is not None else 0))
    if free is not None and free <= left:
        return Room(free, False)
    return Room(left, True)


Target = tuple[int | None, str]
"""The target's hidden size and dtype name, as far as they are known."""


def _per_token(
    spec: JobSpec, trainer: str, pipeline: PipelineConfig
) -> tuple[list[str], int | None, Target]:
    """(what is unknown, the bytes one token's sample takes, the target's width and dtype)."""
    if not trainer:
        why = "which trainer writes them (prepare_hidden_states or data_generation_offline)"
        return [why], None, (None, "")
    config = _model_config(spec, pipeline)
    if isinstance(config, str):
        return [config], None, (None, "")
    nested = config.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else config
    hidden = text.get("hidden_size")
    if isinstance(hidden, bool) or not isinstance(hidden, int) or not 0 < hidden < 2**20:
        return [f"hidden_size in the target's config.json ({hidden!r})"], None, (None, "")
    dtype = text.get("torch_dtype") or text.get("dtype") or config.get("torch_dtype")
    name = str(dtype or DEFAULT_DTYPE).removeprefix("torch.")[:40]
    width = DTYPE_BYTES.get(name)
    if width is None:
        return [f"the bytes of dtype {dtype!r}"], None, (hidden, name)
    return [], CAPTURED_LAYERS * hidden * width + ID_BYTES[trainer], (hidden, name)


def _model_config(spec: JobSpec, pipeline: PipelineConfig) -> dict[str, Any] | str:
    """The target's config.json, or why it cannot be read."""
    model = flag_value(spec.argv, *MODEL_FLAGS)
    folder = Path(model) if model and model.startswith("/") else None
    if folder is None and pipeline.tokenizer:
        folder = Path(pipeline.tokenizer)
    if folder is None:
        return "the target's config.json (no --target-model-path, no [tokenizer] path)"
    try:
        return read_mapping(folder / "config.json")
    except UnreadableConfigError as exc:
        return f"the target's config.json: {exc}"


def _output(spec: JobSpec, jobs_folder: Path) -> Path:
    named = flag_value(spec.argv, *OUTPUT_FLAGS)
    base = Path(spec.cwd) if spec.cwd else jobs_folder
    return base / named if named else base


def plan_alerts(
    plan: HiddenStatesPlan | None, jobs: tuple[JobInfo, ...], now: float
) -> list[Alert]:
    """An error while the plan of a capture yet to run does not fit (SpecForge #195).

    While it runs, a warning when its rest does not fit what is left (the stop-loss will stop
    it); once it has run, the space it took is no reason to alert.
    """
    if plan is None or plan.fits is not False:
        return []
    if running_id(jobs, plan.job) is not None:
        return [Alert("hidden_states_low_disk", "warning", (
            f"hidden states: {plan.job} still has {size_text(remaining(plan))} to write and "
            f"{room_text(plan)}{_at_rate(plan)}: it will be stopped (its stop signal) before "
            "the room runs out; what it wrote stays, and a run on more space skips it"
        ), plan.job, now)]  # fmt: skip
    if captured(plan, jobs):
        return []
    return [Alert("hidden_states_no_room", "error", f"hidden states: {no_room_text(plan)}",
                  plan.job, now)]  # fmt: skip


def no_room_text(plan: HiddenStatesPlan) -> str:
    """Why the capture is not started, and what to do.

    One line for the alert, the autopilot's pause and the refused start alike.
    """
    done = f", {size_text(plan.bytes_written)} of it written" if plan.bytes_written else ""
    return (
        f"{plan.job} would write {size_text(plan.bytes_needed or 0)} ({plan.note}{done}) "
        f"and {room_text(plan)} (keeping {size_text(plan.margin_bytes)}): point its output at "
        "a larger disk, export fewer records or a shorter --max-length, or store them in FP8 "
        "where the trainer offers it"
    )


def room_text(plan: HiddenStatesPlan) -> str:
    """`/data/hs has 1.2 TiB free` or `the 500 GiB quota of /data/hs leaves 3.1 GiB`."""
    free = size_text(plan.bytes_free or 0)
    if plan.room_by_quota and plan.quota_bytes is not None:
        return f"the {size_text(plan.quota_bytes)} quota of {plan.output} leaves {free}"
    return f"{plan.output} has {free} free"


def remaining(plan: HiddenStatesPlan) -> int:
    """The bytes still to write (the plan's, less the samples already in the folder)."""
    return max(0, (plan.bytes_needed or 0) - (plan.bytes_written or 0))


def _at_rate(plan: HiddenStatesPlan) -> str:
    if not plan.bytes_per_s or not plan.rate_is_current:
        return ""
    return f" (at {size_text(int(plan.bytes_per_s))}/s, {(plan.bytes_free or 0) / plan.bytes_per_s:,.0f} s of room)"


def captured(plan: HiddenStatesPlan, jobs: tuple[JobInfo, ...]) -> bool:
    """True when the plan's job runs or has exited 0: the plan was for before it."""
    return any(
        job.name == plan.job and not job.external and job.state in (*LIVE_JOB_STATES, "exited")
        for job in jobs
    )
