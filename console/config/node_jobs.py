"""Jobs across boxes, checked across the hosts: every box a job names defines it the same way.

A job with `nodes = ["a", "b"]` runs as one part per box, started together by the console; each
box keeps its own argv (paths differ between boxes), so each named host must define the job, with
the same list, and the host itself must be one of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from console.config.hosts import ConfigError, HostConfig


def check_node_jobs(path: Path, hosts: Mapping[str, HostConfig]) -> None:
    """Raise a ConfigError, naming the key and the fix, at the first job across boxes amiss."""
    for host in hosts.values():
        for name, spec in host.pipeline.jobs.items():
            if not spec.nodes:
                continue
            key = f"{path}: hosts.{host.name}.jobs.{name}.nodes"
            if host.name not in spec.nodes:
                raise ConfigError(
                    f"{key}: {list(spec.nodes)} leaves out {host.name} itself; expected every box "
                    f"the job runs on, {host.name} included, in node-rank order"
                )
            for other in spec.nodes:
                _check_the_other(key, name, list(spec.nodes), hosts.get(other), other)


def _check_the_other(
    key: str, name: str, nodes: list[str], other: HostConfig | None, other_name: str
) -> None:
    if other is None:
        raise ConfigError(
            f"{key}: names {other_name!r}, which is not a host in [hosts]; expected the name of "
            "a configured host for each box"
        )
    theirs = other.pipeline.jobs.get(name)
    if theirs is None:
        raise ConfigError(
            f"{key}: {other_name} has no job {name!r}; define [hosts.{other_name}.jobs.{name}] "
            f"too (its own argv, with nodes = {nodes})"
        )
    if list(theirs.nodes) != nodes:
        raise ConfigError(
            f"{key}: {nodes}, but hosts.{other_name}.jobs.{name}.nodes is {list(theirs.nodes)}; "
            "expected the same list, in the same order, on every box the job spans"
        )


def node_spans(hosts: Mapping[str, HostConfig]) -> dict[str, dict[str, tuple[str, ...]]]:
    """For each host, its jobs across boxes and the boxes each spans, as the config says."""
    return {
        host.name: {name: spec.nodes for name, spec in host.pipeline.jobs.items() if spec.nodes}
        for host in hosts.values()
    }
