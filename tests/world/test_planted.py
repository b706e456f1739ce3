"""Root never runs what the worker planted in its volume.

The attacker is `imd` with full control of the volume. It makes its home
traversable, then plants executables named like every command the root side
runs (the entrypoint, the firewall, worker/as-imd, box's `docker exec`s) in every
volume folder that is on a PATH, shell rc files, a BASH_ENV target, and symlinks
to its plant. Each plant logs the uid it ran as, then runs the real tool, so
everything keeps working when `imd` itself runs them.

Then the box lives a normal life: start, a restart by Docker, `box status`,
`box shell CMD`, `box check` and `box update`. No plant ran as uid 0, and no
file of the image changed. The breaking twin gives the root side the worker's
PATH (as the image did before) and sees the same plant run as uid 0.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from imdbox import names
from tests.fake_worker.fixtures import copy_of, volume_files
from tests.harness import boxes
from tests.harness.image import BASE_IMAGE, CA_FILE
from tests.harness.topology import check_targets

# Everything the root side calls, and then some: the entrypoint, the firewall,
# as-imd, tini, and what a careless root would reach for.
ROOT_COMMANDS = (
    "awk", "bash", "cat", "diff", "env", "getent", "grep", "head", "id", "ip", "ip6tables", "ip6tables-restore",
    "iptables", "iptables-nft", "iptables-restore", "ls", "node", "sed", "setpriv", "sh", "sort", "tini", "timeout",
    "tr", "umask",
)  # fmt: skip
PATH_DIRS = ("~/.npm-global/bin", "~/.local/bin", "~/bin")
LOG = "/home/imd/planted/ran"

PLANT = r"""#!/bin/sh
echo "$(/usr/bin/id -u) ${0##*/} $*" >> /home/imd/planted/ran 2>/dev/null
for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
  [ -x "$d/${0##*/}" ] && exec "$d/${0##*/}" "$@"
done
exit 127
"""

# Run as imd (through `box shell`, whose own home is the owner's): the attacker's own moves, in
# the volume's home.
PLANT_SCRIPT = f"""set -e
HOME={names.HOME}
mkdir -p ~/planted && chmod 777 ~/planted && : > {LOG} && chmod 666 {LOG}
cat > ~/planted/plant <<'EOF'
{PLANT}EOF
chmod 755 ~/planted/plant
for dir in {" ".join(PATH_DIRS)}; do
  mkdir -p "$dir"
  chmod 755 "$dir" "$(dirname "$dir")"  # root may traverse and run, as the attacker wants
  i=0
  for name in {" ".join(ROOT_COMMANDS)}; do
    # half copies, half symlinks to the plant
    if [ $((i % 2)) = 0 ]; then cp ~/planted/plant "$dir/$name" && chmod 755 "$dir/$name"
    else ln -sf ~/planted/plant "$dir/$name"; fi
    i=$((i + 1))
  done
done
for rc in .bashrc .profile .bash_profile .bash_login .bash_logout .bash_env .imd-box/rc; do
  mkdir -p "$(dirname ~/$rc)"
  echo 'echo "$(/usr/bin/id -u) rc:'"$rc"'" >> {LOG}' >> ~/"$rc"
  chmod 644 ~/"$rc"
done
chmod 711 ~
echo planted
"""


def planted_runs(docker_client, bx) -> list[tuple[str, str]]:
    text = volume_files(docker_client, bx, [LOG])[LOG] or b""
    return [tuple(line.split(" ", 1)) for line in text.decode().splitlines() if line.strip()]


@pytest.fixture
def planted(docker_client, box_image, set_up):
    with copy_of(docker_client, box_image, set_up) as bx:
        r = bx.run("shell", "bash", "-c", PLANT_SCRIPT)
        assert r.returncode == 0 and "planted" in r.stdout, r.all
        yield bx


def test_root_never_runs_a_planted_file(docker_client, planted, tmp_path):
    bx = planted
    assert bx.run("shell", "imd", "pair").returncode == 0
    assert bx.run("start").returncode == 0, "box start"
    box = docker_client.containers.get(bx.container)
    box.restart(timeout=30)  # as Docker does after a crash or a reboot
    boxes.wait_walls_up(box, timeout=60)
    r = bx.run("status")
    assert "running" in r.stdout, r.all
    r = bx.run("shell", "id", "-u")
    assert r.returncode == 0 and r.stdout.strip() == "1000", r.all
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps(dataclasses.asdict(check_targets())))
    r = bx.run("check", "--json", "--url", "http://198.51.100.10/", "--targets", str(targets))
    failed = [row for row in json.loads(r.stdout) if not row["ok"]]
    # The check is not fooled, and it tells the truth: the home the attacker opened up.
    assert [row["wall"] for row in failed] == ["the worker's secrets are private"], r.all
    assert "/home/imd mode 711 (want 700)" in failed[0]["detail"], r.all
    box = docker_client.containers.get(bx.container)
    assert not box.diff(), f"image files changed: {box.diff()}"
    r = bx.run("update", "--base-image", BASE_IMAGE, "--ca-cert", CA_FILE, timeout=1200)
    assert r.returncode == 0, r.all
    box = docker_client.containers.get(bx.container)
    assert not box.diff(), f"image files changed: {box.diff()}"

    runs = planted_runs(docker_client, bx)
    as_root = [run for run in runs if run[0] == "0"]
    assert as_root == [], f"root ran planted files: {as_root}"
    # The plants were there and in use: the worker's own commands ran them as imd.
    assert any(uid == "1000" for uid, _ in runs), runs


def test_breaking_twin_a_root_side_with_the_workers_path_runs_the_plant(docker_client, planted, box_image, topology):
    """The walled box with the root side given the worker's PATH (the volume's npm bin
    first, as the image's PATH was), calling `id` by name as the entrypoint did."""
    bx = planted

    def todays_path(kwargs):
        kwargs["entrypoint"] = [
            "/bin/bash", "-c",
            'export PATH=/home/imd/.npm-global/bin:$PATH; [ "$(id -u)" = 0 ]; exec /usr/local/bin/entrypoint.sh "$@"',
            "entrypoint",
        ]  # fmt: skip

    box = boxes.start_walled(docker_client, bx.image, topology, volume=bx.volume, mutate=todays_path)
    box.remove(force=True)
    assert ("0", "id -u") in planted_runs(docker_client, bx)
