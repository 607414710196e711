"""Article images: mirror's stored article beside trafilatura's `extract(include_images=True)`,
against the images the article body holds.

The truth, per corpus:

- sitdown-zh (zhihu, juejin, CSDN, WeChat article bodies, each put in a page's `<body>`): the
  images of the same-named `.md`;
- readability: the images of `expected.html` (what Mozilla Readability keeps);
- gne-zh WeChat pages: every image inside `#js_content`, WeChat's article body.

Formula images (zhihu's `eeimg`, Wikipedia's math renders) count on neither side: sitdown-zh's
truth writes formulas as TeX and trafilatura recovers Wikipedia's from its MathML, while
Readability keeps them as images; whether a formula is shown as an image or as TeX is not what
this measures. Author photos (an image whose class or id, or a near ancestor's, names an avatar,
an author or a byline) are not the article's images either: the issue keeps them out, Readability
keeps some; they leave the truth and count against precision where shown. Dragnet's ground truth
is text only, so it has no image measure (bench/quality.py scores its text).

An image is one picture, however many URLs name it: the page's `<figure>` (else its
`<picture>`, else the `<img>`) is the picture, and every URL of its `src`, `srcset`, `<source>`,
lazy `data-*` attributes and `<noscript>` copy names it. An output image is right when it names
a picture of the truth not named before (a second copy of one picture counts against precision);
recall is the share of the truth's pictures named. Both are summed over a corpus's pages
(pages with no image weigh nothing, an image shown on a page whose truth has none counts
against precision).

    python bench/images.py [--corpus DIR] [--record]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urldefrag, urljoin

from _measure import report
from quality import CORPUS

_URL_LIKE = re.compile(r"(https?:)?//|/|\.\.?/|[\w\-./%]+\.(jpe?g|png|gif|webp|avif|svg|bmp)\b", re.I)  # not JSON, not words
READABILITY_URL = "http://fakehost/test/page.html"  # the URL Readability's test pages were extracted at


@dataclass
class Tally:
    pages: int = 0
    truth: int = 0
    found: int = 0  # truth pictures named
    shown: int = 0  # images in the output
    right: int = 0  # output images naming a truth picture for the first time
    missed: list[str] = field(default_factory=list)
    authors: int = 0  # author photos of the truth, left out of it

    def add(self, truth: list[set], output: list[set]) -> tuple[int, int]:
        matched: set[int] = set()
        right = 0
        for names in output:
            hit = next((i for i, t in enumerate(truth) if i not in matched and t & names), None)
            if hit is not None:
                matched.add(hit)
                right += 1
        self.pages += 1
        self.truth += len(truth)
        self.found += len(matched)
        self.shown += len(output)
        self.right += right
        return len(matched), right

    @property
    def recall(self) -> float:
        return self.found / self.truth if self.truth else 1.0

    @property
    def precision(self) -> float:
        return self.right / self.shown if self.shown else 1.0


def _resolve(url: str, base: str) -> str | None:
    from mirror.extract.images import usable

    url = usable(url)
    if url is None or any(c.isspace() for c in url):
        return None
    absolute = urldefrag(urljoin(base, url)).url
    return absolute if absolute.startswith(("http://", "https://")) else None


def _urls_of(element, base: str) -> set[str]:
    """Every URL an <img> or <source> names, in any of its attributes."""
    from mirror.extract.images import parse_srcset

    urls = set()
    for name, value in element.attrib.items():
        if name.endswith("srcset"):
            urls.update(_resolve(url, base) for url, _, _ in parse_srcset(value))
        elif name in ("src", "href") or (name.startswith("data-") and _URL_LIKE.match(value.strip())):
            urls.add(_resolve(value, base))
    urls.discard(None)
    return urls


_FORMULA = re.compile(r"equation\?tex=|/math/render/|latex\.codecogs\.com|mwe-math|eeimg", re.I)


def formulas(tree, base: str) -> set[str]:
    """The URLs of the page's formula images (zhihu's `eeimg`, Wikipedia's math renders)."""
    found = set()
    for img in tree.iter("img"):
        if img.get("eeimg") is not None or _FORMULA.search(" ".join((img.get("class") or "", img.get("src") or ""))):
            found |= _urls_of(img, base)
    return found


_AUTHOR = re.compile(r"avatar|gravatar|author|byline|contributor", re.I)


def author_photos(tree, base: str) -> set[str]:
    """The URLs of author photos: an <img> whose class or id, or one of its three nearest
    ancestors', names an avatar, an author or a byline. The issue keeps them out of the
    article; Readability keeps some."""
    found = set()
    for img in tree.iter("img"):
        for element in [img, *img.iterancestors()][:4]:
            if _AUTHOR.search(" ".join(filter(None, (element.get("class"), element.get("id"))))):
                found |= _urls_of(img, base)
                break
    return found


def pictures(tree, base: str) -> dict[str, set[int]]:
    """URL -> the pictures of the page (by number) that it names."""
    names: dict[str, set[int]] = {}
    keys: dict = {}  # element -> number (the elements themselves: an id() of an lxml proxy is reused)
    for img in tree.iter("img"):
        figure = next((f for f in reversed(list(img.iterancestors("figure"))) if f.find(".//table") is None), None)
        picture = next(img.iterancestors("picture"), None)
        key = figure if figure is not None else picture if picture is not None else img
        number = keys.setdefault(key, len(keys))
        elements = [img, *(picture.iter("source") if picture is not None else ())]
        for element in elements:
            for url in _urls_of(element, base):
                names.setdefault(url, set()).add(number)
    return names


def named(urls: list[str], names: dict[str, set[int]]) -> list[set]:
    """Each URL as the set of pictures it names (itself, if no picture of the page has it)."""
    return [names.get(url) or {url} for url in urls]


def markdown_images(markdown: str) -> list[str]:
    """The image URLs of a Markdown text, in order, repeats kept."""
    from markdown_it import MarkdownIt

    found = []

    def walk(tokens) -> None:
        for token in tokens:
            if token.type == "image":
                found.append(token.attrGet("src") or "")
            if token.children:
                walk(token.children)

    walk(MarkdownIt("commonmark").parse(markdown or ""))
    return found


def sitdown_pages(root: Path) -> Iterator[tuple[str, str, bytes, str, list]]:
    """(corpus, page, body, url, truth image URLs): each fragment with its same-named .md."""
    for html_file in sorted((root / "sitdown-zh").glob("*/*.html")):
        site = html_file.parent.name
        truth = html_file.with_suffix(".md")
        if truth.exists():  # (paper2.md is the text paper2-wechat.html was made from, its images elsewhere)
            url = f"https://{site}.example/{html_file.stem}"
            page = b"<!doctype html><html><head><meta charset=utf-8></head><body>%s</body></html>" % html_file.read_bytes()
            yield f"sitdown-zh/{site}", html_file.stem, page, url, markdown_images(truth.read_text(encoding="utf-8"))


def readability_pages(root: Path) -> Iterator[tuple[str, str, bytes, str, list]]:
    import lxml.html

    for page in sorted((root / "readability" / "test-pages").iterdir()):
        source, expected = page / "source.html", page / "expected.html"
        if source.exists() and expected.exists():
            tree = lxml.html.fromstring(expected.read_bytes())
            truth = [sorted(_urls_of(img, READABILITY_URL)) for img in tree.iter("img")]
            yield "readability", page.name, source.read_bytes(), READABILITY_URL, [t for t in truth if t]


def wechat_pages(root: Path) -> Iterator[tuple[str, str, bytes, str, list]]:
    import lxml.html

    for page in sorted((root / "gne-zh" / "tests" / "wechat").glob("*.html")):
        url = f"https://mp.weixin.qq.com/s/{page.stem}"
        body = page.read_bytes()
        content = lxml.html.fromstring(body).get_element_by_id("js_content", None)
        if content is not None:
            yield "gne-zh/wechat", page.stem, body, url, [sorted(_urls_of(img, url)) for img in content.iter("img") if _urls_of(img, url)]


def measure(root: Path) -> dict[str, dict[str, Tally]]:
    import lxml.html
    import trafilatura

    from mirror.extract import extract
    from mirror.extract.images import document_base

    tallies: dict[str, dict[str, Tally]] = {}
    for corpus, name, body, url, truth in (*sitdown_pages(root), *wechat_pages(root), *readability_pages(root)):
        tree = lxml.html.fromstring(body)
        base = document_base(tree, url)
        names, formula, authors = pictures(tree, base), formulas(tree, base), author_photos(tree, base)
        wanted = []
        row = tallies.setdefault(corpus, {"mirror": Tally(), "trafilatura": Tally()})
        for item in truth:  # a truth image: one URL (Markdown), or every URL of one <img>
            urls = {_resolve(u, url) or u for u in ([item] if isinstance(item, str) else item)}
            if urls & authors:
                row["mirror"].authors += 1
            elif not urls & formula:
                wanted.append(set().union(*(named([u], names)[0] for u in urls)))
        ours = extract(body, url, "text/html").markdown or ""
        theirs = trafilatura.extract(body, url=url, include_images=True, output_format="markdown") or ""
        for who, markdown in (("mirror", ours), ("trafilatura", theirs)):
            shown = [u for u in (_resolve(u, url) for u in markdown_images(markdown)) if u and u not in formula]
            found, right = row[who].add(wanted, named(shown, names))
            if found < len(wanted) or right < len(shown):
                row[who].missed.append(f"{corpus} {name}: {found} of {len(wanted)} found, {len(shown) - right} shown wrongly")
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the shared corpus folder")
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/images.jsonl")
    parser.add_argument("--missed", action="store_true", help="list the pages where images were missed or shown wrongly")
    args = parser.parse_args()
    rows = []
    for corpus, row in measure(args.corpus).items():
        ours, theirs = row["mirror"], row["trafilatura"]
        left_out = f", {ours.authors} author photos left out" if ours.authors else ""
        rows.append(
            (
                f"{corpus} ({ours.pages} pages, {ours.truth} images{left_out}): recall / precision",
                f"mirror {ours.recall:.3f} / {ours.precision:.3f} · trafilatura include_images {theirs.recall:.3f} / {theirs.precision:.3f}",
            )
        )
        if args.missed:
            for who in ("mirror", "trafilatura"):
                for line in row[who].missed:
                    print(f"  missed by {who}: {line}", file=sys.stderr)
    report("article images", rows, args.record)


if __name__ == "__main__":
    main()
