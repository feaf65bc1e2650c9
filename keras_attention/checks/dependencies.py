"""Checks that an optional dependency imports, with what to install."""


def require_text_ops() -> None:
    """Imports tensorflow-text, which registers the tokenizers' ops that a
    translator's SavedModel runs.

    Raises:
        ImportError: if tensorflow-text is missing, saying what to install.
    """
    try:
        import tensorflow_text  # noqa: F401, registers its ops
    except ImportError as err:
        raise ImportError(
            "Loading a translator's SavedModel needs tensorflow-text (its "
            "tokenizers' ops): pip install tensorflow-text"
        ) from err
