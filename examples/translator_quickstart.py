"""Train a translator on your own sentence pairs, in one file.

Toy French-English pairs (word for word): `Translator.from_texts` learns
the vocabularies and builds the model, `fit` trains it, `translate`
decodes greedily and with beam search, `align` links the words of a pair,
`export` writes the string-to-string SavedModel that plain TensorFlow
serves, and `save` one `.keras` file that `keras.models.load_model` reads.
Under a minute on 2 CPU cores; writes into `runs/translator/`.

    python examples/translator_quickstart.py
"""

import random

import keras
import tensorflow as tf

from keras_attention.seq2seq import Translator

words = dict(le="the", un="a", petit="small", chat="cat", chien="dog", noir="black")
keras.utils.set_random_seed(0)  # the toy data and the weights
sources = [" ".join(random.sample(list(words), random.randint(2, 4))) for _ in range(96)]
targets = [" ".join(words[w] for w in s.split()) for s in sources]

translator = Translator.from_texts(sources, targets, units=32,
                                   attention_values="embedding")
translator.compile(optimizer=keras.optimizers.Adam(0.02))
translator.fit(sources, targets, batch_size=16, epochs=15, verbose=0)
print(translator.translate(["le petit chat noir", "un chien"]))
print(translator.translate(["le petit chat noir"], strategy="beam", beam_width=4))
print(translator.align(["le chat noir"], ["the cat black"]))

translator.export("runs/translator/export")
served = tf.saved_model.load("runs/translator/export").signatures["serving_default"]
print(served(tf.constant(["un petit chien noir"]))["translation"].numpy())
translator.save("runs/translator/model.keras")
print(keras.models.load_model("runs/translator/model.keras").translate(["un chat"]))
