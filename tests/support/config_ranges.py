"""Config files with values out of their protocol range, and at its edges, for tests and faults."""

from __future__ import annotations

from pathlib import Path

from agent.protocol import DatasetsConfig, JobSpec, field_range

DAY_S = 86400

HOST = """
[hosts.gpu]
ssh = "local"
deploy_roots = ["/tmp"]
"""


def _datasets(**values: object) -> str:
    """A local host whose [datasets] table holds `values`."""
    lines = "".join(f"{key} = {value}\n" for key, value in values.items())
    return f'{HOST}\n[hosts.gpu.datasets]\nroot = "/data"\n{lines}'


def _job(**values: object) -> str:
    """A local host with one job whose table holds `values`."""
    lines = "".join(f"{key} = {value}\n" for key, value in values.items())
    return f'{HOST}\n[hosts.gpu.jobs.infer]\nargv = ["python", "run.py"]\n{lines}'


def _budgets(value: object) -> str:
    """A local host whose dataset B1 has its own budget of `value`."""
    return f"{_datasets()}\n[hosts.gpu.datasets.budgets]\nB1 = {value}\n"


def write_config(folder: Path, text: str) -> Path:
    """`text` as the config file in `folder`."""
    path = folder / "eagle-console.toml"
    path.write_text(text)
    return path


OUT_OF_RANGE = [
    (_datasets(budget=10**30), "hosts.gpu.datasets.budget", "a number of 31 digits"),
    (_budgets(2**62 + 1), "hosts.gpu.datasets.budgets.B1", f"{2**62 + 1:,}"),
    (_datasets(stall_after_s=0.5), "hosts.gpu.datasets.stall_after_s", "0.5"),
    (_datasets(stall_guard_s=0.5), "hosts.gpu.datasets.stall_guard_s", "0.5"),
    (_datasets(overrun_alert_share=101), "hosts.gpu.datasets.overrun_alert_share", "101"),
    (_datasets(low_disk_floor_gib=1e300), "hosts.gpu.datasets.low_disk_floor_gib", "1e+300"),
    (_datasets(truncation_alert_share=1.5), "hosts.gpu.datasets.truncation_alert_share", "1.5"),
    (_job(grace_s=8 * DAY_S), "hosts.gpu.jobs.infer.grace_s", "691,200"),
    (_job(term_grace_s=8 * DAY_S), "hosts.gpu.jobs.infer.term_grace_s", "691,200"),
    (_job(restart_delay_s=2 * DAY_S), "hosts.gpu.jobs.infer.restart_delay_s", "172,800"),
    (_job(restart_window_s=0.5), "hosts.gpu.jobs.infer.restart_window_s", "0.5"),
    (_job(max_restarts=1001), "hosts.gpu.jobs.infer.max_restarts", "1,001"),
    (_job(stop_after_peak_evals=0), "hosts.gpu.jobs.infer.stop_after_peak_evals", "0"),
]
"""(config, the key a refusal names, the value as it shows it)."""


def edge_config(high: bool) -> str:
    """A config with every ranged value at its lowest or highest the agent accepts."""
    pick = 1 if high else 0
    budget = max(1, int(field_range(DatasetsConfig, "budget")[pick]))
    shares = ("overrun_alert_share", "truncation_alert_share")
    datasets = {
        name: field_range(DatasetsConfig, name)[pick]
        for name in ("stall_after_s", "stall_guard_s", *shares)
    }
    job = {
        name: field_range(JobSpec, name)[pick]
        for name in ("grace_s", "term_grace_s", "restart_window_s", "restart_delay_s")
    }
    text = _datasets(budget=budget, **datasets) + "\n[hosts.gpu.datasets.budgets]\n"
    text += f'B1 = {budget}\n\n[hosts.gpu.jobs.infer]\nargv = ["python", "run.py"]\n'
    text += f"max_restarts = {int(field_range(JobSpec, 'max_restarts')[pick])}\n"
    text += f"stop_after_peak_evals = {int(field_range(JobSpec, 'stop_after_peak_evals')[pick])}\n"
    return text + "".join(f"{key} = {value}\n" for key, value in job.items())
