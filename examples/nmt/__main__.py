"""`python -m examples.nmt`: see `examples/nmt/cli.py` and docs/nmt.md."""

import os
import sys

# Before anything imports Keras: a quiet start, as the library's command
# line (keras_attention.cli.launch).
os.environ["KERAS_ATTENTION_QUIET_START"] = "1"

from examples.nmt.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
