"""Answer lengths: the profile's mean, and longer answers for longer prompts when asked."""

from __future__ import annotations

import statistics
from pathlib import Path

from agent.simulator.tokens import LengthProfile, TokenSource


def mean_length(source: TokenSource, profile: LengthProfile, prompt_tokens: int) -> float:
    answers = [source.plan(f"p{i}".encode(), 100_000, profile, prompt_tokens) for i in range(400)]
    return statistics.fmean(len(a.output_ids) for a in answers)


def test_longer_prompts_get_longer_answers_only_when_the_profile_says_so() -> None:
    source = TokenSource(vocab_size=1000, seed=3)
    flat = LengthProfile(mean_tokens=200, sd_tokens=40)
    scaled = LengthProfile(mean_tokens=200, sd_tokens=40, tokens_per_prompt_token=2.0)
    assert abs(mean_length(source, flat, 10) - mean_length(source, flat, 300)) < 10
    short, long = mean_length(source, scaled, 10), mean_length(source, scaled, 300)
    assert abs(short - 220) < 10
    assert abs(long - 800) < 15


def test_the_demo_tokenizer_has_an_entry_for_every_id_the_simulator_samples(
    tmp_path: Path,
) -> None:
    from transformers import AutoTokenizer

    from agent.simulator.tokenizer import build_tokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(build_tokenizer(tmp_path / "tok", 32000)))
    assert len(tokenizer) == 32000
    assert sorted(tokenizer.get_vocab().values()) == list(range(32000))


def test_ignore_eos_runs_every_answer_to_max_new_tokens_and_the_stop_id_ends_only_answers() -> None:
    source = TokenSource(vocab_size=1000, seed=3, stop_id=4)
    profile = LengthProfile(mean_tokens=20, sd_tokens=5)
    stopped = [source.plan(f"p{i}".encode(), 300, profile) for i in range(50)]
    forced = [source.plan(f"p{i}".encode(), 300, profile, ignore_eos=True) for i in range(50)]
    assert all(a.finish == "stop" and a.output_ids[-1] == 4 for a in stopped)
    assert all(4 not in a.output_ids[:-1] for a in stopped)
    assert all((a.finish, len(a.output_ids)) == ("length", 300) for a in forced)
    assert all(4 not in a.output_ids for a in forced)
