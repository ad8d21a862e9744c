"""What the agent bundle holds: the agent package less its simulator, walked alike on both sides."""

from __future__ import annotations

from pathlib import Path

from agent.bundle import AGENT_PACKAGE, running_bundle_sha256
from agent.protocol import bundle_digest, bundle_files
from console.link.bundle import demo_bundle, local_bundle


def test_the_console_ships_the_agents_digest_and_only_the_demo_adds_the_simulator() -> None:
    simulator = tuple(bundle_files(AGENT_PACKAGE, simulator=True))

    assert not [path for path, _ in local_bundle().files if path.startswith("agent/simulator/")]
    assert {path.split("/")[1] for path, _ in simulator} == {"simulator"}
    assert local_bundle().sha256 == running_bundle_sha256() == demo_bundle().sha256
    assert demo_bundle().files == local_bundle().files + simulator
    assert (
        demo_bundle().folder == f"{local_bundle().sha256}+simulator-{bundle_digest(simulator)[:16]}"
    )


def test_a_simulator_edit_changes_no_bundle_digest(tmp_path: Path) -> None:
    package = tmp_path / "agent"
    for name in (
        "__init__.py",
        "simulator/__init__.py",
        "jobs/simulator/run.py",
        "__pycache__/x.py",
    ):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("A = 1\n")
    bundle = bundle_digest(bundle_files(package))
    simulator = bundle_digest(bundle_files(package, simulator=True))

    assert [path for path, _ in bundle_files(package)] == [
        "agent/__init__.py",
        "agent/jobs/simulator/run.py",  # only the package's own simulator/ is left out
    ]
    (package / "simulator" / "__init__.py").write_text("A = 2\n")
    assert bundle_digest(bundle_files(package)) == bundle
    assert bundle_digest(bundle_files(package, simulator=True)) != simulator
    (package / "__init__.py").write_text("A = 2\n")
    assert bundle_digest(bundle_files(package)) != bundle
