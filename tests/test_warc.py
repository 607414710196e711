"""WARC files: each capture a request/response pair whose digests verify and which warcio reads back
as written; headers kept as data (never a forged line); gzip stored raw; files rotated."""

from __future__ import annotations

import io
import re

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import BufferedReader
from warcio.statusandheaders import StatusAndHeadersParser

from mirror import warc
from mirror.warc import WarcLocation, read_payload

from .helpers import fetch, fetch_urls, page, warc_records


def _fields(record) -> tuple:
    skip = {"WARC-Record-ID", "WARC-Date", "WARC-Concurrent-To"}
    fields = sorted((k, v) for k, v in record.rec_headers.headers if k not in skip)
    payload = record.content_stream().read()
    assert record.digest_checker.passed is not False, record.digest_checker.problems
    return record.rec_type, fields, record.http_headers.to_str(), payload


def test_article_is_captured_to_warc_and_pointed_at(tmp_path, web):
    url = web.url("/article/1")
    db, summary = fetch_urls(tmp_path, [url])
    row = page(db, url)
    assert row["status"] == "archived" and row["http_status"] == 200
    assert row["content_type"].startswith("text/html")
    headers, body = read_payload(tmp_path / "archive", WarcLocation(row["warc_file"], row["warc_offset"], row["warc_length"]))
    assert "文章 1" in body.decode("utf-8")
    types = [(t, u) for t, u, _ in warc_records(tmp_path / "archive")]
    assert types == [("warcinfo", None), ("response", url), ("request", url)]  # (the file opens with its warcinfo)
    assert summary.statuses["archived"] == 1


def test_every_record_carries_digests_that_verify(tmp_path, web):
    """Block and payload digests of every record, checked by warcio itself (pywb and
    deduplication rely on them): pages, a gzip body, an empty one, a redirect, an image."""
    from .webserver import PNG

    image = web.add("/digest.png", PNG, "image/png")
    urls = [
        web.add("/with-image", f'<html><body><article><h1>图</h1><p>{"正文。" * 80}</p><img src="{image}"></article></body></html>'.encode()),
        web.url("/gzip"),
        web.url("/empty"),
        web.url("/redirect/1"),
    ]
    db, _ = fetch_urls(tmp_path, urls)
    assert db["resources"].get((urls[0], image))["status"] == "archived"
    checked = 0
    for path in sorted((tmp_path / "archive" / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f, check_digests=True):
                record.content_stream().read()
                assert record.rec_headers.get_header("WARC-Block-Digest")
                assert record.digest_checker.passed is not False, record.digest_checker.problems
                checked += 1
    assert checked >= 2 * (len(urls) + 2)  # request and response for each page, the image and the redirect hop


def test_capture_records_hold_what_warcios_own_writer_writes(tmp_path):
    """`CaptureWriter` builds a request/response pair itself (warcio's builder cost more than
    fetching a small image): the same fields, HTTP header blocks and payloads as warcio's
    writer gives the same capture, non-ASCII values and a truncated GBK body included."""
    import io
    import tempfile

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from mirror.warc import Capture, CaptureWriter

    body = "中文正文".encode("gbk") * 500
    spooled = tempfile.SpooledTemporaryFile()
    spooled.write(body)
    capture = Capture(
        url="http://例子.测试/搜索?q=中",
        method="GET",
        target="/%E6%90%9C%E7%B4%A2?q=%E4%B8%AD",
        request_headers=[("Host", "xn--fsqu00a.xn--0zwm56d"), ("User-Agent", "mirror/1"), ("X-Value", "é")],
        status=200,
        reason="OK",
        http_version="HTTP/1.1",
        response_headers=[
            ("Content-Type", "text/html; charset=gbk"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Disposition", "inline; filename=ü.html"),
        ],
        body=spooled,
        extra_warc_headers={"Mirror-Page": "http://例子.测试/", "WARC-Truncated": "length"},
    )
    CaptureWriter(tmp_path).write(capture)
    (path,) = (tmp_path / "warc").glob("*.warc.gz")
    with open(path, "rb") as f:
        ours = [_fields(record) for record in ArchiveIterator(f, check_digests=True) if record.rec_type != "warcinfo"]

    writer, buffer = WARCWriter(None, gzip=False), io.BytesIO()
    http = StatusAndHeaders(
        "200 OK",
        [("Content-Type", "text/html; charset=gbk"), ("Content-Disposition", "inline; filename=ü.html"), ("Content-Length", str(len(body)))],
        protocol="HTTP/1.1",
    )
    response = writer.create_warc_record(
        capture.url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http, warc_headers_dict=capture.extra_warc_headers
    )
    request = writer.create_warc_record(
        capture.url,
        "request",
        payload=io.BytesIO(b""),
        length=0,
        http_headers=StatusAndHeaders(f"GET {capture.target} HTTP/1.1", capture.request_headers, is_http_request=True),
    )
    for record in (response, request):
        WARCWriter(buffer, gzip=False).write_record(record)
    buffer.seek(0)
    theirs = [_fields(record) for record in ArchiveIterator(buffer, check_digests=True)]
    assert ours == theirs
    with open(path, "rb") as f:
        response, request = [record.rec_headers for record in ArchiveIterator(f) if record.rec_type != "warcinfo"]
    assert request.get_header("WARC-Concurrent-To") == response.get_header("WARC-Record-ID")
    ids = [request.get_header("WARC-Record-ID"), response.get_header("WARC-Record-ID")]
    assert all(re.fullmatch(r"<urn:uuid:[0-9a-f-]{36}>", i) for i in ids) and ids[0] != ids[1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", response.get_header("WARC-Date"))
    assert request.get_header("WARC-Date") == response.get_header("WARC-Date")


def test_gzip_body_is_stored_raw_and_reads_back_decoded(tmp_path, web):
    url = web.url("/gzip")
    db, _ = fetch_urls(tmp_path, [url])
    row = page(db, url)
    headers, body = read_payload(tmp_path / "archive", WarcLocation(row["warc_file"], row["warc_offset"], row["warc_length"]))
    assert headers.get_header("Content-Encoding") == "gzip"
    assert "压缩的文章" in body.decode("utf-8")


def test_warc_files_rotate_at_the_size_asked(tmp_path, web):
    urls = [web.url(f"/article/r{i}") for i in range(5)]
    db, _ = fetch_urls(tmp_path, urls, warc_rotate_bytes=1)
    files = {page(db, u)["warc_file"] for u in urls}
    assert len(files) == 5
    assert len(warc_records(tmp_path / "archive")) == 15  # a warcinfo, a response and its request a file


@pytest.mark.hostile
def test_utf8_header_values_and_status_text_are_recorded(tmp_path, web):
    url = web.url("/utf8-headers")
    db, _ = fetch(tmp_path, [url])
    row = db["pages"].get(url)
    assert row["status"] == "archived", row["error_message"]
    records = []
    for path in (tmp_path / "archive" / "warc").glob("*.warc.gz"):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                record.content_stream().read()
                assert record.digest_checker.passed is not False
                if record.rec_type == "response":
                    records.append(record.http_headers)
    headers = records[0]
    assert headers.get_statuscode() == "200" and "Café" in headers.statusline
    assert headers.get_header("X-Note") == "a=é;b é"
    assert headers.get_header("Link") == "<https://cdn.example/字体.woff2>; rel=preload"


@pytest.mark.hostile
def test_a_header_cannot_forge_a_line_of_the_record(tmp_path):
    writer = warc.CaptureWriter(tmp_path)
    location = writer.write(
        warc.Capture(
            url="http://h/",
            method="GET",
            request_headers=[("X-Client", "v=é;id é\r\nInjected: yes")],
            status=200,
            reason="Café\r\nForged: 1",
            http_version="HTTP/1.1",
            response_headers=[("X-A", "字\nB: c")],
            body=io.BytesIO(b"ok"),
        )
    )
    writer.close()
    headers, body = warc.read_payload(tmp_path, location)
    assert body == b"ok" and headers.get_header("Forged") is None and headers.get_header("B") is None
    assert headers.get_header("X-A") == "字 B: c"


@pytest.mark.hostile
@pytest.mark.parametrize("value", [b"gzip\xc2\xa0", b"\xc2\xa0gzip", b"gzip\xe2\x80\x83", b" GZIP ", b"gzip\xa0", b"x-gzip", b"gzip, br"])
def test_the_content_coding_counted_is_the_one_warcio_reads_back(value):
    """A head recorded as raw bytes is read back by warcio (UTF-8, Unicode spaces stripped): the
    fetcher counts a body with the coding warcio will decode it with, or --max-bytes is bypassed."""
    head = b"HTTP/1.1 200 Caf\xc3\xa9\r\nContent-Type: text/html\r\nContent-Encoding: " + value + b"\r\n\r\n"
    parsed = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"]).parse(__import__("io").BytesIO(head))
    coding = (parsed.get_header("content-encoding") or "").lower()
    read_back = coding if coding in BufferedReader.get_supported_decompressors() else ""
    assert warc.payload_coding([(b"Content-Type", b"text/html"), (b"Content-Encoding", value)]) == read_back
