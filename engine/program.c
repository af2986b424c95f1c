/* program.c: a device's kernel programs: each family's source assembled from the embedded
 * kernel files, built with paragon's options (no fast-math, correctly rounded divide/sqrt, the
 * profile's -D options), its kernels created and checked against the kernel list. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embedded.h"
#include "core.h"

/* docs/architecture.md, "Determinism". */
#define PGN_CL_BUILD_OPTIONS "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt"

/* ---- program sources ----------------------------------------------------------------------
 * A family's program is the embedded headers and that family's kernel files (a gpu family's end
 * in _gpu.cl), concatenated in table order (headers first). A header that a kernel file (or a
 * kernel-only header) names in a line `#include "name"` is instead put there, as a compiler with an include path would: it is
 * written over what that file defines first (kernels/pgn_inet_rules.h). */

static const pgn_embedded *kernel_file(const char *name, size_t len) {
    for (const pgn_embedded *e = pgn_kernel_sources; e->name; e++)
        if (strlen(e->name) == len && !strncmp(e->name, name, len)) return e;
    return NULL;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* The embedded file that the line at p includes (`#include "name"`), or NULL. */
static const pgn_embedded *included_at(const char *p) {
    static const char directive[] = "#include \"";
    if (strncmp(p, directive, sizeof directive - 1)) return NULL;
    const char *name = p + sizeof directive - 1, *close = strchr(name, '"');
    return close ? kernel_file(name, (size_t)(close - name)) : NULL;
}

/* Whether a kernel file, or a header of kernel code alone (inet_worker.h), includes e. Headers
 * shared with the host (pgn_*.h) include each other for the host's compiler only. */
static bool included_anywhere(const pgn_embedded *e) {
    for (const pgn_embedded *k = pgn_kernel_sources; k->name; k++) {
        if (!ends_with(k->name, ".cl") && !strncmp(k->name, "pgn_", 4)) continue;
        for (const char *p = (const char *)k->data; (p = strstr(p, "#include \"")); p++)
            if (included_at(p) == e) return true;
    }
    return false;
}

/* Appends n bytes to dst at *off (dst NULL: only counts them). */
static void put(char *dst, size_t *off, const void *data, size_t n) {
    if (dst) memcpy(dst + *off, data, n);
    *off += n;
}

/* Writes e into dst at *off with its included files put in place (dst NULL: only counts). */
static void put_file(char *dst, size_t *off, const pgn_embedded *e) {
    const char *p = (const char *)e->data, *end = p + e->size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *next = nl ? nl + 1 : end;
        const pgn_embedded *inc = included_at(p);
        if (inc) put_file(dst, off, inc);
        else put(dst, off, p, (size_t)(next - p));
        p = next;
    }
    put(dst, off, "\n", 1);
}

static void put_program(char *dst, size_t *off, pgn_kernel_family family) {
    for (const pgn_embedded *e = pgn_kernel_sources; e->name; e++) {
        bool cl = ends_with(e->name, ".cl");
        if (cl ? ends_with(e->name, "_gpu.cl") != (family == PGN_FAMILY_GPU) : included_anywhere(e)) continue;
        put_file(dst, off, e);
    }
}

static char *program_source(pgn_kernel_family family) {
    size_t total = 0;
    put_program(NULL, &total, family);
    char *src = malloc(total + 1);
    if (!src) return NULL;
    size_t off = 0;
    put_program(src, &off, family);
    src[off] = '\0';
    return src;
}

/* The headers every program starts with (those no kernel file includes), then prefix, the kernel
 * file, suffix. */
static void put_one(char *dst, size_t *off, const pgn_embedded *file, const char *prefix, const char *suffix) {
    for (const pgn_embedded *e = pgn_kernel_sources; e->name; e++)
        if (!ends_with(e->name, ".cl") && !included_anywhere(e)) put_file(dst, off, e);
    put(dst, off, prefix, strlen(prefix));
    put_file(dst, off, file);
    put(dst, off, suffix, strlen(suffix));
}

char *pgn_program_source_one(const char *file, const char *prefix, const char *suffix) {
    const pgn_embedded *e = kernel_file(file, strlen(file));
    if (!e) return NULL;
    size_t total = 0;
    put_one(NULL, &total, e, prefix, suffix);
    char *src = malloc(total + 1);
    if (!src) return NULL;
    size_t off = 0;
    put_one(src, &off, e, prefix, suffix);
    src[off] = '\0';
    return src;
}

int pgn_program_build(pgn_device *dev, const char *src, cl_program *out, pgn_error *err) {
    cl_int st;
    *out = NULL;
    cl_program program = clCreateProgramWithSource(dev->context, 1, &src, NULL, &st);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_KERNEL_BUILD, "", "clCreateProgramWithSource failed on %s: %s",
                      dev->info.id, pgn_cl_status_name(st));
        return -1;
    }
    /* PGN_DEVICE_CPU: kernels may rely on a CPU's coherent caches and ordered stores (inet.cl;
     * the profile's coherent, engine/profile.c).
     * Oclgrind 21.10 cannot run inet_reduce once its LLVM optimiser has inlined the rules: the
     * inlined code calls llvm.experimental.noalias.scope.decl, which its interpreter does not
     * know ("Undefined external function"), so programs for Oclgrind alone are built without
     * optimisation (a simulator gains nothing from it). Never for pocl (docs/architecture.md: 25-60 %).
     * PGN_OCLGRIND also lets kernels step around two more of its faults (gemm.cl, inet.cl).
     * pocl's clang writes its warnings to the process's stderr (a user's first run printed "11
     * warnings generated."): each is an unroll hint that one inlined instance of a shared body
     * (gemm_tile_body in the five tile kernels, bias_act_backward_blocks) could not take (the
     * kernels' measured speeds are with it so). pocl takes only OpenCL's options, so it builds
     * with -w (no warnings): a warning there is noise to the user who sees it. */
    char options[256], slots[48] = "";
    bool pocl = !strcmp(dev->info.platform, "Portable Computing Language");
    if (dev->profile.inet_local_slots) /* the gpu family's local net, as the profile fitted it */
        snprintf(slots, sizeof slots, " -D PGN_INET_LOCAL_SLOTS=%uu", dev->profile.inet_local_slots);
    snprintf(options, sizeof options, "%s%s%s%s%s", PGN_CL_BUILD_OPTIONS, dev->profile.coherent ? " -D PGN_DEVICE_CPU" : "",
             dev->oclgrind ? " -cl-opt-disable -D PGN_OCLGRIND" : "", pocl ? " -w" : "", slots);
    st = clBuildProgram(program, 1, &dev->device, options, NULL, NULL);
    if (st != CL_SUCCESS) {
        size_t log_size = 0;
        clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_size);
        char *log = calloc(log_size + 1, 1);
        if (log)
            clGetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, log_size, log, NULL);
        pgn_error_set(err, PGN_E_KERNEL_BUILD, "", "building kernels for %s (%s) failed: %s\n%s",
                      dev->info.id, dev->info.name, pgn_cl_status_name(st), log ? log : "");
        free(log);
        clReleaseProgram(program);
        return -1;
    }
    *out = program;
    return 0;
}

/* Builds one family's program and creates its kernels, checking each signature and that the
 * program holds exactly the family's kernels of the list. */
static int build_family(pgn_device *dev, pgn_kernel_family family, pgn_error *err) {
    char *src = program_source(family);
    if (!src) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory assembling kernel sources");
        return -1;
    }
    int rc = pgn_program_build(dev, src, &dev->programs[family], err);
    free(src);
    if (rc) return -1;
    size_t listed = 0;
    for (int k = 0; k < PGN_KERNEL_COUNT; k++) {
        if (pgn_kernel_family_of((pgn_kernel_id)k) != family) continue;
        listed++;
        const char *name = pgn_kernel_name((pgn_kernel_id)k);
        cl_int st;
        dev->kernels[k] = clCreateKernel(dev->programs[family], name, &st);
        if (st != CL_SUCCESS) {
            dev->kernels[k] = NULL;
            pgn_error_set(err, PGN_E_KERNEL_BUILD, "", "creating kernel %s (%s family) on %s failed: %s", name,
                          pgn_kernel_family_name(family), dev->info.id, pgn_cl_status_name(st));
            return -1;
        }
        cl_uint nargs = 0;
        clGetKernelInfo(dev->kernels[k], CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL);
        if ((int)nargs != pgn_kernel_nargs((pgn_kernel_id)k)) {
            pgn_error_set(err, PGN_E_KERNEL_BUILD, "", "kernel %s takes %u arguments; engine/kernels.h lists %d",
                          name, nargs, pgn_kernel_nargs((pgn_kernel_id)k));
            return -1;
        }
    }
    size_t in_program = 0;
    clGetProgramInfo(dev->programs[family], CL_PROGRAM_NUM_KERNELS, sizeof in_program, &in_program, NULL);
    if (in_program != listed) {
        pgn_error_set(err, PGN_E_KERNEL_BUILD, "", "the %s family's program holds %zu kernels; engine/kernels.h lists %zu",
                      pgn_kernel_family_name(family), in_program, listed);
        return -1;
    }
    return 0;
}

/* The cpu family's program always (it holds the kernels every family shares: elementwise ops,
 * the optimisers, the stores Oclgrind needs); another family's when the profile runs it. */
int pgn_device_build_programs(pgn_device *dev, pgn_error *err) {
    for (int f = 0; f < PGN_FAMILY_COUNT; f++) {
        bool used = f == PGN_FAMILY_CPU;
        for (int g = 0; g < PGN_OPS_COUNT; g++) used |= dev->profile.family[g] == (pgn_kernel_family)f;
        if (used && build_family(dev, (pgn_kernel_family)f, err)) return -1;
    }
    return 0;
}

