"""The modules whose fixtures are shared run on one xdist worker: which ones are found."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.shared_fixtures import shares_fixtures


@pytest.mark.parametrize(
    ("source", "shared"),
    [
        ('@pytest.fixture(scope="module")\ndef t(): pass', True),
        ('@fixture(scope="session")\nasync def t(): pass', True),
        ('@pytest.fixture(scope="function")\ndef t(): pass', False),
        ("@pytest.fixture\ndef t(): pass", False),
        ('@pytest.mark.parametrize("scope", ["module"])\ndef test_t(scope): pass', False),
        ("def broken(:", False),
    ],
)
def test_a_module_or_session_fixture_is_what_makes_a_module_shared(
    tmp_path: Path, source: str, shared: bool
) -> None:
    module = tmp_path / "test_sample.py"
    module.write_text(source)
    assert shares_fixtures(module) is shared


def test_the_trainers_modules_are_found_and_a_plain_one_is_not() -> None:
    tests = Path(__file__).parent
    assert shares_fixtures(tests / "pipeline" / "test_vocab_trainers.py")
    assert not shares_fixtures(tests / "test_layout.py")
