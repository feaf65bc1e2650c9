"""`python -m examples.g2p`: see `examples/g2p/cli.py` and docs/g2p.md."""

import sys

from examples.g2p.cli import main

if __name__ == "__main__":
    sys.exit(main())
