/* paragon.h: the public API of libparagon, the engine.
 * The engine owns OpenCL devices, tensors, models, datasets, the training loop and job specs.
 * It knows nothing of HTTP or SQLite: callers hand it a validated spec, an opened device and
 * hooks, and get back a JSON result or an error that names what went wrong. */
#ifndef PARAGON_H
#define PARAGON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PGN_VERSION "0.1.0"

/* ---- errors ----------------------------------------------------------------------------- */

/* Every error code, as its enum, its name in JSON and logs, and the HTTP status paragond answers
 * a request that fails with it: the one table (a failed job keeps its code in its stored error
 * object, whatever the status). A new code is one line here. */
#define PGN_ERROR_CODES(X)                                                                      \
    X(NONE, "", 200)                          /* no error (a cleared pgn_error) */            \
    X(INVALID_SPEC, "invalid_spec", 400)      /* a spec field is wrong: field names it */     \
    X(INVALID_JSON, "invalid_json", 400)      /* a body or spec that is not JSON */           \
    X(INVALID_PARAMETER, "invalid_parameter", 400) /* a query argument */                      \
    X(INVALID_PROGRAM, "invalid_program", 400) /* an inet program that does not parse */      \
    X(INVALID_ROW, "invalid_row", 400)        /* a benchmark row the store refuses */         \
    X(LIMIT_EXCEEDED, "limit_exceeded", 400)  /* a request or job limit: "limit" names it */  \
    X(DATA, "data", 400)                      /* a dataset file missing or malformed */       \
    X(UNAUTHORIZED, "unauthorized", 401)                                                      \
    X(NOT_FOUND, "not_found", 404)                                                            \
    X(NO_CHECKPOINT, "no_checkpoint", 404)                                                    \
    X(METHOD_NOT_ALLOWED, "method_not_allowed", 405)                                          \
    X(CONFLICT, "conflict", 409)              /* the job's state does not allow it */         \
    X(CANCELLED, "cancelled", 409)            /* stopped by a cancel or a shutdown */         \
    X(LOCKED, "locked", 409)                  /* the database has its paragond already */     \
    X(PRECONDITION_FAILED, "precondition_failed", 412) /* If-None-Match: * on what exists */  \
    X(TOO_LARGE, "too_large", 413)                                                            \
    X(UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", 415)                                  \
    X(QUEUE_FULL, "queue_full", 429)                                                          \
    X(INTERNAL, "internal", 500)                                                              \
    X(OUT_OF_MEMORY, "out_of_memory", 500)                                                    \
    X(DEVICE, "device", 500)                  /* an OpenCL call failed */                     \
    X(KERNEL_BUILD, "kernel_build", 500)      /* the kernels did not compile: the log says */ \
    X(CHECKPOINT, "checkpoint", 500)          /* a checkpoint that cannot be trusted */       \
    X(CRASHED, "crashed", 500)                /* paragond ended while it ran, --max-attempts times */ \
    X(IO, "io", 500)                                                                          \
    X(COMM, "comm", 500)                      /* the ranks of a distributed job lost each other */ \
    X(STORE, "store", 500)                                                                    \
    X(AUTH, "auth", 500)                      /* the token file cannot be used */             \
    X(HTTP, "http", 500)                      /* the listener cannot start */                 \
    X(DATA_DIR, "data_dir", 500)                                                              \
    X(NO_DEVICE, "no_device", 503)                                                            \
    X(STORE_UNAVAILABLE, "store_unavailable", 503) /* the store refuses writes for now */      \
    X(TOO_MANY_STREAMS, "too_many_streams", 503)

typedef enum {
#define PGN_ERROR_ENUM(id, name, status) PGN_E_##id,
    PGN_ERROR_CODES(PGN_ERROR_ENUM)
#undef PGN_ERROR_ENUM
        PGN_E_COUNT
} pgn_error_code;

/* The code's name ("invalid_spec"; "internal" for one out of range), its HTTP status, and a
 * name back to the code (-1 for a name not in the table). */
const char *pgn_error_code_name(pgn_error_code code);
int pgn_error_code_status(pgn_error_code code);
int pgn_error_code_parse(const char *name, pgn_error_code *out);

/* Every fallible call takes a pgn_error* and returns 0 on success, -1 on failure.
 * code: one of the table above; field: JSON path of the offending spec field
 * ("model.layers[2]") or ""; message: a sentence for people, which already names the field
 * when there is one. */
typedef struct pgn_error {
    pgn_error_code code;
    char field[128];
    char message[2048];
} pgn_error;

void pgn_error_set(pgn_error *err, pgn_error_code code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void pgn_error_clear(pgn_error *err);

/* ---- JSON helpers ------------------------------------------------------------------------ */

/* A JSON real holding the shortest decimal that reads back as f (0.1f prints as 0.1). */
json_t *pgn_json_real_f32(float f);

/* Dumps compactly with 15 significant digits for reals, so 0.1 prints as 0.1, not
 * 0.10000000000000001: jansson's text for JSON_COMPACT | JSON_ENCODE_ANY |
 * JSON_REAL_PRECISION(15), written about ten times faster (json_text.c). NULL when value holds a
 * string that is not UTF-8, or memory runs out. Caller frees the string. */
char *pgn_json_dumps(const json_t *value);
/* text, one JSON value (whitespace around it), read as json_loads(text, JSON_DECODE_ANY, NULL)
 * reads it, the same value or NULL where jansson gives none, three times faster: a GET's stored
 * columns (result, tags, error) went through jansson's reader at 8% of its CPU. The rare parts
 * (\u escapes, integers past int64, nesting past 2048, a locale's decimal comma) are jansson's. */
json_t *pgn_json_loads(const char *text);

/* Reads a whole file into a malloc'd buffer (caller frees) with a NUL after *len bytes;
 * NULL with errno set on failure. */
char *pgn_read_file(const char *path, size_t *len);

/* Writes head then data (either may be empty) to path through a temporary name beside it,
 * synced and renamed: a reader sees the old file or the new one, whole. */
int pgn_write_file_atomic(const char *path, const void *head, size_t head_len, const void *data, size_t data_len,
                          pgn_error *err);

/* mkdir -p path (0755); what names the directory in the error ("checkpoint directory"). */
int pgn_make_dirs(const char *path, const char *what, pgn_error *err);

/* A string built piece by piece (text.c). Start from (pgn_text){0}; a failed allocation sets oom
 * and later calls do nothing. pgn_text_take returns the malloc'd string (an empty one for
 * nothing put) and resets t, or NULL after an allocation failed. */
typedef struct pgn_text {
    char *data;
    size_t len, cap;
    bool oom;
} pgn_text;
void pgn_text_put(pgn_text *t, const char *s, size_t n);
void pgn_text_puts(pgn_text *t, const char *s);
void pgn_text_printf(pgn_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *pgn_text_take(pgn_text *t);
/* Appends s with every control character (below 0x20, and 0x7f: newlines and escape sequences
 * too) written as \xNN, so text that came from a client cannot forge log lines or reach a
 * terminal as commands. pgn_text_visible returns the same as a malloc'd string (NULL: no memory). */
void pgn_text_put_visible(pgn_text *t, const char *s);
char *pgn_text_visible(const char *s);

/* pgn_json_dumps's text written value by value, with no tree built (json_text.c): a GET's job object
 * built as jansson values, printed and freed cost three times what writing it does. The calls
 * describe a value as a tree would (pgn_jw_key before each member's value); the writer puts the
 * commas. Start from (pgn_json_writer){0}; pgn_jw_take gives the malloc'd text and resets w, or
 * NULL when memory ran out, a string was not UTF-8, or the containers were not closed in order.
 * Nesting deeper than PGN_JSON_WRITER_DEPTH fails too (pgn_jw_value's own values may nest as
 * deep as jansson's). */
#define PGN_JSON_WRITER_DEPTH 32
typedef struct pgn_json_writer {
    pgn_text text;
    int depth;         /* open containers */
    bool after_key;    /* a key was written: its value comes next */
    bool bad;          /* a call out of order, a string not UTF-8 */
    bool not_first[PGN_JSON_WRITER_DEPTH]; /* the container at each depth has an element */
    bool in_object[PGN_JSON_WRITER_DEPTH]; /* it is an object (its members need keys) */
} pgn_json_writer;
void pgn_jw_object(pgn_json_writer *w);
void pgn_jw_array(pgn_json_writer *w);
void pgn_jw_end(pgn_json_writer *w); /* closes the innermost object or array */
void pgn_jw_key(pgn_json_writer *w, const char *key);
void pgn_jw_string(pgn_json_writer *w, const char *s);
void pgn_jw_int(pgn_json_writer *w, int64_t v);
void pgn_jw_real(pgn_json_writer *w, double v);
void pgn_jw_bool(pgn_json_writer *w, bool v);
void pgn_jw_null(pgn_json_writer *w);
/* A jansson value as pgn_json_dumps writes it; NULL writes null. */
void pgn_jw_value(pgn_json_writer *w, const json_t *v);
/* n bytes of JSON text, one value, as they are (a stored spec; the caller vouches for them). */
void pgn_jw_raw(pgn_json_writer *w, const char *text, size_t n);
char *pgn_jw_take(pgn_json_writer *w);

/* ---- time ------------------------------------------------------------------------------- */

/* The monotonic clock everything is timed by, in nanoseconds and in seconds. */
int64_t pgn_now_ns(void);
double pgn_now_s(void);
/* The wall clock's now in UTC, ISO 8601 ("2026-11-27T23:40:01Z"), for records that say when. */
void pgn_utc_now(char *out, size_t size);
/* Milliseconds since the epoch of a UTC time as the store writes it ("2024-05-01T12:00:00.123Z");
 * false if text is not one (the server's store and the CLI read job times with it). */
bool pgn_utc_ms(const char *text, int64_t *ms);
/* The median of n values (sorts v in place); 0 for n == 0. */
double pgn_median(double *v, size_t n);

/* ---- SHA-256 (sha256.c): weights digests, checkpoints, the server's session cookie ------ */

typedef struct pgn_sha256 {
    uint32_t state[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t fill;
} pgn_sha256;

void pgn_sha256_init(pgn_sha256 *s);
void pgn_sha256_update(pgn_sha256 *s, const void *data, size_t len);
void pgn_sha256_final(pgn_sha256 *s, unsigned char out[32]);
void pgn_sha256_hex(const unsigned char digest[32], char out[65]);
/* The SHA-256 of len bytes at data, as 64 hex digits: the one-shot digest. */
void pgn_sha256_hex_of(const void *data, size_t len, char out[65]);

/* ---- embedded files (scripts/embed.py) ---------------------------------------------------
 * Files compiled into a binary: a table of them ends with an entry whose name is NULL; data is
 * NUL-terminated past size. The engine's tables are its kernels and the example programs; the
 * server has its own (web files, schema). */
typedef struct pgn_embedded {
    const char *name; /* base name of the source file, e.g. "tensor.cl" */
    const unsigned char *data;
    size_t size;
} pgn_embedded;

/* Finds an entry by name in a table; NULL when absent. */
const pgn_embedded *pgn_embedded_find(const pgn_embedded *table, const char *name);

/* ---- devices ---------------------------------------------------------------------------- */

typedef enum {
    PGN_DEVICE_HOST, /* the pseudo-device that runs the C reference */
    PGN_DEVICE_CPU,
    PGN_DEVICE_GPU,
    PGN_DEVICE_ACCELERATOR,
    PGN_DEVICE_OTHER,
} pgn_device_type;

typedef struct pgn_device_info {
    char id[48];               /* stable across restarts: "host" or "<type>-<8 hex of a hash>" */
    char name[256];
    char vendor[128];
    char platform[128];
    char driver_version[64];
    char opencl_c_version[64];
    pgn_device_type type;
    unsigned compute_units;
    uint64_t global_mem_bytes;
    unsigned max_clock_mhz;
    uint64_t local_mem_bytes;   /* CL_DEVICE_LOCAL_MEM_SIZE: what a work-group may share */
    unsigned max_work_group;    /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
} pgn_device_info;

const char *pgn_device_type_name(pgn_device_type type); /* "host", "cpu", "gpu", ... */

/* Enumerates every OpenCL device of every platform (not the host pseudo-device).
 * *out is malloc'd (caller frees); zero devices is not an error here: count is 0. */
int pgn_devices_list(pgn_device_info **out, size_t *count, pgn_error *err);

/* The host pseudo-device's description. */
void pgn_device_info_host(pgn_device_info *out);

/* Resolves a device request against a list: "host", "cpu", "gpu" (the first of that type),
 * "auto" (first gpu, else first cpu, else first device), or an exact id. */
int pgn_device_select(const char *want, const pgn_device_info *list, size_t count,
                      pgn_device_info *out, pgn_error *err);

/* JSON object with id, name, vendor, platform, type, compute_units, global_mem_bytes,
 * max_clock_mhz, local_mem_bytes, max_work_group, opencl_c_version, driver_version. New
 * reference. */
json_t *pgn_device_info_json(const pgn_device_info *info);

/* The inverse of pgn_device_info_json (what another node of a cluster registered): id and type
 * are required; a field missing or of the wrong JSON type is left zero. -1 when j is not such
 * an object. */
int pgn_device_info_from_json(const json_t *j, pgn_device_info *out);

/* JSON array of {"name","version","vendor"} for each OpenCL platform. New reference. */
json_t *pgn_opencl_platforms_json(void);

/* ---- device profiles (engine/profile.c; docs/architecture.md, "Device profiles") ---------
 * Every per-device choice in one typed place: which kernel family each group of ops runs (cpu:
 * shaped for pocl, one work-item per register tile or row; gpu: work-groups sharing local
 * memory), the family's parameters, and where each value came from. Built from the device's
 * type and limits, a stored tuning and the overrides (PARAGON_KERNELS, --kernels); nothing else
 * in the engine, the server or the CLI tests a device's type. */
typedef enum { PGN_FAMILY_CPU, PGN_FAMILY_GPU, PGN_FAMILY_COUNT } pgn_kernel_family;
typedef enum { PGN_OPS_GEMM, PGN_OPS_ROWS, PGN_OPS_INET, PGN_OPS_COUNT } pgn_ops_group;
typedef enum {
    PGN_FROM_DEFAULT,  /* the device's type and limits */
    PGN_FROM_TUNING,   /* a calibration measured on this device */
    PGN_FROM_OVERRIDE, /* PARAGON_KERNELS / --kernels, or a caller's setting */
} pgn_profile_source;
/* What a device is, for what its defaults follow. */
typedef enum { PGN_CLASS_HOST, PGN_CLASS_CPU, PGN_CLASS_GPU } pgn_device_class;

typedef struct pgn_device_profile {
    pgn_device_class dev_class;
    int auto_rank;    /* "auto" takes the first device of the lowest rank: a GPU, then a CPU, then others */
    bool host_memory; /* its global memory is the host's (a CPU device): admission counts it there */
    bool coherent;    /* a CPU's memory model (coherent caches, ordered stores): -D PGN_DEVICE_CPU */
    pgn_kernel_family family[PGN_OPS_COUNT];
    pgn_profile_source family_from[PGN_OPS_COUNT];
    /* gemm: the shape of its family (pgn_gemm_tile_name: a cpu register tile, a gpu work-group block) */
    int gemm_tile;
    pgn_profile_source gemm_tile_from;
    double gemm_gflops; /* what the tuning measured for it (GEMM N=1024; 0: not measured) */
    /* rows: the work-group size of row ops (0: the OpenCL runtime's choice) */
    unsigned row_group;
    pgn_profile_source row_group_from;
    /* inet: the reducer's workers (work-items), work-group size and first launch's budget */
    unsigned inet_workers;
    unsigned inet_local;
    unsigned inet_local_slots; /* the gpu family's local net: slots of each heap a group holds */
    uint64_t inet_first_budget;
    pgn_profile_source inet_from;
} pgn_device_profile;

const char *pgn_kernel_family_name(pgn_kernel_family f); /* "cpu", "gpu" */
const char *pgn_ops_group_name(pgn_ops_group g);         /* "gemm", "rows", "inet" */
const char *pgn_profile_source_name(pgn_profile_source s); /* "default", "tuning", "override" */
/* A device's profile from its type and limits alone: what the tunings and overrides start from,
 * and what estimates made without opening it use (the inet workers, the cost model's class). */
void pgn_device_profile_default(const pgn_device_info *info, pgn_device_profile *out);
/* The profile of a device from its description, with the kernel-family override kernels
 * ("auto", "cpu", "gpu"; NULL: $PARAGON_KERNELS, else auto): each group of ops that has kernels
 * of that family runs it, the others keep cpu. A family no group has is an error (code
 * "device") naming the device and the reason. */
int pgn_device_profile_of(const pgn_device_info *info, const char *kernels, pgn_device_profile *out,
                          pgn_error *err);
/* A tuning: what a calibration chose for a device's family, valid for its driver and this
 * build's kernels (pgn_kernels_hash): a device is tuned again when either changes. Stored by
 * paragond in its database (device_tunings) and by the CLI in <data-dir>/tunings.json. */
typedef struct pgn_device_tuning {
    char device_id[48];
    char driver_version[64];
    char kernels_hash[65];
    pgn_kernel_family family;
    int gemm_tile;   /* the family's GEMM shape (pgn_gemm_tile_name) */
    double gflops;   /* the tile's figure when measured (GEMM N=1024) */
    bool too_slow;   /* the device could not be calibrated within the budget: its type's defaults */
    char measured_at[32]; /* UTC, ISO 8601 */
} pgn_device_tuning;

/* The CLI's record of tunings, a JSON array in path (<data-dir>/tunings.json): the one of
 * device_id's family (1; 0 for none; -1 on an error), fitting or not (pgn_device_tuning_fits);
 * and t put in it, replacing that device's record for its family (written atomically). */
int pgn_tunings_file_find(const char *path, const char *device_id, pgn_kernel_family family, pgn_device_tuning *out,
                          pgn_error *err);
int pgn_tunings_file_put(const char *path, const pgn_device_tuning *t, pgn_error *err);

/* SHA-256 (hex) of the kernel sources built into this binary. */
const char *pgn_kernels_hash(void);
/* Whether t was made for this device, driver, family and these kernels. */
bool pgn_device_tuning_fits(const pgn_device_tuning *t, const pgn_device_info *info, pgn_kernel_family family);
/* Sets what t chose in the profile (from "tuning"); a too-slow tuning keeps the defaults. */
void pgn_device_profile_tune(pgn_device_profile *p, const pgn_device_tuning *t);
/* The tuning as JSON ({"device_id", "driver_version", "kernels_hash", "family", "params":
 * {"gemm_tile"}, "figure": {"gflops"}, "too_slow", "measured_at"}) and back (code "invalid_spec"
 * naming the field for one that is not). */
json_t *pgn_device_tuning_json(const pgn_device_tuning *t);
int pgn_device_tuning_parse(const json_t *j, pgn_device_tuning *t, pgn_error *err);

/* {"class", "families": {"gemm": {"family", "from"}, ..}, "gemm": {"tile", "from"}, "rows":
 * {"group", "from"}, "inet": {"workers", "local", "first_budget", "from"}}. New reference. */
json_t *pgn_device_profile_json(const pgn_device_profile *p);

/* An opened device: context, in-order queue and the kernel programs built for it.
 * Opening builds the embedded kernel sources; a build failure returns code "kernel_build" with
 * the compiler's log in the message. One pgn_device is used by one thread at a time. */
typedef struct pgn_device pgn_device;

/* Opens with the profile pgn_device_profile_of gives (the override from $PARAGON_KERNELS). */
int pgn_device_open(const pgn_device_info *info, pgn_device **out, pgn_error *err);
/* The same for a run on any device: the host pseudo-device runs with none (*out NULL). */
int pgn_device_open_for_run(const pgn_device_info *info, pgn_device **out, pgn_error *err);
/* The one device a request names (pgn_device_select over pgn_devices_list), described in *chosen
 * and opened for a run: the sequence the CLI's commands and the ranks use (device_pick.c). */
int pgn_device_open_named(const char *want, pgn_device_info *chosen, pgn_device **out, pgn_error *err);
/* The devices a request names, for a command that runs on each of them (paragon bench): "all" is
 * every OpenCL device (none is not an error here: *count is 0), any other request the one device
 * pgn_device_select picks. *out is malloc'd (caller frees); each opens with
 * pgn_device_open_for_run. */
int pgn_devices_named(const char *want, pgn_device_info **out, size_t *count, pgn_error *err);
/* What the device's close will wait for, in words (a build of a program's own kernel still
 * running: inet_build.c), or NULL when it closes at once. */
const char *pgn_device_pending(const pgn_device *dev);
void pgn_device_close(pgn_device *dev);
const pgn_device_info *pgn_device_get_info(const pgn_device *dev);
const pgn_device_profile *pgn_device_get_profile(const pgn_device *dev);
/* Kernels queued on dev since it opened (0 for the host): what a training step's launches per
 * step count (bench-gpt, bench-train). */
uint64_t pgn_device_launches(const pgn_device *dev);

/* ---- job specs -------------------------------------------------------------------------- */

typedef enum { PGN_JOB_TRAIN, PGN_JOB_INET, PGN_JOB_BENCH, PGN_JOB_GENERATE, PGN_JOB_SLEEP } pgn_job_kind;
/* Every kind, in the order messages list them ("train", "inet", "bench", "generate", "sleep"). */
#define PGN_JOB_KINDS 5
extern const pgn_job_kind pgn_job_kinds[PGN_JOB_KINDS];
/* The kinds as messages list them: "train, inet, bench, generate or sleep", quoted (with '"')
 * or not. */
const char *pgn_job_kinds_text(bool quoted);

/* Values are the kernels' PGN_ACT_CODE_* (kernels/pgn_ops.h); engine/tensor/ops.c checks that at
 * compile time. */
typedef enum {
    PGN_ACT_NONE = 0,
    PGN_ACT_RELU = 1,
    PGN_ACT_GELU = 2,
    PGN_ACT_TANH = 3,
    PGN_ACT_SIGMOID = 4
} pgn_activation;
typedef enum { PGN_LOSS_CROSS_ENTROPY, PGN_LOSS_MSE } pgn_loss;
typedef enum { PGN_INIT_PYTORCH, PGN_INIT_KAIMING, PGN_INIT_XAVIER, PGN_INIT_ZEROS } pgn_init;
typedef enum { PGN_SCHEDULE_CONSTANT, PGN_SCHEDULE_COSINE } pgn_schedule;
typedef enum {
    PGN_DATA_XOR,
    PGN_DATA_SPIRAL,
    PGN_DATA_FASHION_MNIST,
    PGN_DATA_IDX,
    PGN_DATA_TEXT,     /* a text file under the datasets directory: characters are tokens */
    PGN_DATA_FORTUNES, /* the text of Debian's fortunes package */
} pgn_data_source;
typedef enum { PGN_MODEL_MLP, PGN_MODEL_GPT } pgn_model_type;

#define PGN_PATH_MAX 256

/* The "data" object of a train spec (parsed in data.c). */
typedef struct pgn_data_spec {
    pgn_data_source source;
    /* idx: four files, relative to the data dir (no absolute paths, no ".."); .gz is read
     * through zlib */
    char train_images[PGN_PATH_MAX], train_labels[PGN_PATH_MAX];
    char test_images[PGN_PATH_MAX], test_labels[PGN_PATH_MAX];
    int samples; /* spiral: points per class */
    int classes; /* spiral: classes (arms) */
    char path[PGN_PATH_MAX]; /* text: relative to the datasets directory, like idx paths */
    int train_samples, test_samples; /* fashion-mnist, idx: the first N of each set (0: all) */
} pgn_data_spec;
typedef enum { PGN_OPT_SGD, PGN_OPT_ADAM, PGN_OPT_ADAMW } pgn_optimizer_type;

typedef struct pgn_optimizer_spec {
    pgn_optimizer_type type;
    float lr;
    float momentum;     /* sgd */
    bool nesterov;      /* sgd */
    float weight_decay; /* sgd, adam: L2 added to the gradient; adamw: decoupled */
    float beta1, beta2, eps; /* adam, adamw */
    float clip_norm;    /* clip gradients to this global L2 norm; 0: off */
    pgn_schedule schedule;
    int warmup_steps;   /* linear warm-up from lr/warmup_steps to lr */
    float min_lr;       /* cosine decays to this at the last step */
} pgn_optimizer_spec;

#define PGN_MAX_LAYERS 16

/* A GPT-2-style character model: token and learned position embeddings, n_layer pre-LayerNorm
 * blocks of causal multi-head self-attention and a GELU MLP (4 d_model wide), a final
 * LayerNorm and an output head (the token embedding itself when tie_embeddings). */
typedef struct pgn_gpt_spec {
    int n_layer, n_head, d_model;
    int context; /* tokens a sequence holds: the position table's rows */
    bool tie_embeddings;
} pgn_gpt_spec;

typedef enum { PGN_DIST_DDP, PGN_DIST_DILOCO } pgn_dist_algorithm;

#define PGN_DIST_MAX_RANKS 256
#define PGN_DIST_MAX_HOSTS 64
#define PGN_DIST_HOST_MAX 64 /* "name" or "name:slots", with its terminating NUL */

/* The "distributed" object of a train spec: the job runs as ranks processes under MPI
 * (docs/distributed.md). ddp all-reduces the gradients every step; diloco lets each rank take
 * inner_steps steps of the spec's optimizer on its own shard, then applies the mean of the
 * ranks' parameter deltas with an outer SGD (outer_lr, outer_momentum, nesterov). */
typedef struct pgn_dist_spec {
    int ranks; /* 0: not distributed */
    pgn_dist_algorithm algorithm;
    int inner_steps; /* diloco: H */
    float outer_lr, outer_momentum;
    bool nesterov;
    int n_hosts; /* 0: this machine */
    char hosts[PGN_DIST_MAX_HOSTS][PGN_DIST_HOST_MAX];
} pgn_dist_spec;

typedef struct pgn_train_spec {
    pgn_model_type model;
    int layers[PGN_MAX_LAYERS]; /* mlp: widths, input first, classes last */
    int n_layers;
    pgn_activation activation; /* mlp: hidden layers; the output layer is linear */
    float dropout;             /* while training; 0: none. mlp: after each hidden activation;
                                  gpt: on the embeddings and each residual branch */
    pgn_loss loss;             /* mlp */
    pgn_init init;             /* mlp; a gpt is initialised as GPT-2 (normal, std 0.02) */
    pgn_gpt_spec gpt;
    pgn_data_spec data;
    pgn_optimizer_spec optimizer;
    int batch_size; /* mlp: samples; gpt: sequences of context tokens */
    int epochs;     /* mlp: passes over the training set */
    int checkpoint_every; /* mlp: epochs between checkpoints; gpt: steps; 0: only the last */
    int steps;        /* gpt: optimizer steps of the run */
    int eval_every;   /* gpt: steps between validation losses */
    int log_every;    /* steps between training-loss metrics (an MLP's step_loss; 0: none) */
    int eval_windows; /* gpt: fixed validation windows the validation loss is taken over */
    pgn_dist_spec dist; /* ranks > 0 makes it a distributed job */
} pgn_train_spec;

#define PGN_INET_MAX_FILES 16

/* An inet job: an HVM2-format program and the limits that stop a runaway one. */
typedef struct pgn_inet_spec {
    char *program; /* owned: pgn_spec_free releases it; HVM2 text (a pgl source's compiled net) */
    char *source;  /* owned: the pgl source ("language": "pgl"), NULL for an HVM2 program */
    /* files the program finds in its directory when it runs (spec "files": name -> text);
     * names and contents owned */
    int n_files;
    char *file_names[PGN_INET_MAX_FILES], *file_texts[PGN_INET_MAX_FILES];
    uint64_t max_interactions, max_nodes;
    double timeout_s;
    int work_items; /* OpenCL reducer work-items; 0: one per compute unit */
} pgn_inet_spec;

#define PGN_BENCH_MAX_CASES 32

/* A bench job: one suite (or "all") on one device. */
typedef struct pgn_bench_spec {
    char suite[32];                       /* a suite name (pgn_bench_suites) or "all" */
    char cases[PGN_BENCH_MAX_CASES][32];  /* only these case ids; none: every case */
    int n_cases;
    int repeats;                          /* timed repeats after warm-up */
} pgn_bench_spec;

/* A generate job: text from a gpt checkpoint, one character at a time. */
typedef struct pgn_generate_spec {
    char *prompt;      /* owned: pgn_spec_free releases it; the model's characters, 1..context */
    int64_t job;       /* the train job whose checkpoint it reads (paragond; 0 in the CLI) */
    int max_tokens;    /* characters to generate */
    float temperature; /* logits / temperature before the softmax; 0: always the likeliest */
    int top_k;         /* sample among the k likeliest only; 0: all */
    uint64_t seed;     /* the draws come from the counter RNG: the same text on every device */
    bool stream;       /* paragond: answer as Server-Sent Events, a token each */
} pgn_generate_spec;

/* A sleep job: holds its device for a time without computing (for trying out the queue,
 * placement and a cluster: bench-cluster's jobs of fixed length). */
typedef struct pgn_sleep_spec {
    double seconds; /* 0..PGN_SLEEP_MAX_SECONDS */
} pgn_sleep_spec;
#define PGN_SLEEP_MAX_SECONDS 86400

typedef struct pgn_job_spec {
    pgn_job_kind kind;
    char name[128];
    char device[64]; /* "auto", "cpu", "gpu", "host" or a device id; bench also "all" */
    uint64_t seed;
    pgn_train_spec train;
    pgn_inet_spec inet;
    pgn_bench_spec bench;
    pgn_generate_spec generate;
    pgn_sleep_spec sleep;
} pgn_job_spec;

/* Parses and validates the "data" object of a train spec (path prefix "data"). */
int pgn_data_spec_parse(const json_t *data, pgn_data_spec *out, pgn_error *err);
/* The data spec with defaults filled in. New reference. */
json_t *pgn_data_spec_to_json(const pgn_data_spec *data);
/* Input features and classes of a source when known without reading files (1), else 0. */
int pgn_data_shape(const pgn_data_spec *data, int *features, int *classes);

/* Validates a spec. Unknown fields, wrong types and impossible shapes are errors with code
 * "invalid_spec" and field set to the JSON path. Defaults fill what the spec leaves out. */
int pgn_spec_parse(const json_t *root, pgn_job_spec *out, pgn_error *err);
/* The same for a spec validated when it was submitted (paragond's stored specs): a pgl program
 * is kept as source (inet.program NULL) and compiled by the run, inside its time limit and
 * stopped by should_stop (pgn_inet_job_run). */
int pgn_spec_parse_stored(const json_t *root, pgn_job_spec *out, pgn_error *err);

/* Releases what a parsed spec owns (an inet program); safe on a spec that failed to parse. */
void pgn_spec_free(pgn_job_spec *spec);

/* Parses JSON text then validates it; a syntax error names line and column. */
int pgn_spec_parse_text(const char *text, size_t len, pgn_job_spec *out, pgn_error *err);

/* The HVM2 text of a pgl program (docs/language.md; engine/lang/), the caller's to free: its
 * definitions and the switch branches lifted from them, one per line, the same text for the same
 * source; NULL with err (PGN_E_INVALID_PROGRAM, "line L, column C: ...") on a compile error. */
char *pgn_pgl_compile(const char *src, size_t len, pgn_error *err);
/* What may end a compile early: should_stop(ctx) (NULL: nothing), asked as it goes, ends it with
 * PGN_E_CANCELLED; a deadline on pgn_now_s's clock (0: none) with PGN_E_LIMIT_EXCEEDED on the
 * field limits.timeout_s (a job's compile counts toward its time limit). */
typedef struct {
    bool (*should_stop)(void *ctx);
    void *ctx;
    double deadline_s;
} pgn_pgl_stop;
char *pgn_pgl_compile_until(const char *src, size_t len, const pgn_pgl_stop *stop, pgn_error *err);
/* A pgl program's normal form (HVM2 text, as the reducers print it) in pgl's syntax: a number,
 * [a, b] for a List, (a, b) for a tuple, Name(a, b) for a constructor of the program's types
 * (caller frees); NULL when it is none of those (a function, say) or src does not compile. */
char *pgn_pgl_readback(const char *src, size_t len, const char *normal_form);

/* The spec with defaults filled in, as stored with a job. New reference. */
json_t *pgn_spec_to_json(const pgn_job_spec *spec);

const char *pgn_job_kind_name(pgn_job_kind kind);
/* "train", "inet", "bench" to the kind; -1 for anything else. */
int pgn_job_kind_parse(const char *name, pgn_job_kind *out);

/* ---- running jobs ----------------------------------------------------------------------- */

struct pgn_measured_rates; /* the cost model's section, below */

/* Hooks the engine calls while a job runs, from the thread that called pgn_job_run.
 * Any hook may be NULL. should_stop is polled at every step boundary; returning true makes
 * pgn_job_run fail with code "cancelled". */
typedef struct pgn_run_hooks {
    void *ctx;
    void (*on_metric)(void *ctx, const char *name, int64_t step, double value);
    void (*on_log)(void *ctx, const char *line);
    void (*on_progress)(void *ctx, double fraction); /* 0..1 */
    bool (*should_stop)(void *ctx);
    /* generate: each generated character (its UTF-8 bytes, len of them) as it comes; index from 0 */
    void (*on_text)(void *ctx, int64_t index, const char *text, size_t len);
    /* bench: what a run that succeeded measured of its device's rates, for the cost model */
    void (*on_rates)(void *ctx, const struct pgn_measured_rates *rates);
    /* train: asked before each checkpoint is written; false: the run no longer holds its job
     * (a service's lease on it ran out: another run may own the job's files now), so nothing is
     * written and the run stops. NULL: always written. */
    bool (*may_commit)(void *ctx);
} pgn_run_hooks;

/* A log line through h->on_log, formatted (at most 1023 bytes); nothing when h or on_log is NULL. */
void pgn_hooks_log(const pgn_run_hooks *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A metric through h->on_metric; nothing when h or on_metric is NULL. */
void pgn_hooks_metric(const pgn_run_hooks *h, const char *name, int64_t step, double value);

/* The ranks of a distributed train job, as the engine sees them: the rank program binds the
 * calls to MPI (rank/), a test may bind them to anything. A failing call fails the run; the
 * other ranks are then stuck in their next call, so the binding must end them (MPI_Abort). */
typedef struct pgn_comm {
    int rank, size;
    void *ctx;
    /* Every rank's bytes bytes, in rank order, into recv (size * bytes), on every rank. */
    int (*allgather)(struct pgn_comm *c, const void *send, size_t bytes, void *recv, pgn_error *err);
    int (*barrier)(struct pgn_comm *c, pgn_error *err);
    /* Kept by the engine: collectives called, payload bytes this rank sent to the others,
     * seconds spent moving them, and seconds spent waiting for the slowest rank to arrive (a
     * barrier before each collective that moves weights or gradients tells the two apart). */
    int64_t collectives;
    double bytes_sent, seconds, wait_seconds;
} pgn_comm;

/* What an inet program's IO may do (HVM2's IO/Call protocol, engine/inet/inet_io.c). */
typedef enum {
    PGN_INET_IO_NONE,     /* nothing: the normal form is the program's first IO/Call */
    PGN_INET_IO_PROCESS,  /* `hvm run-c`: the process's standard streams, files from the working directory */
    PGN_INET_IO_CONFINED, /* stdout and stderr kept (the log and the result's "output"), stdin empty,
                             files inside io_dir and nowhere else */
} pgn_inet_io_mode;

/* Where a job finds its inputs and keeps its files. */
typedef struct pgn_run_options {
    const char *data_dir;       /* the data directory (NULL: "data"); datasets are read from
                                   its PGN_DATASETS_SUBDIR: "idx" paths are relative to that and
                                   confined to it, and a fashion-mnist/ copy there wins */
    const char *checkpoint_dir; /* train: checkpoint.safetensors is written here every
                                   checkpoint_every epochs and at the end; NULL: nowhere */
    bool resume;                /* train: continue from checkpoint_dir's checkpoint if any */
    bool checkpoint_on_stop;    /* train: when should_stop stops the run, first checkpoint the
                                   exact position (mid-epoch too), so a resume repeats no step */
    bool profile;               /* train: time every graph node; adds "profile" to the result */
    const char *source_checkpoint; /* generate: the gpt checkpoint file it reads */
    pgn_comm *comm;             /* train with "distributed": this process's rank (required) */
    pgn_inet_io_mode inet_io;   /* inet: what IO does (NONE by default) */
    const char *io_dir;         /* inet, CONFINED: the program's files (made when missing; the
                                   spec's "files" are written there first) */
    size_t io_output_max;       /* inet, CONFINED: the output kept, in bytes (0: 64 KiB) */
} pgn_run_options;

#define PGN_CHECKPOINT_FILE "checkpoint.safetensors"
/* Where datasets live under a data directory: its own folder, so that the paths a spec may name
 * cannot reach what else the data directory holds (paragond's API token, job files). */
#define PGN_DATASETS_SUBDIR "datasets"
#define PGN_DEFAULT_DATA_DIR "data"

/* ---- checking a dataset file before a job reads it (paragond's uploads) ------------------- */

/* What an idx file declares: unsigned-byte labels [n] (ndims 1) or images [n][rows][cols]
 * (ndims 3), the two kinds a train job's "idx" source reads. */
typedef struct pgn_idx_info {
    int ndims;
    uint32_t dims[3];
    bool gzip;
} pgn_idx_info;

/* Checks the idx file at path (plain or gzip) as a train job would read it: the label or image
 * magic, dimensions within the reader's limits, and exactly the payload the header declares (a
 * gzip file is inflated to its end, never past what its header allows). Errors are code "data"
 * and name the file as `name` (not path: a temporary file's name means nothing to a client). */
int pgn_idx_inspect(const char *path, const char *name, pgn_idx_info *info, pgn_error *err);

/* Checks a text a gpt job's "text" source can train on: not empty, within the text reader's
 * size limit, valid UTF-8 (every character whole). *chars: its characters. Errors are code
 * "data", naming the file as `name` and the byte offset of the first bad sequence. */
int pgn_text_inspect(const char *path, const char *name, uint64_t *chars, pgn_error *err);

/* ---- the cost model (cost.c) -------------------------------------------------------------
 * What "auto" placement compares: a job's estimated time on each device, from the device's
 * measured rates. */

/* What a training run costs on a device, beside its GEMM rate: measured by the cost suite's
 * probes (short real runs, engine/bench/bench_cost.c), each 0 where none measured it. */
typedef struct pgn_train_rates {
    double step_launch_us; /* one kernel of a training step, in place (an MLP's step on XOR) */
    double mlp_gflops;     /* an MLP step's FLOP rate, its launches apart (Fashion-MNIST's MLP) */
    double mlp_setup_s;    /* an MLP run outside its steps and data: build, upload, last checkpoint */
    double load_mbps;      /* an idx data set's loading, MB of samples' bytes a second */
    double gpt_gflops;     /* a gpt step's FLOP rate, its launches apart */
    double gpt_setup_s;    /* a gpt run outside its steps: the text, build, evaluation, checkpoint */
} pgn_train_rates;

typedef struct pgn_device_rates {
    double gflops;    /* GEMM throughput on the training shape */
    double mips;      /* interaction-net reducer, millions of interactions per second */
    double launch_us; /* one kernel launch, queued with others */
    pgn_train_rates train;
    bool measured;    /* measured by benchmark runs (else estimated from the device's properties) */
} pgn_device_rates;

/* What a benchmark run measured of its device's rates, each figure 0 when the run did not
 * measure it: the gemm suite's GEMM rate (its training-shape case, fwd1, else its first case),
 * the inet suite's reducer rate (the median over its programs of 1e5 interactions or more:
 * smaller ones are launch-bound), tensor-micro's launch cost (on a device) and the cost suite's
 * training figures (the train suite's cost-* cases). pgn_bench_run reports it through
 * hooks->on_rates; rows stay rows, for the export. */
typedef struct pgn_measured_rates {
    char device[48]; /* the device's id (pgn_device_info.id) */
    double gflops;
    double mips;
    double launch_us;
    pgn_train_rates train; /* the cost suite's */
} pgn_measured_rates;

/* Rates guessed from the device's compute units and clock, for a device never measured. */
void pgn_device_rates_estimate(const pgn_device_info *info, pgn_device_rates *out);
/* Rates from what benchmark runs measured of the device (m), the estimate filling what they
 * lack; measured when a GEMM or reducer rate was. */
void pgn_device_rates_measured(const pgn_device_info *info, const pgn_measured_rates *m, pgn_device_rates *out);

/* What a job's estimated work counts. */
typedef enum {
    PGN_WORK_NONE,         /* nothing that steers placement (bench and generate jobs) */
    PGN_WORK_FLOP,         /* floating-point operations (train) */
    PGN_WORK_INTERACTIONS, /* interaction-net rewrites (inet) */
} pgn_work_unit;

/* "none", "flop", "interactions": a unit as the API shows it and the store keeps it. */
const char *pgn_work_unit_name(pgn_work_unit unit);
/* The unit of that name; -1 for none. */
int pgn_work_unit_parse(const char *name, pgn_work_unit *out);

typedef struct pgn_job_estimate {
    double work;        /* FLOPs (train), interactions (inet: a nominal 1e8, unknown until run) */
    pgn_work_unit unit; /* what work counts */
    double launches;    /* kernel launches */
    double seconds;     /* work / rate + launches * launch cost */
} pgn_job_estimate;

void pgn_job_estimate_on(const pgn_job_spec *spec, const pgn_device_rates *rates, pgn_job_estimate *out);
/* The rates of r a job's estimate counts with, in place of the device's general ones: a train
 * job's MLP or gpt FLOP rate and a training step's launch cost, where the cost suite measured
 * them (pgn_train_rates); unchanged for other kinds. */
void pgn_device_rates_for(const pgn_job_spec *spec, pgn_device_rates *r);

/* A text's vocabulary is known only once it is read: estimates made before (parameters, memory,
 * FLOPs) assume this many characters (a byte's worth); the run reports the real figures. */
#define PGN_TEXT_NOMINAL_VOCAB 256

/* Parameters of a train spec's model: the MLP's sum over layers of in*out weights plus out
 * biases; a gpt's at PGN_TEXT_NOMINAL_VOCAB characters. */
uint64_t pgn_train_param_count(const pgn_train_spec *train);

/* Device bytes a job is expected to hold at once (train jobs; zero for the others: an inet
 * job's memory depends on where it runs, pgn_inet_memory_estimate below; a bench job's follows
 * its suite). dataset is 0 and dataset_known false when the data's size is known only once its
 * files are read (idx). */
typedef struct pgn_memory_estimate {
    uint64_t n_params;
    double params;      /* weights and biases, with the GEMM's packed copy */
    double gradients;
    double optimizer;   /* momentum (sgd with momentum), first and second moments (adam, adamw) */
    double activations; /* the per-layer buffers of one batch of batch_size */
    double dataset;     /* training and evaluation sets with labels and shuffle index */
    bool dataset_known;
    double distributed; /* a rank's buffers for the collectives (dist.c) */
    int ranks_here;     /* the processes on this machine: a distributed job without hosts runs all */
    double total;       /* all of the above, times ranks_here */
} pgn_memory_estimate;

void pgn_job_memory_estimate(const pgn_job_spec *spec, pgn_memory_estimate *out);

/* The most memory an inet job may hold (inet_mem.c). Not a guess: the reducers grow every heap
 * and bag only up to caps derived from limits.max_nodes (two variables and one queued redex per
 * node, the chunks each work-item holds back) and fail with "limit_exceeded" on limits.max_nodes
 * rather than past them; this is the same caps in bytes, with the program's own size, the state
 * of each work-item and the readback of the normal form. max_nodes 0 gives the bound of the heaps'
 * 29-bit address space. The result's peak_bytes is never more than total. Bytes: */
typedef struct pgn_inet_memory_part {
    uint64_t nodes;    /* the node heap, 8 a slot */
    uint64_t vars;     /* the variable heap, 4 a slot */
    uint64_t bags;     /* the redex bags, 8 a redex */
    uint64_t tables;   /* the owner tables of the heaps' chunks (device) */
    uint64_t growth;   /* the largest of those once more: a buffer is held twice while it grows */
    uint64_t book;     /* the parsed program (host); its nodes, redexes and definitions (device) */
    uint64_t workers;  /* device: each work-item's state, mailbox, control line and CALL scratch,
                          and their host copies; host reducer: its CALL scratch */
    uint64_t readback; /* host: the heaps downloaded from a device, printing the normal form,
                          and the copy of it the result keeps */
    uint64_t total;
} pgn_inet_memory_part;

typedef struct pgn_inet_memory {
    unsigned workers;                          /* OpenCL work-items; 0: the host reducer */
    uint64_t node_slots, var_slots, bag_slots; /* the caps in slots; bag_slots: all bags */
    pgn_inet_memory_part device;               /* OpenCL device memory; zero on the host */
    pgn_inet_memory_part host;                 /* this process's memory */
    uint64_t total;                            /* device.total + host.total */
} pgn_inet_memory;

/* For spec run on `where` (NULL or the host pseudo-device: the host reducer; an OpenCL device:
 * the OpenCL reducer with spec->work_items, or by default as many as it uses for the device's type
 * and compute units). Parses spec->program; fails only when it does not parse. */
int pgn_inet_memory_estimate(const pgn_inet_spec *spec, const pgn_device_info *where, pgn_inet_memory *out,
                             pgn_error *err);

/* ---- benchmarks (bench.c) ---------------------------------------------------------------
 * Suites produce rows: flat JSON objects with "suite", "case", "device", "adapter", "version"
 * and the suite's figures (engine/bench/bench.h). */

/* The suites in the order `all` runs them, NULL-terminated. */
extern const char *const pgn_bench_suites[];
bool pgn_bench_suite_known(const char *name);
/* The case ids of a suite (of every suite for "all") in the order it runs them, as a new JSON
 * array of strings; runs nothing. Empty for an unknown suite. */
json_t *pgn_bench_cases(const char *suite);

/* A column of a suite's table and CSV: its header and the row key it shows. */
/* How the CSV writes a column's values. Paragon-Py's bench_paragon.py writes its columns with
 * fixed formats (`S1,"784→64→10",0.19,4.81,0.95,5.04,0.00E+00,0.00E+00,0.57,"<adapter>"`); our
 * own columns keep every digit. */
typedef enum {
    PGN_CSV_SHORTEST, /* numbers as the shortest text that reads back the same double */
    PGN_CSV_FIXED2,   /* "%.2f": Paragon-Py's estMB (MiB), milliseconds and speedup */
    PGN_CSV_SCI2,     /* "%.2E": Paragon-Py's mae and max ("0.00E+00") */
    PGN_CSV_QUOTED,   /* a string always quoted: Paragon-Py's adapter */
    PGN_CSV_SHAPE,    /* quoted, layers joined by '→' as Paragon-Py prints a shape ("784→64→10";
                         rows stored with '-' between layers are written so too) */
} pgn_csv_format;

typedef struct pgn_bench_column {
    const char *header, *key;
    pgn_csv_format format;
} pgn_bench_column;

/* The suite's columns in order (*n of them); NULL for an unknown suite. mlp-forward's are
 * Paragon-Py's CSV columns exactly, in its order and formats: id,shape,estMB,cpu_ms,gpu_ms,
 * speedup,mae,max,gpu_init_ms,adapter (cpu = the host reference, gpu = the device; estMB is the
 * parameters' float32 bytes in MiB, as Paragon-Py computes it). */
const pgn_bench_column *pgn_bench_columns(const char *suite, size_t *n);
/* The columns `paragon bench` prints: the CSV's, plus mlp-forward's batch-256 throughputs and the
 * device. */
const pgn_bench_column *pgn_bench_table_columns(const char *suite, size_t *n);

/* rows (of one suite) as CSV: the header line, then one line per row; each column in its
 * format (numbers otherwise in shortest round-trip form), strings quoted when they hold a comma,
 * quote or newline or their format says so; a missing value empty. malloc'd. */
char *pgn_bench_csv(const char *suite, const json_t *rows);

/* Runs one suite (or "all") on dev (NULL: the host pseudo-device) and appends its rows to
 * rows. hooks->on_log gets a line per case; should_stop is polled between cases; on_rates, once
 * the run succeeded, what it measured of the device's rates (pgn_measured_rates). */
int pgn_bench_run(const pgn_bench_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                  const pgn_run_hooks *hooks, json_t *rows, pgn_error *err);

/* ---- GEMM tiles (the cpu family's, engine/profile.c; used by engine/tensor/gemm.c) --------
 * The device GEMM has a few register-tile shapes (rows x columns of C a work-item computes,
 * "8x32" the default); which is fastest depends on the CPU, and none changes a bit of any
 * result (each element is the same in-order fma chain). pgn_device_calibrate measures them on
 * a device and returns the fastest, kept as a tuning (pgn_device_tuning). */
int pgn_gemm_tile_count(void);
const char *pgn_gemm_tile_name(int tile); /* NULL past the count */
int pgn_gemm_tile_find(const char *name); /* -1 for none */
int pgn_gemm_tile_of(const pgn_device *dev);
/* Sets the device profile's tile, saying where the choice came from. */
int pgn_gemm_tile_set(pgn_device *dev, int tile, pgn_profile_source from, pgn_error *err);
/* Calibrates dev's family within budget_s seconds (a GEMM of 64 cubed first says how long the
 * whole would take: a device too slow for it, such as Oclgrind, gets *out too_slow and its type's
 * defaults) and returns the choice in *out (the tiles measured, repeats each: about half a
 * second on a CPU), its rows appended to rows when that is not NULL. It changes nothing on dev:
 * pgn_device_tune applies a tuning. */
int pgn_device_calibrate(pgn_device *dev, double budget_s, int repeats, json_t *rows, pgn_device_tuning *out,
                         pgn_error *err);
/* Sets what t chose on dev's profile. */
void pgn_device_tune(pgn_device *dev, const pgn_device_tuning *t);
/* A calibration's budget (a second or two on any device: the tiles take 0.8 s on a 2-core Xeon
 * with pocl at 3 repeats, 1.2 s at 5) and its repeats. */
#define PGN_CALIBRATION_BUDGET_S 2.0
#define PGN_CALIBRATION_REPEATS 3

/* ---- generation (generate.c) ----------------------------------------------------------- */

/* What a gpt checkpoint holds for generation: its model and vocabulary size. */
typedef struct pgn_gpt_info {
    pgn_gpt_spec gpt;
    int vocab;
    int64_t step; /* the optimizer steps it was taken after */
} pgn_gpt_info;

/* Checks a generate spec against the checkpoint file it will read, without running anything:
 * the checkpoint (code "checkpoint" or "no_checkpoint" when missing), a gpt's, and the prompt:
 * non-empty, only the model's characters, at most its context (code "invalid_spec", field
 * "prompt" naming the character at fault), top_k within the vocabulary. *info may be NULL. */
int pgn_generate_check(const pgn_generate_spec *g, const char *checkpoint, pgn_gpt_info *info, pgn_error *err);

/* ---- weights for PyTorch (export.c) -------------------------------------------------------
 * A train job's checkpoint as a safetensors file of its weights alone (no optimizer or trainer
 * state), under the names and in the layout of the module PyTorch code builds for the spec, so
 * that load_state_dict(state, strict=True) takes it as it is:
 * - an MLP: torch.nn.Sequential of, for each layer, Linear(in, out), then for a hidden layer its
 *   activation (ReLU, GELU(approximate="tanh"), Tanh, Sigmoid; no module for "none") and
 *   Dropout(p) when the spec's dropout is > 0. Keys "<i>.weight" [out, in] and "<i>.bias" [out],
 *   i the Linear's index: layers [2,8,8,2] with relu give 0, 2, 4; with dropout too 0, 3, 6.
 * - a gpt: transformers' GPT2LMHeadModel (GPT2Config n_positions = context, n_embd = d_model,
 *   activation "gelu_new", layer_norm_epsilon 1e-5): GPT-2's keys ("transformer.wte.weight"
 *   [vocab, d_model], "transformer.h.0.attn.c_attn.weight" [d_model, 3 d_model] as Conv1D holds
 *   it, biases and LayerNorms 1-D), and "lm_head.weight" [vocab, d_model], the token table again
 *   when tied (the model's state_dict lists a tied head under both names).
 * Metadata (strings): format "paragon-weights-1", model ("mlp", "gpt"), pytorch (the module as a
 * Python expression), spec (the checkpoint's), epoch, step, paragon_weights_sha256 (the job's
 * weights_sha256, over paragon's own layout), a gpt's vocab (and text_sha256), and data_sha256 (of
 * this file's tensor data). The checkpoint is verified first (its layout, data digest and
 * parameters against its weights_sha256): code "no_checkpoint" when there is no such file,
 * "checkpoint" for one that is not a paragon checkpoint or fails a check.
 * fd: -1 to open the file named checkpoint; else the checkpoint is read from fd (from its start;
 * left open) and checkpoint only names it in messages. *out is malloc'd (caller frees), *len bytes. */
int pgn_weights_export(const char *checkpoint, int fd, unsigned char **out, size_t *len, pgn_error *err);
/* The same written to path atomically (a temporary name, synced, renamed). */
int pgn_weights_export_file(const char *checkpoint, const char *path, pgn_error *err);
/* The checks pgn_weights_export makes, alone: 0 for a checkpoint it would export, else its error
 * (fd as there). What serves a checkpoint as it is serves only one that passes them. */
int pgn_checkpoint_verify(const char *checkpoint, int fd, pgn_error *err);

/* Runs a validated job on an opened device (or the host pseudo-device when dev is NULL).
 * On success *result is a new JSON object; for train jobs it has at least accuracy, loss,
 * weights_sha256, epochs, steps, seconds, device, and resumed_from_epoch / resumed_from_step
 * (whole epochs / optimizer steps the checkpoint it continued had done; 0 for a fresh run). */
int pgn_job_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                const pgn_run_hooks *hooks, json_t **result, pgn_error *err);

#endif
