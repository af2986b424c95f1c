/* lock.c: owns "one paragond per database": an exclusive POSIX lock on <db>.lock, taken before
 * anything else at start-up and held until the process ends. A second paragond on the same
 * database learns the holder's pid from the lock itself (F_GETLK), so the message is right even
 * when the pid written into the file is stale. */
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pgd_lock {
    int fd;
    char path[];
};

/* The whole file, as one write lock. */
static struct flock whole_file(void) {
    return (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
}

int pgd_lock_take(const char *db_path, pgd_lock **out, pgn_error *err) {
    *out = NULL;
    size_t len = strlen(db_path) + sizeof PGD_LOCK_SUFFIX;
    pgd_lock *l = malloc(sizeof *l + len);
    if (!l) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    snprintf(l->path, len, "%s" PGD_LOCK_SUFFIX, db_path);
    /* O_NOFOLLOW: the lock file is ours; a symlink planted there must not make us truncate
     * whatever it points at. */
    l->fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (l->fd < 0) {
        pgn_error_set(err, PGN_E_STORE, "db", "cannot open the lock file '%s' beside the database: %s",
                      l->path, strerror(errno));
        free(l);
        return -1;
    }
    struct flock fl = whole_file();
    if (fcntl(l->fd, F_SETLK, &fl) < 0) {
        int saved = errno;
        struct flock who = whole_file();
        bool known = (saved == EAGAIN || saved == EACCES) && fcntl(l->fd, F_GETLK, &who) == 0 &&
                     who.l_type != F_UNLCK;
        if (known)
            pgn_error_set(err, PGN_E_LOCKED, "db",
                          "the database '%s' is in use by another paragond (pid %ld holds %s); "
                          "one paragond per database: stop that one first or use another --db",
                          db_path, (long)who.l_pid, l->path);
        else
            pgn_error_set(err, PGN_E_LOCKED, "db", "cannot lock '%s': %s", l->path,
                          strerror(saved == EAGAIN || saved == EACCES ? EBUSY : saved));
        close(l->fd);
        free(l);
        return -1;
    }
    /* For people (`cat paragon.db.lock`); the lock, not this text, is what counts. */
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(l->fd, 0) < 0 || pwrite(l->fd, pid, (size_t)n, 0) != n) {
        /* The lock holds without the text; say so, do not fail over it. */
        fprintf(stderr, "paragond: cannot write the pid into %s: %s\n", l->path, strerror(errno));
    }
    *out = l;
    return 0;
}

void pgd_lock_release(pgd_lock *l) {
    if (!l) return;
    /* Emptied rather than unlinked: unlinking would let a starting paragond lock a new file
     * while one still waiting on the old inode locks that. */
    if (ftruncate(l->fd, 0) < 0)
        fprintf(stderr, "paragond: cannot empty %s: %s\n", l->path, strerror(errno));
    close(l->fd); /* drops the lock */
    free(l);
}
