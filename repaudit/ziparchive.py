"""ZIP archives through the input boundary (inspect_ai's ``.eval`` logs): limits first, member by member.

Part of the boundary (:mod:`repaudit.boundary`): the central directory is checked — entry count, names, declared
sizes — before any member is decompressed, and no member is decompressed past its declared size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from repaudit.boundary import LIMITS, InputError, Limits, parse_json

#: ZIP compression methods a member may use: stored, deflate, Zstandard (inspect_ai's default)
ZIP_METHODS = {0: "stored", 8: "deflate", 93: "zstd"}


def is_zip(path: Path) -> bool:
    """Whether ``path`` starts like a ZIP archive (a ``.eval`` log is one); a missing file is not."""
    try:
        with open(path, "rb") as f:
            return f.read(4) in (b"PK\x03\x04", b"PK\x05\x06")
    except OSError:
        return False


class ZipArchive:
    """A ZIP archive read member by member, limits first: nothing is decompressed before the central
    directory's entry count, entry names and declared sizes are checked, and no member is ever
    decompressed past its declared size (a bomb that lies about its size stops there).

    Members are never extracted to disk, but an entry name that is absolute or climbs out of the archive
    (``../``), or holds a NUL or a backslash, marks a file no harness writes: it is refused.

    Raises (on open):
        InputError: not a ZIP, over :attr:`Limits.max_zip_entries`, a bad entry name, or a member
            declared larger than :attr:`Limits.max_bytes`.
    """

    def __init__(self, path: Path, limits: Limits = LIMITS, what: str = "ZIP archive"):
        import zipfile

        self.path, self.limits, self._read = Path(path), limits, 0
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            raise InputError(path, None, "does not exist") from None
        except OSError as exc:
            raise InputError(path, None, f"cannot be read ({exc.strerror or type(exc).__name__})") from None
        if self.path.is_dir():
            raise InputError(path, None, f"is a directory, not a {what}")
        if size > limits.max_bytes:
            raise InputError(path, None, f"is {size:,} bytes, over the limit of {limits.max_bytes:,} for a {what}")
        try:
            self._zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
            raise InputError(path, None, f"is not a readable {what} ({str(exc).splitlines()[0][:160]})") from None
        infos = self._zip.infolist()
        if len(infos) > limits.max_zip_entries:
            raise InputError(path, None, f"has {len(infos):,} entries, over the limit of "
                                         f"{limits.max_zip_entries:,} for a {what}")
        self.members: dict[str, Any] = {}
        for info in infos:
            name = info.filename
            if name.startswith("/") or "\\" in name or "\x00" in name or ".." in name.split("/") or ":" in name[:3]:
                raise InputError(path, None, f"has an entry named {name[:120]!r}, which climbs out of the archive or "
                                             "is not a plain relative name: refused")
            if info.file_size > limits.max_bytes:
                raise InputError(path, None, f"entry '{name[:120]}' declares {info.file_size:,} bytes, over the "
                                             f"limit of {limits.max_bytes:,}")
            self.members[name] = info  # a name written twice: the later entry wins, as in zipfile

    def names(self) -> list[str]:
        return list(self.members)

    def read(self, name: str) -> bytes:
        """The decompressed bytes of member ``name``, checked against its declared size and CRC-32.

        Raises:
            InputError: no such member, an unsupported compression method, corrupt or truncated data, or
                the members read so far declaring more than :attr:`Limits.max_zip_read` bytes.
        """
        import zipfile
        import zlib

        info = self.members.get(name)
        if info is None:
            raise InputError(self.path, None, f"has no entry '{name[:120]}'")
        if info.compress_type not in ZIP_METHODS:
            raise InputError(self.path, None, f"entry '{name[:120]}' uses ZIP compression method "
                                              f"{info.compress_type}; repaudit reads {', '.join(ZIP_METHODS.values())}")
        self._read += info.file_size
        if self._read > self.limits.max_zip_read:
            raise InputError(self.path, None, f"its members declare more than {self.limits.max_zip_read:,} bytes "
                                              "in all, over the limit")
        try:
            if info.compress_type != 93:
                data = self._zip.read(info)
            else:
                data = self._zstd(info)
        except InputError:
            raise
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, RuntimeError) as exc:
            raise InputError(self.path, None, f"entry '{name[:120]}' is corrupt or truncated "
                                              f"({str(exc).splitlines()[0][:160] or type(exc).__name__})") from None
        if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
            raise InputError(self.path, None, f"entry '{name[:120]}' is corrupt (its size or CRC-32 differs from "
                                              "the central directory's)")
        return data

    def _zstd(self, info: Any) -> bytes:
        import zstandard

        fp = self._zip.fp
        if fp is None:  # zipfile's own read says the same of a closed archive
            raise ValueError("Attempt to use ZIP archive that was already closed")
        fp.seek(info.header_offset)
        head = fp.read(30)
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            raise InputError(self.path, None, f"entry '{info.filename[:120]}' has no local header where the "
                                              "central directory says")
        skip = int.from_bytes(head[26:28], "little") + int.from_bytes(head[28:30], "little")
        fp.seek(info.header_offset + 30 + skip)
        raw = fp.read(info.compress_size)
        if len(raw) != info.compress_size:
            raise InputError(self.path, None, f"entry '{info.filename[:120]}' is truncated")
        try:
            # max_output_size bounds a frame that declares no content size; a frame that declares more
            # than the central directory is refused by the size check after
            return zstandard.ZstdDecompressor().decompress(raw, max_output_size=max(info.file_size, 1))
        except zstandard.ZstdError as exc:
            raise InputError(self.path, None, f"entry '{info.filename[:120]}' is not valid Zstandard data "
                                              f"({str(exc)[:160]})") from None

    def json(self, name: str) -> Any:
        """Member ``name`` as JSON, after :func:`decode` and :func:`parse_json` (errors say the member)."""
        return parse_json(decode_member(self.read(name), self.path, name), self.path, self.limits, where=f"{name}: ")

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> ZipArchive:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def decode_member(data: bytes, path: Path, name: str) -> str:
    """UTF-8 text of a ZIP member; the error names the member and the byte offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"entry '{name[:120]}' is not UTF-8 text (invalid byte at offset "
                                     f"{exc.start})") from None
