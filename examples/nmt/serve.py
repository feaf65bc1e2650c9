"""`python -m examples.nmt serve`: a local web page for a trained model.

    python -m examples.nmt serve --model runs/demo          # a run
    python -m examples.nmt serve --model runs/demo/export   # a SavedModel

Type a sentence, see its translations (greedy, beam search, n-best), the
attention heatmap and the word links (`keras_attention.web`). A
run without an export is exported to a temporary directory first.
"""

from keras_attention import web
from keras_attention.translator import export_run


def serve(model, port):
    web.serve_model(
        model, export_run, port=port, page_options=web.NMT_PAGE
    )
