"""Which test modules define a fixture made once for many tests (module or session scope).

Read from the module's source, so the answer needs no pytest internals: a fixture is shared
when it is decorated `@pytest.fixture(scope="module")` or `scope="session"`.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SHARED_SCOPES = frozenset({"module", "package", "session"})


@functools.cache
def shares_fixtures(path: Path) -> bool:
    """Whether the Python file at `path` defines a fixture of module, package or session scope."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return False
    return any(
        _shared_scope(decorator)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for decorator in node.decorator_list
    )


def _shared_scope(decorator: ast.expr) -> bool:
    """`fixture(scope="module")` or `pytest.fixture(scope="session")` (and package)."""
    if not isinstance(decorator, ast.Call):
        return False
    name = decorator.func
    called = name.attr if isinstance(name, ast.Attribute) else getattr(name, "id", "")
    return called == "fixture" and any(
        keyword.arg == "scope"
        and isinstance(keyword.value, ast.Constant)
        and keyword.value.value in SHARED_SCOPES
        for keyword in decorator.keywords
    )
