"""The requests of `keras_attention.web`: limits and checks.

`parse_translate_request` turns the body of a `POST /api/translate` into
its checked fields, or raises a `RequestError` with the HTTP status and a
message that says what was expected and what was received. Plain Python.
"""

import json

# The largest request body, in bytes.
MAX_REQUEST_BYTES = 16 * 1024
# The longest text, in characters.
MAX_TEXT_CHARS = 500
# The largest beam width and n-best size a request may ask for.
MAX_BEAM_WIDTH = 8
DEFAULT_BEAM_WIDTH = 4
DEFAULT_N_BEST = 3

_FIELDS = ("text", "beam_width", "n_best")


class RequestError(Exception):
    """A request the server refuses, with its HTTP status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _bounded_int(body: dict, name: str, default: int) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(
            400, f"`{name}` must be an integer. Received: {name}={value!r}"
        )
    if not 1 <= value <= MAX_BEAM_WIDTH:
        raise RequestError(
            400,
            f"`{name}` must be between 1 and {MAX_BEAM_WIDTH}. "
            f"Received: {name}={value}",
        )
    return value


def parse_translate_request(body: bytes) -> dict:
    """The checked fields of a `POST /api/translate` body.

    Args:
        body: The raw request body.

    Returns:
        A dict with `text` (stripped), `beam_width` and `n_best`.

    Raises:
        RequestError: 413 for a body over `MAX_REQUEST_BYTES`; 400 for a
            body that is not UTF-8 JSON, not an object, with unknown keys,
            a missing, empty, too long or binary `text`, or a `beam_width`
            or `n_best` that is not an integer in `[1, MAX_BEAM_WIDTH]`.
    """
    if len(body) > MAX_REQUEST_BYTES:
        raise RequestError(
            413, f"The request body is over {MAX_REQUEST_BYTES} bytes. "
            f"Received: {len(body)} bytes",
        )
    try:
        decoded = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise RequestError(
            400, f"The request body is not UTF-8 text ({err.reason} at "
            f"byte {err.start})",
        ) from None
    try:
        data = json.loads(decoded)
    except json.JSONDecodeError as err:
        raise RequestError(
            400, f"The request body is not JSON: {err.msg} at line "
            f"{err.lineno} column {err.colno}",
        ) from None
    if not isinstance(data, dict):
        raise RequestError(
            400, "The request body must be a JSON object like "
            f'{{"text": "..."}}. Received: {type(data).__name__}',
        )
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise RequestError(
            400, f"Unknown fields {unknown}; expected {list(_FIELDS)}",
        )
    text = data.get("text")
    if not isinstance(text, str):
        raise RequestError(
            400, "`text` must be a string. Received: "
            f"text={type(text).__name__}",
        )
    text = text.strip()
    if not text:
        raise RequestError(400, "`text` is empty: type something to translate")
    if len(text) > MAX_TEXT_CHARS:
        raise RequestError(
            400, f"`text` is over {MAX_TEXT_CHARS} characters. "
            f"Received: {len(text)} characters",
        )
    if any(c < " " and c not in "\t\n\r" for c in text) or any(
        "\ud800" <= c <= "\udfff" for c in text
    ):
        raise RequestError(
            400, "`text` holds control characters or unpaired surrogates "
            "(binary data?): send plain text",
        )
    return {
        "text": text,
        "beam_width": _bounded_int(data, "beam_width", DEFAULT_BEAM_WIDTH),
        "n_best": _bounded_int(data, "n_best", DEFAULT_N_BEST),
    }
