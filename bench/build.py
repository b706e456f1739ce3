"""Build and start: the cold and warm builds (imdbox.build.build_image), the image's size and its
layers, `box --help`, and `box start` until the worker process runs (the fake worker, or the
worker in --volume)."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Optional

from bench.common import GOALS, PREFIX, Bench, log, tail, timed
from bench.report import GB, MB, Row, layer_step


# ---------------------------------------------------------------- builds
def _build(bench: Bench, no_cache: bool) -> str:
    lines: list[str] = []
    image_id = bench.build.build_image(
        bench.client.api,
        tag=bench.image,
        base_image=bench.args.base_image,
        ca_certs=bench.build.read_ca_file(Path(bench.args.ca_cert)) if bench.args.ca_cert else None,
        no_cache=no_cache,
        on_line=lines.append,
    )
    bench.made_images.add(image_id)
    return image_id


def base_available(bench: Bench) -> Optional[str]:
    import docker.errors

    try:
        bench.client.images.get(bench.args.base_image)
        return None
    except docker.errors.ImageNotFound:
        pass
    if bench.args.base_image == bench.names.DEFAULT_BASE_IMAGE:
        try:
            log(f"pulling {bench.args.base_image}")
            bench.client.images.pull(bench.args.base_image)
            return None
        except docker.errors.APIError as exc:
            return f"the base image {bench.args.base_image} cannot be pulled ({str(exc)[:120]})"
    return f"the base image {bench.args.base_image} is not on this machine (--base-image)"


def builds(bench: Bench) -> bool:
    """Cold and warm builds; False if there is no image to go on with."""
    reason = base_available(bench)
    if reason:
        bench.rows.append(Row("cold build (no cache)", skipped=reason))
        bench.rows.append(Row("warm build (no change)", skipped=reason, goal=GOALS["warm"]))
        return False
    cold = Row("cold build (no cache)", note="imdbox.build.build_image(no_cache=True)")
    if bench.args.cold_runs <= 0:
        cold.skipped = "--quick / --cold-runs 0"
    else:
        for i in range(bench.args.cold_runs):
            log(f"cold build {i + 1}/{bench.args.cold_runs} (minutes)")
            cold.samples.append(timed(lambda: _build(bench, no_cache=True)))
    bench.rows.append(cold)
    warm = Row("warm build (no change)", goal=GOALS["warm"], note="same call, layer cache")
    try:
        log("build (primes the layer cache; not timed)")
        _build(bench, no_cache=False)
        for i in range(bench.args.runs):
            log(f"warm build {i + 1}/{bench.args.runs}")
            warm.samples.append(timed(lambda: _build(bench, no_cache=False)))
    except bench.build.BuildError as exc:
        warm.skipped = f"the build failed: {tail(str(exc), 2)}"
        bench.rows.append(warm)
        return False
    bench.rows.append(warm)
    return True


def use_existing_image(bench: Bench) -> bool:
    import docker.errors

    try:
        bench.client.images.get(bench.image)
        return True
    except docker.errors.ImageNotFound:
        return False


# ---------------------------------------------------------------- size
def size(bench: Bench) -> None:
    img = bench.client.images.get(bench.image)
    total = img.attrs["Size"]
    row = Row("image size (uncompressed)", goal=GOALS["image"], value_text=f"{total / GB:.2f} GB")
    row.met = total <= GOALS["image"]
    row.note = f"{bench.image}, {len(img.history())} layers"
    bench.rows.insert(0, row)
    history = [h for h in img.history() if h.get("Size", 0) > 0]
    history.sort(key=lambda h: h["Size"], reverse=True)
    for h in history[: bench.args.layers]:
        bench.layers.append([f"{h['Size'] / MB:,.1f} MB", f"{100 * h['Size'] / total:.0f}%", layer_step(h)])
    rest = history[bench.args.layers :]
    if rest:
        size = sum(h["Size"] for h in rest)
        bench.layers.append([f"{size / MB:,.1f} MB", f"{100 * size / total:.0f}%", f"({len(rest)} smaller layers)"])


# ---------------------------------------------------------------- box --help
def help(bench: Bench) -> None:
    for launcher, label in ((True, "`box --help` (./box launcher)"), (False, "`python -m imdbox --help`")):
        if launcher and not bench.box.has_launcher:
            bench.rows.append(Row(label, skipped="no executable ./box in this checkout", goal=GOALS["help"]))
            continue
        first = bench.box.run("--help", launcher=launcher)  # warm-up: the launcher makes its venv once
        if first.returncode != 0:
            bench.rows.append(Row(label, skipped=f"exit {first.returncode}: {tail(first.stdout + first.stderr)}"))
            continue
        row = Row(label, goal=GOALS["help"] if launcher else None, note="warm (1 untimed run first)")
        for _ in range(max(bench.args.runs, 5)):
            row.samples.append(timed(lambda launcher=launcher: bench.box.run("--help", launcher=launcher)))
        bench.rows.append(row)


# ---------------------------------------------------------------- box start
def prepare_fake_worker(bench: Bench) -> Optional[str]:
    """Install tests/fake_worker (and its claude) into our own fresh volume and
    pair it (the worker will not start unpaired without a terminal); a reason if it cannot."""
    try:
        from tests.fake_worker import installed_home_tar
    except ImportError as exc:
        return f"no prepared volume (--volume) and no tests/fake_worker to install ({exc})"
    script = (
        "set -e; export HOME=/home/imd IDENTITYMD_HOME=/home/imd/.identitymd; "
        "/home/imd/.npm-global/bin/imd pair >/dev/null; "
        "chown -R 1000:1000 /home/imd; chmod 700 /home/imd /home/imd/.identitymd"
    )
    bench.client.volumes.create(bench.volume, labels={"imd-bench": "1"})
    bench.own_volume = bench.volume
    prep = bench.client.containers.create(
        bench.image,
        entrypoint=["bash", "-c", script],
        command=[],
        user="root",
        network_disabled=True,
        volumes={bench.volume: {"bind": "/home/imd", "mode": "rw"}},
        name=f"{PREFIX}prep-{bench.run_id}",
        labels={"imd-bench": "1"},
    )
    try:
        prep.put_archive("/", installed_home_tar())
        prep.start()
        code = prep.wait(timeout=120)["StatusCode"]
        if code != 0:
            return f"installing the fake worker failed: {tail(prep.logs().decode(errors='replace'))}"
    finally:
        prep.remove(force=True)
    return None


def _worker_seen(bench: Bench, started: float, out: dict) -> None:
    """Poll until the worker process (`imd start`) runs in our container."""
    import docker.errors

    deadline = started + 120
    while time.perf_counter() < deadline and "stop" not in out:
        try:
            c = bench.client.containers.get(bench.container)
            top = c.top(ps_args="-eo pid,args")
            if any("imd start" in " ".join(map(str, p)) for p in top.get("Processes") or []):
                out["seen"] = time.perf_counter() - started
                return
        except docker.errors.APIError:
            pass  # not created yet, or not running yet
        time.sleep(0.05)


def start(bench: Bench) -> None:
    label = "`box start` → worker process running"
    if not bench.args.volume:
        reason = prepare_fake_worker(bench)
        if reason:
            bench.rows.append(Row(label, skipped=reason, goal=GOALS["start"]))
            return
        note = "fake worker (tests/fake_worker)"
    else:
        note = f"the worker in {bench.args.volume}"
    row = Row(label, goal=GOALS["start"], note=note)
    cmd_row = Row(
        "`box start` command, until it returns", note="includes its 2 s settle check after the worker's start-up probes"
    )
    bench.box.run("stop", timeout=120)  # untimed: as a user's first command, it writes the bytecode
    for i in range(bench.args.runs):
        log(f"box start {i + 1}/{bench.args.runs}")
        bench.remove_container()
        seen: dict = {}
        t0 = time.perf_counter()
        proc = bench.box.popen("start")
        poller = threading.Thread(target=_worker_seen, args=(bench, t0, seen), daemon=True)
        poller.start()
        try:
            output, _ = proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            proc.kill()
            output = "(timed out after 180 s)"
        elapsed = time.perf_counter() - t0
        seen["stop"] = True
        poller.join(timeout=5)
        if proc.returncode != 0 or "seen" not in seen:
            row.skipped = f"`box start` exit {proc.returncode}: {tail(output)}"
            break
        row.samples.append(seen["seen"])
        cmd_row.samples.append(elapsed)
        stop = bench.box.run("stop", timeout=120)
        if stop.returncode != 0:
            log(f"box stop said: {tail(stop.stdout + stop.stderr)}")
    bench.remove_container()
    bench.rows.append(row)
    if cmd_row.samples and not row.skipped:
        bench.rows.append(cmd_row)
