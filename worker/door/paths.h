/* The door's paths (worker/door/door.c). Written by scripts/write-facts.py from imdbox/layout.py: edit that and run it again. */
#define SOCKET_PATH "/run/imd-box-own/door/door.sock"
#define WORKER_DIR "/usr/local/lib/imd-box/worker"
#define OWN_ENV "/usr/local/lib/imd-box/worker/own.env"
