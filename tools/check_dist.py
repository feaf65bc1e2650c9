"""Checks the contents of the built wheel and sdist (`make dist`).

The wheel must hold the `keras_attention` package and its metadata only; the
sdist what a build needs (pyproject.toml, README.md, LICENSE, CHANGELOG.md and
the package) and nothing of tests/, examples/, benchmarks/ or docs/. Every
module of the source tree must be in both, so a file that packaging drops
fails here before the installed-wheel tests run.

Usage: python tools/check_dist.py DIST_DIR
"""

import pathlib
import sys
import tarfile
import zipfile

PACKAGE = "keras_attention"
SDIST_REQUIRED = ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md")
SDIST_FORBIDDEN = ("tests/", "examples/", "benchmarks/", "docs/", "tools/")


def source_modules(root: pathlib.Path) -> set[str]:
    """The package's files in the source tree, as `keras_attention/...`."""
    return {
        path.relative_to(root).as_posix()
        for path in (root / PACKAGE).rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and path.suffix != ".pyc"
    }


def check_wheel(path: pathlib.Path, expected: set[str]) -> list[str]:
    with zipfile.ZipFile(path) as wheel:
        names = set(wheel.namelist())
    problems = []
    for name in sorted(names):
        top = name.split("/", 1)[0]
        if top != PACKAGE and not top.endswith(".dist-info"):
            problems.append(f"{path.name}: unexpected file {name}")
    for name in sorted(expected - names):
        problems.append(f"{path.name}: missing {name}")
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        problems.append(f"{path.name}: no LICENSE in the .dist-info")
    return problems


def check_sdist(path: pathlib.Path, expected: set[str]) -> list[str]:
    with tarfile.open(path) as sdist:
        # Drop the leading `name-version/` folder.
        names = {
            member.name.split("/", 1)[1]
            for member in sdist.getmembers()
            if member.isfile() and "/" in member.name
        }
    problems = []
    for name in SDIST_REQUIRED:
        if name not in names:
            problems.append(f"{path.name}: missing {name}")
    for name in sorted(expected - names):
        problems.append(f"{path.name}: missing {name}")
    for name in sorted(names):
        if name.startswith(SDIST_FORBIDDEN):
            problems.append(f"{path.name}: should not contain {name}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    dist = pathlib.Path(argv[1])
    root = pathlib.Path(__file__).resolve().parent.parent
    expected = source_modules(root)
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        print(f"expected one wheel and one sdist in {dist}, found "
              f"{[p.name for p in wheels + sdists]}")
        return 1
    problems = check_wheel(wheels[0], expected)
    problems += check_sdist(sdists[0], expected)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{wheels[0].name}, {sdists[0].name}: contents ok "
          f"({len(expected)} package files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
