"""The NMT example's lexical alignment head against a numpy reference."""

import numpy as np
import pytest

from keras_attention.seq2seq import layers as alignment_head


def numpy_lexical(weights, embedded, kernel, bias, predicted, mask, uniform):
    """Mixture NLL and posterior, written out with numpy."""
    logits = embedded @ kernel + bias  # (B, S, V)
    logits = logits - logits.max(-1, keepdims=True)
    table = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    batch, steps = predicted.shape
    nll = np.zeros((batch, steps))
    posterior = np.zeros(weights.shape)
    for b in range(batch):
        count = mask[b].sum()
        for t in range(steps):
            prior = (1 - uniform) * weights[b, t] + uniform / count
            joint = np.where(mask[b], prior * table[b, :, predicted[b, t]], 0)
            nll[b, t] = -np.log(joint.sum())
            posterior[b, t] = joint / joint.sum()
    return nll, posterior


def _inputs(seed, batch=2, steps=3, source=4, dim=5):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, source), bool)
    mask[1, -1] = False  # padding
    mask[0, 1] = False  # an unattended token (e.g. punctuation)
    scores = rng.normal(size=(batch, steps, source))
    scores = np.where(mask[:, None, :], scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    embedded = rng.normal(size=(batch, source, dim)).astype("float32")
    predicted = rng.integers(0, 7, size=(batch, steps)).astype("int32")
    return weights.astype("float32"), embedded, predicted, mask


@pytest.mark.parametrize("uniform", [0.0, 0.5, 1.0])
def test_lexical_alignment_matches_numpy(uniform):
    weights, embedded, predicted, mask = _inputs(0)
    layer = alignment_head.LexicalAlignment(7, uniform=uniform)
    nll, posterior = layer(weights, embedded, predicted, mask)
    kernel, bias = (np.asarray(v) for v in layer.table.weights)
    want_nll, want_posterior = numpy_lexical(
        weights, embedded, kernel, bias, predicted, mask, uniform
    )
    np.testing.assert_allclose(np.asarray(nll), want_nll, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        np.asarray(posterior), want_posterior, rtol=1e-5, atol=1e-6
    )
    assert np.all(np.asarray(posterior)[~np.broadcast_to(
        mask[:, None, :], posterior.shape)] == 0)


def test_masked_positions_never_influence_the_head():
    weights, embedded, predicted, mask = _inputs(1)
    layer = alignment_head.LexicalAlignment(7)
    nll, posterior = layer(weights, embedded, predicted, mask)
    changed = embedded.copy()
    changed[~mask] = 1e4  # huge values at masked positions
    nll2, posterior2 = layer(weights, changed, predicted, mask)
    np.testing.assert_allclose(np.asarray(nll2), np.asarray(nll), rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(posterior2), np.asarray(posterior), rtol=1e-6
    )
    assert np.isfinite(np.asarray(nll2)).all()


def test_lexical_alignment_config_and_bad_uniform():
    layer = alignment_head.LexicalAlignment(9, uniform=0.25, name="lex")
    again = alignment_head.LexicalAlignment.from_config(layer.get_config())
    assert (again.vocab_size, again.uniform, again.name) == (9, 0.25, "lex")
    with pytest.raises(ValueError, match="uniform=1.5"):
        alignment_head.LexicalAlignment(9, uniform=1.5)
