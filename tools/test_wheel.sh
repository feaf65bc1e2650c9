#!/usr/bin/env bash
# Installs the built wheel into a fresh virtual environment (not editable) and
# runs the given test files against it from a folder outside the repository,
# so that a file missing from the wheel fails the tests.
#
# Usage: tools/test_wheel.sh DIST_DIR VENV TEST_FILE...
# The test files are paths under tests/; tests/ is copied whole (conftest.py,
# helpers, data) next to tools/test_installed_wheel.py, which checks that
# keras_attention is imported from VENV's site-packages.
set -euo pipefail
dist=$1
venv=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}

wheels=("$dist"/*.whl)
if [ ${#wheels[@]} -ne 1 ] || [ ! -f "${wheels[0]}" ]; then
    echo "expected one wheel in $dist" >&2
    exit 1
fi
wheel=$(cd "$(dirname "${wheels[0]}")" && pwd)/$(basename "${wheels[0]}")

rm -rf "$venv"
"$python" -m venv "$venv"
venv=$(cd "$venv" && pwd)
# pip's cache holds TensorFlow and Keras from the main environment's install.
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "${wheel}[viz,export]" \
    "pytest>=8" "pytest-xdist>=3.5" "hypothesis>=6.100"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root/tests" "$work/tests"
find "$work/tests" -name __pycache__ -prune -exec rm -rf {} +
cp "$root/tools/test_installed_wheel.py" "$work/tests/"
# pytest's settings (markers, warning filters) without the rest of the tree.
"$venv/bin/python" - "$root/pyproject.toml" "$work/pytest.ini" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as file:
    options = tomllib.load(file)["tool"]["pytest"]["ini_options"]
with open(sys.argv[2], "w") as out:
    out.write("[pytest]\n")
    for key, value in options.items():
        if key == "testpaths":
            continue
        if isinstance(value, list):
            value = "".join(f"\n    {v}" for v in value)
        out.write(f"{key} = {value}\n")
PY

tests=("tests/test_installed_wheel.py")
for file in "$@"; do
    case $file in
        tests/*) ;;
        *) echo "not a path under tests/: $file" >&2; exit 1 ;;
    esac
    tests+=("$file")
done

cd "$work"
env -u PYTHONPATH KERAS_ATTENTION_SOURCE_ROOT="$root" \
    KERAS_BACKEND=${KERAS_BACKEND:-tensorflow} \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --no-loadscope-reorder \
    -c pytest.ini --rootdir "$work" "${tests[@]}"
