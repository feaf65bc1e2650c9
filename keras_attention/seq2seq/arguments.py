"""The checks of `Seq2Seq`'s constructor arguments, and their choices.

`check_arguments` is the one place where they are checked
(`Seq2Seq.check_arguments` calls it with the constructor's signature,
where the defaults are written). The choices are the constants below,
read by the command lines (`keras_attention.cli.parser`,
`keras_attention.training.settings`).
"""

from typing import Any
from typing import Optional

from keras_attention.checks import ArgumentTypeError
from keras_attention.checks import check_bool
from keras_attention.checks import check_choice
from keras_attention.checks import check_float
from keras_attention.checks import check_int
from keras_attention.seq2seq.tokens import RESERVED_TOKENS

# The values of the string arguments.
MODELS = ("luong", "stepwise")
SCORES = ("dot", "general", "additive", "location", "monotonic")
# Scores whose weights depend on the previous step's alignment: they run
# in the step-wise decoder only.
STATEFUL_SCORES = ("location", "monotonic")
CELLS = ("lstm", "gru")
# `attention_keys` and `attention_values`.
ATTENTION_INPUTS = ("encoder", "embedding")
ALIGNMENT_HEADS = ("off", "guided", "lexical")
PROJECTION_DTYPES = ("auto", "float32", "policy")
# The values of arguments added since the first saved models, for a
# configuration written without them: what those models did.
LEGACY_ARGUMENTS = {"projection_dtype": "float32"}

# Vocabulary sizes hold at least the reserved tokens (ids 0 to 3).
_MIN_VOCAB_SIZE = len(RESERVED_TOKENS)
_OWNER = "Seq2Seq"



def _check_source_ids(value: Any, vocab_size: Optional[int]) -> tuple:
    """`unattended_source_ids` as a tuple of Python ints in
    `[0, vocab_size)` (no upper bound for an unknown `vocab_size`)."""
    name = "unattended_source_ids"
    try:
        if isinstance(value, (str, bytes)):
            raise TypeError
        items = list(value)
    except TypeError:
        raise ArgumentTypeError(
            f"{_OWNER}: `{name}` must be a sequence of source token ids. "
            f"Received: {name}={value!r:.80} of type {type(value).__name__}"
        ) from None
    ids = []
    for i, item in enumerate(items):
        item = check_int(f"{name}[{i}]", item, low=0, owner=_OWNER)
        if vocab_size is not None and item >= vocab_size:
            raise ValueError(
                f"{_OWNER}: `{name}` must hold ids of the source vocabulary, "
                f"in [0, source_vocab_size={vocab_size}). Received: "
                f"{name}[{i}]={item}"
            )
        ids.append(item)
    return tuple(ids)


def check_arguments(parameters: dict, arguments: dict) -> dict:
    """`Seq2Seq.check_arguments` (its docstring): `parameters` are the
    constructor's `inspect.Parameter`s by name, in order."""
    unknown = sorted(set(arguments) - set(parameters))
    if unknown:
        raise TypeError(
            f"{_OWNER}: unknown argument(s) {unknown}; expected some of "
            f"{list(parameters)}"
        )
    values = {
        name: arguments.get(name, parameter.default)
        for name, parameter in parameters.items()
        if name in arguments or parameter.default is not parameter.empty
    }
    out = {}
    for name in ("source_vocab_size", "target_vocab_size"):
        if name not in values:
            continue
        size = check_int(name, values[name], owner=_OWNER)
        if size < _MIN_VOCAB_SIZE:
            raise ValueError(
                f"{_OWNER}: `{name}` must be an integer >= "
                f"{_MIN_VOCAB_SIZE}: ids 0 to {_MIN_VOCAB_SIZE - 1} are "
                f"the reserved tokens {' '.join(RESERVED_TOKENS)}. "
                f"Received: {name}={size}"
            )
        out[name] = size
    for name, choices in (
        ("model", MODELS),
        ("score", SCORES),
        ("cell", CELLS),
        ("attention_keys", ATTENTION_INPUTS),
        ("attention_values", ATTENTION_INPUTS),
        ("alignment_head", ALIGNMENT_HEADS),
        ("projection_dtype", PROJECTION_DTYPES),
    ):
        out[name] = check_choice(name, values[name], choices, _OWNER)
    for name in ("bidirectional", "bridge", "attend_source_end"):
        out[name] = check_bool(name, values[name], _OWNER)
    for name in ("embedding_dim", "units", "encoder_layers",
                 "decoder_layers", "attention_units"):
        out[name] = check_int(
            name, values[name], low=1,
            allow_none=name == "attention_units", owner=_OWNER,
        )
    for name in ("dropout", "bridge_dropout"):
        out[name] = check_float(
            name, values[name], low=0.0, high=1.0, high_open=True,
            owner=_OWNER,
        )
    out["unattended_source_ids"] = _check_source_ids(
        values["unattended_source_ids"], out.get("source_vocab_size")
    )
    if out["score"] in STATEFUL_SCORES and out["model"] != "stepwise":
        raise ValueError(
            f"{_OWNER}: `score={out['score']!r}` is stateful (it needs "
            "the previous step's alignment) and runs only in the "
            "step-wise decoder: expected model='stepwise'. Received: "
            f"model={out['model']!r}"
        )
    for name in ("attention_keys", "attention_values"):
        if out[name] == "embedding" and out["model"] != "luong":
            raise ValueError(
                f"{_OWNER}: `{name}='embedding'` needs `model='luong'` "
                "(the step-wise decoder attends to the encoder states). "
                f"Received: model={out['model']!r}"
            )
    decoder_units = out["units"] * (2 if out["bidirectional"] else 1)
    if (
        out["score"] == "dot"
        and out["attention_keys"] == "embedding"
        and out["embedding_dim"] != decoder_units
    ):
        raise ValueError(
            f"{_OWNER}: `score='dot'` with `attention_keys='embedding'` "
            "needs `embedding_dim` equal to the decoder units (`units`, "
            "doubled when `bidirectional`): the dot score compares "
            "vectors of one size (use score='general' otherwise). "
            f"Received: embedding_dim={out['embedding_dim']}, "
            f"units={out['units']}, "
            f"bidirectional={out['bidirectional']}"
        )
    if (
        out["attention_keys"] == out["attention_values"] == "embedding"
        and not out["bridge"]
    ):
        raise ValueError(
            f"{_OWNER}: `attention_keys` and `attention_values` both "
            "'embedding' need `bridge=True`: the encoder would be "
            f"unused. Received: bridge={out['bridge']}"
        )
    return {name: out[name] for name in parameters if name in out}
