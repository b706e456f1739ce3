/* take: bash's own builtin for the door's ready launcher (worker/door/ready.h), which the jail
 * loads with `enable -f` (worker/jail --ready).
 *
 *   take    the call the door hands over on READY_FD: the caller's stdin, stdout, stderr and
 *           environment (as data) on fds 0-3, the launcher's arguments as the positional
 *           parameters, and the working directory changed into. READY_FD is closed, so no jail
 *           holds it. Exit status: 0 taken, 1 no call came (the door's handler went), 2 the
 *           working directory is gone (the arguments are set: the refusal can name the runtime).
 *
 * Built as bash's loadable builtins are, against bash-builtins' headers (the Dockerfile). */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* In the order bash's loadables.h has them. */
#include "builtins.h"
#include "shell.h"
#include "common.h"

#include "ready.h"

static int read_all(int fd, char *p, size_t n) {
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* The message, or -1: its fields in *data (NUL-ended, *len bytes), its descriptors in fds. */
static int receive(int fds[READY_FDS], char **data, uint32_t *len) {
    if (recv_fds(READY_FD, len, fds, READY_FDS) < 0) return -1;
    *data = *len > 0 ? malloc(*len) : NULL;
    if (!*data || read_all(READY_FD, *data, *len) < 0 || (*data)[*len - 1] != 0) return -1;
    return 0;
}

static int take_builtin(WORD_LIST *list) {
    if (list) {
        builtin_usage();
        return EX_USAGE;
    }
    int fds[READY_FDS];
    char *data = NULL;
    uint32_t len = 0;
    int got = receive(fds, &data, &len);
    close(READY_FD);
    if (got < 0) return 1;
    /* Each to its place: first out of the way of 0-3 (received, they may be any of them). */
    for (int i = 0; i < READY_FDS; i++) {
        int high = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
        close(fds[i]);
        if (high < 0) return 1;
        fds[i] = high;
    }
    for (int i = 0; i < READY_FDS; i++) {
        if (dup2(fds[i], i) < 0) return 1;
        close(fds[i]);
    }
    /* The arguments, after the working directory, in order. */
    const char *cwd = data;
    char *end = data + len;
    WORD_LIST *args = NULL;
    for (char *p = data + strlen(data) + 1; p < end; p += strlen(p) + 1) args = make_word_list(make_word(p), args);
    args = REVERSE_LIST(args, WORD_LIST *);
    remember_args(args, 1);
    dispose_words(args);
    /* Bash keeps its own record of where it is, which `cd` reads: it is told, as the kernel has it. */
    char *here = chdir(cwd) == 0 ? getcwd(NULL, 0) : NULL;
    free(data);
    if (!here) return 2;
    set_working_directory(here);
    free(here);
    return EXECUTION_SUCCESS;
}

static char *take_doc[] = {"The call the door hands its ready launcher (worker/door/ready.h).", NULL};

struct builtin take_struct = {"take", take_builtin, BUILTIN_ENABLED, take_doc, "take", 0};
