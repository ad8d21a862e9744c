"""Each audit entry is bounded, whatever a peer sends.

Each refused launch with a 7 MB idempotency key was answered "at most 128 are kept", yet the
audit stored the whole key: 60 requests made audit.jsonl 420 MB and `audit.read limit=1`
answered 7 MB. A planted symlink in place of audit.jsonl is not written through.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent.journal.audit import MAX_PARAMS_BYTES, AuditLog
from agent.protocol import AUDIT_READ, JOBS_LAUNCH, AuditParams, AuditResult, LaunchParams
from console.link.agent_link import AgentRequestError
from tests.support.operations import local_link

HUGE_KEY = "k" * (7 << 20)


async def test_refused_requests_with_huge_keys_leave_small_audit_lines(state_dir: Path) -> None:
    async with local_link(state_dir, None) as link:
        for _ in range(5):
            with pytest.raises(AgentRequestError, match="at most 128 are kept"):
                await link.call(JOBS_LAUNCH, LaunchParams("x"), idempotency_key=HUGE_KEY)
        read: AuditResult = await link.call(AUDIT_READ, AuditParams(limit=1))
    assert (state_dir / "audit.jsonl").stat().st_size < 5 * 2048
    [entry] = read.entries
    assert entry.idempotency_key is not None
    assert entry.idempotency_key.endswith(f"… ({len(HUGE_KEY):,} characters)")
    assert len(entry.idempotency_key) < 200


def test_huge_params_are_summarised_and_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    audit.record("c", "jobs.launch", LaunchParams("x", argv=("a" * 100_000,)), "k", "ok")
    [entry] = audit.last(1)
    assert set(entry.params) == {"omitted"}
    assert (tmp_path / "audit.jsonl").stat().st_size < MAX_PARAMS_BYTES
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("")
    (tmp_path / "audit.jsonl").unlink()
    os.symlink(elsewhere, tmp_path / "audit.jsonl")
    with pytest.raises(OSError, match="audit.jsonl"):
        audit.record("c", "jobs.stop", LaunchParams("x"), "k2", "ok")
    assert elsewhere.read_text() == ""


def test_a_secret_on_an_edited_command_line_never_reaches_the_audit_log(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    argv = ("env", "HF_TOKEN=sk-three", "run", "--api-key", "--token", "sk-one", "--hf_token=sk-two",
            "--api-key-file", "/k", "--max-tokens", "5")  # fmt: skip
    audit.record("me", "jobs.launch", LaunchParams("runner", "B1", argv), "k", "ok")
    line = (tmp_path / "audit.jsonl").read_text()
    assert "sk-one" not in line
    assert "sk-two" not in line
    kept = json.loads(line)["params"]["argv"]
    assert kept == ["env", "HF_TOKEN=…", "run", "--api-key", "--token", "…", "--hf_token=…",
                    "--api-key-file", "/k", "--max-tokens", "5"]  # fmt: skip
    assert "sk-three" not in line
