"""Issue 44 item 5: every WARC file mirror writes opens with a warcinfo record (what wrote it, the
format, the run's settings), as Heritrix, Browsertrix and pywb write one, read back by warcio;
never a cookie's or a header's value."""

from __future__ import annotations

from warcio.archiveiterator import ArchiveIterator

from .webserver import article

QUICK = ("--delay", "0", "--retries", "0", "--timeout", "5")


def test_each_warc_file_opens_with_a_warcinfo_record_without_secrets(cli, tmp_path, web):
    url = web.add("/a", article("第一篇", "正文。"))
    (tmp_path / "cookies.txt").write_text("# Netscape HTTP Cookie File\n127.0.0.1\tFALSE\t/\tFALSE\t0\tsession\tCOOKIE-VALUE-42\n", encoding="utf-8")
    result = cli("fetch", url, *QUICK, "--per-host", "3", "--header", "Authorization: Bearer TOKEN-VALUE-42", "--cookies", "cookies.txt")
    assert result.exit_code == 0, result.output
    files = sorted((tmp_path / "archive" / "warc").glob("*.warc.gz"))
    assert files
    for path in files:
        with open(path, "rb") as stream:
            records = iter(ArchiveIterator(stream))
            first = next(records)
            assert first.rec_type == "warcinfo"
            assert first.rec_headers.get_header("WARC-Filename") == path.name
            info = first.content_stream().read().decode("utf-8")
            assert next(records).rec_type in ("response", "request", "resource")  # the captures follow
        fields = dict(line.split(": ", 1) for line in info.strip().splitlines())
        assert fields["software"].startswith("mirror/") and "warcio/" in fields["software"]
        assert fields["format"] == "WARC File Format 1.0"
        assert "per-host=3" in fields["mirror-settings"] and "delay=0.0" in fields["mirror-settings"]
        assert fields["mirror-headers-sent"].startswith("Authorization")
        assert "TOKEN-VALUE-42" not in info and "COOKIE-VALUE-42" not in info and "session" not in info
