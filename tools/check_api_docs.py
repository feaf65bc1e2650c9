"""Checks that the API reference documents every public name of the package.

The public names are those `keras_attention/__init__.py` imports (modules
of the package aside); each must have a `::: keras_attention.NAME` entry (or one under a
submodule, `::: keras_attention.module.NAME`) in a page under docs/api/.
Reads the source (ast), so it imports nothing. Run by `make docs`.

Usage: python tools/check_api_docs.py
"""

import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "keras_attention"


def public_names(init: pathlib.Path) -> set[str]:
    """Names imported by the package's `__init__.py`, modules excluded."""
    names = set()
    for node in ast.parse(init.read_text()).body:
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            name = alias.asname or alias.name
            if name.startswith("_"):
                continue
            parts = (node.module or "").split(".")
            if parts[0] != PACKAGE:
                continue
            submodule = init.parent.joinpath(*parts[1:], name)
            if submodule.with_suffix(".py").exists() or submodule.is_dir():
                continue
            names.add(name)
    return names


def documented_names(api_dir: pathlib.Path) -> set[str]:
    """The last component of every `::: keras_attention...` identifier."""
    pattern = re.compile(rf"^:::\s+{PACKAGE}\.([\w.]+)\s*$", re.MULTILINE)
    names = set()
    for page in api_dir.glob("*.md"):
        for match in pattern.finditer(page.read_text()):
            names.add(match.group(1).rsplit(".", 1)[-1])
    return names


def main() -> int:
    public = public_names(ROOT / PACKAGE / "__init__.py")
    missing = sorted(public - documented_names(ROOT / "docs" / "api"))
    for name in missing:
        print(f"docs/api: no `::: {PACKAGE}.{name}` entry for the public "
              f"name {name}")
    if missing:
        return 1
    print(f"docs/api documents all {len(public)} public names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
