"""What the commands decide, run in-process against a small fake engine.

The commands (install, service, inspection) only orchestrate: they ask the engine's
verbs (engine.py, volume.py, startup.py) and say what happened. Here the verbs that would run a box (reading and writing the volume, one-off
boxes, the walls coming up) are replaced by a fake that keeps the state in memory (tests/harness/fake_engine.py), and
the SDK objects the rest of engine.py reads (the container, the volume, the image) are
small stand-ins. The real engine's side is tested against Docker in the other files;
these cover the decisions: what is made, stopped, removed or kept, in which order, and
the one line the user reads, in milliseconds each.
"""

from __future__ import annotations

import docker.errors
import pytest

from imdbox import engine, layout, names, service, worker
from imdbox.config import Config
from tests.harness import fake_engine
from tests.harness.fake_engine import DEFAULT, GOOD_SETTINGS, REAL_HELP, SETTINGS, box, one_error_line

world = fake_engine.world  # its fixture: the fake engine, the commands' verbs stood in


# ------------------------------------------------------------------ start / stop
def test_start_makes_the_box_with_its_restart_policy(world):
    world.set_up()
    result = box("start")
    assert result.exit_code == 0, result.output
    assert world.log == ["create", "start"]
    assert world.container.restart == "unless-stopped" and world.container.labels[names.LABEL] == "1"
    assert "walls up and verified" in result.stdout


def test_start_when_running_changes_nothing(world):
    world.set_up()
    world.run_box()
    result = box("start")
    assert result.exit_code == 0 and "already running" in result.stdout
    assert world.log == []


def test_a_start_that_loses_the_name_joins_a_box_not_yet_visible(world, monkeypatch):
    """Two `box start` at once: the engine gave the name to the other one's create, whose
    box cannot be looked up by it for a moment yet (seen on the real engine under load).
    This one waits for that box and joins it; it never fails."""
    world.set_up()

    def the_other_start_took_the_name(eng, flags):
        looks = []
        client = eng.client
        by_name = client.containers.get

        def get(name):
            looks.append(name)
            if len(looks) == 3:  # from the third look on, the other start's box is there
                world.run_box()
            return by_name(name)

        client.containers.get = get
        raise docker.errors.APIError("Conflict", response=type("R", (), {"status_code": 409})())

    monkeypatch.setattr(engine, "create_box", the_other_start_took_the_name)
    monkeypatch.setattr(engine.time, "sleep", lambda seconds: None)
    result = box("start")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"✓ the box is already running ({DEFAULT.container}); `box logs` to watch it"


def test_start_replaces_a_stopped_box(world):
    world.set_up()
    world.run_box()
    world.container.status = "exited"
    assert box("start").exit_code == 0
    assert world.log == ["remove", "create", "start"]


@pytest.mark.parametrize(
    "prepare, says",
    [
        (lambda w: None, "no volume"),
        (lambda w: setattr(w, "volume", {}), "no worker installed"),
        (lambda w: w.set_up(b"RUNTIMES=claude\n"), "settings.env"),
        (lambda w: setattr(w, "image", None), "box pull"),
    ],
    ids=["no-volume", "no-worker", "damaged-settings", "no-image"],
)
def test_start_that_cannot_start_makes_nothing(world, prepare, says):
    prepare(world)
    result = box("start")
    assert result.exit_code == 1
    assert says in one_error_line(result)
    assert world.log == [] and world.container is None


def test_a_box_that_does_not_start_is_removed_with_its_reason(world):
    world.set_up()
    world.starts_ok = False
    result = box("start")
    assert result.exit_code == 1
    assert "the box did not start, and was removed (no restart loop)" in one_error_line(result)
    assert "the firewall did not apply" in one_error_line(result)
    assert "imd-box:" not in one_error_line(result)  # one prefix: box's
    assert world.log == ["create", "start", "stop", "remove"] and world.container is None


def test_stop(world):
    result = box("stop")
    assert result.exit_code == 0 and "not running" in result.stdout and world.log == []
    world.set_up()
    world.run_box()
    assert box("stop").exit_code == 0
    assert world.log == ["stop"] and world.container.status == "exited"  # kept: `box start` replaces it


# ------------------------------------------------------------------ update
def agents_install(role, command, env):
    assert role == "setup" and command == [layout.INSTALL_SH, "agents"]
    assert env["IMD_BOX_RUNTIMES"] == "claude" and env["IMD_BOX_CONCURRENCY"] == "2"
    return 0, "agents refreshed"


def test_update_of_a_running_box_rebuilds_then_brings_it_back(world):
    world.set_up()
    world.run_box()
    world.oneoff = agents_install
    result = box("update")
    assert result.exit_code == 0, result.output
    assert world.log == [
        "build",  # the box keeps running while the image is made
        "write resume-after-update=1",  # noted before the stop: a cut after it is resumed
        "stop",
        "remove",
        f"oneoff setup {layout.INSTALL_SH} agents",
        "create",
        "start",
        "write resume-after-update=0",
    ]
    assert "the box is running again" in result.stdout


def test_update_cut_after_the_stop_starts_the_box_next_time(world):
    world.set_up()
    world.run_box()

    def cut(role, command, env):
        raise KeyboardInterrupt

    world.oneoff = cut
    assert box("update").exit_code == 130
    assert world.container is None and world.volume[service.RESUME_PATH] == b"1\n"
    world.log.clear()
    world.oneoff = agents_install
    result = box("update")
    assert result.exit_code == 0, result.output
    assert "the box was running when an earlier `box update` was cut short" in result.stdout
    assert world.log[-3:] == ["create", "start", "write resume-after-update=0"]
    assert world.container.status == "running"


def test_update_with_damaged_settings_changes_nothing(world):
    world.set_up(b"RUNTIMES=claude\nCONCURRENCY=9\n")
    world.run_box()
    result = box("update")
    assert result.exit_code == 1 and "CONCURRENCY" in one_error_line(result)
    assert world.log == [] and world.container.status == "running"


def test_update_before_setup_only_rebuilds(world):
    result = box("update")
    assert result.exit_code == 0, result.output
    assert world.log == ["build"] and "setup was not done yet" in result.stdout


# ------------------------------------------------------------------ runtime
def worker_and_install(role, command, env):
    if command == worker.HELP_COMMAND:
        return 0, REAL_HELP
    assert command == [layout.INSTALL_SH, "agents"] and env["IMD_BOX_RUNTIMES"] == "codex"
    return 0, ""


def test_runtime_change_restarts_a_running_worker(world):
    world.set_up()
    world.run_box()
    world.oneoff = worker_and_install
    result = box("runtime", "codex")
    assert result.exit_code == 0, result.output
    # Stopped before the install: the worker writes the volume the CLIs are staged and swapped in.
    assert world.log == [
        f"oneoff status {layout.WORKER_VIEW} imd help",
        "write resume-after-update=1",
        "stop",
        f"oneoff setup {layout.INSTALL_SH} agents",
        "remove",
        "create",
        "start",
        "write resume-after-update=0",
    ]


def test_runtime_the_worker_cannot_run_changes_nothing(world):
    world.set_up()
    world.run_box()
    world.oneoff = worker_and_install
    result = box("runtime", "claude,codex")
    assert result.exit_code == 1
    assert "this worker runs one runtime at a time" in one_error_line(result)
    assert "nothing was changed" in one_error_line(result)
    assert world.log == [f"oneoff status {layout.WORKER_VIEW} imd help"] and world.container.status == "running"


# ------------------------------------------------------------------ status / remove
def test_status_of_a_box_removed_by_hand(world):
    world.set_up()
    world.volume[engine.WORKER_CONFIG_PATH] = b"{}"
    world.oneoff = lambda role, command, env: (0, "✓ all good")
    result = box("status")
    assert result.exit_code == 0, result.output
    assert "GONE: there is no container" in result.stdout
    assert world.log == [f"oneoff status {layout.WORKER_VIEW} imd doctor --runtime claude"]


def test_remove_without_the_image_frees_no_seat_and_removes_nothing(world):
    world.set_up()
    world.volume[engine.WORKER_CONFIG_PATH] = b"{}"
    world.run_box()
    world.image = None
    result = box("remove", "--yes")
    assert result.exit_code == 1 and "--keep-seat" in one_error_line(result)
    assert world.log == ["stop"] and world.volume is not None and world.container is not None
    world.log.clear()
    result = box("remove", "--yes", "--keep-seat")
    assert result.exit_code == 0, result.output
    assert world.log == ["remove", "remove volume"]


def test_an_unexpected_failure_is_one_line(world, monkeypatch):
    def broken(eng):
        raise RuntimeError("the socket said something odd")

    monkeypatch.setattr(engine, "box_container", broken)
    result = box("stop")
    assert result.exit_code == 1
    assert one_error_line(result) == (
        "box: stopped on an unexpected RuntimeError: the socket said something odd (please report it)"
    )


# ------------------------------------------------------------------ seats
def set_up_seat(world, seat):
    """A seat set up (its volume has the worker and settings)."""
    world.volumes[DEFAULT.seat_names(seat)[1]] = {engine.IMD_PATH: b"#!imd", SETTINGS: GOOD_SETTINGS}


def test_a_seat_is_its_own_box_and_volume(world):
    set_up_seat(world, "alice")
    result = box("--seat", "alice", "start")
    assert result.exit_code == 0, result.output
    assert list(world.boxes) == ["imd-box-alice"] and "(imd-box-alice)" not in result.stdout
    assert box("--seat", "alice", "start").stdout.count("already running (imd-box-alice)") == 1
    result = box("start")  # the seat without a name was never set up
    assert result.exit_code == 1 and "no volume imd-worker-home)" in one_error_line(result)
    assert list(world.boxes) == ["imd-box-alice"]


@pytest.mark.parametrize("name", ["Alice", "-a", "a b", "a" * 25, "a/b", ""])
def test_a_seat_name_docker_would_refuse_is_one_line(world, name):
    result = box("--seat", name, "start")
    assert result.exit_code == 2
    assert "a seat's name is 1 to 24 of a-z, 0-9, - and _" in one_error_line(result)
    assert world.log == []


def test_start_refuses_when_the_seats_together_would_need_more_memory(world):
    set_up_seat(world, None)
    set_up_seat(world, "b")
    world.run_box("b")  # seat b runs, with the full cap (6 GiB of the engine's 8)
    result = box("start")
    assert result.exit_code == 1
    assert one_error_line(result) == (
        "box: this box needs 6.0 GiB and the other running seats 6.0 GiB, more than Docker's 8.0 GiB: "
        "stop a seat (`box seats` lists them) or give Docker more memory; nothing was started"
    )
    assert world.log == [] and list(world.boxes) == ["imd-box-b"]
    world.memory = 12 << 30  # both fit
    assert box("start").exit_code == 0
    assert sorted(world.boxes) == ["imd-box", "imd-box-b"]


def seat_rows(result) -> list[list[str]]:
    """`box seats`'s table, split on its column gaps."""
    rows = [line.split("  ") for line in result.stdout.splitlines()]
    return [[cell.strip() for cell in row if cell.strip()] for row in rows]


def test_seats_lists_each_with_its_box_runtime_and_pairing(world):
    assert "no seats yet" in box("seats").stdout
    set_up_seat(world, None)
    set_up_seat(world, "b")
    world.run_box("b")
    world.container_of("b").paired = "4321"
    world.volumes["imd-worker-home-c"] = {}  # made by setup, which did not get far
    world.volumes["imd-worker-home-"] = {}  # not a seat's name
    result = box("seats")
    assert result.exit_code == 0, result.output
    assert seat_rows(result) == [
        ["SEAT", "BOX", "RUNTIME", "RESTARTS", "PAIRED"],
        ["(no name)", "not created", "claude ×2", "-", "-"],
        ["b", "running", "claude ×2", "0", "token 4321"],
        ["c", "not created", "claude ×2 (not set up)", "-", "-"],
    ]


def test_status_and_seats_say_a_stopped_box_alike(world):
    world.set_up()
    world.run_box()
    world.container.status = "exited"
    result = box("status")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "box:       imd-box: stopped (exit code 0)"
    assert seat_rows(box("seats"))[1][:2] == ["(no name)", "stopped (exit code 0)"]


def test_remove_keeps_the_image_the_other_seats_run(world):
    set_up_seat(world, "a")
    set_up_seat(world, "b")
    result = box("--seat", "a", "remove", "--yes", "--keep-seat")
    assert result.exit_code == 0, result.output
    assert "kept the image imd-box:latest: the other seats use it too (b)" in result.stdout
    assert world.log == ["remove volume"] and list(world.volumes) == ["imd-worker-home-b"]
    result = box("--seat", "b", "remove", "--yes", "--keep-seat")
    assert result.exit_code == 0 and world.log[-1] == "rmi imd-box:latest", result.output


def test_the_workers_status_says_whether_it_is_paired():
    """`imd status` as the released worker prints it (dist/cli.js)."""
    paired = "\n  config    /home/imd/.identitymd/config.json\n  server    https://api.imd.fun\n  device    ab12\n"
    assert worker.pairing(paired + "  token     77\n  capacity  2 concurrent task(s)\n") == "token 77"
    assert worker.pairing(paired + "  token     not paired yet\n") == "no"
    unconfigured = "\n  config    /x/config.json\n  state     not configured — run: imd pair --server <url>\n"
    assert worker.pairing(unconfigured) == "no (not configured)"
    assert worker.pairing("  tokens 5\n") == "?"


def test_the_box_command_a_user_is_told_names_the_seat():
    assert Config().command("start") == "box start"
    assert Config().command("remove", "--yes") == "box remove --yes"
    assert Config(seat="alice").command("start") == "box --seat alice start"
    assert Config(seat="alice").command("remove", "--yes") == "box --seat alice remove --yes"


def test_what_a_seat_is_told_to_run_names_the_seat(world):
    result = box("--seat", "alice", "start")
    assert one_error_line(result) == (
        "box: setup was not done (no volume imd-worker-home-alice): run `box --seat alice setup` first"
    )
    set_up_seat(world, "alice")
    result = box("--seat", "alice", "start")
    assert "`box --seat alice logs` to watch it, `box --seat alice status` to check it" in result.stdout
    world.volumes["imd-worker-home-alice"][SETTINGS] = b"RUNTIMES=claude\n"
    assert one_error_line(box("--seat", "alice", "runtime")).endswith(
        "run `box --seat alice runtime claude` (or `box --seat alice setup`) to write it again"
    )
    result = box("start")  # no seat: as before
    assert one_error_line(result) == "box: setup was not done (no volume imd-worker-home): run `box setup` first"


def test_setup_under_a_seat_tells_the_launcher_command_for_it(world):
    world.oneoff = lambda role, command, env: (0, REAL_HELP if command == worker.HELP_COMMAND else "")
    result = box("--seat", "alice", "setup", "--no-shell")
    assert result.exit_code == 0, result.output
    assert "in the box's shell (`./box --seat alice shell`)" in result.stdout
    assert "Then `exit`, and run `./box --seat alice start`." in result.stdout
    result = box("setup", "--no-shell")  # no seat: as before
    assert result.exit_code == 0, result.output
    assert "(`./box shell`)" in result.stdout and "run `./box start`." in result.stdout


def passed_on(help_text: str, code: int = 0) -> str:
    """What `install.sh worker` prints after the install: the help it read, for box."""
    lines = [worker.HELP_LINE + line for line in help_text.splitlines()]
    return "\n".join(["imd-box: worker installed: 0.1.0+47df9c68", *lines, f"{worker.HELP_EXIT}{code}"])


def test_setup_reads_the_runtimes_from_the_help_the_install_passed_on(world):
    def install(role, command, env):
        return (0, passed_on(REAL_HELP)) if command == [layout.INSTALL_SH, "worker"] else (0, "")

    world.oneoff = install
    result = box("setup", "--no-shell")
    assert result.exit_code == 0, result.output
    assert world.log == [f"oneoff setup {layout.INSTALL_SH} worker", f"oneoff setup {layout.INSTALL_SH} agents"]
    assert worker.HELP_LINE.strip() not in result.output  # for box, not the user
    # What it read is the worker's: a runtime it cannot run is refused before the agents.
    world.log.clear()
    result = box("setup", "--no-shell", "--runtime", "claude,codex")
    assert "this worker runs one runtime at a time" in one_error_line(result)
    assert world.log == [f"oneoff setup {layout.INSTALL_SH} worker"]
    # A help that failed is said as before.
    world.oneoff = lambda role, command, env: (0, passed_on("node: not found", code=127))
    assert "did not answer `imd help` (node: not found)" in one_error_line(box("setup", "--no-shell"))


def test_breaking_twin_an_install_that_passes_on_no_help_costs_a_box_to_ask(world):
    """An image whose install.sh passes nothing on (an older one, pulled): box asks the worker."""
    world.oneoff = lambda role, command, env: (0, REAL_HELP if command == worker.HELP_COMMAND else "")
    result = box("setup", "--no-shell")
    assert result.exit_code == 0, result.output
    assert world.log == [
        f"oneoff setup {layout.INSTALL_SH} worker",
        f"oneoff status {layout.WORKER_VIEW} imd help",
        f"oneoff setup {layout.INSTALL_SH} agents",
    ]


def test_only_a_whole_passed_on_help_is_read():
    assert worker.help_passed_on(passed_on("a\nb")) == (0, "a\nb")
    assert worker.help_passed_on("imd-box: worker installed") is None
    assert worker.help_passed_on(f"{worker.HELP_EXIT}x") is None
    assert worker.help_passed_on(f"{worker.HELP_EXIT}0\n{worker.HELP_EXIT}0") is None


def test_setup_and_start_name_a_worker_set_up_on_this_machine(world, monkeypatch, tmp_path):
    # A stand-in home on "the Mac": only whether its worker's config exists is looked at.
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("IDENTITYMD_HOME", raising=False)
    world.oneoff = lambda role, command, env: (0, REAL_HELP if command == worker.HELP_COMMAND else "")
    hint = "if the seat is paired to it, run `imd unlink` there first"
    result = box("setup", "--no-shell")
    assert result.exit_code == 0 and hint not in result.output, result.output
    config = tmp_path / ".identitymd" / "config.json"
    config.parent.mkdir()
    config.write_text('{"deviceKey": "imdt-never-read"}')
    for command in (["setup", "--no-shell"], ["start"]):
        world.set_up()
        result = box(*command)
        assert result.exit_code == 0, result.output
        assert result.output.count(hint) == 1 and str(config) in result.output, result.output
        assert "imdt-never-read" not in result.output
    # The worker's own IDENTITYMD_HOME, where it is set, is where it looks.
    monkeypatch.setenv("IDENTITYMD_HOME", str(tmp_path / "elsewhere"))
    assert box("stop").exit_code == 0
    result = box("start")
    assert result.exit_code == 0 and "walls up and verified" in result.stdout and hint not in result.output


@pytest.mark.parametrize(
    "command, prepare",
    [
        (["start"], lambda w: None),
        (["status"], lambda w: None),
        (["update"], lambda w: w.run_box()),
        (["runtime"], lambda w: None),
        (["remove", "--yes"], lambda w: None),
    ],
    ids=["start", "status", "update", "runtime", "remove"],
)
def test_a_command_reads_the_volume_in_one_box(world, command, prepare):
    """Each file a command reads of the volume comes through one created box, not one each."""
    world.set_up()
    world.volume[engine.WORKER_CONFIG_PATH] = b"{}"
    world.oneoff = lambda role, cmd, env: (0, REAL_HELP if cmd == worker.HELP_COMMAND else "")
    prepare(world)
    result = box(*command)
    assert result.exit_code == 0, result.output
    assert len(world.reads) == 1, world.reads
