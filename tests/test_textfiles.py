"""Reading any text file: encodings detected (BOM, UTF-8, GB18030/GBK, UTF-16), non-text refused by name."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mneme.errors import InvalidInputError, UnreadableFileError
from mneme.textfiles import decode, read_text_file

ZH_MD = "# 退货政策\n\n三十天内可以无理由退货，请保留发票。我的猫叫豆豆。\n"
EN_MD = "# Returns\n\nYou may return goods within thirty days; keep the receipt.\n"


@pytest.mark.parametrize(("text", "encoding", "detected"), [
    (ZH_MD, "utf-8", "utf-8"),
    ("\ufeff" + ZH_MD, "utf-8", "utf-8-sig"),
    (ZH_MD, "gbk", "gb18030"),
    (ZH_MD, "gb18030", "gb18030"),
    ("我的猫叫豆豆", "gbk", "gb18030"),  # short: cp949 decodes it just as cleanly; GB18030 wins the tie
    ("\ufeff" + ZH_MD, "utf-16-le", "utf-16"),
    ("\ufeff" + ZH_MD, "utf-16-be", "utf-16"),
    (EN_MD + "hello 世界\n", "utf-16-le", "utf-16-le"),  # no BOM: NUL bytes tell
    ("\ufeff" + EN_MD, "utf-32-le", "utf-32"),
    ("Café crème brûlée à la carte\n", "cp1252", "cp1252"),
])
def test_text_is_decoded_whatever_its_encoding(text: str, encoding: str, detected: str) -> None:
    got = decode(text.encode(encoding))
    assert got.text == text.removeprefix("\ufeff")
    assert got.encoding == detected


@given(st.text(alphabet=st.sampled_from("abc XYZ\n。，记忆文档检索北京上海猫狗é"), min_size=1, max_size=200),
       st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32"]))
def test_unicode_encodings_round_trip(text: str, encoding: str) -> None:
    assert decode(text.encode(encoding)).text == text


@pytest.mark.parametrize("data", [
    bytes.fromhex("89504e470d0a1a0a0000000d49484452") + bytes(range(256)) * 4,  # a PNG's start
    gzip.compress(b"hello world " * 200),
    b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8,
    bytes(2000),
])
def test_binary_data_is_refused_as_binary(data: bytes) -> None:
    with pytest.raises(UnreadableFileError, match="binary"):
        decode(data, name="blob.txt")


def test_an_explicit_encoding_is_used_or_refused_clearly() -> None:
    data = ZH_MD.encode("gbk")
    assert decode(data, encoding="gbk").text == ZH_MD
    with pytest.raises(UnreadableFileError, match="not valid utf-8"):
        decode(data, encoding="utf-8", name="zh.md")
    with pytest.raises(UnreadableFileError, match="unknown encoding"):
        decode(data, encoding="no-such-codec")


def test_special_files_are_named_for_what_they_are(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cases = {Path("/dev/null"): "character device", tmp_path: "directory", fifo: "named pipe",
             tmp_path / "missing.md": "no such file"}
    for path, what in cases.items():
        with pytest.raises(UnreadableFileError, match=what) as info:
            read_text_file(path)  # a FIFO must not block: it is never opened
        assert str(path) in str(info.value)
    assert issubclass(UnreadableFileError, InvalidInputError)


def test_files_are_read_with_their_bom_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bom.md"
    path.write_bytes(("\ufeff" + EN_MD).encode("utf-8"))
    assert read_text_file(path).text.startswith("# Returns")
    (tmp_path / "empty.txt").write_bytes(b"")
    assert read_text_file(tmp_path / "empty.txt").text == ""
