/* inet_build.c: a program's own reducer kernel (the profile's reducer file, kernels/inet.cl or
 * inet_gpu.cl, with its definitions compiled in: engine/inet/inet_plan.c), built beside the run. Building takes the compiler seconds the first
 * time a device sees a program (pocl on a 2-core Xeon: 5-20 s, most of it optimising the
 * worker's loop; afterwards its cache answers in a tenth of a second), so a run starts on the
 * device's shared kernel and asks for its own once it has run for PGN_INET_COMPILE_AFTER_S: a
 * thread builds it, and the run switches between two launches when it is there. Programs that
 * end sooner never wait for a compiler.
 *
 * Per device (its PGN_PART_INET): the builds by their source's SHA-256, one running at a time
 * (a build holds a core and hundreds of MB), the last few finished ones kept so a program run
 * again in the same process (paragond) starts on its own kernel at once. The device's close
 * waits for a running build.
 *
 * Across processes (`paragon run` again), the device's own compiler cache answers (pocl: 0.05
 * s instead of 5-20), but only a build asks it: a record, an empty file a finished build, tells
 * a later run that it may wait for its own kernel before the first launch instead of running
 * 0.1-0.3 s on the shared one (fib32 at 0.9 s: 100-135 MIPS so, 160-220 from the start). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "inet/inet.h"
#include "inet/inet_build.h"

/* Finished builds kept a device. */
#define KEEP 8

typedef struct build {
    uint8_t key[32];
    pgn_device *dev;
    char *src;               /* until built */
    size_t global, local;    /* the launch geometry it is warmed for */
    pthread_t thread;
    bool has_thread, joined; /* built by a thread (joined once it has finished), or by its asker */
    bool running, ok;        /* under the part's lock; the part's cv says when running ends */
    cl_program program;
    pgn_error err;
    uint64_t used; /* when it was last asked for (a counter): the oldest goes first */
    struct build *next;
} build;

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    build *list;
    uint64_t clock;
} inet_part;

static pthread_mutex_t part_mu = PTHREAD_MUTEX_INITIALIZER;

/* A finished build's thread, joined (it has nothing left to do once running is false). */
static void reap(build *b) {
    if (b->has_thread && !b->joined) pthread_join(b->thread, NULL);
    b->joined = true;
}

static void build_free(build *b) {
    reap(b);
    if (b->program) clReleaseProgram(b->program);
    free(b->src);
    free(b);
}

/* The device closes: running builds are waited for, then everything goes. */
static void part_release(pgn_device *dev, void *data) {
    (void)dev;
    inet_part *p = data;
    pthread_mutex_lock(&p->mu);
    for (build *b = p->list; b; b = b->next)
        while (b->running) pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    for (build *b = p->list, *next; b; b = next) {
        next = b->next;
        build_free(b);
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static const char *part_pending(void *data) {
    inet_part *p = data;
    bool running = false;
    pthread_mutex_lock(&p->mu);
    for (build *b = p->list; b && !running; b = b->next) running = b->running;
    pthread_mutex_unlock(&p->mu);
    return running ? "the program's own kernel, being built for its next runs" : NULL;
}

static inet_part *part_of(pgn_device *dev) {
    pthread_mutex_lock(&part_mu);
    inet_part *p = dev->part[PGN_PART_INET];
    if (!p && (p = calloc(1, sizeof *p))) {
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->cv, NULL);
        dev->part[PGN_PART_INET] = p;
        dev->part_release[PGN_PART_INET] = part_release;
        dev->part_pending[PGN_PART_INET] = part_pending;
    }
    pthread_mutex_unlock(&part_mu);
    return p;
}

pgn_kernel_id pgn_inet_kernel_of(const pgn_device *dev) {
    return dev->profile.family[PGN_OPS_INET] == PGN_FAMILY_GPU ? PGN_K_inet_reduce_gpu : PGN_K_inet_reduce;
}

/* Launches the new kernel once with no worker (every work-item leaves at once) on a queue of its
 * own, so that a device that compiles a kernel at its first launch (pocl) does it here and not
 * in the run's next launch. The arguments only need to be valid: one small buffer for all. */
static int warm(build *b, pgn_error *err) {
    cl_int st;
    cl_kernel k = clCreateKernel(b->program, pgn_kernel_name(pgn_inet_kernel_of(b->dev)), &st);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_KERNEL_BUILD, "", "creating the reducer's kernel failed: %s", pgn_cl_status_name(st));
        return -1;
    }
    cl_command_queue q = pgn_device_queue(b->dev, &st);
    cl_mem buf = st == CL_SUCCESS ? clCreateBuffer(b->dev->context, CL_MEM_READ_WRITE, 64, NULL, &st) : NULL;
    uint32_t zero = 0;
    uint64_t none = 0;
    /* the reducer's buffers, then its six counts (workers first) and last its budget */
    cl_uint n = (cl_uint)pgn_kernel_nargs(pgn_inet_kernel_of(b->dev)), buffers = n - 7;
    for (cl_uint i = 0; st == CL_SUCCESS && i < n; i++)
        st = i < buffers ? clSetKernelArg(k, i, sizeof buf, &buf)
             : i < n - 1 ? clSetKernelArg(k, i, sizeof zero, &zero)
                         : clSetKernelArg(k, i, sizeof none, &none);
    if (st == CL_SUCCESS) st = clEnqueueNDRangeKernel(q, k, 1, NULL, &b->global, &b->local, 0, NULL, NULL);
    if (st == CL_SUCCESS) st = clFinish(q);
    if (buf) clReleaseMemObject(buf);
    if (q) clReleaseCommandQueue(q);
    clReleaseKernel(k);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_DEVICE, "", "a first launch of the program's kernel failed: %s", pgn_cl_status_name(st));
        return -1;
    }
    return 0;
}

/* Where a build's record is: $XDG_CACHE_HOME/paragon/inet (else $HOME/.cache/...), beside pocl's
 * own cache, named by the build's key and what the device's compiler cache depends on (device,
 * driver, and the cache's own folder where one is named: POCL_CACHE_DIR, CUDA_CACHE_PATH). False
 * when there is no such folder. dir gets the folder, path the file. */
static bool record_path(const pgn_device *dev, const uint8_t key[32], char dir[512], char path[600]) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(dir, 512, "%s/paragon/inet", xdg);
    else if (home && *home) snprintf(dir, 512, "%s/.cache/paragon/inet", home);
    else return false;
    const char *parts[] = {dev->info.platform, dev->info.name, dev->info.driver_version, getenv("POCL_CACHE_DIR"),
                           getenv("CUDA_CACHE_PATH")};
    pgn_sha256 s;
    uint8_t d[32];
    pgn_sha256_init(&s);
    pgn_sha256_update(&s, key, 32);
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        pgn_sha256_update(&s, parts[i] ? parts[i] : "", strlen(parts[i] ? parts[i] : "") + 1);
    pgn_sha256_final(&s, d);
    int n = snprintf(path, 600, "%s/", dir);
    for (int i = 0; i < 16; i++) n += snprintf(path + n, (size_t)(600 - n), "%02x", d[i]);
    return true;
}

/* Writes b's record (best effort: without one, a later run only starts on the shared kernel). */
static void record(const build *b) {
    char dir[512], path[600];
    pgn_error ignored;
    if (!record_path(b->dev, b->key, dir, path) || pgn_make_dirs(dir, "cache", &ignored)) return;
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
}

/* Builds and warms b's kernel, then says it is done. */
static void build_run(build *b) {
    /* Oclgrind interprets, so there is nothing to warm; and a buffer released while its checker
     * for uninitialised reads runs lends its memory, shadow and all, to the next (the device keeps
     * its own buffers until it closes for that: device.c's shadowed) */
    bool ok = pgn_program_build(b->dev, b->src, &b->program, &b->err) == 0 && (b->dev->oclgrind || warm(b, &b->err) == 0);
    if (ok) record(b);
    inet_part *p = b->dev->part[PGN_PART_INET];
    pthread_mutex_lock(&p->mu);
    b->ok = ok;
    b->running = false;
    free(b->src);
    b->src = NULL;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void *build_main(void *arg) {
    build_run(arg);
    return NULL;
}

/* A build is of a source for a launch geometry: the warm-up compiles for that one (pocl
 * compiles a kernel for each work-group size it is launched with). */
static void digest(const char *src, size_t global, size_t local, uint8_t key[32]) {
    pgn_sha256 s;
    uint64_t sizes[2] = {global, local};
    pgn_sha256_init(&s);
    pgn_sha256_update(&s, src, strlen(src));
    pgn_sha256_update(&s, sizes, sizeof sizes);
    pgn_sha256_final(&s, key);
}

/* Drops the least recently asked for finished builds past KEEP (under the lock). */
static void trim(inet_part *p) {
    size_t done = 0;
    for (build *b = p->list; b; b = b->next) done += !b->running;
    while (done > KEEP) {
        build **oldest = NULL;
        for (build **b = &p->list; *b; b = &(*b)->next)
            if (!(*b)->running && (!oldest || (*b)->used < (*oldest)->used)) oldest = b;
        build *gone = *oldest;
        *oldest = gone->next;
        build_free(gone);
        done--;
    }
}

/* A finished build's answer (under the lock). */
static int answer(build *b, cl_program *out, pgn_error *err) {
    reap(b);
    if (!b->ok) {
        *err = b->err;
        return PGN_INET_BUILD_FAILED;
    }
    clRetainProgram(*out = b->program);
    return PGN_INET_BUILD_DONE;
}

int pgn_inet_build_kernel(pgn_device *dev, const char *src, size_t global, size_t local, bool wait, cl_program *out,
                          double *waited, pgn_error *err) {
    *out = NULL;
    *waited = 0;
    inet_part *p = part_of(dev);
    if (!p) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory keeping the program's kernel");
        return PGN_INET_BUILD_FAILED;
    }
    uint8_t key[32];
    digest(src, global, local, key);
    double t = pgn_now_s();
    pthread_mutex_lock(&p->mu);
    build *b = p->list;
    bool busy = false;
    for (; b && memcmp(b->key, key, sizeof key); b = b->next) busy |= b->running;
    if (!b && (wait || !busy)) { /* a new build: here when waiting, else by a thread */
        b = calloc(1, sizeof *b);
        char *copy = b ? strdup(src) : NULL;
        if (!copy) {
            free(b);
            pthread_mutex_unlock(&p->mu);
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory building the program's kernel");
            return PGN_INET_BUILD_FAILED;
        }
        memcpy(b->key, key, sizeof key);
        b->dev = dev;
        b->src = copy;
        b->global = global;
        b->local = local;
        b->running = true;
        b->next = p->list;
        p->list = b;
        b->has_thread = !wait && pthread_create(&b->thread, NULL, build_main, b) == 0;
        if (!b->has_thread) {
            pthread_mutex_unlock(&p->mu);
            build_run(b);
            pthread_mutex_lock(&p->mu);
        }
    }
    int rc = PGN_INET_BUILD_RUNNING;
    if (b) {
        b->used = ++p->clock;
        while (wait && b->running) pthread_cond_wait(&p->cv, &p->mu);
        if (!b->running) rc = answer(b, out, err);
        trim(p);
    }
    pthread_mutex_unlock(&p->mu);
    *waited = pgn_now_s() - t;
    return rc;
}

bool pgn_inet_build_known(pgn_device *dev, const char *src, size_t global, size_t local) {
    uint8_t key[32];
    digest(src, global, local, key);
    inet_part *p = part_of(dev);
    bool known = false;
    if (p) {
        pthread_mutex_lock(&p->mu);
        for (build *b = p->list; b && !known; b = b->next) known = !memcmp(b->key, key, sizeof key) && !b->running && b->ok;
        pthread_mutex_unlock(&p->mu);
    }
    char dir[512], path[600];
    struct stat st;
    return known || (record_path(dev, key, dir, path) && stat(path, &st) == 0);
}
