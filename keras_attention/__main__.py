"""`python -m keras_attention`: the command line (`keras_attention.cli`)."""

import sys

from keras_attention.cli import main

if __name__ == "__main__":
    sys.exit(main())
