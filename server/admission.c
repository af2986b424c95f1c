/* admission.c: owns the limits paragond applies to a submission before storing it: the shape of
 * the JSON body (depth, array length), a model's parameter count, and a train job's estimated
 * device memory against the device it was placed on (the estimate is the engine's,
 * pgn_job_memory_estimate). */
#include "admission.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int refuse(pgn_error *err, json_t **extra, const char *field, const char *limit,
                  long long max, long long value, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static int refuse(pgn_error *err, json_t **extra, const char *field, const char *limit,
                  long long max, long long value, const char *fmt, ...) {
    pgn_error_clear(err);
    snprintf(err->code, sizeof err->code, "limit_exceeded");
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    *extra = json_pack("{s:s, s:I, s:I}", "limit", limit, "max", (json_int_t)max, "value",
                       (json_int_t)value);
    return -1;
}

/* ---- the JSON body ---------------------------------------------------------------------- */

/* One pass over the bytes: strings are skipped (escapes included), brackets tracked on a
 * stack no deeper than the limit, commas counted in arrays. Malformed JSON passes through
 * untouched: jansson reports it with its own line and column. */
int pgd_admit_json(const char *body, size_t len, pgn_error *err, json_t **extra) {
    *extra = NULL;
    bool is_array[PGD_JSON_MAX_DEPTH];
    uint32_t commas[PGD_JSON_MAX_DEPTH];
    int depth = 0;
    bool in_string = false, escaped = false;
    int line = 1, column = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)body[i];
        column++;
        if (c == '\n') {
            line++;
            column = 0;
        }
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        switch (c) {
        case '"': in_string = true; break;
        case '[':
        case '{':
            if (depth == PGD_JSON_MAX_DEPTH) {
                refuse(err, extra, NULL, "json_depth", PGD_JSON_MAX_DEPTH, depth + 1,
                       "JSON nested deeper than %d levels (line %d, column %d)",
                       PGD_JSON_MAX_DEPTH, line, column);
                goto where;
            }
            is_array[depth] = c == '[';
            commas[depth] = 0;
            depth++;
            break;
        case ']':
        case '}':
            if (depth > 0) depth--;
            break;
        case ',':
            if (depth > 0 && is_array[depth - 1] && ++commas[depth - 1] >= PGD_JSON_MAX_ARRAY) {
                refuse(err, extra, NULL, "json_array_length", PGD_JSON_MAX_ARRAY,
                       (long long)commas[depth - 1] + 1,
                       "JSON array longer than %d elements (line %d, column %d)",
                       PGD_JSON_MAX_ARRAY, line, column);
                goto where;
            }
            break;
        default: break;
        }
    }
    return 0;
where:
    json_object_set_new(*extra, "line", json_integer(line));
    json_object_set_new(*extra, "column", json_integer(column));
    return -1;
}

/* ---- one job ---------------------------------------------------------------------------- */

/* "1.5 GiB", "200.0 MiB", "512 B": for messages. */
static const char *human_bytes(double b, char *buf, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024.0 && u < 4) {
        b /= 1024.0;
        u++;
    }
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", b, units[u]);
    return buf;
}

/* What a device can hold: OpenCL's global memory; for the host pseudo-device, which runs the
 * C reference in our own address space, the machine's physical memory. */
static double device_bytes(const pgn_device_info *d) {
    if (d->type != PGN_DEVICE_HOST) return (double)d->global_mem_bytes;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
}

int pgd_admit_job(const pgn_job_spec *spec, const pgn_device_info *placed, pgn_error *err,
                         json_t **extra) {
    *extra = NULL;
    if (spec->kind != PGN_JOB_TRAIN) return 0;
    pgn_memory_estimate m;
    pgn_job_memory_estimate(spec, &m);
    if (m.n_params > PGD_MAX_PARAMS)
        return refuse(err, extra, "model.layers", "max_params", (long long)PGD_MAX_PARAMS,
                      (long long)m.n_params,
                      "model.layers: the model has %llu parameters (sum over layers of in*out + "
                      "out); the limit is %llu",
                      (unsigned long long)m.n_params, (unsigned long long)PGD_MAX_PARAMS);

    double have = device_bytes(placed);
    if (have <= 0 || m.total <= have) return 0; /* a device that does not say is not judged */
    /* Blame the part that weighs most: the model, the batch or the data. */
    double model = m.params + m.gradients + m.optimizer;
    const char *field = model >= m.activations && model >= m.dataset ? "model.layers"
                        : m.activations >= m.dataset                 ? "batch_size"
                                                                     : "data";
    char total[32], have_s[32], p[32], g[32], o[32], a[32], d[32];
    refuse(err, extra, field, "device_memory", (long long)have, (long long)m.total,
           "%s: the job needs about %s of device memory (parameters %s, gradients %s, "
           "optimizer state %s, activations %s, dataset %s) but device %s has %s",
           field, human_bytes(m.total, total, sizeof total), human_bytes(m.params, p, sizeof p),
           human_bytes(m.gradients, g, sizeof g), human_bytes(m.optimizer, o, sizeof o),
           human_bytes(m.activations, a, sizeof a), human_bytes(m.dataset, d, sizeof d),
           placed->id, human_bytes(have, have_s, sizeof have_s));
    json_object_set_new(*extra, "device", json_string(placed->id));
    json_object_set_new(*extra, "estimate",
                        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "params",
                                  (json_int_t)m.params, "gradients", (json_int_t)m.gradients,
                                  "optimizer", (json_int_t)m.optimizer, "activations",
                                  (json_int_t)m.activations, "dataset", (json_int_t)m.dataset,
                                  "total", (json_int_t)m.total));
    return -1;
}
