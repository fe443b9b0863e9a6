"""The disguises the prompt-injection scan (evaluators/injection_scan.py) sees through, other than
spacing, leetspeak, ROT13 and mirror writing: Unicode normalisation (NFKC, format characters
such as zero-width spaces and bidi controls dropped), letters of other scripts that read as Latin
ones (Cyrillic, Greek, Armenian, Cherokee, Latin small capitals and script forms) and marks over
letters, and encodings: base64, base32, hex (escaped, spaced, run together, 0x arrays), character
codes, percent-encoding, \\u and \\U escapes, HTML entities, ASCII smuggled as Unicode tag
characters."""

from __future__ import annotations

import base64
import binascii
import html
import re
import unicodedata
import urllib.parse


def _latin_lookalikes() -> dict[int, str]:
    """Letters of other scripts that read as Latin ones: Cyrillic, Greek, Armenian, Cherokee (by hand, upper and
    lower case: folded before lower-casing, so Greek "Ν" is "N", not "ν" read as "v"), and the Latin letters
    NFKC leaves alone: small capitals (ɢ), script and dotless forms (ɡ, ı), by their Unicode names."""
    pairs = {
        # Cyrillic
        "а": "a", "в": "b", "е": "e", "і": "i", "ј": "j", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s",
        "ԁ": "d", "һ": "h", "ӏ": "l", "к": "k", "м": "m", "т": "t", "ԛ": "q", "ԝ": "w", "ү": "y", "ɡ": "g",
        "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T",
        "У": "Y", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S", "Ԁ": "D", "Ԍ": "G", "Ү": "Y", "Ӏ": "I", "Ԛ": "Q", "Ԝ": "W",
        # Greek
        "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "ϲ": "c",
        "ϳ": "j", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
        "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C", "Ϳ": "J",
        # Armenian
        "օ": "o", "ս": "u", "ո": "n", "հ": "h", "ց": "g", "զ": "q", "ա": "w", "Օ": "O", "Ս": "U", "Տ": "S",
        "Լ": "L", "Ո": "N",
        # Cherokee
        "Ꭺ": "A", "Ᏼ": "B", "Ꮯ": "C", "Ꭰ": "D", "Ꭼ": "E", "Ꮐ": "G", "Ꮋ": "H", "Ꭵ": "i", "Ꭻ": "J", "Ꮶ": "K",
        "Ꮮ": "L", "Ꮇ": "M", "Ꮲ": "P", "Ꮪ": "S", "Ꭲ": "T", "Ꮩ": "V", "Ꮃ": "W", "Ꮤ": "W", "Ꮓ": "Z", "Ꮢ": "R",
        "Ꮍ": "y", "Ꮒ": "h", "Ꮎ": "O",
    }
    # more Cyrillic lookalikes, and Greek final sigma (what NFKC makes of the lunate sigma ϲ)
    pairs.update({"ҽ": "e", "ҿ": "e", "ԑ": "e", "ς": "c"})
    out = {ord(k): v for k, v in pairs.items()}
    named = re.compile(r"LATIN (?:LETTER SMALL CAPITAL|SMALL LETTER (?:SCRIPT|DOTLESS|SMALL CAPITAL)|SMALL CAPITAL "
                       r"LETTER) ([A-Z])|LATIN SMALL LETTER (ALPHA|IOTA|UPSILON)|"
                       r"LATIN SMALL LETTER ([A-Z]) WITH(?:OUT)? (?:HANDLE|HOOK|DESCENDER|TAIL|BELT|CURL|LONG LEG|"
                       r"RETROFLEX HOOK|PALATAL HOOK|SHORT RIGHT LEG|LOW RIGHT RING)")
    for lo, hi in ((0x0180, 0x02B0), (0x1D00, 0x1DC0), (0xA720, 0xA800), (0xAB30, 0xAB70)):
        for cp in range(lo, hi):
            m = named.fullmatch(unicodedata.name(chr(cp), ""))
            if m:
                out[cp] = (m.group(1) or m.group(3) or {"ALPHA": "A", "IOTA": "I", "UPSILON": "U"}[m.group(2)]).lower()
    # Cherokee small letters (U+AB70-ABBF) look like their capitals, which are mapped above
    for cp in range(0xAB70, 0xABC0):
        cap = chr(cp).upper()
        if cap in pairs:
            out[cp] = pairs[cap].lower()
    return out


_FOLD = _latin_lookalikes()
_B64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_B32 = re.compile(r"\b(?:[A-Z2-7]{16,}|[a-z2-7]{16,})=*")
_HEX = re.compile(r"(?:\\x[0-9a-fA-F]{2}){6,}|(?:\b[0-9a-fA-F]{2}[ :]?){12,}|\b(?:[0-9a-fA-F]{2}){12,}\b|"
                  r"(?:\b0x[0-9a-fA-F]{2}\s*,\s*){6,}0x[0-9a-fA-F]{2}\b")
_BYTE = r"(?:3[2-9]|[4-9]\d|1[01]\d|12[0-6])"
_DECIMAL = re.compile(rf"\b(?:{_BYTE}\s*[, ]\s*){{8,}}{_BYTE}\b")  # {73, 103, 110, ...}: ASCII codes
_PCT = re.compile(r"%[0-9a-fA-F]{2}")
_UESC = re.compile(r"\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})|\\[ux]\{([0-9a-fA-F]{1,6})\}")
_TAGS = re.compile("[\U000E0020-\U000E007E]+")  # ASCII smuggled as invisible tag characters


def normal(text: str) -> str:
    """NFKC, format characters (zero-width, bidi, tags) dropped, lower case, one space between words."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return " ".join(text.replace("’", "'").replace("‘", "'").replace("_", " ").lower().split())


def folded(text: str) -> str:
    """`normal` with the marks over letters dropped and lookalikes of other scripts read as Latin letters."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    return normal("".join(ch for ch in text if unicodedata.category(ch) != "Mn").translate(_FOLD))


def _printable(b: bytes) -> str | None:
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    ok = sum(ch.isprintable() or ch.isspace() for ch in s)
    return s if s and ok / len(s) > 0.9 and sum(ch.isalpha() for ch in s) >= 8 else None


def _chr(m: re.Match[str]) -> str:
    code = int(next(g for g in m.groups() if g), 16)
    return chr(code) if code < 0x110000 else m.group(0)


def _base64(raw: str) -> list[tuple[str, str]]:
    out = []
    for tok in _B64.findall(raw):
        try:
            b = base64.b64decode(tok + "=" * (-len(tok) % 4), altchars=b"-_" if "-" in tok or "_" in tok else None)
        except (binascii.Error, ValueError):
            continue
        s = _printable(b)
        if s:
            out.append(("base64", s))
    for tok in _B32.findall(raw):
        body = tok.rstrip("=").upper()
        if len(body) % 8 in (1, 3, 6):  # no base32 ends so
            continue
        try:
            s = _printable(base64.b32decode(body + "=" * (-len(body) % 8)))
        except (binascii.Error, ValueError):
            continue
        if s:
            out.append(("base32", s))
    return out


def _codes(raw: str) -> list[tuple[str, str]]:
    out = []
    for tok in _HEX.findall(raw):
        try:
            s = _printable(bytes.fromhex(re.sub(r"\\x|0x|[ :,\s]", "", tok)))
        except ValueError:
            continue
        if s:
            out.append(("hex", s))
    for tok in _DECIMAL.findall(raw):
        s = _printable(bytes(int(n) for n in re.findall(r"\d+", tok)))
        if s:
            out.append(("character codes", s))
    return out


_B85 = re.compile(r"[!-~]{20,}")


def _base85(raw: str) -> list[tuple[str, str]]:
    """Base85 (RFC 1924, as Python's b85encode) and Adobe's ascii85 runs of 20 characters or more."""
    out = []
    for tok in _B85.findall(raw):
        tok = tok.strip("\"'`,;")
        for how, dec in (("ascii85", lambda t: base64.a85decode(t, adobe=t.startswith("<~"))),
                         ("base85", base64.b85decode)):
            try:
                s = _printable(dec(tok))
            except (ValueError, binascii.Error):
                continue
            if s:
                out.append((how, s))
                break
    return out


_MORSE = {".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g", "....": "h", "..": "i",
          ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n", "---": "o", ".--.": "p", "--.-": "q", ".-.": "r",
          "...": "s", "-": "t", "..-": "u", "...-": "v", ".--": "w", "-..-": "x", "-.--": "y", "--..": "z",
          "-----": "0", ".----": "1", "..---": "2", "...--": "3", "....-": "4", ".....": "5", "-....": "6",
          "--...": "7", "---..": "8", "----.": "9"}
_MORSE_RUN = re.compile(r"(?:[.\-·•_−]{1,6}(?: {1,3}| ?[/|] ?)){11,}[.\-·•_−]{1,6}")
_NATO = ("alfa alpha bravo charlie delta echo foxtrot golf hotel india juliet juliett kilo lima mike november oscar "
         "papa quebec romeo sierra tango uniform victor whiskey whisky xray x-ray yankee zulu").split()
_NATO_RUN = re.compile(r"(?i)\b(?:(?:" + "|".join(_NATO) + r")\b[\s,;|/-]{1,5}){7,}(?:" + "|".join(_NATO) + r")\b")


def _signals(raw: str) -> list[tuple[str, str]]:
    """Morse code (words apart by /, | or three spaces) and the NATO spelling alphabet (words apart by / or |)."""
    out = []
    for run in _MORSE_RUN.findall(raw):
        run = run.translate(str.maketrans("·•_−", "..--"))
        words = re.split(r" ?[/|] ?| {3}", run)
        text = " ".join("".join(_MORSE.get(c, "?") for c in w.split()) for w in words)
        if sum(ch.isalpha() for ch in text) >= 8 and text.count("?") * 10 < len(text):
            out.append(("Morse code", text))
    for run in _NATO_RUN.findall(raw):
        words = re.split(r"\s*[/|]\s*", run.strip())
        text = " ".join("".join(w[0] for w in re.findall(r"[A-Za-z-]+", word)) for word in words)
        out.append(("NATO alphabet", text.lower()))
    return out


def decoded(raw: str) -> list[tuple[str, str]]:
    """(encoding, text) of every run of `raw` that decodes to readable text."""
    out = _base64(raw) + _codes(raw) + _base85(raw) + _signals(raw)
    if len(_PCT.findall(raw)) >= 2:
        out.append(("percent-encoded", urllib.parse.unquote_plus(raw) if "+" in raw else urllib.parse.unquote(raw)))
    if len(_UESC.findall(raw)) >= 3:
        out.append(("\\u escapes", _UESC.sub(_chr, raw)))
    if "&#" in raw:
        out.append(("HTML entities", html.unescape(raw)))
    tags = "".join(chr(ord(c) - 0xE0000) for run in _TAGS.findall(raw) for c in run)
    if tags:
        out.append(("tag characters", tags))
    return out
