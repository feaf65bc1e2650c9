"""Model and training settings of a run, and `option`.

`ModelConfig` holds the arguments of `keras_attention.seq2seq.Seq2Seq`
(`model_arguments` passes them), `TrainConfig` the optimisation settings.
A field declared with `option(...)` is also a command-line flag:
`keras_attention.recipes.parser` builds argparse groups from these fields
(flag name, type, choices, help, default), so a default is written once.
A recipe adds its own data (and text) section and its defaults.

The defaults of `ModelConfig` are those of the signature of
`Seq2Seq.__init__`, its choices `Seq2Seq`'s (`MODELS`, `SCORES`, ...), and
its values are checked by `Seq2Seq.check_arguments` when a `ModelConfig`
is made.

The vocabulary sizes of `ModelConfig` are not settings: they are `None`
until the vocabularies are known, then their sizes.
"""

import dataclasses
import inspect
import json
from typing import Any
from typing import Callable
from typing import Dict
from typing import Optional
from typing import Sequence
from typing import Tuple
from typing import Union

from keras_attention.seq2seq import arguments as _arguments
from keras_attention.seq2seq.seq2seq import Seq2Seq

SEQ2SEQ_DEFAULTS = {
    name: parameter.default
    for name, parameter in inspect.signature(Seq2Seq.__init__).parameters.items()
    if parameter.default is not parameter.empty
}
MODEL_TYPES = _arguments.MODELS
SCORES = _arguments.SCORES
# Scores whose weights depend on the previous step's alignment
# (`keras_attention` stateful layers): step-wise decoder only.
STATEFUL_SCORES = _arguments.STATEFUL_SCORES
CELLS = _arguments.CELLS
ATTENTION_KEYS = _arguments.ATTENTION_INPUTS
# The second attention `align` reads (`ModelConfig.alignment_head`).
ALIGNMENT_HEADS = _arguments.ALIGNMENT_HEADS
PROJECTION_DTYPES = _arguments.PROJECTION_DTYPES
# The values of `ModelConfig` fields added since the first runs, for a
# run.json written without them: what those runs' models did.
LEGACY_MODEL_VALUES = _arguments.LEGACY_ARGUMENTS
GUIDED_ALIGNMENT_TYPES = ("ce", "mse")
# `TrainConfig.mixed_precision`, `jit_compile` and `strategy`
# (`acceleration.py`, `distribute.py`).
MIXED_PRECISION = ("auto", "off", "float16", "bfloat16")
JIT_COMPILE = ("auto", "on", "off")
STRATEGIES = ("default", "mirrored", "multi-worker")


def model_option(name: str, help: str, **kwargs: Any) -> Any:
    """`option` of `Seq2Seq` argument `name`, with its default."""
    return option(SEQ2SEQ_DEFAULTS[name], help, **kwargs)


def option(
    default: Any,
    help: str,
    flag: Optional[str] = None,
    choices: Optional[Sequence] = None,
    type: Optional[Callable[[str], Any]] = None,
    **argparse: Any,
) -> Any:
    """A dataclass field that is also a command-line flag.

    Args:
        default: The default value (the only place it is written).
        help: The flag's help text.
        flag: The flag, e.g. `"--data-seed"`. Defaults to the field name
            with dashes.
        choices: Optional allowed values.
        type: Type of one value on the command line. Defaults to the type
            of `default` (give it when the default is `None`).
        **argparse: Further `add_argument` keywords (`nargs`, `const`).
    """
    metadata = {"help": help, "flag": flag, "choices": choices, "type": type}
    metadata.update(argparse)
    return dataclasses.field(default=default, metadata=metadata)


def verbosity(value: Union[str, int]) -> Union[str, int]:
    """Keras `fit` verbosity from the command line: `"auto"`, 0, 1 or 2."""
    return value if value == "auto" else int(value)


@dataclasses.dataclass
class ModelConfig:
    """Hyper-parameters of the translation model.

    Attributes:
        source_vocab_size: Size of the source vocabulary: `None` until the
            vocabulary is learned (`train` sets it).
        target_vocab_size: Same, for the target side.
        model: `"luong"` (sequence mode) or `"stepwise"` (input feeding).
        score: `"dot"`, `"general"`, `"additive"` (Bahdanau),
            `"location"` (`LocationSensitiveAttention`) or `"monotonic"`
            (`BahdanauMonotonicAttention`, mode `"parallel"` in training
            and decoding). The last two are stateful: `model="stepwise"`
            only.
        cell: `"lstm"` or `"gru"`.
        bidirectional: Whether the encoder is bidirectional.
        embedding_dim: Size of the token embeddings.
        units: Units of each encoder RNN (per direction).
        encoder_layers: Number of stacked encoder RNNs.
        decoder_layers: Number of stacked decoder RNNs.
        dropout: Dropout rate on embeddings, between layers and on the
            attentional output.
        attention_units: Hidden size of the additive, location and
            monotonic scores (defaults to the decoder units).
        bridge: Whether the encoder's final states initialise the decoder.
            Without the bridge the decoder starts from zeros and can only
            learn about the source through the attention, which makes the
            attention follow the word alignment closely.
        bridge_dropout: Share of the training sentences whose decoder
            starts from zeros instead of the bridge (drawn per sentence and
            step; never in inference). The bridge is a second way to the
            source besides the attention: with `attention_values=
            "embedding"` the decoder can still read a word (the month, the
            weekday) from the encoder's final states and attend elsewhere.
            Sentences without it can only be translated through the
            attention, so the attention must find the words.
        attend_source_punctuation: Whether the attention may attend to
            source tokens made of punctuation only (`train` then fills
            `unattended_source_ids` from the vocabulary).
        unattended_source_ids: Source token ids never attended (set by
            `train`).
        attend_source_end: Whether the attention may attend to the source
            `[END]`. The encoder always reads it; with `False` it is masked
            out of the attended memory, so it cannot become an attention
            sink (its forward encoder state summarises the whole sentence).
        attention_keys: What the attention scores: `"encoder"`, the encoder
            states (the memory itself), or `"embedding"`, the source
            embeddings (a key then knows only its own token, so a word can
            only be found at its own position; the values stay the encoder
            states). `"luong"` model only.
        attention_values: What the attention averages: `"encoder"`, the
            encoder states, or `"embedding"`, the source embeddings (the
            context then carries only the attended tokens, so a decoder
            without the bridge must attend to the word it translates).
            `"luong"` model only.
    """

    source_vocab_size: Optional[int] = None
    target_vocab_size: Optional[int] = None
    model: str = model_option(
        "model",
        "'luong': sequence-mode decoder, attention after it; 'stepwise': "
        "AttentionRNN with input feeding",
        choices=MODEL_TYPES,
    )
    score: str = model_option("score", "attention score", choices=SCORES)
    cell: str = model_option("cell", "RNN cell", choices=CELLS)
    bidirectional: bool = model_option("bidirectional", "bidirectional encoder")
    embedding_dim: int = model_option("embedding_dim", "token embedding size")
    units: int = model_option(
        "units", "units of each encoder RNN (per direction)"
    )
    encoder_layers: int = model_option("encoder_layers", "stacked encoder RNNs")
    decoder_layers: int = model_option("decoder_layers", "stacked decoder RNNs")
    dropout: float = model_option("dropout", "dropout rate")
    attention_units: Optional[int] = model_option(
        "attention_units",
        "hidden size of the additive, location and monotonic scores",
        type=int,
    )
    bridge: bool = model_option(
        "bridge", "initialise the decoder with the encoder's final states"
    )
    bridge_dropout: float = model_option(
        "bridge_dropout",
        "share of the training sentences whose decoder starts from "
        "zeros instead of the bridge (they reach the source only through "
        "the attention)"
    )
    attend_source_end: bool = model_option(
        "attend_source_end",
        "let the attention attend to the source [END] (else the "
        "encoder reads it but it is masked out of the attended memory)"
    )
    attend_source_punctuation: bool = option(
        True, "let the attention attend to source tokens made of "
        "punctuation only (else the encoder reads them but they are masked "
        "out of the attended memory)"
    )
    # The source token ids masked out of the attended memory: `train` sets
    # them from the learned vocabulary (the punctuation tokens) when
    # `attend_source_punctuation` is off. Not a command-line setting.
    unattended_source_ids: Tuple[int, ...] = SEQ2SEQ_DEFAULTS[
        "unattended_source_ids"
    ]
    attention_keys: str = model_option(
        "attention_keys",
        "score the attention against the encoder states or the "
        "source embeddings (values stay the encoder states; luong only)",
        choices=ATTENTION_KEYS,
    )
    attention_values: str = model_option(
        "attention_values",
        "average the encoder states or the source embeddings "
        "(luong only)",
        choices=ATTENTION_KEYS,
    )
    alignment_head: str = model_option(
        "alignment_head",
        "a second attention, the one `align` reads (the translation "
        "attention is left as it is): `guided`, queried by the decoder "
        "state and the target word it predicts, trained by "
        "--guided-alignment; `lexical`, unsupervised, a neural IBM model 1 "
        "(the predicted word from single source words, docs/alignment.md)",
        choices=ALIGNMENT_HEADS,
    )
    projection_dtype: str = model_option(
        "projection_dtype",
        "where the vocabulary projection computes under a mixed "
        "--mixed-precision policy: auto (bfloat16 under bfloat16, float32 "
        "under float16), float32, or policy (the policy's compute dtype); "
        "the logits are float32 either way",
        choices=PROJECTION_DTYPES,
    )

    def __post_init__(self) -> None:
        # run.json of the first runs with a head held a bool.
        if isinstance(self.alignment_head, bool):
            self.alignment_head = "guided" if self.alignment_head else "off"
        # `Seq2Seq`'s checks; the vocabulary sizes only once they are set.
        # Their values come back as Python values (lists from run.json as
        # tuples, so that configs compare).
        arguments = self.model_arguments()
        for name in ("source_vocab_size", "target_vocab_size"):
            if arguments[name] is None:
                del arguments[name]
        for name, value in Seq2Seq.check_arguments(**arguments).items():
            setattr(self, name, value)

    @property
    def decoder_units(self) -> int:
        return self.units * (2 if self.bidirectional else 1)

    def model_arguments(self) -> Dict[str, Any]:
        """The arguments of `keras_attention.seq2seq.Seq2Seq`."""
        arguments = dataclasses.asdict(self)
        arguments.pop("attend_source_punctuation")
        return arguments

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> "ModelConfig":
        return cls(**{**LEGACY_MODEL_VALUES, **json.loads(text)})


@dataclasses.dataclass
class TrainConfig:
    """Optimisation settings."""

    epochs: int = option(10, "epochs")
    batch_size: int = option(64, "sentence pairs per batch")
    learning_rate: float = option(3e-3, "peak learning rate")
    warmup_steps: int = option(100, "linear warm-up steps")
    label_smoothing: float = option(0.0, "label smoothing")
    patience: int = option(3, "early stopping patience")
    bucket_boundaries: Tuple[int, ...] = option(
        (8, 12, 16, 24, 32),
        "length buckets (none: pad each batch to its longest)",
        type=int, nargs="*",
    )
    mixed_precision: str = option(
        "auto",
        "dtype policy: 'auto' (mixed_bfloat16 on a CPU with AVX512_BF16/AMX "
        "or a GPU of compute capability >= 8.0, mixed_float16 on 7.x, else "
        "float32), 'off' (float32), 'float16' (the value when the flag is "
        "given alone) or 'bfloat16'; logits and softmaxes stay float32",
        type=str, choices=MIXED_PRECISION, nargs="?",
        const="float16",
    )
    jit_compile: str = option(
        "auto",
        "XLA-compile the train step: 'auto' (Keras' choice on a GPU; off on "
        "CPU, where it was measured slower), 'on' (the value when the flag "
        "is given alone) or 'off'",
        type=str, choices=JIT_COMPILE, nargs="?", const="on",
    )
    strategy: str = option(
        "default",
        "'mirrored': all local GPUs; 'multi-worker': the workers of "
        "TF_CONFIG (run the same command on each)",
        choices=STRATEGIES,
    )
    seed: int = option(0, "seed of the weights and the shuffling")
    steps_per_epoch: Optional[int] = option(
        None, "steps per epoch (default: one pass)", type=int
    )
    verbose: Union[str, int] = option(
        "auto", "Keras fit verbosity: auto, 0, 1, 2", type=verbosity
    )
    # Guided alignment (docs/alignment.md): reference links of the
    # training pairs supervise the attention.
    guided_alignment: Optional[str] = option(
        None,
        "Pharaoh links of the data file's pairs (one line per pair, file "
        "order, whitespace words, source first) to supervise the attention",
        type=str,
    )
    guided_alignment_type: str = option(
        "ce", "guided alignment cost", choices=GUIDED_ALIGNMENT_TYPES
    )
    guided_alignment_weight: float = option(
        1.0, "weight of the guided alignment loss"
    )
    # Token-level distillation (keras_attention.training.distillation):
    # trained runs whose averaged next-token distributions the model learns.
    teachers: Tuple[str, ...] = option(
        (),
        "trained run directories of the same tokenizers whose averaged "
        "next-token probabilities the model also learns (an ensemble "
        "distilled into one model)",
        type=str, nargs="*",
    )
    distillation_weight: float = option(
        0.5,
        "share of the teachers' probabilities in each target token's "
        "distribution (the reference token has the rest)",
    )


def replace(
    configs: Sequence[Any],
    settings: Dict[str, Dict[str, Any]],
    sections: Sequence[Tuple[str, type]],
) -> Tuple[Any, ...]:
    """`configs` (a tuple of the four configs) with `settings` applied.

    Args:
        configs: `(data, text, model, train)` configs.
        settings: Dict from section name (`"data"`, ...) to a dict of
            field values, like `DEMO_SETTINGS`.
        sections: The `(name, dataclass)` sections of `configs` (each
            recipe has its own `SECTIONS`).
    """
    return tuple(
        dataclasses.replace(config, **settings.get(name, {}))
        for (name, _), config in zip(sections, configs)
    )


def from_dicts(
    config: Dict[str, Dict[str, Any]], sections: Sequence[Tuple[str, type]]
) -> Tuple[Any, ...]:
    """The configs from the dicts of `run.json` (lists as tuples)."""
    out = []
    for name, cls in sections:
        values = dict(config[name])
        if cls is ModelConfig:
            values = {**LEGACY_MODEL_VALUES, **values}
        for field in dataclasses.fields(cls):
            if isinstance(values.get(field.name), list):
                values[field.name] = tuple(values[field.name])
        out.append(cls(**values))
    return tuple(out)


def to_dicts(
    configs: Sequence[Any], sections: Sequence[Tuple[str, type]]
) -> Dict[str, Dict[str, Any]]:
    """The configs as the dicts of `run.json`."""
    return {
        name: dataclasses.asdict(config)
        for (name, _), config in zip(sections, configs)
    }


def merge(*settings: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Settings dicts merged section by section, later ones winning."""
    out = {}
    for s in settings:
        for section, values in s.items():
            out.setdefault(section, {}).update(values)
    return out
