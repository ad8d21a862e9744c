"""What the console says of a drafter check: one line for the panel, every field for the command.

No Textual. Host text is sanitised, never markup.
"""

from __future__ import annotations

from agent.protocol import DrafterCheck, DrafterField
from console.model.safe_text import sanitise

LAYOUTS = {
    "specforge": "a SpecForge export",
    "speculators": "a speculators checkpoint",
    "specforge-training": "a SpecForge training step",
}
MARKS = {True: "ok", False: "FAILED", None: "note"}


def check_line(check: DrafterCheck, host: str | None = "HOST") -> str:
    """`drafter check: passed · /out/run-step4 (a SpecForge export, for sglang)`, or what failed.

    A failure names the command that says every field, unless `host` is None (that command's own
    output).
    """
    where = sanitise(check.checkpoint)
    if check.ok is None and check.note == "checking":
        return f"drafter check: checking {where}"
    if check.ok is None:
        return f"drafter check: {sanitise(check.note) or 'not run'}"
    what = LAYOUTS.get(check.layout, sanitise(check.layout))
    served = f", for {sanitise(check.server)}" if check.server else ""
    if check.ok:
        notes = [sanitise(f.name) for f in check.fields if f.ok is None]
        noted = f" · note: {', '.join(notes)}" if notes else ""
        return f"drafter check: passed · {where} ({what}{served}){noted}"
    failed = ", ".join(sanitise(f.name) for f in check.fields if f.ok is False)
    more = f": `eagle-console check-drafter {host}` says each field and its fix" if host else ""
    return f"drafter check: FAILED {failed} · {where} ({what}{served}); not served{more}"


def check_text(check: DrafterCheck) -> str:
    """Every field on a line (`FAILED d2t/t2d: found · expected`), its fix on the next."""
    if check.ok is None:
        return f"{sanitise(check.checkpoint) or 'drafter'}: {sanitise(check.note) or 'not run'}"
    lines = [check_line(check, None).removeprefix("drafter check: ")]
    for field in check.fields:
        lines += field_lines(field)
    return "\n".join(lines)


def field_lines(field: DrafterField) -> list[str]:
    """One field: its mark, name and values, then its fix where it has one."""
    expected = f" · expected {sanitise(field.expected)}" if field.expected else ""
    lines = [f"  {MARKS[field.ok]:<6} {sanitise(field.name)}: {sanitise(field.found)}{expected}"]
    if field.fix and field.ok is not True:
        lines.append(f"         fix: {sanitise(field.fix)}")
    return lines
