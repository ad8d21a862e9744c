"""The headline: a runner on stale code is flagged; redeploy makes it run the new code and resume."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent.protocol import JOBS_LAUNCH, SNAPSHOT, LaunchParams, Snapshot, SnapshotParams
from console.config import load_config
from console.link.local_link import open_local_link
from tests.support.cli_runs import run_cli
from tests.support.operations import local_link
from tests.support.repo import REPO, old_runner_copy
from tests.support.runner_files import response_ids, write_id_prompts
from tests.support.simulator_process import running_simulator
from tests.support.ssh_servers import SshEndpoint
from tests.support.waits import read_until


def write_config(
    tmp_path: Path,
    endpoint: SshEndpoint,
    state_dir: Path,
    datasets: Path,
    remote_root: Path,
    url: str,
) -> Path:
    app = remote_root / "app"
    body = endpoint.config_toml(
        "gpu", python=sys.executable, state_dir=state_dir, datasets_root=datasets
    )
    body = body.replace(
        "[hosts.gpu.datasets]", f'deploy_roots = ["{remote_root}"]\n[hosts.gpu.datasets]'
    )
    body = body.replace("budget = 1000\n", "budget = 1000000\n")
    config = tmp_path / "eagle-console.toml"
    config.write_text(
        body
        + f'[hosts.gpu.sglang]\nurl = "{url}"\n'
        + f'[[hosts.gpu.deploy]]\nlocal = "{REPO / "agent" / "pipeline" / "inference"}"\n'
        + f'remote = "{app / "agent" / "pipeline" / "inference"}"\n'
        + "[hosts.gpu.jobs.inference]\n"
        + 'argv = ["{python}", "-m", "agent.pipeline.inference", "--server", "{sglang_url}", '
        + '"--dataset-dir", "{dataset_dir}", "--concurrency", "4"]\n'
        + 'kind = "inference"\nper_dataset = true\nstop_signal = "SIGINT"\ngrace_s = 20\n'
        + f'env = {{ PYTHONPATH = "{app}" }}\n'
    )
    return config


async def dataset_state(state_dir: Path, config: Path) -> Snapshot:
    async with local_link(state_dir, load_config(config).host("gpu").pipeline) as link:
        snapshot: Snapshot = await link.call(SNAPSHOT, SnapshotParams())
        return snapshot


@pytest.mark.slow
async def test_redeploy_moves_a_stale_runner_to_the_new_code_without_loss(
    asyncssh_endpoint: SshEndpoint, tmp_path: Path, state_dir: Path
) -> None:
    datasets, remote_root = tmp_path / "datasets", tmp_path / "remote"
    ids = write_id_prompts(datasets / "B1_sharegpt", 200)
    old_runner_copy(remote_root)
    with running_simulator(
        tmp_path / "sim", "--speed", "6", "--mean-tokens", "120", "--sd-tokens", "30"
    ) as sim:
        config = write_config(
            tmp_path, asyncssh_endpoint, state_dir, datasets, remote_root, sim.url
        )
        pipeline = load_config(config).host("gpu").pipeline
        link = await open_local_link(state_dir, pipeline)
        await link.call(
            JOBS_LAUNCH, LaunchParams("inference", "B1_sharegpt"), idempotency_key="old"
        )
        await link.close()

        snapshot = await read_until(
            lambda: dataset_state(state_dir, config),
            lambda s: s.datasets[0].stale_code and s.datasets[0].responses > 5, "B1", 60, 0.2,
        )  # fmt: skip
        assert "stale_code" in {alert.kind for alert in snapshot.alerts}

        # every request now takes 5 s more, so the old run is still going when the redeploy
        # lands however slow the machine (it used to finish first under a loaded test run)
        sim.set_faults(spike_rate=1.0, spike_s=30.0)
        result = await run_cli("redeploy", "gpu", "inference", config=config)
        sim.set_faults(spike_rate=0.0)
        assert result.code == 0, result.stdout + result.stderr
        assert "resumed at" in result.stdout

        after = await dataset_state(state_dir, config)
        assert not after.datasets[0].stale_code
        await read_until(
            lambda: dataset_state(state_dir, config),
            lambda s: not any(job.state == "running" for job in s.jobs), "the jobs", 180, 0.3,
        )  # fmt: skip

    assert response_ids(datasets / "B1_sharegpt") == dict.fromkeys(ids, 1)
    deployed = remote_root / "app" / "agent" / "pipeline" / "inference" / "status.py"
    assert (
        deployed.read_bytes()
        == (REPO / "agent" / "pipeline" / "inference" / "status.py").read_bytes()
    )
