/* datasets.c: owns <data-dir>/datasets/ as the API sees it: PUT streams a body to a temporary
 * file there (never into memory), checks its name, size, format and checksum, and renames it into
 * place, so that a failed upload leaves nothing and never replaces what was there; GET lists every
 * file (uploaded or copied in by hand) with its SHA-256, cached in the store by size and mtime;
 * DELETE removes one no live job names. Specs name datasets by these file names. */
#include "datasets.h"

#include "views.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The routes' prefix: a dataset's name is what follows it. */
#define DATASETS_PATH "/api/v1/datasets"
/* Uploads in progress: hidden names (no dataset name starts with '.'), removed at start. */
#define UPLOAD_PREFIX ".upload-"
/* Bytes hashed per read for a file copied in by hand. */
#define HASH_CHUNK (1u << 20)
/* How many names an error lists before it says how many more there are. */
#define NAMES_LISTED 20

struct pgd_datasets {
    char dir[PATH_MAX]; /* <data-dir>/datasets */
    pgd_store *store;
    int64_t max_bytes;
    pthread_mutex_t lock; /* see pgd_datasets_lock */
};

/* ---- names and formats ------------------------------------------------------------------- */

typedef enum { FORMAT_IDX, FORMAT_IDX_GZ, FORMAT_TEXT, FORMAT_UNKNOWN } dataset_format;
static const char *const format_names[] = {"idx", "idx.gz", "text", "unknown"};

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && !strcmp(s + n - k, suffix);
}

/* The format a name's extension says: .idx or -ubyte (MNIST's own names) for idx, the same with
 * .gz for gzip'd idx, .txt for text. */
static dataset_format format_of(const char *name) {
    if (ends_with(name, ".idx.gz") || ends_with(name, "-ubyte.gz")) return FORMAT_IDX_GZ;
    if (ends_with(name, ".idx") || ends_with(name, "-ubyte")) return FORMAT_IDX;
    if (ends_with(name, ".txt")) return FORMAT_TEXT;
    return FORMAT_UNKNOWN;
}

/* Why name cannot be a dataset's (NULL: it can). Each rule is said on its own, so that the
 * client learns which one it broke. An upload's name needs an extension (it decides the checks);
 * a file copied in by hand may lack one and still be read and deleted. */
static const char *name_problem(const char *name, bool upload, char *why, size_t size) {
    size_t len = strlen(name);
    if (len == 0) return "must not be empty";
    if (len > PGD_DATASET_NAME_MAX) {
        snprintf(why, size, "is %zu characters long; a name has at most %d", len, PGD_DATASET_NAME_MAX);
        return why;
    }
    if (strchr(name, '/')) return "must not contain '/': datasets are files directly in the datasets directory";
    if (strstr(name, "..")) return "must not contain '..'";
    if (name[0] == '.') return "must not start with '.'";
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p)) {
            if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                snprintf(why, size, "holds the byte 0x%02x; a name is made of A-Z a-z 0-9 . _ -",
                         (unsigned char)*p);
            else
                snprintf(why, size, "holds '%c'; a name is made of A-Z a-z 0-9 . _ -", *p);
            return why;
        }
    if (upload && format_of(name) == FORMAT_UNKNOWN)
        return "has no dataset extension: .idx or -ubyte (idx), .idx.gz or -ubyte.gz (gzip'd "
               "idx), .txt (UTF-8 text)";
    return NULL;
}

/* The name in the path, or NULL when the path is the collection itself. */
static const char *path_name(const pgd_request *req) {
    const char *p = req->path + strlen(DATASETS_PATH);
    return *p == '/' ? p + 1 : NULL;
}

/* A 400 for a bad name, its message quoting the name as it is safe to show. */
static enum MHD_Result bad_name(const pgd_request *req, const char *name, const char *problem) {
    char *shown = pgn_text_visible(name);
    enum MHD_Result r = pgd_reply_error(req, PGN_E_INVALID_PARAMETER, "name", "name: '%.200s' %s",
                                        shown ? shown : "?", problem);
    free(shown);
    return r;
}

/* A failure of ours (I/O, the store): said on stderr too, the client's path made visible (%1b
 * decodes to an escape). */
static enum MHD_Result internal(const pgd_request *req, const pgn_error *err) {
    char *path = pgn_text_visible(req->path);
    fprintf(stderr, "paragond: %s %s: %s\n", req->method, path ? path : "?", err->message);
    free(path);
    return pgd_reply_pgn_error(req, err, NULL, NULL);
}

/* ---- what a file is ---------------------------------------------------------------------- */

static int64_t mtime_ns(const struct stat *st) {
    return (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

/* "2024-05-01T12:00:00.123Z", as the store writes times. */
static void iso_time(int64_t ns, char out[32]) {
    time_t sec = (time_t)(ns / 1000000000LL);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char day[24];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%s.%03dZ", day, (int)(ns % 1000000000LL / 1000000));
}

/* Checks the content against the format: the idx reader's own checks, or UTF-8 for text. *info
 * receives the shape ({"kind","dims"} or {"chars"}). shown names the file in errors. */
static int inspect(const char *path, const char *shown, dataset_format format, json_t **info,
                   pgn_error *err) {
    *info = NULL;
    if (format == FORMAT_TEXT) {
        uint64_t chars;
        if (pgn_text_inspect(path, shown, &chars, err) < 0) return -1;
        *info = json_pack("{s:I}", "chars", (json_int_t)chars);
        return 0;
    }
    pgn_idx_info idx;
    if (pgn_idx_inspect(path, shown, &idx, err) < 0) return -1;
    if (idx.gzip != (format == FORMAT_IDX_GZ)) {
        pgn_error_set(err, PGN_E_DATA, "", "%s: the name says %s but the content is %s: name a gzip "
                      "file .idx.gz or -ubyte.gz, a plain one .idx or -ubyte", shown,
                      idx.gzip ? "plain idx" : "gzip'd idx", idx.gzip ? "gzip'd" : "not gzip'd");
        return -1;
    }
    json_t *dims = json_array();
    for (int i = 0; i < idx.ndims; i++) json_array_append_new(dims, json_integer(idx.dims[i]));
    *info = json_pack("{s:s, s:o}", "kind", idx.ndims == 3 ? "images" : "labels", "dims", dims);
    return 0;
}

/* SHA-256 of the open file fd as hex; -1 on a read error (errno). */
static int hash_fd(int fd, char hex[65]) {
    unsigned char *buf = malloc(HASH_CHUNK);
    if (!buf) return -1;
    pgn_sha256 s;
    pgn_sha256_init(&s);
    ssize_t got;
    while ((got = read(fd, buf, HASH_CHUNK)) != 0) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        pgn_sha256_update(&s, buf, (size_t)got);
    }
    free(buf);
    if (got < 0) return -1;
    unsigned char digest[32];
    pgn_sha256_final(&s, digest);
    pgn_sha256_hex(digest, hex);
    return 0;
}

/* The JSON a client sees of a dataset. */
static json_t *meta_json(const pgd_dataset_meta *m) {
    char modified[32];
    iso_time(m->mtime_ns, modified);
    json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:s, s:o}", "name", m->name, "bytes",
                          (json_int_t)m->bytes, "format", m->format, "sha256", m->sha256,
                          "modified_at", modified, "created_at",
                          m->created_at[0] ? json_string(m->created_at) : json_null());
    json_t *invalid = json_object_get(m->info, "invalid");
    json_object_set_new(o, "uploaded", json_boolean(m->created_at[0] != 0));
    if (invalid) {
        json_object_set_new(o, "valid", json_false());
        json_object_set(o, "problem", invalid);
    } else {
        json_object_set_new(o, "valid", json_true());
        json_object_update(o, m->info);
    }
    return o;
}

/* What is known of the file name (a regular file, st its stat): the store's record when it still
 * holds for the file, else computed now (hash and checks) and recorded. -1 on an I/O or store
 * error. */
static int describe(pgd_datasets *ds, const char *name, const struct stat *st, pgd_dataset_meta *m,
                    pgn_error *err) {
    bool found;
    if (pgd_store_dataset_get(ds->store, name, m, &found, err) < 0) return -1;
    if (found && m->bytes == (int64_t)st->st_size && m->mtime_ns == mtime_ns(st)) return 0;
    /* Copied in by hand, or changed since: the upload's created_at no longer describes it. */
    json_decref(m->info);
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    char path[PATH_MAX + PGD_DATASET_NAME_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", ds->dir, name);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat now;
    if (fd < 0 || fstat(fd, &now) < 0 || hash_fd(fd, m->sha256) < 0) {
        pgn_error_set(err, PGN_E_IO, "", "cannot read dataset %s: %s", name, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    m->bytes = (int64_t)now.st_size;
    m->mtime_ns = mtime_ns(&now);
    dataset_format format = format_of(name);
    snprintf(m->format, sizeof m->format, "%s", format_names[format]);
    pgn_error why;
    pgn_error_clear(&why);
    if (format == FORMAT_UNKNOWN)
        m->info = json_pack("{s:s}", "invalid", "its name has no dataset extension (.idx, -ubyte, "
                                                ".idx.gz, -ubyte.gz, .txt)");
    else if (inspect(path, name, format, &m->info, &why) < 0)
        m->info = json_pack("{s:s}", "invalid", why.message);
    /* A file that changes while it is read is described again next time (its mtime moves). A
     * record the store cannot take now is computed again next time: the answer stands. */
    pgn_error serr;
    if (pgd_store_dataset_put(ds->store, m, &serr) < 0)
        fprintf(stderr, "paragond: dataset %s: its record is not kept: %s\n", name, serr.message);
    return 0;
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

int pgd_datasets_create(const char *data_dir, pgd_store *store, int64_t max_bytes,
                        pgd_datasets **out, pgn_error *err) {
    *out = NULL;
    pgd_datasets *ds = calloc(1, sizeof *ds);
    if (!ds) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    /* No data dir (an API made only for its route table): no directory is touched. */
    int n = data_dir ? snprintf(ds->dir, sizeof ds->dir, "%s/%s", data_dir, PGN_DATASETS_SUBDIR) : 0;
    if (n < 0 || (size_t)n >= sizeof ds->dir) {
        free(ds);
        pgn_error_set(err, PGN_E_DATA_DIR, "data_dir", "--data-dir is too long");
        return -1;
    }
    ds->store = store;
    ds->max_bytes = max_bytes;
    pthread_mutex_init(&ds->lock, NULL);
    /* An upload that a dying paragond left half-written is nobody's. */
    DIR *d = data_dir ? opendir(ds->dir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, UPLOAD_PREFIX, strlen(UPLOAD_PREFIX)) && unlinkat(dirfd(d), e->d_name, 0) < 0)
            fprintf(stderr, "paragond: cannot remove the unfinished upload %s/%s: %s\n", ds->dir,
                    e->d_name, strerror(errno));
    if (d) closedir(d);
    *out = ds;
    return 0;
}

void pgd_datasets_destroy(pgd_datasets *ds) {
    if (!ds) return;
    pthread_mutex_destroy(&ds->lock);
    free(ds);
}

void pgd_datasets_lock(pgd_datasets *ds) { pthread_mutex_lock(&ds->lock); }
void pgd_datasets_unlock(pgd_datasets *ds) { pthread_mutex_unlock(&ds->lock); }

/* ---- which jobs use a dataset ------------------------------------------------------------- */

/* Whether a spec's path names the dataset: the same file directly in the directory ("x.idx",
 * "./x.idx"). */
static bool names(const char *path, const char *name) {
    while (path[0] == '.' && path[1] == '/') {
        path += 2;
        while (*path == '/') path++;
    }
    return !strcmp(path, name);
}

/* The first queued or running job whose spec names the dataset: *id 0 when none. */
static int job_using(pgd_datasets *ds, const char *name, int64_t *id, char state[16], pgn_error *err) {
    static const char *const keys[] = {"train_images", "train_labels", "test_images", "test_labels", "path"};
    *id = 0;
    json_t *jobs;
    if (pgd_store_datasets_in_use(ds->store, &jobs, err) < 0) return -1;
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job) {
        json_t *data = json_object_get(job, "data");
        const char *source = json_string_value(json_object_get(data, "source"));
        if (!source || (strcmp(source, "idx") && strcmp(source, "text"))) continue;
        for (size_t k = 0; k < sizeof keys / sizeof *keys && !*id; k++) {
            const char *path = json_string_value(json_object_get(data, keys[k]));
            if (path && names(path, name)) {
                *id = json_integer_value(json_object_get(job, "id"));
                snprintf(state, 16, "%s", json_string_value(json_object_get(job, "state")));
            }
        }
        if (*id) break;
    }
    json_decref(jobs);
    return 0;
}

/* ---- upload -------------------------------------------------------------------------------- */

typedef enum {
    UPLOAD_OPEN,      /* being written */
    UPLOAD_REFUSED,   /* no token: api.c answers 401 before the handler */
    UPLOAD_FAILED,    /* err says why; nothing is kept */
} upload_state;

typedef struct upload {
    pgd_sink sink; /* first: the sink is the upload */
    pgd_datasets *ds;
    upload_state state;
    pgn_error err;
    char name[PGD_DATASET_NAME_MAX + 1];
    dataset_format format;
    char tmp[PATH_MAX + 32]; /* the temporary file; "" once it is gone */
    int fd;
    int64_t bytes;
    pgn_sha256 sha;
} upload;

static void upload_discard(upload *u) {
    if (u->fd >= 0) close(u->fd);
    u->fd = -1;
    if (u->tmp[0]) unlink(u->tmp);
    u->tmp[0] = 0;
}

static void upload_fail(upload *u, pgn_error_code code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void upload_fail(upload *u, pgn_error_code code, const char *field, const char *fmt, ...) {
    pgn_error_clear(&u->err);
    u->err.code = code;
    snprintf(u->err.field, sizeof u->err.field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->err.message, sizeof u->err.message, fmt, ap);
    va_end(ap);
    u->state = UPLOAD_FAILED;
    upload_discard(u);
}

static void too_large(upload *u) {
    upload_fail(u, PGN_E_TOO_LARGE, "",
                "the dataset is larger than %" PRId64 " MiB, the limit of this paragond "
                "(--max-dataset-mb); nothing is stored",
                u->ds->max_bytes >> 20);
}

static bool upload_write(pgd_sink *sink, const char *data, size_t len) {
    upload *u = (upload *)sink;
    if (u->state != UPLOAD_OPEN) return false;
    if (u->bytes + (int64_t)len > u->ds->max_bytes) {
        too_large(u);
        return false;
    }
    pgn_sha256_update(&u->sha, data, len);
    for (size_t done = 0; done < len;) {
        ssize_t n = write(u->fd, data + done, len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            upload_fail(u, PGN_E_IO, "", "cannot write the upload of %s: %s; nothing is stored",
                        u->name, strerror(errno));
            return false;
        }
        done += (size_t)n;
    }
    u->bytes += (int64_t)len;
    return true;
}

static void upload_release(pgd_sink *sink) {
    upload *u = (upload *)sink;
    upload_discard(u);
    free(u);
}

static bool dataset_exists(const pgd_datasets *ds, const char *name) {
    char path[PATH_MAX + PGD_DATASET_NAME_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", ds->dir, name);
    struct stat st;
    return lstat(path, &st) == 0;
}

/* If-None-Match: * asks for a new dataset only (RFC 9110: "*" matches any current file). */
static bool create_only(const pgd_request *req) {
    const char *v = pgd_request_header(req, MHD_HTTP_HEADER_IF_NONE_MATCH);
    if (!v) return false;
    while (*v == ' ') v++;
    return v[0] == '*';
}

pgd_sink *pgd_datasets_sink_open(pgd_datasets *ds, const pgd_request *req, bool refused) {
    upload *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    u->sink.write = upload_write;
    u->sink.release = upload_release;
    u->ds = ds;
    u->fd = -1;
    pgn_sha256_init(&u->sha);
    u->sink.answer_now = true; /* until the upload is ready to take the body */
    if (refused) {
        u->state = UPLOAD_REFUSED;
        return &u->sink;
    }
    const char *name = path_name(req);
    char why[160];
    const char *problem = name ? name_problem(name, true, why, sizeof why) : "is missing";
    if (problem) {
        char *shown = pgn_text_visible(name ? name : "");
        upload_fail(u, PGN_E_INVALID_PARAMETER, "name", "name: '%.200s' %s", shown ? shown : "?", problem);
        free(shown);
        return &u->sink;
    }
    snprintf(u->name, sizeof u->name, "%s", name);
    u->format = format_of(name);
    const char *length = pgd_request_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > (unsigned long long)ds->max_bytes) {
        too_large(u);
        return &u->sink;
    }
    if (create_only(req) && dataset_exists(ds, name)) {
        upload_fail(u, PGN_E_PRECONDITION_FAILED, "If-None-Match",
                    "dataset %s exists and If-None-Match: * asks for a new one; nothing is stored "
                    "(without the header, PUT replaces it)", name);
        return &u->sink;
    }
    snprintf(u->tmp, sizeof u->tmp, "%s/" UPLOAD_PREFIX "XXXXXX", ds->dir);
    u->fd = mkostemp(u->tmp, O_CLOEXEC);
    if (u->fd < 0) {
        u->tmp[0] = 0;
        upload_fail(u, PGN_E_IO, "", "cannot create the upload's file in %s: %s", ds->dir, strerror(errno));
        return &u->sink;
    }
    u->sink.answer_now = false;
    return &u->sink;
}

/* The Content-SHA256 header's digest (lower case) into want; false when it is not 64 hex digits. */
static bool header_digest(const char *v, char want[65]) {
    size_t n = 0;
    for (; v[n] && n < 65; n++) {
        if (!isxdigit((unsigned char)v[n])) return false;
        want[n] = (char)tolower((unsigned char)v[n]);
    }
    want[n < 65 ? n : 64] = 0;
    return n == 64;
}

/* Puts the finished upload at its name: a new name by link() (which fails rather than replace,
 * for If-None-Match: * racing another upload), an existing one by rename() over it. Under the
 * lock, with the in-use check, so a job queued meanwhile cannot lose its dataset. *created says
 * which. Returns 0, or -1 with u->err set. */
static int upload_place(upload *u, bool only_new, bool *created) {
    pgd_datasets *ds = u->ds;
    char path[PATH_MAX + PGD_DATASET_NAME_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", ds->dir, u->name);
    pgd_datasets_lock(ds);
    int rc = -1;
    *created = !dataset_exists(ds, u->name);
    int64_t job = 0;
    char state[16] = "";
    pgn_error err;
    if (!*created && only_new) {
        upload_fail(u, PGN_E_PRECONDITION_FAILED, "If-None-Match",
                    "dataset %s exists and If-None-Match: * asks for a new one; nothing is stored "
                    "(without the header, PUT replaces it)", u->name);
    } else if (!*created && job_using(ds, u->name, &job, state, &err) < 0) {
        upload_fail(u, err.code, "", "%s", err.message);
    } else if (job) {
        upload_fail(u, PGN_E_CONFLICT, "",
                    "dataset %s is named by job %" PRId64 " (%s): it is not replaced while a queued "
                    "or running job reads it; upload under another name, or after the job ends",
                    u->name, job, state);
    } else if (*created ? link(u->tmp, path) < 0 : rename(u->tmp, path) < 0) {
        if (errno == EEXIST)
            upload_fail(u, PGN_E_PRECONDITION_FAILED, "If-None-Match",
                        "dataset %s was created by another upload meanwhile; nothing is stored", u->name);
        else
            upload_fail(u, PGN_E_IO, "", "cannot put the upload at %s: %s; nothing is stored", path,
                        strerror(errno));
    } else {
        if (*created) unlink(u->tmp); /* the link holds it now */
        u->tmp[0] = 0;
        rc = 0;
        /* The new name survives a crash from here on: the directory's entry is on disk too. */
        int dir = open(ds->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir >= 0) {
            fsync(dir);
            close(dir);
        }
    }
    pgd_datasets_unlock(ds);
    return rc;
}

enum MHD_Result pgd_datasets_put(pgd_datasets *ds, const pgd_request *req) {
    upload *u = (upload *)req->sink;
    if (!u) { /* not reached: api.c opens a sink for every PUT of this route */
        return pgd_reply_error(req, PGN_E_INTERNAL, NULL, "the upload was not received");
    }
    (void)ds;
    if (u->state == UPLOAD_FAILED) {
        if (u->err.code == PGN_E_IO || u->err.code == PGN_E_STORE || u->err.code == PGN_E_STORE_UNAVAILABLE)
            return internal(req, &u->err);
        return pgd_reply_pgn_error(req, &u->err, NULL, NULL);
    }
    if (u->state != UPLOAD_OPEN || u->sink.answer_now)
        return pgd_reply_error(req, PGN_E_INTERNAL, NULL, "the upload was refused"); /* not reached */
    unsigned char digest[32];
    char sha[65];
    pgn_sha256_final(&u->sha, digest);
    pgn_sha256_hex(digest, sha);
    const char *claimed = pgd_request_header(req, PGD_DATASET_SHA256_HEADER);
    char want[65];
    if (claimed && !header_digest(claimed, want))
        upload_fail(u, PGN_E_INVALID_PARAMETER, PGD_DATASET_SHA256_HEADER,
                    PGD_DATASET_SHA256_HEADER ": must be the body's SHA-256 as 64 hex digits; "
                    "nothing is stored");
    else if (claimed && strcmp(want, sha))
        upload_fail(u, PGN_E_INVALID_PARAMETER, PGD_DATASET_SHA256_HEADER,
                    PGD_DATASET_SHA256_HEADER ": the body received has SHA-256 %s, not %s (changed "
                    "on the way?); nothing is stored", sha, want);
    else if (u->bytes == 0)
        upload_fail(u, PGN_E_DATA, "body", "body: empty; a dataset is the file's bytes");
    if (u->state == UPLOAD_FAILED) return pgd_reply_pgn_error(req, &u->err, NULL, NULL);

    /* The whole file is on disk and closed before it is read back: the checks see what a job
     * will. */
    struct stat st;
    if (fsync(u->fd) < 0 || fstat(u->fd, &st) < 0 || close(u->fd) < 0) {
        u->fd = -1;
        upload_fail(u, PGN_E_IO, "", "cannot write the upload of %s: %s; nothing is stored", u->name,
                    strerror(errno));
        return internal(req, &u->err);
    }
    u->fd = -1;
    pgn_error err;
    pgn_error_clear(&err);
    json_t *info;
    if (inspect(u->tmp, u->name, u->format, &info, &err) < 0) {
        upload_fail(u, PGN_E_DATA, "body", "body: %s; nothing is stored", err.message);
        return pgd_reply_pgn_error(req, &u->err, NULL, NULL);
    }
    bool created;
    if (upload_place(u, create_only(req), &created) < 0) {
        json_decref(info);
        if (u->err.code == PGN_E_IO || u->err.code == PGN_E_STORE || u->err.code == PGN_E_STORE_UNAVAILABLE)
            return internal(req, &u->err);
        return pgd_reply_pgn_error(req, &u->err, NULL, NULL);
    }
    pgd_dataset_meta m = {.bytes = u->bytes, .mtime_ns = mtime_ns(&st), .info = info};
    snprintf(m.name, sizeof m.name, "%s", u->name);
    snprintf(m.sha256, sizeof m.sha256, "%s", sha);
    snprintf(m.format, sizeof m.format, "%s", format_names[u->format]);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    iso_time((int64_t)now.tv_sec * 1000000000LL + now.tv_nsec, m.created_at);
    /* The file is in place whatever the store says: a record that fails to land is computed
     * again at the next listing (without created_at). */
    if (pgd_store_dataset_put(ds->store, &m, &err) < 0)
        fprintf(stderr, "paragond: dataset %s is stored but its record is not: %s\n", u->name,
                err.message);
    json_t *body = meta_json(&m);
    json_decref(info);
    char location[sizeof DATASETS_PATH + PGD_DATASET_NAME_MAX + 2];
    snprintf(location, sizeof location, DATASETS_PATH "/%s", u->name);
    const pgd_header h[] = {{MHD_HTTP_HEADER_LOCATION, location}, {NULL, NULL}};
    return pgd_reply_json(req, created ? MHD_HTTP_CREATED : MHD_HTTP_OK, body, h);
}

/* ---- list, get, delete --------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names of the regular files directly in the directory, not hidden, sorted (malloc'd array
 * of malloc'd names). -1 on failure (errno). */
static int list_names(const pgd_datasets *ds, char ***out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(ds->dir);
    if (!d) return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) {
                rc = -1;
                break;
            }
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name))) rc = -1;
        else n++;
    }
    closedir(d);
    if (rc < 0) {
        for (size_t i = 0; i < n; i++) free(names[i]);
        free(names);
        errno = ENOMEM;
        return -1;
    }
    if (n) qsort(names, n, sizeof *names, cmp_str);
    *out = names;
    *n_out = n;
    return 0;
}

static void free_names(char **names, size_t n) {
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* GET /api/v1/datasets: every file, name order. */
enum MHD_Result pgd_datasets_list(pgd_datasets *ds, const pgd_request *req) {
    char **names;
    size_t n;
    pgn_error err;
    pgn_error_clear(&err);
    if (list_names(ds, &names, &n) < 0) {
        pgn_error_set(&err, PGN_E_IO, "", "cannot list %s: %s", ds->dir, strerror(errno));
        return internal(req, &err);
    }
    json_t *list = json_array();
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char path[PATH_MAX + PGD_DATASET_NAME_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", ds->dir, names[i]);
        struct stat st;
        if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) continue; /* deleted meanwhile */
        pgd_dataset_meta m;
        rc = describe(ds, names[i], &st, &m, &err);
        if (rc == 0) json_array_append_new(list, meta_json(&m));
        else if (lstat(path, &st) < 0) rc = 0; /* deleted while it was read: not there */
        json_decref(m.info);
    }
    free_names(names, n);
    if (rc < 0) {
        json_decref(list);
        return internal(req, &err);
    }
    return pgd_reply_json(req, MHD_HTTP_OK,
                          json_pack("{s:o, s:s, s:I}", "datasets", list, "directory", PGN_DATASETS_SUBDIR,
                                    "max_bytes", (json_int_t)ds->max_bytes),
                          NULL);
}

/* The dataset the path names, stat'ed: 0, or -1 after replying (bad name 400, missing 404). */
static int named(pgd_datasets *ds, const pgd_request *req, const char **name, struct stat *st,
                 enum MHD_Result *reply) {
    *name = path_name(req);
    char why[160];
    const char *problem = *name ? name_problem(*name, false, why, sizeof why) : "is missing";
    if (problem) {
        *reply = bad_name(req, *name ? *name : "", problem);
        return -1;
    }
    char path[PATH_MAX + PGD_DATASET_NAME_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", ds->dir, *name);
    if (lstat(path, st) < 0 || !S_ISREG(st->st_mode)) {
        *reply = pgd_reply_error(req, PGN_E_NOT_FOUND, NULL,
                                 "dataset '%s' does not exist (GET " DATASETS_PATH " lists them; PUT "
                                 DATASETS_PATH "/{name} uploads one)", *name);
        return -1;
    }
    return 0;
}

/* GET /api/v1/datasets/{name}: its metadata (the client has the file; sha256 tells whether its
 * copy is this one). */
enum MHD_Result pgd_datasets_get(pgd_datasets *ds, const pgd_request *req) {
    const char *name;
    struct stat st;
    enum MHD_Result reply;
    if (named(ds, req, &name, &st, &reply) < 0) return reply;
    pgd_dataset_meta m;
    pgn_error err;
    pgn_error_clear(&err);
    int rc = describe(ds, name, &st, &m, &err);
    json_t *body = rc == 0 ? meta_json(&m) : NULL;
    json_decref(m.info);
    if (rc < 0) return internal(req, &err);
    return pgd_reply_json(req, MHD_HTTP_OK, body, NULL);
}

/* DELETE /api/v1/datasets/{name}: 204; 409 while a queued or running job names it. */
enum MHD_Result pgd_datasets_delete(pgd_datasets *ds, const pgd_request *req) {
    const char *name;
    struct stat st;
    enum MHD_Result reply;
    if (named(ds, req, &name, &st, &reply) < 0) return reply;
    pgn_error err;
    pgn_error_clear(&err);
    char path[PATH_MAX + PGD_DATASET_NAME_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", ds->dir, name);
    int64_t job = 0;
    char state[16] = "";
    pgd_datasets_lock(ds);
    int rc = job_using(ds, name, &job, state, &err);
    bool gone = false;
    if (rc == 0 && !job) {
        if (unlink(path) == 0) gone = true;
        else if (errno != ENOENT) {
            pgn_error_set(&err, PGN_E_IO, "", "cannot delete dataset %s: %s", name, strerror(errno));
            rc = -1;
        }
    }
    pgd_datasets_unlock(ds);
    if (rc < 0) return internal(req, &err);
    if (job)
        return pgd_reply_error(req, PGN_E_CONFLICT, NULL,
                               "dataset %s is named by job %" PRId64 " (%s): it cannot be deleted while "
                               "a queued or running job reads it; cancel the job or wait for it to end",
                               name, job, state);
    if (!gone)
        return pgd_reply_error(req, PGN_E_NOT_FOUND, NULL, "dataset '%s' does not exist", name);
    if (pgd_store_dataset_forget(ds->store, name, &err) < 0) /* the file is gone: say it, go on */
        fprintf(stderr, "paragond: dataset %s is deleted but its record is not: %s\n", name, err.message);
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    enum MHD_Result r = pgd_queue_response(req, MHD_HTTP_NO_CONTENT, resp);
    MHD_destroy_response(resp);
    return r;
}

/* ---- specs that name datasets ------------------------------------------------------------- */

/* "a.idx, b.txt (and 3 more)" or a note that there are none, for an error message. */
static void existing(const pgd_datasets *ds, char *out, size_t size) {
    char **names;
    size_t n;
    out[0] = 0;
    if (list_names(ds, &names, &n) < 0 || n == 0) {
        snprintf(out, size, "there are none");
        return;
    }
    snprintf(out, size, "there are: ");
    for (size_t i = 0; i < n && i < NAMES_LISTED; i++)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? ", " : "", names[i]);
    if (n > NAMES_LISTED)
        snprintf(out + strlen(out), size - strlen(out), " (and %zu more)", n - NAMES_LISTED);
    free_names(names, n);
}

int pgd_datasets_check_spec(pgd_datasets *ds, const pgn_job_spec *spec, pgn_error *err) {
    if (spec->kind != PGN_JOB_TRAIN) return 0;
    const pgn_data_spec *d = &spec->train.data;
    const struct {
        const char *field, *path;
    } paths[] = {{"data.train_images", d->train_images}, {"data.train_labels", d->train_labels},
                 {"data.test_images", d->test_images},   {"data.test_labels", d->test_labels},
                 {"data.path", d->path}};
    size_t from = d->source == PGN_DATA_IDX ? 0 : 4, to = d->source == PGN_DATA_IDX ? 4 : 5;
    if (d->source != PGN_DATA_IDX && d->source != PGN_DATA_TEXT) return 0;
    for (size_t i = from; i < to; i++) {
        char path[PATH_MAX + PGN_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", ds->dir, paths[i].path);
        struct stat st;
        if (stat(path, &st) == 0) continue; /* the job's reader judges what is there */
        char there[2048];
        existing(ds, there, sizeof there);
        char *shown = pgn_text_visible(paths[i].path);
        pgn_error_set(err, PGN_E_INVALID_SPEC, paths[i].field,
                      "%s: dataset '%.200s' does not exist in <data-dir>/" PGN_DATASETS_SUBDIR "/ (%s); "
                      "upload it with PUT " DATASETS_PATH "/{name} or `paragon upload FILE`",
                      paths[i].field, shown ? shown : "?", there);
        free(shown);
        return -1;
    }
    return 0;
}
