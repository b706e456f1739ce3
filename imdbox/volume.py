"""The volume's files, read and written from outside through a created (never started) box:
nothing in the volume ever runs for it, and root inside never touches it."""

from __future__ import annotations

import contextlib
import io
import tarfile
import time
from collections.abc import Iterator, Sequence
from typing import Optional

import docker.errors

from . import engine, names
from .engine import Engine
from .errors import BoxError
from .runflags import image_reader_kwargs
from .throwaway import throwaway


@contextlib.contextmanager
def _reader(eng: Engine, role: str) -> Iterator:
    """One created box on the seat's volume, for as many reads as the block makes."""
    with throwaway(eng.client, engine.flags(eng, role, ["true"], starts=False).sdk_kwargs(), eng.cfg.container) as box:
        yield box


def prefetch(eng: Engine, paths: Sequence[str]) -> None:
    """Read these files of the seat's volume together, through one box, for the rest of the
    command: each command asks first for all it will read. No volume, no box (making one
    on it would make the volume): the files are not there."""
    seen = eng.read.setdefault(eng.cfg.volume, {})
    wanted = [p for p in dict.fromkeys(paths) if p not in seen]
    if not wanted:
        return
    seen.update(read_files(eng, wanted) if engine.volume_exists(eng) else dict.fromkeys(wanted))


def read_file(eng: Engine, path: str) -> Optional[bytes]:
    """A file from the volume (None: not there; a link: its target), as this command read it."""
    prefetch(eng, [path])
    return eng.read[eng.cfg.volume][path]


def has(eng: Engine, path: str) -> bool:
    """Whether a file (or folder) is in the volume."""
    return read_file(eng, path) is not None


def read_files(eng: Engine, paths: Sequence[str]) -> dict[str, Optional[bytes]]:
    """Files from the volume by path (None: not there; a link: its target), all read
    through one created (never started) box: nothing runs."""
    with _reader(eng, "read") as helper:
        return {path: _one_file(helper, path) for path in paths}


def _one_file(helper, path: str) -> Optional[bytes]:
    try:
        chunks, _ = helper.get_archive(path)
    except docker.errors.NotFound:
        return None
    data = b"".join(chunks)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.next()
        if member is None:
            return None
        if member.issym() or member.islnk():
            return member.linkname.encode()
        handle = tar.extractfile(member)
        return handle.read() if handle else b""


def image_files(eng: Engine, image_ref: str, directory: str) -> dict[str, bytes]:
    """The regular files directly in `directory` of an image, by name, copied out of a
    created (never started) container with no volume and no network."""
    with throwaway(eng.client, image_reader_kwargs(image_ref), eng.cfg.container) as reader:
        try:
            chunks, _ = reader.get_archive(directory)
        except docker.errors.NotFound:
            return {}
        files = {}
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
            for member in tar:
                parts = member.name.split("/")
                handle = tar.extractfile(member) if member.isreg() and len(parts) == 2 else None
                if handle:
                    files[parts[1]] = handle.read()
        return files


def write_file(eng: Engine, path: str, data: bytes) -> None:
    """Put one file (imd's, mode 600) into an existing folder of the volume, through a
    created (never started) box: nothing runs, and root inside never touches it."""
    folder, _, base = path.rpartition("/")
    with _reader(eng, "write") as helper:
        helper.put_archive(folder, file_tar(base, data, names.UID))
    eng.read.setdefault(eng.cfg.volume, {})[path] = data


def file_tar(path: str, data: bytes, uid: int, mode: int = 0o600) -> bytes:
    """One file as a tar for `put_archive`, owned by `uid` (`path` relative to where it is put)."""
    info = tarfile.TarInfo(path)
    info.size, info.mode, info.uid, info.gid, info.mtime = len(data), mode, uid, uid, int(time.time())
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def setup_done(eng: Engine) -> bool:
    return read_file(eng, engine.IMD_PATH) is not None


def require_volume(eng: Engine) -> None:
    if not engine.volume_exists(eng):
        raise BoxError(f"setup was not done (no volume {eng.cfg.volume}): run `{eng.cfg.command('setup')}` first")


def require_setup(eng: Engine) -> None:
    require_volume(eng)
    if read_file(eng, engine.IMD_PATH) is None:
        raise BoxError(
            f"setup was not done (no worker installed in {eng.cfg.volume}): run `{eng.cfg.command('setup')}` first"
        )
