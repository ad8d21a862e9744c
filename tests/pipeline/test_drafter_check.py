"""The drafter check on checkpoints the trainers' own save code wrote, one field wrong at a time.

Each failure class is a public report of a finished run lost: the layer ids (tokenspeed PR #526,
sglang PR #25454, vllm PR #46788), the vocab mapping (NVIDIA-NeMo/Automodel PR #2447, SpecForge PR
#534), the context (sglang #6783, speculators PR #684), loading (SpecForge #129, speculators PR
#188, vllm #9534). A good checkpoint of each trainer passes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent.pipeline.drafter_check.__main__ import main
from tests.support.drafters import (
    drop_tensors,
    edit_json,
    replace_tensor,
    shared_drafters,
    specforge_export,
    trainers_importing,
    vocab_files,
)

pytestmark = [
    pytest.mark.slow,  # the trainers' save code and export take seconds
    pytest.mark.timeout(360),  # a bound for a loaded machine (6 workers on 2 cores), not a goal
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One target, the vocab job's files, and a checkpoint of each trainer, built once."""
    return shared_drafters(tmp_path_factory, tmp_path_factory.mktemp("drafters") / "built")


@pytest.fixture
def copy(built: dict[str, Path], tmp_path: Path) -> Any:
    def copied(name: str) -> Path:
        return Path(shutil.copytree(built[name], tmp_path / name))

    return copied


def check(
    built: dict[str, Path], checkpoint: Path, capsys: pytest.CaptureFixture[str], *args: str,
    server: str = "sglang", target: Path | None = None,
) -> tuple[int, dict[str, Any]]:  # fmt: skip
    code = main([
        "--checkpoint", str(checkpoint), "--target-config", str((target or built["target"]) /
        "config.json"), "--vocab-dir", str(built["vocab"]), "--server", server, *args,
    ])  # fmt: skip
    return code, json.loads(capsys.readouterr().out)


def failed(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {f["name"]: f for f in report["fields"] if f["ok"] is False}


@pytest.mark.parametrize(("trainer", "server"), [("specforge", "sglang"), ("specforge", "vllm"),
                                                  ("speculators", "vllm")])  # fmt: skip
def test_a_good_checkpoint_of_each_trainer_passes_every_field(
    built: dict[str, Path], capsys: pytest.CaptureFixture[str], trainer: str, server: str
) -> None:
    code, report = check(built, built[trainer], capsys, "--longest-record", "2048", server=server)

    assert (code, report["ok"], failed(report)) == (0, True, {})
    assert report["layout"] == trainer
    names = [f["name"] for f in report["fields"]]
    assert names[:5] == [
        "loads",
        "architecture",
        "target vocab size",
        "draft vocab size",
        "d2t/t2d",
    ]
    assert {"aux layers (served)", "hidden size", "max positions"} <= set(names)


def test_a_specforge_training_step_is_not_served_and_the_export_command_is_given(
    built: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = check(built, built["step"], capsys)

    assert code == 1
    loads = failed(report)["loads"]
    assert "training_state.pt" in loads["found"]
    assert loads["fix"].startswith(f"specforge export --to sglang --checkpoint {built['step']}")
    mapping = next(f for f in report["fields"] if f["name"] == "d2t/t2d")
    assert mapping["ok"] is True  # read from its draft_state_dict all the same


def test_speculators_format_is_refused_for_sglang_which_has_no_loader_for_it(
    built: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = check(built, built["speculators"], capsys, server="sglang")

    assert code == 1
    assert failed(report)["architecture"]["fix"].endswith("serve it with vLLM")


def test_ids_only_in_eagle_config_are_served_by_sglang_but_not_by_vllm(
    built: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """SpecForge keeps ids in eagle_config, which vLLM does not read: it captures its default."""
    code, report = check(built, built["custom"], capsys, server="sglang")
    assert (code, failed(report)) == (0, {})

    code, report = check(built, built["custom"], capsys, server="vllm")

    assert code == 1
    served = failed(report)["aux layers (served)"]
    assert served["found"].startswith("hidden states [2, 4, 5] (vLLM's default")
    assert served["expected"].startswith("hidden states [1, 4, 6]")
    assert '"eagle_aux_hidden_state_layer_ids": [1, 4, 6] at the top' in served["fix"]


def test_ids_off_by_one_against_the_train_config_and_the_capture_fail(
    built: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The run config named SpecForge ids [2, 4, 5] (hidden states [3, 5, 6]) the export does not
    carry: SGLang captures its default; the capture took vLLM's numbering of the same ids."""
    code, report = check(built, built["specforge"], capsys, "--trained-layers", "3,5,6",
                         "--captured-layers", "2,4,5", server="sglang")  # fmt: skip

    assert code == 1
    served = failed(report)["aux layers (served)"]
    assert '"eagle_aux_hidden_state_layer_ids": [2, 4, 5]' in served["fix"]
    assert "SGLang adds 1" in served["fix"]
    assert (
        failed(report)["aux layers (captured)"]["found"]
        == "hidden states [2, 4, 5] (the hidden-states job)"
    )


def test_the_final_layer_is_never_captured_by_sglang(
    built: dict[str, Path], copy: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy("specforge")
    edit_json(
        folder / "config.json", {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 3, 7]}}
    )

    code, report = check(built, folder, capsys, "--trained-layers", "2,4,8")

    assert code == 1
    assert failed(report)["aux layers (range)"]["found"] == "hidden states [8]"


def test_a_checkpoint_saved_without_its_mapping_is_refused(
    built: dict[str, Path], copy: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy("speculators")
    drop_tensors(folder, "d2t")

    code, report = check(built, folder, capsys, server="vllm")

    assert code == 1
    mapping = failed(report)["d2t/t2d"]
    assert mapping["found"] == "no d2t in the weights"
    assert "map draft id i to target id i" in mapping["fix"]


def test_a_regenerated_mapping_is_told_from_the_vocab_job_s(
    built: dict[str, Path], copy: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Same sizes, other ids (SpecForge PR #534's warm start): not visible in train/acc."""
    folder = copy("specforge")
    with trainers_importing():
        other = vocab_files(folder.parent / "other", stride=2)
    replace_tensor(folder, "d2t", other.d2t)
    replace_tensor(folder, "t2d", other.t2d)

    code, report = check(built, folder, capsys)

    assert code == 1
    assert failed(report)["d2t/t2d"]["found"].startswith(
        "d2t differs at 63 places, first [1]: 1 here, 2"
    )


def test_vocab_sizes_against_the_target_and_the_vocab_job(
    built: dict[str, Path], copy: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = copy("specforge")
    edit_json(folder / "config.json", {"vocab_size": 255, "draft_vocab_size": 32})

    code, report = check(built, folder, capsys)

    assert code == 1
    wrong = failed(report)
    assert wrong["target vocab size"]["found"] == "255 (config.json vocab_size)"
    assert "256 (" in wrong["target vocab size"]["expected"]
    assert wrong["draft vocab size"]["expected"] == "64 (lm_head.weight rows)"


def test_a_drafter_of_another_target_s_width_is_refused(
    built: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    wider = tmp_path / "wider"
    wider.mkdir()
    target = json.loads((built["target"] / "config.json").read_text()) | {"hidden_size": 128}
    (wider / "config.json").write_text(json.dumps(target))

    code, report = check(built, built["specforge"], capsys, target=wider)

    assert code == 1
    assert failed(report)["hidden size"]["expected"].startswith("384 = 3 × 128")


def test_positions_short_of_the_longest_record_fail_and_a_longer_served_context_is_a_note(
    built: dict[str, Path], copy: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy("specforge")
    edit_json(folder / "config.json", {"max_position_embeddings": 2048})

    code, report = check(built, folder, capsys, "--longest-record", "3000", "--trained-length",
                         "3000", "--served-length", "16384")  # fmt: skip

    assert code == 1
    assert failed(report)["max positions"]["expected"] == "≥ 3,000 (the export's longest record)"
    context = next(f for f in report["fields"] if f["name"] == "context")
    assert context["ok"] is None
    assert "1.09 at 16k" in context["fix"]


def test_a_quantized_target_gets_a_dtype_note_not_a_refusal(
    built: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fp8 = tmp_path / "fp8"
    fp8.mkdir()
    target = json.loads((built["target"] / "config.json").read_text())
    (fp8 / "config.json").write_text(
        json.dumps(target | {"quantization_config": {"quant_method": "fp8"}})
    )

    code, report = check(built, built["specforge"], capsys, target=fp8)

    assert code == 0
    dtype = next(f for f in report["fields"] if f["name"] == "dtype")
    assert (dtype["ok"], dtype["found"]) == (None, "bfloat16 (config.json dtype)")


def test_a_folder_without_a_drafter_says_so(
    built: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / "config.json").write_text('{"architectures": [')

    for folder, said in (("empty", "config.json"), ("torn", "config.json")):
        code, report = check(built, tmp_path / folder, capsys)
        assert code == 1
        assert [f["name"] for f in report["fields"]] == ["loads"]
        assert said in report["fields"][0]["found"]


def test_the_speculators_mapping_equals_the_vocab_job_s_files(built: dict[str, Path]) -> None:
    """The fixture's own premise: the trainer saved the vocab job's d2t and t2d as given."""
    from safetensors import safe_open

    with safe_open(str(built["speculators"] / "model.safetensors"), framework="numpy") as saved:
        assert np.array_equal(saved.get_tensor("d2t"), np.load(built["vocab"] / "d2t.npy"))


def test_a_sharded_checkpoint_is_read_through_its_index(
    built: dict[str, Path], copy: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Weights in two files, named by model.safetensors.index.json as save_pretrained shards."""
    from safetensors.torch import load_file, save_file

    folder = copy("specforge")
    tensors = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    names = sorted(tensors)
    halves = {
        "model-00001-of-00002.safetensors": names[::2],
        "model-00002-of-00002.safetensors": names[1::2],
    }
    for file, part in halves.items():
        save_file({n: tensors[n] for n in part}, str(folder / file), metadata={"format": "pt"})
    weight_map = {n: file for file, part in halves.items() for n in part}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))

    code, report = check(built, folder, capsys)

    assert (code, failed(report)) == (0, {})
    assert next(f for f in report["fields"] if f["name"] == "d2t/t2d")["ok"] is True
    (folder / "model.safetensors.index.json").unlink()
    code, report = check(built, folder, capsys)
    assert code == 1
    assert (
        "no model.safetensors and no model.safetensors.index.json"
        in failed(report)["loads"]["found"]
    )


def test_the_vocab_job_s_draft_config_exports_a_drafter_both_servers_capture_alike(
    built: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`specforge export` needs a --draft-config nobody wrote; the vocab job's names the layers in
    both numberings, so SGLang (eagle_config + 1) and vLLM (top level) capture the same three."""
    from types import SimpleNamespace

    from specforge.algorithms.model_providers import resolve_eagle_capture_layers
    from specforge.training.model_loading import _TARGET_ARCHITECTURE_FIELDS

    from agent.pipeline.vocab.__main__ import main as vocab_main
    from agent.pipeline.vocab.draft_config import TARGET_FIELDS

    rows = [
        {"id": f"r{i}", "output_ids": [3 * (i % 64)] * 5, "completion_tokens": 5}
        for i in range(200)
    ]
    (tmp_path / "d" / "A").mkdir(parents=True)
    (tmp_path / "d" / "A" / "raw_responses.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    assert vocab_main(["--datasets-root", str(tmp_path / "d"), "--out", str(tmp_path / "vocab"),
                       "--model-config", str(built["target"] / "config.json"),
                       "--draft-vocab-size", "64"]) == 0  # fmt: skip
    config = json.loads((tmp_path / "vocab" / "draft_config.json").read_text())
    assert tuple(_TARGET_ARCHITECTURE_FIELDS) == TARGET_FIELDS
    layers = resolve_eagle_capture_layers(
        SimpleNamespace(model=SimpleNamespace(aux_hidden_state_layer_ids=None)), config,
        SimpleNamespace(num_hidden_layers=8),
    )  # fmt: skip
    assert layers == [1, 3, 4]  # SpecForge's own default, now written down
    with trainers_importing():
        served = specforge_export(
            built["step"], tmp_path / "served", tmp_path / "vocab" / "draft_config.json"
        )
    for server in ("sglang", "vllm"):
        code = main(["--checkpoint", str(served), "--target-config",
                             str(built["target"] / "config.json"), "--server", server])  # fmt: skip
        fields = {f["name"]: f for f in json.loads(capsys.readouterr().out)["fields"]}
        assert code == 0, fields
        assert fields["aux layers (served)"]["found"].startswith("hidden states [2, 4, 5]")


def test_weights_that_cannot_be_read_are_refused_not_waved_through(
    built: dict[str, Path], copy: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crashed check once said nothing and held nothing back: each is now a failed `loads`."""
    torn = copy("specforge")
    data = (torn / "model.safetensors").read_bytes()
    (torn / "model.safetensors").write_bytes(data[: len(data) // 2])
    code, report = check(built, torn, capsys)
    assert code == 1
    assert "its weights cannot be read" in failed(report)["loads"]["found"]

    (torn / "model.safetensors").unlink()
    (torn / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"d2t": "gone.safetensors"}})
    )
    code, report = check(built, torn, capsys)
    assert "names gone.safetensors, which is not in" in failed(report)["loads"]["found"]

    step = copy("step")
    (step / "training_state.pt").write_bytes(b"not a zip")
    code, report = check(built, step, capsys)
    assert code == 1
    assert "training_state.pt cannot be read" in failed(report)["loads"]["found"]


def test_negative_ids_and_a_pruned_head_without_its_mapping_are_refused(
    built: dict[str, Path], copy: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = copy("specforge")
    edit_json(
        folder / "config.json", {"eagle_config": {"eagle_aux_hidden_state_layer_ids": [-1, 3, 5]}}
    )
    code, report = check(built, folder, capsys)
    assert failed(report)["aux layers (range)"]["found"] == "layer ids [-1] in config.json"

    pruned = copy("speculators")
    edit_json(pruned / "config.json", {}, remove=("draft_vocab_size",))
    drop_tensors(pruned, "d2t", "t2d")
    code, report = check(built, pruned, capsys, server="vllm")
    assert code == 1
    assert (
        failed(report)["d2t/t2d"]["found"] == "no d2t and t2d in the weights"
    )  # lm_head: 64 of 256


def test_a_target_that_nests_its_text_config_without_a_vocab_size_is_read_at_the_top(
    built: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    nested = tmp_path / "nested"
    nested.mkdir()
    target = json.loads((built["target"] / "config.json").read_text())
    top = {"vocab_size": target["vocab_size"], "architectures": ["KimiK25ForConditionalGeneration"]}
    text = {k: v for k, v in target.items() if k != "vocab_size"}
    (nested / "config.json").write_text(json.dumps(top | {"text_config": text}))

    code, report = check(built, built["specforge"], capsys, target=nested)

    assert (code, failed(report)) == (0, {})
