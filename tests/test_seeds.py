"""Reading lists: the link inventory of the user's real seeds, pinned line by line, and what the
text, Markdown and HTML readers make of other inputs (bookmark files, saved pages, hostile lines)."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirror._types import Link
from mirror.seeds import decode_seed, parse_text, read_seeds
from mirror.seeds import links as seed_links

from .helpers import SEEDS

S000 = "000_26c02b02fc5889ea.txt"


S001 = "001_c87ee9bc1dd6a88b.txt"


S002 = "002_b501c17af06494dc.txt"


S003 = "003_3f215d8ddfbe88b1.txt"


S004 = "004_662669093c051ded.txt"


@pytest.fixture(scope="module")
def inventory():
    return read_seeds([SEEDS], base=SEEDS.parent)


def at(inventory, seed: str, line: int):
    found = [link for link in inventory.links if link.seed == f"seeds/{seed}" and link.line == line]
    assert found, f"no link recorded at {seed}:{line}"
    return found


def one(inventory, seed: str, line: int):
    (link,) = at(inventory, seed, line)
    return link


def _regex_features_3_11_2_gets_wrong(pattern: str) -> bool:
    """Whether a pattern has a possessive repeat (`*+ ++ ?+ {m,n}+`) or an atomic group `(?>...)`."""
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += 1 + pattern.startswith("^", i + 1)
            i += pattern.startswith("]", i)  # (a "]" first is a character of the class)
            continue
        elif pattern.startswith("(?>", i) or (c in "*+?}" and pattern.startswith("+", i + 1) and not pattern.startswith("(", i - 1)):
            return True
        i += 1
    return False


def test_every_seed_is_read_without_warnings(inventory):
    assert sorted(inventory.seeds) == sorted(f"seeds/{p.name}" for p in SEEDS.glob("*.txt"))
    assert inventory.warnings == []
    assert len(inventory.links) > 300
    for seed in inventory.seeds:
        assert any(link.seed == seed for link in inventory.links), seed


def test_url_glued_to_chinese_text(inventory):
    link = one(inventory, S002, 40)  # DeepSpeedhttps://github.com/microsoft/DeepSpeed微软分布式训练框架
    assert link.url_as_written == "https://github.com/microsoft/DeepSpeed"
    assert link.url == "https://github.com/microsoft/DeepSpeed"
    assert link.title == "DeepSpeed"
    assert link.section == "训练框架"


def test_url_glued_to_latin_word_gets_repair_candidates(inventory):
    link = one(inventory, S002, 58)  # Tritonhttps://github.com/openai/tritonPython 编写高性能 GPU Kernel
    assert link.url_as_written == "https://github.com/openai/tritonPython"
    assert link.candidates[0] == "https://github.com/openai/triton"
    assert link.title == "Triton"
    megatron = one(inventory, S002, 41)
    assert megatron.url_as_written == "https://github.com/NVIDIA/Megatron-LMNVIDIA"
    assert "https://github.com/NVIDIA/Megatron-LM" in megatron.candidates
    blog = one(inventory, S002, 87)  # https://pytorch.org/blog/PyTorch 最新特性
    assert blog.candidates[-1] == "https://pytorch.org/blog/"
    # longest first
    assert [len(c) for c in megatron.candidates] == sorted((len(c) for c in megatron.candidates), reverse=True)


def test_seed_002_has_eleven_latin_glued_urls(inventory):
    glued = [
        link
        for link in inventory.links
        if link.seed == f"seeds/{S002}"
        and link.candidates
        and link.url_as_written.rstrip("/").rsplit("/", 1)[-1][-1:].isalpha()
        and any(ch.isupper() for ch in link.url_as_written.rsplit("/", 1)[-1])
    ]
    written = {link.url_as_written for link in glued}
    eleven = {
        "https://github.com/vllm-project/vllmPagedAttention,Continuous",
        "https://github.com/openai/tritonPython",
        "https://github.com/NVIDIA/Megatron-LMNVIDIA",
        "https://pytorch.org/blog/PyTorch",
        "https://docs.nvidia.com/cuda/cuda-c-programming-guide/CUDA",
        "https://github.com/NVIDIA/TensorRT-LLMNVIDIA",
        "https://github.com/huggingface/text-generation-inferenceHuggingFace",
        "https://developer.nvidia.com/blogGPU",
        "https://ai.googleblog.com/Transformer",
        "https://lilianweng.github.io/OpenAI",
        "https://www.microsoft.com/en-us/research/research-area/artificial-intelligence/DeepSpeed",
    }
    assert len(eleven) == 11 and eleven <= written
    # the only others with a capitalised last word are real names, not glued text (their
    # repairs are tried only after a 404)
    assert written - eleven == {"https://github.com/microsoft/DeepSpeed", "https://github.com/hpcaitech/Colossal-AI"}
    vllm = one(inventory, S002, 49)
    assert vllm.candidates[:3] == (
        "https://github.com/vllm-project/vllmPagedAttention",
        "https://github.com/vllm-project/vllmPaged",
        "https://github.com/vllm-project/vllm",
    )


def test_links_written_without_a_scheme_get_https(inventory):
    reddit = one(inventory, S002, 129)  # Reddit r/MachineLearningreddit.com/r/MachineLearning最新讨论
    assert reddit.url_as_written == "reddit.com/r/MachineLearning"
    assert reddit.url == "https://reddit.com/r/MachineLearning"
    assert reddit.skip_reason is None
    stack = one(inventory, S002, 128)
    assert stack.url == "https://stackoverflow.com/"
    assert stack.title == "Stack Overflow"


def test_title_line_before_url(inventory):
    link = one(inventory, S000, 46)
    assert link.title == "[TensorRT-LLM][5w字]🔥TensorRT-LLM 部署调优-指北 - 知乎"
    assert link.section == "cuda learning & inference"


def test_title_line_after_url(inventory):
    link = one(inventory, S004, 34)
    assert link.url == "https://clay-atlas.com/blog/2023/09/21/huggingface-transformers-streaming/"
    assert link.title.startswith("使用HuggingFace Transformer中的TextStreamer")
    assert link.section == "Inference"
    mixtral = one(inventory, S004, 64)
    assert mixtral.title == "欢迎 Mixtral-当前Hugging Face上最先进的MoE模型"
    assert mixtral.section == "Mixtral"


def test_markdown_link_with_bold_label_section(inventory):
    link = one(inventory, S001, 39)  # - [x] **[VLLM论文](https://arxiv.org/abs/2309.06180)**
    assert link.url == "https://arxiv.org/abs/2309.06180"
    assert link.title == "VLLM论文"
    assert link.section == "VLLM"
    gpt = one(inventory, S001, 33)  # - [x] **[GPT文章解析**](https://medium.com/@sntaus/...)
    assert gpt.title == "GPT文章解析"
    assert gpt.url == "https://medium.com/@sntaus/understanding-self-attention-gpt-models-80ec894eebf0"


def test_markdown_headings_name_the_sections_of_the_links_under_them(inventory):
    link = one(inventory, S003, 32)
    assert link.section == "RLHF"  # #### RLHF under ### LLM 技术原理
    assert one(inventory, S003, 47).section == "数据并行"
    two = at(inventory, S003, 33)  # two links on one line, both kept
    assert [link.url for link in two] == ["https://huggingface.co/blog/zh/rlhf", "https://huggingface.co/blog/rlhf"]


def test_zhihu_redirect_is_unwrapped(inventory):
    link = one(inventory, S001, 143)
    assert link.url_as_written == "https://link.zhihu.com/?target=https%3A//juejin.cn/post/7290740395913969705"
    assert link.url == "https://juejin.cn/post/7290740395913969705"


def test_tracking_parameters_are_stripped(inventory):
    bili = one(inventory, S000, 7)
    assert "vd_source" in bili.url_as_written and "spm_id_from" in bili.url_as_written
    assert bili.url == "https://www.bilibili.com/video/BV1xM4m1m7vA/"
    atatech = one(inventory, S000, 34)
    assert atatech.url == "https://open.atatech.org/articles/11000218484"
    weixin = one(inventory, S000, 35)
    assert weixin.url == "https://mp.weixin.qq.com/s/4l0g2VI_18EuOjaYQuHYHw"
    assert one(inventory, S000, 255).url == "https://zhuanlan.zhihu.com/p/675517271"
    search = one(inventory, S000, 139)  # a search page keeps its keyword
    assert search.url == "https://search.bilibili.com/all?keyword=megatron%E6%A1%86%E6%9E%B6"


def test_identical_arxiv_lines_are_one_page_two_occurrences(inventory):
    first, second = one(inventory, S000, 246), one(inventory, S000, 247)
    assert first.url == second.url == "https://arxiv.org/pdf/2406.06858"
    assert len(inventory.pages["https://arxiv.org/pdf/2406.06858"]) == 2


def test_a_short_line_standing_alone_names_a_section(inventory):
    assert one(inventory, S000, 22).section == "flashattention"
    assert one(inventory, S000, 2).section == "多模态"
    assert one(inventory, S000, 252).section == "mlsys blog"  # a short line standing alone


def test_relative_image_is_skipped_with_reason(inventory):
    link = one(inventory, S004, 62)
    assert link.url_as_written == "/images/img5/Mixtral.png"
    assert link.skip_reason and "relative" in link.skip_reason
    assert link.section == "Mixtral"


def test_front_matter_is_not_a_section(inventory):
    first = one(inventory, S004, 14)
    assert first.url == "https://pytorch.org/blog/high-performance-llama-2/"
    assert first.section == "LLM实战经验"


def test_weixin_query_article_keeps_identifying_parameters(inventory):
    link = one(inventory, S004, 112)
    assert link.url == ("https://mp.weixin.qq.com/s?__biz=MzA3MzI4MjgzMw==&idx=1&mid=2650750181&sn=156dac3c5646143fc2577972f1506836")


def test_a_bookmark_folder_of_thousands_keeps_every_link(tmp_path):
    """Browsers never close <DT>: each bookmark nests in the one before, and past 256 levels the
    HTML parser stopped reading without a word (a folder of 300 kept 251). The closing tags are
    added by patterns CPython 3.11.2 (Debian 12's python3) reads as every 3.11 does: a folder of
    3,000 kept 251 there when they repeated possessively."""
    entries = "".join(
        f'<DT><A HREF="https://example.com/{i}" ADD_DATE="1700000000" ICON="data:image/png;base64,iVBO">第 {i} 篇</A>\n' for i in range(3000)
    )
    bookmarks = tmp_path / "bookmarks.html"
    bookmarks.write_text(
        "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<!-- This is an automatically generated file.\n"
        "     It will be read and overwritten.\n     DO NOT EDIT! -->\n"
        '<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">\n<TITLE>Bookmarks</TITLE>\n<H1>Bookmarks</H1>\n'
        f"<DL><p>\n<DT><H3>收藏</H3>\n<DL><p>\n{entries}</DL><p>\n</DL><p>\n",
        encoding="utf-8",
    )
    links = read_seeds([bookmarks], base=tmp_path).links
    assert [link.url for link in links] == [f"https://example.com/{i}" for i in range(3000)]
    assert {link.section for link in links} == {"收藏"} and links[-1].title == "第 2999 篇"
    assert [link.line for link in links[:2]] == [11, 12] and links[-1].line == 3010


def test_no_pattern_uses_what_cpython_3_11_2_gets_wrong():
    """Possessive repeats and atomic groups (new in 3.11) misbehave on 3.11.2, the python3 of
    Debian 12: none in src/, in a pattern or in a string a pattern is made of."""
    import ast

    import mirror

    assert _regex_features_3_11_2_gets_wrong("(?:(?!</a>).)*+") and _regex_features_3_11_2_gets_wrong("(?>a|b)c")
    assert _regex_features_3_11_2_gets_wrong("a{1,3}+") and not _regex_features_3_11_2_gets_wrong(r"[-*+]\s+x?[+*?]+\++")
    found = []
    for path in Path(mirror.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        strings = {
            target.id: node.value.value
            for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            for target in node.targets
            if isinstance(target, ast.Name) and isinstance(node.value.value, (str, bytes))
        }
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and getattr(call.func.value, "id", None) in ("re", "regex")):
                continue
            for node in ast.walk(call.args[0]) if call.args else ():
                value = node.value if isinstance(node, ast.Constant) else strings.get(node.id) if isinstance(node, ast.Name) else None
                if isinstance(value, bytes):
                    value = value.decode("latin-1")
                if isinstance(value, str) and _regex_features_3_11_2_gets_wrong(value):
                    found.append(f"{path.name}:{call.lineno}: {value[:80]}")
    assert found == []


def test_a_netscape_bookmark_file_gives_its_folders_as_sections(tmp_path):
    bookmarks = tmp_path / "bookmarks.html"
    bookmarks.write_text(
        """<!DOCTYPE NETSCAPE-Bookmark-file-1>
<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
<TITLE>Bookmarks</TITLE>
<H1>Bookmarks</H1>
<DL><p>
    <DT><H3 ADD_DATE="1700000000">机器学习系统</H3>
    <DL><p>
        <DT><A HREF="https://zhuanlan.zhihu.com/p/1?utm_source=x" ADD_DATE="1700000001">FlashAttention 解读</A>
        <DT><H3>Papers</H3>
        <DL><p>
            <DT><A HREF="https://arxiv.org/abs/2205.14135#section" ADD_DATE="1700000002">FlashAttention paper</A>
        </DL><p>
        <DT><A HREF="javascript:alert(1)">bookmarklet</A>
    </DL><p>
    <DT><A HREF="https://example.org/">Top level</A>
</DL><p>
""",
        encoding="utf-8",
    )
    inv = read_seeds([bookmarks], base=tmp_path)
    got = [(link.line, link.url, link.title, link.section, bool(link.skip_reason)) for link in inv.links]
    assert got == [
        (8, "https://zhuanlan.zhihu.com/p/1", "FlashAttention 解读", "机器学习系统", False),
        (11, "https://arxiv.org/abs/2205.14135", "FlashAttention paper", "Papers", False),
        (13, "javascript:alert(1)", "bookmarklet", "机器学习系统", True),
        (15, "https://example.org/", "Top level", "Bookmarks", False),
    ]


def test_html_page_links_use_headings(tmp_path):
    page = tmp_path / "saved.htm"
    page.write_text(
        "<html><body><h2>推理</h2><p>see <a href='https://docs.vllm.ai/'>vLLM docs</a></p>"
        "<h2>Mail</h2><a href='mailto:me@example.com'>me</a></body></html>",
        encoding="utf-8",
    )
    inv = read_seeds([page], base=tmp_path)
    assert [(link.url, link.title, link.section) for link in inv.links] == [
        ("https://docs.vllm.ai/", "vLLM docs", "推理"),
        ("mailto:me@example.com", "me", "Mail"),
    ]
    assert "e-mail" in inv.links[1].skip_reason


def test_html_links_take_the_heading_that_ended_before_them_whichever_walk_finds_it():
    """Where no heading holds a link or another heading, the last heading started is the last
    ended (one event an element); where one does, the walk of starts and ends decides."""
    from mirror.seeds.html import parse_html

    def sections(body: str) -> list[tuple[str, str | None]]:
        return [(link.url, link.section) for link in parse_html(f"<html><body>{body}</body></html>", "s")]

    one, two = "<a href='https://e.com/1'>1</a>", "<p><a href='https://e.com/2'>2</a></p>"
    assert sections(f"{one}<h2>A</h2>{one}<h3>B</h3>{two}") == [("https://e.com/1", None), ("https://e.com/1", "A"), ("https://e.com/2", "B")]
    assert sections(f"<h2>A</h2>{one}<h3>B <a href='https://e.com/in'>in</a></h3>{two}") == [
        ("https://e.com/1", "A"),
        ("https://e.com/in", "A"),
        ("https://e.com/2", "B in"),
    ]
    assert sections(f"<div><h2>A <span><h4>C</h4></span> D</h2></div>{two}") == [("https://e.com/2", "A C D")]  # (not C: it ended first)


@pytest.mark.hostile
def test_a_heading_names_its_section_by_its_first_thousand_characters():
    """Read no further than that: a heading holding the page, in each of 250 nested ones, read
    whole for each, took half a minute for a 4 MB file."""
    from mirror.seeds.html import parse_html

    page = "<html><body><h2>" + "长" * 600 + " <b>" + "句" * 600 + "</b> 尾</h2><a href='https://e.com/1'>1</a></body></html>"
    assert parse_html(page, "s")[0].section == "长" * 600 + " " + "句" * 399
    nested = (
        "<html><body>"
        + "<h1><h2><h3><h4><h5><h6>" * 40
        + "字 " * 400_000
        + "</h6></h5></h4></h3></h2></h1>" * 40
        + "<a href='https://e.com/2'>2</a></body></html>"
    )
    assert parse_html(nested, "s")[0].section == " ".join(["字"] * 500)[:999]


@pytest.mark.hostile
def test_unfetchable_schemes_in_text_are_listed_as_skipped():
    text = "local: file:///etc/passwd\nold: ftp://ftp.example.com/pub/x.tar\ninline data:text/html,<b>hi</b>\n"
    links = parse_text(text, "s.txt")
    assert [link.url_as_written.split(":")[0] for link in links] == ["file", "ftp", "data"]
    assert all(link.skip_reason for link in links)


def test_two_links_on_one_line_have_distinct_columns():
    links = parse_text("see https://a.example/x and https://a.example/x again\n", "s.txt")
    assert [link.col for link in links] == [5, 29]
    assert links[0].url == links[1].url


def test_trailing_punctuation_is_not_part_of_the_url():
    links = parse_text("Read (https://example.com/a_(b)) now. Also https://example.com/c.\n", "s.txt")
    assert [link.url_as_written for link in links] == ["https://example.com/a_(b)", "https://example.com/c"]


@pytest.mark.parametrize(
    ("data", "text", "warns"),
    [
        ("链接 https://例.cn/x".encode(), "链接 https://例.cn/x", False),
        (b"\xef\xbb\xbf" + "标题\nhttps://a.cn/".encode(), "标题\nhttps://a.cn/", False),
        ("标题\nhttps://a.cn/".encode("gb18030"), "标题\nhttps://a.cn/", True),
        ("标题\nhttps://a.cn/".encode("utf-16"), "标题\nhttps://a.cn/", False),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", None, True),
    ],
)
def test_seed_bytes_are_decoded_with_a_warning_where_the_encoding_was_guessed(data, text, warns):
    decoded, warning = decode_seed(data)
    assert decoded == text
    assert bool(warning) == warns


def test_bad_files_are_skipped_or_decoded_with_warnings(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00")
    (tmp_path / "gbk.txt").write_bytes("显存优化\nhttps://zhuanlan.zhihu.com/p/1\n".encode("gbk"))
    (tmp_path / "bom.md").write_bytes(b"\xef\xbb\xbf# \xe6\xa0\x87\xe9\xa2\x98\n[x](https://b.example/)\n")
    inv = read_seeds([tmp_path], base=tmp_path)
    assert {(link.seed, link.url, link.title, link.section) for link in inv.links} == {
        ("gbk.txt", "https://zhuanlan.zhihu.com/p/1", "显存优化", None),
        ("bom.md", "https://b.example/", "x", "标题"),
    }
    joined = "\n".join(inv.warnings)
    assert "empty.txt: empty" in joined
    assert "image.png: binary file" in joined
    assert "gbk.txt: not UTF-8; decoded as GB18030" in joined


@pytest.mark.hostile
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_parse_without_raising(data):
    text, _ = decode_seed(data)
    if text is not None:
        for link in parse_text(text, "fuzz.txt"):
            assert link.line >= 1 and link.col >= 1


@pytest.mark.hostile
@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("ab显 \n:：#*-[]()<>/.h") + ["https://", "http://x.cn/", "**", "\n\n"]), max_size=60))
def test_markdown_like_text_parses_without_raising(pieces):
    text = "".join(pieces)
    lines = text.split("\n")
    for link in parse_text(text, "fuzz.md"):  # each link where it was written
        assert 1 <= link.line <= len(lines) and link.col >= 1
        assert link.url_as_written and lines[link.line - 1][link.col - 1 :].startswith(link.url_as_written), (link, text)


def test_fast_link_construction_is_the_dataclass():
    values = ("https://a.example/1", "a.example/1", "s.md", 3, 7, "标题", None, "why", ("https://a.example/",))
    fast, slow = seed_links._link(*values), Link(*values)
    assert fast == slow and hash(fast) == hash(slow) and vars(fast) == vars(slow)
    assert list(vars(fast)) == [f.name for f in dataclasses.fields(Link)]  # a new field must be added there too


def test_reading_seeds_leaves_the_garbage_collector_as_it_found_it(tmp_path):
    seed = tmp_path / "s.txt"
    seed.write_text("https://a.example/1\n", encoding="utf-8")
    assert gc.isenabled()
    assert len(read_seeds([seed], base=tmp_path).links) == 1
    assert gc.isenabled()
    gc.disable()
    try:
        read_seeds([seed], base=tmp_path)
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.hostile
def test_a_line_of_20000_urls_gives_20000_links():
    line = " ".join(f"https://example.com/p/{i}" for i in range(20_000))
    links = parse_text(line + "\n", "one-line.txt")
    assert [link.url_as_written for link in links] == [f"https://example.com/p/{i}" for i in range(20_000)]
    assert {link.line for link in links} == {1} and len({link.col for link in links}) == 20_000


@pytest.mark.hostile
def test_a_line_of_unclosed_anchors_gives_every_url():
    line = "".join(f"<a href='https://example.com/p/{i}'>" for i in range(5_000))
    links = parse_text(line + "\n", "unclosed.txt")
    assert [link.url_as_written for link in links] == [f"https://example.com/p/{i}" for i in range(5_000)]


@pytest.mark.hostile
def test_trailing_brackets_of_a_long_url_are_trimmed_as_before():
    links = parse_text("see (https://example.com/a_(b)" + ")" * 20_000 + ".\n", "brackets.txt")
    assert [link.url_as_written for link in links] == ["https://example.com/a_(b)"]


@pytest.mark.hostile
def test_html_seed_sections_come_from_the_heading_before_each_link():
    from mirror.seeds.html import parse_html

    parts = "".join(f"<h2>Part {k}</h2>" + "".join(f"<p><a href='https://e.com/{k}/{i}'>x</a></p>" for i in range(1000)) for k in range(5))
    links = parse_html(
        f"<html><body><p><a href='https://e.com/first'>first</a></p>{parts}<h3><a href='https://e.com/in-heading'>in</a></h3></body></html>", "s.html"
    )
    assert links[0].section is None
    assert [link.section for link in links[1:-1]] == [f"Part {k}" for k in range(5) for _ in range(1000)]
    assert links[-1].section == "Part 4"  # a link inside a heading: the heading before it, as XPath's preceding::


def test_task_items_mailto_prose_and_relative_links():
    text = "\n".join(
        [
            "- [ ] https://example.com/todo",
            "- [x] https://example.com/done",
            "Questions? Write to mailto:someone@example.com",
            "More in ./notes.md and `./build.sh`.",
            '[paper]: https://arxiv.org/abs/2205.14135 "FlashAttention"',
            "[notes]: ./notes/attention.md",
        ]
    )
    links = {(link.line, link.url): link for link in parse_text(text, "list.md")}
    assert links[(1, "https://example.com/todo")].title is None
    assert links[(2, "https://example.com/done")].title is None
    assert links[(3, "mailto:someone@example.com")].title is None
    notes = links[(4, "./notes.md")]
    assert notes.skip_reason and "relative" in notes.skip_reason
    assert not any(url == "./build.sh" for _, url in links)  # code, not a link
    assert links[(5, "https://arxiv.org/abs/2205.14135")].title == "FlashAttention"
    assert "relative" in links[(6, "./notes/attention.md")].skip_reason


def test_headings_labels_and_prose_in_brackets_stay_what_they_are():
    text = "\n".join(
        [
            "## Build notes (./configure flags)",
            "- https://example.com/one",
            "**Read ./later:**",
            "- https://example.com/two",
            "[TODO]: later",
            "[y]: //cdn.example.com/x.js",
        ]
    )
    links = {link.url: link for link in parse_text(text, "list.md")}
    assert links["https://example.com/one"].section == "Build notes (./configure flags)"
    assert links["https://example.com/two"].section == "Read ./later"
    assert set(links) == {"https://example.com/one", "https://example.com/two", "https://cdn.example.com/x.js"}
