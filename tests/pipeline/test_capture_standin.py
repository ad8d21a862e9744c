"""The demo's hidden-states stand-in writes what SpecForge writes, at the size the plan predicts.

Its files are read by SpecForge's own offline reader and pass our check; the bytes it writes are
the plan's within a file's alignment; a run again skips what is there, as SpecForge's does; a
stop signal ends it between files, leaving none torn.
"""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agent.pipeline.hidden_states_check.__main__ import main as check_main
from agent.plans.capture_output import CaptureMeter, walk_folder
from agent.plans.hidden_states import hidden_states_plan
from agent.protocol import ExportSummary, JobSpec, PipelineConfig
from agent.simulator.prepare_hidden_states import sample_path
from tests.support.export_data import write_jsonl
from tests.support.simulator_process import agent_env

HIDDEN = 16
MAX_LENGTH = 40
LENGTHS = [5, 17, 33, 64, 12, 40, 90, 3]


def inputs(tmp_path: Path) -> tuple[Path, Path]:
    rows = [{"id": f"r{i}", "input_ids": list(range(n)), "loss_mask": [0] * 2 + [1] * (n - 2)}
            for i, n in enumerate(LENGTHS)]  # fmt: skip
    write_jsonl(tmp_path / "export" / "all" / "ids" / "ids.jsonl", rows)
    model = tmp_path / "target"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps({"hidden_size": HIDDEN, "torch_dtype": "bfloat16"})
    )
    return tmp_path / "export" / "all" / "ids", model


def argv(data: Path, model: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "agent.simulator.prepare_hidden_states", "--data-path", str(data),
            "--target-model-path", str(model), "--output-path", str(out),
            "--max-length", str(MAX_LENGTH), *extra]  # fmt: skip


def test_its_files_are_specforge_s_the_check_passes_and_the_plan_predicted_their_size(
    tmp_path: Path,
) -> None:
    data, model = inputs(tmp_path)
    out = tmp_path / "hs"
    done = subprocess.run(argv(data, model, out), env=agent_env(), capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    reader: Any = importlib.import_module("specforge.runtime.data_plane.offline_reader")
    for index, length in enumerate(LENGTHS):
        path = sample_path(out, index)
        assert path.parent.name == "rows_0-2000"
        _, tokens, _ = reader._inspect_feature_file(str(path), reader._OFFLINE_EAGLE3_KEYS)
        assert tokens == min(length, MAX_LENGTH)
    code = check_main(["--hidden-states", str(out), "--trainer", "specforge", "--hidden-size",
                       str(HIDDEN), "--expected", str(len(LENGTHS))])  # fmt: skip
    assert code == 0
    tokens = sum(min(n, MAX_LENGTH) for n in LENGTHS)
    spec = JobSpec(tuple(argv(data, model, out)), kind="hidden_states")
    summary = ExportSummary("e", "/x", 1.0, 1.0, 0.99, False, 1, 1.0, (), tokens, len(LENGTHS))
    plan = hidden_states_plan(PipelineConfig(jobs={"hs": spec}), summary, tmp_path)
    assert plan is not None
    assert plan.bytes_needed is not None
    use = walk_folder(out, 0.0)
    assert use is not None
    assert use.sample_files == len(LENGTHS)
    assert abs(use.sample_bytes - plan.bytes_needed) < 128 * len(LENGTHS), (
        f"wrote {use.sample_bytes:,} bytes, the plan said {plan.bytes_needed:,}"
    )


def test_a_run_again_skips_what_is_there_and_a_stop_signal_leaves_no_torn_file(
    tmp_path: Path,
) -> None:
    data, model = inputs(tmp_path)
    out = tmp_path / "hs"
    slow = subprocess.Popen(argv(data, model, out, "--tokens-per-s", "40", "--log-every", "1"),
                            env=agent_env(), stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert slow.stdout is not None
        first = slow.stdout.readline()  # the first sample is written: then the stop
        assert first.startswith("1/8 processed=1"), first
        slow.send_signal(signal.SIGTERM)
        assert slow.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        slow.kill()
        slow.wait()
        if slow.stdout is not None:
            slow.stdout.close()
    written = sorted(p.name for p in out.rglob("*") if p.is_file())
    assert 0 < len(written) < len(LENGTHS)
    assert all(name.endswith(".ckpt") for name in written), f"a torn file: {written}"
    meter = CaptureMeter()
    before = meter.progress("hs", None, out)
    started = time.monotonic()
    again = subprocess.run(argv(data, model, out), env=agent_env(), capture_output=True, text=True,
                           timeout=120)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"{len(written)} skipped" in again.stdout
    assert time.monotonic() - started < 60
    assert before.use is not None
    assert before.use.sample_files == len(written)
