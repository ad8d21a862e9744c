"""What the export of one dataset counted, as quality.json holds it."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.pipeline.export.quality import QualityTally
from agent.pipeline.export.roundtrip import Mismatch
from agent.pipeline.export.screening import CONTAMINATED, ScreenVerdict

MAX_EXAMPLES = 10
"""Round-trip mismatches kept per dataset, with their context."""
MAX_SCREEN_EXAMPLES = 5
"""Ids kept per excluded set, and per dataset that kept a prompt first."""


@dataclass
class RoundTripTally:
    """Conversations rendered back through the chat template, and how many reproduce the tokens."""

    checked: int = 0
    matched: int = 0
    mismatched_in: dict[str, int] = field(default_factory=dict)
    """Mismatches by where they start: prompt, answer, after, or render (the template failed)."""
    reasons: dict[str, int] = field(default_factory=dict)
    examples: list[Mismatch] = field(default_factory=list)

    def add(self, mismatch: Mismatch | None) -> None:
        """Count one conversation's round trip."""
        self.checked += 1
        if mismatch is None:
            self.matched += 1
            return
        self.mismatched_in[mismatch.where] = self.mismatched_in.get(mismatch.where, 0) + 1
        self.reasons[mismatch.reason] = self.reasons.get(mismatch.reason, 0) + 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(mismatch)

    @property
    def share(self) -> float | None:
        """The share that matches exactly (None when nothing was checked)."""
        return self.matched / self.checked if self.checked else None


@dataclass
class Skipped:
    """Records of one kind left out, and the first one's id and reason."""

    count: int = 0
    first: str = ""

    def add(self, record_id: str, reason: str) -> None:
        """One more; the first is kept with its reason."""
        if not self.count:
            self.first = f"{record_id}: {reason}" if reason else record_id
        self.count += 1


@dataclass
class LengthCut:
    """Records longer than the trainer's max_length, which it cuts there."""

    max_length: int = 0
    records: int = 0
    loss_tokens_cut: int = 0
    """Generated tokens past the cut: trained on by nobody."""
    records_without_loss: int = 0
    """Prompts that alone fill max_length: nothing of the answer is left to train on."""

    def add(self, prompt: int, output: int) -> None:
        """One record of `prompt` sent and `output` generated tokens."""
        if not self.max_length or prompt + output <= self.max_length:
            return
        self.records += 1
        self.loss_tokens_cut += min(output, prompt + output - self.max_length)
        self.records_without_loss += prompt >= self.max_length


@dataclass
class DatasetReport:
    """Everything the export of one dataset found and wrote."""

    name: str
    prompts: int = 0
    unanswered_prompts: int = 0
    duplicates_skipped: int = 0
    held_out: int = 0
    """Prompts kept out of training for the evaluation (OUT/held_out/NAME.jsonl)."""
    held_out_answered: int = 0
    """Responses left out of the trainer's files because their prompt is held out."""
    corrupt_lines: int = 0
    corrupt_first: str = ""
    glued_lines: int = 0
    no_prompt: Skipped = field(default_factory=Skipped)
    """Responses whose id no prompt has: their sent ids cannot be known."""
    prompt_mismatch: Skipped = field(default_factory=Skipped)
    """Prompts that now encode to another length than the server counted when it answered."""
    encode_failed: Skipped = field(default_factory=Skipped)
    other_tokenizer: Skipped = field(default_factory=Skipped)
    """Answers a runner stamped with another tokenizer's digest: another vocabulary's ids."""
    out_of_vocab: Skipped = field(default_factory=Skipped)
    """Answers with an id the tokenizer does not have: a corrupt file, or another model's."""
    quality: QualityTally = field(default_factory=QualityTally)
    ids_lines: int = 0
    conversation_lines: int = 0
    conversations_left_out: dict[str, Skipped] = field(default_factory=dict)
    """Kept in ids.jsonl, left out of specforge.jsonl: empty answers, shapes SpecForge refuses."""
    roundtrip: RoundTripTally = field(default_factory=RoundTripTally)
    cut: LengthCut = field(default_factory=LengthCut)
    sequence_tokens: int = 0
    """Prompt and answer tokens of each record written, cut at max_length: the positions offline
    hidden states are captured at (the hidden-states plan multiplies them by bytes per token)."""
    longest_record: int = 0
    """The longest record written, cut at max_length: the positions a drafter must hold."""
    earlier_assistant_turns: int = 0
    """Conversations with assistant turns before the answer: `train_only_last_turn: true` (in the
    trainer config written beside) keeps their loss off; SpecForge's default would train on them."""
    conversations_exported: int = 0
    """Conversations regenerated turn by turn that were written: one record each, and one per
    answer the template rewrote in later turns."""
    turns_exported: int = 0
    """Their turns written (a turn a --drop policy dropped ends its conversation before it)."""
    contaminated: dict[str, int] = field(default_factory=dict)
    """Training records left out, by the --exclude set their prompt shares an n-gram with."""
    contaminated_examples: dict[str, list[str]] = field(default_factory=dict)
    duplicate_prompts_across_datasets: dict[str, int] = field(default_factory=dict)
    """Training records left out, by the earlier dataset of this export with the same prompt."""
    duplicate_prompts_examples: dict[str, list[str]] = field(default_factory=dict)
    repeated_prompts: int = 0
    """Prompts with the contents of an earlier one of this dataset (kept: more answers to it)."""
    not_checked_for_contamination: int = 0
    """input_ids prompts the tokenizer could not decode into words to compare."""
    seconds: float = 0.0

    def screen_out(self, verdict: ScreenVerdict, record_id: str) -> None:
        """A training record left out for its prompt (screening.py), counted by whose it is."""
        counts, examples = (
            (self.contaminated, self.contaminated_examples)
            if verdict.reason == CONTAMINATED
            else (self.duplicate_prompts_across_datasets, self.duplicate_prompts_examples)
        )
        counts[verdict.name] = counts.get(verdict.name, 0) + 1
        kept = examples.setdefault(verdict.name, [])
        if len(kept) < MAX_SCREEN_EXAMPLES:
            kept.append(record_id)

    def leave_out(self, why: str, record_id: str, reason: str = "") -> None:
        """A conversation not written, and why."""
        self.conversations_left_out.setdefault(why, Skipped()).add(record_id, reason)

    @property
    def tokens_per_s(self) -> float:
        """Output tokens of the answers read, per second of export."""
        return self.quality.tokens / self.seconds if self.seconds > 0 else 0.0
