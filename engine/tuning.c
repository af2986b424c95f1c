/* tuning.c: a device's tunings as typed records (docs/architecture.md, "Device profiles"): what a
 * calibration chose, for which device, driver and kernels, applied to a profile; as JSON, and in
 * the record file the CLI keeps in its data dir (paragond keeps them in its database). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "embedded.h"

static char kernels_hex[65];

static void hash_kernels(void) {
    pgn_sha256 h;
    pgn_sha256_init(&h);
    for (const pgn_embedded *e = pgn_kernel_sources; e->name; e++) {
        pgn_sha256_update(&h, e->name, strlen(e->name) + 1);
        pgn_sha256_update(&h, e->data, e->size);
    }
    unsigned char d[32];
    pgn_sha256_final(&h, d);
    for (int i = 0; i < 32; i++) snprintf(kernels_hex + 2 * i, 3, "%02x", d[i]);
}

const char *pgn_kernels_hash(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, hash_kernels);
    return kernels_hex;
}

bool pgn_device_tuning_fits(const pgn_device_tuning *t, const pgn_device_info *info, pgn_kernel_family family) {
    return !strcmp(t->device_id, info->id) && !strcmp(t->driver_version, info->driver_version) &&
           !strcmp(t->kernels_hash, pgn_kernels_hash()) && t->family == family;
}

void pgn_device_profile_tune(pgn_device_profile *p, const pgn_device_tuning *t) {
    const pgn_gemm_tile_shape *shape = pgn_gemm_tile_shape_of(t->gemm_tile);
    if (t->too_slow || t->family != p->family[PGN_OPS_GEMM] || !shape || shape->family != t->family) return;
    p->gemm_tile = t->gemm_tile;
    p->gemm_tile_from = PGN_FROM_TUNING;
    p->gemm_gflops = t->gflops;
}

void pgn_device_tune(pgn_device *dev, const pgn_device_tuning *t) { pgn_device_profile_tune(&dev->profile, t); }

json_t *pgn_device_tuning_json(const pgn_device_tuning *t) {
    const char *tile = pgn_gemm_tile_name(t->gemm_tile);
    return json_pack("{s:s, s:s, s:s, s:s, s:{s:s}, s:{s:f}, s:b, s:s}", "device_id", t->device_id, "driver_version",
                     t->driver_version, "kernels_hash", t->kernels_hash, "family", pgn_kernel_family_name(t->family),
                     "params", "gemm_tile", tile ? tile : "?", "figure", "gflops", t->gflops, "too_slow",
                     t->too_slow, "measured_at", t->measured_at);
}

/* A string field of a tuning into out (size bytes). */
static int tuning_string(const json_t *j, const char *key, char *out, size_t size, pgn_error *err) {
    const char *v = json_string_value(json_object_get(j, key));
    if (!v || strlen(v) >= size) return pgn_spec_fail(err, key, "a tuning's %s must be a string of at most %zu characters", key, size - 1);
    snprintf(out, size, "%s", v);
    return 0;
}

int pgn_device_tuning_parse(const json_t *j, pgn_device_tuning *t, pgn_error *err) {
    memset(t, 0, sizeof *t);
    if (!json_is_object(j)) return pgn_spec_fail(err, "tuning", "a tuning must be a JSON object");
    char family[8];
    if (tuning_string(j, "device_id", t->device_id, sizeof t->device_id, err) ||
        tuning_string(j, "driver_version", t->driver_version, sizeof t->driver_version, err) ||
        tuning_string(j, "kernels_hash", t->kernels_hash, sizeof t->kernels_hash, err) ||
        tuning_string(j, "family", family, sizeof family, err) ||
        tuning_string(j, "measured_at", t->measured_at, sizeof t->measured_at, err))
        return -1;
    if (strcmp(family, "cpu") && strcmp(family, "gpu")) return pgn_spec_fail(err, "family", "family: '%s' is no kernel family", family);
    t->family = strcmp(family, "gpu") ? PGN_FAMILY_CPU : PGN_FAMILY_GPU;
    t->gemm_tile = pgn_gemm_tile_find(json_string_value(json_object_get(json_object_get(j, "params"), "gemm_tile")));
    if (t->gemm_tile < 0 || pgn_gemm_tile_shape_of(t->gemm_tile)->family != t->family)
        return pgn_spec_fail(err, "params.gemm_tile", "params.gemm_tile: no such GEMM tile in the %s family", family);
    t->gflops = json_number_value(json_object_get(json_object_get(j, "figure"), "gflops"));
    t->too_slow = json_is_true(json_object_get(j, "too_slow"));
    return 0;
}

/* ---- the CLI's record file: a JSON array of tunings ------------------------------------------ */

static json_t *load_records(const char *path, pgn_error *err) {
    size_t len;
    char *text = pgn_read_file(path, &len);
    if (!text) {
        if (errno == ENOENT) return json_array();
        pgn_error_set(err, PGN_E_IO, "", "cannot read the tunings in %s: %s", path, strerror(errno));
        return NULL;
    }
    json_error_t jerr;
    json_t *list = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!json_is_array(list)) { /* a record that is no list is not ours to trust: start afresh */
        json_decref(list);
        return json_array();
    }
    return list;
}

int pgn_tunings_file_find(const char *path, const char *device_id, pgn_kernel_family family, pgn_device_tuning *out,
                          pgn_error *err) {
    json_t *list = load_records(path, err);
    if (!list) return -1;
    size_t i;
    json_t *j;
    int found = 0;
    json_array_foreach(list, i, j) {
        pgn_device_tuning t;
        pgn_error ignored;
        if (pgn_device_tuning_parse(j, &t, &ignored) == 0 && !strcmp(t.device_id, device_id) && t.family == family) {
            *out = t;
            found = 1;
            break;
        }
    }
    json_decref(list);
    return found;
}

int pgn_tunings_file_put(const char *path, const pgn_device_tuning *t, pgn_error *err) {
    json_t *list = load_records(path, err);
    if (!list) return -1;
    size_t i;
    json_t *j;
    json_t *kept = json_array();
    json_array_foreach(list, i, j) {
        pgn_device_tuning old;
        pgn_error ignored;
        if (pgn_device_tuning_parse(j, &old, &ignored) == 0 && !strcmp(old.device_id, t->device_id) &&
            old.family == t->family)
            continue; /* replaced */
        json_array_append(kept, j);
    }
    json_decref(list);
    json_array_append_new(kept, pgn_device_tuning_json(t));
    char *text = json_dumps(kept, JSON_INDENT(2));
    json_decref(kept);
    if (!text) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory writing the tunings");
        return -1;
    }
    int rc = pgn_write_file_atomic(path, text, strlen(text), NULL, 0, err);
    free(text);
    return rc;
}
