"""The lines the box's scripts print and box reads, written once. The scripts (shell, as
root or as imd inside the box) cannot import this: tests/unit/test_protocol_unit.py holds each
script to each line here, and to the paths of layout.py it uses."""

# The firewall's last word once every rule reads back (firewall/init-firewall.sh):
# `box start` waits for it, `box check` reads the rule counts after it.
WALLS_UP = "walls up and verified"
# worker/run.sh, just before it runs the worker; the worker's own command line, which
# worker/healthy and `box start` look for among the box's processes.
WORKER_STARTING = "imd-box: starting the worker"
WORKER_PROCESS = "imd start"
# worker/run.sh once the worker has ended.
WORKER_EXITED = "imd-box: the worker exited with code"
WORKER_KILLED = "imd-box: the worker was killed by"
# How install.sh says a step failed, and that step the worker's download.
FAILED = "imd-box: FAILED"
DOWNLOAD_FAILED = "could not download"
# install.sh passes the installed worker's `imd help` on, one line after HELP_LINE each,
# then its exit code after HELP_EXIT.
HELP_LINE = "imd-box: help| "
HELP_EXIT = "imd-box: help exit "
