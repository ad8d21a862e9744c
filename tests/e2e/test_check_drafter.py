"""`eagle-console check-drafter` and `start` on a drafter server, as a script runs them.

A local host whose drafter server (the SGLang simulator) names a speculators checkpoint, which
SGLang cannot load: the check fails with the field and its fix, `start` is refused, `start
--force` starts it; a SpecForge export named by path passes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.cli_runs import run_cli
from tests.support.cli_success import run_cli_ok
from tests.support.drafters import shared_drafters
from tests.support.ports import free_port

pytestmark = [
    pytest.mark.slow,  # the trainers' save code and export take seconds
    pytest.mark.timeout(360),  # a bound for a loaded machine (6 workers on 2 cores), not a goal
]
PY = sys.executable


def config(tmp_path: Path, state_dir: Path, built: dict[str, Path]) -> Path:
    root = tmp_path / "datasets"
    root.mkdir()
    server = [PY, "-m", "agent.simulator", "--port", str(free_port()), "--speculative-accept-length",
              "2.5", "--speculative-draft-model-path", str(built["speculators"]), "--model-path",
              str(built["target"])]  # fmt: skip
    vocab = [PY, "-m", "agent.pipeline.vocab", "--out", str(built["vocab"])]
    path = tmp_path / "eagle-console.toml"
    path.write_text(
        f'[hosts.box]\nssh = "local"\npython = "{PY}"\nstate_dir = "{state_dir}"\n'
        f'[hosts.box.datasets]\nroot = "{root}"\n'
        f'[hosts.box.jobs.drafter]\nkind = "drafter_server"\ngrace_s = 5\nargv = {json.dumps(server)}\n'
        f'[hosts.box.jobs.vocab]\nkind = "vocab"\nargv = {json.dumps(vocab)}\n'
    )
    return path


async def test_check_drafter_says_each_field_and_start_needs_force(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, state_dir: Path
) -> None:
    built = shared_drafters(tmp_path_factory, tmp_path / "drafters")
    path = config(tmp_path, state_dir, built)

    checked = await run_cli("check-drafter", "box", config=path)
    assert checked.code == 1, checked.stderr
    assert "\n  FAILED architecture: speculators eagle3 over 'llama' layers" in checked.stdout
    assert (
        "fix: SGLang 0.5 has no loader for speculators' format: serve it with vLLM"
        in checked.stdout
    )
    assert "ok     d2t/t2d: d2t[64], t2d[256]" in checked.stdout

    good = await run_cli_ok("check-drafter", "box", str(built["specforge"]), "--json", config=path)
    answer = json.loads(good.stdout)
    assert (answer["host"], answer["ok"], answer["layout"]) == ("box", True, "specforge")

    refused = await run_cli("start", "box", "drafter", config=path)
    assert refused.code == 1
    assert "failed its check: architecture" in refused.stderr
    forced = await run_cli_ok("start", "box", "drafter", "--force", "--json", config=path)
    assert json.loads(forced.stdout)["name"] == "drafter"
    await run_cli("stop", "box", "drafter", config=path)
