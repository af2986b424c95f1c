/* device.c: OpenCL platforms and devices: enumeration with stable ids, selection by request,
 * and opening a device (context, in-order queue, its profile, and its programs: program.c),
 * queue waits and buffer stores. */
/* clCreateCommandQueue: the only way to make a queue on an OpenCL 1.x platform (open_queue). */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embedded.h"
#include "core.h"

#define PGN_MAX_PLATFORMS 16
#define PGN_MAX_DEVICES 64

const char *pgn_cl_status_name(cl_int status) {
    switch (status) {
#define PGN_CL_CASE(x) \
    case x: return #x;
        PGN_CL_CASE(CL_SUCCESS)
        PGN_CL_CASE(CL_DEVICE_NOT_FOUND)
        PGN_CL_CASE(CL_DEVICE_NOT_AVAILABLE)
        PGN_CL_CASE(CL_COMPILER_NOT_AVAILABLE)
        PGN_CL_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        PGN_CL_CASE(CL_OUT_OF_RESOURCES)
        PGN_CL_CASE(CL_OUT_OF_HOST_MEMORY)
        PGN_CL_CASE(CL_BUILD_PROGRAM_FAILURE)
        PGN_CL_CASE(CL_INVALID_VALUE)
        PGN_CL_CASE(CL_INVALID_PLATFORM)
        PGN_CL_CASE(CL_INVALID_DEVICE)
        PGN_CL_CASE(CL_INVALID_CONTEXT)
        PGN_CL_CASE(CL_INVALID_COMMAND_QUEUE)
        PGN_CL_CASE(CL_INVALID_MEM_OBJECT)
        PGN_CL_CASE(CL_INVALID_BUILD_OPTIONS)
        PGN_CL_CASE(CL_INVALID_PROGRAM)
        PGN_CL_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
        PGN_CL_CASE(CL_INVALID_KERNEL_NAME)
        PGN_CL_CASE(CL_INVALID_KERNEL)
        PGN_CL_CASE(CL_INVALID_ARG_INDEX)
        PGN_CL_CASE(CL_INVALID_ARG_VALUE)
        PGN_CL_CASE(CL_INVALID_ARG_SIZE)
        PGN_CL_CASE(CL_INVALID_KERNEL_ARGS)
        PGN_CL_CASE(CL_INVALID_WORK_DIMENSION)
        PGN_CL_CASE(CL_INVALID_WORK_GROUP_SIZE)
        PGN_CL_CASE(CL_INVALID_WORK_ITEM_SIZE)
        PGN_CL_CASE(CL_INVALID_GLOBAL_OFFSET)
        PGN_CL_CASE(CL_INVALID_BUFFER_SIZE)
        PGN_CL_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
        PGN_CL_CASE(CL_PLATFORM_NOT_FOUND_KHR)
#undef PGN_CL_CASE
    default: return "CL_UNKNOWN_ERROR";
    }
}

const char *pgn_device_type_name(pgn_device_type type) {
    switch (type) {
    case PGN_DEVICE_HOST: return "host";
    case PGN_DEVICE_CPU: return "cpu";
    case PGN_DEVICE_GPU: return "gpu";
    case PGN_DEVICE_ACCELERATOR: return "accelerator";
    case PGN_DEVICE_OTHER: break;
    }
    return "other";
}

void pgn_device_info_host(pgn_device_info *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->id, sizeof out->id, "host");
    snprintf(out->name, sizeof out->name, "host reference (C)");
    snprintf(out->vendor, sizeof out->vendor, "paragon");
    snprintf(out->platform, sizeof out->platform, "host");
    snprintf(out->driver_version, sizeof out->driver_version, "%s", PGN_VERSION);
    out->type = PGN_DEVICE_HOST;
    out->compute_units = 1;
}

static void info_string(cl_device_id d, cl_device_info what, char *buf, size_t size) {
    buf[0] = '\0';
    if (clGetDeviceInfo(d, what, size, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
    buf[size - 1] = '\0';
}

/* FNV-1a 64: the id only needs to be stable and well spread, not cryptographic. */
static uint64_t fnv1a(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return (h ^ '|') * 0x100000001b3ULL;
}

/* An id depends on what identifies the hardware and its driver, plus an ordinal among devices
 * that look identical, so it survives restarts and other devices coming and going. */
static void make_id(pgn_device_info *d, const pgn_device_info *prev, size_t n_prev) {
    unsigned ordinal = 0;
    for (size_t i = 0; i < n_prev; i++)
        if (!strcmp(prev[i].platform, d->platform) && !strcmp(prev[i].vendor, d->vendor) &&
            !strcmp(prev[i].name, d->name))
            ordinal++;
    char ord[16];
    snprintf(ord, sizeof ord, "%u", ordinal);
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv1a(h, d->platform);
    h = fnv1a(h, d->vendor);
    h = fnv1a(h, d->name);
    h = fnv1a(h, ord);
    snprintf(d->id, sizeof d->id, "%s-%08x", pgn_device_type_name(d->type),
             (unsigned)(h ^ (h >> 32)));
}

static pgn_device_type map_type(cl_device_type t) {
    if (t & CL_DEVICE_TYPE_GPU) return PGN_DEVICE_GPU;
    if (t & CL_DEVICE_TYPE_CPU) return PGN_DEVICE_CPU;
    if (t & CL_DEVICE_TYPE_ACCELERATOR) return PGN_DEVICE_ACCELERATOR;
    return PGN_DEVICE_OTHER;
}

static void describe(cl_platform_id p, cl_device_id d, pgn_device_info *out) {
    memset(out, 0, sizeof *out);
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof out->platform, out->platform, NULL);
    out->platform[sizeof out->platform - 1] = '\0';
    info_string(d, CL_DEVICE_NAME, out->name, sizeof out->name);
    info_string(d, CL_DEVICE_VENDOR, out->vendor, sizeof out->vendor);
    info_string(d, CL_DRIVER_VERSION, out->driver_version, sizeof out->driver_version);
    info_string(d, CL_DEVICE_OPENCL_C_VERSION, out->opencl_c_version,
                sizeof out->opencl_c_version);
    cl_device_type type = 0;
    cl_uint cu = 0, clock = 0;
    cl_ulong mem = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof clock, &clock, NULL);
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    cl_ulong local = 0;
    size_t group = 0;
    clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof group, &group, NULL);
    out->type = map_type(type);
    out->compute_units = cu;
    out->max_clock_mhz = clock;
    out->global_mem_bytes = mem;
    out->local_mem_bytes = local;
    out->max_work_group = (unsigned)group;
}

/* Calls fn for every OpenCL device in enumeration order with its description and stable id;
 * stops when fn returns 1. Ids are computed here, from what came before, so the listing and
 * the lookup by id in pgn_device_open always agree. */
typedef int (*device_fn)(void *ctx, cl_platform_id, cl_device_id, const pgn_device_info *);

/* pocl reads its settings from the environment when the first OpenCL call loads it. Its worker
 * threads float by default, and a thread woken for a launch often lands on the core of the thread
 * that woke it, where it waits for milliseconds: two inet workers then ran one after the other
 * in about one launch of three (loops.hvm: 137-266 MIPS over runs). Pinned, one thread per core
 * (POCL_AFFINITY=1), every run ran both (265-275). A value the user set is kept. */
static void pocl_settings(void) { setenv("POCL_AFFINITY", "1", 0); }

/* Every path into OpenCL starts here. */
static cl_int platform_ids(cl_platform_id *platforms, cl_uint *np) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, pocl_settings);
    return clGetPlatformIDs(PGN_MAX_PLATFORMS, platforms, np);
}

static int each_cl_device(device_fn fn, void *ctx, pgn_error *err) {
    cl_platform_id platforms[PGN_MAX_PLATFORMS];
    cl_uint np = 0;
    cl_int st = platform_ids(platforms, &np);
    if (st == CL_PLATFORM_NOT_FOUND_KHR || (st == CL_SUCCESS && np == 0)) return 0;
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_DEVICE, "", "clGetPlatformIDs failed: %s", pgn_cl_status_name(st));
        return -1;
    }
    if (np > PGN_MAX_PLATFORMS) np = PGN_MAX_PLATFORMS;
    pgn_device_info seen[PGN_MAX_PLATFORMS * 4];
    size_t n_seen = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_device_id devs[PGN_MAX_DEVICES];
        cl_uint nd = 0;
        st = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, PGN_MAX_DEVICES, devs, &nd);
        if (st != CL_SUCCESS) continue; /* a broken platform must not hide the others */
        if (nd > PGN_MAX_DEVICES) nd = PGN_MAX_DEVICES;
        for (cl_uint i = 0; i < nd && n_seen < sizeof seen / sizeof *seen; i++) {
            pgn_device_info *info = &seen[n_seen];
            describe(platforms[p], devs[i], info);
            make_id(info, seen, n_seen);
            n_seen++;
            if (fn(ctx, platforms[p], devs[i], info)) return 0;
        }
    }
    return 0;
}

typedef struct {
    pgn_device_info *list;
    size_t count;
    int out_of_memory;
} list_ctx;

static int collect(void *ctx, cl_platform_id p, cl_device_id d, const pgn_device_info *info) {
    (void)p;
    (void)d;
    list_ctx *l = ctx;
    pgn_device_info *grown = realloc(l->list, (l->count + 1) * sizeof *grown);
    if (!grown) {
        l->out_of_memory = 1;
        return 1;
    }
    l->list = grown;
    l->list[l->count++] = *info;
    return 0;
}

int pgn_devices_list(pgn_device_info **out, size_t *count, pgn_error *err) {
    list_ctx l = {NULL, 0, 0};
    if (each_cl_device(collect, &l, err) != 0 || l.out_of_memory) {
        if (l.out_of_memory) pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory listing devices");
        free(l.list);
        return -1;
    }
    *out = l.list;
    *count = l.count;
    return 0;
}

int pgn_device_select(const char *want, const pgn_device_info *list, size_t count,
                      pgn_device_info *out, pgn_error *err) {
    if (!strcmp(want, "host")) {
        pgn_device_info_host(out);
        return 0;
    }
    if (!strcmp(want, "auto")) { /* the first of the device profiles' most preferred rank */
        int best = -1, best_rank = 0;
        for (size_t i = 0; i < count; i++) {
            pgn_device_profile p;
            pgn_device_profile_default(&list[i], &p);
            if (best < 0 || p.auto_rank < best_rank) best = (int)i, best_rank = p.auto_rank;
        }
        if (best >= 0) {
            *out = list[best];
            return 0;
        }
        pgn_error_set(err, PGN_E_NO_DEVICE, "device",
                      "device: 'auto' found no OpenCL device (install an OpenCL driver such as "
                      "pocl-opencl-icd, or ask for \"host\")");
        return -1;
    }
    if (!strcmp(want, "cpu") || !strcmp(want, "gpu")) {
        pgn_device_type t = want[0] == 'c' ? PGN_DEVICE_CPU : PGN_DEVICE_GPU;
        for (size_t i = 0; i < count; i++)
            if (list[i].type == t) {
                *out = list[i];
                return 0;
            }
        pgn_error_set(err, PGN_E_NO_DEVICE, "device", "device: no OpenCL %s device on this machine",
                      want);
        return -1;
    }
    for (size_t i = 0; i < count; i++)
        if (!strcmp(list[i].id, want)) {
            *out = list[i];
            return 0;
        }
    char ids[512] = "host";
    for (size_t i = 0; i < count; i++) {
        if (!strcmp(list[i].id, "host")) continue; /* a list may hold the host pseudo-device */
        size_t len = strlen(ids);
        if (len < sizeof ids) snprintf(ids + len, sizeof ids - len, ", %s", list[i].id);
    }
    pgn_error_set(err, PGN_E_NO_DEVICE, "device",
                  "device: unknown device '%s' (expected auto, cpu, gpu or a device id: %s)", want, ids);
    return -1;
}

json_t *pgn_device_info_json(const pgn_device_info *d) {
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:s}", "id", d->id, "name",
                     d->name, "vendor", d->vendor, "platform", d->platform, "type",
                     pgn_device_type_name(d->type), "compute_units", (json_int_t)d->compute_units,
                     "global_mem_bytes", (json_int_t)d->global_mem_bytes, "max_clock_mhz",
                     (json_int_t)d->max_clock_mhz, "local_mem_bytes", (json_int_t)d->local_mem_bytes,
                     "max_work_group", (json_int_t)d->max_work_group, "opencl_c_version", d->opencl_c_version,
                     "driver_version", d->driver_version);
}

static void text_field(const json_t *j, const char *key, char *out, size_t size) {
    const char *v = json_string_value(json_object_get(j, key));
    snprintf(out, size, "%s", v ? v : "");
}

static uint64_t count_field(const json_t *j, const char *key) {
    json_int_t v = json_integer_value(json_object_get(j, key));
    return v > 0 ? (uint64_t)v : 0;
}

int pgn_device_info_from_json(const json_t *j, pgn_device_info *out) {
    memset(out, 0, sizeof *out);
    const char *id = json_string_value(json_object_get(j, "id"));
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!id || !*id || !type) return -1;
    pgn_device_type t = PGN_DEVICE_HOST;
    while (t < PGN_DEVICE_OTHER && strcmp(pgn_device_type_name(t), type)) t++;
    out->type = t;
    text_field(j, "id", out->id, sizeof out->id);
    text_field(j, "name", out->name, sizeof out->name);
    text_field(j, "vendor", out->vendor, sizeof out->vendor);
    text_field(j, "platform", out->platform, sizeof out->platform);
    text_field(j, "opencl_c_version", out->opencl_c_version, sizeof out->opencl_c_version);
    text_field(j, "driver_version", out->driver_version, sizeof out->driver_version);
    out->compute_units = (unsigned)count_field(j, "compute_units");
    out->global_mem_bytes = count_field(j, "global_mem_bytes");
    out->max_clock_mhz = (unsigned)count_field(j, "max_clock_mhz");
    out->local_mem_bytes = count_field(j, "local_mem_bytes");
    out->max_work_group = (unsigned)count_field(j, "max_work_group");
    return 0;
}

json_t *pgn_opencl_platforms_json(void) {
    json_t *arr = json_array();
    cl_platform_id platforms[PGN_MAX_PLATFORMS];
    cl_uint np = 0;
    if (platform_ids(platforms, &np) != CL_SUCCESS) return arr;
    if (np > PGN_MAX_PLATFORMS) np = PGN_MAX_PLATFORMS;
    for (cl_uint p = 0; p < np; p++) {
        char name[256] = "", version[256] = "", vendor[256] = "";
        clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
        clGetPlatformInfo(platforms[p], CL_PLATFORM_VERSION, sizeof version - 1, version, NULL);
        clGetPlatformInfo(platforms[p], CL_PLATFORM_VENDOR, sizeof vendor - 1, vendor, NULL);
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "name", name, "version",
                                             version, "vendor", vendor));
    }
    return arr;
}

typedef struct {
    const char *id;
    cl_platform_id platform;
    cl_device_id device;
    int found;
} find_ctx;

static int find_by_id(void *ctx, cl_platform_id p, cl_device_id d, const pgn_device_info *info) {
    find_ctx *f = ctx;
    if (strcmp(info->id, f->id)) return 0;
    f->platform = p;
    f->device = d;
    f->found = 1;
    return 1;
}

/* Oclgrind, the OpenCL device simulator (docs/guide.md: "Oclgrind"), names its platform so. */
static bool is_oclgrind(const char *platform) { return !strcmp(platform, "Oclgrind"); }

/* Whether Oclgrind's uninitialised-value checker is on: `oclgrind --uninitialized` sets this
 * variable, and Oclgrind loaded as an ICD reads it too. */
static bool oclgrind_checks_uninitialized(void) {
    const char *v = getenv("OCLGRIND_UNINITIALIZED");
    return v && *v && strcmp(v, "0");
}

/* An in-order queue with profiling on (event timestamps cost nothing until someone asks for
 * them). clCreateCommandQueueWithProperties is OpenCL 2.0, so a 1.x platform gets the 1.2 call:
 * Oclgrind 21.10 reports 1.2, and through the ICD loader its 2.0 entry point resolves to the
 * loader's own symbol and calls itself forever. */
static cl_command_queue open_queue(cl_platform_id p, cl_context ctx, cl_device_id d, cl_int *st) {
    char version[64] = "";
    clGetPlatformInfo(p, CL_PLATFORM_VERSION, sizeof version - 1, version, NULL);
    if (!strncmp(version, "OpenCL 1.", 9))
        return clCreateCommandQueue(ctx, d, CL_QUEUE_PROFILING_ENABLE, st);
    cl_queue_properties qprops[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    return clCreateCommandQueueWithProperties(ctx, d, qprops, st);
}

cl_command_queue pgn_device_queue(pgn_device *dev, cl_int *st) {
    return open_queue(dev->platform, dev->context, dev->device, st);
}

int pgn_device_open(const pgn_device_info *info, pgn_device **out, pgn_error *err) {
    *out = NULL;
    pgn_device_profile kind;
    pgn_device_profile_default(info, &kind);
    if (kind.dev_class == PGN_CLASS_HOST) {
        pgn_error_set(err, PGN_E_DEVICE, "device",
                      "the host pseudo-device is not opened: pass NULL to run on the host");
        return -1;
    }
    find_ctx f = {.id = info->id};
    if (each_cl_device(find_by_id, &f, err) != 0) return -1;
    if (!f.found) {
        pgn_error_set(err, PGN_E_NO_DEVICE, "device", "device '%s' is no longer present", info->id);
        return -1;
    }
    pgn_device *dev = calloc(1, sizeof *dev);
    if (!dev) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
        return -1;
    }
    dev->info = *info;
    if (pgn_device_profile_of(info, NULL, &dev->profile, err)) {
        free(dev);
        return -1;
    }
    dev->oclgrind = is_oclgrind(info->platform);
    dev->shadowed = dev->oclgrind && oclgrind_checks_uninitialized();
    dev->platform = f.platform;
    dev->device = f.device;
    cl_uint align_bits = 0;
    clGetDeviceInfo(f.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    dev->align_bytes = align_bits / 8;
    cl_int st;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)f.platform, 0};
    dev->context = clCreateContext(props, 1, &f.device, NULL, NULL, &st);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_DEVICE, "", "clCreateContext failed on %s: %s", info->id,
                      pgn_cl_status_name(st));
        pgn_device_close(dev);
        return -1;
    }
    dev->queue = open_queue(f.platform, dev->context, f.device, &st);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_DEVICE, "", "clCreateCommandQueue failed on %s: %s", info->id,
                      pgn_cl_status_name(st));
        pgn_device_close(dev);
        return -1;
    }
    if (pgn_device_build_programs(dev, err) != 0) {
        pgn_device_close(dev);
        return -1;
    }
    *out = dev;
    return 0;
}

int pgn_device_open_for_run(const pgn_device_info *info, pgn_device **out, pgn_error *err) {
    *out = NULL;
    pgn_device_profile profile;
    pgn_device_profile_default(info, &profile);
    return profile.dev_class == PGN_CLASS_HOST ? 0 : pgn_device_open(info, out, err);
}

const char *pgn_device_pending(const pgn_device *dev) {
    for (int i = 0; dev && i < PGN_PART_COUNT; i++) {
        const char *what = dev->part[i] && dev->part_pending[i] ? dev->part_pending[i](dev->part[i]) : NULL;
        if (what) return what;
    }
    return NULL;
}

void pgn_device_close(pgn_device *dev) {
    if (!dev) return;
    if (dev->queue) clFinish(dev->queue);
    for (int k = 0; k < PGN_KERNEL_COUNT; k++)
        if (dev->kernels[k]) clReleaseKernel(dev->kernels[k]);
    for (int i = 0; i < PGN_PART_COUNT; i++)
        if (dev->part[i] && dev->part_release[i]) dev->part_release[i](dev, dev->part[i]);
    for (size_t i = 0; i < dev->n_kept; i++) clReleaseMemObject(dev->kept[i]);
    free(dev->kept);
    for (int f = 0; f < PGN_FAMILY_COUNT; f++)
        if (dev->programs[f]) clReleaseProgram(dev->programs[f]);
    if (dev->queue) clReleaseCommandQueue(dev->queue);
    if (dev->context) clReleaseContext(dev->context);
    free(dev);
}

const pgn_device_info *pgn_device_get_info(const pgn_device *dev) { return &dev->info; }
const pgn_device_profile *pgn_device_get_profile(const pgn_device *dev) { return &dev->profile; }

/* How long pgn_device_finish polls before it sleeps. */
#define FINISH_SPIN_S 50e-6

/* Completion of a marker event, waited for on a condition variable. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
} marker_wait;

static void CL_CALLBACK marker_done(cl_event ev, cl_int status, void *p) {
    (void)ev;
    (void)status;
    marker_wait *w = p;
    pthread_mutex_lock(&w->mu);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* pocl's clFinish busy-waits on the calling thread, which on a CPU device takes a core from the
 * kernels it waits for (measured: two inet workers ran at half speed while the host thread spun).
 * So the wait is a marker whose completion callback wakes a sleeping thread, after at most
 * FINISH_SPIN_S of polling. */
int pgn_device_finish(pgn_device *dev, pgn_error *err) {
    if (!dev) return 0;
    cl_event ev = NULL;
    cl_int st = clEnqueueMarkerWithWaitList(dev->queue, 0, NULL, &ev);
    marker_wait w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
    if (st == CL_SUCCESS) st = clSetEventCallback(ev, CL_COMPLETE, marker_done, &w);
    if (st == CL_SUCCESS) st = clFlush(dev->queue);
    if (st == CL_SUCCESS) {
        /* Short waits spin a little first: waking from the condition variable costs tens of
         * microseconds, which single-sample forward passes (mlp-forward S1: ~20 us) would feel. */
        double until = pgn_now_s() + FINISH_SPIN_S;
        cl_int exec = CL_QUEUED;
        while (pgn_now_s() < until &&
               clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, NULL) == CL_SUCCESS &&
               exec > CL_COMPLETE) {
        }
        pthread_mutex_lock(&w.mu);
        while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
        exec = CL_COMPLETE;
        clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, NULL);
        if (exec < 0) st = exec;
    } else if (ev) {
        clFinish(dev->queue); /* the callback may still come: never return before it */
    }
    if (ev) clReleaseEvent(ev);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_DEVICE, "", "waiting for %s failed: %s", dev->info.id, pgn_cl_status_name(st));
        return -1;
    }
    return 0;
}

uint64_t pgn_device_launches(const pgn_device *dev) { return dev ? dev->launches : 0; }

int pgn_launch(pgn_device *dev, pgn_kernel_id id, const pgn_karg *args, cl_uint dims, const size_t *global,
               const size_t *local, pgn_error *err) {
    if (!dev->kernels[id]) {
        pgn_ops_group g = pgn_kernel_group_of(id);
        pgn_error_set(err, PGN_E_DEVICE, "", "%s: the %s kernel family is not built on %s (its profile runs %s for %s)",
                      pgn_kernel_name(id), pgn_kernel_family_name(pgn_kernel_family_of(id)), dev->info.id,
                      pgn_kernel_family_name(dev->profile.family[g]), pgn_ops_group_name(g));
        return -1;
    }
    return pgn_launch_kernel(dev, dev->kernels[id], id, args, dims, global, local, err);
}

int pgn_launch_kernel(pgn_device *dev, cl_kernel k, pgn_kernel_id id, const pgn_karg *args, cl_uint dims,
                      const size_t *global, const size_t *local, pgn_error *err) {
    const char *name = pgn_kernel_name(id);
    int nargs = pgn_kernel_nargs(id);
    for (int i = 0; i < nargs; i++) {
        cl_int st = clSetKernelArg(k, (cl_uint)i, args[i].size, args[i].value);
        if (st != CL_SUCCESS) {
            pgn_error_set(err, PGN_E_DEVICE, "", "%s: argument %d: %s", name, i,
                          pgn_cl_status_name(st));
            return -1;
        }
    }
    cl_event ev = NULL;
    cl_int st = clEnqueueNDRangeKernel(dev->queue, k, dims, NULL, global, local, 0, NULL,
                                       dev->profile_sink ? &ev : NULL);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_DEVICE, "", "%s: launch on %s failed: %s", name, dev->info.id,
                      pgn_cl_status_name(st));
        return -1;
    }
    dev->launches++;
    if (ev) {
        cl_ulong t0 = 0, t1 = 0;
        clWaitForEvents(1, &ev);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        clReleaseEvent(ev);
        *dev->profile_sink += (double)(t1 - t0) * 1e-9;
    }
    return 0;
}

int pgn_device_scratch_reserve(pgn_device *dev, cl_mem *mem, size_t *have, size_t bytes, const char *what,
                               pgn_error *err) {
    if (bytes <= *have) return 0;
    if (pgn_device_finish(dev, err)) return -1;
    pgn_device_release_buffer(dev, *mem);
    *mem = NULL;
    *have = 0;
    cl_int st;
    cl_mem grown = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, bytes, NULL, &st);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_DEVICE, "", "%s: allocating %zu bytes of scratch on %s: %s", what, bytes,
                      dev->info.id, pgn_cl_status_name(st));
        return -1;
    }
    *mem = grown;
    *have = bytes;
    return 0;
}

/* ---- host stores --------------------------------------------------------------------------
 * Oclgrind 21.10's uninitialised-value checker (--uninitialized) keeps one shadow per buffer
 * that says which bytes hold defined values. It follows what kernels store byte by byte, but a
 * host store replaces the buffer's shadow by one of just the bytes stored, counted from the
 * buffer's start: after a fill (stored 4 bytes at a time), a write at an offset or through a
 * sub-buffer, or a copy of part of a buffer, the rest reads as uninitialised. And a released
 * buffer's shadow stays with its slot, for the next buffer that takes it. So with that checker on
 * (dev->shadowed) a store that covers a whole buffer is one host write (which also gives the
 * buffer a fresh shadow), any other is a kernel (copy_u32, fill_u32 in kernels/tensor.cl) that
 * copies from a buffer created from the host's bytes, and no buffer is released before the
 * device closes, so that no slot is reused. Every other device takes the plain OpenCL calls. */

/* Words one work-item of copy_u32 and fill_u32 moves: fewer work-items to simulate. */
#define PGN_STORE_WORDS 64

static int store_fail(pgn_device *dev, const char *what, cl_int st, pgn_error *err) {
    pgn_error_set(err, PGN_E_DEVICE, "", "%s %s failed: %s", what, dev->info.id, pgn_cl_status_name(st));
    return -1;
}

/* Keeps mem until the device closes; 0, or -1 (and mem released) when out of memory. */
static int keep(pgn_device *dev, cl_mem mem) {
    cl_mem *grown = realloc(dev->kept, (dev->n_kept + 1) * sizeof *grown);
    if (!grown) {
        clReleaseMemObject(mem);
        return -1;
    }
    dev->kept = grown;
    dev->kept[dev->n_kept++] = mem;
    return 0;
}

void pgn_device_release_buffer(pgn_device *dev, cl_mem mem) {
    if (!mem) return;
    if (!dev || !dev->shadowed || keep(dev, mem)) clReleaseMemObject(mem);
}

/* A store of bytes at offset that covers all of mem, which is no sub-buffer. */
static bool whole_buffer(cl_mem mem, size_t offset, size_t bytes) {
    cl_mem parent = NULL;
    size_t size = 0;
    clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, NULL);
    clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, NULL);
    return !parent && offset == 0 && bytes == size;
}

/* The range of copy_u32 or fill_u32 over words words. */
static size_t store_items(cl_ulong words) { return (words + PGN_STORE_WORDS - 1) / PGN_STORE_WORDS; }

static int store_words(pgn_device *dev, const char *what, size_t offset, size_t bytes, pgn_error *err) {
    if (offset % 4 == 0 && bytes % 4 == 0) return 0;
    pgn_error_set(err, PGN_E_INTERNAL, "", "%s %s: %zu bytes at %zu are not whole 4-byte words", what, dev->info.id,
                  bytes, offset);
    return -1;
}

int pgn_device_write(pgn_device *dev, cl_mem mem, size_t offset, size_t bytes, const void *src, bool blocking,
                     pgn_error *err) {
    if (bytes == 0) return 0;
    cl_int st;
    if (!dev->shadowed || whole_buffer(mem, offset, bytes)) {
        st = clEnqueueWriteBuffer(dev->queue, mem, blocking ? CL_TRUE : CL_FALSE, offset, bytes, src, 0, NULL, NULL);
        return st == CL_SUCCESS ? 0 : store_fail(dev, "upload to", st, err);
    }
    if (store_words(dev, "upload to", offset, bytes, err)) return -1;
    cl_mem staged = clCreateBuffer(dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, (void *)src, &st);
    if (st != CL_SUCCESS) return store_fail(dev, "upload to", st, err);
    cl_ulong n = bytes / 4, from = 0, to = offset / 4;
    cl_uint per_item = PGN_STORE_WORDS;
    pgn_karg args[] = {KARG(n), KARG(per_item), KARG(staged), KARG(from), KARG(mem), KARG(to)};
    int rc = PGN_LAUNCH(dev, copy_u32, args, 1, (size_t[1]){store_items(n)}, NULL, err);
    pgn_device_release_buffer(dev, staged);
    return rc;
}

int pgn_device_fill_u32(pgn_device *dev, cl_mem mem, size_t offset, size_t bytes, uint32_t value,
                        pgn_error *err) {
    if (bytes == 0) return 0;
    if (!dev->shadowed) {
        cl_uint pattern = value;
        cl_int st = clEnqueueFillBuffer(dev->queue, mem, &pattern, sizeof pattern, offset, bytes, 0, NULL, NULL);
        return st == CL_SUCCESS ? 0 : store_fail(dev, "fill on", st, err);
    }
    if (store_words(dev, "fill on", offset, bytes, err)) return -1;
    if (whole_buffer(mem, offset, bytes)) {
        uint32_t *words = malloc(bytes);
        if (!words) {
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
            return -1;
        }
        for (size_t i = 0; i < bytes / 4; i++) words[i] = value;
        int rc = pgn_device_write(dev, mem, 0, bytes, words, true, err);
        free(words);
        return rc;
    }
    cl_ulong n = bytes / 4, at = offset / 4;
    cl_uint per_item = PGN_STORE_WORDS, v = value;
    pgn_karg args[] = {KARG(n), KARG(per_item), KARG(mem), KARG(at), KARG(v)};
    return PGN_LAUNCH(dev, fill_u32, args, 1, (size_t[1]){store_items(n)}, NULL, err);
}

int pgn_device_copy(pgn_device *dev, cl_mem src, size_t src_offset, cl_mem dst, size_t dst_offset, size_t bytes,
                    pgn_error *err) {
    if (bytes == 0) return 0;
    if (!dev->shadowed) {
        cl_int st = clEnqueueCopyBuffer(dev->queue, src, dst, src_offset, dst_offset, bytes, 0, NULL, NULL);
        return st == CL_SUCCESS ? 0 : store_fail(dev, "copy on", st, err);
    }
    if (store_words(dev, "copy on", src_offset, bytes, err) || store_words(dev, "copy on", dst_offset, bytes, err))
        return -1;
    cl_ulong n = bytes / 4, from = src_offset / 4, to = dst_offset / 4;
    cl_uint per_item = PGN_STORE_WORDS;
    pgn_karg args[] = {KARG(n), KARG(per_item), KARG(src), KARG(from), KARG(dst), KARG(to)};
    return PGN_LAUNCH(dev, copy_u32, args, 1, (size_t[1]){store_items(n)}, NULL, err);
}
