"""Training-data export, the id-only form: tokens/s on one core. Goal >= 5M/s (tokenizer load excluded).

Answers of simulator output (~3,500 tokens each) to prompts given as input_ids (what the runner
sent, read back from prompts.jsonl and checked), written as `ids.jsonl` with every quality check
run; then the same with chat prompts, which the tokenizer's template must encode again; then both
forms, every conversation decoded, rendered and tokenized again for the round trip. Memory:
the peak RSS of an export of N and of 4N records, in processes of their own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agent.pipeline.export.run import ExportOptions, export
from agent.pipeline.tokenizer import load_tokenizer
from agent.simulator.tokenizer import build_tokenizer
from agent.simulator.tokens import LengthProfile, TokenSource

TOKENS = 20_000_000
PROMPT_TOKENS = 500


def write_dataset(folder: Path, tokens: int, chat: bool) -> int:
    """Prompts and responses of about `tokens` output tokens; returns the exact count."""
    folder.mkdir(parents=True)
    source = TokenSource(32000, seed=5)
    bodies = []
    for index in range(64):
        answer = source.plan(str(index).encode(), 8000, LengthProfile(3500, 1500))
        record = {"output_ids": answer.output_ids, "completion_tokens": len(answer.output_ids),
                  "finish_reason": answer.finish}  # fmt: skip
        bodies.append(json.dumps(record, separators=(",", ":")))  # as the runner writes them
    per_block = sum(len(json.loads(body)["output_ids"]) for body in bodies)
    blocks = -(-tokens // per_block)
    with (
        (folder / "prompts.jsonl").open("w") as prompts,
        (folder / "raw_responses.jsonl").open("w") as out,
    ):
        for block in range(blocks):
            for index, body in enumerate(bodies):
                key = f"r{block}-{index}"
                prompt: dict[str, object]
                if chat:
                    prompt = {
                        "id": key,
                        "messages": [{"role": "user", "content": " ".join(["w9"] * 200)}],
                    }
                else:
                    prompt = {"id": key, "input_ids": list(range(100, 100 + PROMPT_TOKENS))}
                prompts.write(json.dumps(prompt) + "\n")
                out.write(f'{{"id":"{key}",{body[1:]}\n')
    return blocks * per_block


def timed_export(
    root: Path, tokenizer: Path, formats: frozenset[str] = frozenset({"ids"}),
    template: str | None = None,
) -> tuple[float, float, dict[str, object]]:  # fmt: skip
    """Wall and CPU seconds of the export, and its summary.

    transformers is imported first, untimed (a fixed cost once per job); the export's own
    tokenizer load stays in both figures.
    """
    load_tokenizer(str(tokenizer), trust_remote_code=False)
    options = ExportOptions(
        root, str(tokenizer), root.parent / "out", formats=formats, held_out_share=0.0,
        chat_template=template,
    )  # fmt: skip  # every record exported: the held-out slice would leave 1 % out of the count
    started, cpu = time.perf_counter(), time.process_time()
    summary = export(options)
    return time.perf_counter() - started, time.process_time() - cpu, summary


def peak_rss_mib(records_tokens: int, folder: Path, tokenizer: Path) -> float:
    """The peak RSS of an export in a process of its own."""
    root = folder / f"rss-{records_tokens}" / "datasets"
    write_dataset(root / "B1", records_tokens, chat=False)
    code = (
        "import sys, resource; from pathlib import Path; "
        "from agent.pipeline.export.run import ExportOptions, export; "
        f"export(ExportOptions(Path({str(root)!r}), {str(tokenizer)!r}, Path({str(root.parent / 'out')!r}), "
        "formats=frozenset({'ids'}))); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1]) / 1024


def run() -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        tokenizer = build_tokenizer(base / "tokenizer")
        for chat in (False, True):
            root = base / ("chat" if chat else "ids") / "datasets"
            tokens = write_dataset(root / "B1", TOKENS if not chat else TOKENS // 4, chat)
            took, cpu_s, summary = timed_export(root, tokenizer)
            assert summary["tokens"] == tokens
            rate = float(summary["tokens_per_s"])  # type: ignore[arg-type]
            shape = "chat prompts (template applied again)" if chat else "input_ids prompts"
            print(
                f"export, id-only form, {shape}: {tokens:,} tokens at {rate / 1e6:.1f}M tokens/s "
                f"of wall time, {tokens / cpu_s / 1e6:.1f}M per CPU second (goal >= 5M/s on one "
                f"core, the tokenizer's load included); {took:.1f} s in all"
            )
        root = base / "both" / "datasets"
        tokens = write_dataset(root / "B1", TOKENS // 20, chat=True)
        both = frozenset({"ids", "conversations"})
        took, _, summary = timed_export(root, tokenizer, both, template="lfm")
        rate = float(summary["tokens_per_s"])  # type: ignore[arg-type]
        print(f"export, both forms, a round trip through the chat template on every record: "
              f"{tokens:,} tokens at {rate / 1e6:.2f}M tokens/s; {took:.1f} s in all")  # fmt: skip
        small, large = (
            peak_rss_mib(TOKENS // 8, base, tokenizer),
            peak_rss_mib(TOKENS // 2, base, tokenizer),
        )
        print(
            f"export peak RSS: {small:.0f} MiB for {TOKENS // 8:,} tokens, {large:.0f} MiB for "
            f"{TOKENS // 2:,} tokens (4x the records)"
        )
