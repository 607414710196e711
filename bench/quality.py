"""Article quality against hand-marked ground truth, mirror beside trafilatura's default `extract()`.

For every page of a corpus with ground truth (readability's `expected.html`, Dragnet's
`GoldStandard`), the same bytes go through `mirror.extract.article.extract` and through
`trafilatura.extract` with default options. Each output is scored by character:

- recall: the share of the ground truth's characters found, in order, in the output;
- precision: the share of the output's characters found, in order, in the ground truth.

"In order" is a longest common subsequence of tokens (a Latin word, a number, or one
CJK character), each token weighing its length in characters; punctuation and spacing
do not count. The medians per corpus are printed side by side for mirror's `text`,
mirror's `markdown` read as text (rendered, so link targets and image URLs drop out)
and trafilatura's default output, with the extraction CPU per page for each.

    python bench/quality.py [--corpus DIR] [--limit N] [--record]

Needs `rapidfuzz` (`pip install rapidfuzz`) for the alignment.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from _measure import report

CORPUS = Path(os.environ.get("MIRROR_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "corpus")

_TOKEN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]|[^\W_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+"
)  # one CJK character, or a run of other letters and digits
_DRAGNET_COMMENTS = re.compile(r"^\W*COMMENTS\s*$", re.M)  # the line between article and comments


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def score(output: str, truth: str) -> tuple[float, float]:
    """(precision, recall) by character over the in-order token alignment."""
    from rapidfuzz.distance import LCSseq

    got, want = tokens(output), tokens(truth)
    if not got or not want:
        return (0.0 if got else 1.0), (0.0 if want else 1.0)
    matched = sum(sum(len(t) for t in got[block.a : block.a + block.size]) for block in LCSseq.opcodes(got, want).as_matching_blocks())
    return matched / sum(map(len, got)), matched / sum(map(len, want))


def markdown_as_text(markdown: str) -> str:
    """Render, then keep the visible text: link targets and image URLs are not text."""
    import lxml.html
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render(markdown)
    return lxml.html.fromstring(f"<div>{html}</div>").text_content() if html.strip() else ""


def html_text(html: str) -> str:
    import lxml.html

    return lxml.html.fromstring(html).text_content() if html.strip() else ""


def readability_pages(root: Path) -> Iterator[tuple[str, bytes, str, dict]]:
    for page in sorted((root / "readability" / "test-pages").iterdir()):
        source, expected = page / "source.html", page / "expected.html"
        if source.exists() and expected.exists():
            meta_file = page / "expected-metadata.json"
            meta = json.loads(meta_file.read_text(encoding="utf-8")) if meta_file.exists() else {}
            yield page.name, source.read_bytes(), html_text(expected.read_text(encoding="utf-8")), meta


def dragnet_pages(root: Path) -> Iterator[tuple[str, bytes, str, dict]]:
    gold = root / "dragnet" / "GoldStandard"
    for page in sorted((root / "dragnet" / "input").glob("*.html")):
        truth = gold / f"{page.stem}.txt"
        if truth.exists():
            text = truth.read_bytes().decode("utf-8", "replace")
            yield page.stem, page.read_bytes(), _DRAGNET_COMMENTS.sub("", text), {}


def timed(function, *args, **kwargs):
    start = time.process_time()
    result = function(*args, **kwargs)
    return result, time.process_time() - start


def _same(found: str | None, expected: str | None) -> bool | None:
    """A metadata field is right when it matches the expected value, spacing and case aside."""
    if not expected:
        return None
    norm = lambda s: " ".join((s or "").lower().split())  # noqa: E731
    return bool(found) and (norm(found) == norm(expected) or norm(expected) in norm(found) or norm(found) in norm(expected))


def run_corpus(name: str, pages, limit: int | None) -> dict:
    import trafilatura

    from mirror.extract import extract

    scores: dict[str, list[tuple[float, float]]] = {"text": [], "markdown": [], "trafilatura": []}
    cost = {"mirror": 0.0, "trafilatura": 0.0}
    meta_hits: dict[str, list[bool]] = {}
    count = 0
    pages = list(pages)
    for _, body, _, _ in pages[:5]:  # one-time costs (imports, regex compiles) a long-lived worker pays once
        extract(body, "http://127.0.0.1/warm-up/", "text/html")
        trafilatura.extract(body, url="http://127.0.0.1/warm-up/")
    for page_id, body, truth, expected_meta in pages:
        if limit and count >= limit:
            break
        count += 1
        url = f"http://127.0.0.1/{name}/{page_id}/"
        ours, spent = timed(extract, body, url, "text/html")
        cost["mirror"] += spent
        theirs, spent = timed(trafilatura.extract, body, url=url)
        cost["trafilatura"] += spent
        scores["text"].append(score(ours.text or "", truth))
        scores["markdown"].append(score(markdown_as_text(ours.markdown or ""), truth))
        scores["trafilatura"].append(score(theirs or "", truth))
        if expected_meta:
            their_meta = trafilatura.bare_extraction(body, url=url, with_metadata=True)
            for field, key, attr in (("title", "title", "title"), ("author", "byline", "author"), ("date", "publishedTime", "date")):
                expected = expected_meta.get(key)
                if field == "date" and expected:
                    expected = expected[:10]
                for who, value in (("mirror", getattr(ours, attr)), ("trafilatura", getattr(their_meta, attr, None))):
                    hit = _same(value, expected)
                    if hit is not None:
                        meta_hits.setdefault(f"{field} {who}", []).append(hit)
        print(
            f"  {name} {page_id}: text P/R {scores['text'][-1][0]:.2f}/{scores['text'][-1][1]:.2f}"
            f"  trafilatura {scores['trafilatura'][-1][0]:.2f}/{scores['trafilatura'][-1][1]:.2f}",
            file=sys.stderr,
        )
    medians = {who: (statistics.median(p for p, _ in s), statistics.median(r for _, r in s)) for who, s in scores.items() if s}
    return {"pages": count, "medians": medians, "ms": {k: 1000 * v / max(count, 1) for k, v in cost.items()}, "meta": meta_hits}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the shared corpus folder")
    parser.add_argument("--limit", type=int, default=None, help="at most this many pages per corpus (a quick check)")
    parser.add_argument("--only", choices=["readability", "dragnet"], help="one corpus only")
    parser.add_argument("--record", action="store_true", help="append the run to bench/runs/quality.jsonl")
    args = parser.parse_args()

    rows = []
    for name, pages in (("readability", readability_pages), ("dragnet", dragnet_pages)):
        if args.only and name != args.only:
            continue
        result = run_corpus(name, pages(args.corpus), args.limit)
        m = result["medians"]
        rows.append(
            (
                f"{name} ({result['pages']} pages): median precision / recall",
                " · ".join(
                    f"{who} {p:.3f} / {r:.3f}"
                    for who, (p, r) in (
                        ("mirror text", m["text"]),
                        ("mirror markdown as text", m["markdown"]),
                        ("trafilatura default", m["trafilatura"]),
                    )
                ),
            )
        )
        rows.append(
            (
                f"{name}: extraction CPU ms/page (provisional on a shared machine)",
                f"mirror {result['ms']['mirror']:.1f} (text, markdown and metadata)"
                f" · trafilatura default {result['ms']['trafilatura']:.1f} (text only)",
            )
        )
        for field in ("title", "author", "date"):
            ours, theirs = result["meta"].get(f"{field} mirror"), result["meta"].get(f"{field} trafilatura")
            if ours and theirs:
                rows.append((f"{name}: {field} right (of {len(ours)} with an expected value)", f"mirror {sum(ours)} · trafilatura {sum(theirs)}"))
    report("article quality", rows, args.record)


if __name__ == "__main__":
    main()
