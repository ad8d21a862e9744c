"""A deploy cut off mid-upload leaves every target exactly old; the next deploy cleans up and lands."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from agent.protocol import PipelineConfig
from console.config import DeployMapping
from console.link.agent_link import LinkError
from console.link.deploy import deploy, plan_deploy
from console.link.file_channel import LocalChannel
from tests.support.operations import local_link


class CutChannel(LocalChannel):
    """Writes only the first `keep` bytes of an upload, then the connection 'drops'."""

    def __init__(self, keep: int) -> None:
        self.keep = keep

    async def stage(self, path: str, content: bytes, mode: int) -> None:
        await super().stage(path, content[: self.keep], mode)
        raise ConnectionResetError("connection lost mid-upload")


@pytest.mark.parametrize("seed", range(5))
async def test_a_cut_upload_leaves_targets_old_and_the_next_deploy_lands(
    tmp_path: Path, state_dir: Path, seed: int
) -> None:
    local, remote = tmp_path / "local", tmp_path / "remote"
    local.mkdir()
    remote.mkdir()
    for name in ("a.py", "b.py", "c.py"):
        (local / name).write_text(f"new {name}\n" * 500)
        (remote / name).write_text(f"old {name}\n" * 500)
    async with local_link(state_dir, PipelineConfig(deploy_roots=(str(remote),))) as link:
        mapping = (DeployMapping(local, str(remote)),)
        plans = await plan_deploy(link, mapping)
        link.files = CutChannel(random.Random(seed).randrange(1, 4000))
        with pytest.raises(LinkError, match="deploy stopped at .*connection lost mid-upload"):
            await deploy(link, plans)
        assert all((remote / n).read_text() == f"old {n}\n" * 500 for n in ("a.py", "b.py", "c.py"))
        [leftover] = remote.glob(".*eagle-upload-*")
        old = time.time() - 120
        os.utime(leftover, (old, old))

        link.files = LocalChannel()
        results = await deploy(link, await plan_deploy(link, mapping))
    assert all((remote / n).read_text() == f"new {n}\n" * 500 for n in ("a.py", "b.py", "c.py"))
    assert str(leftover) in {path for result in results for path in result.removed_leftovers}
    assert not list(remote.glob(".*eagle-upload-*"))


async def test_a_folder_swapped_for_a_symlink_after_the_plan_gets_no_byte_outside_the_roots(
    tmp_path: Path, state_dir: Path
) -> None:
    local, remote, outside = tmp_path / "local", tmp_path / "remote", tmp_path / "outside"
    (local / "sub").mkdir(parents=True)
    (remote / "sub").mkdir(parents=True)
    outside.mkdir()
    (local / "sub" / "x.py").write_text("new\n")
    async with local_link(state_dir, PipelineConfig(deploy_roots=(str(remote),))) as link:
        plans = await plan_deploy(link, (DeployMapping(local, str(remote)),))
        (remote / "sub").rmdir()
        (remote / "sub").symlink_to(outside)  # swapped between the plan and the deploy
        with pytest.raises(LinkError, match="outside the deploy roots"):
            await deploy(link, plans)
    assert list(outside.iterdir()) == []
