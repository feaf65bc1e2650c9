"""Token-level knowledge distillation: a student learns from teachers.

Each target token's training distribution becomes
`(1 - w) onehot(reference) + w mean_k p_k`, where `p_k` is teacher `k`'s
next-token distribution under teacher forcing on the same pair and `w`
the distillation weight (Kim & Rush 2016's word-level distillation; Sun
et al. 2019 distil an ensemble of G2P models this way). The cross-entropy
against that mixture is `(1 - w) NLL + w KL(mean p || student)` plus a
constant: an ensemble's knowledge in one model of a single member's cost.

`teacher_distributions` runs the teachers once over a corpus, before
training (TensorFlow: the batches come from `tf.data`), and returns their
averaged distributions, one row per target token of each pair, in float16;
`keras_attention.training.dataset.make_dataset` mixes them into each
pair's targets wherever the shuffling and bucketing put it, and
`keras_attention.seq2seq.losses.MaskedLoss` reads distributions as well as
ids.
"""

from typing import Any
from typing import List
from typing import Sequence
from typing import Tuple

import numpy as np

from keras_attention.checks import check_float


def check_teachers(
    teachers: Sequence[Any],
    source_vocabulary: Sequence[str],
    target_vocabulary: Sequence[str],
) -> List[Any]:
    """The `Seq2Seq` of each teacher, once the teachers are known to speak
    the student's vocabularies.

    Args:
        teachers: `Translator`s (objects with `seq2seq`,
            `source_tokenizer` and `target_tokenizer`).
        source_vocabulary, target_vocabulary: The student's tokens.

    Raises:
        TypeError: if a teacher is not a translator.
        ValueError: if there is no teacher, or a teacher's vocabularies
            differ from the student's (its probabilities would be over other
            tokens).
    """
    teachers = list(teachers)
    if not teachers:
        raise ValueError(
            "`teachers` must hold at least one trained translator. "
            "Received: an empty sequence"
        )
    models = []
    for i, teacher in enumerate(teachers):
        if not all(
            hasattr(teacher, name)
            for name in ("seq2seq", "source_tokenizer", "target_tokenizer")
        ):
            raise TypeError(
                "Each of `teachers` must be a `Translator`. Received: "
                f"{type(teacher).__name__} at teachers[{i}]"
            )
        for side, student in (
            ("source", source_vocabulary),
            ("target", target_vocabulary),
        ):
            vocabulary = list(getattr(teacher, f"{side}_tokenizer").vocabulary)
            if vocabulary != list(student):
                raise ValueError(
                    f"teachers[{i}] has another {side} vocabulary than the "
                    f"student ({len(vocabulary)} tokens against "
                    f"{len(student)}{_first_difference(vocabulary, student)}): "
                    "a student learns from teachers of the same tokenizers"
                )
        models.append(teacher.seq2seq)
    return models


def _first_difference(a: Sequence[str], b: Sequence[str]) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"; first difference at id {i}: {x!r} against {y!r}"
    return ""


def check_weight(weight: Any) -> float:
    """The distillation weight as a float in `(0, 1]` (0 would ignore the
    teachers)."""
    return check_float(
        "distillation_weight", weight, low=0.0, high=1.0, low_open=True
    )


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def teacher_distributions(
    teachers: Sequence[Any],
    corpus: Any,
    source: Any,
    target: Any,
    batch_size: int = 256,
) -> Tuple[np.ndarray, np.ndarray]:
    """The teachers' averaged next-token distributions on each pair.

    Args:
        teachers: `Seq2Seq` models (`check_teachers`), all over the same
            target vocabulary.
        corpus: An object with `pairs` (`(source, target)` strings), as
            `make_dataset` takes it.
        source, target: The framed tokenizers of the pairs.
        batch_size: Pairs per teacher call.

    Returns:
        `(flat, splits)`: `flat[splits[i]:splits[i + 1]]` is pair `i`'s
        `(T_i, V)` float16 distributions, one row per target token after
        `[START]` (the rows `MaskedLoss` scores), each row summing to 1.
    """
    from keras_attention.training.dataset import make_dataset

    sizes = {int(t.target_vocab_size) for t in teachers}
    if len(sizes) != 1:
        raise ValueError(
            "The teachers must share one target vocabulary. Received: "
            f"target_vocab_size {sorted(sizes)}"
        )
    rows = []
    lengths = []
    batches = make_dataset(corpus, source, target, batch_size)
    for inputs, target_out in batches:
        mean = 0.0
        for teacher in teachers:
            # Keras' compiled predict step (a Python loop of steps eagerly).
            logits = teacher.predict_on_batch(
                {k: np.asarray(v) for k, v in inputs.items()}
            )["logits"]
            mean = mean + _softmax(np.asarray(logits, np.float32))
        mean = mean / len(teachers)
        kept = np.asarray(target_out) != 0
        for i in range(mean.shape[0]):
            rows.append(mean[i][kept[i]].astype(np.float16))
            lengths.append(int(kept[i].sum()))
    splits = np.zeros(len(lengths) + 1, dtype=np.int64)
    splits[1:] = np.cumsum(lengths)
    flat = (
        np.concatenate(rows)
        if rows
        else np.zeros((0, sizes.pop()), np.float16)
    )
    return flat, splits


def dataset_options(
    teachers: Sequence[Any],
    corpus: Any,
    source: Any,
    target: Any,
    batch_size: int,
    weight: Any,
) -> dict:
    """`make_dataset`'s keyword arguments that distil `teachers` on `corpus`.

    Checks the weight (`check_weight`), then runs the teachers over the
    pairs once (`teacher_distributions`).

    Returns:
        `{"teacher": (flat, splits), "distillation_weight": weight}`.
    """
    weight = check_weight(weight)
    return {
        "teacher": teacher_distributions(
            teachers, corpus, source, target, batch_size
        ),
        "distillation_weight": weight,
    }
