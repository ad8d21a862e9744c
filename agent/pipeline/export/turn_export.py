"""Exporting a conversation regenerated turn by turn: checked per turn, written in each form.

Each turn is checked as any answer is (quality.py) and counted; a turn that a `--drop` policy
drops ends the conversation before it (the later turns were generated against it). The turns kept
are joined (turn_records.py) and each record written in the ids form. The conversation form gets a
row per trained answer (the last only with `--loss-turns last`), its history the model's own
earlier answers, each kept only where SpecForge's own rendering gives exactly its ids and loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.datasets.response_lines import ResponseLine
from agent.pipeline.export.marks import TokenFacts
from agent.pipeline.export.merged import MergedOutputs
from agent.pipeline.export.quality import AnswerChecker, numbers
from agent.pipeline.export.responses import finish_reason
from agent.pipeline.export.roundtrip import (
    EXPECTED_REASONS,
    REASONING_DROPPED,
    decode,
    round_trip,
    schema_problem,
)
from agent.pipeline.export.specforge_templates import SpecForgeTemplate
from agent.pipeline.export.tallies import DatasetReport
from agent.pipeline.export.turn_records import JoinedConversation, Sequence, join_turns
from agent.pipeline.export.writers import OutputFile, conversation_body, mask_body, with_id
from agent.pipeline.inference.prompts import Prompt
from agent.pipeline.inference.turns import (
    ConversationPlan,
    history_answers,
    plan_conversation,
    turn_id,
    turn_messages,
)


@dataclass
class TurnExport:
    """What a dataset's export hands the conversations to."""

    name: str
    tokenizer: Any
    facts: TokenFacts
    checker: AnswerChecker
    report: DatasetReport
    outputs: dict[str, OutputFile]
    merged: MergedOutputs | None
    drop: frozenset[str]
    loss_turns: str
    template: SpecForgeTemplate | None
    max_length: int

    def export(self, prompt: Prompt, lines: list[ResponseLine]) -> None:
        """Check, join and write one conversation's turns (`lines`: turns 1, 2, ... in order)."""
        lines = lines[: self._in_vocabulary(lines)]
        plan = plan_conversation(prompt.messages or [])
        joined = self._joined(prompt, plan, lines)
        if joined is None:
            return
        kept = self._checked(lines, joined)
        if kept < len(lines):
            joined = self._joined(prompt, plan, lines[:kept]) if kept else None
            if joined is None:
                return
        self.report.conversations_exported += 1
        self.report.turns_exported += kept
        bodies = self._bodies(prompt, plan, lines[:kept], joined)
        for record_id, forms in bodies.items():
            for form, body in forms.items():
                self.outputs[form].write(with_id(record_id, body))
            if self.merged is not None:
                self.merged.add(self.name, record_id, forms)

    def _in_vocabulary(self, lines: list[ResponseLine]) -> int:
        """How many turns come before the first with an id the tokenizer does not have."""
        for index, line in enumerate(lines):
            beyond = self.checker.beyond_vocab(numbers(line.ids_text()))
            if beyond is not None:
                size = self.facts.vocab_size
                self.report.out_of_vocab.add(
                    line.id, f"token id {beyond} is not below the tokenizer's {size:,}"
                )
                return index
        return len(lines)

    def _joined(
        self, prompt: Prompt, plan: ConversationPlan, lines: list[ResponseLine]
    ) -> JoinedConversation | None:
        """The turns joined, or None (counted) when they cannot be: this conversation alone."""
        if not lines:
            return None
        try:
            joined = join_turns(self.tokenizer, self.facts, plan, lines, self.loss_turns)
        except Exception as exc:  # the template or the tokenizer's own code may raise anything
            first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            self.report.encode_failed.add(prompt.id, first)
            return None
        if joined.problem:
            self.report.prompt_mismatch.add(prompt.id, joined.problem)
            return None
        return joined

    def _checked(self, lines: list[ResponseLine], joined: JoinedConversation) -> int:
        """Count each turn's checks; how many turns come before the first one dropped."""
        for index, line in enumerate(lines):
            ids_text = line.ids_text()
            ids = numbers(ids_text)
            opens = self.facts.opens_reasoning(joined.prompts[index])
            checks = self.checker.check(ids_text, ids, finish_reason(line.fields), opens)
            drops = checks.failed(self.drop)
            self.report.quality.add(checks, len(ids), line.id, drops)
            if drops:
                return index
        return len(lines)

    def _bodies(
        self, prompt: Prompt, plan: ConversationPlan, lines: list[ResponseLine],
        joined: JoinedConversation,
    ) -> dict[str, dict[str, bytes]]:  # fmt: skip
        bodies: dict[str, dict[str, bytes]] = {}
        for sequence in joined.sequences:
            self._measure(sequence)
            if "ids" in self.outputs:
                body = mask_body(sequence.input_ids, sequence.loss_mask)
                bodies[sequence.record_id] = {"ids": body}
        if "conversations" in self.outputs and lines[0].fields.get("reasoning") == "drop":
            self.report.leave_out(REASONING_DROPPED, prompt.id)
        elif "conversations" in self.outputs:
            last = len(lines) - 1
            for turn in range(last + 1) if self.loss_turns == "all" else (last,):
                row = self._conversation(prompt, plan, lines, joined, turn)
                if row is not None:
                    record_id = prompt.id if turn == last else turn_id(prompt.id, turn + 1)
                    bodies.setdefault(record_id, {})["conversations"] = row
        return bodies

    def _measure(self, sequence: Sequence) -> None:
        length = len(sequence.input_ids)
        trained = sum(sequence.loss_mask)
        self.report.cut.add(length - trained, trained)
        kept = min(length, self.max_length) if self.max_length else length
        self.report.sequence_tokens += kept
        self.report.longest_record = max(self.report.longest_record, kept)

    def _conversation(
        self, prompt: Prompt, plan: ConversationPlan, lines: list[ResponseLine],
        joined: JoinedConversation, turn: int,
    ) -> bytes | None:  # fmt: skip
        """The SpecForge row ending at `turn`'s answer, trained on that answer only.

        One row per trained answer, each with the model's own earlier answers as its history, as
        speculators' prepare-data and SpecForge's expansion do: `train_only_last_turn: true`
        stays right for every row of the form. Kept only where SpecForge's rendering gives
        exactly the ids the turn was sent and generated.
        """
        earlier = history_answers(self.tokenizer, joined.answers[:turn], False)
        answer = joined.answers[turn]
        finish = finish_reason(lines[turn].fields)
        stopped = finish == "stop" and answer and answer[-1] in self.facts.special_ids
        text = decode(self.tokenizer, answer[:-1] if stopped else answer)
        messages = [*turn_messages(plan, earlier, turn), {"role": "assistant", "content": text}]
        row_id = lines[turn].id
        problem = schema_problem(messages)
        if problem is not None:
            self.report.leave_out("not a conversation SpecForge takes", row_id, problem)
            return None
        assert self.template is not None  # the form is written only with a template
        sent = joined.prompts[turn]
        mismatch = round_trip(self.tokenizer, self.template, row_id, messages, sent, answer, finish)
        if mismatch is not None and mismatch.reason in EXPECTED_REASONS:
            self.report.leave_out(mismatch.reason, row_id)
            return None
        self.report.roundtrip.add(mismatch)
        if mismatch is not None:
            self.report.leave_out(mismatch.reason, row_id, f"position {mismatch.position}")
            return None
        return conversation_body(messages)
