"""The course in the reader's language: gettext catalogues (course/locale), numbers through Babel.

A message is written in English where it is defined, marked with ``N_`` so that ``pybabel extract``
finds it (babel.cfg, ``make catalogues``), and translated where it is shown, in the reader's
language: ``translator(language)(message)``. The compiled catalogues (``*.mo``) are built from the
committed ``*.po`` files by ``make`` and by the container build, never committed; an app started
without them (``streamlit run`` on a fresh clone) reads each ``*.po`` itself, once per process.
"""

from __future__ import annotations

import gettext
import io
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

from babel import Locale, UnknownLocaleError
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_decimal, get_decimal_symbol, get_group_symbol

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "messages"
ENGLISH = "en"
# Each language the course is written in: its code (as in ?lang=) and its name in itself.
LANGUAGES: dict[str, str] = {
    "en": "English",
    "de": "Deutsch",
    "fr": "Français",
    "es": "Español",
    "pt_BR": "Português (Brasil)",
    "zh_CN": "简体中文",
}


def N_(message: str) -> str:  # noqa: N802 (gettext's own name for "mark, translate later")
    """Mark a message for the catalogues; it is translated where it is shown."""
    return message


@cache
def translator(language: str) -> Callable[[str], str]:
    """The gettext of one language (English, unchanged, for English or a missing catalogue)."""
    if language == ENGLISH:
        return str
    if catalogue_compiled(language):
        return gettext.translation(DOMAIN, LOCALE_DIR, languages=[language], fallback=True).gettext
    source = catalogue_source(language)
    if not source.is_file():
        return str
    return gettext.GNUTranslations(compiled(source)).gettext


def catalogue_source(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def catalogue_compiled(language: str) -> bool:
    """A compiled catalogue there and no older than its source (a stale one would hide new messages)."""
    mo = LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.mo"
    source = catalogue_source(language)
    return mo.is_file() and (not source.is_file() or mo.stat().st_mtime >= source.stat().st_mtime)


def compiled(source: Path) -> io.BytesIO:
    """A ``*.po`` compiled in memory as ``pybabel compile`` writes it (fuzzy entries left out)."""
    with source.open("rb") as file:
        catalog = read_po(file)
    out = io.BytesIO()
    write_mo(out, catalog)
    out.seek(0)
    return out


def known(code: str | None) -> str | None:
    """A language code as written in a link or a header ('de', 'pt-br', 'zh_Hans_CN', 'fr-CA') ->
    the course's language for it, or None when the course is not written in it."""
    if not code:
        return None
    try:
        locale = Locale.parse(code.strip().replace("-", "_"))
    except (ValueError, TypeError, UnknownLocaleError):
        return None
    exact = f"{locale.language}_{locale.territory}" if locale.territory else locale.language
    if exact in LANGUAGES:
        return exact
    if locale.language == "zh":  # Simplified Chinese is the only Chinese: Hans, CN, SG
        return "zh_CN" if locale.script in (None, "Hans") and locale.territory not in ("TW", "HK", "MO") \
            else None
    if locale.language == "pt":
        return "pt_BR"
    return locale.language if locale.language in LANGUAGES else None


def from_accept_language(header: str | None) -> str | None:
    """The first language of a browser's Accept-Language header that the course is written in,
    by the header's own weights ('de-CH,de;q=0.9,en;q=0.8' -> 'de')."""
    ranked = []
    for position, part in enumerate((header or "").split(",")[:20]):  # a header is the browser's, but bounded
        code, _, params = part.strip().partition(";")
        weight = 1.0
        if params.strip().startswith("q="):
            try:
                weight = float(params.strip()[2:])
            except ValueError:
                continue
        ranked.append((-weight, position, code))
    for _, _, code in sorted(ranked):
        language = known(code)
        if language is not None:
            return language
    return None


def number(value: float, language: str, decimals: int = 2) -> str:
    """A number as the language writes it: 0.67 / 0,67; 1,048,576 / 1.048.576 / 1 048 576."""
    pattern = "#,##0" + ("." + "0" * decimals if decimals > 0 else "")
    return format_decimal(value, format=pattern, locale=language, decimal_quantization=True)


_MARK_BETWEEN_DIGITS = re.compile(r"(?<=\d)[.,](?=\d)")


@cache
def number_marks(language: str) -> tuple[str, str]:
    """The language's decimal mark and thousands separator: ('.', ',') in English, (',', '.') in German."""
    return get_decimal_symbol(language), get_group_symbol(language)


# "0.6652" in a formula; not a TeX length such as 0.5em or 1.5mu, whose decimal point TeX requires
_TEX_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)(?!\d*\s*(?:em|ex|mu|pt|pc|cm|mm|in|bp|dd|sp)\b)")
_TEX_GROUP = re.compile(r"(?<=\d)\{,\}(?=\d)")  # "1{,}048{,}576": braces keep TeX from spacing the comma


def localized_tex(latex: str, language: str) -> str:
    """A formula's numbers written the English way ('0.6652', '1{,}048{,}576') written the language's
    way ('0{,}6652', '1.048.576'; a space-like separator becomes TeX's thin space)."""
    decimal, group = number_marks(language)
    if (decimal, group) == (".", ","):
        return latex

    def tex(mark: str) -> str:
        return "{,}" if mark == "," else "." if mark == "." else r"\,"

    placeholder = "\x00"
    grouped = _TEX_GROUP.sub(placeholder, latex)
    return _TEX_DECIMAL.sub(lambda _: tex(decimal), grouped).replace(placeholder, tex(group))


def localized_number_text(text: str, language: str) -> str:
    """Numbers written the English way inside ``text`` ('0.67', '1,048,576', '2.1e-9') written the
    language's way ('0,67', '1.048.576', '2,1e-9'); the rest of the text is left as it is."""
    decimal, group = number_marks(language)
    if (decimal, group) == (".", ","):
        return text
    return _MARK_BETWEEN_DIGITS.sub(lambda mark: decimal if mark[0] == "." else group, text)
