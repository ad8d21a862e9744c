"""The flags SGLang 0.5.23's `launch_server` accepts, read from its installed source, not imported.

Importing its arguments pulls torch's CUDA build, triton, msgspec and more; its flags are plain in
its source: each `A[T, "help"]` or `A[T, Arg(...)]` field of the structs in
`sglang/srt/arg_groups/fields/` is `--field-name` (or its `cli_name`) and its `aliases`, unless
`no_cli=True` (arg_groups/arg_utils.py `add_cli_args_from_dataclass` ~298-340), and server_args.py
adds a few with `parser.add_argument("--…")`.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path


@cache
def sglang_flags() -> frozenset[str]:
    """Every long flag of `python -m sglang.launch_server`."""
    spec = importlib.util.find_spec("sglang")
    assert spec is not None, "sglang is in requirements/trainers.in"
    assert spec.submodule_search_locations
    srt = Path(next(iter(spec.submodule_search_locations))) / "srt"
    flags: set[str] = set()
    for path in sorted((srt / "arg_groups" / "fields").glob("*.py")):
        flags |= _field_flags(ast.parse(path.read_text()))
    for path in (srt / "server_args.py", *sorted((srt / "arg_groups").glob("*.py"))):
        flags |= _added_flags(ast.parse(path.read_text()))
    return frozenset(flags)


def _field_flags(tree: ast.Module) -> set[str]:
    flags = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                flags |= _flags_of(item.target.id, item.annotation)
    return flags


def _flags_of(name: str, annotation: ast.expr) -> set[str]:
    if not (isinstance(annotation, ast.Subscript) and isinstance(annotation.slice, ast.Tuple)):
        return set()
    meta = annotation.slice.elts[1] if len(annotation.slice.elts) > 1 else None
    if isinstance(meta, ast.Constant) and isinstance(meta.value, str):
        return {"--" + name.replace("_", "-")}
    if not (isinstance(meta, ast.Call) and getattr(meta.func, "id", "") == "Arg"):
        return set()
    keywords = {kw.arg: kw.value for kw in meta.keywords}
    no_cli = keywords.get("no_cli")
    if isinstance(no_cli, ast.Constant) and no_cli.value is True:
        return set()
    cli_name = keywords.get("cli_name")
    main = cli_name.value if isinstance(cli_name, ast.Constant) else "--" + name.replace("_", "-")
    aliases = keywords.get("aliases")
    extra = (
        {e.value for e in aliases.elts if isinstance(e, ast.Constant)}
        if isinstance(aliases, ast.List)
        else set()
    )
    return {str(main), *map(str, extra)}


def _added_flags(tree: ast.Module) -> set[str]:
    return {
        arg.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"
        for arg in node.args
        if isinstance(arg, ast.Constant)
        and isinstance(arg.value, str)
        and arg.value.startswith("--")
    }
