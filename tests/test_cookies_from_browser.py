"""`--cookies-from-browser`: a real browser profile signs in to a site on 127.0.0.2, and `mirror
fetch` archives its member-only article with that profile's cookies; the cookie goes to that
site alone (never to the picture host on 127.0.0.3, in the HTTP fetch and in the browser's
render) and its value is in no file of the archive."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mirror.fetch.browser_cookies import CookieSourceError, cookies_from_browser, parse_spec

from .helpers import CHROMIUM, chromium_or_skip, run_mirror
from .member_site import CHROMIUM_QUIET, FIREFOX_PREFS, MEMBER_TEXT, SECRET, SESSION, MemberSite, chromium_login, holding

FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox")


def _chromium_profile(folder: Path, site: MemberSite) -> None:
    chromium_login(str(folder), site.url)


def _cookie_values(spec: str) -> dict[str, str]:
    return {cookie.name: cookie.value for cookie in cookies_from_browser(spec).jar}


def _fetch(archive: Path, spec: str, url: str, *more: str):
    return run_mirror(
        "fetch", url, "--archive", str(archive), "--cookies-from-browser", spec, "--delay", "0", "--retries", "0", *more, cwd=archive.parent
    )


def _article(archive: Path, url: str) -> dict:
    import sqlite3

    with sqlite3.connect(archive / "mirror.db") as db:
        db.row_factory = sqlite3.Row
        return dict(db.execute("select status, text, error, source from pages where url = ?", [url]).fetchone())


def test_a_chromium_profile_logs_the_fetch_in_and_its_cookie_stays_home(tmp_path):
    chromium_or_skip()
    profile = tmp_path / "chromium-profile"
    with MemberSite() as site:
        _chromium_profile(profile, site)
        assert _cookie_values(f"chromium:{profile}")[SESSION] == SECRET  # a v10 value (no keyring), decrypted
        archive = tmp_path / "archive"
        done = _fetch(archive, f"chromium:{profile}", site.article, "--browser", "never")
        assert done.returncode == 0, done.stderr
        assert "each sent only to its own site" in done.stderr
        page = _article(archive, site.article)
        assert page["status"] == "archived" and MEMBER_TEXT[:20] in page["text"]
        assert site.site.saw_session()
        assert site.pictures.cookies and not site.pictures.saw_session()  # the picture was fetched, without the login
    assert holding(archive, SECRET) == []


def test_the_browser_render_carries_the_cookie_to_its_own_site_only(tmp_path):
    """The page's script fetches more of the article; chromium renders it inside the run, every
    request answered by the run's client: the member API sees the login, the picture host never does."""
    chromium_or_skip()
    profile = tmp_path / "chromium-profile"
    with MemberSite(script=True) as site:
        _chromium_profile(profile, site)
        site.site.cookies.clear()
        archive = tmp_path / "archive"
        done = _fetch(archive, f"chromium:{profile}", site.article, "--browser", "always")
        assert done.returncode == 0, done.stderr
        api = [cookie for path, cookie in site.site.cookies if path == "/api/more"]
        assert api and all(cookie and f"{SESSION}={SECRET}" in cookie for cookie in api)
        assert site.pictures.cookies and not site.pictures.saw_session()
    assert holding(archive, SECRET) == []


def test_a_profile_is_read_while_its_chromium_runs(tmp_path):
    """The database a running Chromium holds open (and locked) is read from a copy."""
    chromium_or_skip()
    profile = tmp_path / "chromium-profile"
    with MemberSite() as site:
        _chromium_profile(profile, site)
        browser = subprocess.Popen(
            [
                CHROMIUM,
                "--headless=new",
                "--no-sandbox",
                f"--user-data-dir={profile}",
                "--password-store=basic",
                *CHROMIUM_QUIET,
                f"{site.url}/welcome",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            time.sleep(3)
            assert browser.poll() is None
            assert _cookie_values(f"chromium:{profile}")[SESSION] == SECRET
        finally:
            os.killpg(browser.pid, signal.SIGTERM)
            browser.wait(timeout=30)


def _firefox_or_skip() -> None:
    if FIREFOX is None:
        message = "Debian's firefox-esr is not installed (apt-get install firefox-esr)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def test_a_running_firefox_profile_logs_the_fetch_in(tmp_path):
    """Firefox (headless, its own profile) signs in by the page's own form and stays open: its
    cookies.sqlite, open and in WAL mode, is read from a copy."""
    _firefox_or_skip()
    profile = tmp_path / "firefox-profile"
    profile.mkdir()
    (profile / "user.js").write_text(FIREFOX_PREFS, encoding="utf-8")
    with MemberSite() as site:
        browser = subprocess.Popen(
            [FIREFOX, "--headless", "--no-remote", "--profile", str(profile), f"{site.url}/login?auto=1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "MOZ_CRASHREPORTER_DISABLE": "1"},
        )
        try:
            deadline = time.monotonic() + 60
            values: dict[str, str] = {}
            while time.monotonic() < deadline and SESSION not in values:
                time.sleep(1)
                try:
                    values = _cookie_values(f"firefox:{profile}")
                except CookieSourceError:
                    pass  # no cookies.sqlite yet
            assert values.get(SESSION) == SECRET, "firefox never stored the session cookie"
            assert browser.poll() is None  # still running
            archive = tmp_path / "archive"
            done = _fetch(archive, f"firefox:{profile}", site.article, "--browser", "never")
        finally:
            os.killpg(browser.pid, signal.SIGTERM)
            browser.wait(timeout=30)
        assert done.returncode == 0, done.stderr
        assert MEMBER_TEXT[:20] in _article(archive, site.article)["text"]
        assert not site.pictures.saw_session()
    assert holding(archive, SECRET) == []


def test_without_the_cookies_the_article_is_a_sign_in_wall(tmp_path):
    with MemberSite() as site:
        archive = tmp_path / "archive"
        done = run_mirror("fetch", site.article, "--archive", str(archive), "--delay", "0", "--retries", "0", "--browser", "never", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        page = _article(archive, site.article)
        assert page["status"] == "failed" and page["error"] == "blocked"


def test_a_bad_browser_or_profile_is_a_clear_error(tmp_path):
    archive = tmp_path / "archive"
    for spec, words in (
        ("netscape", "must be one of chromium, chrome, brave, edge, firefox"),
        (f"chromium:{tmp_path / 'none'}", "no Cookies database"),
    ):
        done = _fetch(archive, spec, "http://127.0.0.2:9/x")
        assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
    checked = run_mirror("check", "--archive", str(archive), "--cookies-from-browser", "safari", cwd=tmp_path)
    assert checked.returncode == 2 and "must be one of" in checked.stderr
    assert parse_spec("Firefox:default-release") == ("firefox", "default-release")
    assert parse_spec("chrome") == ("chrome", None)


def test_a_host_only_cookie_goes_to_its_host_alone(tmp_path):
    """A cookie a browser keeps for `127.0.0.2` (no leading dot) is that host's; one kept for
    `.example.test` is that domain's and its subdomains'."""
    from urllib.request import Request

    from mirror.fetch.browser_cookies import _cookie, browser_jar

    jar = browser_jar()
    jar.set_cookie(_cookie("site.test", "host_only", "1", "/", time.time() + 3600, False, False))
    jar.set_cookie(_cookie(".example.test", "domain", "2", "/", time.time() + 3600, False, False))

    def sent(url: str) -> str:
        request = Request(url)
        jar.add_cookie_header(request)
        return request.get_header("Cookie") or ""

    assert sent("http://site.test/") == "host_only=1"
    assert sent("http://www.site.test/") == ""
    assert sent("http://a.example.test/") == "domain=2" and sent("http://example.test/") == "domain=2"
    assert sent("http://other.test/") == ""


def test_v11_values_use_the_keyring_password(tmp_path, monkeypatch):
    """A v11 value (a Chromium that keeps its password in the desktop keyring) decrypts with the
    key made from that password; without the keyring it is counted, not guessed."""
    import hashlib
    import sqlite3

    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    from mirror.fetch import browser_cookies

    def encrypt(password: bytes, host: bytes, value: bytes) -> bytes:
        key = hashlib.pbkdf2_hmac("sha1", password, b"saltysalt", 1, 16)
        padder = padding.PKCS7(128).padder()
        data = padder.update(hashlib.sha256(host).digest() + value) + padder.finalize()
        encryptor = Cipher(algorithms.AES(key), modes.CBC(b" " * 16)).encryptor()
        return b"v11" + encryptor.update(data) + encryptor.finalize()

    folder = tmp_path / "profile" / "Default"
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / "Cookies") as db:
        db.execute("create table meta (key text, value text)")
        db.execute("insert into meta values ('version', '24')")
        db.execute(
            "create table cookies (host_key text, name text, value text, encrypted_value blob, path text, expires_utc int, "
            "is_secure int, is_httponly int)"
        )
        db.execute("insert into cookies values ('.zhihu.com', 'z_c0', '', ?, '/', 0, 1, 1)", [encrypt(b"k3yring", b".zhihu.com", b"2|1:0|v")])
    monkeypatch.setattr(browser_cookies, "_keyring_password", lambda name: (b"k3yring", ""))
    assert _cookie_values(f"chrome:{tmp_path / 'profile'}") == {"z_c0": "2|1:0|v"}
    monkeypatch.setattr(browser_cookies, "_keyring_password", lambda name: (None, ": no keyring here"))
    read = cookies_from_browser(f"chrome:{tmp_path / 'profile'}")
    assert list(read.jar) == [] and read.notes == ["1 cookie could not be decrypted: no keyring here"]


def test_a_chromium_profile_whose_key_is_in_the_keyring(tmp_path):
    """A desktop session's Chromium keeps the key to its cookies in the Secret Service (GNOME
    Keyring here, in a D-Bus session of the test's own): its values are v11, read with the
    keyring's password. Outside that session the keyring cannot be asked: a clear error."""
    chromium_or_skip()
    tools = [shutil.which(tool) for tool in ("dbus-run-session", "gnome-keyring-daemon")]
    if None in tools:
        message = "dbus-run-session and gnome-keyring-daemon are needed (apt-get install dbus gnome-keyring)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from .helpers import ROOT

    profile, archive = tmp_path / "chromium-profile", tmp_path / "archive"
    with MemberSite() as site:
        script = (
            "eval $(printf pw | gnome-keyring-daemon --unlock --components=secrets) >/dev/null && "
            f"\"$PYTHON\" -c \"from tests.member_site import chromium_login; chromium_login('{profile}', '{site.url}', 'gnome-libsecret')\" && "
            f'"$PYTHON" -m mirror fetch {site.article} --archive {archive} --cookies-from-browser chromium:{profile} '
            "--delay 0 --retries 0 --browser never"
        )
        # (`tests` imported by path: an earlier test's extraction pool may have set PYTHONSAFEPATH in this process)
        env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        done = subprocess.run(["dbus-run-session", "--", "bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr
        with sqlite3.connect(profile / "Default" / "Cookies") as db:
            assert db.execute("select substr(encrypted_value, 1, 3) from cookies where name = ?", [SESSION]).fetchone()[0] == b"v11"
        assert MEMBER_TEXT[:20] in _article(archive, site.article)["text"]
        assert not site.pictures.saw_session()
        outside = subprocess.run(  # no session bus (none of the user's either): no keyring to ask
            [
                sys.executable,
                "-m",
                "mirror",
                "fetch",
                site.article,
                "--archive",
                str(tmp_path / "elsewhere"),
                "--cookies-from-browser",
                f"chromium:{profile}",
            ],
            env={k: v for k, v in env.items() if k not in ("PYTHON", "PYTHONPATH")},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert outside.returncode == 2 and "could not be decrypted" in outside.stderr and "keyring" in outside.stderr
    assert holding(archive, SECRET) == []
