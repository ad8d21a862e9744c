"""The check of a capture's output, on files in each trainer's layout that its own reader takes.

SpecForge's `_inspect_feature_file` (what its offline reader runs to size a file) reads every good
sample written here; speculators' loader split is applied to its files. Then one fault each: NaN,
all zero, the wrong width, a missing key, a torn file, the wrong dtype, too few files.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import save_file

from agent.pipeline.hidden_states_check.__main__ import main, spread
from tests.support.simulator_process import agent_env

HIDDEN = 32
SEQ = 12


def specforge_sample(hidden: int = HIDDEN, fill: float = 0.5) -> dict[str, torch.Tensor]:
    return {
        "input_ids": torch.arange(SEQ), "loss_mask": torch.ones(SEQ, dtype=torch.long),
        "hidden_state": torch.full((1, SEQ, hidden), fill, dtype=torch.bfloat16),
        "aux_hidden_state": torch.full((1, SEQ, 3 * hidden), fill, dtype=torch.bfloat16),
    }  # fmt: skip


def run_check(folder: Path, trainer: str, *args: str) -> tuple[int, dict[str, Any]]:
    """The check in this process (torch is loaded once): its exit code and its report."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["--hidden-states", str(folder), "--trainer", trainer,
                     "--hidden-size", str(HIDDEN), *args])  # fmt: skip
    return code, json.loads(printed.getvalue()) if printed.getvalue().strip() else {}


def write_specforge(folder: Path, count: int) -> list[Path]:
    reader: Any = importlib.import_module("specforge.runtime.data_plane.offline_reader")
    paths = []
    for index in range(count):
        path = folder / f"rows_0-2000/data_{index}.ckpt"
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(specforge_sample(), path)
        reader._inspect_feature_file(str(path), reader._OFFLINE_EAGLE3_KEYS)  # SpecForge takes it
        paths.append(path)
    return paths


def test_a_good_specforge_capture_passes_with_its_files_counted(tmp_path: Path) -> None:
    write_specforge(tmp_path, 20)
    code, report = run_check(tmp_path, "specforge", "--expected", "20", "--samples", "5")
    assert (code, report["ok"], report["files"], report["checked"]) == (0, True, 20, 5)


@pytest.mark.parametrize(
    ("fault", "field", "said"),
    [
        ("nan", "hidden_state", "NaN or infinite values"),
        ("zero", "aux_hidden_state", "all zero: nothing was captured"),
        ("narrow", "hidden_state", f"expected ({SEQ}, {HIDDEN})"),
        ("missing", "aux_hidden_state", "missing"),
        ("torn", "file", "cannot be opened"),
    ],
)  # fmt: skip
def test_each_fault_in_a_sample_fails_naming_the_file_and_the_field(
    tmp_path: Path, fault: str, field: str, said: str
) -> None:
    paths = write_specforge(tmp_path, 4)
    bad = specforge_sample()
    if fault == "nan":
        bad["hidden_state"][0, 3, 0] = float("nan")
    elif fault == "zero":
        bad["aux_hidden_state"].zero_()
    elif fault == "narrow":
        bad = specforge_sample(hidden=HIDDEN // 2)
    elif fault == "missing":
        del bad["aux_hidden_state"]
    torch.save(bad, paths[-1])
    if fault == "torn":
        paths[-1].write_bytes(paths[-1].read_bytes()[:100])
    code, report = run_check(tmp_path, "specforge")
    assert (code, report["ok"]) == (1, False)
    problem = report["problems"][0]
    assert (problem["file"], problem["field"]) == (paths[-1].name, field)
    assert said in problem["problem"]
    assert {p["file"] for p in report["problems"]} == {paths[-1].name}


def test_too_few_files_for_the_records_exported_fail(tmp_path: Path) -> None:
    write_specforge(tmp_path, 9)
    code, report = run_check(tmp_path, "specforge", "--expected", "10")
    assert code == 1
    assert report["problems"][0]["problem"] == "9 sample files for 10 records exported"
    assert run_check(tmp_path / "rows_0-2000", "speculators")[1]["problems"][0]["problem"] == (
        "no sample file at all"
    )


def test_a_speculators_capture_is_checked_as_its_loader_splits_it(tmp_path: Path) -> None:
    states = torch.full((SEQ, 4, HIDDEN), 0.25, dtype=torch.bfloat16)
    save_file(
        {"hidden_states": states, "token_ids": torch.arange(SEQ)},
        str(tmp_path / "hs_0.safetensors"),
    )
    assert states[:, :-1].flatten(1).shape == (SEQ, 3 * HIDDEN)  # the loader's aux layers
    assert run_check(tmp_path, "speculators")[0] == 0
    save_file({"hidden_states": states.float(), "token_ids": torch.arange(SEQ)},
              str(tmp_path / "hs_1.safetensors"))  # fmt: skip
    code, report = run_check(tmp_path, "speculators")
    assert code == 1
    assert report["problems"] == [{"file": "hs_1.safetensors", "field": "hidden_states",
                                   "problem": "dtype torch.float32, the target's is torch.bfloat16"}]  # fmt: skip


def test_the_spread_opens_the_first_the_last_and_between() -> None:
    files = [Path(f"f{i}") for i in range(100)]
    picked = spread(files, 5)
    assert picked[0] == files[0]
    assert picked[-1] == files[-1]
    assert len(set(picked)) == 5
    assert spread(files[:3], 5) == files[:3]


def test_the_command_prints_its_report_and_exits_by_it(tmp_path: Path) -> None:
    write_specforge(tmp_path, 2)
    command = [sys.executable, "-m", "agent.pipeline.hidden_states_check", "--hidden-states",
               str(tmp_path), "--trainer", "specforge", "--hidden-size", str(HIDDEN)]  # fmt: skip
    done = subprocess.run(command, env=agent_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True
    missing = subprocess.run([*command[:4], str(tmp_path / "none"), *command[5:]], env=agent_env(),
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"hidden_states_check: {tmp_path / 'none'} is not a folder"
