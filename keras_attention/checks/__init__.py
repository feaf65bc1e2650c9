"""Argument checks shared by the package's layers, decoders and plots.

Internal: not part of the public API (nothing here is re-exported by
`keras_attention`), but the one place each check is written. Every check
raises a `ValueError` that names the argument, the expected and the
received value (an `ArgumentTypeError`, both a `TypeError` and a
`ValueError`, for a value of the wrong type).

Import the checks from here, `from keras_attention.checks import
check_mask`; the modules group them by what they check:

- `scalars`: Python and numpy numbers, bools, choices and scalar tensors
  (`check_int`, `check_float`, `check_positive_int`, `check_bool`,
  `check_choice`, `check_scalar_tensor`, `python_scalar`,
  `concrete_value`);
- `tensors`: shapes, masks, batch sizes and dtypes of tensors
  (`check_mask`, `check_ids`, `check_same_batch`, `check_feature_shape`, `shape_str`,
  `shapes_compatible`, `is_floating`, `is_tensor`, `to_tensor`);
- `links`: word alignments and their weight matrices (`check_links`,
  `check_corpus`, `check_weight_matrix`);
- `errors`: `ArgumentTypeError` and the owner prefix of messages;
- `dependencies`: optional packages that must import
  (`require_text_ops`).
"""

from keras_attention.checks.errors import ArgumentTypeError
from keras_attention.checks.errors import shape_str
from keras_attention.checks.links import check_corpus
from keras_attention.checks.links import check_links
from keras_attention.checks.links import check_weight_matrix
from keras_attention.checks.scalars import check_bool
from keras_attention.checks.scalars import check_choice
from keras_attention.checks.scalars import check_float
from keras_attention.checks.scalars import check_int
from keras_attention.checks.scalars import check_positive_int
from keras_attention.checks.scalars import check_scalar_tensor
from keras_attention.checks.scalars import concrete_value
from keras_attention.checks.scalars import python_scalar
from keras_attention.checks.tensors import check_feature_shape
from keras_attention.checks.tensors import check_ids
from keras_attention.checks.tensors import check_mask
from keras_attention.checks.tensors import check_same_batch
from keras_attention.checks.tensors import is_floating
from keras_attention.checks.tensors import is_tensor
from keras_attention.checks.tensors import shapes_compatible
from keras_attention.checks.tensors import to_tensor

__all__ = [
    "ArgumentTypeError",
    "check_bool",
    "check_choice",
    "check_corpus",
    "check_feature_shape",
    "check_float",
    "check_ids",
    "check_int",
    "check_links",
    "check_mask",
    "check_positive_int",
    "check_same_batch",
    "check_scalar_tensor",
    "check_weight_matrix",
    "concrete_value",
    "is_floating",
    "is_tensor",
    "python_scalar",
    "shape_str",
    "shapes_compatible",
    "to_tensor",
]
