"""Where sparkfab writes: outputs never replace inputs, never go through a symbolic link and
never delete what sparkfab did not write.

A directory output (render's tree, a report, estimate plots) is written beside its target and
renamed into place; the target must be new, empty, or a tree the same verb wrote before (its
`.sparkfab-output` manifest lists every file, and nothing else may be there). A file output
(a sample file, a plot, an inventory) is written beside and renamed; an existing file is
replaced only when it is a kind sparkfab wrote (the caller says how to recognise one).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from sparkfab.errors import Unavailable, UsageError
from sparkfab.proc import signals_deferred

MANIFEST = ".sparkfab-output"


def _name(path: Path) -> str:
    return str(path) or "''"


def plain_target(path: Path, flag: str) -> Path:
    if not str(path).strip():
        raise UsageError(f"{flag} is empty: name a directory or file")
    if path.is_symlink():
        raise UsageError(f"{flag} {path} is a symbolic link: sparkfab never writes through one")
    return path


def _holds(directory: Path, inputs: Iterable[Path | str]) -> list[Path]:
    base = directory.resolve()
    found = []
    for i in inputs:
        p = Path(i).resolve()
        if p == base or base in p.parents:
            found.append(Path(i))
    return found


def _foreign(directory: Path, kind: str) -> list[str]:
    """Entries of `directory` that a previous `kind` output did not write (all of them if none)."""
    listed: set[str] = set()
    try:
        meta = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        if isinstance(meta, dict) and meta.get("kind") == kind and isinstance(meta.get("files"), list):
            listed = {str(f) for f in meta["files"]} | {MANIFEST}
    except (OSError, ValueError):
        pass
    out = []
    for root, dirs, files in os.walk(directory):
        for name in files + [d for d in dirs if (Path(root) / d).is_symlink()]:
            rel = str((Path(root) / name).relative_to(directory))
            if rel not in listed:
                out.append(rel)
    return sorted(out)


def check_dir(path: Path, kind: str, inputs: Iterable[Path | str] = (), flag: str = "-o") -> Path:
    """Refuse a directory output that would lose data; return the path to write."""
    path = plain_target(path, flag)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{flag} {path} exists and is not a directory")
    held = _holds(path, inputs)
    if held:
        raise UsageError(f"{flag} {path} holds the input {held[0]}: choose an output directory of its own")
    # the tree is swapped in by renaming: neither the working directory nor a mount point can be
    if path.is_dir() and (path.resolve() == Path.cwd().resolve() or os.path.ismount(path)):
        what = "the working directory" if path.resolve() == Path.cwd().resolve() else "a mount point"
        raise UsageError(f"{flag} {path} is {what}, which sparkfab cannot replace: name a directory inside it")
    if path.is_dir():
        foreign = _foreign(path, kind)
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise UsageError(
                f"{flag} {path} holds files sparkfab {kind} did not write ({shown}): "
                "choose a new or empty directory, or remove them"
            )
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _edited(directory: Path) -> list[str]:
    """Files of an earlier output whose contents differ from what the manifest says was written."""
    try:
        sums = json.loads((directory / MANIFEST).read_text(encoding="utf-8")).get("sha256") or {}
        return sorted(rel for rel, want in sums.items() if _digest(directory / rel) != want)
    except (OSError, ValueError, AttributeError, TypeError):
        return []


def replace_dir(
    path: Path, kind: str, write: Callable[[Path], list[Path]], inputs: Iterable[Path | str] = (), flag: str = "-o"
) -> list[Path]:
    """Write a directory output beside `path` with `write(tmp)`, then swap it in; return the
    files as they are named after the swap."""
    path = check_dir(path, kind, inputs, flag)
    edited = _edited(path) if path.is_dir() else []  # said once, where the tree is replaced
    if edited:
        shown = ", ".join(edited[:5]) + (f" and {len(edited) - 5} more" if len(edited) > 5 else "")
        sys.stderr.write(f"warning: {flag} {path}: {shown} changed since sparkfab wrote it; replaced now\n")
    parent = path.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.new-", dir=parent))
    except OSError as exc:
        raise Unavailable(f"{flag} {path}: cannot create it ({exc.strerror or exc})") from None
    try:
        written = write(tmp)
        rel = sorted(str(p.relative_to(tmp)) for p in written)
        sums = {r: _digest(tmp / r) for r in rel if (tmp / r).is_file() and not (tmp / r).is_symlink()}
        manifest = {"kind": kind, "files": rel, "sha256": sums}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        tmp.chmod(0o755)
        with signals_deferred():  # the swap is whole: a signal in it would leave no tree at `path`
            old = None
            if path.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=parent))
                try:
                    path.rename(old / "tree")
                except OSError:
                    old.rmdir()
                    raise
            try:
                tmp.rename(path)
            except OSError:
                if old is not None:  # the earlier tree goes back where it was
                    (old / "tree").rename(path)
                    old.rmdir()
                raise
            if old is not None:
                shutil.rmtree(old)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Unavailable(f"{flag} {path}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [path / p.relative_to(tmp) for p in written]


def check_file(
    path: Path,
    inputs: Iterable[Path | str] = (),
    ours: Callable[[Path], bool] | None = None,
    flag: str = "-o",
    suffix: str = "",
) -> Path:
    """Refuse a file output that would lose data; return the path to write."""
    path = plain_target(path, flag)
    if suffix and path.suffix.lower() != suffix:
        raise UsageError(f"{flag} {path}: name a {suffix} file")
    if path.is_dir():
        raise UsageError(f"{flag} {path} is a directory: name a file")
    if path.exists() and not path.is_file():
        raise UsageError(f"{flag} {path} is not a regular file (a FIFO, device or socket): name a file")
    for i in inputs:
        with contextlib.suppress(OSError):
            if Path(i).exists() and path.exists() and path.samefile(i):
                raise UsageError(f"{flag} {path} is an input of this command: outputs never replace inputs")
    if path.exists() and (ours is None or not ours(path)):
        raise UsageError(f"{flag} {path} exists and sparkfab did not write it: choose a new name, or remove it")
    if not path.absolute().parent.is_dir():
        raise Unavailable(f"{flag} {path}: no directory {path.absolute().parent}")
    return path


def write_file(path: Path, data: bytes | str, mode: int = 0o644, flag: str = "-o") -> None:
    """Write beside, then rename over `path` (checked with check_file first)."""
    raw = data.encode() if isinstance(data, str) else data
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.absolute().parent)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)
        raise Unavailable(f"{flag} {path}: {exc.strerror or exc}") from None


def starts_with(prefix: bytes) -> Callable[[Path], bool]:
    """`ours` for check_file: the file starts with sparkfab's own header."""

    def test(path: Path) -> bool:
        try:
            with path.open("rb") as f:
                return f.read(len(prefix)) == prefix
        except OSError:
            return False

    return test


def png_by_sparkfab(path: Path) -> bool:
    """`ours` for plots: a PNG that carries sparkfab's Software text chunk."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return head.startswith(b"\x89PNG") and b"Software\x00sparkfab" in head


#: matplotlib `savefig(metadata=...)` for every PNG sparkfab writes
PNG_METADATA = {"Software": "sparkfab"}
