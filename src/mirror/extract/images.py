"""Which picture an `<img>` shows: the one URL a browser with a wide window would load.

Pages rarely say it in `src` alone. Lazy loaders keep the real image in `data-src`,
`data-actualsrc` (zhihu), `data-original` or `data-lazy-src` and a placeholder (a `data:`
GIF or SVG spacer) in `src`; responsive images offer several widths in `srcset` (or
`data-srcset`) and, inside `<picture>`, several formats in `<source>` elements. The
extraction (`markdown`) and the styled snapshot (`plugin.views`) ask the same question,
so an article's image and its snapshot's are the same archived file.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..urls import web_url

__all__ = [
    "LAZY_ATTRIBUTES",
    "LAZY_SRCSETS",
    "SrcsetCandidate",
    "TARGET_WIDTH",
    "attribute_image",
    "document_base",
    "image_source",
    "in_noscript",
    "is_decoration",
    "is_fallback_copy",
    "parse_srcset",
    "usable",
]

# Where lazy loaders keep the real image, most specific first: zhihu sets both
# data-actualsrc (the picture shown) and data-original (its full-size original).
LAZY_ATTRIBUTES = ("data-actualsrc", "data-src", "data-lazy-src", "data-original", "data-lazyload")
LAZY_SRCSETS = ("data-srcset", "data-lazy-srcset")
TARGET_WIDTH = 1400  # px: a 700 px reading column on a 2x screen, as Medium's own `sizes` ask
_MAX_DENSITY = 2.0
_VIEWPORT = 1280  # px: the window `media` conditions of <source> are judged against
# formats Chromium cannot show (a <source> of these is passed over, as browsers do)
_UNSHOWABLE = frozenset({"image/jxl", "image/heic", "image/heif", "image/jp2", "image/jpx", "image/vnd.ms-photo"})
_DESCRIPTOR = re.compile(r"^(\d+(?:\.\d+)?)([wx])$", re.I)
_MEDIA_FEATURE = re.compile(r"\(\s*(min|max)-width\s*:\s*(\d+(?:\.\d+)?)\s*(px|em|rem)?\s*\)", re.I)


def usable(value: str | None) -> str | None:
    """`value` stripped if it can name a fetchable picture: not empty, not inline `data:`
    (placeholders and spacers), not a script, a bare fragment or a JSON value."""
    value = (value or "").strip()
    if not value or value[0] in "#{[" or '"' in value:  # a fragment, or JSON (msn's data-src)
        return None
    scheme = value.split(":", 1)[0].lower() if ":" in value.split("/", 1)[0] else ""
    return None if scheme in ("data", "javascript", "about", "blob", "vbscript") else value


class SrcsetCandidate(NamedTuple):
    url: str
    number: float | None  # its width or density (None: 1x)
    unit: str | None  # "w" or "x"


def parse_srcset(value: str) -> list[SrcsetCandidate]:
    """(url, number, unit) of each candidate of a `srcset`, as the HTML standard splits it:
    a URL runs to the first whitespace (commas inside it stay), descriptors to the next comma.
    `unit` is "w" or "x"; a candidate without a descriptor is (url, None, None), i.e. 1x."""
    candidates = []
    position, length = 0, len(value)
    while position < length:
        while position < length and (value[position].isspace() or value[position] == ","):
            position += 1
        start = position
        while position < length and not value[position].isspace():
            position += 1
        url = value[start:position]
        if not url:
            break
        descriptor = ""
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            end = value.find(",", position)
            end = length if end < 0 else end
            descriptor, position = value[position:end].strip(), end + 1
        number, unit = None, None
        for token in descriptor.split():
            match = _DESCRIPTOR.match(token)
            if match:
                number, unit = float(match[1]), match[2].lower()
        if usable(url):
            candidates.append(SrcsetCandidate(url, number, unit))
    return candidates


def _pick(candidates: list[SrcsetCandidate]) -> str | None:
    """One sensible candidate: the widest no wider than TARGET_WIDTH (else the narrowest);
    for densities, the highest up to 2x (else the lowest)."""
    if not candidates:
        return None
    widths = [(number, url) for url, number, unit in candidates if unit == "w" and number]
    if widths:
        fitting = [c for c in widths if c[0] <= TARGET_WIDTH]
        return max(fitting)[1] if fitting else min(widths)[1]
    densities = [(number or 1.0, url) for url, number, unit in candidates if unit != "w"]
    fitting = [c for c in densities if c[0] <= _MAX_DENSITY]
    return (max(fitting, key=lambda c: c[0]) if fitting else min(densities, key=lambda c: c[0]))[1]


def _media_matches(media: str | None) -> bool:
    """Whether a `<source media>` holds in a wide window: width conditions are judged, print
    and dark-scheme ones fail, anything else is taken to hold."""
    if not media or not media.strip():
        return True
    for query in media.lower().split(","):
        if "print" in query or "prefers-color-scheme: dark" in query.replace("  ", " "):
            continue
        holds = True
        for kind, number, unit in _MEDIA_FEATURE.findall(query):
            width = float(number) * (16 if unit in ("em", "rem") else 1)
            holds = holds and (_VIEWPORT >= width if kind == "min" else _VIEWPORT <= width)
        if query.strip().startswith("not "):
            holds = not holds
        if holds:
            return True
    return False


def _from_srcset(element) -> str | None:
    for attribute in (*LAZY_SRCSETS, "srcset"):
        picked = _pick(parse_srcset(element.get(attribute) or ""))
        if picked:
            return picked
    return None


def _picture_source(img) -> str | None:
    """The first `<source>` of the `<picture>` around `img` that the browser would take.
    (lxml's HTML parser does not know `<source>` is empty: it may hold the `<img>`.)"""
    picture = next((a for a in img.iterancestors() if a.tag == "picture"), None)
    if picture is None:
        return None
    for source in picture.iter("source"):
        kind = (source.get("type") or "").split(";")[0].strip().lower()
        if kind in _UNSHOWABLE or (kind and not kind.startswith("image/")) or not _media_matches(source.get("media")):
            continue
        picked = _from_srcset(source) or usable(source.get("data-src")) or usable(source.get("src"))
        if picked:
            return picked
    return None


def image_source(img) -> str | None:
    """The URL (as written, maybe relative) of the picture `img` shows, or None for an
    image with nothing fetchable: its `<picture>`'s chosen `<source>`, then its own
    srcset, then the lazy loaders' attributes; then, for an image without a usable `src`
    or one its class calls lazy, any attribute holding an image's URL (`attribute_image`);
    then `src`."""
    src = usable(img.get("src"))
    return (
        _picture_source(img)
        or _from_srcset(img)
        or next((value for value in map(usable, map(img.get, LAZY_ATTRIBUTES)) if value), None)
        or (attribute_image(img) if src is None or "lazy" in (img.get("class") or "").lower() else None)
        or src
    )


def attribute_image(element) -> str | None:
    """An image URL (or srcset) in any attribute of `element` other than src, srcset and alt,
    as Readability finds lazy images: `data-hi-res`, a `<figure itemid>` whose picture a
    script inserts, ..."""
    for name, value in element.attrib.items():
        value = value.strip()
        if name in ("src", "srcset", "alt") or len(value) > _MAX_ATTRIBUTE or not _IMAGE_NAME.search(value):
            continue
        if any(c.isspace() for c in value):  # candidates with descriptors
            picked = _pick([c for c in parse_srcset(value) if c[2] and _IMAGE_NAME.search(c[0])])
        else:
            picked = usable(value) if _IMAGE_URL.search(value) else None
        if picked:
            return picked
    return None


_MAX_ATTRIBUTE = 16_384  # an image URL (or a srcset of them) is never longer
_IMAGE_NAME = re.compile(r"\.(?:jpe?g|png|webp|avif|gif)", re.I)
_IMAGE_URL = re.compile(r"\.(?:jpe?g|png|webp|avif|gif)(?:[?#]|$)", re.I)  # the name's end, or its query's start


def is_decoration(img, src: str | None = None) -> bool:
    """Not a picture of the article: a tracking pixel (every size it gives 1 or 0, or a
    counter's or share button's address), a rule or a bullet (1 or 2 pixels one way, or at
    most 16 both ways, as its width and height say), an image the page hides (`display: none` or
    `hidden` on it or around it), or one whose class or id calls it an avatar, a logo, an
    icon, an emoji or a QR code (or whose parent's calls it an avatar or a logo: `<a
    class="logo">`, `<span class="avatar">`), or that sits in an ad's or a menu item's box
    (by the class or id of one of its four nearest ancestors), or
    whose file name (`src`, its chosen source) says it is a pixel, a spacer, an icon, a
    button or a badge."""
    sizes = [re.match(r"\s*0*(\d{1,6})\s*(?:px)?\s*$", img.get(attribute) or "") for attribute in ("width", "height")]
    if any(sizes) and all(int(size[1]) <= 1 for size in sizes if size):  # 570x0 is a lazy image, not a pixel
        return True
    given = [int(size[1]) for size in sizes if size]
    if len(given) == 2 and (min(given) in (1, 2) or max(given) <= _BULLET_PX):  # a rule (760x1) or a bullet (5x5): a layout's, not a picture
        return True
    if _DECORATION.search(" ".join(filter(None, (img.get("class"), img.get("id"))))):
        return True
    if src and _DECORATION_URL.search(src[:2048]):
        return True
    parent = img.getparent()
    if parent is not None and _WRAPPER_DECORATION.search(" ".join(filter(None, (parent.get("class"), parent.get("id"))))):
        return True
    for element in [*img.iterancestors()][:4]:  # an ad's, a menu's or a share bar's box
        if _BOX_DECORATION.search(" ".join(filter(None, (element.get("class"), element.get("id"))))):
            return True
    for element in (img, *img.iterancestors()):
        if element.get("hidden") is not None or _HIDDEN.search(element.get("style") or ""):
            return True
    return False


_BULLET_PX = 16  # an image this small both ways is a bullet, an arrow or an icon
_DECORATION = re.compile(r"avatar|logo|icon|emoji|emoticon|qr_?code|gravatar|sprite|spinner", re.I)
# counters, share buttons and badges by their address: hosts that serve nothing else, and file names
_DECORATION_URL = re.compile(
    r"^(?:https?:)?//(?:[^/]*\.)?(?:gravatar\.com|addthis\.com|sharethis\.com|printfriendly\.com|doubleclick\.net"
    r"|feedburner\.com|google-analytics\.com|scorecardresearch\.com|quantserve\.com|facebook\.com/tr|pixel\.[^/]+)"
    r"|(?:^|/)[^/?#]*(?:^|[-_./])(?:1x1|1px|pixel|spacer|blank|transparent|icon\d*|icons?_[^/?#]*|button|btn|badge|share|sprite)"
    r"(?:[-_.\d][^/?#]*)?(?:[?#]|$)",
    re.I,
)
_BOX_DECORATION = re.compile(r"advert|sponsor|adsense|(?:^|[\s_-])ads?(?:$|[\s_-])|menuitem|menu-item", re.I)
_WRAPPER_DECORATION = re.compile(r"avatar|logo|qr_?code", re.I)
_HIDDEN = re.compile(r"display\s*:\s*none", re.I)


def document_base(tree, url: str) -> str:
    """What a page's relative references resolve against: its first `<base href>` (when it
    is a web URL), else the page's own URL, as browsers resolve them."""
    base = tree.find(".//base[@href]")
    return url if base is None else web_url(base.get("href"), url) or url  # (one a browser cannot use: the page's URL too)


def in_noscript(element) -> bool:
    return next(element.iterancestors("noscript"), None) is not None


def is_fallback_copy(img, seen: dict | None = None) -> bool:
    """An image inside `<noscript>` is the scripted image's copy when the element around the
    `<noscript>` (its `<figure>`, else its parent) shows another image outside one: zhihu's
    figures hold both. A browser running scripts shows only the other one. `seen` keeps the
    answer per container for the rest of the page (a thousand copies in one container are
    looked at once)."""
    noscript = next(img.iterancestors("noscript"), None)
    if noscript is None:
        return False
    container = next(noscript.iterancestors("figure"), None)
    if container is None:
        container = noscript.getparent()
    if container is None:
        return False
    seen = {} if seen is None else seen
    if container not in seen:
        seen[container] = any(not in_noscript(other) and image_source(other) for other in container.iter("img"))
    return seen[container]
