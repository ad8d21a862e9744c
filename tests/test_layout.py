"""The shape of the project: import contracts at run time, themes found and free of hex colours."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from console.ui.themes import themes_dir

REPO = Path(__file__).resolve().parents[1]
HEX_VALUE = re.compile(r":[^;{}]*#[0-9a-fA-F]{3,8}\b")

IMPORT_PROBE = """
import importlib, pkgutil, sys
import agent
for module in pkgutil.walk_packages(agent.__path__, "agent."):
    importlib.import_module(module.name)
agent_side = {name for name in ("textual", "asyncssh", "console") if name in sys.modules}
import console
for package in ("console.link", "console.model"):
    for module in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        importlib.import_module(module.name)
import console.config, console.cli.status
link_side = {"textual"} & set(sys.modules)
print(sorted(agent_side), sorted(link_side))
"""


def test_agent_and_link_code_never_load_the_forbidden_packages() -> None:
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE],
        capture_output=True, text=True, check=True, cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )  # fmt: skip
    assert result.stdout.strip() == "[] []"


def test_import_linter_contracts_hold() -> None:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint_imports)], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_themes_use_variables_only() -> None:
    sheets = sorted(themes_dir().glob("*.tcss"))
    assert sheets, "no stylesheets found"
    for sheet in sheets:
        text = re.sub(r"/\*.*?\*/", "", sheet.read_text(), flags=re.DOTALL)
        assert not HEX_VALUE.search(text), f"{sheet.name} has a hex colour; use a $variable"


def test_the_wheel_carries_the_agent_and_the_themes(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(REPO)],
        capture_output=True, text=True,
    )  # fmt: skip
    if build.returncode != 0 and "Could not find a version" in build.stderr:
        pytest.skip("hatchling cannot be fetched here to build the wheel")
    assert build.returncode == 0, build.stderr
    [wheel] = tmp_path.glob("eagle_console-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "console/themes/base.tcss" in names
    assert {
        "agent/protocol/__init__.py",
        "agent/protocol/codec.py",
        "agent/__main__.py",
        "console/cli/main.py",
    } <= names


@pytest.mark.parametrize("package", ["agent", "console"])
def test_no_module_imports_one_that_imports_it_back(package: str) -> None:
    """Import circles, typing-only ones included: each is a knot a reader must hold at once."""
    import grimp

    graph = grimp.build_graph(package, include_external_packages=False)
    circles = sorted(
        (module, imported)
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if module < imported and graph.find_shortest_chain(importer=imported, imported=module)
    )
    assert circles == [], f"modules that import each other, directly or around a circle: {circles}"
