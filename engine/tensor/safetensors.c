/* safetensors.c: reading and writing checkpoints (and weights exports, export.c) in the
 * safetensors format: an 8-byte
 * little-endian header length, a JSON header {"name":{"dtype","shape","data_offsets"},
 * "__metadata__":{string: string}}, then the raw little-endian tensor bytes. Files are written
 * to a temporary name, synced and renamed, so a crash never leaves a torn checkpoint; every
 * write stores the SHA-256 of the tensor data in the metadata, and a read checks it and the
 * header's layout before any tensor is used. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/tensor.h"
#include "pgn_math.h"

/* Headers larger than this are not ours and not plausible: refuse before allocating. */
#define PGN_ST_MAX_HEADER (16u << 20)
#define PGN_ST_ALIGN 8
#define PGN_ST_MAX_RANK 8
#define PGN_ST_METADATA "__metadata__"

int pgn_checkpoint_fail(pgn_error *err, const char *path, const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pgn_error_set(err, PGN_E_CHECKPOINT, "", "checkpoint '%s': %s", path, msg);
    return -1;
}

static void to_le(const float *v, size_t n, unsigned char *out) {
    for (size_t i = 0; i < n; i++) {
        pgn_u32 u = pgn_bits(v[i]);
        for (int k = 0; k < 4; k++) out[4 * i + k] = (unsigned char)(u >> (8 * k));
    }
}

static void from_le(const unsigned char *in, size_t n, float *v) {
    for (size_t i = 0; i < n; i++) {
        pgn_u32 u = 0;
        for (int k = 0; k < 4; k++) u |= (pgn_u32)in[4 * i + k] << (8 * k);
        v[i] = pgn_float(u);
    }
}

static void sha256_hex_of(const unsigned char *data, size_t len, char out[65]) {
    pgn_sha256 s;
    pgn_sha256_init(&s);
    pgn_sha256_update(&s, data, len);
    unsigned char digest[32];
    pgn_sha256_final(&s, digest);
    pgn_sha256_hex(digest, out);
}

json_t *pgn_safetensors_entry(const int64_t *shape, int rank, size_t offset) {
    json_t *dims = json_array();
    size_t count = 1;
    for (int i = 0; i < rank; i++) {
        json_array_append_new(dims, json_integer((json_int_t)shape[i]));
        count *= (size_t)shape[i];
    }
    return json_pack("{s:s, s:o, s:[I, I]}", "dtype", "F32", "shape", dims, "data_offsets",
                     (json_int_t)offset, (json_int_t)(offset + count * PGN_ST_F32_BYTES));
}

unsigned char *pgn_safetensors_head(const json_t *tensors, const json_t *metadata,
                                    const unsigned char *data, size_t data_len, size_t *len,
                                    pgn_error *err) {
    char digest[65];
    sha256_hex_of(data, data_len, digest);
    json_t *header = json_copy((json_t *)tensors);
    json_t *meta = metadata ? json_copy((json_t *)metadata) : json_object();
    json_object_set_new(meta, PGN_ST_DATA_SHA256, json_string(digest));
    json_object_set_new(header, PGN_ST_METADATA, meta);
    char *text = json_dumps(header, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(header);
    size_t hlen = text ? strlen(text) : 0;
    size_t padded = (hlen + PGN_ST_ALIGN - 1) / PGN_ST_ALIGN * PGN_ST_ALIGN;
    unsigned char *head = text ? malloc(8 + padded) : NULL;
    if (!head) {
        free(text);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "safetensors: cannot encode the header");
        return NULL;
    }
    for (int k = 0; k < 8; k++) head[k] = (unsigned char)((uint64_t)padded >> (8 * k));
    memcpy(head + 8, text, hlen);
    memset(head + 8 + hlen, ' ', padded - hlen);
    free(text);
    *len = 8 + padded;
    return head;
}

int pgn_safetensors_write_bytes(const char *path, const void *head, size_t head_len,
                                const void *data, size_t data_len, pgn_error *err) {
    return pgn_write_file_atomic(path, head, head_len, data, data_len, err);
}

/* The whole data section is gathered in one buffer (the checkpoint's size: parameters and
 * optimizer state), because its digest goes into the header, which precedes it. */
int pgn_safetensors_write(const char *path, const pgn_st_entry *entries, int n,
                          const json_t *metadata, pgn_error *err) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += pgn_tensor_count(entries[i].t) * PGN_ST_F32_BYTES;
    unsigned char *data = malloc(total ? total : 1);
    if (!data) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "checkpoint: cannot allocate %zu bytes", total);
        return -1;
    }
    json_t *header = json_object();
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        size_t count = pgn_tensor_count(entries[i].t);
        float *v = malloc(count ? count * sizeof *v : 1);
        int rc = v ? pgn_tensor_read(entries[i].t, v, count, err) : -1;
        if (!v) pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "checkpoint: cannot allocate %zu floats",
                              count);
        if (rc == 0) to_le(v, count, data + offset);
        free(v);
        if (rc) { /* the device's error, or the allocation's */
            json_decref(header);
            free(data);
            return -1;
        }
        const int64_t shape[2] = {entries[i].t->rows, entries[i].t->cols};
        json_object_set_new(header, entries[i].name, pgn_safetensors_entry(shape, 2, offset));
        offset += count * PGN_ST_F32_BYTES;
    }
    size_t head_len;
    unsigned char *head = pgn_safetensors_head(header, metadata, data, total, &head_len, err);
    json_decref(header);
    int rc = head ? pgn_safetensors_write_bytes(path, head, head_len, data, total, err) : -1;
    free(head);
    free(data);
    return rc;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* One tensor of the header, as its checks and the loader see it. */
typedef struct {
    const char *name;
    long long begin, end;
} st_span;

static int cmp_span(const void *a, const void *b) {
    const st_span *x = a, *y = b;
    if (x->begin != y->begin) return (x->begin > y->begin) - (x->begin < y->begin);
    return (x->end > y->end) - (x->end < y->end);
}

/* "(2, 16)" from a shape array already checked to hold integers. */
static void shape_text(const json_t *shape, char *out, size_t size) {
    size_t len = (size_t)snprintf(out, size, "(");
    for (size_t i = 0; i < json_array_size(shape) && len < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%lld", i ? ", " : "",
                                (long long)json_integer_value(json_array_get(shape, i)));
    if (len < size) snprintf(out + len, size - len, ")");
}

/* Fails naming one tensor: "checkpoint '<path>': tensor '<name>': <message>". */
static int tensor_fail(const pgn_st_file *f, const char *name, pgn_error *err, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));

static int tensor_fail(const pgn_st_file *f, const char *name, pgn_error *err, const char *fmt,
                       ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pgn_checkpoint_fail(err, f->path, "tensor '%.96s': %s", name, msg);
}

/* One tensor's entry: dtype F32, a shape of non-negative integers, data_offsets [begin, end]
 * in order, inside the data section and exactly as long as dtype x shape. */
static int check_tensor(const pgn_st_file *f, const char *name, const json_t *entry, st_span *span,
                        pgn_error *err) {
    if (!json_is_object(entry)) return tensor_fail(f, name, err, "not an object");
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)entry, key, val) {
        if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
            return tensor_fail(f, name, err, "unknown field '%.32s'", key);
    }
    const json_t *dtype = json_object_get(entry, "dtype"), *shape = json_object_get(entry, "shape"),
                 *offs = json_object_get(entry, "data_offsets");
    if (!json_is_string(dtype)) return tensor_fail(f, name, err, "dtype is not a string");
    if (strcmp(json_string_value(dtype), "F32"))
        return tensor_fail(f, name, err, "dtype is '%.16s', expected F32",
                           json_string_value(dtype));
    if (!json_is_array(shape) || json_array_size(shape) > PGN_ST_MAX_RANK)
        return tensor_fail(f, name, err, "shape must be an array of at most %d integers",
                           PGN_ST_MAX_RANK);
    uint64_t count = 1;
    for (size_t i = 0; i < json_array_size(shape); i++) {
        const json_t *d = json_array_get(shape, i);
        if (!json_is_integer(d) || json_integer_value(d) < 0)
            return tensor_fail(f, name, err, "shape[%zu] is not a non-negative integer", i);
        uint64_t dim = (uint64_t)json_integer_value(d);
        if (dim && count > f->data_len / dim) count = f->data_len + 1; /* too big either way */
        else count *= dim;
    }
    if (!json_is_array(offs) || json_array_size(offs) != 2 ||
        !json_is_integer(json_array_get(offs, 0)) || !json_is_integer(json_array_get(offs, 1)))
        return tensor_fail(f, name, err, "data_offsets must be [begin, end], two integers");
    long long begin = json_integer_value(json_array_get(offs, 0));
    long long end = json_integer_value(json_array_get(offs, 1));
    if (begin < 0 || end < 0)
        return tensor_fail(f, name, err, "data_offsets [%lld, %lld] are negative", begin, end);
    if (begin > end)
        return tensor_fail(f, name, err, "data_offsets [%lld, %lld] are out of order (begin after "
                           "end)", begin, end);
    if ((uint64_t)end > f->data_len)
        return tensor_fail(f, name, err, "data_offsets [%lld, %lld] point past the end of the %zu "
                           "bytes of tensor data", begin, end, f->data_len);
    char dims[96], needs[64];
    shape_text(shape, dims, sizeof dims);
    if (count > f->data_len)
        snprintf(needs, sizeof needs, "more than the file's %zu", f->data_len);
    else
        snprintf(needs, sizeof needs, "%llu", (unsigned long long)count * PGN_ST_F32_BYTES);
    if (count > f->data_len || (uint64_t)(end - begin) != count * PGN_ST_F32_BYTES)
        return tensor_fail(f, name, err, "data_offsets [%lld, %lld] hold %lld bytes, but F32 %s "
                           "needs %s", begin, end, end - begin, dims, needs);
    *span = (st_span){name, begin, end};
    return 0;
}

/* The tensors tile the data section: sorted by offset, each begins where the one before ends,
 * the first at 0 and the last at the section's end (the format allows no holes). */
static int check_layout(const pgn_st_file *f, st_span *spans, size_t n, pgn_error *err) {
    qsort(spans, n, sizeof *spans, cmp_span);
    long long at = 0;
    for (size_t i = 0; i < n; i++) {
        const st_span *s = &spans[i], *prev = i ? &spans[i - 1] : NULL;
        if (s->begin < at)
            return pgn_checkpoint_fail(err, f->path, "tensors '%.96s' [%lld, %lld] and '%.96s' "
                                       "[%lld, %lld] overlap", prev->name, prev->begin, prev->end,
                                       s->name, s->begin, s->end);
        if (s->begin > at)
            return pgn_checkpoint_fail(err, f->path, "bytes %lld..%lld of the tensor data belong "
                                       "to no tensor (before '%.96s' [%lld, %lld])", at,
                                       s->begin - 1, s->name, s->begin, s->end);
        at = s->end;
    }
    if ((uint64_t)at != f->data_len)
        return pgn_checkpoint_fail(err, f->path, "%llu bytes of tensor data follow the last "
                                   "tensor, which ends at %lld",
                                   (unsigned long long)(f->data_len - (uint64_t)at), at);
    return 0;
}

/* Metadata: an object of strings; data_sha256, when present, must match the data. */
static int check_metadata(pgn_st_file *f, pgn_error *err) {
    if (!f->metadata) return 0;
    if (!json_is_object(f->metadata))
        return pgn_checkpoint_fail(err, f->path, "%s is not an object", PGN_ST_METADATA);
    const char *key;
    const json_t *val;
    json_object_foreach(f->metadata, key, val) {
        if (!json_is_string(val))
            return pgn_checkpoint_fail(err, f->path, "metadata \"%.64s\" is not a string", key);
    }
    const char *want = json_string_value(json_object_get(f->metadata, PGN_ST_DATA_SHA256));
    if (!want) return 0;
    char got[65];
    sha256_hex_of(f->data, f->data_len, got);
    if (strcmp(want, got))
        return pgn_checkpoint_fail(err, f->path, "the tensor data does not match its %s (the file "
                                   "is corrupt or was altered)", PGN_ST_DATA_SHA256);
    f->digest_checked = true;
    return 0;
}

/* Reads and checks the file fp holds (NULL: it could not be opened, errno says why); closes fp. */
static int open_stream(FILE *fp, const char *path, pgn_st_file *f, pgn_error *err) {
    memset(f, 0, sizeof *f);
    f->path = path;
    if (!fp) return pgn_checkpoint_fail(err, path, "cannot open: %s", strerror(errno));
    int rc = -1;
    char *text = NULL;
    st_span *spans = NULL;
    struct stat st;
    if (fstat(fileno(fp), &st) || !S_ISREG(st.st_mode)) {
        pgn_checkpoint_fail(err, path, "not a regular file");
        goto out;
    }
    uint64_t size = (uint64_t)st.st_size;
    unsigned char len8[8];
    if (size < 8 || fread(len8, 1, 8, fp) != 8) {
        pgn_checkpoint_fail(err, path, "%llu bytes, shorter than the 8-byte header length",
                            (unsigned long long)size);
        goto out;
    }
    uint64_t hlen = 0;
    for (int k = 0; k < 8; k++) hlen |= (uint64_t)len8[k] << (8 * k);
    if (hlen == 0 || hlen > PGN_ST_MAX_HEADER || hlen > size - 8) {
        pgn_checkpoint_fail(err, path, "header length %llu is implausible (1..%u bytes, within the "
                            "%llu-byte file)", (unsigned long long)hlen, PGN_ST_MAX_HEADER,
                            (unsigned long long)size);
        goto out;
    }
    text = malloc(hlen);
    f->data_len = (size_t)(size - 8 - hlen);
    f->data = malloc(f->data_len ? f->data_len : 1);
    if (!text || !f->data) {
        pgn_checkpoint_fail(err, path, "cannot allocate %llu bytes", (unsigned long long)size);
        goto out;
    }
    if (fread(text, 1, hlen, fp) != hlen || fread(f->data, 1, f->data_len, fp) != f->data_len) {
        pgn_checkpoint_fail(err, path, "read error: %s",
                            ferror(fp) ? strerror(errno) : "shorter than its size");
        goto out;
    }
    json_error_t jerr;
    json_t *header = json_loadb(text, hlen, JSON_REJECT_DUPLICATES, &jerr);
    if (!header) {
        pgn_checkpoint_fail(err, path, "the header is not valid JSON (%s, at byte %d)", jerr.text,
                            jerr.position);
        goto out;
    }
    if (!json_is_object(header)) {
        json_decref(header);
        pgn_checkpoint_fail(err, path, "the header is not a JSON object");
        goto out;
    }
    f->header = header;
    f->metadata = json_object_get(header, PGN_ST_METADATA);
    if (f->metadata) {
        json_incref(f->metadata);
        json_object_del(header, PGN_ST_METADATA);
    }
    size_t n = json_object_size(header), i = 0;
    spans = malloc((n ? n : 1) * sizeof *spans);
    if (!spans) {
        pgn_checkpoint_fail(err, path, "cannot allocate for %zu tensors", n);
        goto out;
    }
    const char *name;
    const json_t *e;
    json_object_foreach(header, name, e) {
        if (check_tensor(f, name, e, &spans[i++], err)) goto out;
    }
    if (check_layout(f, spans, n, err) || check_metadata(f, err)) goto out;
    rc = 0;
out:
    free(spans);
    free(text);
    fclose(fp);
    if (rc) pgn_safetensors_close(f);
    return rc;
}

int pgn_safetensors_open(const char *path, pgn_st_file *f, pgn_error *err) {
    return open_stream(fopen(path, "rb"), path, f, err);
}

int pgn_safetensors_open_fd(int fd, const char *path, pgn_st_file *f, pgn_error *err) {
    int copy = dup(fd);
    FILE *fp = copy >= 0 && lseek(copy, 0, SEEK_SET) == 0 ? fdopen(copy, "rb") : NULL;
    if (!fp && copy >= 0) {
        int saved = errno;
        close(copy);
        errno = saved;
    }
    return open_stream(fp, path, f, err);
}

/* Copies the entries' tensors out of f; exact: the file may hold no other tensor. */
static int load_entries(const pgn_st_file *f, const pgn_st_entry *entries, int n, bool exact, pgn_error *err) {
    for (int i = 0; i < n; i++) {
        const json_t *e = json_object_get(f->header, entries[i].name);
        if (!e) return tensor_fail(f, entries[i].name, err, "missing");
        const json_t *shape = json_object_get(e, "shape");
        long long rows = entries[i].t->rows, cols = entries[i].t->cols;
        if (json_array_size(shape) != 2 || json_integer_value(json_array_get(shape, 0)) != rows ||
            json_integer_value(json_array_get(shape, 1)) != cols) {
            char dims[96];
            shape_text(shape, dims, sizeof dims);
            return tensor_fail(f, entries[i].name, err, "shape is %s, expected (%lld, %lld)", dims,
                               rows, cols);
        }
    }
    if (exact && json_object_size(f->header) != (size_t)n) { /* names are unique: one is extra */
        const char *name;
        const json_t *e;
        json_object_foreach(f->header, name, e) {
            int k = 0;
            while (k < n && strcmp(entries[k].name, name)) k++;
            if (k == n) return tensor_fail(f, name, err, "unexpected: this job has no such tensor");
        }
    }
    for (int i = 0; i < n; i++) {
        const json_t *offs = json_object_get(json_object_get(f->header, entries[i].name),
                                             "data_offsets");
        size_t begin = (size_t)json_integer_value(json_array_get(offs, 0)); /* checked by open */
        size_t count = pgn_tensor_count(entries[i].t);
        float *v = malloc(count ? count * sizeof *v : 1);
        if (!v) {
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "checkpoint: cannot allocate %zu floats",
                          count);
            return -1;
        }
        from_le(f->data + begin, count, v);
        int rc = pgn_tensor_write(entries[i].t, v, count, err);
        free(v);
        if (rc) return -1;
    }
    return 0;
}

int pgn_safetensors_load(const pgn_st_file *f, const pgn_st_entry *entries, int n, pgn_error *err) {
    return load_entries(f, entries, n, true, err);
}

int pgn_safetensors_load_some(const pgn_st_file *f, const pgn_st_entry *entries, int n, pgn_error *err) {
    return load_entries(f, entries, n, false, err);
}

void pgn_safetensors_close(pgn_st_file *f) {
    json_decref(f->header);
    json_decref(f->metadata);
    free(f->data);
    memset(f, 0, sizeof *f);
}
