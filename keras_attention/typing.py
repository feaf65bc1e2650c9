"""Type aliases of the package's signatures.

Keras 3 runs on TensorFlow, JAX and PyTorch, whose tensor types share no
base class, and the package imports no backend for its types (it must
import without TensorFlow on JAX). The aliases therefore are `Any` at run
time: they name what an argument is, for the reader and the API reference.
"""

from typing import Any
from typing import Callable
from typing import Optional
from typing import Tuple
from typing import Union

import keras

Tensor = Any
"""A backend tensor (`tf.Tensor`, `jax.Array`, `torch.Tensor`) or a
`keras.KerasTensor`; where a function converts its input, also a NumPy
array."""

NestedTensor = Any
"""A tensor, or a nested structure (tuple, list, dict) of tensors, as
`keras.tree` handles them (RNN cell states, decoder states)."""

Shape = Tuple[Optional[int], ...]
"""A tensor shape: a tuple (or list) of sizes, `None` where unknown."""

IntOrTensor = Union[int, Tensor]
"""A Python int, or an integer tensor (a size or id known in the graph
only)."""

ArrayLike = Any
"""A NumPy array, a tensor of any backend, or nested lists of numbers."""

StepFn = Callable[
    [Tensor, NestedTensor], Tuple[Tensor, NestedTensor, Optional[Tensor]]
]
"""A decoder step function `(tokens, state) -> (log_probs, new_state,
attention)`: see `keras_attention.decoding.greedy_decode`."""

Initializer = Union[str, keras.initializers.Initializer]
"""An initializer: its name (`"glorot_uniform"`) or an instance."""

Regularizer = Optional[Union[str, keras.regularizers.Regularizer]]
"""A regularizer: its name, an instance, or `None` for none."""

Constraint = Optional[Union[str, keras.constraints.Constraint]]
"""A constraint: its name, an instance, or `None` for none."""
