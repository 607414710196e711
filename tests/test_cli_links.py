"""`mirror links` as a user runs it."""

from __future__ import annotations

import json
import shutil
import sqlite3

from .conftest import SEEDS, links_json, run_mirror


def test_links_json_on_real_seeds(tmp_path):
    shutil.copytree(SEEDS, tmp_path / "seeds")
    result = run_mirror("links", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    links = links_json(result)
    assert len(links) > 300
    by_place = {(l["seed"].rsplit("/", 1)[-1][:3], l["line"]): l for l in links}
    triton = by_place[("002", 58)]
    assert triton["url_as_written"] == "https://github.com/openai/tritonPython"
    assert triton["candidates"][0] == "https://github.com/openai/triton"
    assert by_place[("004", 62)]["status"] == "skipped"
    assert set(triton) >= {"url", "url_as_written", "seed", "line", "title", "section", "status"}
    db = sqlite3.connect(tmp_path / "archive" / "mirror.db")
    assert db.execute("select count(*) from links").fetchone()[0] == len(links)
    assert "-> " in result.stderr and "pages" in result.stderr


def test_links_table_output(cli, tmp_path):
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "a.txt").write_text("显存优化 - 知乎\nhttps://zhuanlan.zhihu.com/p/1?utm_source=x\n", encoding="utf-8")
    result = cli("links")
    assert result.exit_code == 0
    assert "显存优化" in result.stdout and "https://zhuanlan.zhihu.com/p" in result.stdout
    assert "utm_source" not in result.stdout


def test_archive_option_and_environment(cli, tmp_path):
    seed = tmp_path / "s.txt"
    seed.write_text("https://a.example/\n", encoding="utf-8")
    assert cli("links", str(seed), "--archive", "by-option").exit_code == 0
    assert (tmp_path / "by-option" / "mirror.db").exists()
    assert cli("links", str(seed), env={"MIRROR_ARCHIVE": str(tmp_path / "by-env")}).exit_code == 0
    assert (tmp_path / "by-env" / "mirror.db").exists()
    assert not (tmp_path / "archive").exists()


def test_missing_path_is_a_clear_error(tmp_path):
    result = run_mirror("links", "no-such-seeds", cwd=tmp_path)
    assert result.returncode == 2
    assert "no-such-seeds: no such file or folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_default_seeds_folder_missing(tmp_path):
    result = run_mirror("links", cwd=tmp_path)
    assert result.returncode == 2
    assert "seeds: no such file or folder" in result.stderr


def test_bad_files_warn_and_the_rest_is_processed(tmp_path):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "empty.txt").write_bytes(b"")
    (seeds / "binary.bin").write_bytes(bytes(range(256)))
    (seeds / "gbk.txt").write_bytes("中文标题\nhttps://example.cn/a\n".encode("gbk"))
    result = run_mirror("links", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [(l["url"], l["title"]) for l in json.loads(result.stdout)] == [("https://example.cn/a", "中文标题")]
    assert "binary.bin: binary file" in result.stderr
    assert "empty.txt: empty" in result.stderr
    assert "GB18030" in result.stderr


def test_unwritable_archive_is_a_clear_error(tmp_path):
    (tmp_path / "s.txt").write_text("https://a.example/\n")
    (tmp_path / "blocker").write_text("a file where the archive folder should be")
    result = run_mirror("links", "s.txt", "--archive", "blocker/archive", cwd=tmp_path)
    assert result.returncode == 1
    assert "error:" in result.stderr and "Traceback" not in result.stderr
