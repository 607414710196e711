"""Legacy Chinese bytes with no usable charset declaration: GB18030 or Big5.

General detectors guess from byte statistics and, on short or mixed pages, pick a
Cyrillic or Western code page that happens to fit (a GBK page came out as ptcp154
with thousands of U+FFFD). A page in GBK/GB2312 or Big5 decodes cleanly in its own
charset and reads as the common Han characters of everyday text; in the other it
fails to decode or turns into rare characters. That check is cheap and sure.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["legacy_chinese"]

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
