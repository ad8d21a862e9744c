"""doctor's tokenizer line: the configured tokenizer, loaded on the host as the jobs will load it.

The agent loads it in a subprocess with the host's trust setting and a time limit;
this module turns the answer, and what the config says about it, into the
one line doctor prints. Pure except for the one request; never imports Textual.
"""

from __future__ import annotations

from agent.protocol import TOKENIZER_CHECK, PipelineConfig, TokenizerCheck, TokenizerCheckParams
from console.link.agent_link import AgentLink, LinkError

LOAD_LIMIT_S = 60.0
"""The agent kills a load that takes longer (a Kimi-size tokenizer loads in seconds)."""
ANSWER_SLACK_S = 15.0
"""On top of the load limit, for starting the check process and the round trip."""


async def tokenizer_line(
    link: AgentLink, host_name: str, pipeline: PipelineConfig
) -> tuple[bool, str]:
    """(ok, detail) for the host's tokenizer; a host without one is fine unless a job needs it."""
    needing = _jobs_mentioning(pipeline, "{tokenizer}")
    if pipeline.tokenizer is None:
        if needing:
            return False, (f"job(s) {', '.join(needing)} use {{tokenizer}}, but no path is set "
                           f"under [hosts.{host_name}.tokenizer]")  # fmt: skip
        return True, "none configured: only input_ids prompts can run (set [tokenizer] path)"
    try:
        check: TokenizerCheck = await link.call(
            TOKENIZER_CHECK, TokenizerCheckParams(LOAD_LIMIT_S),
            timeout_s=LOAD_LIMIT_S + ANSWER_SLACK_S,
        )  # fmt: skip
    except LinkError as exc:
        return False, str(exc)
    if not check.ok:
        return False, check.detail
    return _loaded(check, pipeline)


def _loaded(check: TokenizerCheck, pipeline: PipelineConfig) -> tuple[bool, str]:
    template = "no chat template"
    if check.has_chat_template:
        template = "chat template, " + (
            f"assistant turn opens with {check.think_marker}"
            if check.think_marker
            else "no think marker"
        )
    vocab = f"vocab {check.vocab_size:,}" if check.vocab_size is not None else "vocab ?"
    trusted = ""
    if check.trust_remote_code:
        trusted = (", its own code trusted" if check.ships_code
                   else ", trust_remote_code on (it ships no code: nothing of its runs)")  # fmt: skip
    line = f"{check.path}: {check.class_name}, {vocab}, {template}{trusted}"
    untold = sorted(
        set(_jobs_mentioning(pipeline, "--tokenizer", "{tokenizer}"))
        - set(_jobs_mentioning(pipeline, "{trust_remote_code}", "--trust-remote-code"))
    )
    if check.trust_remote_code and check.ships_code and untold:
        return False, (f"{line}; but job(s) {', '.join(untold)} do not pass {{trust_remote_code}} "
                       "in their argv, so they will refuse it: add it")  # fmt: skip
    return True, line


def _jobs_mentioning(pipeline: PipelineConfig, *fragments: str) -> list[str]:
    """The jobs whose argv has any of `fragments` in any element."""
    return sorted(
        name
        for name, spec in pipeline.jobs.items()
        if any(fragment in part for fragment in fragments for part in spec.argv)
    )
