"""Exporting one dataset: each response joined to its prompt, checked, written in each form."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.datasets.response_lines import ResponseLine
from agent.datasets.turn_fields import turn_place
from agent.pipeline.export.held_out import HELD_OUT_DIR, HELD_OUT_SHARE, held_out_threshold
from agent.pipeline.export.index import DUPLICATE, HELD_OUT, PromptIndex
from agent.pipeline.export.marks import TokenFacts
from agent.pipeline.export.merged import MergedOutputs
from agent.pipeline.export.quality import AnswerChecker, numbers
from agent.pipeline.export.responses import (
    finish_reason,
    first_difference,
    prompt_tokens,
    read_responses,
    template_kwargs,
)
from agent.pipeline.export.roundtrip import (
    EXPECTED_REASONS,
    NOT_A_CHAT,
    REASONING_DROPPED,
    conversation,
    round_trip,
    schema_problem,
)
from agent.pipeline.export.screening import DatasetScreen, PromptScreen
from agent.pipeline.export.specforge_templates import SpecForgeTemplate
from agent.pipeline.export.tallies import DatasetReport
from agent.pipeline.export.turn_export import TurnExport
from agent.pipeline.export.turn_records import TurnCollector, TurnLines, reasoning_block
from agent.pipeline.export.writers import (
    OutputFile,
    conversation_body,
    ids_body,
    mask_body,
    open_outputs,
    with_id,
)
from agent.pipeline.inference.prompts import Prompt, PromptEncoder, PromptsError
from agent.pipeline.tokenizer import import_failure
from agent.pipeline.tokenizer.identity import stamp_of
from agent.pipeline.vocab.count import LineTally


class ExportError(Exception):
    """The export cannot go on; the message says which dataset and why."""


@dataclass(frozen=True, slots=True)
class ExportContext:
    """What every dataset's export shares."""

    out: Path
    tokenizer_path: str
    tokenizer: Any
    facts: TokenFacts
    formats: frozenset[str]
    drop: frozenset[str]
    trust_remote_code: bool = False
    prompts_file: str = "prompts.jsonl"
    responses_file: str = "raw_responses.jsonl"
    template: SpecForgeTemplate | None = None
    """SpecForge's chat template the conversation form is rendered and checked with."""
    max_length: int = 2048
    """The trainer's cut (SpecForge's data.max_length): longer records are reported."""
    held_out_share: float = HELD_OUT_SHARE
    """The share of each dataset's prompts kept out of training for the evaluation (held_out.py)."""
    screen: PromptScreen | None = None
    """Prompts training leaves out beside the held-out ones: evaluations', other datasets'."""
    loss_turns: str = "all"
    """A conversation regenerated turn by turn trains on every answer (all) or the last."""


class DatasetExport:
    """The export of the dataset in `folder`; `run` does it all and returns its report."""

    def __init__(
        self, folder: Path, context: ExportContext, merged: MergedOutputs | None = None
    ) -> None:
        self.name = folder.name
        self.folder = folder
        self.context = context
        self.merged = merged
        self.report = DatasetReport(self.name)
        self.report.cut.max_length = context.max_length
        self.checker = AnswerChecker(context.facts)
        self.index = PromptIndex(folder / context.prompts_file, context.out)
        self.outputs: dict[str, OutputFile] = {}
        self.encoder: PromptEncoder | None = None
        self.screened = DatasetScreen()
        self.turns = TurnCollector()
        self.conversations: TurnExport | None = None

    def run(self) -> DatasetReport:
        """Read, check and write every response; the files appear only when complete."""
        started = time.perf_counter()
        try:
            self.index.build()
            self.report.prompts = self.index.count
            self._hold_out()
            self._screen()
            self.encoder = self._encoder()
            self.outputs = open_outputs(self.context.out / self.name, self.context.formats)
            self.conversations = self._turn_export()
            tally = LineTally()
            for response in read_responses(self.folder / self.context.responses_file, tally):
                self._take(response)
            for unfinished in self.turns.rest():
                self._take_conversation(unfinished)
            self._close_tally(tally)
            for output in self.outputs.values():
                output.commit()
            self._write_held_out()
        except PromptsError as exc:
            self._abort()
            raise ExportError(f"{self.name}: {exc}") from None
        except BaseException:
            self._abort()
            raise
        finally:
            self.index.close()
        self.report.seconds = time.perf_counter() - started
        return self.report

    def _hold_out(self) -> None:
        """Keep a few prompts out of training, by their ids' draw."""
        below = held_out_threshold(self.index.count, self.context.held_out_share)
        self.report.held_out = self.index.hold_out(below) if below is not None else 0

    def _write_held_out(self) -> None:
        """The held-out prompts' lines where the evaluation reads them, once the export is whole."""
        folder = self.context.out / HELD_OUT_DIR
        path = folder / f"{self.name}.jsonl"
        if not self.report.held_out:  # an earlier export's slice would not match this training
            path.unlink(missing_ok=True)
            return
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{self.name}.jsonl.partial"
        with partial.open("wb") as handle:
            for line in self.index.held_lines():
                handle.write(line.rstrip(b"\r\n") + b"\n")
        partial.replace(path)

    def _encoder(self) -> PromptEncoder:
        context = self.context
        return PromptEncoder(
            context.tokenizer_path, self.index.samples,
            trust_remote_code=context.trust_remote_code, tokenizer=context.tokenizer,
        )  # fmt: skip

    def _abort(self) -> None:
        for output in self.outputs.values():
            output.abort()

    def _close_tally(self, tally: LineTally) -> None:
        report = self.report
        report.unanswered_prompts = self.index.unanswered()
        report.corrupt_lines, report.corrupt_first = tally.skipped, tally.first_skipped
        report.glued_lines = tally.glued
        report.ids_lines = self.outputs["ids"].lines if "ids" in self.outputs else 0
        conversations = self.outputs.get("conversations")
        report.conversation_lines = conversations.lines if conversations else 0

    def _turn_export(self) -> TurnExport:
        context = self.context
        return TurnExport(
            self.name, context.tokenizer, context.facts, self.checker, self.report, self.outputs,
            self.merged, context.drop, context.loss_turns, context.template, context.max_length,
        )  # fmt: skip

    def _take(self, response: ResponseLine) -> None:
        place = (
            turn_place(response.id, response.fields) if "conversation" in response.fields else None
        )
        if place is not None:
            gathered = self.turns.add(response, place)
            self.report.duplicates_skipped += self.turns.duplicate
            if gathered is not None:
                self._take_conversation(gathered)
            return
        prompt = self._training_prompt(response.id)
        if prompt is None or not self._same_tokenizer(response):
            return
        sent = self._sent_ids(prompt, response)
        if sent is not None:
            self._export(prompt, sent, response)

    def _take_conversation(self, gathered: TurnLines) -> None:
        """A conversation's turns, once its last one is read (or the file ends)."""
        lines = gathered.in_order()
        if not lines:
            self.report.no_prompt.add(gathered.conversation, "its turn 1 has no record")
            return
        prompt = self._training_prompt(gathered.conversation)
        if prompt is None or not all(self._same_tokenizer(line) for line in lines):
            return
        if prompt.messages is None:
            self.report.prompt_mismatch.add(prompt.id, "recorded as a conversation; now no chat")
            return
        assert self.conversations is not None
        self.conversations.export(prompt, lines)

    def _training_prompt(self, prompt_id: str) -> Prompt | None:
        """The prompt a record answers, or None (counted) when training leaves it out."""
        prompt = self.index.take(prompt_id)
        if prompt is None:
            self.report.no_prompt.add(prompt_id, "no prompt has this id")
            return None
        if prompt == DUPLICATE:
            self.report.duplicates_skipped += 1
            return None
        if prompt == HELD_OUT:
            self.report.held_out_answered += 1
            return None
        assert isinstance(prompt, Prompt)
        return None if self._screened_out(prompt_id) else prompt

    def _same_tokenizer(self, response: ResponseLine) -> bool:
        """False (counted) for a record another tokenizer's ids were sent for."""
        stamp = stamp_of(response.fields)
        if stamp is not None and stamp != self.context.facts.digest:
            self.report.other_tokenizer.add(
                response.id,
                f"stamped {stamp}; this export's tokenizer is {self.context.facts.digest}",
            )
            return False
        return True

    def _sent_ids(self, prompt: Prompt, response: ResponseLine) -> list[int] | None:
        """The ids the runner sent for `prompt`, or None (counted) if they cannot be trusted."""
        assert self.encoder is not None
        try:
            sent = self.encoder.input_ids(prompt, template_kwargs(response.fields))
        except ImportError as exc:
            raise ExportError(import_failure(self.context.tokenizer_path, exc)) from None
        except Exception as exc:  # this prompt alone: the runner failed it the same way
            self.report.encode_failed.add(prompt.id, str(exc).splitlines()[0] if str(exc) else "")
            return None
        counted = prompt_tokens(response.fields)
        if counted is not None and counted != len(sent):
            self.report.prompt_mismatch.add(
                prompt.id, f"encodes to {len(sent)} tokens; the server counted {counted}"
            )
            return None
        echoed = response.fields.get("prompt_ids")
        if isinstance(echoed, list) and echoed and echoed != sent:
            at = first_difference(echoed, sent)
            self.report.prompt_mismatch.add(
                prompt.id, f"encodes to other ids than the server echoed (first at position {at})"
            )
            return None
        return sent

    def _export(self, prompt: Prompt, sent: list[int], response: ResponseLine) -> None:
        ids_text = response.ids_text()
        ids = numbers(ids_text)
        beyond = self.checker.beyond_vocab(ids)
        if beyond is not None:
            size = self.context.facts.vocab_size
            self.report.out_of_vocab.add(
                response.id, f"token id {beyond} is not below the tokenizer's {size:,}"
            )
            return
        count = len(ids)
        checks = self.checker.check(
            ids_text,
            ids,
            finish_reason(response.fields),
            self.context.facts.opens_reasoning(sent),
        )
        drops = checks.failed(self.context.drop)
        self.report.quality.add(checks, count, response.id, drops)
        if drops:
            return
        self.report.cut.add(len(sent), count)
        limit = self.context.max_length
        length = min(len(sent) + count, limit) if limit else len(sent) + count
        self.report.sequence_tokens += length
        self.report.longest_record = max(self.report.longest_record, length)
        bodies: dict[str, bytes] = {}
        drop = response.fields.get("reasoning") == "drop"
        if "ids" in self.outputs:
            bodies["ids"] = self._ids_body(sent, ids_text, ids, drop)
        if "conversations" in self.outputs and drop:
            self.report.leave_out(REASONING_DROPPED, prompt.id)
        elif "conversations" in self.outputs:
            body = self._conversation(prompt, sent, ids.tolist(), checks.empty, checks.finish)
            if body is not None:
                bodies["conversations"] = body
        for form, body in bodies.items():
            self.outputs[form].write(with_id(response.id, body))
        if self.merged is not None:
            self.merged.add(self.name, response.id, bodies)

    def _ids_body(self, sent: list[int], ids_text: bytes, ids: Any, drop: bool) -> bytes:
        """The exact record: loss on the answer, less its reasoning under --reasoning drop."""
        if drop:
            output = ids.tolist()
            mask = [0] * len(sent) + [1] * len(output)
            facts = self.context.facts
            block = reasoning_block(output, facts.think_start, facts.think_end)
            if block is not None:
                mask[len(sent) + block[0] : len(sent) + block[1]] = [0] * (block[1] - block[0])
            return mask_body(sent + output, mask)
        return ids_body(",".join(map(str, sent)).encode(), len(sent), ids_text, len(ids))

    def _conversation(
        self, prompt: Prompt, sent: list[int], output: list[int], empty: bool, finish: str
    ) -> bytes | None:
        if empty:
            self.report.leave_out("empty", prompt.id)
            return None
        if prompt.messages is None:
            self.report.leave_out(NOT_A_CHAT, prompt.id)
            return None
        tokenizer, facts = self.context.tokenizer, self.context.facts
        stop = finish == "stop" and output and output[-1] in facts.special_ids
        try:
            messages = conversation(tokenizer, prompt, sent, output[:-1] if stop else output, facts)
        except Exception as exc:  # the tokenizer's own code may raise anything on odd ids
            self.report.leave_out("cannot be decoded", prompt.id, str(exc).split("\n")[0][:200])
            return None
        problem = schema_problem(messages)
        if problem is not None:
            self.report.leave_out("not a conversation SpecForge takes", prompt.id, problem)
            return None
        assert self.context.template is not None  # the form is written only with a template
        mismatch = round_trip(
            tokenizer, self.context.template, prompt.id, messages, sent, output, finish
        )
        if mismatch is not None and mismatch.reason in EXPECTED_REASONS:
            self.report.leave_out(mismatch.reason, prompt.id)
            return None
        self.report.roundtrip.add(mismatch)
        if mismatch is not None:
            self.report.leave_out(mismatch.reason, prompt.id, f"position {mismatch.position}")
            return None
        self.report.earlier_assistant_turns += _earlier_assistant_turns(messages)
        return conversation_body(messages)

    # ------------------------------------------------------------ screening

    def _screen(self) -> None:
        """Find the prompts training leaves out: an excluded set's, an earlier dataset's."""
        if self.context.screen is None:
            return
        self.screened = self.context.screen.screen(
            self.name, self.folder / self.context.prompts_file
        )
        self.report.repeated_prompts = self.screened.repeated_within
        self.report.not_checked_for_contamination = self.screened.unchecked

    def _screened_out(self, prompt_id: str) -> bool:
        """True (and counted) when training leaves this record out for its prompt."""
        verdict = self.screened.verdicts.get(prompt_id)
        if verdict is not None:
            self.report.screen_out(verdict, prompt_id)
        return verdict is not None


def _earlier_assistant_turns(messages: list[dict[str, Any]]) -> int:
    """1 when the conversation has an assistant turn before the answer (the last message)."""
    return int(any(m.get("role") == "assistant" for m in messages[:-1]))
