/* corpus.c: text as training data for character models. A text source (a file under the
 * datasets directory, or Debian's fortunes) is read whole; its characters (Unicode code points
 * when it is valid UTF-8, else bytes) are the tokens, numbered by a vocabulary built sorted, so
 * that the same text always gives the same ids; the last tenth is the validation split. The
 * vocabulary travels in checkpoints, so resuming and generating can never scramble ids. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/tensor.h"

/* Debian's fortunes package: text files of English (about 2.5 MB), each beside its .dat index
 * and a .u8 symlink to it; the text files are the names without a dot. */
#define PGN_FORTUNES_DIR "/usr/share/games/fortunes"
#define PGN_FORTUNES_PACKAGE "fortunes"
/* Text larger than this is refused (its tokens take four times as much on the device). */
#define PGN_TEXT_MAX_BYTES ((size_t)256 << 20)
#define PGN_UNICODE_LIMIT 0x110000u

/* ---- UTF-8 ---------------------------------------------------------------------------------- */

/* Decodes the character at s[*i] (len bytes in all) into *cp and advances *i; false for bytes
 * that are not UTF-8 (overlong forms, surrogates and values past U+10FFFF included). */
static bool utf8_next(const unsigned char *s, size_t len, size_t *i, uint32_t *cp) {
    unsigned char c = s[*i];
    int extra = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
    if (extra < 0 || *i + (size_t)extra >= len) return false;
    uint32_t v = extra == 0 ? c : c & (0x3fu >> extra);
    for (int k = 1; k <= extra; k++) {
        unsigned char cc = s[*i + (size_t)k];
        if ((cc & 0xc0) != 0x80) return false;
        v = (v << 6) | (cc & 0x3fu);
    }
    static const uint32_t least[4] = {0, 0x80, 0x800, 0x10000};
    if (v < least[extra] || v >= PGN_UNICODE_LIMIT || (v >= 0xd800 && v <= 0xdfff)) return false;
    *cp = v;
    *i += (size_t)extra + 1;
    return true;
}

static bool valid_utf8(const unsigned char *s, size_t len) {
    uint32_t cp;
    for (size_t i = 0; i < len;)
        if (!utf8_next(s, len, &i, &cp)) return false;
    return true;
}

size_t pgn_vocab_put(const pgn_vocab *v, int32_t token, char out[4]) {
    uint32_t c = token >= 0 && token < v->size ? v->chars[token] : 0xfffdu;
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | (c >> 6));
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | (c >> 12));
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (c >> 18));
    out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* ---- vocabulary ----------------------------------------------------------------------------- */

void pgn_vocab_free(pgn_vocab *v) {
    free(v->chars);
    memset(v, 0, sizeof *v);
}

/* The token of character c: its index in the sorted vocabulary, or -1. */
static int32_t vocab_find(const pgn_vocab *v, uint32_t c) {
    int lo = 0, hi = v->size - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (v->chars[mid] == c) return mid;
        if (v->chars[mid] < c) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* Characters of text one by one (code points or bytes, as the vocabulary reads them). */
typedef struct {
    const unsigned char *s;
    size_t len, i;
    bool utf8;
} char_reader;

static bool read_char(char_reader *r, uint32_t *c) {
    if (r->i >= r->len) return false;
    if (!r->utf8) {
        *c = r->s[r->i++];
        return true;
    }
    return utf8_next(r->s, r->len, &r->i, c);
}

/* The tokens of text read as the vocabulary's characters (raw: a byte vocabulary reads bytes;
 * otherwise text is UTF-8 whatever the vocabulary, a byte vocabulary's characters being the
 * code points below 256). */
static int encode_chars(const pgn_vocab *v, const char *text, size_t len, bool raw, int32_t *out, size_t *n,
                        const char *field, pgn_error *err) {
    char_reader r = {(const unsigned char *)text, len, 0, !(raw && !v->utf8)};
    size_t count = 0;
    uint32_t c;
    while (r.i < len) {
        size_t at = r.i;
        if (!read_char(&r, &c)) {
            pgn_error_set(err, PGN_E_INVALID_SPEC, field, "%s: byte %zu is not UTF-8 (the model's text is)",
                          field, at);
            return -1;
        }
        int32_t t = vocab_find(v, c);
        if (t < 0) {
            char shown[16];
            if (c >= 0x20 && c < 0x7f) snprintf(shown, sizeof shown, "'%c'", (char)c);
            else snprintf(shown, sizeof shown, "U+%04X", (unsigned)c);
            pgn_error_set(err, PGN_E_INVALID_SPEC, field, "%s: character %zu (%s) is not in the model's "
                          "vocabulary of %d characters", field, count, shown, v->size);
            return -1;
        }
        out[count++] = t;
    }
    *n = count;
    return 0;
}

int pgn_vocab_encode(const pgn_vocab *v, const char *text, size_t len, int32_t *out, size_t *n,
                     const char *field, pgn_error *err) {
    return encode_chars(v, text, len, false, out, n, field, err);
}

json_t *pgn_vocab_to_json(const pgn_vocab *v) {
    json_t *chars = json_array();
    for (int i = 0; i < v->size; i++) json_array_append_new(chars, json_integer(v->chars[i]));
    return json_pack("{s:s, s:o}", "encoding", v->utf8 ? "utf-8" : "bytes", "chars", chars);
}

int pgn_vocab_from_json(const json_t *j, pgn_vocab *v, const char *what, pgn_error *err) {
    memset(v, 0, sizeof *v);
    const char *enc = json_string_value(json_object_get(j, "encoding"));
    const json_t *chars = json_object_get(j, "chars");
    size_t n = json_array_size(chars);
    if (!enc || (strcmp(enc, "utf-8") && strcmp(enc, "bytes")) || !json_is_array(chars) || n == 0 ||
        n > PGN_TEXT_MAX_VOCAB) {
        pgn_error_set(err, PGN_E_CHECKPOINT, "", "%s: the vocabulary is malformed (expected "
                      "{\"encoding\":\"utf-8\"|\"bytes\",\"chars\":[1..%d sorted characters]})", what,
                      PGN_TEXT_MAX_VOCAB);
        return -1;
    }
    v->utf8 = !strcmp(enc, "utf-8");
    v->chars = malloc(n * sizeof *v->chars);
    if (!v->chars) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory reading a vocabulary");
        return -1;
    }
    v->size = (int)n;
    uint32_t limit = v->utf8 ? PGN_UNICODE_LIMIT : 256u;
    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_array_get(chars, i);
        json_int_t x = json_is_integer(c) ? json_integer_value(c) : -1;
        if (x < 0 || (uint64_t)x >= limit || (i > 0 && (uint32_t)x <= v->chars[i - 1])) {
            pgn_vocab_free(v);
            pgn_error_set(err, PGN_E_CHECKPOINT, "", "%s: vocabulary entry %zu is not a character in "
                          "ascending order", what, i);
            return -1;
        }
        v->chars[i] = (uint32_t)x;
    }
    return 0;
}

bool pgn_vocab_equal(const pgn_vocab *a, const pgn_vocab *b) {
    return a->size == b->size && a->utf8 == b->utf8 &&
           !memcmp(a->chars, b->chars, (size_t)a->size * sizeof *a->chars);
}

/* The sorted set of the text's characters. */
static int build_vocab(const unsigned char *s, size_t len, pgn_vocab *v, const char *what,
                       const char *field, pgn_error *err) {
    v->utf8 = valid_utf8(s, len);
    uint32_t limit = v->utf8 ? PGN_UNICODE_LIMIT : 256u;
    unsigned char *seen = calloc(limit / 8, 1);
    if (!seen) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory building a vocabulary");
        return -1;
    }
    char_reader r = {s, len, 0, v->utf8};
    uint32_t c;
    int size = 0;
    while (read_char(&r, &c))
        if (!(seen[c / 8] & (1u << (c % 8)))) {
            seen[c / 8] |= (unsigned char)(1u << (c % 8));
            size++;
        }
    if (size > PGN_TEXT_MAX_VOCAB) {
        free(seen);
        pgn_error_set(err, PGN_E_DATA, field, "%s: %s has %d distinct characters; a character model "
                      "takes at most %d", field, what, size, PGN_TEXT_MAX_VOCAB);
        return -1;
    }
    v->chars = malloc((size_t)(size ? size : 1) * sizeof *v->chars);
    if (!v->chars) {
        free(seen);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory building a vocabulary");
        return -1;
    }
    v->size = 0;
    for (uint32_t k = 0; k < limit; k++)
        if (seen[k / 8] & (1u << (k % 8))) v->chars[v->size++] = k;
    free(seen);
    return 0;
}

/* ---- reading the text ----------------------------------------------------------------------- */

/* Appends the regular file at path to *buf (of *len bytes, capacity *cap). */
static int append_file(const char *path, const char *field, unsigned char **buf, size_t *len, size_t *cap,
                       pgn_error *err) {
    /* O_NONBLOCK: a FIFO must not hang a job (it is refused as not a regular file) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        int e = errno;
        if (fd >= 0) close(fd);
        pgn_error_set(err, PGN_E_DATA, field, "%s: %s: cannot open: %s", field, path, strerror(e));
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size > PGN_TEXT_MAX_BYTES - *len) {
        close(fd);
        pgn_error_set(err, PGN_E_DATA, field, "%s: %s: %s", field, path,
                      S_ISREG(st.st_mode) ? "the text is larger than 256 MiB" : "not a regular file");
        return -1;
    }
    size_t want = *len + (size_t)st.st_size + 1;
    if (want > *cap) {
        size_t grown = *cap ? *cap : 1 << 16;
        while (grown < want) grown *= 2;
        unsigned char *bigger = realloc(*buf, grown);
        if (!bigger) {
            close(fd);
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory reading %s", path);
            return -1;
        }
        *buf = bigger;
        *cap = grown;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, *buf + *len + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            close(fd);
            pgn_error_set(err, PGN_E_DATA, field, "%s: %s: read failed: %s", field, path, strerror(e));
            return -1;
        }
        got += (size_t)r;
    }
    close(fd);
    *len += got;
    return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Debian's fortunes: every regular file of PGN_FORTUNES_DIR whose name has no dot, in byte order
 * of names, concatenated. */
static int read_fortunes(unsigned char **buf, size_t *len, pgn_error *err) {
    DIR *d = opendir(PGN_FORTUNES_DIR);
    if (!d) {
        pgn_error_set(err, PGN_E_DATA, "data.source", "data.source: fortunes not found in '%s' (%s): install "
                      "the Debian package %s", PGN_FORTUNES_DIR, strerror(errno), PGN_FORTUNES_PACKAGE);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (strchr(e->d_name, '.')) continue;
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", PGN_FORTUNES_DIR, e->d_name);
        if (lstat(path, &st) || !S_ISREG(st.st_mode)) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **bigger = realloc(names, cap * sizeof *names);
            if (!bigger) rc = -1;
            else names = bigger;
        }
        if (rc == 0 && !(names[n++] = strdup(e->d_name))) rc = -1;
    }
    closedir(d);
    if (rc) pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory listing %s", PGN_FORTUNES_DIR);
    if (rc == 0 && n == 0) {
        pgn_error_set(err, PGN_E_DATA, "data.source", "data.source: '%s' holds no fortunes: install the Debian "
                      "package %s", PGN_FORTUNES_DIR, PGN_FORTUNES_PACKAGE);
        rc = -1;
    }
    if (rc == 0) qsort(names, n, sizeof *names, cmp_names);
    size_t buf_cap = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", PGN_FORTUNES_DIR, names[i]);
        rc = append_file(path, "data.source", buf, len, &buf_cap, err);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

int pgn_corpus_load(const pgn_data_spec *spec, const char *datasets_dir, pgn_corpus *c, pgn_error *err) {
    memset(c, 0, sizeof *c);
    unsigned char *text = NULL;
    size_t len = 0, cap = 0;
    const char *field = spec->source == PGN_DATA_TEXT ? "data.path" : "data.source";
    int rc;
    if (spec->source == PGN_DATA_TEXT) {
        char path[PATH_MAX];
        rc = pgn_data_resolve(datasets_dir ? datasets_dir : PGN_DEFAULT_DATA_DIR, spec->path, field, path, err);
        if (rc == 0) rc = append_file(path, field, &text, &len, &cap, err);
        snprintf(c->what, sizeof c->what, "'%s'", spec->path);
    } else if (spec->source == PGN_DATA_FORTUNES) {
        rc = read_fortunes(&text, &len, err);
        snprintf(c->what, sizeof c->what, "fortunes");
    } else {
        rc = pgn_spec_fail(err, "data.source", "not a text source");
    }
    if (rc == 0 && len == 0) rc = pgn_spec_fail(err, field, "the text %s is empty", c->what);
    if (rc == 0) rc = build_vocab(text, len, &c->vocab, c->what, field, err);
    if (rc == 0 && !(c->tokens = malloc(len * sizeof *c->tokens))) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory for %zu tokens", len);
        rc = -1;
    }
    size_t n = 0;
    if (rc == 0) rc = encode_chars(&c->vocab, (const char *)text, len, true, c->tokens, &n, field, err);
    if (rc == 0) {
        unsigned char digest[32];
        pgn_sha256 s;
        pgn_sha256_init(&s);
        pgn_sha256_update(&s, text, len);
        pgn_sha256_final(&s, digest);
        pgn_sha256_hex(digest, c->sha256);
        c->n = (int64_t)n;
        c->n_train = c->n - c->n / PGN_TEXT_VALIDATION_DIVISOR;
    }
    free(text);
    if (rc) pgn_corpus_free(c);
    return rc;
}

void pgn_corpus_free(pgn_corpus *c) {
    pgn_vocab_free(&c->vocab);
    free(c->tokens);
    c->tokens = NULL;
    c->n = c->n_train = 0;
}

/* ---- checking a text file without loading it ------------------------------------------------ */

/* Bytes read per chunk; a character cut at a chunk's end is carried to the next. */
#define TEXT_INSPECT_CHUNK (1u << 20)
#define UTF8_MAX_BYTES 4

int pgn_text_inspect(const char *path, const char *name, uint64_t *chars, pgn_error *err) {
    *chars = 0;
    /* O_NONBLOCK: a FIFO must not hang the caller; regular files ignore it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    const char *why = fd < 0 || fstat(fd, &st) ? strerror(errno) : !S_ISREG(st.st_mode) ? "not a regular file" : NULL;
    if (why) {
        pgn_error_set(err, PGN_E_DATA, "", "%s: cannot read it: %s", name, why);
        if (fd >= 0) close(fd);
        return -1;
    }
    if (st.st_size == 0 || (uint64_t)st.st_size > PGN_TEXT_MAX_BYTES) {
        pgn_error_set(err, PGN_E_DATA, "", "%s: %s (%lld bytes; a text source holds 1 to %zu)", name,
                      st.st_size ? "too large" : "empty", (long long)st.st_size, PGN_TEXT_MAX_BYTES);
        close(fd);
        return -1;
    }
    unsigned char *buf = malloc(TEXT_INSPECT_CHUNK + UTF8_MAX_BYTES);
    if (!buf) {
        close(fd);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory checking %s", name);
        return -1;
    }
    int rc = 0;
    size_t carry = 0;   /* bytes of a character cut at the previous chunk's end */
    uint64_t offset = 0; /* of buf[0] in the file */
    for (;;) {
        ssize_t got = read(fd, buf + carry, TEXT_INSPECT_CHUNK);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            pgn_error_set(err, PGN_E_DATA, "", "%s: read error: %s", name, strerror(errno));
            rc = -1;
            break;
        }
        size_t len = carry + (size_t)got, i = 0;
        bool last = got == 0;
        uint32_t cp;
        /* Whole characters only, unless the file has ended: then a cut one is an error. */
        while (i < len && (last || len - i >= UTF8_MAX_BYTES)) {
            size_t at = i;
            if (!utf8_next(buf, len, &i, &cp)) {
                pgn_error_set(err, PGN_E_DATA, "", "%s: not valid UTF-8: the bytes at offset %llu do not "
                              "begin a character (a text source is UTF-8)", name,
                              (unsigned long long)(offset + at));
                rc = -1;
                break;
            }
            (*chars)++;
        }
        if (rc || last) break;
        carry = len - i;
        memmove(buf, buf + i, carry);
        offset += i;
    }
    free(buf);
    close(fd);
    return rc;
}
