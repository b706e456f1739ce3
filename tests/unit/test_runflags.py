"""The one definition of the box's run flags (unit tests; no engine needed)."""

from __future__ import annotations

import pytest

from imdbox import engine, layout, names, runflags
from imdbox.config import Config
from imdbox.endpoint import Endpoint
from imdbox.runflags import EngineLimits, RunFlags

GIB = 1024**3


def flags(cpus=8, memory=16 * GIB, **kw) -> RunFlags:
    return RunFlags(limits=EngineLimits(cpus=cpus, memory=memory), **kw)


def test_only_the_entrypoints_capabilities():
    kw = flags().sdk_kwargs()
    assert kw["cap_drop"] == ["ALL"]
    assert sorted(kw["cap_add"]) == ["NET_ADMIN", "SETGID", "SETPCAP", "SETUID"]
    assert "privileged" not in kw


def test_no_new_privileges_and_the_boxs_seccomp_profile():
    kw = flags().sdk_kwargs()
    assert "no-new-privileges:true" in kw["security_opt"]
    seccomp = [o for o in kw["security_opt"] if o.startswith("seccomp=")]
    assert seccomp == ["seccomp=" + runflags.seccomp_path().read_text()]


@pytest.mark.parametrize(
    "engine_cpus, engine_mem, want_cpus, want_mem",
    [(8, 16 * GIB, 4.0, 6 * GIB), (2, 16 * GIB, 2.0, 6 * GIB), (8, 4 * GIB, 4.0, 4 * GIB), (1, 2 * GIB, 1.0, 2 * GIB)],
)
def test_cpus_and_memory_never_exceed_the_engine(engine_cpus, engine_mem, want_cpus, want_mem):
    kw = flags(engine_cpus, engine_mem).sdk_kwargs()
    assert kw["nano_cpus"] == int(want_cpus * 1e9)
    assert kw["mem_limit"] == want_mem
    assert kw["memswap_limit"] == want_mem  # swap equal: no swap beyond memory


def test_limits_from_docker_info():
    assert EngineLimits.from_info({"NCPU": 6, "MemTotal": 8 * GIB}) == EngineLimits(6, 8 * GIB)


def test_pids_shm_hostname():
    kw = flags().sdk_kwargs()
    assert kw["pids_limit"] == runflags.PIDS_LIMIT > 0
    assert kw["shm_size"] == runflags.SHM_SIZE >= 256 * 1024**2
    assert kw["hostname"] == names.HOSTNAME


def test_the_volume_is_the_only_mount_and_nothing_is_published():
    kw = flags().sdk_kwargs()
    assert kw["volumes"] == {names.DEFAULT_VOLUME: {"bind": "/home/imd", "mode": "rw"}}
    for forbidden in ("mounts", "ports", "publish_all_ports", "privileged", "pid_mode", "ipc_mode"):
        assert forbidden not in kw, forbidden
    assert kw["devices"] == ["/dev/net/tun:/dev/net/tun:rwm"]  # the one device: each job's own network
    assert kw["network"] == "bridge"


def test_read_only_root_with_tmpfs_only_where_needed():
    kw = flags().sdk_kwargs()
    assert kw["read_only"] is True
    assert sorted(kw["tmpfs"]) == ["/run", layout.OWN_DIR, "/tmp", "/var/tmp"]
    for opts in kw["tmpfs"].values():
        assert "nosuid" in opts and "nodev" in opts


def test_host_addresses_reach_the_entrypoint_as_one_variable():
    kw = flags(host_addresses=("203.0.113.7", "198.51.100.1"), environment={"X": "y"}).sdk_kwargs()
    assert kw["environment"] == {
        "X": "y",
        runflags.HOST_ADDRS_ENV: "203.0.113.7 198.51.100.1",
        runflags.BOX_COMMAND_ENV: "box",
    }
    assert runflags.HOST_ADDRS_ENV not in flags().sdk_kwargs()["environment"]


def test_restart_only_for_the_worker_and_labels_mark_the_box():
    assert "restart_policy" not in flags().sdk_kwargs()
    assert flags(restart=True).sdk_kwargs()["restart_policy"] == {"Name": "unless-stopped"}
    assert flags(role="check").sdk_kwargs()["labels"] == {names.LABEL: "1", names.LABEL + ".role": "check"}


def _cli_pairs(args):
    pairs = []
    it = iter(args)
    for a in it:
        if a.startswith("--") and a not in ("--interactive", "--tty", "--read-only"):
            pairs.append((a, next(it)))
    return pairs


def test_cli_args_are_the_same_box():
    """The shell's `docker run` gets exactly the flags the SDK path gets."""
    f = flags(
        cpus=3,
        memory=5 * GIB,
        name="imd-box-shell",
        command=["bash"],
        interactive=True,
        environment={"A": "1"},
        host_addresses=("203.0.113.7", "198.51.100.1"),
    )
    kw = f.sdk_kwargs()
    args = f.cli_args()
    pairs = _cli_pairs(args[: args.index(f.image)])
    assert args[args.index(f.image) :] == [f.image, "bash"]
    opts = dict()
    for k, v in pairs:
        opts.setdefault(k, []).append(v)
    assert opts["--cap-drop"] == kw["cap_drop"]
    assert sorted(opts["--cap-add"]) == sorted(kw["cap_add"])
    assert opts["--security-opt"] == ["no-new-privileges:true", f"seccomp={runflags.seccomp_path()}"]
    assert float(opts["--cpus"][0]) * 1e9 == kw["nano_cpus"]
    assert int(opts["--memory"][0]) == kw["mem_limit"] == int(opts["--memory-swap"][0]) == kw["memswap_limit"]
    assert int(opts["--pids-limit"][0]) == kw["pids_limit"]
    assert int(opts["--shm-size"][0]) == kw["shm_size"]
    assert opts["--hostname"] == [kw["hostname"]]
    assert opts["--mount"] == [f"type=volume,source={names.DEFAULT_VOLUME},target=/home/imd"]
    assert opts["--network"] == [kw["network"]]
    assert sorted(opts["--label"]) == sorted(f"{k}={v}" for k, v in kw["labels"].items())
    assert opts["--name"] == [kw["name"]]
    assert "--interactive" in args and "--tty" in args
    assert kw["read_only"] is True and "--read-only" in args
    assert dict(t.split(":", 1) for t in opts["--tmpfs"]) == kw["tmpfs"]
    assert sorted(opts["--env"]) == sorted(f"{k}={v}" for k, v in kw["environment"].items())
    assert opts["--device"] == kw["devices"]
    for forbidden in ("--privileged", "--volume", "-v", "--publish", "-p", "--pid", "--ipc"):
        assert forbidden not in args


class _Engine:
    def info(self):
        return {"NCPU": 4, "MemTotal": 8 * GIB}


@pytest.mark.parametrize("seat, command", [(None, "box"), ("alice", "box --seat alice")])
def test_the_box_names_its_seats_command(seat, command):
    """What run.sh puts in its messages (`run 'box --seat alice setup'`): the seat the
    flags are made for, with that seat's volume."""
    eng = engine.Engine(_Engine(), Config(seat=seat), Endpoint("unix:///nowhere", "a test"))
    made = engine.flags(eng, "worker", starts=False)
    assert made.sdk_kwargs()["environment"][runflags.BOX_COMMAND_ENV] == command
    assert made.volume == Config().seat_names(seat)[1]


@pytest.mark.parametrize("jail", [True, False])
def test_every_box_gets_the_owners_choice_of_the_login(jail):
    """IMD_BOX_LOGIN=jail on the Mac reaches the box as its own environment (the login broker
    reads it from PID 1's, worker/broker/start); without it, the box has none."""
    eng = engine.Engine(_Engine(), Config(login_in_jail=jail), Endpoint("unix:///nowhere", "a test"))
    env = engine.flags(eng, "worker", starts=False).sdk_kwargs()["environment"]
    assert env.get("IMD_BOX_LOGIN") == ("jail" if jail else None)
