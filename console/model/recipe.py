"""Ready-made job blocks for the stages after the export, filled from what the box already has.

Training, the drafter's export and server, the evaluation. No I/O.

Every value comes from the host's config or a snapshot (the target's folder, the export's and the
vocab job's folders, K, the max length, the GPUs nvidia-smi shows), and `notes` say where each came
from and what is left to the user. The commands are the trainers' and servers' own, with flags the
tests check against their parsers as installed (SpecForge's `specforge train --plan` and schema,
speculators' TrainConfig and CLI, SGLang's argument fields):

- SpecForge 0.2.0 trains online from the export's `trainers/specforge.json` (its capture server
  and trainer on one node); its checkpoints are training states no server loads, so a
  `drafter_export` job runs `specforge export --to sglang` on the best one with the vocab job's
  `draft_config.json` (which names the layers as both servers read them), and the server serves
  that folder.
- speculators 0.9.0 prepares the export's exact rows (`prepare-data`) and trains with hidden states
  its vLLM endpoint generates on demand (`--vllm-endpoint`: a vLLM started with speculators'
  `scripts/launch_vllm.py`, which its wheel does not ship); only vLLM loads its checkpoints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from agent.protocol import JobSpec, PipelineConfig, Snapshot

TRAINERS = ("specforge", "speculators")
SERVERS = ("sglang", "vllm")
DRAFTER_PORT = 30001
"""The drafter's server beside the target's (SGLang's default port is 30000)."""
DRAFT_STEPS, DRAFT_TOKENS, TOP_K = 3, 4, 1
"""EAGLE-3 drafting as SGLang's docs start it: 3 steps, top-1, 4 tokens verified."""
SPECFORGE_MAX_LENGTH = 2048
VLLM_ENDPOINT = "http://127.0.0.1:8000/v1"


class RecipeError(Exception):
    """The recipe cannot be written as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Facts:
    """What the recipe is filled from, each with where it was found."""

    target: str
    export_out: str
    vocab_out: str
    draft_vocab_size: int | None
    max_length: int
    gpus: int | None
    prompts: str | None
    found: dict[str, str] = field(default_factory=dict)
    datasets: tuple[str, ...] = ()
    """The box's datasets: the evaluation measures each on the prompts the export held out."""


@dataclass(frozen=True, slots=True)
class Recipe:
    """Job tables by name, and what the user should know about them."""

    jobs: dict[str, dict[str, object]]
    notes: list[str]


def recipe_facts(pipeline: PipelineConfig, snapshot: Snapshot | None) -> Facts:
    """The facts, or RecipeError naming what is missing and how to give it."""
    found: dict[str, str] = {}
    target = _target(pipeline, found)
    export_spec = _first(pipeline, "export")
    export_out = _flag(export_spec, "--out") or (
        snapshot.export.out_dir if snapshot and snapshot.export else None
    )
    vocab_spec = _first(pipeline, "vocab")
    vocab_out = _flag(vocab_spec, "--out")
    missing = [what for what, value in (
        ("the target's folder ([tokenizer] path, or a server job's --model-path)", target),
        ("an export job with --out", export_out), ("a vocab job with --out", vocab_out),
    ) if value is None]  # fmt: skip
    if missing or target is None or export_out is None or vocab_out is None:
        raise RecipeError(f"the recipe needs {'; '.join(missing)} in the host's config")
    found["export"] = f"{export_out} (the export job's --out)"
    found["vocab"] = f"{vocab_out} (the vocab job's --out)"
    draft = _whole(_flag(vocab_spec, "--draft-vocab-size"))
    exported = snapshot.export if snapshot is not None else None
    length = exported.max_length if exported and exported.max_length else None
    length = length or _whole(_flag(export_spec, "--max-length")) or SPECFORGE_MAX_LENGTH
    found["max_length"] = (
        f"{length:,} (the export's max length)"
        if length != SPECFORGE_MAX_LENGTH or exported
        else f"{length:,} (SpecForge's default: the export names none)"
    )
    gpus = len(snapshot.gpus) if snapshot is not None and snapshot.gpus else None
    found["gpus"] = (
        f"{gpus} (nvidia-smi)" if gpus
        else "unknown (nvidia-smi showed none): the server's tensor parallel size is 8; edit it"
    )  # fmt: skip
    datasets = tuple(d.name for d in snapshot.datasets) if snapshot is not None else ()
    return Facts(
        target,
        export_out,
        vocab_out,
        draft,
        length,
        gpus,
        _prompts(pipeline, snapshot),
        found,
        datasets,
    )


def build_recipe(facts: Facts, trainer: str, server: str) -> Recipe:
    """The job tables for `trainer` and `server`; RecipeError for a pair that cannot work."""
    if trainer == "speculators" and server == "sglang":
        raise RecipeError(
            "SGLang 0.5 has no loader for speculators' checkpoints: use --server vllm, or "
            "--trainer specforge"
        )
    run = str(PurePosixPath(facts.export_out).parent / f"{trainer}-run")
    jobs = _specforge(facts, run) if trainer == "specforge" else _speculators(facts, run)
    served = f"{run}/served" if trainer == "specforge" else "{best_checkpoint}"
    jobs["drafter"] = _server(facts, server, served)
    jobs["evaluate"] = _evaluate(facts, run)
    notes = [f"{what}: {value}" for what, value in facts.found.items()]
    notes += _notes(facts, trainer, run)
    return Recipe(jobs, notes)


def _specforge(facts: Facts, run: str) -> dict[str, dict[str, object]]:
    overrides = [
        f"model.target_model_path={facts.target}",
        f"model.vocab_mapping_path={facts.vocab_out}/vocab_mapping.pt",
        f"model.draft_model_config={facts.vocab_out}/draft_config.json",
        f"output_dir={run}/output", "run_id=drafter",
    ]  # fmt: skip
    if facts.gpus and facts.gpus > 1:
        trainers = [str(gpu) for gpu in range(1, facts.gpus)]  # GPU 0: its capture server
        overrides += [
            f"deployment.disaggregated.managed_local.trainer_cuda_visible_devices={json.dumps(trainers)}",
            f"deployment.trainer.nproc_per_node={len(trainers)}",  # SpecForge checks the two agree
        ]
    train = [
        "specforge",
        "train",
        "--config",
        f"{facts.export_out}/trainers/specforge.json",
        *overrides,
    ]
    export = ["specforge", "export", "--to", "sglang", "--checkpoint", "{best_checkpoint}",
              "--draft-config", f"{facts.vocab_out}/draft_config.json", "--output-dir", f"{run}/served"]  # fmt: skip
    return {
        "train": {"kind": "train", "gpu": True, "cwd": run, "argv": train, "stop_signal": "SIGINT",
                  "grace_s": 120, "env": {"WANDB_MODE": "offline"}},
        "drafter-export": {"kind": "drafter_export", "argv": export},
    }  # fmt: skip


def _speculators(facts: Facts, run: str) -> dict[str, dict[str, object]]:
    prepare = ["speculators", "prepare-data", "--model", facts.target, "--data",
               f"{facts.export_out}/all/ids/ids.jsonl", "--output", f"{run}/data",
               "--seq-length", str(facts.max_length)]  # fmt: skip
    train = ["speculators", "train", "--verifier-name-or-path", facts.target, "--data-path",
             f"{run}/data", "--save-path", f"{run}/checkpoints", "--total-seq-len",
             str(facts.max_length), "--d2t-path", f"{facts.vocab_out}/d2t.npy", "--t2d-path",
             f"{facts.vocab_out}/t2d.npy", "--vllm-endpoint", VLLM_ENDPOINT]  # fmt: skip
    if facts.draft_vocab_size is not None:
        train += ["--draft-vocab-size", str(facts.draft_vocab_size)]
    return {
        "prepare": {"kind": "command", "argv": prepare},
        "train": {"kind": "train", "gpu": True, "cwd": run, "argv": train, "stop_signal": "SIGINT",
                  "grace_s": 120},
    }  # fmt: skip


def _server(facts: Facts, server: str, draft: str) -> dict[str, object]:
    gpus = str(facts.gpus or 8)
    if server == "sglang":
        argv = ["{python}", "-m", "sglang.launch_server", "--model-path", facts.target,
                "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", draft,
                "--speculative-num-steps", str(DRAFT_STEPS), "--speculative-eagle-topk", str(TOP_K),
                "--speculative-num-draft-tokens", str(DRAFT_TOKENS), "--tp-size", gpus,
                "--host", "127.0.0.1", "--port", str(DRAFTER_PORT), "--enable-metrics"]  # fmt: skip
    else:
        spec = {"method": "eagle3", "model": draft, "num_speculative_tokens": DRAFT_STEPS}
        argv = ["vllm", "serve", facts.target, "--speculative-config", json.dumps(spec),
                "--tensor-parallel-size", gpus, "--host", "127.0.0.1", "--port", str(DRAFTER_PORT)]  # fmt: skip
    return {"kind": "drafter_server", "gpu": True, "argv": argv, "grace_s": 60}


def _evaluate(facts: Facts, run: str) -> dict[str, object]:
    argv = ["{python}", "-m", "agent.pipeline.evaluate", "--server",
            f"http://127.0.0.1:{DRAFTER_PORT}", "--prompts", facts.prompts or "PROMPTS.jsonl",
            "--tokenizer", "{tokenizer}", "--concurrency", "1,8,32", "--out", f"{run}/eval"]  # fmt: skip
    for name in facts.datasets:  # each dataset on the prompts the export held out of training
        argv += ["--domain", f"{name}={facts.export_out}/held_out/{name}.jsonl"]
    return {"kind": "evaluate", "argv": argv, "stop_signal": "SIGINT", "grace_s": 30}


def _notes(facts: Facts, trainer: str, run: str) -> list[str]:
    notes = [
        f"everything the run writes goes under {run}",
        "the evaluation measures the drafter alone; add --baseline {sglang_url} once a server "
        "without the drafter runs beside it (on GPUs of its own)",
    ]
    if facts.prompts is None:
        notes.append("PROMPTS.jsonl: give the evaluation held-out prompts (none were found)")
    else:
        notes.append(f"the evaluation's prompts are {facts.prompts}: prompts the drafter trained on "
                     "flatter it, so give held-out ones")  # fmt: skip
    if facts.datasets:
        notes.append(f"each dataset is measured on its own too, on the prompts the export held out "
                     f"of training ({facts.export_out}/held_out/NAME.jsonl: 1 % of a dataset by "
                     "the hash of its ids, none under 100 prompts)")  # fmt: skip
    if trainer == "specforge":
        notes.append("SpecForge trains online: its capture server (GPU 0) and trainer share the box; "
                     "drafter-export turns the best step into the folder the server loads")  # fmt: skip
        notes.append("across boxes (SpecForge 0.2.0's launcher; offline capture, as managed_local "
                     "runs on one node): nodes = [...] in this train block on every box, and "
                     "--node-rank {node_rank} deployment.trainer.nnodes={nnodes} "
                     "deployment.trainer.master_addr=NODE0 in its argv (docs/config.md, jobs "
                     "across boxes)")  # fmt: skip
    else:
        notes.append(f"speculators generates hidden states on demand from a vLLM at {VLLM_ENDPOINT} "
                     "started with its scripts/launch_vllm.py (not in its wheel); run prepare "
                     "before t")  # fmt: skip
    if facts.draft_vocab_size is None:
        notes.append("the vocab job's --draft-vocab-size is not in its argv: speculators' "
                     "--draft-vocab-size left out")  # fmt: skip
    return notes


def _target(pipeline: PipelineConfig, found: dict[str, str]) -> str | None:
    for spec in pipeline.jobs.values():
        model = _flag(spec, "--model-path") if spec.kind == "server" else None
        if model is not None and model.startswith("/"):
            found["target"] = f"{model} (the server job's --model-path)"
            return model
    if pipeline.tokenizer is not None:
        found["target"] = f"{pipeline.tokenizer} ([tokenizer] path)"
    return pipeline.tokenizer


def _prompts(pipeline: PipelineConfig, snapshot: Snapshot | None) -> str | None:
    if pipeline.datasets is None or snapshot is None or not snapshot.datasets:
        return None
    return str(PurePosixPath(pipeline.datasets.root) / snapshot.datasets[0].name / "prompts.jsonl")


def _first(pipeline: PipelineConfig, kind: str) -> JobSpec | None:
    return next((spec for spec in pipeline.jobs.values() if spec.kind == kind), None)


def _flag(spec: JobSpec | None, name: str) -> str | None:
    """The value of `name` (`--out X` or `--out=X`), from the job's cwd where it is relative."""
    if spec is None:
        return None
    value = None
    for index, arg in enumerate(spec.argv):
        if arg.startswith(f"{name}="):
            value = arg.split("=", 1)[1]
        elif arg == name and index + 1 < len(spec.argv):
            value = spec.argv[index + 1]
    if value is None or value.startswith("/") or not spec.cwd or not name.endswith(("out", "dir")):
        return value
    return str(PurePosixPath(spec.cwd) / value)


def _whole(text: str | None) -> int | None:
    return int(text) if text is not None and text.isascii() and text.isdigit() else None
