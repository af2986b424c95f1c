/* lock.c: owns "one paragond per database": an exclusive POSIX lock on <db>.lock (<db> the
 * database's real file, whatever symbolic link names it), taken before anything else at start-up
 * and held until the process ends. A second paragond on the same database learns the holder's
 * pid from the lock itself (F_GETLK), so the message is right even when the pid written into the
 * file is stale. */
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct pgd_lock {
    int fd;
    char path[];
};

/* The whole file, as one write lock. */
static struct flock whole_file(void) {
    return (struct flock){.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
}

/* The database's own file, whatever path names it: symbolic links resolved (its folder's too,
 * for a database not made yet), so that every path to one file gives one lock. A file with a
 * second hard link is refused: its other name would have a lock of its own (and SQLite names
 * its journal from the path, so two names could corrupt it). */
static char *real_database(const char *db_path, pgn_error *err) {
    struct stat st;
    if (lstat(db_path, &st) == 0 || errno != ENOENT) { /* there: the file (a link to it, resolved) */
        char *real = realpath(db_path, NULL);
        if (!real) {
            pgn_error_set(err, PGN_E_STORE, "db", "cannot resolve the database path '%s': %s", db_path, strerror(errno));
            return NULL;
        }
        if (stat(real, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1) {
            pgn_error_set(err, PGN_E_STORE, "db",
                          "the database '%s' has %ju hard links: another name for it would take a lock of "
                          "its own and SQLite names its journal from the path; give it one name (cp it to a "
                          "new file, or remove the other links)",
                          db_path, (uintmax_t)st.st_nlink);
            free(real);
            return NULL;
        }
        return real;
    }
    /* not made yet: its folder resolved, its own name kept */
    char *copy = strdup(db_path), *slash = copy ? strrchr(copy, '/') : NULL;
    const char *name = slash ? slash + 1 : copy;
    if (slash) *slash = '\0';
    char *folder = copy ? realpath(slash ? (copy[0] ? copy : "/") : ".", NULL) : NULL;
    char *real = NULL;
    if (folder && asprintf(&real, "%s/%s", strcmp(folder, "/") ? folder : "", name) < 0) real = NULL;
    if (!real)
        pgn_error_set(err, PGN_E_STORE, "db", "cannot resolve the database path '%s': %s", db_path,
                      copy ? strerror(errno) : "out of memory");
    free(folder);
    free(copy);
    return real;
}

int pgd_lock_take(const char *db_path, pgd_lock **out, pgn_error *err) {
    *out = NULL;
    char *real = real_database(db_path, err);
    if (!real) return -1;
    size_t len = strlen(real) + sizeof PGD_LOCK_SUFFIX;
    pgd_lock *l = malloc(sizeof *l + len);
    if (!l) {
        free(real);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    snprintf(l->path, len, "%s" PGD_LOCK_SUFFIX, real);
    free(real);
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
