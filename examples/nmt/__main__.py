"""`python -m examples.nmt`: see `examples/nmt/cli.py` and docs/nmt.md."""

import sys

from examples.nmt.cli import main

if __name__ == "__main__":
    sys.exit(main())
