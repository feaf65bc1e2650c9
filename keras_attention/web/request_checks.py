"""The requests of `keras_attention.web`: limits and checks.

`parse_translate_request` turns the body of a `POST /api/translate` into
its checked fields, or raises a `RequestError` with the HTTP status and a
message that says what was expected and what was received.
"""

import json

from keras_attention.serving.limits import DEFAULT_BEAM_WIDTH
from keras_attention.serving.limits import MAX_BEAM_WIDTH

# The largest request body, in bytes.
MAX_REQUEST_BYTES = 16 * 1024
# The longest text, in characters.
MAX_TEXT_CHARS = 500
# The largest beam width and n-best size a request may ask for is the
# SavedModel's (`keras_attention.serving.MAX_BEAM_WIDTH`, imported above).
DEFAULT_N_BEST = 3
# The deepest nesting of `[` and `{` a body may hold (a request is one
# object of scalars: depth 1), checked before `json.loads`, whose recursion
# a body of 16,000 `[` would exhaust.
MAX_JSON_DEPTH = 8
# The most characters of one JSON number, checked before `json.loads`,
# which refuses integers of over 4,300 digits with a `ValueError`.
MAX_NUMBER_CHARS = 40

_FIELDS = ("text", "beam_width", "n_best")
_NUMBER_CHARS = frozenset("0123456789+-.eE")


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


def check_json_bounds(text: str) -> None:
    """Refuses JSON text nested too deep or with too long a number.

    One pass over the characters, strings skipped (with their escapes), so
    that `json.loads` is called only on text it parses in bounded time and
    stack.

    Args:
        text: The JSON text.

    Raises:
        RequestError: 400 for a nesting deeper than `MAX_JSON_DEPTH` or a
            number of more than `MAX_NUMBER_CHARS` characters.
    """
    depth = number = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char in _NUMBER_CHARS:
            number += 1
            if number > MAX_NUMBER_CHARS:
                raise RequestError(
                    400, f"The request body holds a number of over "
                    f"{MAX_NUMBER_CHARS} characters",
                )
            continue
        number = 0
        if char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise RequestError(
                    400, f"The request body is nested over {MAX_JSON_DEPTH} "
                    'levels deep; send one object like {"text": "..."}',
                )
        elif char in "]}":
            depth -= 1


def parse_translate_request(body: bytes) -> dict:
    """The checked fields of a `POST /api/translate` body.

    Args:
        body: The raw request body.

    Returns:
        A dict with `text` (stripped), `beam_width` and `n_best`.

    Raises:
        RequestError: 413 for a body over `MAX_REQUEST_BYTES`; 400 for a
            body that is not UTF-8 JSON, nested over `MAX_JSON_DEPTH`
            levels, with a number of over `MAX_NUMBER_CHARS` characters,
            not an object, with unknown keys,
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
    check_json_bounds(decoded)
    try:
        data = json.loads(decoded)
    except json.JSONDecodeError as err:
        raise RequestError(
            400, f"The request body is not JSON: {err.msg} at line "
            f"{err.lineno} column {err.colno}",
        ) from None
    except (ValueError, RecursionError) as err:  # a bound json.loads has
        raise RequestError(
            400, f"The request body is not JSON this server reads: "
            f"{str(err)[:200]}",
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
