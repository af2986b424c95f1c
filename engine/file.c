/* file.c: reading a whole file, for the CLI and the benchmarks (specs, programs), writing one
 * atomically (the CLI's tunings), and making a directory with its parents (paragond's data dir,
 * the CLI's checkpoint dir). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paragon.h"

char *pgn_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) { /* + 1: the NUL */
            cap = cap ? cap * 2 : 65536;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

int pgn_make_dirs(const char *path, const char *what, pgn_error *err) {
    size_t len = strlen(path);
    if (len == 0) {
        pgn_error_set(err, PGN_E_IO, "", "the %s path is empty", what);
        return -1;
    }
    char *copy = strdup(path);
    if (!copy) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    int ret = 0;
    for (char *p = copy + 1;; p++) {
        if (*p != '/' && *p != 0) continue;
        char saved = *p;
        *p = 0;
        if (mkdir(copy, 0755) < 0 && errno != EEXIST) {
            pgn_error_set(err, PGN_E_IO, "", "cannot create the %s '%s': %s", what, copy, strerror(errno));
            ret = -1;
            break;
        }
        *p = saved;
        if (!saved) break;
    }
    struct stat st;
    if (ret == 0 && (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))) {
        pgn_error_set(err, PGN_E_IO, "", "the %s '%s' is not a directory", what, path);
        ret = -1;
    }
    free(copy);
    return ret;
}

int pgn_write_file_atomic(const char *path, const void *head, size_t head_len, const void *data, size_t data_len,
                          pgn_error *err) {
    char tmp[PGN_PATH_MAX * 2 + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        pgn_error_set(err, PGN_E_IO, "", "cannot create '%s': %s", tmp, strerror(errno));
        return -1;
    }
    bool ok = (!head_len || fwrite(head, 1, head_len, f) == head_len) &&
              (!data_len || fwrite(data, 1, data_len, f) == data_len);
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0) ok = false;
    if (!ok || rename(tmp, path) != 0) {
        pgn_error_set(err, PGN_E_IO, "", "writing '%s' failed: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}
