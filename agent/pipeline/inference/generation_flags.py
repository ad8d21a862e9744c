"""How answers are generated beyond the length cap: turns, template arguments, reasoning, sampling.

Each is recorded in runner.json and refused where it cannot be honoured.

`--reasoning` means what SpecForge's regeneration means by its modes (regenerate_train_data.py):
- keep (its `save`): thinking on (`enable_thinking: true` for the template); the reasoning stays in
  each answer, and in later turns' history as the template keeps it;
- disable (its `disable`): thinking off (`enable_thinking: false`); an answer that thinks anyway
  is not kept, as SpecForge skips it;
- drop (its `none` against a server that parses reasoning out of the content): the model thinks as
  its template defaults; every id it generated is recorded, but later turns' history holds each
  answer without its reasoning, and the export puts no loss on reasoning tokens.
Left out, the template's defaults apply and nothing is sent.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

REASONING_MODES = ("keep", "disable", "drop")
THINKING_SWITCH = "enable_thinking"
MAX_TEMPLATE_KWARGS_BYTES = 4096
MAX_SEED = 2**63 - 1
RESERVED_ARGUMENTS = frozenset({
    "conversation", "messages", "chat_template", "add_generation_prompt", "continue_final_message",
    "tokenize", "padding", "truncation", "max_length", "return_tensors", "return_dict",
    "return_assistant_tokens_mask", "tokenizer_kwargs",
})  # fmt: skip
"""apply_chat_template's own parameters: given again as template arguments they clash."""


def add_generation_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of this module, on the runner's parser."""
    add = parser.add_argument
    add("--turns", choices=("all", "last"), default="all",
        help="all: regenerate every assistant turn of a conversation in order, each against the "
        "model's own earlier answers; last: answer the last turn, history as written")  # fmt: skip
    add("--chat-template-kwargs", type=template_kwargs_json, default=None, metavar="JSON",
        help='arguments for the chat template, e.g. \'{"reasoning_effort": "high"}\'; sent '
        "to a server that renders (--api openai-chat)")  # fmt: skip
    add("--reasoning", choices=REASONING_MODES, default=None,
        help="keep: thinking on, reasoning kept; disable: thinking off, answers that think "
        "anyway dropped; drop: reasoning left out of later turns and of the training loss")  # fmt: skip
    add("--top-k", type=_top_k, default=None, help="-1 (off) or at least 1")
    add("--min-p", type=_min_p, default=None, help="from 0 to 1")
    add("--seed", type=_seed, default=None,
        help="each request's seed is drawn from this and the prompt's id: a rerun samples alike")  # fmt: skip


def template_kwargs_json(text: str) -> dict[str, Any]:
    """A JSON object of template arguments, small and plain."""
    if len(text.encode()) > MAX_TEMPLATE_KWARGS_BYTES:
        raise argparse.ArgumentTypeError(f"over {MAX_TEMPLATE_KWARGS_BYTES} bytes")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {type(value).__name__}")
    taken = sorted(RESERVED_ARGUMENTS & set(value))
    if taken:
        raise argparse.ArgumentTypeError(
            f"{', '.join(taken)}: the runner sets these when it renders, not the template"
        )
    return value


def template_arguments(kwargs: dict[str, Any] | None, reasoning: str | None) -> dict[str, Any]:
    """What the chat template is rendered with; ValueError when the two flags disagree."""
    merged = dict(kwargs or {})
    wanted = {"keep": True, "disable": False}.get(reasoning or "")
    if wanted is None:
        return merged
    given = merged.get(THINKING_SWITCH, wanted)
    if given is not wanted:
        raise ValueError(
            f"--reasoning {reasoning} sets {THINKING_SWITCH} to {str(wanted).lower()}, but "
            f"--chat-template-kwargs sets it to {json.dumps(given)}: give one of them"
        )
    return merged | {THINKING_SWITCH: wanted}


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _top_k(text: str) -> int:
    value = int(text)
    if value != -1 and value < 1:
        raise argparse.ArgumentTypeError(f"must be -1 (off) or at least 1, got {text}")
    return value


def _min_p(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def _seed(text: str) -> int:
    value = int(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be from 0 to 2**63-1, got {text}")
    return value
