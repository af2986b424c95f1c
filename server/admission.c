/* admission.c: owns the limits paragond applies to a submission before storing it: the shape of
 * the JSON body (depth, array length), a model's parameter count, and the memory a train or inet
 * job may take against what holds it (the estimates are the engine's: pgn_job_memory_estimate,
 * pgn_inet_memory_estimate; the host's memory is what /proc/meminfo calls available). */
#include "admission.h"

#include "launcher.h"

#include <pthread.h>
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
    err->code = PGN_E_LIMIT_EXCEEDED;
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

/* ---- memory ----------------------------------------------------------------------------- */

/* How long a reading of /proc/meminfo stands for the next submissions: reading and scanning it
 * was a twentieth of a durable submission's CPU, and what is available moves slower than this. */
#define MEMINFO_REUSE_NS 100000000LL

static int meminfo_read(pgd_host_memory *out) {
    *out = (pgd_host_memory){0};
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) out->total = (double)kb * 1024.0;
        else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) out->available = (double)kb * 1024.0;
    }
    fclose(f);
    return out->total > 0 && out->available > 0 ? 0 : -1;
}

int pgd_host_memory_read(pgd_host_memory *out) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static pgd_host_memory last;
    static int64_t read_ns;
    static int last_rc;
    int64_t now = pgn_now_ns();
    pthread_mutex_lock(&lock);
    if (!read_ns || now - read_ns >= MEMINFO_REUSE_NS) {
        last_rc = meminfo_read(&last);
        read_ns = now;
    }
    *out = last;
    int rc = last_rc;
    pthread_mutex_unlock(&lock);
    return rc;
}

/* What a job may take of the host's memory: what the kernel says is available now (MemAvailable:
 * free memory plus what it can reclaim without swapping), less a margin for the server, the
 * kernel and other jobs starting meanwhile. Not MemTotal: a host busy with other programs has
 * far less. */
static double host_usable(const pgd_host_memory *m) {
    double margin = m->total * PGD_HOST_MEMORY_MARGIN;
    if (margin < PGD_HOST_MEMORY_MARGIN_MIN) margin = PGD_HOST_MEMORY_MARGIN_MIN;
    return m->available > margin ? m->available - margin : 0;
}

/* A limit on one kind of memory, for the messages: how much, and what it is. */
typedef struct budget {
    bool known;   /* false: the figure is not known, nothing is judged against it */
    double bytes;
    char what[256];
} budget;

/* The host's part of any job. */
static budget host_budget(const pgd_host_memory *m) {
    budget b = {.known = m->available > 0, .bytes = m->available > 0 ? host_usable(m) : 0};
    char avail[32], margin[32];
    snprintf(b.what, sizeof b.what, "the host has %s available (MemAvailable %s, less a margin of %s)",
             human_bytes(b.bytes, (char[32]){0}, 32), human_bytes(m->available, avail, sizeof avail),
             human_bytes(m->available - b.bytes, margin, sizeof margin));
    return b;
}

/* What an OpenCL device can hold of a job's device buffers. Its global memory, which for a GPU is
 * the board's. On a CPU device (pocl) the buffers are host memory: pocl's figure is its own cap
 * on allocations, derived at start from the memory the system reported then (less 2 GiB above
 * 7 GiB, or a quarter below), so it changes from one start to the next (4.9 GiB, then 11.3 GiB on
 * one machine); what the host has available now is the tighter truth, and the smaller of the
 * two is used. */
static budget device_budget(const pgn_device_info *d, const pgd_host_memory *m) {
    budget b = {.known = d->global_mem_bytes > 0, .bytes = (double)d->global_mem_bytes};
    char have[32];
    snprintf(b.what, sizeof b.what, "device %s has %s", d->id, human_bytes(b.bytes, have, sizeof have));
    pgn_device_profile profile;
    pgn_device_profile_default(d, &profile);
    if (profile.host_memory) {
        budget h = host_budget(m);
        if (h.known && (!b.known || h.bytes < b.bytes)) {
            b = h;
            char tail[sizeof b.what];
            snprintf(tail, sizeof tail, "%s", strstr(b.what, "has ") ? strstr(b.what, "has ") + 4 : b.what);
            snprintf(b.what, sizeof b.what, "device %.47s (host memory) has %.180s", d->id, tail);
        }
    }
    return b;
}

/* What holds a train job's memory on d: the host reference keeps everything in this process; a
 * device, in its memory. */
static budget job_budget(const pgn_device_info *d, const pgd_host_memory *m) {
    pgn_device_profile profile;
    pgn_device_profile_default(d, &profile);
    return profile.dev_class == PGN_CLASS_HOST ? host_budget(m) : device_budget(d, m);
}

/* ---- one job ---------------------------------------------------------------------------- */

static int admit_train(const pgn_job_spec *spec, const pgn_device_info *placed,
                       const pgd_host_memory *mem, pgn_error *err, json_t **extra) {
    if (spec->train.dist.ranks > 0 && pgd_launch_available(err)) return -1;
    pgn_memory_estimate m;
    pgn_job_memory_estimate(spec, &m);
    bool gpt = spec->train.model == PGN_MODEL_GPT;
    const char *model_field = gpt ? "model.d_model" : "model.layers";
    if (m.n_params > PGD_MAX_PARAMS)
        return refuse(err, extra, model_field, "max_params", (long long)PGD_MAX_PARAMS,
                      (long long)m.n_params, "%s: the model has %llu parameters (%s); the limit is %llu",
                      model_field, (unsigned long long)m.n_params,
                      gpt ? "embeddings, n_layer blocks of 12 d_model^2 + 13 d_model, at 256 characters"
                          : "sum over layers of in*out + out",
                      (unsigned long long)PGD_MAX_PARAMS);

    budget have = job_budget(placed, mem);
    if (!have.known || m.total <= have.bytes) return 0; /* one that does not say is not judged */
    /* Blame the part that weighs most: the model, the batch or the data. */
    double model = m.params + m.gradients + m.optimizer;
    const char *field = model >= m.activations && model >= m.dataset ? model_field
                        : m.activations >= m.dataset                 ? "batch_size"
                                                                     : "data";
    char total[32], p[32], g[32], o[32], a[32], d[32], ranks[128] = "";
    if (m.ranks_here > 1) {
        char c[32];
        snprintf(ranks, sizeof ranks, ", collectives' buffers %s; each of its %d ranks on this machine",
                 human_bytes(m.distributed, c, sizeof c), m.ranks_here);
    }
    refuse(err, extra, field, "device_memory", (long long)have.bytes, (long long)m.total,
           "%s: the job needs about %s of device memory (parameters %s, gradients %s, "
           "optimizer state %s, activations %s, dataset %s%s) but %s",
           field, human_bytes(m.total, total, sizeof total), human_bytes(m.params, p, sizeof p),
           human_bytes(m.gradients, g, sizeof g), human_bytes(m.optimizer, o, sizeof o),
           human_bytes(m.activations, a, sizeof a), human_bytes(m.dataset, d, sizeof d), ranks, have.what);
    json_object_set_new(*extra, "device", json_string(placed->id));
    json_object_set_new(*extra, "estimate",
                        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:i, s:I}", "params",
                                  (json_int_t)m.params, "gradients", (json_int_t)m.gradients,
                                  "optimizer", (json_int_t)m.optimizer, "activations",
                                  (json_int_t)m.activations, "dataset", (json_int_t)m.dataset,
                                  "distributed", (json_int_t)m.distributed, "ranks_here", m.ranks_here,
                                  "total", (json_int_t)m.total));
    return -1;
}

static json_t *inet_part_json(const pgn_inet_memory_part *p) {
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "nodes", (json_int_t)p->nodes,
                     "vars", (json_int_t)p->vars, "bags", (json_int_t)p->bags, "tables",
                     (json_int_t)p->tables, "growth", (json_int_t)p->growth, "book",
                     (json_int_t)p->book, "workers", (json_int_t)p->workers, "readback",
                     (json_int_t)p->readback, "total", (json_int_t)p->total);
}

/* One side of an inet job (its device buffers, or this process's part) against what holds it. */
static int admit_inet_part(const pgn_job_spec *spec, const pgn_device_info *placed,
                           const pgn_inet_memory *m, const pgn_inet_memory_part *part,
                           double need, const budget *have, pgn_error *err, json_t **extra) {
    if (!have->known || need <= have->bytes) return 0;
    char total[32], n[32], v[32], b[32], r[32];
    refuse(err, extra, "limits.max_nodes", "memory", (long long)have->bytes, (long long)need,
           "limits.max_nodes: %llu nodes may need up to %s (node heap %s, variable heap %s, "
           "redex bags %s, readback %s, and the rest) but %s; lower limits.max_nodes (the "
           "reducer never grows past it)",
           (unsigned long long)spec->inet.max_nodes, human_bytes(need, total, sizeof total),
           human_bytes((double)part->nodes, n, sizeof n), human_bytes((double)part->vars, v, sizeof v),
           human_bytes((double)part->bags, b, sizeof b), human_bytes((double)part->readback, r, sizeof r),
           have->what);
    json_object_set_new(*extra, "device", json_string(placed->id));
    json_object_set_new(*extra, "estimate",
                        json_pack("{s:o, s:o, s:I}", "device", inet_part_json(&m->device), "host",
                                  inet_part_json(&m->host), "total", (json_int_t)m->total));
    return -1;
}

static int admit_inet(const pgn_job_spec *spec, const pgn_device_info *placed,
                      const pgd_host_memory *mem, pgn_error *err, json_t **extra) {
    pgn_inet_memory m;
    if (pgn_inet_memory_estimate(&spec->inet, placed, &m, err) < 0) return -1;
    budget host = host_budget(mem);
    pgn_device_profile profile;
    pgn_device_profile_default(placed, &profile);
    if (profile.dev_class == PGN_CLASS_HOST)
        return admit_inet_part(spec, placed, &m, &m.host, (double)m.host.total, &host, err, extra);
    budget dev = device_budget(placed, mem);
    if (admit_inet_part(spec, placed, &m, &m.device, (double)m.device.total, &dev, err, extra) < 0)
        return -1;
    /* On a CPU device both parts are host memory. */
    double on_host = profile.host_memory ? (double)m.total : (double)m.host.total;
    return admit_inet_part(spec, placed, &m, &m.host, on_host, &host, err, extra);
}

int pgd_admit_job(const pgn_job_spec *spec, const pgn_device_info *placed,
                  const pgd_host_memory *mem, pgn_error *err, json_t **extra) {
    *extra = NULL;
    switch (spec->kind) {
    case PGN_JOB_TRAIN: return admit_train(spec, placed, mem, err, extra);
    case PGN_JOB_INET: return admit_inet(spec, placed, mem, err, extra);
    case PGN_JOB_BENCH: break; /* its suites' sizes are fixed and small */
    case PGN_JOB_GENERATE: break; /* one sequence of a model that trained on this machine */
    case PGN_JOB_SLEEP: break;    /* holds no memory */
    }
    return 0;
}

/* ---- several jobs on one device ----------------------------------------------------------- */

double pgd_job_bytes(const pgn_job_spec *spec, const pgn_device_info *placed) {
    pgn_device_profile profile;
    pgn_device_profile_default(placed, &profile);
    switch (spec->kind) {
    case PGN_JOB_TRAIN: {
        pgn_memory_estimate m;
        pgn_job_memory_estimate(spec, &m);
        return m.total;
    }
    case PGN_JOB_INET: {
        pgn_inet_memory m;
        pgn_error err;
        if (pgn_inet_memory_estimate(&spec->inet, placed, &m, &err) < 0) return 0;
        if (profile.dev_class == PGN_CLASS_HOST) return (double)m.host.total;
        return profile.host_memory ? (double)m.total : (double)m.device.total;
    }
    case PGN_JOB_BENCH:
    case PGN_JOB_GENERATE:
    case PGN_JOB_SLEEP: break; /* what pgd_admit_job does not judge either */
    }
    return 0;
}

double pgd_device_bytes(const pgn_device_info *d) {
    pgd_host_memory mem;
    if (pgd_host_memory_read(&mem) < 0) mem = (pgd_host_memory){0};
    budget b = job_budget(d, &mem);
    return b.known ? b.bytes : 0;
}
