/* core.h: the engine's shared core, what every part of it (tensor/, inet/, bench/, jobs/) and the
 * unit tests build on, but not the server: the opened-device struct, the kernel table and
 * launches, device memory stores, and the spec-error helper. The core includes nothing of the
 * parts above it. */
#ifndef PGN_CORE_H
#define PGN_CORE_H

#include <CL/cl.h>
#include <CL/cl_ext.h> /* CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found no platform */

#include "kernels.h"
#include "paragon.h"

/* The parts above the core that keep something per device (pgn_device.part). */
enum { PGN_PART_TENSOR, PGN_PART_INET, PGN_PART_COUNT };

struct pgn_device {
    pgn_device_info info;
    pgn_device_profile profile; /* every per-device choice (engine/profile.c) */
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue; /* in-order: a step's kernels are queued, then waited for once */
    cl_program programs[PGN_FAMILY_COUNT]; /* one a family the profile runs (NULL for the others) */
    cl_kernel kernels[PGN_KERNEL_COUNT];   /* every kernel of those families, created once at open */
    double *profile_sink; /* when set, each launch waits and adds its event time (seconds) */
    size_t align_bytes;   /* sub-buffer origins must be multiples of this */
    /* what a part above the core keeps per device (the tensor engine's scratch: tensor.c), made
     * by that part on first use and released with the device through release */
    void *part[PGN_PART_COUNT];
    void (*part_release[PGN_PART_COUNT])(pgn_device *dev, void *data);
    const char *(*part_pending[PGN_PART_COUNT])(void *data); /* pgn_device_pending's, or NULL */
    uint64_t launches; /* kernels queued since it opened (pgn_device_launches) */
    bool oclgrind;    /* the Oclgrind simulator */
    bool shadowed;    /* Oclgrind checking for uninitialised reads: see pgn_device_write */
    cl_mem *kept;     /* shadowed: buffers released only when the device closes */
    size_t n_kept;
};

/* The GEMM's shapes, the profile's gemm parameter (engine/profile.c): a shape's name, family and
 * kernel; for the cpu family (kernels/gemm.cl) a work-item's rows and GEMM_NR-wide panels, its
 * first shape the default and the only one A's packed panels (GEMM_MR rows) fit; for the gpu
 * family (kernels/gemm_gpu.cl) a work-group's block of C (mwg x nwg), the depth of its local
 * tiles (kwg) and its work-items (mdimc x ndimc). NULL past the count. */
typedef struct {
    const char *name;
    pgn_kernel_family family;
    pgn_kernel_id kernel;
    int mr, np;
    int mwg, nwg, kwg, mdimc, ndimc;
} pgn_gemm_tile_shape;
const pgn_gemm_tile_shape *pgn_gemm_tile_shape_of(int tile);
/* The default shape of a family: the first of the table. */
int pgn_gemm_tile_default(pgn_kernel_family family);

/* One kernel argument: its size and a pointer to its value (KARG(x) for a variable x). */
typedef struct pgn_karg {
    size_t size;
    const void *value;
} pgn_karg;
#define KARG(x) {sizeof(x), &(x)}
/* A __local argument of bytes bytes (OpenCL allocates it per work-group). */
#define KARG_LOCAL(bytes) {(bytes), NULL}

/* Sets the arguments (as many as kernels.h lists for it) and queues kernel id over a dims-D
 * range (local may be NULL). Launchers call it through PGN_LAUNCH, which checks the count of
 * args at compile time. Never waits: a step's kernels are queued and waited for once
 * (docs/architecture.md, "OpenCL on a CPU"). */
int pgn_launch(pgn_device *dev, pgn_kernel_id id, const pgn_karg *args, cl_uint dims, const size_t *global,
               const size_t *local, pgn_error *err);
/* The same with a kernel object of the caller's, created from the program by id's name. */
int pgn_launch_kernel(pgn_device *dev, cl_kernel k, pgn_kernel_id id, const pgn_karg *args, cl_uint dims,
                      const size_t *global, const size_t *local, pgn_error *err);

/* Grows one of the device's scratch buffers (*mem of *have bytes) to at least bytes, waiting
 * for queued work first when it grows (queued kernels may still use the old one); what names it
 * in errors. Steps that reserve ahead never allocate. */
int pgn_device_scratch_reserve(pgn_device *dev, cl_mem *mem, size_t *have, size_t bytes, const char *what,
                               pgn_error *err);

/* A spec error: code "invalid_spec", err->field = field, message "field: <fmt>". Returns -1. */
int pgn_spec_fail(pgn_error *err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- reading a job spec's fields (spec_fields.c) -----------------------------------------
 * Each reads key of obj, optional unless said, and fails with code "invalid_spec" naming path:
 * the wrong type, a value out of range. A missing key leaves *out as it is (the default). */

/* Refuses keys of obj outside allowed (NULL-terminated), naming the first unknown one as
 * prefix.key. */
int pgn_spec_only_keys(const json_t *obj, const char *prefix, const char *const *allowed, pgn_error *err);
/* obj[key] as an object; NULL when absent (*rc 0, or -1 when required) or not an object (*rc -1). */
const json_t *pgn_spec_object(const json_t *parent, const char *key, const char *path, bool required,
                              pgn_error *err, int *rc);
int pgn_spec_string(const json_t *obj, const char *key, const char *path, char *out, size_t size,
                    pgn_error *err);
int pgn_spec_int(const json_t *obj, const char *key, const char *path, long long lo, long long hi,
                 long long *out, pgn_error *err);
/* In [lo, hi] (lo excluded when lo_open), judged as the 32-bit float it becomes. */
int pgn_spec_float(const json_t *obj, const char *key, const char *path, double lo, bool lo_open,
                   double hi, float *out, pgn_error *err);
int pgn_spec_bool(const json_t *obj, const char *key, const char *path, bool *out, pgn_error *err);
/* One of names (NULL-terminated): *out receives its index. */
int pgn_spec_choice(const json_t *obj, const char *key, const char *path, const char *const *names,
                    int *out, pgn_error *err);
/* No control characters in s (names and ids end up in logs and terminals). */
int pgn_spec_no_controls(const char *s, const char *path, pgn_error *err);

/* Name of an OpenCL status code ("CL_OUT_OF_RESOURCES"), for error messages. */
const char *pgn_cl_status_name(cl_int status);

/* Another in-order queue on the device (a thread's own: inet_build.c); the caller releases it. */
cl_command_queue pgn_device_queue(pgn_device *dev, cl_int *st);

/* Builds OpenCL C source for the device with paragon's options (no fast-math, correctly
 * rounded divide/sqrt). A compile error returns code "kernel_build" with the compiler's log. */
int pgn_program_build(pgn_device *dev, const char *src, cl_program *out, pgn_error *err);
/* One kernel file's program (kernels/<file>, as embedded) with the shared headers first, prefix
 * before the file and suffix after it: a kernel specialised at run time (inet_cl.c). malloc'd;
 * NULL when out of memory or no such file. */
char *pgn_program_source_one(const char *file, const char *prefix, const char *suffix);

/* Builds the program of each family the device's profile runs and creates its kernels, each
 * checked against the kernel list (engine/kernels.h); program.c. */
int pgn_device_build_programs(pgn_device *dev, pgn_error *err);

/* Waits for everything queued on the device; a no-op for the host (dev == NULL). */
int pgn_device_finish(pgn_device *dev, pgn_error *err);

/* Stores from the host into device buffers, offsets and sizes in bytes: what
 * clEnqueueWriteBuffer, clEnqueueFillBuffer and clEnqueueCopyBuffer do, except that under
 * Oclgrind's uninitialised-value checker those that cover part of a buffer are queued kernels, so
 * that it keeps track (device.c); there sizes and offsets must be whole 4-byte words.
 * pgn_device_write with blocking false may read src later: src must stay as it is until the queue
 * has run. pgn_device_release_buffer is clReleaseMemObject, except that under that checker the
 * buffer lives on until the device closes. */
int pgn_device_write(pgn_device *dev, cl_mem mem, size_t offset, size_t bytes, const void *src, bool blocking,
                     pgn_error *err);
int pgn_device_fill_u32(pgn_device *dev, cl_mem mem, size_t offset, size_t bytes, uint32_t value,
                        pgn_error *err);
int pgn_device_copy(pgn_device *dev, cl_mem src, size_t src_offset, cl_mem dst, size_t dst_offset, size_t bytes,
                    pgn_error *err);
void pgn_device_release_buffer(pgn_device *dev, cl_mem mem);

#endif
