"""Pharaoh links of the other direction: every line's links `i-j`
(sure and possible) written `j-i`, for a run trained target -> source.

    python -m benchmarks.alignment.transpose_links IN.align OUT.align
"""

import argparse

from keras_attention import alignment as al


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("links", help="Pharaoh file, source word first")
    p.add_argument("out", help="the same links, target word first")
    args = p.parse_args(argv)
    lines = al.read_pharaoh(args.links)
    al.write_pharaoh(
        args.out,
        [al.transpose_links(sure) for sure, _ in lines],
        [al.transpose_links(possible) for _, possible in lines],
    )


if __name__ == "__main__":
    main()
