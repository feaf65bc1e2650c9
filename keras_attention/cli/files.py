"""Writing outputs: checks before the work, atomic replacement after it."""

from typing import Callable

import os
import shutil
import tempfile

from keras_attention.cli.errors import CliError
from keras_attention.training import run_dir


def check_output(path: str, flag: str, overwrite: bool) -> str:
    """`path`, checked before any work: its folder exists, and it does not
    exist unless `overwrite`."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CliError(f"{flag} {path}: the folder {folder} does not exist")
    if os.path.exists(path) and not overwrite:
        raise CliError(
            f"{flag} {path}: already exists (give --overwrite to replace it)"
        )
    return path


def save_atomically(path: str, write: Callable[[str], object]) -> str:
    """Calls `write(temp)` with a temporary file name in the folder of
    `path` (same ending), then moves it onto `path` with `os.replace`:
    `path` is either the old file or the whole new one
    (`keras_attention.training.run_dir.write_atomically`, which writes the
    runs' files)."""
    return run_dir.write_atomically(path, write)


def save_directory_atomically(
    path: str, write: Callable[[str], object]
) -> str:
    """`save_atomically` for a directory: `write(temp_dir)`, then the old
    directory (if any) is moved away and the new one renamed onto `path`."""
    folder = os.path.dirname(os.path.abspath(path))
    name = os.path.basename(os.path.normpath(path))
    temp = tempfile.mkdtemp(prefix=f".{name}.", dir=folder)
    old = None
    try:
        write(temp)
        if os.path.isdir(path):
            old = tempfile.mkdtemp(prefix=f".{name}.old.", dir=folder)
            os.rmdir(old)
            os.replace(path, old)
        elif os.path.exists(path):
            os.remove(path)
        os.replace(temp, path)
    finally:
        if os.path.exists(temp):
            shutil.rmtree(temp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return path
