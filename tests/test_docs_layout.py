"""The README and the docs name only files and modules that exist.

After files move, the prose that points at them goes stale silently. These
tests scan README.md and docs/**/*.md for

- file paths under `examples/`, `keras_attention/`, `benchmarks/` and
  `tools/` (`keras_attention/training/distribute.py`): the file or folder exists;
- dotted names `keras_attention.x.y`, `examples.x.y`, `benchmarks.x.y`
  (also as `from examples.x import y, z`):
  their longest prefix that is a module (a `.py` file or a package folder)
  exists, and what follows it is an attribute defined or imported in that
  module's source (`keras_attention.ops.additive_score`), optionally with
  a member of a class after it (`keras_attention.seq2seq.Seq2Seq.generate`);

and check that the README's "Project layout" block lists every package
folder of `keras_attention/` and `examples/`, and that every module file it
names exists in the folder it is listed under. Files are read, nothing is
imported: no TensorFlow, a fraction of a second.
"""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("keras_attention", "examples", "benchmarks")
PATH_ROOTS = PACKAGES + ("tools",)
FILE_SUFFIXES = {"md", "py", "json", "txt", "tsv", "html", "yml", "toml"}

# A path or a name starts where a path or a dotted name cannot continue
# (so `site-packages/keras_attention/x.py` and `a.examples.b` are skipped).
_PATH = re.compile(
    r"(?<![\w./-])((?:" + "|".join(PATH_ROOTS) + r")/[\w./-]*)"
)
_NAME = re.compile(
    r"(?<![\w./-])((?:" + "|".join(PACKAGES) + r")(?:\.\w+)+)"
)
# `from keras_attention.training import distribute, runs`: each name imported.
_FROM_IMPORT = re.compile(
    r"\bfrom\s+((?:" + "|".join(PACKAGES) + r")(?:\.\w+)*)\s+import\s+"
    r"\(?([\w ,]+)"
)


def documents():
    """README.md and every Markdown page of docs/."""
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def _module_file(parts, root):
    """The source file of the module `parts`, or None if it is none."""
    path = root.joinpath(*parts)
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    # A folder run with `python -m` (benchmarks/alignment) or a namespace.
    if path.is_dir() and any(path.glob("*.py")):
        return path
    return None


def _defines(source_file, name):
    """Whether the module source defines or imports `name`."""
    if source_file.is_dir():
        return (source_file / f"{name}.py").is_file()
    text = source_file.read_text(encoding="utf-8")
    return re.search(rf"(?<![\w.]){re.escape(name)}\b", text) is not None


def check_path(path, root=ROOT):
    """None if the path exists, else the reason it is stale."""
    path = path.rstrip(".,;:)")
    if any(c in path for c in "*{}<>"):
        return None  # a pattern, not one file
    if (root / path).exists():
        return None
    return f"no file or folder {path}"


def check_name(name, root=ROOT):
    """None if the dotted name resolves in the tree, else the reason."""
    name = name.rstrip(".")
    parts = name.split(".")
    if parts[-1] in FILE_SUFFIXES:
        return None  # a file name such as benchmarks.md (a docs page)
    module_len = 0
    for i in range(1, len(parts) + 1):
        if _module_file(parts[:i], root) is not None:
            module_len = i
    if module_len == len(parts):
        return None
    if module_len == 0:
        return f"{name}: no module {parts[0]}"
    module = ".".join(parts[:module_len])
    rest = parts[module_len:]
    source = _module_file(parts[:module_len], root)
    if not _defines(source, rest[0]):
        return f"{name}: {module} has no module or attribute {rest[0]}"
    if len(rest) > 2 or (len(rest) == 2 and not rest[0][:1].isupper()):
        return f"{name}: {module}.{rest[0]} is not a module"
    return None


def stale_references(text, root=ROOT):
    """The stale paths and dotted names of a document's text."""
    problems = [check_path(m.group(1), root) for m in _PATH.finditer(text)]
    problems += [check_name(m.group(1), root) for m in _NAME.finditer(text)]
    for m in _FROM_IMPORT.finditer(text):
        for name in m.group(2).split(","):
            name = name.split(" as ")[0].strip()
            if name:
                problems.append(check_name(f"{m.group(1)}.{name}", root))
    return sorted({p for p in problems if p})


@pytest.mark.parametrize(
    "doc", documents(), ids=lambda p: str(p.relative_to(ROOT))
)
def test_documents_name_existing_files_and_modules(doc):
    problems = stale_references(doc.read_text(encoding="utf-8"))
    assert not problems, f"{doc.relative_to(ROOT)}: {problems}"


def layout_block(readme_text):
    """The fenced block of the README's "Project layout" section."""
    section = readme_text.split("## Project layout", 1)[1]
    return section.split("```", 2)[1]


def layout_problems(block, root=ROOT):
    """Package folders the layout block leaves out and files it names that
    are not in the folder they are listed under."""
    problems = []
    for top in ("keras_attention", "examples"):
        for init in sorted((root / top).rglob("__init__.py")):
            folder = init.parent
            if folder == root / top:
                continue
            if f"{folder.name}/" not in block:
                rel = folder.relative_to(root)
                problems.append(f"package {rel}/ is not listed")
    top = folder = None
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        first = line.split()[0]
        if first.endswith("/"):
            if indent == 0:
                top = folder = root / first
            else:
                folder = top / first
        elif indent and indent < 6:
            folder = top  # a line of files of the top folder
        for name in re.findall(r"(?<![\w/])(\w+\.py)\b", line):
            if folder is None or not any(folder.rglob(name)):
                where = folder.relative_to(root) if folder else "?"
                problems.append(f"{name} is not in {where}/")
    return problems


def test_readme_layout_lists_packages_and_existing_modules():
    block = layout_block((ROOT / "README.md").read_text(encoding="utf-8"))
    assert layout_problems(block) == []


def test_checker_catches_planted_stale_references(tmp_path):
    (tmp_path / "examples" / "nmt").mkdir(parents=True)
    (tmp_path / "examples" / "__init__.py").write_text("")
    (tmp_path / "examples" / "nmt" / "__init__.py").write_text("")
    (tmp_path / "examples" / "nmt" / "serve.py").write_text(
        "from x import web\n\n\nclass Server:\n    pass\n"
    )
    text = (
        "Run examples/nmt/serve.py or `python -m examples.nmt.serve`; "
        "see examples.nmt.serve.web and examples.nmt.serve.Server.start.\n"
        "Stale: examples/nmt/distribute.py, examples.nmt.translator, "
        "examples.nmt.serve.missing_name and examples.nmt.serve.web.x.\n"
        "from examples.nmt import serve, distribute\n"
    )
    assert stale_references(text, tmp_path) == [
        "examples.nmt.distribute: examples.nmt has no module or attribute "
        "distribute",
        "examples.nmt.serve.missing_name: examples.nmt.serve has no module "
        "or attribute missing_name",
        "examples.nmt.serve.web.x: examples.nmt.serve.web is not a module",
        "examples.nmt.translator: examples.nmt has no module or attribute "
        "translator",
        "no file or folder examples/nmt/distribute.py",
    ]
    block = (
        "examples/nmt/    serve.py,\n"
        "                 translator.py\n"
    )
    assert layout_problems(block, tmp_path) == [
        "translator.py is not in examples/nmt/"
    ]
    (tmp_path / "examples" / "g2p").mkdir()
    (tmp_path / "examples" / "g2p" / "__init__.py").write_text("")
    assert layout_problems(block, tmp_path) == [
        "package examples/g2p/ is not listed",
        "translator.py is not in examples/nmt/",
    ]
