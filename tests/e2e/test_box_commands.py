"""The headless verbs a script drives the box with: jobs, start, stop, autopilot, autostart.

Run as a user would run them (`python -m console ...`, no terminal), over both loopback SSH
servers for the job verbs and on a local host for the rest; exit codes and JSON are checked.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.capture_jobs import capture_pipeline
from tests.support.cli_runs import run_cli
from tests.support.cli_success import run_cli_ok
from tests.support.datasets import response_line
from tests.support.ssh_servers import SshEndpoint

PY = sys.executable
TICKER = "import time\\nwhile True:\\n    print('tick', flush=True)\\n    time.sleep(0.2)"


def jobs_toml(name: str) -> str:
    return (
        f"[hosts.{name}.jobs.ticker]\n"
        f'argv = ["{PY}", "-c", "{TICKER}"]\n'
        'restart = "on-failure"\nmax_restarts = 3\ngrace_s = 5\n'
    )


def local_config(tmp_path: Path, state_dir: Path) -> Path:
    root = tmp_path / "datasets"
    root.mkdir()
    config = tmp_path / "eagle-console.toml"
    config.write_text(
        f'[hosts.box]\nssh = "local"\npython = "{PY}"\nstate_dir = "{state_dir}"\n'
        f'[hosts.box.datasets]\nroot = "{root}"\n' + jobs_toml("box")
    )
    return config


async def test_start_list_and_stop_a_job_from_a_script(
    tmp_path: Path, ssh_endpoint: SshEndpoint, state_dir: Path
) -> None:
    root = tmp_path / "datasets"
    root.mkdir()
    config = tmp_path / "eagle-console.toml"
    body = ssh_endpoint.config_toml("gpu", python=PY, state_dir=state_dir, datasets_root=root)
    config.write_text(body + jobs_toml("gpu"))

    started = await run_cli_ok("start", "gpu", "ticker", "--json", config=config)
    job = json.loads(started.stdout)
    assert job["name"] == "ticker"
    assert job["state"] in ("starting", "running")

    listed = await run_cli_ok("jobs", "gpu", config=config)
    header, row = listed.stdout.splitlines()[:2]
    assert header.split() == ["ID", "NAME", "DATASET", "STATE", "PID", "EXIT", "RESTARTS", "NOTE"]
    assert row.split()[:4] == [job["id"], "ticker", "-", "running"]
    assert row.index("running") == header.index("STATE"), "the columns line up under the header"
    as_json = await run_cli("jobs", "gpu", "--json", config=config)
    [one] = as_json.stdout.splitlines()  # one object per host, as status --json prints
    assert json.loads(one)["host"] == "gpu"
    assert [j["id"] for j in json.loads(one)["jobs"]] == [job["id"]]

    stopped = await run_cli_ok("stop", "gpu", "ticker", config=config)
    assert "Its process group will get SIGTERM, then SIGKILL after 5 s" in stopped.stdout
    assert f"ticker ({job['id']}): stopped (SIGTERM)" in stopped.stdout

    unknown = await run_cli("stop", "gpu", "nothing-such", config=config)
    assert unknown.code == 1
    assert "no job 'nothing-such' on the box; its jobs: ticker (" in unknown.stderr
    assert "redeploy" not in unknown.stderr

    again = await run_cli_ok("stop", "gpu", "ticker", "--json", config=config)
    assert json.loads(again.stdout)["outcome"] == "not_running", "said, even with nothing to stop"

    refused = await run_cli("start", "gpu", "nothing-such", config=config)
    assert refused.code == 2, "a usage mistake, as kubectl's exit codes have it"
    assert "no job 'nothing-such' in the host config (configured: ticker)" in refused.stderr


async def test_the_autopilot_is_started_seen_and_paused_from_a_script(
    tmp_path: Path, state_dir: Path
) -> None:
    config = local_config(tmp_path, state_dir)
    off = await run_cli_ok("autopilot", "box", config=config)
    assert "autopilot off" in off.stdout

    started = await run_cli_ok("autopilot", "box", "start", config=config)
    assert "generate every dataset to its budget" in started.stdout, "the plan is shown first"
    assert "autopilot running" in started.stdout

    status = await run_cli("autopilot", "box", "status", "--json", config=config)
    state = json.loads(status.stdout)
    assert state["state"] == "running"
    assert [s["name"] for s in state["stages"]][:2] == ["generate", "export"]

    paused = await run_cli_ok("autopilot", "box", "pause", config=config)
    assert "autopilot PAUSED" in paused.stdout
    resumed = await run_cli("autopilot", "box", "resume", "--json", config=config)
    assert json.loads(resumed.stdout)["state"] == "running"
    await run_cli("autopilot", "box", "pause", config=config)  # leave nothing to act later


async def test_autostart_shows_the_boot_line_and_installs_it_only_where_cron_is(
    tmp_path: Path, state_dir: Path
) -> None:
    config = local_config(tmp_path, state_dir)
    status = await run_cli_ok("autostart", "box", config=config)
    assert f"-m agent start --state-dir {state_dir}" in status.stdout
    if shutil.which("crontab") is None:
        refused = await run_cli("autostart", "box", "--install", config=config)
        assert refused.code == 1
        assert "no crontab on this box" in refused.stderr
        return
    installed = await run_cli("autostart", "box", "--install", "--json", config=config)
    try:
        assert json.loads(installed.stdout)["installed"] is True
        crontab = subprocess.run(["crontab", "-l"], capture_output=True, text=True, check=False)
        assert f"-m agent start --state-dir {state_dir}" in crontab.stdout
        assert crontab.stdout.count(f"eagle-console agent {state_dir}") == 1
    finally:
        removed = await run_cli("autostart", "box", "--remove", "--json", config=config)
    assert json.loads(removed.stdout)["installed"] is False
    crontab = subprocess.run(["crontab", "-l"], capture_output=True, text=True, check=False)
    assert str(tmp_path / "state") not in crontab.stdout


@pytest.mark.parametrize("verb", ["start", "stop", "autopilot"])
async def test_a_read_only_host_refuses_every_change(
    tmp_path: Path, state_dir: Path, verb: str
) -> None:
    config = local_config(tmp_path, state_dir)
    config.write_text(
        config.read_text().replace('ssh = "local"', 'ssh = "local"\nread_only = true')
    )
    args = {"start": ["ticker"], "stop": ["ticker"], "autopilot": ["start"]}[verb]
    result = await run_cli(verb, "box", *args, config=config)
    assert result.code == 1
    assert "read_only" in result.stderr


async def test_start_refuses_a_capture_that_will_not_fit_and_force_overrules(
    tmp_path: Path, state_dir: Path
) -> None:
    pipeline = capture_pipeline(tmp_path)
    config = local_config(tmp_path, state_dir)
    with config.open("a") as handle:
        for name, spec in pipeline.jobs.items():
            handle.write(f"[hosts.box.jobs.{name}]\nargv = {json.dumps(list(spec.argv))}\n"
                         f'kind = "{spec.kind}"\ngrace_s = 5\n')  # fmt: skip
        handle.write("output_quota_gib = 0.0009765625\n")  # 1 MiB, on the last table: hs
    exported_run = await run_cli_ok("start", "box", "export", "--json", config=config)
    export_id = json.loads(exported_run.stdout)["id"]
    for _ in range(300):  # until the export job has ended (its report was written before)
        listed = await run_cli("jobs", "box", "--json", config=config)
        states = {job["id"]: job["state"] for job in json.loads(listed.stdout)["jobs"]}
        if states.get(export_id) == "exited":
            break
    else:
        raise AssertionError(f"the export never ended: {listed.stdout}")

    refused = await run_cli("start", "box", "hs", config=config)
    assert refused.code == 1
    assert "the hidden states will not fit: hs would write 7.7 MiB" in refused.stderr
    assert "`start --force`" in refused.stderr
    assert refused.stdout == ""

    forced = await run_cli_ok("start", "box", "hs", "--force", config=config)
    assert forced.stdout.startswith("started hs as ")
    await run_cli_ok("stop", "box", "hs", config=config)


async def test_start_asks_what_g_asks_before_it_starts_a_run(
    tmp_path: Path, state_dir: Path
) -> None:
    """No run on a folder with no prompts, or on a dataset at its budget; usage mistakes exit 2."""
    config = local_config(tmp_path, state_dir)
    (tmp_path / "datasets" / "empty").mkdir()
    full = tmp_path / "datasets" / "full"
    full.mkdir()
    (full / "prompts.jsonl").write_text('{"id": "p0", "prompt": "q"}\n')
    (full / "raw_responses.jsonl").write_text(response_line("p0", 50))
    with config.open("a") as handle:
        handle.write(f'[hosts.box.jobs.gen]\nargv = ["{PY}", "-c", "pass"]\nkind = "inference"\n'
                     "per_dataset = true\n")  # fmt: skip
    text = config.read_text().replace(
        "[hosts.box.datasets]\n", "[hosts.box.datasets]\nbudget = 10\n"
    )
    config.write_text(text)

    empty = await run_cli("start", "box", "gen/empty", config=config)
    assert empty.code == 1
    assert "gen not started: empty has no prompts" in empty.stderr
    done = await run_cli("start", "box", "gen/full", config=config)
    assert done.code == 1
    assert "gen not started: full is done: 50 of its 10 tokens (--force asks" in done.stderr
    missing = await run_cli("start", "box", "gen/nope", config=config)
    assert missing.code == 2
    assert "no dataset 'nope' under" in missing.stderr
    whole = await run_cli("start", "box", "gen", config=config)
    assert whole.code == 2
    assert "gen runs per dataset: name it gen/DATASET" in whole.stderr
    listed = await run_cli("jobs", "box", config=config)
    assert listed.stdout.startswith("no jobs on box: "), "nothing was started"


async def test_an_unknown_command_is_said_to_be_one(tmp_path: Path, state_dir: Path) -> None:
    config = local_config(tmp_path, state_dir)
    typo = await run_cli("frobnicate", config=config)
    assert typo.code == 2
    assert "unknown command or host 'frobnicate': the commands are status, doctor" in typo.stderr
    assert "the hosts in" in typo.stderr
    doctor = await run_cli("doctor", "box", "--json", config=config)
    report = json.loads(doctor.stdout)
    assert (report["host"], report["checks"][0]["name"]) == ("box", "local")
    assert doctor.code == (0 if report["ok"] else 1)


async def test_start_wait_stays_to_the_end_and_says_how_it_ended(
    tmp_path: Path, state_dir: Path
) -> None:
    config = tmp_path / "eagle-console.toml"
    config.write_text(
        f'[hosts.box]\nssh = "local"\npython = "{PY}"\nstate_dir = "{state_dir}"\n'
        f'[hosts.box.jobs.quick]\nargv = ["{PY}", "-c", "print(1)"]\n'
        f'[hosts.box.jobs.bad]\nargv = ["{PY}", "-c", "import sys; sys.exit(\'no data\')"]\n'
    )
    done = await run_cli_ok("start", "box", "quick", "--wait", config=config)
    assert done.stdout.splitlines()[-1].startswith("quick (quick-")
    assert " exited: 0" in done.stdout
    failed = await run_cli("start", "box", "bad", "--wait", config=config)
    assert failed.code == 1, failed.stdout + failed.stderr
    assert " failed: 1: no data" in failed.stdout
