"""Ready-to-run trainer settings beside the export: OUT/trainers/.

- `specforge.json`: a SpecForge 0.2.0 run config (`specforge train --config`; JSON is read as is,
  `specforge/config/schema.py` Config.from_file) that trains on the exact form, `all/ids/ids.jsonl`
  (`data.prompts_path`: pre-tokenized rows, ids and loss mask taken as written), with
  `train_only_last_turn: true` and the export's max_length;
- `specforge-conversations.json`: the same on the conversation form (`data.train_data_path`), with
  the template the round trip checked, when that form was written;
- `speculators.sh`: speculators 0.9.0's `prepare-data` on the exact form (its ids rows pass
  through untouched) and its `train` command;
- `README.md`: what each is and what to edit (the GPUs of SpecForge's single-node deployment,
  the vocab mapping the vocab job wrote).
The tests load `specforge.json` with SpecForge's own Config.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.pipeline.export.writers import FORM_FILES, MERGED_FOLDER, write_whole

TRAINERS_FOLDER = "trainers"
SPECFORGE_CONFIG = "specforge.json"
SPECFORGE_CONVERSATIONS_CONFIG = "specforge-conversations.json"
SPECULATORS_SCRIPT = "speculators.sh"


@dataclass(frozen=True, slots=True)
class TrainerSettings:
    """What the configs are made of."""

    out: Path
    model: str
    max_length: int
    chat_template: str | None
    ids_rows: int
    conversation_rows: int
    """Rows written in each form: a form with none gets no trainer config (its file is empty)."""


def write_trainer_configs(settings: TrainerSettings) -> dict[str, Any]:
    """Write every file of OUT/trainers/; returns what the export report says of them."""
    folder = settings.out / TRAINERS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    if settings.ids_rows:
        ids = {"prompts_path": _merged(settings.out, "ids")}
        files[SPECFORGE_CONFIG] = _json(specforge_config(settings, ids))
        files[SPECULATORS_SCRIPT] = speculators_script(settings)
    if settings.conversation_rows and settings.chat_template is not None:
        data = {"train_data_path": _merged(settings.out, "conversations")}
        files[SPECFORGE_CONVERSATIONS_CONFIG] = _json(specforge_config(settings, data))
    files["README.md"] = _readme(settings, sorted(files))
    for name in (SPECFORGE_CONFIG, SPECULATORS_SCRIPT, SPECFORGE_CONVERSATIONS_CONFIG):
        if name not in files:  # an earlier export's, now for rows that are not there
            (folder / name).unlink(missing_ok=True)
    for name, text in files.items():
        write_whole(folder / name, text)
    return {
        "folder": str(folder),
        "files": sorted(files),
        "train_only_last_turn": True,
        "max_length": settings.max_length,
    }


def specforge_config(settings: TrainerSettings, source: dict[str, str]) -> dict[str, Any]:
    """A SpecForge run: one node, capture server on GPU 0, trainer on GPU 1 (edit to fit)."""
    run = settings.out / TRAINERS_FOLDER / "specforge-run"
    return {
        "model": {"target_model_path": settings.model},
        "data": {
            **source,
            "max_length": settings.max_length,
            "chat_template": settings.chat_template or "llama3",
            "train_only_last_turn": True,
        },
        "deployment": {
            "mode": "disaggregated",
            "disaggregated": {
                "control_dir": str(run / "control"),
                "backend": "mooncake",
                "managed_local": {
                    "trainer_cuda_visible_devices": ["1"],
                    "capture_servers": [{"port": 30010, "cuda_visible_devices": ["0"]}],
                },
            },
        },
        "output_dir": str(run / "output"),
    }


def speculators_script(settings: TrainerSettings) -> str:
    """Speculators' data preparation on the exact form, then its training."""
    prepared = settings.out / TRAINERS_FOLDER / "speculators-data"
    prepare = [
        "speculators", "prepare-data", "--model", settings.model,
        "--data", _merged(settings.out, "ids"), "--output", str(prepared),
        "--seq-length", str(settings.max_length),
    ]  # fmt: skip
    train = [
        "speculators", "train", "--verifier-name-or-path", settings.model,
        "--data-path", str(prepared), "--total-seq-len", str(settings.max_length),
        "--save-path", str(settings.out / TRAINERS_FOLDER / "speculators-run"),
    ]  # fmt: skip
    return (
        "#!/bin/sh\n# speculators 0.9.0 on the export's exact tokens (ids rows pass through).\n"
        "# Put the vocab job's d2t-K.npy and t2d-K.npy in the data path and add\n"
        "# --draft-vocab-size K to train: speculators finds them by that name.\nset -e\n"
        f"{shlex.join(prepare)}\n{shlex.join(train)}\n"
    )


def _readme(settings: TrainerSettings, names: list[str]) -> str:
    lines = ["# Trainer settings for this export", ""]
    if SPECFORGE_CONFIG in names:
        lines += [
            f"- `{SPECFORGE_CONFIG}`: `specforge train --config {SPECFORGE_CONFIG}` on the exact "
            "tokens (`all/ids/ids.jsonl`, loss only on what the model generated).",
            f"- `{SPECULATORS_SCRIPT}`: speculators' `prepare-data` and `train` on the same rows.",
        ]
    else:
        lines.append("- No config: the export wrote no row (see `export_report.md`).")
    if SPECFORGE_CONVERSATIONS_CONFIG in names:
        lines.append(
            f"- `{SPECFORGE_CONVERSATIONS_CONFIG}`: the conversation form with the template "
            f"`{settings.chat_template}` the round trip checked."
        )
    elif settings.chat_template is not None:
        lines.append(
            f"- No conversation config: no conversation rendered exactly with "
            f"`{settings.chat_template}` (`export_report.md` says why); train on the exact tokens."
        )
    lines += [
        "",
        "`train_only_last_turn: true`: only the answer the model wrote gets loss, never an "
        "earlier assistant turn of a multi-turn prompt (SpecForge's default, false, trains on "
        f"them). Records longer than max_length {settings.max_length:,} are cut there: "
        "see `export_report.md`.",
        "",
        "Edit before running: the GPUs of SpecForge's one-node deployment (capture server on 0, "
        "trainer on 1), and `model.vocab_mapping_path` for a drafter with a pruned vocabulary.",
        "",
    ]
    return "\n".join(lines)


def _merged(out: Path, form: str) -> str:
    return str(out / MERGED_FOLDER / FORM_FILES[form])


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=1) + "\n"
