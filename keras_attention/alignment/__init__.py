"""Attention as word alignment: extract, symmetrize, export, score, supervise.

- `word_groups`, `word_attention`, `group_attention`,
  `word_links_to_token_links`: from
  sub-word (WordPiece `##`, SentencePiece `▁`) attention to words and back.
- `hard_links`, `attention_links`, `transpose_links`: `argmax` or
  `threshold` links `(source, target)`.
- `symmetrize`: intersection, union, grow(-diag)(-final)(-and), as Moses
  `symal`; `agreement_links`, `agreement_matrix`: the links where both
  directions' soft attention agree (before any hard link is taken).
- `diagonal_prior`, `favor_diagonal`, `estimate_tension`: fast_align's
  distortion prior, multiplied into the attention (links near the
  diagonal favoured), and its tension fitted to links.
- `read_pharaoh`, `write_pharaoh`, `parse_pharaoh`, `format_pharaoh`.
- `concatenate_pairs`, `join_pairs`: longer training pairs joined from
  a corpus's shorter ones, their links shifted (for guided alignment).
- `alignment_scores`: AER, precision, recall (Och & Ney, 2003).
- `LinkRates`, `orthographic_similarity`, `mix_prior`,
  `reweight_by_prior`, `word_key`: a
  lexical prior counted on a corpus's reference links and one from the
  words' spelling, mixed into the attention (a neural-plus-count hybrid
  for rare words).
- `GuidedAlignmentLoss`, `links_to_matrix`: supervise attention weights with
  reference links in `model.fit`.

Everything but `GuidedAlignmentLoss` is plain numpy/Python; the loss uses
`keras.ops` and runs on every Keras backend. See `docs/alignment.md`.
"""

from keras_attention.alignment.agreement import agreement_links
from keras_attention.alignment.agreement import agreement_matrix
from keras_attention.alignment.distortion import diagonal_prior
from keras_attention.alignment.distortion import estimate_tension
from keras_attention.alignment.distortion import favor_diagonal
from keras_attention.alignment.guided_loss import GuidedAlignmentLoss
from keras_attention.alignment.guided_loss import links_to_matrix
from keras_attention.alignment.joining import concatenate_pairs
from keras_attention.alignment.joining import join_pairs
from keras_attention.alignment.lexical import LinkRates
from keras_attention.alignment.lexical import mix_prior
from keras_attention.alignment.lexical import orthographic_similarity
from keras_attention.alignment.lexical import reweight_by_prior
from keras_attention.alignment.lexical import word_key
from keras_attention.alignment.links import attention_links
from keras_attention.alignment.links import hard_links
from keras_attention.alignment.links import transpose_links
from keras_attention.alignment.pharaoh import format_pharaoh
from keras_attention.alignment.pharaoh import parse_pharaoh
from keras_attention.alignment.pharaoh import read_pharaoh
from keras_attention.alignment.pharaoh import write_pharaoh
from keras_attention.alignment.scoring import alignment_scores
from keras_attention.alignment.subwords import DEFAULT_SPECIAL_TOKENS
from keras_attention.alignment.subwords import group_attention
from keras_attention.alignment.subwords import word_attention
from keras_attention.alignment.subwords import word_groups
from keras_attention.alignment.subwords import word_links_to_token_links
from keras_attention.alignment.symmetrization import symmetrize
from keras_attention.alignment.symmetrization import symmetrize_corpus

__all__ = [
    "DEFAULT_SPECIAL_TOKENS",
    "GuidedAlignmentLoss",
    "LinkRates",
    "agreement_links",
    "agreement_matrix",
    "alignment_scores",
    "attention_links",
    "concatenate_pairs",
    "diagonal_prior",
    "estimate_tension",
    "favor_diagonal",
    "format_pharaoh",
    "group_attention",
    "hard_links",
    "join_pairs",
    "links_to_matrix",
    "mix_prior",
    "orthographic_similarity",
    "parse_pharaoh",
    "read_pharaoh",
    "reweight_by_prior",
    "symmetrize",
    "symmetrize_corpus",
    "transpose_links",
    "word_attention",
    "word_groups",
    "word_key",
    "word_links_to_token_links",
    "write_pharaoh",
]
