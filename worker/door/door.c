/* The door: the one way from the worker's view to a job's jail (docs/jail.md, "The worker's view and its door").
 *
 * The worker runs in a view of the box (worker/door/view) that holds no agent CLI, no
 * login, and no git or forge of its own: each of those names and paths there is a
 * stand-in that runs this program as a client. The client hands the door, a process
 * outside the view, its runtime, argv, environment, working directory and its own stdin,
 * stdout and stderr (as descriptors, SCM_RIGHTS). The door starts the launcher for the
 * runtime (worker/claude, or worker/jail), which decides the place and makes the job's
 * jail, and passes back the exit code or the signal. The jail's launcher for the next call
 * is started before that call comes, and takes it once it does (worker/door/ready.h). When
 * the caller ends (killed, its process group killed, the socket closed), the launcher gets
 * SIGTERM, which it passes on to the jail and then clears what the run left, and SIGKILL to
 * its whole group GRACE_MS later.
 *
 *   door serve                       the door itself, started again at once if it dies (worker/
 *                                    door/view starts it)
 *   door ping                        exit 0 if the door answers, BUSY if it is there but takes
 *                                    no call within PING_MS (every slot held), 1 if none is
 *   door call RUNTIME ARGS...        a call through the door
 *   door stand-in:RUNTIME FILE ARGS  the same, from a stand-in's #! line (FILE is dropped;
 *                                    an empty RUNTIME is the first of ARGS)
 *   door landlock COMMAND ARGS...    COMMAND in a Landlock domain of its own: no process
 *                                    outside it (the door, a job's jail) can be traced,
 *                                    read through /proc/<pid>, or signalled from inside
 *   door scoped COMMAND ARGS...      COMMAND in a Landlock domain that scopes signals and abstract
 *                                    sockets alone (a job's jail: no process outside it can be
 *                                    signalled from inside); as it is where the kernel has no
 *                                    scopes, which box check's line 24 names
 *   door landlock-abi                the kernel's Landlock ABI (0: none), for box check
 *
 * Everything the client sends is the worker's, so the door trusts none of it: the
 * runtime is one of five, and the launcher runs with the box's own environment
 * (worker/own.env, read once when the door starts), never the caller's. The caller's
 * environment reaches the launcher as data on fd 3 (a memfd of NUL-ended entries), and
 * its environment room decides what of it a job gets. A caller whose whole request has not
 * come within REQUEST_MS is let go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* SOCKET_PATH, WORKER_DIR and OWN_ENV: the box's paths, from imdbox/layout.py (scripts/write-facts.py). */
#include "paths.h"
/* The ready launcher's descriptor and what the door sends on it. */
#include "ready.h"
#define MAGIC "imd-door 1"
#define MAX_REQUEST (4 << 20)
#define GRACE_MS 1000
#define REQUEST_MS 5000
/* How long `door ping` waits for room in a busy door's queue: what waits on it (the view's
 * start, the health check, `box status`) never hangs on a door a flood keeps full. */
#define PING_MS 1000
#define BUSY 75
#define NOT_STARTED 70
/* Calls under way at once, at most: a caller that floods the door waits its turn, and the
 * box's pids stay for the jobs (runflags.PIDS_LIMIT). */
#define MAX_CALLS 256
#define GIVEN_FD 3

/* Landlock's ABI (linux/landlock.h), written out so that the build's kernel headers
 * need not know scopes (ABI 6). */
struct ruleset_attr {
    uint64_t handled_access_fs, handled_access_net, scoped;
};
#define CREATE_RULESET_VERSION (1U << 0)
#define ACCESS_FS_MAKE_BLOCK (1ULL << 11)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)

struct runtime {
    const char *name;
    const char *launcher;
    const char *first; /* the launcher's first argument, or NULL */
};
#define JAIL WORKER_DIR "/jail"
static const struct runtime RUNTIMES[] = {
    {"claude", WORKER_DIR "/claude", NULL},
    {"codex", JAIL, "codex"},
    {"grok", JAIL, "grok"},
    {"git", JAIL, "git"},
    {"forge", JAIL, "forge"},
};

/* The launchers' environment, the box's own (OWN_ENV), NULL-ended. */
static char **own_env;

static void say(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const char *what, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    dprintf(STDERR_FILENO, "imd-box: %s was not started: %s\n", what, line);
}

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static const struct runtime *runtime_named(const char *name) {
    for (size_t i = 0; i < sizeof RUNTIMES / sizeof *RUNTIMES; i++)
        if (strcmp(RUNTIMES[i].name, name) == 0) return &RUNTIMES[i];
    return NULL;
}

/* ------------------------------------------------------------------ the client */

struct buf {
    char *data;
    size_t len, cap;
};

static void put(struct buf *b, const char *s) {
    size_t n = strlen(s) + 1;
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->data = realloc(b->data, b->cap);
        if (!b->data) exit(NOT_STARTED);
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

/* A message of `len` (a uint32_t) with `n` descriptors (SCM_RIGHTS) on `s`, as recv_fds takes
 * it: 0 once sent. */
static int send_fds(int s, uint32_t len, const int *fds, size_t n) {
    char control[CMSG_SPACE(sizeof(int) * READY_FDS)] = {0};
    struct iovec iov = {.iov_base = &len, .iov_len = sizeof len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = CMSG_SPACE(sizeof(int) * n)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
    return sendmsg(s, &msg, MSG_NOSIGNAL) == sizeof len ? 0 : -1;
}

/* A connection to the door; `flags` SOCK_NONBLOCK: EAGAIN at once when its queue is full. */
static int connect_door(int flags) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, SOCKET_PATH);
    if (s < 0) return -1;
    if (connect(s, (struct sockaddr *)&addr, sizeof addr) < 0) {
        int e = errno;
        close(s);
        errno = e;
        return -1;
    }
    return s;
}

/* The call's end as the door says it ("xCODE\n" or "sSIGNAL\n"), the caller's signals passed
 * to the door meanwhile (`sfd`). */
static int await_reply(int s, int sfd, const char *name) {
    char reply[64];
    size_t got = 0;
    for (;;) {
        struct pollfd p[2] = {{.fd = s, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        struct signalfd_siginfo info;
        if (p[1].revents && read(sfd, &info, sizeof info) == sizeof info) {
            char line[16];
            int n = snprintf(line, sizeof line, "k%u\n", info.ssi_signo);
            (void)write_all(s, line, (size_t)n);
        }
        if (!p[0].revents) continue;
        ssize_t n = read(s, reply + got, sizeof reply - 1 - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
        reply[got] = 0;
        if (!strchr(reply, '\n')) {
            if (got == sizeof reply - 1) break;
            continue;
        }
        int value = atoi(reply + 1);
        if (reply[0] == 'x') return value & 0xff;
        if (reply[0] == 's' && value > 0 && value < 65) {
            /* The jail was ended by a signal: so is this caller, as its parent expects. */
            signal(value, SIG_DFL);
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, value);
            sigprocmask(SIG_UNBLOCK, &one, NULL);
            raise(value);
            return 128 + value;
        }
        break;
    }
    say(name, "the box's door ended the call without its exit code");
    return NOT_STARTED;
}

static int call(const char *runtime, int argc, char **argv) {
    char *name = strndup(runtime, 16);
    if (!name) return NOT_STARTED;
    for (char *c = name; *c; c++)
        if ((*c < 'a' || *c > 'z') && *c != '-') *c = '?';
    /* A caller with a closed stdio descriptor gets /dev/null there: the door hands the
     * launcher three. */
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd) return NOT_STARTED;

    /* The signals the caller is sent go to the door as they come; none is lost in between. */
    sigset_t passed;
    sigemptyset(&passed);
    int signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};
    for (size_t i = 0; i < sizeof signals / sizeof *signals; i++) sigaddset(&passed, signals[i]);
    sigprocmask(SIG_BLOCK, &passed, NULL);
    int sfd = signalfd(-1, &passed, SFD_CLOEXEC);
    if (sfd < 0) {
        say(name, "no signalfd (%s)", strerror(errno));
        return NOT_STARTED;
    }

    int s = connect_door(0);
    if (s < 0) {
        say(name, "the box's door (%s) does not answer (%s): run 'box start' again", SOCKET_PATH, strerror(errno));
        return NOT_STARTED;
    }
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
        say(name, "the working directory is gone");
        return NOT_STARTED;
    }
    struct buf b = {0};
    char count[32];
    put(&b, MAGIC);
    put(&b, runtime);
    put(&b, cwd);
    snprintf(count, sizeof count, "%d", argc);
    put(&b, count);
    for (int i = 0; i < argc; i++) put(&b, argv[i]);
    for (char **e = environ; *e; e++) put(&b, *e);
    if (b.len > MAX_REQUEST) {
        say(name, "its arguments and environment are over %d bytes", MAX_REQUEST);
        return NOT_STARTED;
    }
    int fds[3] = {0, 1, 2};
    if (send_fds(s, (uint32_t)b.len, fds, 3) < 0 || write_all(s, b.data, b.len) < 0) {
        say(name, "the box's door closed the call (%s)", strerror(errno));
        return NOT_STARTED;
    }
    /* The arguments (a job's prompt among them) leave this process's command line, which
     * every process of the box can read: they live on only in the door's launcher. */
    for (int i = 0; i < argc; i++) memset(argv[i], 0, strlen(argv[i]));

    return await_reply(s, sfd, name);
}

/* ------------------------------------------------------------------ the door */

static long ms_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The box's own environment, from OWN_ENV: NAME=VALUE lines, # comments. */
static char **read_own_env(void) {
    FILE *f = fopen(OWN_ENV, "re");
    if (!f) return NULL;
    size_t n = 0, cap = 16;
    char **env = calloc(cap, sizeof *env);
    char *line = NULL;
    size_t size = 0;
    ssize_t got;
    while (env && (got = getline(&line, &size, f)) >= 0) {
        if (got > 0 && line[got - 1] == '\n') line[--got] = 0;
        if (got == 0 || line[0] == '#') continue;
        if (!strchr(line, '=') || line[0] == '=') {
            free(env);
            env = NULL;
            errno = EINVAL;
            break;
        }
        if (n + 2 > cap) {
            char **more = realloc(env, (cap *= 2) * sizeof *env);
            if (!more) free(env);
            env = more;
            if (!env) break;
        }
        if (!(env[n++] = strdup(line))) {
            free(env);
            env = NULL;
            break;
        }
        env[n] = NULL;
    }
    free(line);
    fclose(f);
    return env;
}

/* The caller's environment, as data for the launcher: the entries as they came, each ended
 * by a NUL, in a memfd it reads from the start (as /dev/fd/3). */
static int given(const char *entries, size_t len) {
    int fd = (int)syscall(SYS_memfd_create, "imd-box-given", 0);
    if (fd < 0) return -1;
    if (write_all(fd, entries, len) < 0 || lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Whether `fd` has something to read before `deadline` (ms_now's clock). The deadline is the
 * request's, set once: a caller that sends a byte now and then gets no more time for it. */
static int readable_by(int fd, long deadline) {
    for (;;) {
        long left = deadline - ms_now();
        if (left <= 0) return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)left);
        if (r > 0) return 0;
        if (r == 0 || errno != EINTR) return -1;
    }
}

static int read_exact_by(int fd, void *buf, size_t n, long deadline) {
    char *p = buf;
    while (n > 0) {
        if (readable_by(fd, deadline) < 0) return -1;
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* A call as the client sent it: the caller's stdio, and its fields, each ended by a NUL:
 * magic, runtime, cwd, argc, args, then the environment (`env`, to the end). */
struct request {
    int fds[3];
    char *fields[4];
    const struct runtime *rt;
    char **argv;
    char *env, *end;
};

/* The request, whole, within REQUEST_MS of the call's start, or the caller is let go: a call
 * slot is never held by a caller that sends its request slowly. */
static void read_request(int conn, struct request *rq) {
    long deadline = ms_now() + REQUEST_MS;
    uint32_t len = 0;
    if (readable_by(conn, deadline) < 0 || recv_fds(conn, &len, rq->fds, 3) < 0) _exit(0);
    if (len == 0 || len > MAX_REQUEST) _exit(0);
    char *data = malloc(len);
    if (!data || read_exact_by(conn, data, len, deadline) < 0 || data[len - 1] != 0) _exit(0);
    rq->env = data;
    rq->end = data + len;
}

/* The request's fields and the launcher's argv; a runtime or argument the door does not run
 * is refused in one line on the caller's stderr. */
static void parse_request(struct request *rq) {
    char *p = rq->env;
    for (int i = 0; i < 4; i++) {
        if (p >= rq->end) _exit(0);
        rq->fields[i] = p;
        p += strlen(p) + 1;
    }
    if (strcmp(rq->fields[0], MAGIC) != 0) _exit(0);
    const struct runtime *rt = rq->rt = runtime_named(rq->fields[1]);
    if (!rt) {
        say("the runtime", "the door runs claude, codex, grok, git or forge, not '%.16s'", rq->fields[1]);
        _exit(NOT_STARTED);
    }
    long argc = strtol(rq->fields[3], NULL, 10);
    if (argc < 0 || argc > 100000) _exit(0);
    char **argv = rq->argv = calloc((size_t)argc + 3, sizeof *argv);
    if (!argv) {
        say(rt->name, "the door is out of memory");
        _exit(NOT_STARTED);
    }
    int a = 0;
    argv[a++] = (char *)rt->launcher;
    if (rt->first) argv[a++] = (char *)rt->first;
    for (long i = 0; i < argc; i++) {
        if (p >= rq->end) _exit(0);
        argv[a++] = p;
        p += strlen(p) + 1;
    }
    argv[a] = NULL;
    /* The launcher's --program runs any of the image's programs in the runtime's jail, the
     * runtime's login beside it: for box check alone, never through the door. */
    if (argc > 0 && strcmp(argv[rt->first ? 2 : 1], "--program") == 0) {
        say(rt->name, "the door runs %s itself, never --program", rt->name);
        _exit(NOT_STARTED);
    }
    /* What is left is the caller's environment: the launcher's data, never its own. */
    rq->env = p;
}

/* In a launcher's process, forked by the call's process (`handler`): a session of its own, and
 * the signals as a program expects them. */
static void launcher_process(pid_t handler) {
    setsid();
    /* A door that dies ends the run the same way. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != handler) _exit(NOT_STARTED);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
}

/* The launcher, in a session of its own, with the caller's stdio and its environment as data
 * on GIVEN_FD. */
static pid_t start_launcher(const struct request *rq, int env_fd) {
    const struct runtime *rt = rq->rt;
    char **argv = rq->argv;
    pid_t handler = getpid();
    pid_t child = fork();
    if (child != 0) return child;
    launcher_process(handler);
    if (dup2(rq->fds[0], 0) < 0 || dup2(rq->fds[1], 1) < 0 || dup2(rq->fds[2], 2) < 0 || dup2(env_fd, GIVEN_FD) < 0)
        _exit(NOT_STARTED);
    if (chdir(rq->fields[2]) < 0) {
        say(rt->name, "the working directory is gone");
        _exit(NOT_STARTED);
    }
    execve(rt->launcher, argv, own_env);
    say(rt->name, "%s could not be run (%s)", rt->launcher, strerror(errno));
    _exit(NOT_STARTED);
}

/* The jail's launcher, started before its call comes (worker/door/ready.h), in a session of its
 * own as any launcher: until the call, its stdin and stdout are /dev/null and its stderr the
 * door's log. `*sock`: the end its call goes to. -1 if it could not be started. */
static pid_t start_ready(int *sock) {
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) return -1;
    pid_t handler = getpid();
    pid_t child = fork();
    if (child == 0) {
        launcher_process(handler);
        int dn = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (dn < 0 || dup2(dn, 0) < 0 || dup2(dn, 1) < 0) _exit(NOT_STARTED);
        /* Then its end, open past the exec (a dup2 onto itself would leave it close-on-exec). */
        int kept = sp[1] == READY_FD ? fcntl(READY_FD, F_SETFD, 0) : dup2(sp[1], READY_FD);
        if (kept < 0 || chdir("/") < 0) _exit(NOT_STARTED);
        char *argv[] = {JAIL, "--ready", NULL};
        execve(JAIL, argv, own_env);
        _exit(NOT_STARTED);
    }
    close(sp[1]);
    if (child < 0) {
        close(sp[0]);
        return -1;
    }
    *sock = sp[0];
    return child;
}

/* The call, handed to the ready launcher on `sock`: 0 once it has gone whole. */
static int hand_over(int sock, const struct request *rq, int env_fd) {
    struct buf b = {0};
    put(&b, rq->fields[2]);
    for (char **arg = rq->argv + 1; *arg; arg++) put(&b, *arg);
    int fds[READY_FDS] = {rq->fds[0], rq->fds[1], rq->fds[2], env_fd};
    int sent = send_fds(sock, (uint32_t)b.len, fds, READY_FDS) == 0 && write_all(sock, b.data, b.len) == 0;
    free(b.data);
    return sent ? 0 : -1;
}

/* The caller's lines ("kSIGNAL\n") in `in`: each signal passed on to the launcher. */
static size_t pass_signals(pid_t child, char *in, size_t got, size_t cap) {
    char *nl;
    while ((nl = strchr(in, '\n'))) {
        *nl = 0;
        int sig = in[0] == 'k' ? atoi(in + 1) : 0;
        if (sig > 0 && sig < 65 && sig != SIGKILL && sig != SIGSTOP) kill(child, sig);
        size_t rest = got - (size_t)(nl + 1 - in);
        memmove(in, nl + 1, rest + 1);
        got = rest;
    }
    return got == cap - 1 ? 0 : got;
}

/* Until the launcher ends: the caller's signals passed on, its exit code or signal passed
 * back; a caller that goes ends the run (SIGTERM, then its whole group GRACE_MS later). */
static void watch_call(int conn, pid_t child) {
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    long deadline = -1; /* once the caller is gone: when the group is killed */
    char in[64];
    size_t got = 0;
    for (;;) {
        struct pollfd ps[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = deadline < 0 ? conn : -1, .events = POLLIN}};
        int timeout = deadline < 0 ? (pidfd < 0 ? 50 : -1) : (int)(deadline - ms_now());
        if (timeout < -1) timeout = 0;
        int r = poll(ps, 2, timeout);
        if (r < 0 && errno != EINTR) break;
        siginfo_t info = {0};
        if (waitid(P_PID, (id_t)child, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == child) {
            /* Whatever the launcher left in its group goes with it (the group's id is still
             * its own until it is reaped). */
            kill(-child, SIGKILL);
            waitpid(child, NULL, 0);
            char line[32];
            int n = info.si_code == CLD_EXITED ? snprintf(line, sizeof line, "x%d\n", info.si_status)
                                               : snprintf(line, sizeof line, "s%d\n", info.si_status);
            (void)write_all(conn, line, (size_t)n);
            return;
        }
        if (deadline >= 0 && ms_now() >= deadline) {
            kill(-child, SIGKILL);
            deadline = ms_now() + 60000;
            continue;
        }
        if (deadline < 0 && ps[1].revents) {
            ssize_t n = read(conn, in + got, sizeof in - 1 - got);
            if (n <= 0) {
                /* The caller is gone: its jail ends. */
                kill(child, SIGTERM);
                deadline = ms_now() + GRACE_MS;
                continue;
            }
            got += (size_t)n;
            in[got] = 0;
            got = pass_signals(child, in, got, sizeof in);
        }
    }
}

/* One call, in a process of its own: read it, start its launcher, wait. A jail's call goes to
 * the `ready` launcher on `ready_sock` where there is one (else -1), which goes otherwise. */
static void handle(int conn, pid_t ready, int ready_sock) {
    struct request rq = {.fds = {-1, -1, -1}};
    read_request(conn, &rq);
    /* The caller's: where a refusal is said. */
    if (dup2(rq.fds[2], STDERR_FILENO) < 0) _exit(0);
    parse_request(&rq);
    int env_fd = given(rq.env, (size_t)(rq.end - rq.env));
    if (env_fd < 0) {
        say(rq.rt->name, "the door could not hand over its environment (%s)", strerror(errno));
        _exit(NOT_STARTED);
    }
    pid_t child = -1;
    if (ready > 0 && strcmp(rq.rt->launcher, JAIL) == 0 && hand_over(ready_sock, &rq, env_fd) == 0) {
        child = ready;
    } else {
        if (ready > 0) {
            kill(ready, SIGKILL);
            waitpid(ready, NULL, 0);
        }
        child = start_launcher(&rq, env_fd);
    }
    if (ready_sock >= 0) close(ready_sock);
    if (child < 0) {
        say(rq.rt->name, "the door could not fork (%s)", strerror(errno));
        _exit(NOT_STARTED);
    }
    for (int i = 0; i < 3; i++) close(rq.fds[i]);
    close(env_fd);
    int dn = open("/dev/null", O_WRONLY);
    if (dn >= 0) dup2(dn, STDERR_FILENO);
    watch_call(conn, child);
    _exit(0);
}

/* A call's process made before its call, its jail's launcher ready: it takes the connection the
 * door sends on `ctl` (none: the door went), and handles it. */
static void ready_handler(int ctl) {
    int sock = -1, conn = -1;
    pid_t ready = start_ready(&sock);
    uint32_t none;
    if (recv_fds(ctl, &none, &conn, 1) < 0) _exit(0);
    close(ctl);
    handle(conn, ready, sock);
}

static volatile sig_atomic_t calls; /* handlers alive */

static void reap(int sig) {
    (void)sig;
    int saved = errno;
    while (waitpid(-1, NULL, WNOHANG) > 0) calls--;
    errno = saved;
}

static void pause_ms(long ms) {
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    while (nanosleep(&t, &t) < 0 && errno == EINTR) {
    }
}

/* A failure that would repeat at once (out of descriptors, processes or memory) is said in the
 * box's log once a minute at most, and waited out, never spun on. */
static void backoff(const char *what) {
    static long said = -60000;
    if (ms_now() - said >= 60000) {
        dprintf(STDERR_FILENO, "imd-box: the door could not %s (%s); it waits and tries again\n", what, strerror(errno));
        said = ms_now();
    }
    pause_ms(100);
}

/* A call's process, made before its call (ready_handler), counted as a call: the door's end of
 * the socket its connection goes on, or -1. */
static int make_ready(int listener) {
    int sp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) return -1;
    sigset_t child, old;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    sigprocmask(SIG_BLOCK, &child, &old);
    pid_t pid = fork();
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(listener);
        close(sp[0]);
        signal(SIGCHLD, SIG_DFL);
        ready_handler(sp[1]);
    }
    if (pid > 0) calls++;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(sp[1]);
    if (pid < 0) {
        close(sp[0]);
        return -1;
    }
    return sp[0];
}

static int listen_and_serve(void) {
    own_env = read_own_env();
    if (!own_env) {
        dprintf(STDERR_FILENO, "imd-box: the door could not read the box's own environment (%s): %s\n", OWN_ENV,
                errno == EINVAL ? "a line is not NAME=VALUE" : strerror(errno));
        return 1;
    }
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, SOCKET_PATH);
    struct stat st;
    if (lstat(SOCKET_PATH, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(SOCKET_PATH);
    umask(077);
    if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(s, 64) < 0) {
        dprintf(STDERR_FILENO, "imd-box: the door could not listen at %s: %s\n", SOCKET_PATH, strerror(errno));
        return 1;
    }
    struct sigaction sa = {.sa_handler = reap, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
    sigaction(SIGCHLD, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    sigset_t child, old;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    int ready = -1; /* a call's process made before its call: where the next one goes */
    for (;;) {
        if (ready < 0 && calls < MAX_CALLS) ready = make_ready(s);
        if (ready < 0 && calls >= MAX_CALLS) {
            pause_ms(20);
            continue;
        }
        int conn = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno != EINTR && errno != ECONNABORTED) backoff("take a call");
            continue;
        }
        if (ready >= 0) {
            int handed = send_fds(ready, 0, &conn, 1) == 0;
            close(ready);
            ready = -1;
            if (handed) {
                close(conn);
                continue;
            }
        }
        /* The count goes up before the child can be reaped. */
        sigprocmask(SIG_BLOCK, &child, &old);
        pid_t pid = fork();
        if (pid == 0) {
            sigprocmask(SIG_SETMASK, &old, NULL);
            close(s);
            if (ready >= 0) close(ready);
            signal(SIGCHLD, SIG_DFL);
            handle(conn, -1, -1);
        }
        if (pid > 0) calls++;
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(conn);
        if (pid < 0) backoff("start a call's process");
    }
}

/* The door, and again if it dies: calls under way live on in their own processes. */
static int serve(void) {
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        long started = ms_now();
        pid_t door = fork();
        if (door == 0) _exit(listen_and_serve());
        int status = 0;
        while (door > 0 && waitpid(door, &status, 0) < 0 && errno == EINTR) {
        }
        dprintf(STDERR_FILENO, "imd-box: the door ended (%s %d); it starts again\n",
                WIFSIGNALED(status) ? "signal" : "exit code", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        /* At once, unless it could not even start. */
        if (ms_now() - started < 1000) sleep(1);
    }
}

/* Whether a door listens and takes a call: never a wait on its queue longer than PING_MS. */
static int ping(void) {
    long deadline = ms_now() + PING_MS;
    for (;;) {
        int s = connect_door(SOCK_NONBLOCK);
        if (s >= 0) {
            close(s);
            return 0;
        }
        /* EAGAIN: a door listens, its queue full; anything else: no door. */
        if (errno != EAGAIN) return 1;
        if (ms_now() >= deadline) return BUSY;
        pause_ms(20);
    }
}

/* ------------------------------------------------------------------ Landlock */

static long landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, CREATE_RULESET_VERSION);
    return abi < 0 ? 0 : abi;
}

/* SCOPES_ONLY: a job's jail, which makes mounts of its own: a domain before ABI 6 would refuse
 * them, so there it runs without one. */
static int landlock(char **argv, int scopes_only) {
    long abi = landlock_abi();
    if (scopes_only && abi < 6) {
        execvp(argv[0], argv);
        return 127;
    }
    if (abi < 6) {
        /* The view is made all the same (its user namespace keeps the door's /proc out of
         * reach): what is missing is said in the box's log, and box check's line 24 FAILs. */
        if (abi < 1)
            dprintf(STDERR_FILENO, "imd-box: this engine's kernel has no Landlock: the worker may signal the door and "
                                   "the jobs' jails; update the engine (Docker Desktop) and run 'box check'\n");
        else
            dprintf(STDERR_FILENO, "imd-box: this engine's kernel has Landlock ABI %ld, which cannot scope signals (ABI 6, "
                                   "Linux 6.12): the worker may signal the door and the jobs' jails; update the engine "
                                   "(Docker Desktop) and run 'box check'\n", abi);
    }
    if (abi < 1) {
        execvp(argv[0], argv);
        return 127;
    }
    struct ruleset_attr attr = {0};
    size_t size;
    if (abi >= 6) {
        /* A domain that limits no file access leaves mounts to the view (the worker's own
         * sandboxes), and still keeps every process outside it out of reach. */
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
        size = sizeof attr;
    } else {
        /* Before scopes, a domain must handle an access: making block devices, which imd
         * never may. */
        attr.handled_access_fs = ACCESS_FS_MAKE_BLOCK;
        size = sizeof attr.handled_access_fs;
    }
    int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (fd < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_landlock_restrict_self, fd, 0) < 0) {
        dprintf(STDERR_FILENO, "imd-box: the worker's view could not be made (Landlock: %s)\n", strerror(errno));
        return NOT_STARTED;
    }
    close(fd);
    execvp(argv[0], argv);
    dprintf(STDERR_FILENO, "imd-box: %s could not be run: %s\n", argv[0], strerror(errno));
    return 127;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "serve") == 0) return serve();
    if (argc >= 2 && strcmp(argv[1], "ping") == 0) return ping();
    if (argc >= 3 && strcmp(argv[1], "landlock") == 0) return landlock(argv + 2, 0);
    if (argc >= 3 && strcmp(argv[1], "scoped") == 0) return landlock(argv + 2, 1);
    if (argc == 2 && strcmp(argv[1], "landlock-abi") == 0) return printf("%ld\n", landlock_abi()) < 0;
    if (argc >= 3 && strcmp(argv[1], "call") == 0) return call(argv[2], argc - 3, argv + 3);
    if (argc >= 3 && strncmp(argv[1], "stand-in:", 9) == 0) {
        const char *runtime = argv[1] + 9;
        char **rest = argv + 3;
        int n = argc - 3;
        /* The jail's stand-in, run as itself or through the hands' links to it. */
        const char *base = strrchr(argv[2], '/');
        base = base ? base + 1 : argv[2];
        if (!*runtime && strstr(argv[2], "/hands/") && (strcmp(base, "git") == 0 || strcmp(base, "forge") == 0))
            runtime = base;
        if (!*runtime) {
            if (n < 1) {
                say("the runtime", "name one: claude, codex, grok, git or forge");
                return NOT_STARTED;
            }
            runtime = rest[0];
            rest++;
            n--;
        }
        return call(runtime, n, rest);
    }
    dprintf(STDERR_FILENO, "usage: door serve | ping | call RUNTIME ARGS... | landlock COMMAND... | scoped COMMAND... | "
                           "landlock-abi\n");
    return 64;
}
