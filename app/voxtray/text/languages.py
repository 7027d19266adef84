"""The languages a recogniser can be set to: Whisper's codes, and `auto` (detect)."""

from __future__ import annotations

AUTO = "auto"
"""The language setting that asks a multilingual model to detect the language."""

ENGLISH = "en"

# Whisper's language codes, in its token order, with their English names.
WHISPER_LANGUAGES: dict[str, str] = {
    "en": "english", "zh": "chinese", "de": "german", "es": "spanish", "ru": "russian",
    "ko": "korean", "fr": "french", "ja": "japanese", "pt": "portuguese", "tr": "turkish",
    "pl": "polish", "ca": "catalan", "nl": "dutch", "ar": "arabic", "sv": "swedish",
    "it": "italian", "id": "indonesian", "hi": "hindi", "fi": "finnish", "vi": "vietnamese",
    "he": "hebrew", "uk": "ukrainian", "el": "greek", "ms": "malay", "cs": "czech",
    "ro": "romanian", "da": "danish", "hu": "hungarian", "ta": "tamil", "no": "norwegian",
    "th": "thai", "ur": "urdu", "hr": "croatian", "bg": "bulgarian", "lt": "lithuanian",
    "la": "latin", "mi": "maori", "ml": "malayalam", "cy": "welsh", "sk": "slovak",
    "te": "telugu", "fa": "persian", "lv": "latvian", "bn": "bengali", "sr": "serbian",
    "az": "azerbaijani", "sl": "slovenian", "kn": "kannada", "et": "estonian",
    "mk": "macedonian", "br": "breton", "eu": "basque", "is": "icelandic", "hy": "armenian",
    "ne": "nepali", "mn": "mongolian", "bs": "bosnian", "kk": "kazakh", "sq": "albanian",
    "sw": "swahili", "gl": "galician", "mr": "marathi", "pa": "punjabi", "si": "sinhala",
    "km": "khmer", "sn": "shona", "yo": "yoruba", "so": "somali", "af": "afrikaans",
    "oc": "occitan", "ka": "georgian", "be": "belarusian", "tg": "tajik", "sd": "sindhi",
    "gu": "gujarati", "am": "amharic", "yi": "yiddish", "lo": "lao", "uz": "uzbek",
    "fo": "faroese", "ht": "haitian creole", "ps": "pashto", "tk": "turkmen",
    "nn": "nynorsk", "mt": "maltese", "sa": "sanskrit", "lb": "luxembourgish",
    "my": "myanmar", "bo": "tibetan", "tl": "tagalog", "mg": "malagasy", "as": "assamese",
    "tt": "tatar", "haw": "hawaiian", "ln": "lingala", "ha": "hausa", "ba": "bashkir",
    "jw": "javanese", "su": "sundanese", "yue": "cantonese",
}  # fmt: skip

ALLOWED = (
    f"auto or a language code (one of Whisper's {len(WHISPER_LANGUAGES)}: en, de, fr, es, ...)"
)


def is_language_setting(value: str) -> bool:
    """`auto` or one of Whisper's language codes."""
    return value == AUTO or value in WHISPER_LANGUAGES


def language_codes() -> str:
    """Every valid setting, comma separated, for help texts and usage errors."""
    return ", ".join([AUTO, *WHISPER_LANGUAGES])


def main_language(spans: list[tuple[str | None, float]]) -> str | None:
    """The language spoken for the most seconds among (language, seconds) spans; None
    when no span has a language."""
    totals: dict[str, float] = {}
    for language, seconds in spans:
        if language:
            totals[language] = totals.get(language, 0.0) + seconds
    return max(totals, key=lambda code: totals[code]) if totals else None
