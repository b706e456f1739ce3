/* The ready launcher: worker/jail started by the door ahead of a call (door.c, ready_handler),
 * which takes the call from the door once it comes (take.c, bash's `take`). A call's start
 * then pays for no bash of its own: a hands call's launcher was about a third of it.
 *
 * On READY_FD, a stream socket to the door's handler, the call comes as one message: its
 * length (a uint32_t) with four descriptors (SCM_RIGHTS: the caller's stdin, stdout and
 * stderr, and the caller's environment as data, for fd 3), then that many bytes of fields,
 * each ended by a NUL: the working directory, then the launcher's arguments (the runtime
 * first). */
#define READY_FD 4
#define READY_FDS 4

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

/* A message of a uint32_t (`*len`) with `n` descriptors (SCM_RIGHTS, close-on-exec) from `s`, as
 * the door's client, the door and its ready launcher send them: 0 once had whole. */
static inline int recv_fds(int s, uint32_t *len, int *fds, size_t n) {
    char control[CMSG_SPACE(sizeof(int) * READY_FDS)] = {0};
    struct iovec iov = {.iov_base = len, .iov_len = sizeof *len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = CMSG_SPACE(sizeof(int) * n)};
    ssize_t r;
    while ((r = recvmsg(s, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    struct cmsghdr *cm = r == (ssize_t)sizeof *len ? CMSG_FIRSTHDR(&msg) : NULL;
    if (!cm || cm->cmsg_type != SCM_RIGHTS || cm->cmsg_len != CMSG_LEN(sizeof(int) * n)) return -1;
    memcpy(fds, CMSG_DATA(cm), sizeof(int) * n);
    return 0;
}
