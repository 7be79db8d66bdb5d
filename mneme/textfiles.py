"""What text a file holds: its encoding found, its byte-order mark dropped, non-text refused by name.

Users bring text in whatever encoding their tools wrote: UTF-8 with or without a BOM, GB18030/GBK (common
for Chinese), UTF-16 (Windows "Unicode"), legacy code pages. A BOM decides; otherwise strict UTF-8 is tried
first (by far the most common, and a clean UTF-8 decode is almost never wrong); otherwise
``charset-normalizer`` (maintained, pure Python, already a dependency of the HTTP stack) ranks candidate
encodings by how much noise each decode shows. Short Chinese texts decode cleanly in several CJK code pages,
so on a tie GB18030 wins (Mneme is Chinese-first; GB18030 is a superset of GBK and GB2312), and cp1252 wins
among Western code pages. ``encoding=`` overrides the guess.

A file that is not text (binary bytes, NULs outside UTF-16/32) or not a regular file (a directory, a
device such as ``/dev/null``, a FIFO, a socket) raises ``UnreadableFileError`` saying which; a FIFO is
never opened, so nothing blocks.
"""

from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from mneme.errors import UnreadableFileError

MAX_FILE_BYTES = 20_000_000
"""Largest file read (the documents limit is 5,000,000 characters; 4 bytes each in UTF-32)."""
PREFERRED_ON_TIE = ("gb18030", "cp1252")
"""Encodings that win when several decode equally cleanly."""
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),  # before UTF-16: they start alike
    (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
)
_CONTROL = frozenset(range(0x20)) - {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1B}


@dataclass(frozen=True)
class TextFile:
    """A file's text (no BOM) and the encoding it was read with."""

    text: str
    encoding: str


def _kind_of(mode: int) -> str | None:
    """What a non-regular file is, in words (``None`` for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_regular(path: Path) -> None:
    """Raise ``UnreadableFileError`` unless ``path`` is an existing regular file (symlinks followed)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise UnreadableFileError(f"{path}: no such file or directory") from None
    except PermissionError:
        raise UnreadableFileError(f"{path}: permission denied") from None
    except OSError as exc:
        raise UnreadableFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    kind = _kind_of(mode)
    if kind is not None:
        raise UnreadableFileError(f"{path} is {kind}, not a text file")


def _looks_binary(text: str) -> bool:
    """Control characters (NUL, bell, …) in more than 1 % of the text (or any NUL): not text."""
    if "\x00" in text:
        return True
    sample = text[:100_000]
    controls = sum(1 for ch in sample if ord(ch) in _CONTROL)
    return controls > len(sample) / 100


def decode(data: bytes, *, encoding: str | None = None, name: str = "input") -> TextFile:
    """The text of ``data``: the given ``encoding``, else its BOM's, else UTF-8, else the cleanest guess."""
    if encoding is not None:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise UnreadableFileError(f"unknown encoding {encoding!r}") from None
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError as exc:
            raise UnreadableFileError(f"{name} is not valid {encoding} (byte {exc.start}); "
                                      "leave out --encoding to detect it") from None
        return TextFile(text.removeprefix("\ufeff"), encoding)
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError:
                break  # a BOM-like start that is not one: guess below
            return TextFile(text.removeprefix("\ufeff"), codec)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if not _looks_binary(text):
            return TextFile(text, "utf-8")
    guessed = _guess(data)  # NULs may be UTF-16 without a BOM
    if guessed is None:
        raise UnreadableFileError(f"{name} looks binary, not text (no text encoding decodes it cleanly; "
                                  "if it is text, name its encoding with --encoding)")
    return guessed


def _guess(data: bytes) -> TextFile | None:
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        return None
    best = min(m.chaos for m in matches)
    tied = [m for m in matches if m.chaos <= best + 1e-9]
    names = {codecs.lookup(m.encoding).name: m for m in tied}
    chosen = next((names[p] for p in PREFERRED_ON_TIE if p in names), tied[0])
    text = str(chosen)
    if _looks_binary(text):
        return None
    return TextFile(text.removeprefix("\ufeff"), codecs.lookup(chosen.encoding).name)


def read_text_file(path: Path, *, encoding: str | None = None) -> TextFile:
    """Read ``path`` as text (see the module docstring); ``UnreadableFileError`` says why it cannot be."""
    check_regular(path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise UnreadableFileError(f"{path} is too large ({size:,} bytes; at most {MAX_FILE_BYTES:,})")
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, f | getattr(os, "O_NONBLOCK", 0))) as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except PermissionError:
        raise UnreadableFileError(f"{path}: permission denied") from None
    except OSError as exc:
        raise UnreadableFileError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return decode(data, encoding=encoding, name=str(path))
