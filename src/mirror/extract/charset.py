"""Decoding a page without mojibake, and legacy Chinese bytes with no usable charset declaration:
GB18030 or Big5. The fetch decodes a document it hands the browser with `decode_html` too, so
that chromium reads the page as the extraction does (this module imports no trafilatura).

General detectors guess from byte statistics and, on short or mixed pages, pick a
Cyrillic or Western code page that happens to fit (a GBK page came out as ptcp154
with thousands of U+FFFD). A page in GBK/GB2312 or Big5 decodes cleanly in its own
charset and reads as the common Han characters of everyday text; in the other it
fails to decode or turns into rare characters. That check is cheap and sure.
"""

from __future__ import annotations

import re
from functools import cache

from .._util.text import decode

__all__ = ["common_share", "decode_html", "legacy_chinese"]

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-]+)""", re.I)
_WESTERN = {"iso-8859-1", "latin1", "latin-1", "l1", "windows-1252", "cp1252", "us-ascii", "ascii"}  # decode any bytes
# labels read with a superset's decoder, as the WHATWG Encoding Standard reads them
_WHATWG = {"gb2312": "gb18030", "gbk": "gb18030", "x-gbk": "gb18030", "big5": "big5hkscs", "x-euc-tw": "big5hkscs"}

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
MIN_HAN = 10  # fewer and there is nothing to judge by
MIN_COMMON = 0.85  # share of the Han characters that must be common ones


@cache
def _common_han() -> frozenset[str]:
    """The first-level (most frequent) characters of GB2312 (3,755 simplified) and
    Big5 (5,401 traditional): what everyday Chinese text is made of."""
    simplified = bytes(b for hi in range(0xB0, 0xD8) for lo in range(0xA1, 0xFF) for b in (hi, lo))
    traditional = bytes(b for hi in range(0xA4, 0xC7) for lo in [*range(0x40, 0x7F), *range(0xA1, 0xFF)] for b in (hi, lo))
    return frozenset(_HAN.findall(simplified.decode("gb2312", "ignore") + traditional.decode("big5", "ignore")))


def common_share(text: str) -> tuple[int, float]:
    """How many Han characters `text` has, and the share of them that are common."""
    han = _HAN.findall(text)
    if not han:
        return 0, 0.0
    common = _common_han()
    return len(han), sum(c in common for c in han) / len(han)


def legacy_chinese(body: bytes) -> str | None:
    """The text of `body` read as GB18030 or Big5, when one of them decodes it cleanly
    and gives common Han text; None when neither does."""
    best: tuple[float, str] | None = None
    for charset in ("gb18030", "big5", "cp950"):
        try:
            text = body.decode(charset)
        except UnicodeDecodeError:
            continue
        count, share = common_share(text)
        if count >= MIN_HAN and share >= MIN_COMMON and (best is None or share > best[0]):
            best = (share, text)
    return best[1] if best else None


def decode_html(body: bytes, content_type: str | None = None) -> str:
    """Decode without mojibake: UTF-8 if valid, else the declared charset, else detection.

    Headers and <meta charset> are often wrong (UTF-8 bytes labelled gb2312,
    GBK bytes labelled UTF-8, a server's default ISO-8859-1 on a GB2312 page), so a
    declaration only counts if it decodes the bytes cleanly, and a Western
    single-byte one (which decodes anything) yields to bytes that read as
    Chinese. GB2312 and GBK are read as their superset GB18030. A declared legacy charset
    whose bytes hold a few bad sequences (one in 2,000 bytes at most) is read with it, the bad
    bytes replaced, as browsers show the page: never by switching to another encoding.
    """
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    declared = []
    if content_type and "charset=" in content_type.lower():
        declared.append(content_type.lower().split("charset=")[-1].split(";")[0].strip(" \"'"))
    match = _META_CHARSET.search(body[:4096])
    if match:
        declared.append(match[1].decode("ascii", "ignore").lower())
    for charset in declared:
        charset = _WHATWG.get(charset, charset)
        if charset.replace("_", "-") in _WESTERN:
            continue
        text = decode(body, charset)
        if text is not None:
            return text
    chinese = legacy_chinese(body)
    if chinese is not None:
        return chinese
    for charset in declared:
        text = decode(body, charset)
        if text is not None:
            return text
    for charset in declared:  # a declared legacy charset with a few bad byte sequences: as browsers show it
        charset = _WHATWG.get(charset, charset)
        if charset.replace("_", "-") in _WESTERN or charset.replace("_", "-") in ("utf-8", "utf8"):
            continue
        text = decode(body, charset, "replace")
        if text is not None and text.count("\ufffd") <= max(8, len(body) // 2000):
            return text
    from trafilatura.utils import decode_file

    return decode_file(body)
