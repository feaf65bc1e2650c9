"""The embedded dates data of the NMT example, with true word alignments.

Human-readable dates in several languages (CLDR locale data through
`babel`) translated to English, generated deterministically from a seed:
French "vendredi 20 octobre 1933", German "Freitag, 20. Oktober 1933",
Turkish "20 Ekim 1933 Cuma", all to "Friday, October 20, 1933". Each date
is formatted field by field, so the field (weekday, day, month, year) of
every word on both sides is known, and with it the word alignment. No
download.
"""

import datetime
import random

from examples.nmt.corpus import Corpus
from examples.nmt.corpus import pretokenize

# Languages of the embedded dates data (CLDR locale codes). Their date
# patterns put the fields in different orders.
DATE_LANGUAGES = ("fr", "de", "es", "it", "pt", "nl", "tr")
# CLDR date format lengths used: "full" has the weekday, "long" does not.
DATE_FORMATS = ("full", "long")
DATE_FIRST_YEAR = 1900
DATE_LAST_YEAR = 2099
DATE_TARGET_LOCALE = "en"
# Default number of generated pairs.
NUM_DATES = 20000
# Names of the date fields, by CLDR pattern character.
FIELD_NAMES = {
    "E": "weekday",
    "c": "weekday",
    "d": "day",
    "M": "month",
    "L": "month",
    "y": "year",
}
FIELDS = ("weekday", "day", "month", "year")
# The months of the English targets, in calendar order.
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July",
    "August", "September", "October", "November", "December",
)



def _format_fields(date, locale, length):
    """Formats `date` and returns `(text, [(start, end, field), ...])`.

    The string is built field by field from the CLDR pattern, so the
    character span of each field (weekday `E`, day `d`, month `M`, year `y`)
    is known; literal characters get the field `None`.
    """
    from babel import dates as babel_dates

    pattern = babel_dates.get_date_format(length, locale=locale).pattern
    fmt = babel_dates.DateTimeFormat(date, locale=locale)
    text, spans = "", []
    for kind, value in babel_dates.tokenize_pattern(pattern):
        if kind == "field":
            char, num = value
            piece = fmt[char * num]
            field = char
        else:
            piece, field = value, None
        spans.append((len(text), len(text) + len(piece), field))
        text += piece
    expected = babel_dates.format_date(date, length, locale=locale)
    if text != expected:  # pragma: no cover - guards against babel changes
        raise RuntimeError(
            f"Field-by-field formatting gave {text!r}, babel gives {expected!r}"
        )
    return text, spans


def _word_fields(text, spans, lower_case):
    """The field of each pre-tokenized word of `text`."""
    fields = []
    for start, end, field in spans:
        piece_words = pretokenize(text[start:end], lower_case)
        fields.extend([field] * len(piece_words))
    # Splitting span by span equals splitting the whole text only if no word
    # crosses a span boundary; check it.
    if len(fields) != len(pretokenize(text, lower_case)):  # pragma: no cover
        raise RuntimeError(f"A word crosses a field boundary in {text!r}")
    return fields


def _date_example(date, locale, length):
    source, source_spans = _format_fields(date, locale, length)
    target, target_spans = _format_fields(date, DATE_TARGET_LOCALE, length)
    source_fields = _word_fields(source, source_spans, lower_case=True)
    target_fields = _word_fields(target, target_spans, lower_case=False)
    alignment = []
    for field in target_fields:
        if field is None:
            alignment.append(())
        else:
            alignment.append(
                tuple(i for i, f in enumerate(source_fields) if f == field)
            )
    names = tuple(FIELD_NAMES.get(f) for f in target_fields)
    return source, target, alignment, names


def date_pair(date, locale, length="full"):
    """One dates example: `(source, target, alignment)`.

    Args:
        date: `datetime.date`.
        locale: Source CLDR locale, e.g. `"fr"`.
        length: `"full"` (with the weekday) or `"long"`.

    Returns:
        `source` (e.g. `"vendredi 20 octobre 1933"`), `target` (English,
        `"Friday, October 20, 1933"`) and `alignment`: for each word of
        `pretokenize(target, lower_case=False)`, the tuple of indices of the
        words of `pretokenize(source)` it translates (empty for punctuation
        and other words with no counterpart).
    """
    source, target, alignment, _ = _date_example(date, locale, length)
    return source, target, alignment


def generate_dates(
    num_examples,
    seed=0,
    languages=DATE_LANGUAGES,
    formats=DATE_FORMATS,
    first_year=DATE_FIRST_YEAR,
    last_year=DATE_LAST_YEAR,
):
    """Generates the embedded dates data set, deterministically.

    Each example is a random date between `first_year` and `last_year` in a
    random language of `languages` and a random format of `formats`,
    translated to English. The same arguments always give the same data.

    Args:
        num_examples: Number of pairs.
        seed: Seed of the generator. Defaults to `0`.
        languages: Source locales. Defaults to `DATE_LANGUAGES`.
        formats: CLDR format lengths. Defaults to `("full", "long")`.
        first_year: First year. Defaults to `1900`.
        last_year: Last year. Defaults to `2099`.

    Returns:
        A `Corpus` with `alignments`, `languages` and `fields` (for each
        target word, `"weekday"`, `"day"`, `"month"`, `"year"` or `None`)
        filled in.
    """
    rng = random.Random(seed)
    first = datetime.date(first_year, 1, 1).toordinal()
    last = datetime.date(last_year, 12, 31).toordinal()
    pairs, alignments, langs, fields = [], [], [], []
    for _ in range(num_examples):
        date = datetime.date.fromordinal(rng.randint(first, last))
        locale = rng.choice(languages)
        length = rng.choice(formats)
        source, target, alignment, names = _date_example(date, locale, length)
        pairs.append((source, target))
        alignments.append(alignment)
        langs.append(locale)
        fields.append(names)
    return Corpus(
        pairs=pairs, alignments=alignments, languages=langs, fields=fields
    )
