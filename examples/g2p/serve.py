"""`python -m examples.g2p serve`: a local web page for a trained model.

    python -m examples.g2p serve --model runs/g2p-demo

Type a word, see its pronunciations (greedy, beam search, n-best), the
attention of each phone over the letters and the letter-phone links
(`keras_attention.web`). A run without an export is exported to a
temporary directory first.
"""


def serve(model, port):
    from examples.g2p import train as train_lib
    from keras_attention import web

    web.serve_model(
        model, train_lib.export_run, port=port, page_options=web.G2P_PAGE
    )
