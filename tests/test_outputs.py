"""The output boundary (repaudit/outputs.py): ``-o`` never replaces a device, a FIFO, a symbolic link or a directory,
and a write that fails leaves the old file, no partial file and no ``wrote`` line."""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repaudit.cli import app
from repaudit.errors import EX_IOERR, EX_USAGE, EXIT_INPUT, OutputError, UnsafeOutputError

ROOT = Path(__file__).resolve().parents[1]
A = str(ROOT / "tests" / "fixtures" / "lmeval_config" / "openbookqa_0shot")
B = str(ROOT / "tests" / "fixtures" / "lmeval_config" / "openbookqa_3shot")


def _targets(tmp: Path, suffix: str) -> dict[str, Path]:
    """A device node (a copy of /dev/null's numbers, made with mknod), a FIFO, a symbolic link to a regular file, a
    dangling link and a directory, each in ``tmp`` with a name ending in ``suffix``."""
    (tmp / "real.md").write_text("keep me\n")
    targets = {k: tmp / f"{k}{suffix}" for k in ("fifo", "link", "dangling", "dir")}
    os.mkfifo(targets["fifo"])
    targets["link"].symlink_to("real.md")
    targets["dangling"].symlink_to("absent.md")
    targets["dir"].mkdir()
    try:
        os.mknod(tmp / f"device{suffix}", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        targets["device"] = tmp / f"device{suffix}"
    except PermissionError:  # not root: the other kinds are still tested
        pass
    return targets


def _state(p: Path) -> tuple:
    """What a path is, as lstat and readlink tell it (never following a link): unchanged means the same tuple."""
    st = os.lstat(p)
    return (stat.S_IFMT(st.st_mode), st.st_rdev, st.st_ino, os.readlink(p) if p.is_symlink() else None,
            sorted(os.listdir(p)) if stat.S_ISDIR(st.st_mode) else None)


#: (command line with PATH for the output, the suffix it needs, the exit code the table of repaudit/errors.py gives an
#: output path that writing would replace: 64 in every command, as issue 63 asked)
CASES = [
    (["compare", A, B, "-o", "PATH"], ".md", EX_USAGE),
    (["compare", A, B, "--docs-csv", "PATH"], ".csv", EX_USAGE),
    (["gate", A, B, "--max-drop", "20", "-o", "PATH"], ".md", EX_USAGE),
    (["gate", A, B, "--max-drop", "20", "--junit", "PATH"], ".xml", EX_USAGE),
    (["factors", "-o", "PATH"], ".md", EX_USAGE),
    (["appendix", A, "-o", "PATH"], ".md", EX_USAGE),
    (["run", "--task", "arc_easy", "--limit", "2", "-o", "PATH"], ".json", EX_USAGE),
    (["variance", A, B, "--across", "model", "-o", "PATH"], ".md", EX_USAGE),
]


@pytest.mark.parametrize("args,suffix,code", CASES, ids=[f"{a[0]} {a[-2]}" for a, _, _ in CASES])
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_unchanged(tmp_path, args, suffix, code):
    for kind, target in _targets(tmp_path, suffix).items():
        before = _state(target)
        res = CliRunner().invoke(app, [str(target) if a == "PATH" else a for a in args])
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        assert res.exit_code == code, (kind, res.output)
        assert len(lines) == 1 and lines[0].startswith("error:") and "wrote" not in res.output, (kind, res.output)
        assert {"device": "is a character device, not a regular file", "fifo": "is a FIFO (named pipe)",
                "link": "is a symbolic link (to 'real.md')", "dangling": "is a symbolic link (to 'absent.md')",
                "dir": "is a directory"}[kind] in lines[0], lines[0]
        assert _state(target) == before, kind
    assert (tmp_path / "real.md").read_text() == "keep me\n" and not (tmp_path / "absent.md").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_dev_full_and_dev_null_are_refused(tmp_path):
    for dev in ("/dev/full", "/dev/null"):
        before = _state(Path(dev))
        res = CliRunner().invoke(app, ["compare", A, B, "-o", dev])
        assert res.exit_code == EX_USAGE and "is a character device, not a regular file" in res.stderr
        assert "wrote" not in res.output and _state(Path(dev)) == before


def _fsize_limit(limit: int):
    def apply() -> None:  # in the child: writes past `limit` bytes fail with EFBIG (Python ignores SIGXFSZ)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.parametrize("args,code", [
    (["compare", A, B, "-o", "OUT.md"], EXIT_INPUT),
    (["gate", A, B, "--max-drop", "20", "-o", "OUT.json"], EX_IOERR),
])
def test_a_failed_write_exits_with_the_io_code_no_wrote_and_no_partial_file(tmp_path, args, code):
    """A write that fails midway (a file-size limit of 2 KiB: the kernel answers EFBIG, as a full disk answers
    ENOSPC) is an error: the old file stays as it was, no temporary file is left, no ``wrote`` line is printed."""
    out = tmp_path / args[-1]
    out.write_text("old\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    res = subprocess.run([sys.executable, "-m", "repaudit", *[str(out) if a == args[-1] else a for a in args]],
                         capture_output=True, text=True, env=env, preexec_fn=_fsize_limit(2048), timeout=300)
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == code, res.stderr
    assert len(lines) == 1 and "could not be written (File too large); nothing was written" in lines[0], res.stderr
    assert "wrote" not in res.stderr + res.stdout and "Traceback" not in res.stderr
    assert out.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_write_file_and_write_folder_refuse_links_and_devices(tmp_path):
    from repaudit.outputs import write_file, write_folder

    (tmp_path / "real.json").write_text("x")
    (tmp_path / "link.json").symlink_to("real.json")
    with pytest.raises(UnsafeOutputError, match="is a symbolic link"):
        write_file(tmp_path / "link.json", "y")
    with pytest.raises(UnsafeOutputError, match="is a symbolic link"):  # export's folder: the record's own path
        write_folder(tmp_path, {"link.json": b"x"})
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "x"
    assert write_file(tmp_path / "new" / "r.json", "z").read_text() == "z"  # a missing folder is created
    with pytest.raises(TypeError):
        write_file(tmp_path / "t.json", 12345)  # not text or bytes: nothing is left behind
    assert not (tmp_path / "t.json").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert issubclass(OutputError, Exception)


def test_every_written_report_says_wrote(tmp_path):
    """Issue 63: appendix -o printed no 'wrote' line (factors, --docs-csv and --junit neither)."""
    cases = [(["appendix", A, "-o", str(tmp_path / "a.md")], [tmp_path / "a.md"]),
             (["factors", "-o", str(tmp_path / "f.md")], [tmp_path / "f.md"]),
             (["compare", A, B, "--docs-csv", str(tmp_path / "d.csv")], [tmp_path / "d.csv"]),
             (["gate", A, B, "--max-drop", "20", "--junit", str(tmp_path / "g.xml"), "-o", str(tmp_path / "g.md")],
              [tmp_path / "g.xml", tmp_path / "g.md"])]
    for args, paths in cases:
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        for p in paths:
            assert p.is_file() and f"wrote {p}" in res.stderr, (args, res.stderr)
