"""What users read carries no machine's paths and no tracker numbers.

The docs, the README, the examples and the benchmarks are read by people
who have neither this project's issue tracker in mind nor the file system
of the machine a figure was measured on. These tests scan every text file
of those trees for

- absolute paths of one machine: home and work directories (`/home/...`,
  `/Users/...`, `/root/...`, `/work/...`, `/mnt/...`), temporary
  directories used as data (`/tmp/...`) and virtual environments reached
  by an absolute path; URLs and system paths (`/proc/cpuinfo`,
  `/dev/null`, `/usr/bin/chromium`) are fine;
- references to this project's issues or pull requests (`issue 15`,
  `#15`); upstream ones are written `owner/repo#N` or as a URL;

and check that every `pip install` hint of the library and the docs names
the project's own distribution, `keras-seq2seq-attention` (the import name
`keras_attention` is also the name of an unrelated package on PyPI).
"""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DISTRIBUTION = "keras-seq2seq-attention"

# The trees (and files) that users read.
SCANNED = ("docs", "README.md", "examples", "benchmarks")
TEXT_SUFFIXES = {
    ".md", ".py", ".sh", ".txt", ".toml", ".yml", ".yaml", ".cfg", ".json",
    ".tsv", ".html", ".js", ".css",
}

# A path starts at a character that cannot continue a URL, a host name or
# a relative path (so `https://example.org/home/x` and `runs/tmp/x` pass).
_START = r"(?<![\w.~/:%-])"
_MACHINE_DIRS = r"(?:home|Users|root|work|mnt|scratch|tmp|private/tmp|var/folders)"
RULES = (
    (
        "absolute path",
        re.compile(_START + r"/" + _MACHINE_DIRS + r"(?:/[^\s`'\")\]}>,;]*)"),
    ),
    (
        "absolute path of a virtual environment",
        re.compile(
            _START + r"(?:/[\w.+-]+)+/\.?[\w.-]*venv[\w.-]*/[^\s`'\")\]]*"
        ),
    ),
    ("Windows user path", re.compile(r"\b[A-Za-z]:\\(?:Users|home)\\")),
    (
        "issue reference",
        re.compile(
            r"\b(?:issues?|pull requests?|PRs?)[ -]?#?\d+(?:\s*(?:/|and|,)\s*\d+)*\b",
            re.IGNORECASE,
        ),
    ),
    # `#15` alone; `owner/repo#15` and URL fragments are preceded by a name
    # character and pass, colours (`#1f77b4`, `#000000`) are not all digits.
    ("issue reference", re.compile(r"(?<![\w/.&#-])#\d{1,5}(?![\w-])")),
)


def find_violations(text):
    """Returns `(line number, rule, matched text)` for each violation."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for rule, pattern in RULES:
            for match in pattern.finditer(line):
                found.append((number, rule, match.group(0)))
    return found


def scanned_files(root=ROOT):
    for name in SCANNED:
        path = root / name
        if path.is_file():
            yield path
            continue
        for file in sorted(path.rglob("*")):
            if (
                file.is_file()
                and file.suffix in TEXT_SUFFIXES
                and "__pycache__" not in file.parts
            ):
                yield file


def check_tree(root=ROOT):
    problems = []
    for file in scanned_files(root):
        text = file.read_text(encoding="utf-8", errors="replace")
        for number, rule, match in find_violations(text):
            problems.append(f"{file.relative_to(root)}:{number}: {rule}: {match}")
    return problems


# `pip install` and its target: a name, `.`, a path, with extras or not.
_PIP = re.compile(
    r"pip install\s+(?:-{1,2}[\w-]+\s+)*[\"'`]?([\w.-]+|\.)(\[[\w,\s-]*\])?"
)


def install_hint_problems(text):
    """The `pip install` hints that do not name this project's distribution.

    A hint with extras (`X[viz]`) installs this project: `X` must be
    `keras-seq2seq-attention` (or `.`, a checkout). No hint may name the
    unrelated `keras-attention` / `keras_attention` packages.
    """
    problems = []
    for match in _PIP.finditer(text):
        name, extras = match.group(1), match.group(2)
        normal = re.sub(r"[-_.]+", "-", name).lower()
        if normal in ("keras-attention", "keras-attention-mechanism"):
            problems.append(match.group(0))
        elif extras and name not in (".", DISTRIBUTION):
            problems.append(match.group(0))
    return problems


def install_hint_files(root=ROOT):
    yield from sorted((root / "keras_attention").rglob("*.py"))
    yield from sorted((root / "docs").rglob("*.md"))
    yield root / "README.md"


# ----------------------------------------------------------------------


def test_docs_examples_and_benchmarks_have_no_paths_or_issue_numbers():
    problems = check_tree()
    assert not problems, "\n".join(problems)


def test_install_hints_name_the_distribution():
    problems = []
    for file in install_hint_files():
        for hint in install_hint_problems(file.read_text(encoding="utf-8")):
            problems.append(f"{file.relative_to(ROOT)}: {hint}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "line",
    [
        "python -m examples.nmt train --data /work/shared/data/fra.txt",
        "cd /home/alice/keras-seq2seq-attention",
        "    /root/.venv/bin/python tests/x.py",
        "the model in (/tmp/run1)",
        "`/Users/bob/data/cmudict.tsv`",
        "/opt/tfa-venv/bin/python make_reference.py",
        r"C:\Users\bob\data",
        "the figures of issue 15",
        "Issues 15/16 targets",
        "the demo before issue-16",
        "see #15 for the discussion",
        "fixed in PR 12",
    ],
)
def test_planted_violation_is_found(tmp_path, line):
    """A file with one planted violation fails the tree check."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(
        f"# A page\n\nSome text.\n{line}\n", encoding="utf-8"
    )
    problems = check_tree(tmp_path)
    assert len(problems) >= 1
    assert problems[0].startswith("docs/page.md:4:")


@pytest.mark.parametrize(
    "line",
    [
        "https://github.com/keras-team/keras/issues/20585",
        "keras-team/keras#20585 and tensorflow/tensorflow#61919",
        "grep flags /proc/cpuinfo",
        "the browser is /usr/bin/chromium; errors go to /dev/null",
        "it listens on http://127.0.0.1:8000/",
        "https://example.org/home/user/page and https://x.io/tmp/a",
        "a relative runs/tmp/x and ../shared/data/fra-eng/fra.txt",
        ".venv/bin/python -m pytest and .venv-tfa/bin/python",
        "see [the section](benchmarks.md#results-1) and [top](#quick-start)",
        'colors = ["#1f77b4", "#000000", "#ff7f0e"]',
        "x = a  # 15 steps",
        "the issue is the bridge",
    ],
)
def test_allowed_text_passes(line):
    assert find_violations(line) == []


def test_install_hint_checker():
    assert install_hint_problems("pip install keras-attention[viz]")
    assert install_hint_problems('pip install "keras_attention"')
    assert install_hint_problems("pip install -U other-dist[viz]")
    assert not install_hint_problems('pip install "keras-seq2seq-attention[viz]"')
    assert not install_hint_problems('pip install ".[examples]" matplotlib')
    assert not install_hint_problems("pip install eflomal")
