"""`python -m agent stop` ends the daemon whatever it waits on, so the next attach can start one.

Before: a daemon held up by a peer (a webhook that dripped a byte every 2 s) did not stop within
the 15 s the stop waited; the stop gave up, the daemon kept its lock, and every later attach
failed "agent daemon did not start". Now a stopping daemon ends by its own deadline whatever
task or thread lingers, and a stop SIGKILLs one that still holds the lock after its wait.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent.attach import stop_daemon
from agent.state import StatePaths

HOLDER = """
import fcntl, json, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
root = sys.argv[1]
fd = os.open(os.path.join(root, "daemon.lock"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
with open(os.path.join(root, "daemon.json"), "w") as f:
    json.dump({"pid": os.getpid()}, f)
print("held", flush=True)
time.sleep(600)
"""


def test_a_daemon_that_ignores_sigterm_is_killed_and_lets_go_of_its_lock(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        assert stop_daemon(paths, timeout_s=0.5)
        assert holder.wait(5.0) == -9
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


STUCK = """
import threading, time
from agent.daemon import exit_within
exit_within(0.3)
threading.Thread(target=time.sleep, args=(600,)).start()  # not a daemon thread: exit waits for it
print("lingering", flush=True)
"""


@pytest.mark.slow
def test_a_stopping_daemon_exits_by_its_deadline_whatever_thread_lingers() -> None:
    done = subprocess.run(
        [sys.executable, "-c", STUCK], capture_output=True, text=True, timeout=60.0, check=False
    )
    assert (done.returncode, done.stdout) == (1, "lingering\n"), done.stderr
    assert "did not stop within 0.3 s" in done.stderr
