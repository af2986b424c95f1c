/* inet_io.c: HVM2's IO protocol, as its C runtime (run.c) defines it, on the host net between
 * normalizations. A program that does IO reduces to an IO/Call: a lambda-encoded constructor
 * (t -> t TAG args...) whose first argument is the magic pair (0xD0CA11 0xFF1FF1), then the
 * function's name (a string), its argument and the continuation. The call is performed, its
 * result (Result/Ok or Result/Err, lambda-encoded too) applied to the continuation, the net
 * normalized again, until the root is an IO/Done or anything else. Reading the call walks the net
 * as run.c does (every REF on the way called against the root, every string's tail booted against
 * it), so the interactions counted are HVM2's.
 *
 * Encodings (run.c's): a constructor is lambda t. ((t TAG) a0) a1 ..., its nodes CON(t r) over
 * CON(TAG CON(a0 CON(a1 ... r))); lists: Nil = tag 0, Cons = tag 1 with head and tail, a string
 * being a list of character codes; Result: Ok = tag 0, Err = tag 1, each with its value; the
 * error of a call: IOError/Type (0) and IOError/Name (1) with nothing, IOError/Inner (2) with the
 * call's own error (an errno as i24, or a string); tuples are right-nested CON nodes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "inet/inet_net.h"

#define IO_MAGIC_0 0xD0CA11u
#define IO_MAGIC_1 0xFF1FF1u
enum { IO_DONE = 0, IO_CALL = 1 };
enum { RESULT_OK = 0, RESULT_ERR = 1 };
enum { IO_ERR_TYPE = 0, IO_ERR_NAME = 1, IO_ERR_INNER = 2 };
enum { LIST_NIL = 0, LIST_CONS = 1 };

#define CTR_ARGS 16 /* run.c's limits: arguments of a constructor, elements of a tuple */
#define TUP_ELEMS 8
#define FILES 256 /* file descriptors a program may hold; 0, 1 and 2 are the standard streams */

typedef struct {
    uint32_t tag; /* (uint32_t)-1: not a constructor */
    uint32_t n;
    uint32_t args[CTR_ARGS];
} ctr;

typedef struct {
    uint32_t n;
    uint32_t elems[TUP_ELEMS];
} tup;

typedef struct {
    char *buf;
    size_t len, cap;
} bytes;

typedef struct {
    pgn_inet_net *net;
    const pgn_inet_io *io;
    const pgn_run_hooks *hooks;
    pgn_error *err;
    bool failed; /* a normalization inside a readback failed: err says why */
    FILE *files[FILES];
    int dir; /* the confined directory (io->dir), or -1 */
    pgn_inet_result *res;
    pgn_text output;      /* stdout and stderr kept, when not the process's */
    pgn_text line[2];     /* each stream's line so far, for the log */
    uint32_t *copies;     /* the call and what expand made of REFs reading it: dropped after it */
    size_t n_copies, cap_copies;
} io_state;

/* ---- reading the net --------------------------------------------------------------------------- */

static uint32_t u24(uint32_t v) { return pgn_inet_port(PGN_INET_NUM, pgn_inet_u24(v)); }
static uint32_t i24(int32_t v) { return pgn_inet_port(PGN_INET_NUM, pgn_inet_i24(v)); }
static uint32_t con(uint32_t node) { return pgn_inet_port(PGN_INET_CON, node); }
static uint32_t era(void) { return pgn_inet_port(PGN_INET_ERA, 0); }

static void normalize(io_state *s) {
    if (!s->failed && pgn_inet_net_normalize(s->net, s->hooks, s->err)) s->failed = true;
}

/* Notes a node port for drop_call (without memory it is kept: a leak, no harm). */
static void to_drop(io_state *s, uint32_t port) {
    if (!pgn_inet_is_node(port)) return;
    if (s->n_copies == s->cap_copies) {
        size_t cap = s->cap_copies ? 2 * s->cap_copies : 16;
        uint32_t *grown = realloc(s->copies, cap * sizeof *grown);
        if (!grown) return;
        s->copies = grown, s->cap_copies = cap;
    }
    s->copies[s->n_copies++] = port;
}

/* run.c's expand: what port leads to, a REF on the way called against the root and normalized
 * (the root's own link kept). */
static uint32_t expand(io_state *s, uint32_t port) {
    pgn_inet_net *n = s->net;
    uint32_t old = pgn_inet_net_root_get(n), got = pgn_inet_net_peek(n, port);
    bool copied = false;
    while (pgn_inet_tag(got) == PGN_INET_REF && !s->failed) {
        pgn_inet_net_boot(n, got, pgn_inet_net_root(n));
        normalize(s);
        got = pgn_inet_net_peek(n, pgn_inet_net_root_get(n));
        copied = true;
    }
    pgn_inet_net_root_set(n, old);
    if (copied) to_drop(s, got); /* a copy nothing points at */
    return got;
}

/* Frees what reading and performing a call left behind: the call itself (at the root) and the
 * copies its reads expanded, all but the continuation, which the program goes on with. HVM2's
 * run.c keeps them: a loop of calls grew by about 40 nodes a call. */
static void drop_call(io_state *s, uint32_t call, uint32_t continuation) {
    to_drop(s, call);
    size_t kept = 0; /* the continuation may be a copy itself (a REF written there) */
    for (size_t i = 0; i < s->n_copies; i++)
        if (s->copies[i] != continuation) s->copies[kept++] = s->copies[i];
    pgn_inet_net_drop(s->net, s->copies, kept, continuation);
    s->n_copies = 0;
}

static uint32_t fst_of(io_state *s, uint32_t p) { return pgn_inet_fst(pgn_inet_net_load(s->net, pgn_inet_val(p))); }
static uint32_t snd_of(io_state *s, uint32_t p) { return pgn_inet_snd(pgn_inet_net_load(s->net, pgn_inet_val(p))); }

static ctr readback_ctr(io_state *s, uint32_t port) {
    ctr c = {.tag = (uint32_t)-1};
    uint32_t lam = expand(s, port);
    if (pgn_inet_tag(lam) != PGN_INET_CON) return c;
    uint32_t app = expand(s, fst_of(s, lam));
    if (pgn_inet_tag(app) != PGN_INET_CON) return c;
    uint32_t arg = expand(s, fst_of(s, app));
    if (pgn_inet_tag(arg) != PGN_INET_NUM) return c;
    c.tag = pgn_inet_get_u24(pgn_inet_val(arg));
    for (;;) {
        app = expand(s, snd_of(s, app));
        if (pgn_inet_tag(app) != PGN_INET_CON || c.n == CTR_ARGS) break;
        c.args[c.n++] = expand(s, fst_of(s, app));
    }
    return c;
}

/* A tuple of at most size elements from an expanded port. */
static tup readback_tup(io_state *s, uint32_t port, uint32_t size) {
    tup t = {0};
    while (pgn_inet_tag(port) == PGN_INET_CON && t.n + 1 < size) {
        t.elems[t.n++] = expand(s, fst_of(s, port));
        port = expand(s, snd_of(s, port));
    }
    t.elems[t.n++] = port;
    return t;
}

static bool bytes_put(bytes *b, char c) {
    if (b->len + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        char *p = realloc(b->buf, cap);
        if (!p) return false;
        b->buf = p;
        b->cap = cap;
    }
    b->buf[b->len++] = c;
    b->buf[b->len] = '\0';
    return true;
}

/* A list of character codes, each cut to a byte as run.c cuts them; its tail booted against the
 * root at each step. NUL-terminated. */
static bytes readback_bytes(io_state *s, uint32_t port) {
    bytes b = {0};
    bytes_put(&b, 0); /* an empty string is still a string */
    b.len = 0;
    while (!s->failed) {
        normalize(s);
        ctr c = readback_ctr(s, pgn_inet_net_peek(s->net, port));
        if (c.tag != LIST_CONS || c.n != 2 || pgn_inet_tag(c.args[0]) != PGN_INET_NUM) break;
        if (!bytes_put(&b, (char)pgn_inet_get_u24(pgn_inet_val(c.args[0])))) {
            pgn_error_set(s->err, PGN_E_OUT_OF_MEMORY, "", "out of memory reading a string of the program's IO");
            s->failed = true;
            break;
        }
        pgn_inet_net_boot(s->net, c.args[1], pgn_inet_net_root(s->net));
        port = pgn_inet_net_root(s->net);
    }
    return b;
}

/* ---- making values ------------------------------------------------------------------------------ */

/* lambda t. (t TAG): NIL, IOError/Type, IOError/Name */
static uint32_t make_ctr0(io_state *s, uint32_t tag) {
    pgn_inet_net *n = s->net;
    uint32_t v = pgn_inet_net_var(n);
    uint32_t n1 = pgn_inet_net_node(n, u24(tag), v);
    return con(pgn_inet_net_node(n, con(n1), v));
}

/* lambda t. ((t TAG) val): Result/Ok, Result/Err, IOError/Inner */
static uint32_t make_ctr1(io_state *s, uint32_t tag, uint32_t val) {
    pgn_inet_net *n = s->net;
    uint32_t v = pgn_inet_net_var(n);
    uint32_t n1 = pgn_inet_net_node(n, val, v);
    uint32_t n2 = pgn_inet_net_node(n, u24(tag), con(n1));
    return con(pgn_inet_net_node(n, con(n2), v));
}

/* lambda t. (((t CONS) head) tail) */
static uint32_t make_cons(io_state *s, uint32_t head, uint32_t tail) {
    pgn_inet_net *n = s->net;
    uint32_t v = pgn_inet_net_var(n);
    uint32_t n1 = pgn_inet_net_node(n, tail, v);
    uint32_t n2 = pgn_inet_net_node(n, head, con(n1));
    uint32_t n3 = pgn_inet_net_node(n, u24(LIST_CONS), con(n2));
    return con(pgn_inet_net_node(n, con(n3), v));
}

/* A list of bytes; each byte as run.c makes it, a signed char widened into a u24. */
static uint32_t make_bytes(io_state *s, const char *buf, size_t len) {
    uint32_t port = make_ctr0(s, LIST_NIL);
    for (size_t i = len; i-- > 0;) port = make_cons(s, u24((uint32_t)(int32_t)(signed char)buf[i]), port);
    return port;
}

static uint32_t ok(io_state *s, uint32_t val) { return make_ctr1(s, RESULT_OK, val); }
static uint32_t err_type(io_state *s) { return make_ctr1(s, RESULT_ERR, make_ctr0(s, IO_ERR_TYPE)); }
static uint32_t err_name(io_state *s) { return make_ctr1(s, RESULT_ERR, make_ctr0(s, IO_ERR_NAME)); }
static uint32_t err_inner(io_state *s, uint32_t val) {
    return make_ctr1(s, RESULT_ERR, make_ctr1(s, IO_ERR_INNER, val));
}
static uint32_t err_errno(io_state *s, int e) { return err_inner(s, i24(e)); }
static uint32_t err_text(io_state *s, const char *text) { return err_inner(s, make_bytes(s, text, strlen(text))); }

/* ---- the streams and files --------------------------------------------------------------------- */

/* A whole line the program wrote to stream (1 stdout, 2 stderr) into the log, its control
 * characters escaped. */
static void log_line(io_state *s, int stream) {
    char *text = pgn_text_take(&s->line[stream - 1]);
    if (text && s->hooks && s->hooks->on_log) {
        pgn_text l = {0};
        pgn_text_printf(&l, "%s: ", stream == 1 ? "stdout" : "stderr");
        pgn_text_put_visible(&l, text);
        char *shown = pgn_text_take(&l);
        if (shown) s->hooks->on_log(s->hooks->ctx, shown);
        free(shown);
    }
    free(text);
}

/* Keeps what the program writes to its stdout (1) or stderr (2) when the run keeps it: in the
 * output (at most output_max bytes; the rest counted) and, line by line, in the log (a line's
 * first 4096 bytes). */
static void keep(io_state *s, int stream, const char *buf, size_t len) {
    size_t room = s->io->output_max > s->output.len ? s->io->output_max - s->output.len : 0;
    size_t take = len < room ? len : room;
    pgn_text_put(&s->output, buf, take);
    s->res->output_dropped += len - take;
    pgn_text *line = &s->line[stream - 1];
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n') log_line(s, stream);
        else if (line->len < 4096) pgn_text_put(line, buf + i, 1);
    }
}

/* A file descriptor's FILE: 0, 1, 2 the process's streams when the run uses them; else an opened
 * file. NULL for anything else (and for 0-2 when the run keeps its streams: they are not files). */
static FILE *file_of(io_state *s, uint32_t port) {
    if (pgn_inet_tag(port) != PGN_INET_NUM) return NULL;
    uint32_t fd = pgn_inet_get_u24(pgn_inet_val(port));
    if (fd >= FILES) return NULL;
    if (fd <= 2 && s->io->process_streams) return fd == 0 ? stdin : fd == 1 ? stdout : stderr;
    return fd > 2 ? s->files[fd] : NULL;
}

/* A virtual stream of a run that keeps them: 0 (stdin, empty), 1 or 2; else -1. */
static int kept_stream(io_state *s, uint32_t port) {
    if (s->io->process_streams || pgn_inet_tag(port) != PGN_INET_NUM) return -1;
    uint32_t fd = pgn_inet_get_u24(pgn_inet_val(port));
    return fd <= 2 ? (int)fd : -1;
}

/* fopen's mode string as open(2) flags; -1 for a mode fopen would refuse. */
static int mode_flags(const char *mode) {
    int acc, flags;
    switch (mode[0]) {
    case 'r': acc = O_RDONLY, flags = 0; break;
    case 'w': acc = O_WRONLY, flags = O_CREAT | O_TRUNC; break;
    case 'a': acc = O_WRONLY, flags = O_CREAT | O_APPEND; break;
    default: return -1;
    }
    for (const char *m = mode + 1; *m; m++) {
        if (*m == '+') acc = O_RDWR;
        else if (*m == 'x') flags |= O_EXCL;
        else if (*m != 'b' && *m != 'e') return -1;
    }
    return acc | flags | O_CLOEXEC;
}

/* path opened inside dir, a component at a time: an absolute path, ".." or a symbolic link
 * anywhere on the way is refused (EACCES; a link: ELOOP or ENOTDIR), so nothing outside dir is
 * reached. Returns the descriptor, or -1 with errno. */
static int open_beneath(int dir, const char *path, int flags) {
    if (!*path || path[0] == '/') {
        errno = EACCES;
        return -1;
    }
    int at = dir, fd = -1;
    for (const char *p = path;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        char comp[256];
        if (len >= sizeof comp) {
            errno = ENAMETOOLONG;
            break;
        }
        memcpy(comp, p, len);
        comp[len] = '\0';
        if (!strcmp(comp, "..")) {
            errno = EACCES;
            break;
        }
        if (!slash) { /* the file itself */
            fd = len && strcmp(comp, ".") ? openat(at, comp, flags | O_NOFOLLOW, 0644) : (errno = EISDIR, -1);
            break;
        }
        if (len && strcmp(comp, ".")) { /* a directory on the way */
            int sub = openat(at, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (at != dir) close(at);
            at = sub;
            if (at < 0) break;
        }
        p = slash + 1;
    }
    int saved = errno;
    if (at != dir && at >= 0) close(at);
    errno = saved;
    return fd;
}

/* ---- the calls ------------------------------------------------------------------------------- */

static uint32_t io_read(io_state *s, uint32_t argm) {
    tup t = readback_tup(s, argm, 2);
    if (t.n != 2) return err_type(s);
    uint32_t want = pgn_inet_get_u24(pgn_inet_val(t.elems[1]));
    if (kept_stream(s, t.elems[0]) == 0) return ok(s, make_bytes(s, "", 0)); /* stdin: empty */
    FILE *fp = file_of(s, t.elems[0]);
    if (!fp) return err_errno(s, EBADF);
    char *buf = malloc(want ? want : 1);
    if (!buf) return err_errno(s, ENOMEM);
    size_t got = fread(buf, 1, want, fp);
    uint32_t r = got != want && ferror(fp) ? err_errno(s, ferror(fp)) : ok(s, make_bytes(s, buf, got));
    free(buf);
    return r;
}

/* The confined directory, opened (and made, when missing) at the first OPEN: a program that
 * opens no file leaves no directory behind. -1 with errno when it cannot be. */
static int program_dir(io_state *s) {
    if (s->dir >= 0) return s->dir;
    if (mkdir(s->io->dir, 0755) && errno != EEXIST) return -1;
    s->dir = open(s->io->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return s->dir;
}

static uint32_t io_open(io_state *s, uint32_t argm) {
    tup t = readback_tup(s, argm, 2);
    if (t.n != 2) return err_type(s);
    bytes name = readback_bytes(s, t.elems[0]), mode = readback_bytes(s, t.elems[1]);
    uint32_t fd = 3;
    while (fd < FILES && s->files[fd]) fd++;
    uint32_t r;
    if (fd == FILES) {
        r = err_errno(s, EMFILE);
    } else if (!s->io->dir) {
        s->files[fd] = fopen(name.buf ? name.buf : "", mode.buf ? mode.buf : "");
        r = s->files[fd] ? ok(s, u24(fd)) : err_errno(s, errno);
    } else if (program_dir(s) < 0) {
        r = err_errno(s, errno);
    } else {
        int flags = mode_flags(mode.buf ? mode.buf : "");
        int raw = flags < 0 ? (errno = EINVAL, -1) : open_beneath(s->dir, name.buf ? name.buf : "", flags);
        s->files[fd] = raw >= 0 ? fdopen(raw, mode.buf) : NULL;
        if (raw >= 0 && !s->files[fd]) close(raw);
        r = s->files[fd] ? ok(s, u24(fd)) : err_errno(s, errno);
    }
    free(name.buf);
    free(mode.buf);
    return r;
}

static uint32_t io_close(io_state *s, uint32_t argm) {
    if (kept_stream(s, argm) >= 0) return ok(s, era());
    FILE *fp = file_of(s, argm);
    if (!fp) return err_errno(s, EBADF);
    uint32_t fd = pgn_inet_get_u24(pgn_inet_val(argm));
    int rc = fclose(fp);
    if (fd > 2) s->files[fd] = NULL;
    return rc ? err_errno(s, errno) : ok(s, era());
}

static uint32_t io_write(io_state *s, uint32_t argm) {
    tup t = readback_tup(s, argm, 2);
    if (t.n != 2) return err_type(s);
    bytes b = readback_bytes(s, t.elems[1]);
    int kept = kept_stream(s, t.elems[0]);
    FILE *fp = kept < 0 ? file_of(s, t.elems[0]) : NULL;
    uint32_t r;
    if (kept == 1 || kept == 2) {
        keep(s, kept, b.buf ? b.buf : "", b.len);
        r = ok(s, era());
    } else if (!fp) {
        r = err_errno(s, EBADF);
    } else {
        r = fwrite(b.buf ? b.buf : "", 1, b.len, fp) != b.len ? err_errno(s, ferror(fp)) : ok(s, era());
    }
    free(b.buf);
    return r;
}

static uint32_t io_flush(io_state *s, uint32_t argm) {
    if (kept_stream(s, argm) >= 0) return ok(s, era());
    FILE *fp = file_of(s, argm);
    if (!fp) return err_errno(s, EBADF);
    return fflush(fp) ? err_errno(s, errno) : ok(s, era());
}

static uint32_t io_seek(io_state *s, uint32_t argm) {
    tup t = readback_tup(s, argm, 3);
    if (t.n != 3) return err_type(s);
    FILE *fp = file_of(s, t.elems[0]);
    int32_t offset = pgn_inet_get_i24(pgn_inet_val(t.elems[1]));
    int32_t whence = pgn_inet_get_i24(pgn_inet_val(t.elems[2]));
    if (!fp) return err_errno(s, EBADF);
    if (whence < 0 || whence > 2) return err_type(s);
    int c = whence == 0 ? SEEK_SET : whence == 1 ? SEEK_CUR : SEEK_END;
    return fseek(fp, offset, c) ? err_errno(s, errno) : ok(s, era());
}

/* Ok((hi lo)): the time in nanoseconds, bits 24 and up, and the low 24 (each a u24). */
static uint32_t io_get_time(io_state *s, uint32_t argm) {
    (void)argm;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return ok(s, con(pgn_inet_net_node(s->net, u24((uint32_t)(ns >> 24)), u24((uint32_t)ns))));
}

/* A SLEEP sleeps in slices this long, asking between them whether the run must stop (a cancel,
 * paragond's shutdown): one nanosleep of the whole made a 10-minute SLEEP deaf to both. */
#define SLEEP_SLICE_NS 20000000ull

/* Sleeps (hi lo) nanoseconds (hi the bits from 24 up), no longer than the run's timeout has left:
 * a sleep past it ends the run with timeout_s; a stop asked meanwhile ends it cancelled. */
static uint32_t io_sleep(io_state *s, uint32_t argm) {
    tup t = readback_tup(s, argm, 2);
    if (t.n != 2) return err_type(s);
    uint64_t ns = ((uint64_t)pgn_inet_get_u24(pgn_inet_val(t.elems[0])) << 24) |
                  pgn_inet_get_u24(pgn_inet_val(t.elems[1]));
    double left = pgn_inet_net_time_left(s->net);
    bool past = left >= 0 && (double)ns * 1e-9 > left;
    if (past) ns = left > 0 ? (uint64_t)(left * 1e9) : 0;
    int64_t until = pgn_now_ns() + (int64_t)ns;
    for (int64_t now = pgn_now_ns(); now < until; now = pgn_now_ns()) {
        if (s->hooks && s->hooks->should_stop && s->hooks->should_stop(s->hooks->ctx)) {
            if (!s->failed)
                pgn_error_set(s->err, PGN_E_CANCELLED, "", "cancelled during a SLEEP (after %llu interactions)",
                              (unsigned long long)pgn_inet_net_interactions(s->net));
            s->failed = true;
            return ok(s, era());
        }
        uint64_t slice = (uint64_t)(until - now) < SLEEP_SLICE_NS ? (uint64_t)(until - now) : SLEEP_SLICE_NS;
        struct timespec ts = {.tv_sec = (time_t)(slice / 1000000000u), .tv_nsec = (long)(slice % 1000000000u)};
        nanosleep(&ts, NULL); /* an EINTR only wakes it early: the loop sleeps the rest */
    }
    if (past && !s->failed) {
        pgn_inet_fail_limit(s->err, "timeout_s", "a SLEEP past the timeout (after %llu interactions)",
                            (unsigned long long)pgn_inet_net_interactions(s->net));
        s->failed = true;
    }
    return ok(s, era());
}

static uint32_t io_dl(io_state *s, uint32_t argm) {
    (void)argm;
    return err_text(s, "dynamic libraries are not supported by paragon");
}

static const struct {
    const char *name;
    uint32_t (*call)(io_state *, uint32_t);
} CALLS[] = {
    {"READ", io_read},         {"OPEN", io_open},   {"CLOSE", io_close}, {"FLUSH", io_flush},
    {"WRITE", io_write},       {"SEEK", io_seek},   {"GET_TIME", io_get_time},
    {"SLEEP", io_sleep},       {"DL_OPEN", io_dl},  {"DL_CALL", io_dl},  {"DL_CLOSE", io_dl},
};

/* ---- the loop ---------------------------------------------------------------------------------- */

int pgn_inet_io_run(pgn_inet_net *n, const pgn_inet_io *io, const pgn_run_hooks *hooks, pgn_inet_result *res,
                    pgn_error *err) {
    io_state s = {.net = n, .io = io, .hooks = hooks, .err = err, .dir = -1, .res = res};
    uint32_t port = pgn_inet_net_root(n);
    while (!s.failed) {
        normalize(&s);
        s.n_copies = 0; /* the end state's reads are the readback's, not a call's */
        uint32_t call = pgn_inet_net_peek(n, port);
        ctr c = readback_ctr(&s, call);
        if (s.failed || c.n < 1 || pgn_inet_tag(c.args[0]) != PGN_INET_CON) break;
        uint64_t magic = pgn_inet_net_load(n, pgn_inet_val(c.args[0]));
        if (pgn_inet_val(pgn_inet_fst(magic)) != pgn_inet_u24(IO_MAGIC_0) ||
            pgn_inet_val(pgn_inet_snd(magic)) != pgn_inet_u24(IO_MAGIC_1) || c.tag != IO_CALL)
            break; /* IO/Done, or not IO at all: the normal form stands */
        if (c.n != 4) {
            pgn_error_set(err, PGN_E_INVALID_PROGRAM, "", "an IO/Call with %u arguments (it takes 4: the magic "
                          "number, the function's name, its argument and the continuation)", c.n);
            s.failed = true;
            break;
        }
        bytes name = readback_bytes(&s, c.args[1]);
        uint32_t ret = 0;
        bool found = false;
        for (size_t i = 0; i < sizeof CALLS / sizeof *CALLS && !s.failed; i++)
            if (name.buf && !strcmp(name.buf, CALLS[i].name)) {
                ret = CALLS[i].call(&s, c.args[2]);
                found = true;
                break;
            }
        free(name.buf);
        if (s.failed) break;
        if (!found) ret = err_name(&s);
        res->io_calls++;
        drop_call(&s, call, c.args[3]);
        /* (ret ROOT) ~ continuation: the program goes on with the result */
        uint32_t app = pgn_inet_net_node(n, ret, pgn_inet_net_root(n));
        pgn_inet_net_boot(n, con(app), c.args[3]);
        port = pgn_inet_net_root(n);
    }
    free(s.copies);
    for (int fd = 3; fd < FILES; fd++)
        if (s.files[fd]) fclose(s.files[fd]);
    if (s.dir >= 0) close(s.dir);
    for (int i = 0; i < 2; i++) { /* a last line without its newline */
        if (s.line[i].len) log_line(&s, i + 1);
        free(pgn_text_take(&s.line[i]));
    }
    if (!io->process_streams) {
        res->output_len = s.output.len;
        res->output = pgn_text_take(&s.output);
    }
    if (io->process_streams) {
        fflush(stdout);
        fflush(stderr);
    }
    return s.failed ? -1 : 0;
}
