/* safetensors.c: reading and writing checkpoints in the safetensors format: an 8-byte
 * little-endian header length, a JSON header {"name":{"dtype","shape","data_offsets"},
 * "__metadata__":{string: string}}, then the raw little-endian tensor bytes. Files are written
 * to a temporary name, synced and renamed, so a crash never leaves a torn checkpoint. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "pgn_math.h"

/* Headers larger than this are not ours and not plausible: refuse before allocating. */
#define PGN_ST_MAX_HEADER (16u << 20)
#define PGN_ST_ALIGN 8

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

int pgn_safetensors_write(const char *path, const pgn_st_entry *entries, int n,
                          const json_t *metadata, pgn_error *err) {
    json_t *header = json_object();
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        size_t bytes = pgn_tensor_count(entries[i].t) * 4;
        json_object_set_new(header, entries[i].name,
                            json_pack("{s:s, s:[i, i], s:[I, I]}", "dtype", "F32", "shape",
                                      entries[i].t->rows, entries[i].t->cols, "data_offsets",
                                      (json_int_t)offset, (json_int_t)(offset + bytes)));
        offset += bytes;
    }
    if (metadata) json_object_set(header, "__metadata__", (json_t *)metadata);
    char *text = json_dumps(header, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(header);
    if (!text) {
        pgn_error_set(err, "internal", "", "checkpoint: cannot encode the header");
        return -1;
    }
    size_t hlen = strlen(text), padded = (hlen + PGN_ST_ALIGN - 1) / PGN_ST_ALIGN * PGN_ST_ALIGN;
    char tmp[PGN_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        pgn_error_set(err, "io", "", "checkpoint: cannot create '%s': %s", tmp, strerror(errno));
        free(text);
        return -1;
    }
    unsigned char len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (unsigned char)((uint64_t)padded >> (8 * k));
    bool ok = fwrite(len8, 1, 8, f) == 8 && fwrite(text, 1, hlen, f) == hlen;
    for (size_t k = hlen; ok && k < padded; k++) ok = fputc(' ', f) != EOF;
    free(text);
    bool device_failed = false;
    for (int i = 0; ok && i < n; i++) {
        size_t count = pgn_tensor_count(entries[i].t);
        float *v = malloc(count * 4);
        unsigned char *bytes = malloc(count * 4);
        device_failed = v && bytes && pgn_tensor_read(entries[i].t, v, count, err) != 0;
        ok = v && bytes && !device_failed;
        if (ok) {
            to_le(v, count, bytes);
            ok = fwrite(bytes, 1, count * 4, f) == count * 4;
        }
        free(v);
        free(bytes);
    }
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (fclose(f) != 0) ok = false;
    if (!ok || rename(tmp, path) != 0) {
        if (!device_failed)
            pgn_error_set(err, "io", "", "checkpoint: writing '%s' failed: %s", path,
                          strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static int bad(pgn_error *err, const char *path, const char *what) {
    pgn_error_set(err, "checkpoint", "", "checkpoint '%s': %s", path, what);
    return -1;
}

int pgn_safetensors_read(const char *path, const pgn_st_entry *entries, int n, json_t **metadata,
                         pgn_error *err) {
    if (metadata) *metadata = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        pgn_error_set(err, "checkpoint", "", "checkpoint '%s': %s", path, strerror(errno));
        return -1;
    }
    int rc = -1;
    char *text = NULL;
    json_t *header = NULL;
    unsigned char len8[8];
    if (fread(len8, 1, 8, f) != 8) {
        bad(err, path, "shorter than its 8-byte header length");
        goto out;
    }
    uint64_t hlen = 0;
    for (int k = 0; k < 8; k++) hlen |= (uint64_t)len8[k] << (8 * k);
    if (hlen == 0 || hlen > PGN_ST_MAX_HEADER) {
        bad(err, path, "implausible header length");
        goto out;
    }
    text = malloc(hlen + 1);
    if (!text || fread(text, 1, hlen, f) != hlen) {
        bad(err, path, "truncated header");
        goto out;
    }
    text[hlen] = '\0';
    json_error_t jerr;
    header = json_loads(text, 0, &jerr);
    if (!json_is_object(header)) {
        bad(err, path, "the header is not a JSON object");
        goto out;
    }
    long data_start = (long)(8 + hlen);
    for (int i = 0; i < n; i++) {
        const json_t *e = json_object_get(header, entries[i].name);
        json_int_t rows = 0, cols = 0, begin = -1, end = -1;
        const char *dtype = NULL;
        if (!e || json_unpack((json_t *)e, "{s:s, s:[I, I], s:[I, I]}", "dtype", &dtype, "shape",
                              &rows, &cols, "data_offsets", &begin, &end)) {
            pgn_error_set(err, "checkpoint", "", "checkpoint '%s': tensor '%s' is missing or malformed",
                          path, entries[i].name);
            goto out;
        }
        size_t count = pgn_tensor_count(entries[i].t);
        if (strcmp(dtype, "F32") || rows != entries[i].t->rows || cols != entries[i].t->cols ||
            end - begin != (json_int_t)(count * 4) || begin < 0) {
            pgn_error_set(err, "checkpoint", "",
                          "checkpoint '%s': tensor '%s' is %s (%lld, %lld), expected F32 (%d, %d)",
                          path, entries[i].name, dtype, (long long)rows, (long long)cols,
                          entries[i].t->rows, entries[i].t->cols);
            goto out;
        }
        unsigned char *bytes = malloc(count * 4);
        float *v = malloc(count * 4);
        bool ok = bytes && v && fseek(f, data_start + (long)begin, SEEK_SET) == 0 &&
                  fread(bytes, 1, count * 4, f) == count * 4;
        if (ok) {
            from_le(bytes, count, v);
            ok = pgn_tensor_write(entries[i].t, v, count, err) == 0;
        } else {
            pgn_error_set(err, "checkpoint", "", "checkpoint '%s': tensor '%s' is truncated", path,
                          entries[i].name);
        }
        free(bytes);
        free(v);
        if (!ok) goto out;
    }
    if (metadata) {
        *metadata = json_object_get(header, "__metadata__");
        if (*metadata) json_incref(*metadata);
    }
    rc = 0;
out:
    json_decref(header);
    free(text);
    fclose(f);
    return rc;
}
