"""Reading `prompts.jsonl` and turning each prompt into the token ids SGLang is sent.

A prompt line is `{"id", "messages": [...]}`, `{"id", "prompt": "text"}` or `{"id", "input_ids"}`;
a missing id means the 0-based line number. Chat messages get the tokenizer's chat
template with the generation prompt, so the output ids are exactly what EAGLE-3 trains on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.datasets.file_lines import OverlongLine, lines_with_tail
from agent.datasets.response_lines import MAX_ID_CHARS, MAX_LINE_BYTES
from agent.host.regular_files import NotRegularFileError, open_regular
from agent.pipeline.tokenizer import TokenizerError, import_failure, load_tokenizer


class PromptsError(Exception):
    """The prompts file or the tokenizer cannot be used; the message says where and why."""


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt, as read from its line."""

    id: str
    line_no: int
    """1-based, for messages to people."""
    messages: list[dict[str, Any]] | None = None
    text: str | None = None
    input_ids: list[int] | None = None

    @property
    def needs_tokenizer(self) -> bool:
        """True unless the line already carries token ids."""
        return self.input_ids is None


def read_prompts(path: Path, limit: int | None = None) -> list[Prompt]:
    """The first `limit` prompts of `path` (all when None), checked line by line."""
    try:
        handle = open_regular(path)
    except FileNotFoundError:
        raise PromptsError(f"prompts file {path} not found") from None
    except NotRegularFileError as exc:
        raise PromptsError(f"prompts file {exc}") from None
    except OSError as exc:
        raise PromptsError(f"cannot read prompts file {path}: {exc.strerror}") from None
    prompts: list[Prompt] = []
    first_line: dict[str, int] = {}
    with handle:
        for index, raw in enumerate(lines_with_tail(handle)):
            if limit is not None and len(prompts) >= limit:
                break
            if isinstance(raw, OverlongLine):
                raise PromptsError(
                    f"{path} line {index + 1}: {raw.size_bytes:,} bytes, over the "
                    f"{MAX_LINE_BYTES:,}-byte limit; fix or remove the line"
                )
            if raw.strip():
                prompt = _parse(path, index, raw)
                if prompt.id in first_line:
                    raise PromptsError(
                        f"{path} line {index + 1}: duplicate id {prompt.id!r} "
                        f"(first at line {first_line[prompt.id]})"
                    )
                first_line[prompt.id] = index + 1
                prompts.append(prompt)
    return prompts


def parse_prompt_line(path: Path, index: int, raw: bytes) -> Prompt:
    """The prompt on line `index` (0-based) of `path`, checked as the runner checks it."""
    return _parse(path, index, raw)


def _parse(path: Path, index: int, raw: bytes) -> Prompt:
    where = f"{path} line {index + 1}"
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise PromptsError(f"{where}: not valid JSON ({exc}); fix or remove the line") from None
    except RecursionError:
        raise PromptsError(
            f"{where}: JSON nested too deeply to read; fix or remove the line"
        ) from None
    if not isinstance(record, dict):
        raise PromptsError(f"{where}: expected a JSON object")
    prompt_id = str(record.get("id", index))
    if len(prompt_id) > MAX_ID_CHARS:
        raise PromptsError(
            f"{where}: an id of {len(prompt_id):,} characters; ids may have {MAX_ID_CHARS:,} at most"
        )
    if isinstance(record.get("input_ids"), list) and set(map(type, record["input_ids"])) <= {int}:
        # every id exactly an int (JSON gives no other int type; a bool is not one), checked in C
        return Prompt(prompt_id, index + 1, input_ids=record["input_ids"])
    if isinstance(record.get("messages"), list) and record["messages"]:
        return Prompt(prompt_id, index + 1, messages=record["messages"])
    if isinstance(record.get("prompt"), str):
        return Prompt(prompt_id, index + 1, text=record["prompt"])
    raise PromptsError(f"{where}: needs messages (a list), prompt (text) or input_ids (ints)")


class PromptEncoder:
    """Token ids for each prompt, through a `transformers` tokenizer loaded from a local path."""

    def __init__(
        self,
        tokenizer_path: str | None,
        prompts: Sequence[Prompt],
        *,
        trust_remote_code: bool = False,
        tokenizer: Any = None,
        template_kwargs: dict[str, Any] | None = None,
    ) -> None:
        """`tokenizer`, when given, is the one loaded from `tokenizer_path` (not loaded again).

        `template_kwargs` are the chat template's arguments (enable_thinking, reasoning_effort...).
        """
        self._tokenizer: Any = None
        self.template_kwargs = dict(template_kwargs or {})
        needing = next((p for p in prompts if p.needs_tokenizer), None)
        if needing is None:
            return
        if tokenizer_path is None:
            raise PromptsError(
                f"prompt {needing.id!r} (line {needing.line_no}) has text, not input_ids; "
                "pass --tokenizer PATH"
            )
        try:
            self._tokenizer = (
                tokenizer
                if tokenizer is not None
                else load_tokenizer(tokenizer_path, trust_remote_code=trust_remote_code)
            )
        except TokenizerError as exc:
            raise PromptsError(str(exc)) from None
        chatting = next((p for p in prompts if p.messages is not None), None)
        if chatting is not None and not getattr(self._tokenizer, "chat_template", None):
            raise PromptsError(
                f"prompt {chatting.id!r} (line {chatting.line_no}) has messages, but the "
                f"tokenizer at {tokenizer_path} has no chat template"
            )
        self._try_first(chatting or needing, tokenizer_path)

    def _try_first(self, prompt: Prompt, tokenizer_path: str) -> None:
        """Encode one prompt now, so a missing package refuses the run before anything is sent.

        Without this, a package the template or the tokenizer's code imports late (jinja2, or
        tiktoken inside a method) would fail every prompt for good, one by one.
        """
        try:
            self.input_ids(prompt)
        except ImportError as exc:
            raise PromptsError(import_failure(tokenizer_path, exc)) from None
        except Exception:  # this prompt alone fails later, with its reason in errors.jsonl
            return

    @property
    def tokenizer(self) -> Any:
        """The loaded tokenizer, or None when every prompt came as ids."""
        return self._tokenizer

    def input_ids(self, prompt: Prompt, template_kwargs: dict[str, Any] | None = None) -> list[int]:
        """The ids to send for `prompt`; `template_kwargs` replace the encoder's own when given."""
        if prompt.input_ids is not None:
            return prompt.input_ids
        if prompt.messages is not None:
            arguments = self.template_kwargs if template_kwargs is None else template_kwargs
            ids = self._tokenizer.apply_chat_template(
                prompt.messages, add_generation_prompt=True, tokenize=True, **arguments
            )
            return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        return list(self._tokenizer.encode(prompt.text))
