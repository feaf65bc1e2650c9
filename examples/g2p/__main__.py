"""`python -m examples.g2p`: see `examples/g2p/cli.py` and docs/g2p.md."""

import os
import sys

# Before anything imports Keras: a quiet start, as the library's command
# line (keras_attention.cli.launch).
os.environ["KERAS_ATTENTION_QUIET_START"] = "1"

from examples.g2p.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
