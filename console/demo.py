"""`eagle-console demo`: a live pipeline on this machine, no GPU and no remote box needed.

It writes eight datasets named like a real run, builds a small tokenizer with a chat template,
starts the SGLang simulator and a local agent, writes an example config beside them, launches an
inference run per dataset (one of them the "old" invocation with only --max-samples, heading past
its budget), and opens the console. Quitting stops everything it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agent.protocol import (
    DatasetsConfig,
    JobsList,
    JobsParams,
    JobSpec,
    LaunchParams,
    PipelineConfig,
    StopParams,
)
from console.bundle import local_bundle
from console.config import DeployMapping, HostConfig, SshTarget
from console.link import AgentLink, LinkError
from console.local_link import open_local_link

DATASETS = {
    "B1_sharegpt": (260, 40), "B2_ultrachat": (240, 30), "B3_math": (400, 20), "B4_code": (200, 60),
    "B5_sharegpt4": (220, 50), "B6_wildchat": (260, 25), "B7_reasoning": (180, 80), "B8_openhermes": (240, 35),
}  # fmt: skip
"""Name -> (prompts, words per prompt)."""
BUDGET = 60_000
OLD_RUN = "B3_math"
SIMULATOR_START_S = 30.0
WORDS = "explain write summarize solve prove compute the a of to and in question answer problem step code function python math story".split()


@dataclass(frozen=True, slots=True)
class Workspace:
    """Where the demo keeps everything."""

    root: Path

    @property
    def datasets(self) -> Path:
        """One folder per dataset."""
        return self.root / "datasets"

    @property
    def state(self) -> Path:
        """The local agent's state directory."""
        return self.root / "agent-state"


def write_datasets(space: Workspace, seed: int = 7) -> None:
    """Chat prompts of different sizes per dataset."""
    rng = random.Random(seed)
    for name, (count, words) in DATASETS.items():
        folder = space.datasets / name
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "prompts.jsonl").open("w") as handle:
            for index in range(count):
                text = " ".join(
                    rng.choice(WORDS) for _ in range(rng.randint(words // 2, words * 2))
                )
                handle.write(
                    json.dumps(
                        {"id": f"{name}-{index}", "messages": [{"role": "user", "content": text}]}
                    )
                    + "\n"
                )


def start_simulator(space: Workspace) -> tuple[subprocess.Popen[bytes], str]:
    """The SGLang stand-in on a free loopback port, logging where the config says."""
    port_file = space.root / "sglang.port"
    process = subprocess.Popen(
        [sys.executable, "-m", "agent.simulator", "--port", "0", "--port-file", str(port_file),
         "--log-file", str(space.root / "sglang.log"), "--speed", "2", "--mean-tokens", "300",
         "--sd-tokens", "150", "--max-running-requests", "48", "--vocab-size", "32000"],
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + SIMULATOR_START_S
    while not port_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise LinkError(f"the SGLang simulator did not start (see {space.root / 'sglang.log'})")
        time.sleep(0.05)
    return process, f"http://127.0.0.1:{port_file.read_text().strip()}"


def demo_host(space: Workspace, url: str) -> HostConfig:
    """The demo's host: its pipeline, jobs and a deploy mapping the user can edit."""
    runner = ("{python}", "-m", "agent.pipeline.inference", "--server", "{sglang_url}", "--dataset-dir",
              "{dataset_dir}", "--tokenizer", str(space.root / "tokenizer"), "--concurrency", "6",
              "--max-new-tokens", "1200")  # fmt: skip
    jobs = {
        "inference": JobSpec((*runner, "--token-budget", "{budget}"), kind="inference", per_dataset=True,
                             stop_signal="SIGINT", grace_s=15),
        "inference-old": JobSpec((*runner, "--max-samples", "400"), kind="inference", per_dataset=True,
                                 stop_signal="SIGINT", grace_s=15),
    }  # fmt: skip
    pipeline = PipelineConfig(
        datasets=DatasetsConfig(str(space.datasets), budget=BUDGET, budgets={OLD_RUN: BUDGET // 2}),
        sglang_url=url, sglang_log=str(space.root / "sglang.log"), jobs=jobs,
        deploy_roots=(str(space.root / "remote"),),
    )  # fmt: skip
    script = space.root / "local" / "run_inference.py"
    return HostConfig(
        "demo", SshTarget("localhost"), python=sys.executable, state_dir=str(space.state), pipeline=pipeline,
        deploy=(DeployMapping(script, str(space.root / "remote" / "run_inference.py")),),
    )  # fmt: skip


def write_example_config(space: Workspace, host: HostConfig) -> None:
    """The config a user would write for this host, to read beside the demo."""
    lines = [
        "# What the demo runs, as a config for a real box would say it (the demo itself links locally).",
        "[hosts.demo]", 'ssh = "root@localhost"', f'python = "{sys.executable}"', f'state_dir = "{space.state}"',
        f'deploy_roots = ["{space.root / "remote"}"]', "", "[hosts.demo.datasets]",
        f'root = "{space.datasets}"', f"budget = {BUDGET}", f"budgets = {{ {OLD_RUN} = {BUDGET // 2} }}", "",
        "[hosts.demo.sglang]", f'url = "{host.pipeline.sglang_url}"', f'log = "{host.pipeline.sglang_log}"', "",
        "[[hosts.demo.deploy]]", f'local = "{host.deploy[0].local}"', f'remote = "{host.deploy[0].remote}"', "",
    ]  # fmt: skip
    for name, spec in host.pipeline.jobs.items():
        lines += [f"[hosts.demo.jobs.{name}]", f"argv = {json.dumps(list(spec.argv))}", f'kind = "{spec.kind}"',
                  "per_dataset = true", f'stop_signal = "{spec.stop_signal}"', f"grace_s = {spec.grace_s:g}", ""]  # fmt: skip
    (space.root / "eagle-console.toml").write_text("\n".join(lines))


def prepare_scripts(space: Workspace) -> None:
    """A script on "the laptop" and an older copy "on the box", so `d` has drift to show."""
    (space.root / "local").mkdir(exist_ok=True)
    (space.root / "remote").mkdir(exist_ok=True)
    (space.root / "local" / "run_inference.py").write_text(
        '"""The fixed runner."""\nBUDGET_FLAG = "--token-budget"\n'
    )
    (space.root / "remote" / "run_inference.py").write_text('"""The old runner: no budget."""\n')


async def launch_runs(link: AgentLink) -> None:
    """One run per dataset; the old invocation on B3_math."""
    for name in DATASETS:
        job = "inference-old" if name == OLD_RUN else "inference"
        await link.request("jobs.launch", LaunchParams(job, name), idempotency_key=f"demo-{name}")


async def stop_everything(state: Path, pipeline: PipelineConfig) -> None:
    """Stop every job the demo started."""
    link = await open_local_link(state, pipeline)
    try:
        listing: JobsList = await link.request("jobs.list", JobsParams())
        stops = [
            link.request(
                "jobs.stop",
                StopParams(job.id),
                idempotency_key=f"demo-stop-{job.id}",
                timeout_s=120,
            )
            for job in listing.jobs
            if not job.external and job.state in ("starting", "running")
        ]
        await asyncio.gather(*stops, return_exceptions=True)
    finally:
        await link.close()


def run_demo(folder: Path | None, keep: bool, ssh: bool) -> int:
    """Build the workspace, run the console on it, and clean up after."""
    if ssh:
        print("demo --ssh is not built yet: it lands with the demo issue; running the local demo.")  # noqa: T201
    space = Workspace(folder or Path(tempfile.mkdtemp(prefix="eagle-demo-")))
    space.root.mkdir(parents=True, exist_ok=True)
    print(f"eagle-console demo: building the workspace in {space.root} ...")  # noqa: T201
    write_datasets(space)
    subprocess.run([sys.executable, "-m", "agent.simulator.tokenizer", str(space.root / "tokenizer")],
                   env=_env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    prepare_scripts(space)
    simulator, url = start_simulator(space)
    host = demo_host(space, url)
    write_example_config(space, host)
    try:
        _run_console(space, host)
    finally:
        print("stopping the demo's runs (each drains its requests in flight) ...")  # noqa: T201
        try:
            asyncio.run(stop_everything(space.state, host.pipeline))
        except LinkError as exc:  # go on: the agent, the simulator and the workspace still go
            print(f"could not stop the runs through the agent: {exc}")  # noqa: T201
        subprocess.run(
            [sys.executable, "-m", "agent", "stop", "--state-dir", str(space.state)],
            env=_env(),
            check=False,
        )
        simulator.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            simulator.wait(timeout=10)
        if not keep:
            shutil.rmtree(space.root, ignore_errors=True)
        else:
            print(f"workspace kept in {space.root}")  # noqa: T201
    return 0


def _run_console(space: Workspace, host: HostConfig) -> None:
    from console.app import ConsoleApp

    async def opener() -> AgentLink:
        return await open_local_link(space.state, host.pipeline)

    async def first_launch() -> None:
        link = await opener()
        try:
            await launch_runs(link)
        finally:
            await link.close()

    asyncio.run(first_launch())
    ConsoleApp({"demo": opener}, host_configs={"demo": host}).run()


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(local_bundle().source))
