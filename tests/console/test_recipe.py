"""`recipe`: job blocks filled from the box, each flag checked against its program's own parser.

The commands are checked as their programs read them, installed: SpecForge's `specforge train
--plan` (its schema and overrides, no worker started) on the export's own config with the vocab
job's draft config, `specforge export` run for real on a step its CheckpointManager saved (then the
drafter check passes on what it wrote), speculators' TrainConfig and its `prepare-data` command,
and SGLang's flags read from its source (tests/support/server_flags.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import tomllib

from agent.protocol import GpuSample, JobSpec, PipelineConfig, Snapshot
from console.config.toml_text import job_blocks
from console.model.recipe import RecipeError, build_recipe, recipe_facts
from tests.support.server_flags import sglang_flags

PIPELINE = PipelineConfig(tokenizer="/models/target", jobs={
    "export": JobSpec(("{python}", "-m", "agent.pipeline.export", "--out", "/data/export",
                       "--max-length", "4096"), kind="export"),
    "vocab": JobSpec(("{python}", "-m", "agent.pipeline.vocab", "--out", "/data/vocab",
                      "--draft-vocab-size", "32000"), kind="vocab"),
})  # fmt: skip
GPUS = tuple(GpuSample(i, "H100", 0.0, 0.0, 80_000.0, 40.0, 100.0) for i in range(8))


def snapshot(**fields: Any) -> Snapshot:
    return Snapshot(1.0, "h", "/data/datasets", (), gpus=GPUS, **fields)


def argv(jobs: dict[str, dict[str, object]], name: str) -> list[str]:
    value = jobs[name]["argv"]
    assert isinstance(value, list)
    return [str(part) for part in value]


def after(parts: list[str], flag: str) -> str:
    return parts[parts.index(flag) + 1]


def test_specforge_for_sglang_trains_online_exports_the_best_and_serves_it() -> None:
    recipe = build_recipe(recipe_facts(PIPELINE, snapshot()), "specforge", "sglang")

    assert list(recipe.jobs) == ["train", "drafter-export", "drafter", "evaluate"]
    train = argv(recipe.jobs, "train")
    assert train[:4] == ["specforge", "train", "--config", "/data/export/trainers/specforge.json"]
    assert "model.draft_model_config=/data/vocab/draft_config.json" in train
    devices = '["1", "2", "3", "4", "5", "6", "7"]'  # GPU 0: SpecForge's capture server
    assert f"deployment.disaggregated.managed_local.trainer_cuda_visible_devices={devices}" in train
    assert "deployment.trainer.nproc_per_node=7" in train
    assert recipe.jobs["drafter-export"]["kind"] == "drafter_export"
    assert after(argv(recipe.jobs, "drafter-export"), "--checkpoint") == "{best_checkpoint}"
    server = argv(recipe.jobs, "drafter")
    assert after(server, "--speculative-draft-model-path") == "/data/specforge-run/served"
    assert after(server, "--tp-size") == "8"
    assert any(note.startswith("gpus: 8 (nvidia-smi)") for note in recipe.notes)


def test_the_blocks_are_toml_the_config_reads_back() -> None:
    recipe = build_recipe(recipe_facts(PIPELINE, snapshot()), "speculators", "vllm")
    text = "\n".join(job_blocks("kimi", recipe.jobs))

    jobs = tomllib.loads(text)["hosts"]["kimi"]["jobs"]
    assert jobs == recipe.jobs
    spec = json.loads(
        jobs["drafter"]["argv"][jobs["drafter"]["argv"].index("--speculative-config") + 1]
    )
    assert spec == {"method": "eagle3", "model": "{best_checkpoint}", "num_speculative_tokens": 3}
    assert "--draft-vocab-size" in jobs["train"]["argv"]


def test_what_cannot_work_is_refused_saying_why() -> None:
    facts = recipe_facts(PIPELINE, snapshot())
    with pytest.raises(RecipeError, match="SGLang 0.5 has no loader for speculators"):
        build_recipe(facts, "speculators", "sglang")
    bare = replace(PIPELINE, tokenizer=None, jobs={})
    with pytest.raises(RecipeError) as missing:
        recipe_facts(bare, None)
    assert "the target's folder" in str(missing.value)
    assert "an export job with --out" in str(missing.value)
    unknown = build_recipe(recipe_facts(PIPELINE, None), "specforge", "vllm")
    assert any(
        "nvidia-smi showed none): the server's tensor parallel size is 8" in note
        for note in unknown.notes
    )


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A target, an export and a vocab job's outputs, made by our own jobs; trainer checkpoints."""
    from agent.pipeline.export.__main__ import main as export_main
    from agent.pipeline.vocab.__main__ import main as vocab_main
    from tests.support.drafters import shared_drafters
    from tests.support.export_data import (
        KEEPS_TURNS,
        build_think_tokenizer,
        ids_of,
        response,
        write_jsonl,
    )

    root = tmp_path_factory.mktemp("box")
    built = shared_drafters(tmp_path_factory, root / "drafters")
    vocab = build_think_tokenizer(root / "tok", KEEPS_TURNS)
    chat = [{"role": "user", "content": "why is the sum"}]
    write_jsonl(
        root / "d" / "B1" / "prompts.jsonl", [{"id": f"p{i}", "messages": chat} for i in range(20)]
    )
    answers = [response(f"p{i}", ids_of(vocab, "w1 w2 w3 <|im_end|>"), "stop") for i in range(20)]
    write_jsonl(root / "d" / "B1" / "raw_responses.jsonl", answers)
    assert (
        export_main(
            [
                "--datasets-root",
                str(root / "d"),
                "--tokenizer",
                str(root / "tok"),
                "--out",
                str(root / "export"),
                "--model",
                str(built["target"]),
                "--max-length",
                "512",
            ]
        )
        == 0
    )
    assert vocab_main(["--datasets-root", str(root / "d"), "--out", str(root / "vocab"), "--model-config",
                       str(built["target"] / "config.json"), "--draft-vocab-size", "64"]) == 0  # fmt: skip
    return built | {"root": root, "export": root / "export", "vocab": root / "vocab"}


def box_recipe(box: dict[str, Path], trainer: str, server: str) -> dict[str, Any]:
    pipeline = PipelineConfig(tokenizer=str(box["target"]), jobs={
        "export": JobSpec(("x", "--out", str(box["export"]), "--max-length", "512"), kind="export"),
        "vocab": JobSpec(("x", "--out", str(box["vocab"]), "--draft-vocab-size", "64"), kind="vocab"),
    })  # fmt: skip
    return build_recipe(recipe_facts(pipeline, snapshot()), trainer, server).jobs


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
@pytest.mark.timeout(360)  # SpecForge's and speculators' imports under load: minutes, not a goal
def test_specforge_plans_the_training_the_recipe_writes_and_refuses_a_wrong_override(
    box: dict[str, Path],
) -> None:
    train = box_recipe(box, "specforge", "sglang")["train"]["argv"]
    plan = [sys.executable, "-m", "specforge.cli", *train[1:], "--plan"]

    planned = run(plan, box["root"])
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert "capture-server-0" in planned.stdout
    wrong = run([*plan[:-1], "model.draft_model_configs=x", "--plan"], box["root"])
    assert wrong.returncode != 0  # the check can fail: SpecForge refuses a key it does not have


@pytest.mark.slow
@pytest.mark.timeout(360)  # SpecForge's and speculators' imports under load: minutes, not a goal
def test_the_recipe_s_export_of_a_specforge_step_passes_the_drafter_check(
    box: dict[str, Path],
) -> None:
    """`specforge export` as the recipe writes it, on a step SpecForge saved with the vocab job's
    mapping; the folder it writes passes the drafter check for SGLang with the recipe's flags."""
    import numpy as np

    jobs = box_recipe(box, "specforge", "sglang")
    d2t, t2d = (np.load(box["vocab"] / f"{name}.npy") for name in ("d2t", "t2d"))
    step = _in_child_step(box["root"] / "step", d2t, t2d)
    export = [
        step if part == "{best_checkpoint}" else part for part in jobs["drafter-export"]["argv"]
    ]
    exported = run([sys.executable, "-m", "specforge.cli", *export[1:]], box["root"])
    assert exported.returncode == 0, exported.stderr[-2000:]
    served = Path(
        jobs["drafter"]["argv"][jobs["drafter"]["argv"].index("--speculative-draft-model-path") + 1]
    )
    check = run([sys.executable, "-m", "agent.pipeline.drafter_check", "--checkpoint", str(served),
                 "--target-config", str(box["target"] / "config.json"), "--vocab-dir",
                 str(box["vocab"]), "--server", "sglang"], box["root"])  # fmt: skip
    assert check.returncode == 0, check.stdout


def _in_child_step(root: Path, d2t: Any, t2d: Any) -> str:
    import numpy as np

    root.mkdir(parents=True, exist_ok=True)
    np.save(root / "d2t.npy", d2t)
    np.save(root / "t2d.npy", t2d)
    code = (
        "import sys, numpy as np, torch; from pathlib import Path; "
        "from tests.support.drafters import Mapping, specforge_step, trainers_importing; "
        "root = Path(sys.argv[1]); m = Mapping(torch.from_numpy(np.load(root / 'd2t.npy')), "
        "torch.from_numpy(np.load(root / 't2d.npy')), root)\n"
        "with trainers_importing(): print(specforge_step(root, m))"
    )
    done = run([sys.executable, "-c", code, str(root)], Path.cwd())
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.timeout(360)  # SpecForge's and speculators' imports under load: minutes, not a goal
def test_speculators_reads_the_recipe_s_commands(box: dict[str, Path]) -> None:
    jobs = box_recipe(box, "speculators", "vllm")
    code = (
        "import json, sys, typer\n"
        "from speculators.__main__ import app\n"
        "from speculators.train.config import TrainConfig\n"
        "prepare, train = json.loads(sys.argv[1]), json.loads(sys.argv[2])\n"
        "command = typer.main.get_command(app).commands[prepare[1]]\n"
        "command.make_context(prepare[1], prepare[2:])\n"
        "flat = TrainConfig.resolve(train[2:]).flatten()\n"
        "print(json.dumps({k: flat[k] for k in ('draft_vocab_size', 'total_seq_len', 'vllm_endpoint')}))"
    )
    read = run([sys.executable, "-c", code, json.dumps(jobs["prepare"]["argv"]),
                json.dumps(jobs["train"]["argv"])], Path.cwd())  # fmt: skip
    assert read.returncode == 0, read.stderr[-2000:]
    assert json.loads(read.stdout.splitlines()[-1]) == {
        "draft_vocab_size": 64, "total_seq_len": 512, "vllm_endpoint": "http://127.0.0.1:8000/v1",
    }  # fmt: skip


def test_every_sglang_flag_the_recipe_writes_is_one_sglang_has() -> None:
    flags = sglang_flags()
    assert len(flags) > 400
    assert "--speculative-boundary-reduction" not in flags  # no_cli: the reader can tell
    recipe = build_recipe(recipe_facts(PIPELINE, snapshot()), "specforge", "sglang")
    written = [part for part in argv(recipe.jobs, "drafter") if part.startswith("--")]
    assert written
    assert [flag for flag in written if flag not in flags] == []


@pytest.mark.slow
@pytest.mark.timeout(360)  # SpecForge's and speculators' imports under load: minutes, not a goal
def test_the_command_prints_blocks_the_config_takes_and_says_what_it_cannot(
    tmp_path: Path, state_dir: Path
) -> None:
    config = tmp_path / "eagle-console.toml"
    config.write_text(
        f'[hosts.box]\nssh = "local"\npython = "{sys.executable}"\nstate_dir = "{state_dir}"\n'
        '[hosts.box.tokenizer]\npath = "/models/target"\n'
        '[hosts.box.jobs.export]\nkind = "export"\nargv = ["x", "--out", "/data/export"]\n'
        '[hosts.box.jobs.vocab]\nkind = "vocab"\nargv = ["x", "--out", "/data/vocab"]\n'
    )
    cli = [sys.executable, "-m", "console", "--config", str(config), "recipe", "box"]

    printed = run([*cli, "--trainer", "specforge", "--server", "vllm"], tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith("# target: /models/target ([tokenizer] path)")
    jobs = tomllib.loads(printed.stdout)["hosts"]["box"]["jobs"]
    assert [jobs[name]["kind"] for name in jobs] == [
        "train",
        "drafter_export",
        "drafter_server",
        "evaluate",
    ]
    refused = run([*cli, "--trainer", "speculators", "--server", "sglang"], tmp_path)
    assert refused.returncode == 1
    assert (
        "no recipe for box: SGLang 0.5 has no loader for speculators' checkpoints" in refused.stderr
    )
