"""The twins' tools: a copy of the box image with some of its files changed (a wall broken
by the test itself, never by a product switch), and the image's real scripts, the door and the
job's jail with a change of one place each, to put in such a copy."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import tarfile
import uuid
from pathlib import Path

from imdbox import layout, names
from imdbox.throwaway import once_free

ROOT = names.REPO_ROOT
CMD = [layout.WORKER_VIEW, "/usr/local/lib/imd-box/worker/run.sh"]  # the image's own CMD, kept in a patched copy


def put_files(container, files: dict) -> None:
    """Put files (path: bytes, or path: (bytes, mode); 0755 by default) into a created container."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data in files.items():
            data, mode = data if isinstance(data, tuple) else (data, 0o755)
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    assert container.put_archive("/", buf.getvalue())


@contextlib.contextmanager
def patched_image(client, image: str, files: dict):
    """The box image with these files changed: a copy (create, put, commit), since a box's
    root is read-only. Removed afterwards. No files: the image itself."""
    if not files:
        yield image
        return
    tag = uuid.uuid4().hex[:8]
    staging = client.containers.create(image, command=["true"], labels={"imd-test": "1"})
    try:
        put_files(staging, files)
        staging.commit(repository="imdt-patched", tag=tag, changes=[f"CMD {json.dumps(CMD)}"])
    finally:
        staging.remove(force=True)
    try:
        yield f"imdt-patched:{tag}"
    finally:  # once a check's box, which the engine removes on its own, has let it go
        once_free(lambda: client.images.remove(f"imdt-patched:{tag}", force=True))


def script_with(repo_path: str, box_path: str, *changes: tuple[str, str]) -> dict:
    """One of the image's real scripts with these changes (old, new), each of one place in it."""
    text = (ROOT / repo_path).read_text()
    for old, new in changes:
        assert text.count(old) == 1, f"{repo_path} has {old!r} {text.count(old)} times, not once"
        text = text.replace(old, new)
    return {box_path: text.encode()}


# A change for door_with: the door makes no launcher ready before a call (worker/door/ready.h),
# as before it did; each call's launcher is started for it.
NO_READY_LAUNCHER = (
    "        if (ready < 0 && calls < MAX_CALLS) ready = make_ready(s);\n",
    "        if (0) ready = make_ready(s);\n",
)


def door_with(folder: Path, *changes: tuple[str, str]) -> dict:
    """The door (worker/door/door.c) with these changes, built by this machine's gcc (the image
    has none; static, so no libc of this machine's is needed in the box): a patch for
    patched_image."""
    source = script_with("worker/door/door.c", "door.c", *changes)["door.c"]
    (folder / "door.c").write_bytes(source)
    # Its header of paths (generated, worker/door/paths.h) from the repository, beside the source.
    build = ["gcc", "-O2", "-static", "-Wall", "-Werror", f"-I{ROOT / 'worker' / 'door'}", "-o", str(folder / "door")]
    build.append(str(folder / "door.c"))
    subprocess.run(build, check=True)
    return {layout.DOOR: ((folder / "door").read_bytes(), 0o755)}


def jail_with(*changes: tuple[str, str]) -> dict:
    """The job's jail (worker/jail and its rooms, worker/jail.d) with these changes, each of
    one place in one of them."""
    parts = {"worker/jail": layout.JAIL}
    parts |= {
        f"worker/jail.d/{room.name}": f"{layout.JAIL_ROOMS}/{room.name}" for room in (ROOT / "worker/jail.d").iterdir()
    }
    texts = {path: (ROOT / path).read_text() for path in parts}
    changed = {}
    for old, new in changes:
        holders = [path for path, text in texts.items() if old in text]
        assert len(holders) == 1, f"the jail has {old!r} in {holders or 'none of its parts'}, not in one"
        changed[holders[0]] = changed.get(holders[0], ()) + ((old, new),)
    patched: dict = {}
    for path, its in changed.items():
        patched |= script_with(path, parts[path], *its)
    return patched


# The place room as it took the box's /tmp, where the box's own folders were: any folder of
# theirs a working directory names is a job's workspace, bound above the jail's own that hid them.
PLACES_IN_THE_BOXS_FOLDERS = (
    ('    "$WORK_ROOT"/*)\n', '    "$OWN_DIR"/?*)\n      workspace=$cwd\n      ;;\n    "$WORK_ROOT"/*)\n'),
    ('jail+=("${held[@]}" --tmpfs "$OWN_DIR")', 'jail+=(--tmpfs "$OWN_DIR" "${held[@]}")'),
)
# A job's jail as it ran before, in no Landlock domain of its own: it shares the box's processes.
JAIL_IN_NO_DOMAIN = (('outer=("$DOOR" scoped /usr/bin/bwrap', "outer=(/usr/bin/bwrap"),)


# A job's repository names a hook and a helper command in its project settings (check line 16
# where Claude Code is installed, test_agent_clis.py; test_job_repository.py). The twin: the
# launcher passing the worker's argv on as it is, without its defence.
UNDEFENDED_LAUNCHER = script_with(
    "worker/claude", layout.CLAUDE_JAIL, ('exec "$JAIL" claude "$@" "${more[@]}"', 'exec "$JAIL" claude "$@"')
)
