"""`Decoder`: what `translate` and `evaluate` decode with, whatever
`--model` names (`models.load_decoder`)."""

from typing import List
from typing import Tuple

# A text's hypotheses `(translation, score)`, best first.
Hypotheses = List[Tuple[str, float]]


class Decoder:
    """Translations of lists of texts with fixed decoding options."""

    def decode(self, texts: List[str]) -> List[Hypotheses]:
        """For each text, its hypotheses `(translation, score)`, best
        first."""
        raise NotImplementedError
