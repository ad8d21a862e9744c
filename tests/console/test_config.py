"""Config files: a good one loads; every mistake names the file, the key and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.config import ConfigError, SshTarget, load_config
from tests.support.config_ranges import write_config

GOOD = """
[hosts.kimi]
ssh = "root@10.1.230.174"
python = "/opt/venv/bin/python3"
nvidia_smi = "/usr/local/nvidia/bin/nvidia-smi"

[hosts.kimi.datasets]
root = "/data/eagle3/datasets"
budget = 10_000_000
budgets = { B8_math = 5_000_000 }
guard = "stop"
guards = { B1_chat = "alert" }
stall_guard_s = 900

[hosts.kimi.sglang]
url = "http://127.0.0.1:30000"
log = "/root/sglang.log"
api_key_file = "~/.sglang-key"
api = "openai-completions"
model = "moonshotai/Kimi-K2-Instruct"

[hosts.kimi.jobs.inference]
argv = ["{python}", "-m", "agent.pipeline.inference", "--dataset-dir", "{dataset_dir}"]
kind = "inference"
per_dataset = true
stop_signal = "SIGINT"
grace_s = 60
env = { CUDA_VISIBLE_DEVICES = "0" }

[hosts.kimi.external]
sglang = "sglang[.]launch_server"

[hosts.kimi.notify]
url = "https://ntfy.sh/eagle-topic"
min_severity = "error"

[hosts.alias]
ssh = "gpu-box"
"""


def test_a_good_config_loads(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, GOOD))
    kimi = config.host("kimi")
    assert kimi.ssh == SshTarget("10.1.230.174", "root", None)
    assert kimi.python == "/opt/venv/bin/python3"
    assert kimi.state_dir == "~/.eagle-agent"
    assert kimi.pipeline.datasets is not None
    assert kimi.pipeline.datasets.budget == 10_000_000
    assert kimi.pipeline.datasets.budgets == {"B8_math": 5_000_000}
    assert kimi.pipeline.datasets.guard_of("B8_math") == "stop"
    assert kimi.pipeline.datasets.guard_of("B1_chat") == "alert"
    assert kimi.pipeline.datasets.stall_guard_s == 900
    assert kimi.pipeline.notify is not None
    assert (kimi.pipeline.notify.url, kimi.pipeline.notify.min_severity) == (
        "https://ntfy.sh/eagle-topic",
        "error",
    )
    assert kimi.pipeline.sglang_url == "http://127.0.0.1:30000"
    assert kimi.pipeline.sglang_api_key_file == "~/.sglang-key"
    assert kimi.pipeline.nvidia_smi == "/usr/local/nvidia/bin/nvidia-smi"
    assert config.host("alias").pipeline.nvidia_smi is None
    assert kimi.pipeline.sglang_api == "openai-completions"
    assert kimi.pipeline.sglang_model == "moonshotai/Kimi-K2-Instruct"
    assert config.host("alias").pipeline.sglang_api is None
    job = kimi.pipeline.jobs["inference"]
    assert job.argv[:3] == ("{python}", "-m", "agent.pipeline.inference")
    assert (job.kind, job.per_dataset, job.stop_signal, job.grace_s, job.term_grace_s) == (
        "inference", True, "SIGINT", 60.0, 10.0,
    )  # fmt: skip
    assert job.env == {"CUDA_VISIBLE_DEVICES": "0"}
    assert kimi.pipeline.external == {"sglang": "sglang[.]launch_server"}
    assert config.host("alias").ssh == SshTarget("gpu-box")
    assert config.host("alias").pipeline.datasets is None


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ('[hosts.a]\nssh = "x"\npyhton = "p"\n', "hosts.a.pyhton", "one of"),
        ("[hosts.a]\npython = 'p'\n", "hosts.a.ssh", "a string"),
        ('[hosts.a]\nssh = "root@box:99999"\n', "hosts.a.ssh", "user@host[:port]"),
        ('[hosts.a]\nssh = "root@@box"\n', "hosts.a.ssh", "user@host[:port]"),
        ('[hosts.a]\nssh = "b"\nread_only = 1\n', "hosts.a.read_only", "true or false"),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.datasets]\nbudget = 5\n',
            "hosts.a.datasets.root",
            "a string",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.datasets]\nroot = "/d"\nbudget = "10M"\n',
            "hosts.a.datasets.budget",
            "whole number",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.datasets]\nroot = "/d"\nbudget = -1\n',
            "hosts.a.datasets.budget",
            "positive",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.datasets]\nroot = "/d"\nbudgets = { B1 = true }\n',
            "hosts.a.datasets.budgets.B1",
            "whole number",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.datasets]\nroot = "/d"\nguard = "kill"\n',
            "hosts.a.datasets.guard",
            '"alert" or "stop"',
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.datasets]\nroot = "/d"\nguards = { B1 = 1 }\n',
            "hosts.a.datasets.guards.B1",
            '"alert" or "stop"',
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.notify]\nurl = "ftp://x/y"\n',
            "hosts.a.notify.url",
            "an http:// or https:// URL",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.notify]\nurl = "https://x/y"\nmin_severity = "loud"\n',
            "hosts.a.notify.min_severity",
            "info, warning or error",
        ),
        ("hosts = 3\n", "hosts", "a table"),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.external]\nsglang = "launch_server("\n',
            "hosts.a.external.sglang",
            "a Python regex",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.sglang]\napi_key_file = "key.txt"\n',
            "hosts.a.sglang.api_key_file",
            "a path on the host",
        ),
        (
            '[hosts.a]\nssh = "b"\nnvidia_smi = "bin/nvidia-smi"\n',
            "hosts.a.nvidia_smi",
            "a path on the host",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.sglang]\napi = "openai"\n',
            "hosts.a.sglang.api",
            "sglang, openai-completions or openai-chat",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.sglang]\napi_key = "s3cret"\n',
            "hosts.a.sglang.api_key",
            "one of",
        ),
        (
            '[hosts.a]\nssh = "b"\ndeploy_roots = ["relative/dir"]\n',
            "hosts.a.deploy_roots",
            "absolute paths",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.jobs.j]\nargv = "python run.py"\n',
            "hosts.a.jobs.j.argv",
            "list of strings",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.jobs.j]\nargv = ["x"]\nstop_signal = "TERM"\n',
            "hosts.a.jobs.j.stop_signal",
            "one of SIGHUP",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.jobs.j]\nargv = ["x"]\ngrace_s = -1\n',
            "hosts.a.jobs.j.grace_s",
            "seconds",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.jobs.j]\nargv = ["x"]\ngrace_s = nan\n',
            "hosts.a.jobs.j.grace_s",
            "seconds",
        ),
        (
            '[hosts.a]\nssh = "b"\n[hosts.a.jobs.j]\nargv = ["x"]\nterm_grace_s = inf\n',
            "hosts.a.jobs.j.term_grace_s",
            "seconds",
        ),
        ('[host.a]\nssh = "b"\n', "host", "one of console, hosts"),
        ('[hosts.a]\nssh = "local"\nidentity = "~/.ssh/k"\n', "hosts.a.identity", "no SSH"),
    ],
)
def test_mistakes_name_file_key_and_expectation(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {key}:")
    assert expected in message


def test_ssh_local_means_this_machine_without_ssh(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[hosts.here]\nssh = "local"\n[hosts.box]\nssh = "local@box"\n')
    config = load_config(path)
    assert config.host("here").is_local
    assert not config.host("box").is_local


def test_toml_nested_too_deeply_is_a_config_error(tmp_path: Path) -> None:
    path = write_config(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(path)


def test_invalid_toml_says_where(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[hosts.a\nssh = 1\n")
    with pytest.raises(ConfigError, match=r"not valid TOML.*line 1"):
        load_config(path)


def test_missing_file_and_unknown_host(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.toml")
    config = load_config(write_config(tmp_path, GOOD))
    with pytest.raises(ConfigError, match=r"no host 'kimmi'.*alias, kimi"):
        config.host("kimmi")


def test_search_path_finds_the_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="no config file found"):
        load_config()
    user_config = tmp_path / "xdg" / "eagle-console" / "config.toml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(GOOD)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert load_config().path == user_config
