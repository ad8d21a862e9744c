"""The hostile box of the `terminal_text` scenario, and how its text is counted on a terminal.

Every file a console shows something of holds hostile text: dataset folder names, response ids
and finish reasons, error reasons, the server log, a job's name, argv and output, the model
path the server reports, and a deployed file. Each hostile string carries markup and real
escape sequences (a title change, a cursor-position query, a DCS), and every character the
console must neutralise (C0 but tab, DEL, C1, bidi controls, line separators, an undecodable
byte), each one between two BARs. On a terminal's bytes that makes the outcome countable:
BAR c BAR raw is an escape that reached the terminal; BAR, a visible placeholder, BAR is text
shown as text; two BARs with nothing between are a character silently dropped.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.ssh_servers import SshEndpoint

BAR = "¦"
MARKUP = "[red]M[/][/][link=https://evil.example]L[/link]"
NAME_MARKUP = "[red]M[bold]"
"""What a file name can hold of it (no slash)."""
SEQUENCES = ("\x1b]0;PWNED\x07", "\x1b[6n", "\x1b[31337m", "\x1bP+q31337\x1b\\")
"""Whole sequences a terminal would obey: retitle, answer with keystrokes, restyle, query."""
BIDI = ("\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)),
        *map(chr, range(0x2066, 0x206A)), "\u2028", "\u2029")  # fmt: skip
UNSAFE = (*(chr(c) for c in range(0x20) if c != 0x09), "\x7f", *map(chr, range(0x80, 0xA0)), *BIDI,
          "\udcff")  # fmt: skip
"""Every character the console must not let through as it is."""
JOB_SCRIPT = (
    "import sys, time\n"
    "for line in sys.argv[1:]:\n"
    "    sys.stdout.buffer.write(line.encode(errors='surrogateescape') + b'\\n')\n"
    "sys.stdout.flush()\n"
    "time.sleep(3600)\n"
)


def hostile(label: str, chars: tuple[str, ...], *, in_file_name: bool = False) -> str:
    """`label`, markup, the sequences (not in a file name) and each of `chars` between BARs.

    The sandwiches are a space apart, so two BARs meet only where a character was dropped.
    """
    markup = NAME_MARKUP if in_file_name else MARKUP
    sequences = "" if in_file_name else "".join(SEQUENCES)
    return label + markup + sequences + " ".join(f"{BAR}{char}{BAR}" for char in chars)


def allowed(
    *, file_name: bool = False, config: bool = False, line: bool = False
) -> tuple[str, ...]:
    """UNSAFE less what a place cannot hold: NUL in names and argv, surrogates in TOML, newlines."""
    banned = set()
    if file_name or config:
        banned.add("\x00")
    if config:
        banned.add("\udcff")
    if line:
        banned.add("\n")
    return tuple(char for char in UNSAFE if char not in banned)


NAME_CHARS = 26
"""Hostile characters per dataset name: a name holds at most 255 bytes, so each takes a share."""


def name_chars(index: int) -> tuple[str, ...]:
    """The share of dataset `index`: every character is in some name once there are three."""
    chars = allowed(file_name=True)
    start = index * NAME_CHARS % len(chars)
    return (chars[start:] + chars[:start])[:NAME_CHARS]


@dataclass
class Counts:
    """What a terminal received of the hostile characters."""

    leaked: int = 0
    shown: int = 0
    dropped: int = 0
    leaked_chars: set[str] = field(default_factory=set)

    def add(self, other: Counts) -> None:
        """Sum in another part's counts."""
        self.leaked += other.leaked
        self.shown += other.shown
        self.dropped += other.dropped
        self.leaked_chars |= other.leaked_chars


SHOWN = re.compile(
    re.escape(BAR.encode())
    + rb"(?:\xe2\x90[\x80-\xa1]|<U\+[0-9A-F]{4}>|\xef\xbf\xbd)"
    + re.escape(BAR.encode())
)
"""A character shown as a placeholder: a Control Picture, <U+XXXX>, or U+FFFD."""


def count(output: bytes) -> Counts:
    """Count raw (leaked), placeholder (shown) and empty (dropped) BAR sandwiches, and sequences."""
    bar = BAR.encode()
    counts = Counts(dropped=output.count(bar + bar), shown=len(SHOWN.findall(output)))
    for char in UNSAFE:
        forms = {char.encode(errors="surrogateescape"), char.encode(errors="surrogatepass")}
        if char == "\n":
            forms.add(b"\r\n")  # the pty turns a newline into CR LF
        found = sum(output.count(bar + form + bar) for form in forms)
        counts.leaked += found
        if found:
            counts.leaked_chars.add(repr(char))
    for sequence in SEQUENCES:
        found = output.count(sequence.encode().rstrip(b"\x07\x1b\\"))
        counts.leaked += found
        if found:
            counts.leaked_chars.add(repr(sequence))
    return counts


@dataclass(frozen=True, slots=True)
class HostileBox:
    """The box's files under `root`, and the hostile names a console will be asked about."""

    root: Path
    datasets: tuple[str, ...]
    job_name: str
    job_lines: tuple[str, ...]
    model_path: str

    @property
    def state(self) -> Path:
        """The agent's state dir."""
        return self.root / "state"

    @property
    def datasets_root(self) -> Path:
        """One folder per hostile dataset."""
        return self.root / "datasets"

    @property
    def deploy_root(self) -> Path:
        """The one folder deploys may write."""
        return self.root / "deploy"

    @property
    def planted(self) -> int:
        """Hostile strings written into the box."""
        per_dataset = 4  # the name, a response id, its finish reason, an error reason
        return len(self.datasets) * per_dataset + len(self.job_lines) * 2 + 3

    @classmethod
    def create(cls, root: Path, datasets: int, lines: int) -> HostileBox:
        """Write the box: `datasets` hostile datasets, a job printing `lines` hostile lines."""
        names = tuple(hostile(f"hostds{i}", name_chars(i), in_file_name=True)
                      for i in range(datasets))  # fmt: skip
        box = cls(
            root, names, hostile("hostjob", allowed(config=True)[:12]),
            tuple(hostile(f"hostlog{i}", allowed(config=True, line=True)) for i in range(lines)),
            hostile("hostmodel", allowed(config=True, line=True)),
        )  # fmt: skip
        for index, name in enumerate(names):
            box.write_dataset(index, name)
        box.deploy_root.mkdir(parents=True)
        (box.deploy_root / "run.py").write_bytes(_lines("hostdeployed", 3))
        (root / "local-run.py").write_text("print('the local version')\n")
        return box

    def write_dataset(self, index: int, name: str) -> None:
        """Prompts, responses with hostile ids and finish reasons (over budget), hostile errors."""
        folder = self.datasets_root / name
        folder.mkdir(parents=True)
        chars = allowed(line=True)
        (folder / "prompts.jsonl").write_text(json.dumps({"id": "p0", "prompt": "q"}) + "\n")
        record = {"id": hostile(f"hostid{index}", chars), "output_ids": [1, 2, 3],
                  "completion_tokens": 50, "finish_reason": hostile(f"hostfin{index}", chars)}  # fmt: skip
        (folder / "raw_responses.jsonl").write_text(json.dumps(record) + "\n")
        error = {"id": "p0", "reason": hostile(f"hosterr{index}", chars), "permanent": True}
        (folder / "errors.jsonl").write_text(json.dumps(error) + "\n")

    def append_server_log(self, log_file: Path) -> None:
        """Hostile lines in the SGLang server's log."""
        with log_file.open("ab") as handle:
            handle.write(_lines("hostsglang", 3))

    def config(self, endpoint: SshEndpoint, sglang_url: str, sglang_log: Path) -> str:
        """The eagle-console.toml of the box, reached through `endpoint`."""
        job = [sys.executable, "-c", JOB_SCRIPT, *self.job_lines]
        return "\n".join([
            "[hosts.gpu]", f"ssh = {_toml(f'{endpoint.user}@{endpoint.host}:{endpoint.port}')}",
            f"known_hosts = {_toml(str(endpoint.known_hosts))}",
            f"identity = {_toml(str(endpoint.identity))}", f"python = {_toml(sys.executable)}",
            f"state_dir = {_toml(str(self.state))}", f"deploy_roots = [{_toml(str(self.deploy_root))}]",
            "[hosts.gpu.datasets]", f"root = {_toml(str(self.datasets_root))}", "budget = 10",
            "[hosts.gpu.sglang]", f"url = {_toml(sglang_url)}", f"log = {_toml(str(sglang_log))}",
            "[[hosts.gpu.deploy]]", f"local = {_toml(str(self.root / 'local-run.py'))}",
            f"remote = {_toml(str(self.deploy_root / 'run.py'))}",
            f"[hosts.gpu.jobs.{_toml(self.job_name)}]", f"argv = [{', '.join(map(_toml, job))}]",
            "grace_s = 2", "",
        ])  # fmt: skip


def _toml(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, but DEL must be escaped too."""
    return json.dumps(text).replace("\x7f", "\\u007f")


def _lines(label: str, count: int) -> bytes:
    chars = allowed(line=True)
    return b"".join(
        hostile(f"{label}{i}", chars).encode(errors="surrogateescape") + b"\n" for i in range(count)
    )
