"""Prompts as normalised words, and the n-gram index that finds an evaluation's prompts in them."""

from __future__ import annotations

import random
import sys
import unicodedata

from agent.pipeline.export.ngrams import NO_MATCH, build_index
from agent.pipeline.export.prompt_text import content_key, visible_text, words_of
from agent.pipeline.inference.prompts import Prompt

EVAL = [f"e{i}" for i in range(20)]


def never_decode(ids: list[int]) -> str:
    raise AssertionError(f"no input_ids here: {ids}")


def test_words_ignore_case_punctuation_symbols_and_compatibility_forms() -> None:
    assert words_of("Ｗrite a FUNCTION: sum(a, b)! 2+2=4\t«done»") == [
        "write", "a", "function", "sum", "a", "b", "2", "2", "4", "done",
    ]  # fmt: skip
    assert words_of("  ...  ") == []


def test_text_beyond_ascii_gives_the_words_one_translate_table_gives() -> None:
    breaks = {
        point: " "
        for point in range(sys.maxunicode + 1)
        if unicodedata.category(chr(point))[0] in "PS"
    }
    pool = "ab Z,.!-\t\u00e9\u2014\u201c\u201d\u3001\u3002\u65e5\U0001f642\ufb01\u00bd\ud800"
    rng = random.Random(3)
    for _ in range(300):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        expected = unicodedata.normalize("NFKC", text).lower().translate(breaks).split()
        assert words_of(text) == expected, repr(text)


def test_visible_text_is_the_system_and_user_turns_not_the_answers() -> None:
    prompt = Prompt("p", 1, messages=[
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "add two"}, {"type": "image"}]},
        {"role": "assistant", "content": "an answer it must not match"},
        {"role": "user", "content": "numbers"},
    ])  # fmt: skip
    assert words_of(visible_text(prompt, never_decode)) == ["be", "brief", "add", "two", "numbers"]
    assert visible_text(Prompt("t", 1, text="plain"), never_decode) == "plain"
    assert visible_text(Prompt("i", 1, input_ids=[5, 6]), lambda ids: f"ids {ids}") == "ids [5, 6]"


def test_the_content_key_is_the_exact_turns_whatever_the_id() -> None:
    chat = [{"role": "user", "content": "hi"}]
    assert content_key(Prompt("a", 1, messages=chat)) == content_key(Prompt("b", 9, messages=chat))
    assert content_key(Prompt("a", 1, messages=chat)) != content_key(
        Prompt("a", 1, messages=[{"role": "system", "content": "hi"}])
    )
    assert content_key(Prompt("a", 1, text="hi")) != content_key(Prompt("a", 1, messages=chat))
    assert content_key(Prompt("a", 1, input_ids=[1, 2])) != content_key(
        Prompt("a", 1, input_ids=[12])
    )
    assert content_key(Prompt("a", 1, input_ids=[2**70])) != content_key(
        Prompt("a", 1, input_ids=[2**70 + 1])
    )


def test_thirteen_words_in_a_row_match_and_twelve_do_not() -> None:
    index = build_index([("evalset", [EVAL])], 13)
    thirteen = ["before", *EVAL[3:16], "after"]
    twelve = ["before", *EVAL[3:15], "after", *EVAL[16:]]
    assert index.first_sources([thirteen, twelve, []]) == [0, NO_MATCH, NO_MATCH]


def test_an_ngram_across_two_prompts_of_one_batch_is_no_match() -> None:
    index = build_index([("evalset", [EVAL])], 13)
    assert index.first_sources([EVAL[:7], EVAL[7:14]]) == [NO_MATCH, NO_MATCH]
    assert index.first_sources([["x", *EVAL[:6]], [], ["y", *EVAL[:13]]]) == [NO_MATCH, NO_MATCH, 0]


def test_a_short_evaluation_prompt_matches_only_the_same_words_whole() -> None:
    index = build_index([("long", [EVAL]), ("short", [["why", "is", "it"]])], 13)
    assert index.first_sources([["why", "is", "it"], ["so", "why", "is", "it"]]) == [1, NO_MATCH]


def test_a_prompt_in_two_sets_counts_for_the_first_named() -> None:
    index = build_index([("first", [EVAL[:15]]), ("second", [EVAL, ["a", "b"]])], 13)
    assert index.sources == ("first", "second")
    assert index.first_sources([EVAL[:13], EVAL[5:18], ["A", "b"], ["a", "b"]]) == [
        0, 1, NO_MATCH, 1,
    ]  # fmt: skip


def test_a_large_batch_finds_each_planted_copy() -> None:
    evaluation = [[f"q{p}w{i}" for i in range(40)] for p in range(50)]
    index = build_index([("bench", evaluation)], 13)
    batch = [[f"t{p}w{i}" for i in range(300)] for p in range(2000)]
    for place in range(0, 2000, 97):
        batch[place][100:113] = evaluation[place % 50][20:33]
    found = index.first_sources(batch)
    assert [p for p, source in enumerate(found) if source != NO_MATCH] == list(range(0, 2000, 97))
