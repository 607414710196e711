"""`--cookies-from-browser BROWSER[:PROFILE]`: the cookies of the user's own browser profile, read
from its database, so that a page behind a login is fetched as the user sees it.

Spelled as yt-dlp spells it (chromium, chrome, brave, edge, firefox; PROFILE a profile's name or
its folder), and read as yt-dlp's cookie module reads it, which is the model here. Not a
dependency: yt-dlp's only public way to it is the whole downloader; browser-cookie3 (0.20.1) asks
the desktop keyring on every call and raises KeyError 'DBUS_SESSION_BUS_ADDRESS' without a D-Bus
session (a server, CI, a headless profile; its issue #206); rookiepy (0.5.6, compiled Rust, no
release since 2024) reads a running Firefox's cookies.sqlite without its `-wal`, so a fresh login
comes back as no cookie at all (both tried on this machine). What this needs is small:

- The database is copied first (with its `-wal` and `-journal`), so a running browser, which
  keeps it locked, is no obstacle, and nothing of the profile is ever written.
- Chromium on Linux encrypts each value with AES-128-CBC. `v10` values use the fixed key every
  Chromium without a keyring uses (`--password-store=basic`, a headless or server machine):
  PBKDF2-SHA1 of "peanuts"; `v11` values use a password kept in the desktop keyring (the Secret
  Service of GNOME and others, or KDE's KWallet), asked for only when such a value is met.
  Since Chromium 130 (database version 24) a value starts with the SHA-256 of its host: dropped.
- Firefox keeps values in clear in `cookies.sqlite` (cookies of containers are left out).

Each cookie keeps its own domain (host-only or `.domain`), path, secure flag and expiry, so the
run's cookie jar sends it only where the browser would.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.cookiejar import Cookie, CookieJar, DefaultCookiePolicy
from pathlib import Path

__all__ = ["BROWSERS", "BrowserCookies", "CookieSourceError", "browser_jar", "cookies_from_browser", "parse_spec"]

CHROMIUM_FAMILY = {
    # name -> (its user data folder under ~/.config, the name its key has in the keyring)
    "chromium": ("chromium", "Chromium"),
    "chrome": ("google-chrome", "Chrome"),
    "brave": ("BraveSoftware/Brave-Browser", "Brave"),
    "edge": ("microsoft-edge", "Chromium"),
}
BROWSERS = (*CHROMIUM_FAMILY, "firefox")
_FIREFOX_ROOTS = ("~/.mozilla/firefox", "~/snap/firefox/common/.mozilla/firefox", "~/.var/app/org.mozilla.firefox/.mozilla/firefox")
_NT_EPOCH_OFFSET = 11644473600  # seconds from 1601-01-01 (Chromium's epoch) to 1970-01-01
_IV = b" " * 16


class CookieSourceError(Exception):
    """The browser's cookies cannot be read: the message says why and what to do."""


@dataclass
class BrowserCookies:
    """The cookies read, and what a person should know about the reading (cookies left out)."""

    jar: CookieJar
    source: Path  # the database they were read from
    notes: list[str] = field(default_factory=list)


def parse_spec(spec: str) -> tuple[str, str | None]:
    """`BROWSER[:PROFILE]` -> (browser, profile or None); raises CookieSourceError for an unknown browser."""
    browser, _, profile = spec.partition(":")
    browser = browser.strip().lower()
    if browser not in BROWSERS:
        raise CookieSourceError(f"--cookies-from-browser {spec!r}: the browser must be one of {', '.join(BROWSERS)} (BROWSER or BROWSER:PROFILE)")
    return browser, profile.strip() or None


def cookies_from_browser(spec: str) -> BrowserCookies:
    """The cookies of the profile `spec` names, as a cookie jar; raises CookieSourceError."""
    browser, profile = parse_spec(spec)
    if browser == "firefox":
        database = _find("cookies.sqlite", _search_roots(browser, profile), spec)
        with _copy(database) as connection:
            jar, notes = _firefox(connection)
        return BrowserCookies(jar, database, notes)
    database = _find("Cookies", _search_roots(browser, profile), spec)
    with _copy(database) as connection:
        jar, notes = _chromium(connection, CHROMIUM_FAMILY[browser][1])
    return BrowserCookies(jar, database, notes)


def _search_roots(browser: str, profile: str | None) -> list[Path]:
    """Where the profile's cookie database is looked for: a folder given, else the browser's own."""
    if profile is not None and (os.sep in profile or profile.startswith((".", "~")) or Path(profile).expanduser().is_dir()):
        return [Path(profile).expanduser()]
    if browser == "firefox":
        roots = [Path(root).expanduser() for root in _FIREFOX_ROOTS]
    else:
        config = Path(os.environ.get("XDG_CONFIG_HOME") or "~/.config").expanduser()
        roots = [config / CHROMIUM_FAMILY[browser][0]]
    return [root / profile for root in roots] if profile is not None else roots


def _find(name: str, roots: list[Path], spec: str) -> Path:
    """The most recently used `name` under the roots (a profile folder, or a browser's, with its profiles)."""
    found = [path for root in roots if root.is_dir() for path in root.rglob(name) if path.is_file()]
    if not found:
        where = " or ".join(str(root) for root in roots)
        raise CookieSourceError(f"--cookies-from-browser {spec}: no {name} database in {where} (is the browser installed and has it been used?)")
    return max(found, key=lambda path: path.stat().st_mtime)


@contextmanager
def _copy(database: Path) -> Iterator[sqlite3.Connection]:
    """A copy of the database, read-only: the running browser keeps its own locked, and nothing of the profile is changed."""
    with tempfile.TemporaryDirectory(prefix="mirror-cookies-") as folder:
        copy = Path(folder) / database.name
        try:
            shutil.copyfile(database, copy)
            for suffix in ("-wal", "-journal"):  # changes not yet written into the file itself
                if database.with_name(database.name + suffix).is_file():
                    shutil.copyfile(database.with_name(database.name + suffix), copy.with_name(copy.name + suffix))
            connection = sqlite3.connect(copy)
            connection.text_factory = bytes
        except OSError as exc:
            raise CookieSourceError(f"{database}: cannot read the browser's cookies ({exc.strerror or exc})") from exc
        try:
            yield connection
        except sqlite3.Error as exc:
            raise CookieSourceError(f"{database}: not a cookie database this version of mirror can read ({exc})") from exc
        finally:
            connection.close()


def browser_jar() -> CookieJar:
    """A jar that sends a host-only cookie (`example.com`, no dot) to that host alone, as browsers
    do; http.cookiejar's default would also send it to every subdomain."""
    return CookieJar(DefaultCookiePolicy(strict_ns_domain=DefaultCookiePolicy.DomainStrictNonDomain))


def _firefox(connection: sqlite3.Connection) -> tuple[CookieJar, list[str]]:
    jar, notes = browser_jar(), []
    rows = connection.execute("select host, name, value, path, expiry, isSecure, isHttpOnly, originAttributes from moz_cookies").fetchall()
    containers = 0
    for host, name, value, path, expiry, secure, http_only, origin in rows:
        if b"userContextId=" in (origin or b""):  # a container's cookies are not the profile's own
            containers += 1
            continue
        if expiry and expiry > 10**11:  # newer Firefox writes milliseconds
            expiry //= 1000
        jar.set_cookie(_cookie(_text(host), _text(name), _text(value), _text(path), expiry or None, bool(secure), bool(http_only)))
    if containers:
        notes.append(f"{containers} cookie{'s' if containers != 1 else ''} of Firefox containers left out")
    return jar, notes


def _chromium(connection: sqlite3.Connection, keyring_name: str) -> tuple[CookieJar, list[str]]:
    jar, notes = browser_jar(), []
    version = connection.execute("select value from meta where key = 'version'").fetchone()
    hashed_host = version is not None and int(version[0]) >= 24  # the value starts with the SHA-256 of its host
    columns = {row[1].decode() if isinstance(row[1], bytes) else row[1] for row in connection.execute("pragma table_info(cookies)")}
    secure_column = "is_secure" if "is_secure" in columns else "secure"
    rows = connection.execute(
        f"select host_key, name, value, encrypted_value, path, expires_utc, {secure_column}, is_httponly from cookies"
    ).fetchall()
    keys = _Keys(keyring_name)
    undecrypted = 0
    for host, name, value, encrypted, path, expires, secure, http_only in rows:
        text = _text(value)
        if not text and encrypted:
            plain = keys.decrypt(encrypted)
            if plain is None:
                undecrypted += 1
                continue
            if hashed_host:
                if plain[:32] != hashlib.sha256(host).digest():
                    undecrypted += 1
                    continue
                plain = plain[32:]
            text = plain.decode("utf-8", "replace")
        stamp = expires / 1_000_000 - _NT_EPOCH_OFFSET if expires else None
        jar.set_cookie(_cookie(_text(host), _text(name), text, _text(path), stamp, bool(secure), bool(http_only)))
    if undecrypted:
        notes.append(f"{undecrypted} cookie{'s' if undecrypted != 1 else ''} could not be decrypted{keys.why}")
    return jar, notes


class _Keys:
    """Chromium's keys on Linux: v10's fixed one, v11's from the desktop keyring (asked once, when first needed)."""

    def __init__(self, keyring_name: str):
        self.name = keyring_name
        self.v10 = _derive(b"peanuts")
        self._v11: list[bytes] | None = None
        self.why = ""

    def decrypt(self, value: bytes) -> bytes | None:
        prefix, ciphertext = value[:3], value[3:]
        if prefix == b"v10":
            return _aes_cbc(self.v10, ciphertext)
        if prefix == b"v11":
            for key in self.v11():
                if (plain := _aes_cbc(key, ciphertext)) is not None:
                    return plain
        return None

    def v11(self) -> list[bytes]:
        if self._v11 is None:
            password, self.why = _keyring_password(self.name)
            # an empty password: what Chromium used when the keyring gave none (old profiles keep such values)
            self._v11 = [_derive(password)] if password is not None else []
            self._v11.append(_derive(b""))
        return self._v11


def _derive(password: bytes) -> bytes:
    return hashlib.pbkdf2_hmac("sha1", password, b"saltysalt", 1, 16)


def _aes_cbc(key: bytes, ciphertext: bytes) -> bytes | None:
    """AES-128-CBC with Chromium's IV and PKCS#7 padding; None when the key is not this value's."""
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    if not ciphertext or len(ciphertext) % 16:
        return None
    decryptor = Cipher(algorithms.AES(key), modes.CBC(_IV)).decryptor()
    unpadder = padding.PKCS7(128).unpadder()
    try:
        return unpadder.update(decryptor.update(ciphertext) + decryptor.finalize()) + unpadder.finalize()
    except ValueError:
        return None


def _keyring_password(name: str) -> tuple[bytes | None, str]:
    """The password Chromium keeps in the desktop's keyring (KWallet first on KDE, as Chromium
    chooses), and why there is none."""
    kde = "KDE" in os.environ.get("XDG_CURRENT_DESKTOP", "").upper()
    reasons = []
    for ask in (_kwallet, _secret_service) if kde else (_secret_service, _kwallet):
        try:
            password = ask(name)
        except Exception as exc:  # noqa: BLE001 - no session bus, no keyring daemon, a locked keyring: each says why
            reasons.append(f"{ask.__name__.strip('_').replace('_', ' ')}: {type(exc).__name__}: {exc}")
            continue
        if password is not None:
            return password, ""
        reasons.append(f"{ask.__name__.strip('_').replace('_', ' ')}: no '{name} Safe Storage' entry")
    return None, (
        f": their key is in the desktop's keyring, which could not give it ({'; '.join(reasons)}). "
        "Run mirror in the desktop session where the browser runs, or export a cookies.txt and use --cookies"
    )


def _secret_service(name: str) -> bytes | None:
    """From the Secret Service (GNOME Keyring, KeePassXC …), as Chromium's libsecret backend stores it."""
    if sys.platform != "linux":
        return None
    import secretstorage

    with secretstorage.dbus_init() as connection:
        collection = secretstorage.get_default_collection(connection)
        if collection.is_locked():
            collection.unlock()
        for item in collection.get_all_items():
            if item.get_label() == f"{name} Safe Storage":
                return item.get_secret()
    return None


def _kwallet(name: str) -> bytes | None:
    """From KDE's KWallet (kwalletd6, else kwalletd5), over D-Bus as Chromium's kwallet backend asks."""
    from jeepney import DBusAddress, MessageType, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    with open_dbus_connection(bus="SESSION") as connection:
        for service, path in (("org.kde.kwalletd6", "/modules/kwalletd6"), ("org.kde.kwalletd5", "/modules/kwalletd5")):
            wallet = DBusAddress(path, bus_name=service, interface="org.kde.KWallet")

            def call(method: str, signature: str | None = None, *args, wallet=wallet):
                reply = connection.send_and_get_reply(new_method_call(wallet, method, signature, args))
                if reply.header.message_type == MessageType.error:
                    raise RuntimeError(str(reply.body[0]) if reply.body else "error")
                return reply.body[0]

            try:
                handle = call("open", "sxs", call("networkWallet"), 0, "mirror")
            except RuntimeError:
                continue  # this wallet service is not there
            try:
                if not call("hasFolder", "iss", handle, f"{name} Keys", "mirror"):
                    return None
                return call("readPassword", "isss", handle, f"{name} Keys", f"{name} Safe Storage", "mirror").encode("utf-8")
            finally:
                call("close", "ibs", handle, False, "mirror")
    return None


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _cookie(host: str, name: str, value: str, path: str, expires: float | None, secure: bool, http_only: bool) -> Cookie:
    """A cookie for its own domain only: `example.com` is that host, `.example.com` it and its subdomains."""
    return Cookie(
        version=0,
        name=name,
        value=value,
        port=None,
        port_specified=False,
        domain=host,
        domain_specified=host.startswith("."),
        domain_initial_dot=host.startswith("."),
        path=path or "/",
        path_specified=True,
        secure=secure,
        expires=int(expires) if expires else None,
        discard=not expires,
        comment=None,
        comment_url=None,
        rest={"HttpOnly": ""} if http_only else {},
    )
