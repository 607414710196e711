"""The user's secrets stay out of the archive: a run with a cookies.txt and an `Authorization`
header leaves their values in no file of the archive folder and in no export (WACZ, Markdown,
EPUB); the request records keep the cookies' names, and every WARC file stays valid."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from .helpers import run_mirror
from .member_site import SECRET, SESSION, MemberSite, holding

TOKEN = "tok-9d1e77c0a5b34f"  # an API token given with --header


def _cookies_txt(folder: Path, host: str) -> Path:
    path = folder / "cookies.txt"
    path.write_text(f"# Netscape HTTP Cookie File\n{host}\tFALSE\t/\tFALSE\t2147483647\t{SESSION}\t{SECRET}\n", encoding="utf-8")
    return path


def test_cookies_and_tokens_are_redacted_in_every_file_and_export(tmp_path):
    archive = tmp_path / "archive"
    with MemberSite() as site:
        cookies = _cookies_txt(tmp_path, "127.0.0.2")
        done = run_mirror(
            "fetch", site.article, "--archive", str(archive), "--cookies", str(cookies), "--header", f"Authorization: Bearer {TOKEN}",
            "--header", f"X-Api-Key: {TOKEN}", "--delay", "0", "--retries", "0", "--browser", "never", cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert site.site.saw_session()  # the login was sent where it belongs
    exports = tmp_path / "exports"
    exports.mkdir()
    for command in (["wacz", str(exports / "all.wacz")], ["markdown", str(exports / "notes")], ["epub", str(exports / "book.epub")]):
        made = run_mirror("export", *command, "--archive", str(archive), cwd=tmp_path)
        assert made.returncode == 0, made.stderr
    for secret in (SECRET, TOKEN):
        assert holding(archive, secret) == []
        assert holding(exports, secret) == []

    requests = []
    for warc in sorted((archive / "warc").glob("*.warc.gz")):
        with open(warc, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "request" and record.rec_headers.get_header("WARC-Target-URI") == site.article:
                    requests.append(dict(record.http_headers.headers))
        checked = subprocess.run([str(Path(sys.executable).parent / "warcio"), "check", "-v", str(warc)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr  # every digest still holds
    assert requests
    head = {k.lower(): v for k, v in requests[0].items()}
    assert head["cookie"] == f"{SESSION}=<redacted>"
    assert head["authorization"] == "Bearer <redacted>" and head["x-api-key"] == "<redacted>"


def test_redaction_keeps_names_and_schemes():
    from mirror.http.redact import redact_request, redact_response

    assert redact_request([("Cookie", "a=1; b=2"), ("Authorization", "Basic dXNlcjpwdw=="), ("Accept", "*/*")], frozenset()) == [
        ("Cookie", "a=<redacted>; b=<redacted>"),
        ("Authorization", "Basic <redacted>"),
        ("Accept", "*/*"),
    ]
    assert redact_request([("X-Token", "t"), ("Proxy-Authorization", "secret")], frozenset({"x-token"})) == [
        ("X-Token", "<redacted>"),
        ("Proxy-Authorization", "<redacted>"),
    ]
    renewed = [("Set-Cookie", "z_c0=new; Path=/; HttpOnly"), ("Set-Cookie", "theme=dark")]
    assert redact_response(renewed, frozenset({"z_c0"})) == [("Set-Cookie", "z_c0=<redacted>; Path=/; HttpOnly"), ("Set-Cookie", "theme=dark")]
