/* idx.c: reads idx files (MNIST's format: a big-endian header, then unsigned bytes), plain or
 * gzip-compressed through zlib. Every malformed input becomes an error that names the file; the
 * header's numbers are checked against sane limits and the file's size before any allocation.
 * Errors quote no bytes of a file before its magic has matched: past it, the numbers they give
 * are the sizes an idx file declares, never text from a file that is not one. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tensor/idx.h"

#define IDX_MAGIC_IMAGES 0x00000803u /* element type 0x08 (unsigned byte), 3 dimensions */
#define IDX_MAGIC_LABELS 0x00000801u /* element type 0x08 (unsigned byte), 1 dimension */
#define IDX_IMAGES_HEADER 16         /* magic, count, rows, cols */
#define IDX_LABELS_HEADER 8          /* magic, count */
#define IDX_MAX_HEADER IDX_IMAGES_HEADER
#define IDX_PIXEL_MAX 255.0f
/* Bytes read or inflated per call: large enough that zlib inflates straight into our buffer. */
#define IDX_CHUNK (1u << 20)
/* The compressed input read per read() of a gzip file. */
#define IDX_GZ_BUFFER (1u << 17)
/* Deflate expands at most about 1032:1, so a .gz of S bytes cannot hold more than S times this:
 * a header that claims more is a truncated (or lying) file, found without allocating for it. */
#define IDX_DEFLATE_MAX_RATIO 1100u

typedef struct {
    const char *path;
    const char *field; /* spec field to blame, or "" */
    int fd;
    bool gzip;         /* the file begins with gzip's magic: read through inflate */
    z_stream z;        /* gzip: the member being inflated */
    unsigned char *in; /* gzip: input read from fd, IDX_GZ_BUFFER bytes */
    bool in_eof;       /* gzip: fd has no more bytes */
    bool ended;        /* gzip: the last member ended where the file does */
    bool cut;          /* gzip: the file ended inside a member */
    unsigned long long file_bytes;
    pgn_error *err;
} idx_file;

static int idx_fail(const idx_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int idx_fail(const idx_file *f, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (f->field[0])
        pgn_error_set(f->err, PGN_E_DATA, f->field, "%s: %s: %s", f->field, f->path, msg);
    else
        pgn_error_set(f->err, PGN_E_DATA, "", "%s: %s", f->path, msg);
    return -1;
}

static void idx_close(idx_file *f) {
    if (f->gzip) inflateEnd(&f->z);
    free(f->in);
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
}

/* Refills the input buffer from fd: bytes added, 0 at the end, -1 (reported) on an error. */
static int idx_fill(idx_file *f) {
    if (f->in_eof) return 0;
    ssize_t n;
    do n = read(f->fd, f->in, IDX_GZ_BUFFER);
    while (n < 0 && errno == EINTR);
    if (n < 0) return idx_fail(f, "read error: %s", strerror(errno));
    if (n == 0) f->in_eof = true;
    f->z.next_in = f->in, f->z.avail_in = (uInt)n;
    return n > 0;
}

/* Opens the file: plain, or gzip (one member or several, as gzip(1) writes and reads them), told
 * by its first two bytes. zlib's own gz* reader is not used: past the last member it takes any
 * bytes that are no member as the end of the file, and says nothing. */
static int idx_open(idx_file *f) {
    f->fd = -1;
    /* O_NONBLOCK: opening a FIFO must not hang a job; regular files ignore the flag. */
    int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return idx_fail(f, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return idx_fail(f, "cannot stat: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return idx_fail(f, "not a regular file");
    }
    f->fd = fd;
    f->file_bytes = (unsigned long long)st.st_size;
    unsigned char magic[2];
    f->gzip = pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (!f->gzip) return 0;
    f->in = malloc(IDX_GZ_BUFFER);
    if (!f->in || inflateInit2(&f->z, 15 + 16) != Z_OK) {
        f->gzip = false; /* nothing for inflateEnd */
        idx_close(f);
        return idx_fail(f, "cannot allocate zlib's state");
    }
    return 0;
}

/* At a member's end: another member follows, the file ends (f->ended), or something else does
 * (an error naming how many bytes). 0, or -1 reported. */
static int idx_member_end(idx_file *f) {
    if (f->z.avail_in < 2 && !f->in_eof) { /* the next member's magic may straddle the buffer */
        unsigned char keep = f->z.avail_in ? f->z.next_in[0] : 0;
        uInt had = f->z.avail_in;
        if (had) f->in[0] = keep;
        ssize_t n;
        do n = read(f->fd, f->in + had, IDX_GZ_BUFFER - had);
        while (n < 0 && errno == EINTR);
        if (n < 0) return idx_fail(f, "read error: %s", strerror(errno));
        if (n == 0) f->in_eof = true;
        f->z.next_in = f->in, f->z.avail_in = had + (uInt)n;
    }
    if (f->z.avail_in == 0 && f->in_eof) {
        f->ended = true;
        return 0;
    }
    if (f->z.avail_in >= 2 && f->z.next_in[0] == 0x1f && f->z.next_in[1] == 0x8b) {
        inflateReset(&f->z);
        return 0;
    }
    off_t at = lseek(f->fd, 0, SEEK_CUR);
    unsigned long long left = at < 0 ? f->z.avail_in : f->file_bytes - ((unsigned long long)at - f->z.avail_in);
    return idx_fail(f, "%llu bytes after the end of its gzip data: a gzip file holds gzip members and "
                    "nothing else", left);
}

/* Reads up to len bytes; fewer means the file ended. -1 (reported) on a read or gzip error. */
static long long idx_read(idx_file *f, void *buf, size_t len) {
    size_t got = 0;
    if (!f->gzip) {
        while (got < len) {
            ssize_t n = read(f->fd, (unsigned char *)buf + got, len - got > IDX_CHUNK ? IDX_CHUNK : len - got);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return idx_fail(f, "read error: %s", strerror(errno));
            if (n == 0) break;
            got += (size_t)n;
        }
        return (long long)got;
    }
    while (got < len && !f->ended && !f->cut) {
        if (f->z.avail_in == 0) {
            int r = idx_fill(f);
            if (r < 0) return -1;
            if (r == 0) { /* the input ended inside a member */
                f->cut = true;
                break;
            }
        }
        size_t want = len - got > IDX_CHUNK ? IDX_CHUNK : len - got;
        f->z.next_out = (unsigned char *)buf + got, f->z.avail_out = (uInt)want;
        int r = inflate(&f->z, Z_NO_FLUSH);
        got += want - f->z.avail_out;
        if (r == Z_STREAM_END) {
            if (idx_member_end(f)) return -1;
        } else if (r != Z_OK && r != Z_BUF_ERROR) {
            return idx_fail(f, "corrupt gzip data: %s", f->z.msg ? f->z.msg : "inflate failed");
        }
    }
    return (long long)got;
}

/* Why a read came up short, for the truncation message. */
static const char *idx_short_reason(idx_file *f) {
    return f->cut ? " (the gzip stream ends early)" : "";
}

/* Decodes the rest of the file to count its bytes (bounded: deflate's ratio caps it). */
static long long idx_count_rest(idx_file *f) {
    unsigned char *buf = malloc(IDX_CHUNK);
    if (!buf) return idx_fail(f, "cannot allocate %u bytes", IDX_CHUNK);
    long long total = 0, got;
    while ((got = idx_read(f, buf, IDX_CHUNK)) > 0) total += got;
    free(buf);
    return got < 0 ? -1 : total;
}

static int idx_truncated(idx_file *f, const char *what, int header, unsigned long long expected,
                         unsigned long long got) {
    return idx_fail(f, "truncated %s: expected %llu bytes after the %d-byte header, got %llu%s",
                    what, expected, header, got, idx_short_reason(f));
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads the magic and ndims big-endian dimensions. */
static int idx_header(idx_file *f, uint32_t magic, uint32_t *dims, int ndims) {
    unsigned char h[IDX_MAX_HEADER];
    size_t len = 4 + 4 * (size_t)ndims;
    long long got = idx_read(f, h, len);
    if (got < 0) return -1;
    if (got < 4)
        return idx_fail(f, "truncated header: expected %zu bytes, got %lld%s", len, got,
                        idx_short_reason(f));
    /* The first bytes of a file that is not ours to read (a path pointed at a secret) must not
     * reach an error message: only whether they are one of the two known magics is said. */
    uint32_t found = be32(h);
    if (found != magic) {
        const char *hint = found == IDX_MAGIC_LABELS   ? "; it has the label magic 0x00000801"
                           : found == IDX_MAGIC_IMAGES ? "; it has the image magic 0x00000803"
                                                       : "";
        return idx_fail(f, "not an idx %s file: it does not begin with the magic 0x%08x "
                        "(unsigned-byte %s)%s", magic == IDX_MAGIC_IMAGES ? "image" : "label",
                        magic, magic == IDX_MAGIC_IMAGES ? "images [n][rows][cols]" : "labels [n]",
                        hint);
    }
    if ((size_t)got < len)
        return idx_fail(f, "truncated header: expected %zu bytes, got %lld%s", len, got,
                        idx_short_reason(f));
    for (int i = 0; i < ndims; i++) dims[i] = be32(h + 4 + 4 * i);
    return 0;
}

/* Before allocating for the payload the header declares: can the file hold it? A plain file's
 * size says exactly; a gzip file's size bounds what it can expand to. */
static int idx_payload_fits(idx_file *f, const char *what, int header, unsigned long long expected) {
    if (!f->gzip) {
        unsigned long long have = f->file_bytes - (unsigned long long)header;
        if (have < expected) return idx_truncated(f, what, header, expected, have);
        if (have > expected)
            return idx_fail(f, "%llu bytes of %s after the %d-byte header, but the header declares "
                            "%llu", have, what, header, expected);
        return 0;
    }
    if (expected / IDX_DEFLATE_MAX_RATIO <= f->file_bytes) return 0;
    long long got = idx_count_rest(f);
    if (got < 0) return -1;
    return idx_truncated(f, what, header, expected, (unsigned long long)got);
}

/* After the payload: anything left means the header's counts are wrong (and reading to the end
 * finds anything after a gzip file's members). */
static int idx_check_end(idx_file *f, const char *what, int header, unsigned long long expected) {
    long long extra = idx_count_rest(f);
    if (extra < 0) return -1;
    if (extra > 0)
        return idx_fail(f, "%llu bytes of %s after the %d-byte header, but the header declares "
                        "%llu", expected + (unsigned long long)extra, what, header, expected);
    return 0;
}

/* The header's dimensions against the reader's limits, for images (d: n, rows, cols) or labels
 * (d: n, 1, 1), and the payload they declare against the file's size: *values is that payload
 * in bytes. Shared by the readers and pgn_idx_inspect, so an upload is refused for exactly what
 * a train job would refuse. */
static int idx_check_dims(idx_file *f, bool images, const uint32_t d[3], unsigned long long *values) {
    const char *what = images ? "images" : "labels";
    if (d[0] == 0) return idx_fail(f, "has no %s (the header's count is 0)", what);
    if (d[0] > PGN_IDX_MAX_ITEMS)
        return idx_fail(f, "declares %u %s, more than the %d allowed", d[0], what, PGN_IDX_MAX_ITEMS);
    if (images && (d[1] == 0 || d[2] == 0 || d[1] > PGN_IDX_MAX_DIM || d[2] > PGN_IDX_MAX_DIM))
        return idx_fail(f, "declares images of %ux%u pixels (rows and cols must be 1..%d)", d[1], d[2],
                        PGN_IDX_MAX_DIM);
    *values = (unsigned long long)d[0] * d[1] * d[2];
    if (*values > (unsigned long long)PGN_IDX_MAX_VALUES)
        return idx_fail(f, "declares %u images of %ux%u pixels: %llu pixels, more than the %lld allowed",
                        d[0], d[1], d[2], *values, (long long)PGN_IDX_MAX_VALUES);
    return idx_payload_fits(f, what, images ? IDX_IMAGES_HEADER : IDX_LABELS_HEADER, *values);
}

int pgn_idx_read_images(const char *path, const char *field, float **x, int *n, int *rows,
                        int *cols, pgn_error *err) {
    *x = NULL;
    *n = *rows = *cols = 0;
    idx_file f = {.path = path, .field = field ? field : "", .err = err};
    if (idx_open(&f)) return -1;
    int rc = -1;
    float *out = NULL;
    unsigned char *chunk = NULL;
    uint32_t d[3];
    unsigned long long values;
    if (idx_header(&f, IDX_MAGIC_IMAGES, d, 3) || idx_check_dims(&f, true, d, &values)) goto done;
    out = malloc((size_t)values * sizeof *out);
    chunk = malloc(IDX_CHUNK);
    if (!out || !chunk) {
        idx_fail(&f, "cannot allocate %llu bytes for the images", values * sizeof *out);
        goto done;
    }
    /* A table gives exactly x / 255.0f, without a division per pixel. */
    float scale[256];
    for (int i = 0; i < 256; i++) scale[i] = (float)i / IDX_PIXEL_MAX;
    for (unsigned long long pos = 0; pos < values;) {
        size_t want = values - pos < IDX_CHUNK ? (size_t)(values - pos) : IDX_CHUNK;
        long long got = idx_read(&f, chunk, want);
        if (got < 0) goto done;
        float *dst = out + pos;
        for (long long i = 0; i < got; i++) dst[i] = scale[chunk[i]];
        pos += (unsigned long long)got;
        if ((size_t)got < want) {
            idx_truncated(&f, "images", IDX_IMAGES_HEADER, values, pos);
            goto done;
        }
    }
    if (idx_check_end(&f, "images", IDX_IMAGES_HEADER, values)) goto done;
    *x = out;
    out = NULL;
    *n = (int)d[0];
    *rows = (int)d[1];
    *cols = (int)d[2];
    rc = 0;
done:
    free(out);
    free(chunk);
    idx_close(&f);
    return rc;
}

int pgn_idx_read_labels(const char *path, const char *field, int32_t **y, int *n, int *max_label,
                        pgn_error *err) {
    *y = NULL;
    *n = *max_label = 0;
    idx_file f = {.path = path, .field = field ? field : "", .err = err};
    if (idx_open(&f)) return -1;
    int rc = -1;
    int32_t *out = NULL;
    unsigned char *bytes = NULL;
    uint32_t d[3] = {0, 1, 1};
    unsigned long long values;
    if (idx_header(&f, IDX_MAGIC_LABELS, d, 1) || idx_check_dims(&f, false, d, &values)) goto done;
    uint32_t count = d[0];
    out = malloc((size_t)count * sizeof *out);
    bytes = malloc(count);
    if (!out || !bytes) {
        idx_fail(&f, "cannot allocate %zu bytes for the labels", (size_t)count * (1 + sizeof *out));
        goto done;
    }
    long long got = idx_read(&f, bytes, count);
    if (got < 0) goto done;
    if (got < (long long)count) {
        idx_truncated(&f, "labels", IDX_LABELS_HEADER, count, (unsigned long long)got);
        goto done;
    }
    if (idx_check_end(&f, "labels", IDX_LABELS_HEADER, count)) goto done;
    int top = 0;
    for (uint32_t i = 0; i < count; i++) {
        out[i] = bytes[i];
        if (bytes[i] > top) top = bytes[i];
    }
    *y = out;
    out = NULL;
    *n = (int)count;
    *max_label = top;
    rc = 0;
done:
    free(out);
    free(bytes);
    idx_close(&f);
    return rc;
}

/* ---- inspecting a file without loading it --------------------------------------------------- */

/* Decodes the rest of the file to count its bytes, stopping once there are more than limit: a
 * gzip bomb is found after limit + 1 bytes, not inflated to its end. */
static long long idx_count_upto(idx_file *f, unsigned long long limit) {
    unsigned char *buf = malloc(IDX_CHUNK);
    if (!buf) return idx_fail(f, "cannot allocate %u bytes", IDX_CHUNK);
    long long total = 0, got = 0;
    while ((unsigned long long)total <= limit && (got = idx_read(f, buf, IDX_CHUNK)) > 0) total += got;
    free(buf);
    return got < 0 ? -1 : total;
}

int pgn_idx_inspect(const char *path, const char *name, pgn_idx_info *info, pgn_error *err) {
    memset(info, 0, sizeof *info);
    idx_file f = {.path = path, .field = "", .err = err};
    if (idx_open(&f)) return -1;
    f.path = name; /* from here, messages name the file as the caller knows it */
    int rc = -1;
    unsigned char h[IDX_MAX_HEADER];
    long long got = idx_read(&f, h, 4);
    if (got < 0) goto done;
    uint32_t magic = got == 4 ? be32(h) : 0;
    if (magic != IDX_MAGIC_IMAGES && magic != IDX_MAGIC_LABELS) {
        /* As in idx_header: nothing of a file that is not idx is quoted. */
        idx_fail(&f, "not an idx file a train job reads: it does not begin with the magic "
                     "0x%08x (unsigned-byte images [n][rows][cols]) or 0x%08x (unsigned-byte "
                     "labels [n])", IDX_MAGIC_IMAGES, IDX_MAGIC_LABELS);
        goto done;
    }
    bool images = magic == IDX_MAGIC_IMAGES;
    int ndims = images ? 3 : 1, header = images ? IDX_IMAGES_HEADER : IDX_LABELS_HEADER;
    got = idx_read(&f, h + 4, 4 * (size_t)ndims);
    if (got < 0) goto done;
    if (got < 4 * ndims) {
        idx_fail(&f, "truncated header: expected %d bytes, got %lld%s", header, 4 + got,
                 idx_short_reason(&f));
        goto done;
    }
    uint32_t d[3] = {0, 1, 1};
    for (int i = 0; i < ndims; i++) d[i] = be32(h + 4 + 4 * i);
    const char *what = images ? "images" : "labels";
    unsigned long long values;
    if (idx_check_dims(&f, images, d, &values)) goto done;
    if (!!f.gzip) { /* a plain file's size was exact; a gzip file's payload is counted */
        long long payload = idx_count_upto(&f, values);
        if (payload < 0) goto done;
        if ((unsigned long long)payload < values) {
            idx_truncated(&f, what, header, values, (unsigned long long)payload);
            goto done;
        }
        if ((unsigned long long)payload > values) {
            idx_fail(&f, "more than %llu bytes of %s after the %d-byte header: the header declares "
                     "%llu", values, what, header, values);
            goto done;
        }
    }
    info->ndims = ndims;
    for (int i = 0; i < ndims; i++) info->dims[i] = d[i];
    info->gzip = !!f.gzip;
    rc = 0;
done:
    idx_close(&f);
    return rc;
}
