"""A long seed's lines read on two cores (a child process reads the second half): the links are
exactly those of one pass, and a child that fails or is left behind costs nothing but time."""

from __future__ import annotations

import time

import pytest

from mirror.seeds import decode_seed, parse_text
from mirror.seeds import text as seeds_text
from mirror.seeds._child_call import ChildCall

from .conftest import SEEDS


def texts() -> list[str]:
    shared = [decode_seed(path.read_bytes())[0] for path in sorted(SEEDS.iterdir()) if path.is_file()]
    shared = [text for text in shared if text]
    return [
        *shared,
        "---\ntitle: front matter\nurl: https://not.a.link/\n---\n" + "\n".join(shared),  # split inside the notes
        "\n\n".join(shared) * 3,
        # the benchmark's shapes, small: title line + URL line, one line of URLs, unclosed <a>
        "\n".join(f"第 {i} 篇：分布式训练笔记\nhttps://example.com/p/{i}?utm_source=x\n" for i in range(300)),
        "## 节\n\nmlsys blog\n\n" + "\n".join(f"https://example.com/p/{i}\n说明 {i}" for i in range(200)),
        " ".join(f"https://example.com/p/{i}" for i in range(500)) + "\nDeepSpeedhttps://github.com/microsoft/DeepSpeed微软\n",
        "".join(f"<a href='https://example.com/p/{i}'>" for i in range(500)) + "\nhttps://github.com/openai/tritonPython\n",
    ]


@pytest.mark.parametrize("number", range(len(texts())))
def test_two_cores_find_exactly_what_one_pass_finds(monkeypatch, number):
    text = texts()[number]
    one_pass = parse_text(text, "notes.md")
    monkeypatch.setattr(seeds_text, "_SPLIT_LINES", 2)  # every seed of 2+ lines goes through the child
    assert parse_text(text, "notes.md") == one_pass
    assert one_pass


def test_the_second_half_is_read_by_the_child(monkeypatch):
    """The function the parser names for its child exists there: a child that cannot find it
    fails, and the parent silently reads every line itself (as after a module moved)."""
    answers = []

    class Watched(ChildCall):
        def result(self):
            answers.append(super().result())
            return answers[-1]

    monkeypatch.setattr(seeds_text, "ChildCall", Watched)
    monkeypatch.setattr(seeds_text, "_SPLIT_LINES", 2)
    assert parse_text(texts()[-4], "notes.md")
    assert answers and all(answer is not None for answer in answers)


def test_a_failing_child_leaves_the_work_to_this_process(monkeypatch):
    text = texts()[-4]
    one_pass = parse_text(text, "notes.md")

    class Failing(ChildCall):
        def __init__(self, module, function, *args):
            super().__init__(module, "no_such_function", *args)

    monkeypatch.setattr(seeds_text, "ChildCall", Failing)
    monkeypatch.setattr(seeds_text, "_SPLIT_LINES", 2)
    assert parse_text(text, "notes.md") == one_pass


def test_the_child_returns_the_functions_result():
    with ChildCall("mirror.seeds.urls", "normalize", "HTTPS://Example.COM:443/a/../b?utm_source=x#top") as call:
        assert call.result() == "https://example.com/b"
    with ChildCall("mirror.seeds.urls", "no_such_function") as call:
        assert call.result() is None


def test_no_child_is_left_behind_when_the_caller_fails():
    start = time.monotonic()
    with pytest.raises(ZeroDivisionError), ChildCall("time", "sleep", 60) as call:
        1 / 0  # noqa: B018
    assert call._process.poll() is not None  # killed, and waited for
    assert time.monotonic() - start < 30
