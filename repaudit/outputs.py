"""The output boundary: every file a command writes — a report, a run file, a plot, JUnit XML, CSV, an EEE export —
is checked and written here, and nowhere else.

Two steps, as :mod:`repaudit.boundary` is for inputs:

1. :func:`check_target`, before any work (so that a long run never fails at its end): the path names a regular
   file or nothing yet, in a folder that can be written. A path that exists and is not a regular file is refused
   with an :class:`~repaudit.errors.UnsafeOutputError` (a bad value of ``-o``; exit 64 in every command): a directory,
   a symbolic link (renaming over it would replace the link, and writing through it would change a file the path
   does not name), a character or block device (``/dev/null``, ``/dev/full``), a FIFO or a socket. Writing there
   would replace the device or the link with a regular file — as root, ``-o /dev/null`` would replace
   ``/dev/null``.
2. :func:`write_file`: the bytes go to a temporary file in the same folder, are flushed and ``fsync``-ed (a full
   disk or a failing device is seen here, not later), and the file is renamed over the path, which is checked
   once more just before. Any failure raises :class:`~repaudit.errors.OutputError` and removes the temporary
   file: the path keeps what it held, and no partial file is left.

:func:`write_folder` writes a set of files under one folder (``export``) by the same rules; :func:`append_text`
appends to a file that a CI system names (``$GITHUB_STEP_SUMMARY``), where appending is the documented intent.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from repaudit.errors import OutputError, UnsafeOutputError

#: a file name longer than this (bytes) is rejected by every common file system
MAX_NAME_BYTES = 255


def _kind(mode: int) -> str | None:
    """What a non-regular file is, in words; ``None`` for a regular file."""
    for test, word in ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return None if stat.S_ISREG(mode) else "not a regular file"


def refuse_non_regular(path: Path, what: str = "output") -> None:
    """Refuse ``path`` if it exists and is not a regular file (the link itself is examined, never its target).

    Raises:
        UnsafeOutputError: ``path`` is a directory, a symbolic link (dangling or not), a device, a FIFO or a socket.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:  # a component that is a file, a name too long: check_target says which
        raise OutputError(f"{what} '{path}' cannot be written ({exc.strerror or exc})") from None
    kind = _kind(mode)
    if kind is None:
        return
    if kind == "a directory":
        raise UnsafeOutputError(f"{what} '{path}' is a directory: give a file name")
    if kind == "a symbolic link":
        target = os.readlink(path)
        raise UnsafeOutputError(f"{what} '{path}' is a symbolic link (to '{target}'): writing would replace the "
                                "link, not the file it names; give the path of a regular file (nothing was written)")
    raise UnsafeOutputError(f"{what} '{path}' is {kind}, not a regular file: writing would replace it; give the path "
                            "of a regular file (nothing was written)")


def check_target(path: Path, what: str = "output", mkdir: bool = False) -> None:
    """``path`` can be written as a regular file; checked before any work. Creates nothing: where the folder
    exists, a temporary file is created and removed in it (the only reliable test, e.g. for ``/proc`` or a
    read-only mount); a folder that does not exist is an error unless ``mkdir`` (``--mkdir``), and then the nearest
    existing ancestor must be a writable directory.

    Raises:
        UnsafeOutputError: ``path`` exists and is not a regular file (:func:`refuse_non_regular`).
        OutputError: a file name over :data:`MAX_NAME_BYTES` bytes, a file where a folder should be, a missing folder
            without ``mkdir``, or a folder that cannot be written.
    """
    path = Path(path)
    if len(path.name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise OutputError(f"{what} '{str(path)[:80]}…' has a file name over {MAX_NAME_BYTES} bytes")
    parent = path.parent
    ancestor = next((p for p in [parent, *parent.parents] if p.exists()), None)
    if ancestor is None or not ancestor.is_dir():
        raise OutputError(f"{what} '{path}' cannot be written: '{ancestor}' is a file, not a folder")
    refuse_non_regular(path, what)
    if ancestor != parent:
        if not mkdir:
            raise OutputError(f"{what} '{path}' cannot be written: folder '{parent}' does not exist (create it, or "
                              "pass --mkdir)")
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise OutputError(f"{what} '{path}' cannot be written: folder '{ancestor}' is not writable")
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", dir=parent)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise OutputError(f"{what} '{path}' cannot be written in '{parent}' ({exc.strerror or exc})") from None


def _write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd``, then ``fsync``: a short write, a full disk (``ENOSPC``), a file-size limit
    (``EFBIG``) or a device error (``EIO``) raises OSError here."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
    os.fsync(fd)


def write_file(path: Path, content: str | bytes, what: str = "output") -> Path:
    """Write text (UTF-8) or bytes to ``path`` atomically: a temporary file in the same folder, written, flushed and
    ``fsync``-ed, then renamed over ``path`` (created with its missing folders). Returns ``path``.

    Raises:
        UnsafeOutputError: ``path`` is (or became meanwhile) something other than a regular file.
        OutputError: the write, the flush or the rename failed (a full disk, a file-size limit, permissions changed
            meanwhile); the temporary file is removed and ``path`` keeps what it held.
        TypeError: ``content`` is neither text nor bytes (nothing is left behind either).
    """
    path = Path(path)
    refuse_non_regular(path, what)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:40]}.", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"{what} '{path}' cannot be written ({exc.strerror or exc}); nothing was written") from None
    try:
        try:
            _write_all(fd, content.encode("utf-8") if isinstance(content, str) else content)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a report or run file is meant to be shared
        refuse_non_regular(path, what)  # it may have changed since the check before the work
        os.replace(tmp, path)
    except OSError as exc:
        _unlink(tmp)
        raise OutputError(f"{what} '{path}' could not be written ({exc.strerror or type(exc).__name__}); nothing "
                          "was written") from None
    except BaseException:
        _unlink(tmp)
        raise
    return path


def _unlink(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def write_folder(out_dir: Path, files: dict[str, bytes], what: str = "output") -> list[Path]:
    """Every file of ``files`` (a path relative to ``out_dir`` → its bytes) under ``out_dir`` (created if missing;
    a symbolic link to a folder is written through: a folder is what ``-o`` names here): written into a temporary
    folder there, each ``fsync``-ed, then renamed into place. A file already there must be a regular file holding
    the same bytes. Returns the paths, sorted.

    Raises:
        UnsafeOutputError: a target that exists and is not a regular file (nothing written).
        OutputError: a file there with other bytes (nothing written), or a write that fails (the files this call
            placed are removed).
    """
    for rel in files:
        refuse_non_regular(out_dir / rel, what)
    for rel, data in files.items():
        target = out_dir / rel
        if target.exists() and target.read_bytes() != data:
            raise OutputError(f"'{target}' exists with other content: remove it or export into another folder")
    try:
        out_dir.mkdir(exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".repaudit-export-", dir=out_dir))
    except OSError as exc:
        raise OutputError(f"{what} '{out_dir}' cannot be written ({exc.strerror or exc})") from None
    placed: list[Path] = []
    try:
        ordered = sorted(files.items())
        for n, (_rel, data) in enumerate(ordered):
            fd = os.open(tmp / str(n), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
        for n, (rel, _) in enumerate(ordered):
            target = out_dir / rel
            existed = target.exists()
            target.parent.mkdir(parents=True, exist_ok=True)
            refuse_non_regular(target, what)
            os.replace(tmp / str(n), target)
            if not existed:
                placed.append(target)
    except OSError as exc:
        for p in placed:
            p.unlink(missing_ok=True)
        raise OutputError(f"{what} '{out_dir}' cannot be written ({exc.strerror or exc}); nothing kept") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [out_dir / rel for rel in sorted(files)]


def append_text(path: Path, text: str, what: str = "output") -> None:
    """Append ``text`` (UTF-8) to ``path``, a file another program names for it (``$GITHUB_STEP_SUMMARY``):
    appending replaces nothing, so any file but a directory is accepted, and the write is flushed.

    Raises:
        OutputError: a directory, or a write or flush that fails.
    """
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
    except OSError as exc:
        raise OutputError(f"{what} '{path}' could not be written ({exc.strerror or type(exc).__name__})") from None
