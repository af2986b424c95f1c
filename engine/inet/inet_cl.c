/* inet_cl.c: drives the OpenCL interaction-net reducer (kernels/inet.cl, or kernels/inet_gpu.cl
 * where the profile runs the gpu family: the same arguments and launches). Uploads the book,
 * seeds worker 0 with @main ~ root, then launches the persistent kernel in slices: between
 * launches it grows whatever heap or bag a worker found full, up to the caps max_nodes sets
 * (pgn_inet_caps_of; bags at their cap have their redexes spread over all of them), checks
 * the interaction limit, the timeout and cancellation, and reports the interactions and their
 * rate. At the end it downloads the heaps and prints @main's normal form with the shared
 * readback. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inet/inet.h"
#include "inet/inet_net.h"
#include "core.h"
#include "inet/inet_build.h"
#include "pgn_inet_dev.h"
#include "pgn_inet_plan.h"

/* Starting sizes; each doubles when a worker finds it full, up to its cap (pgn_inet_caps_of).
 * Slots 0 of both heaps are reserved (0 ends a free list) and variable 1 is the root. */
#define INITIAL_NODES (1u << 18)
#define INITIAL_VARS (1u << 18)
#define INITIAL_BAG 1024u
#define ROOT_VAR 1u
/* A launch is sized to take about this long, so limits, cancellation and progress are looked
 * at this often, and the launch cost (tens of microseconds) stays under 1 %. */
#define SLICE_S 0.1
#define BUDGET_MIN (1u << 12)
#define BUDGET_MAX (1ull << 32)
/* The workers, their work-group size and the first launch's budget are the device profile's
 * (engine/profile.c). A launch's budget is per worker; the next is what the busiest worker did,
 * scaled to SLICE_S by the time the launch took, and at most 4x what it did. A launch that a
 * worker ended early to grow a heap says the same rate: sized from the budget alone, launches
 * cut short while the heaps grew let it reach 4x every time, and later ones took 1.7-2 s (HVM2's
 * sort_bitonic_16 on pocl), through which a work-group that ran out of work and stopped waiting
 * stayed idle. */

/* One heap on the device (PGN_INET_HEAP_NODES, PGN_INET_HEAP_VARS): its slots, the owner of each
 * chunk, its size and the most it may grow to. */
typedef struct {
    cl_mem slots, owner;
    uint32_t cap, limit;
} clheap;

static const size_t heap_elem[2] = {8, 4}; /* bytes a slot */
static const char *const heap_name[2] = {"node heap is", "variable heap is"};

typedef struct {
    pgn_device *dev;
    pgn_inet_caps caps; /* how far the heaps and bags may grow (inet_mem.c) */
    uint64_t max_nodes;
    clheap heap[2];
    cl_mem bnodes, brbag, defs, plan, bags, mail, wk, ctl, scratch;
    uint32_t workers, bag_cap, bag_limit, scratch_stride, max_def_nodes;
    uint64_t max_alloc;                        /* the device's largest buffer */
    uint64_t dev_bytes, dev_peak;              /* device buffers held now and at the most */
    uint64_t host_bytes, host_peak;            /* the same on the host (book included) */
    pgn_inet_worker *w;                        /* host copies, read after each launch */
    uint64_t *itrs_before;                     /* each worker's count before the last launch */
    uint32_t *ctl_host;
    uint64_t *mail_host;
    /* The run's own kernel object. pocl keeps timing statistics per kernel object and schedules
     * by them: after launches of one work-group, later two-group launches of a shared object ran
     * on one thread (loops.hvm on 2 work-items: 161 MIPS after 1-work-item runs, 343 before). */
    cl_kernel kernel;
    cl_program program; /* the program's own kernel's, its definitions compiled in (or NULL) */
    pgn_kernel_id kid;  /* the profile's reducer: inet_reduce (cpu family) or inet_reduce_gpu */
} clnet;

static int cl_fail(pgn_error *err, cl_int st, const char *what) {
    pgn_error_set(err, PGN_E_DEVICE, "", "inet: %s failed: %s", what, pgn_cl_status_name(st));
    return -1;
}

static void hold(uint64_t *now, uint64_t *peak, uint64_t bytes) {
    *now += bytes;
    if (*now > *peak) *peak = *now;
}

/* A buffer of bytes (at least 8), filled from host when given. */
static int make_buffer(clnet *c, size_t bytes, const void *host, cl_mem *out, pgn_error *err) {
    cl_int st;
    if (bytes < 8) bytes = 8;
    *out = clCreateBuffer(c->dev->context, CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                          (void *)host, &st);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_DEVICE, "", "inet: allocating %zu bytes on %s failed: %s", bytes,
                      c->dev->info.id, pgn_cl_status_name(st));
        return -1;
    }
    hold(&c->dev_bytes, &c->dev_peak, bytes);
    return 0;
}

/* Releases a buffer made of bytes (as make_buffer rounded them). */
static void drop_buffer(clnet *c, cl_mem *buf, size_t bytes) {
    pgn_device_release_buffer(c->dev, *buf);
    *buf = NULL;
    c->dev_bytes -= bytes < 8 ? 8 : bytes;
}

static void clnet_release(clnet *c) {
    cl_mem *bufs[] = {&c->heap[0].slots, &c->heap[0].owner, &c->heap[1].slots, &c->heap[1].owner,
                      &c->bnodes,        &c->brbag,         &c->defs,          &c->plan,          &c->bags,
                      &c->mail,          &c->wk,            &c->ctl,           &c->scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        pgn_device_release_buffer(c->dev, *bufs[i]);
    free(c->w);
    free(c->itrs_before);
    free(c->ctl_host);
    free(c->mail_host);
    if (c->kernel) clReleaseKernel(c->kernel);
    if (c->program) clReleaseProgram(c->program);
}

/* The reducer's kernel from program (its own object: see clnet's kernel). */
static int use_kernel(clnet *c, cl_program program, pgn_error *err) {
    cl_int st;
    cl_kernel k = clCreateKernel(program, pgn_kernel_name(c->kid), &st);
    if (st != CL_SUCCESS) return cl_fail(err, st, "creating the reducer's kernel");
    if (c->kernel) clReleaseKernel(c->kernel);
    c->kernel = k;
    return 0;
}

/* Replaces *buf by a buffer of new_bytes holding the same first old_bytes. */
static int grow_buffer(clnet *c, cl_mem *buf, size_t old_bytes, size_t new_bytes, pgn_error *err) {
    cl_mem bigger;
    if (make_buffer(c, new_bytes, NULL, &bigger, err)) return -1;
    if (pgn_device_copy(c->dev, *buf, 0, bigger, 0, old_bytes, err)) {
        drop_buffer(c, &bigger, new_bytes);
        return -1;
    }
    drop_buffer(c, buf, old_bytes);
    *buf = bigger;
    return 0;
}

/* The next size of something at cap slots of elem bytes that must reach want: doubled, at most
 * limit and the device's largest buffer. 0 when it cannot grow. */
static uint32_t next_cap(const clnet *c, uint32_t cap, uint64_t want, uint32_t limit, size_t elem) {
    uint64_t n = (uint64_t)cap * 2;
    if (n < want) n = want;
    if (n > limit) n = limit;
    if (n * elem > c->max_alloc) n = c->max_alloc / elem;
    return n > cap ? (uint32_t)n : 0;
}

/* Something ("node heap is") at `cap` `unit` that must grow past them: the limit that binds is
 * max_nodes (through pgn_inet_caps_of), the heaps' address space, or, below the cap `limit`, the
 * device's largest buffer. */
static int fail_full(const clnet *c, const char *what, uint64_t cap, const char *unit, uint64_t limit, uint64_t itrs,
                     pgn_error *err) {
    if (cap < limit)
        return pgn_inet_fail_limit(err, "max_nodes",
                                   "the %s full at %llu %s, the most the largest buffer %s allows (%llu bytes), "
                                   "after %llu interactions",
                                   what, (unsigned long long)cap, unit, c->dev->info.id,
                                   (unsigned long long)c->max_alloc, (unsigned long long)itrs);
    if (c->caps.address_space)
        return pgn_inet_fail_limit(err, "max_nodes",
                                   "the %s full at %llu %s, the most the heaps' address space allows, after %llu "
                                   "interactions",
                                   what, (unsigned long long)cap, unit, (unsigned long long)itrs);
    return pgn_inet_fail_limit(err, "max_nodes",
                               "the %s full at %llu %s, the most %llu nodes allow with %u work-items' chunks, "
                               "after %llu interactions",
                               what, (unsigned long long)cap, unit, (unsigned long long)c->max_nodes, c->workers,
                               (unsigned long long)itrs);
}

/* Owner-table entries for a heap of cap slots: every chunk up to the end, and the chunks workers
 * may have taken past it (each holds at most one such). */
static size_t owner_entries(const clnet *c, uint32_t cap) {
    return ((size_t)cap + (size_t)c->workers * PGN_INET_CHUNK) / PGN_INET_CHUNK + 1;
}

/* Fills owner-table entries [from, to) with PGN_INET_NO_OWNER. */
static int clear_owners(const clnet *c, cl_mem owner, size_t from, size_t to, pgn_error *err) {
    return pgn_device_fill_u32(c->dev, owner, from * 4, (to - from) * 4, PGN_INET_NO_OWNER, err);
}

static int grow_heap(clnet *c, int h, uint64_t itrs, pgn_error *err) {
    clheap *hp = &c->heap[h];
    uint64_t top = c->ctl_host[PGN_INET_CTL_TOP(h)];
    uint32_t cap = next_cap(c, hp->cap, top + (uint64_t)c->workers * PGN_INET_CHUNK, hp->limit, heap_elem[h]);
    if (!cap) return fail_full(c, heap_name[h], hp->cap, "slots", hp->limit, itrs, err);
    size_t had = owner_entries(c, hp->cap), need = owner_entries(c, cap);
    if (grow_buffer(c, &hp->slots, hp->cap * heap_elem[h], cap * heap_elem[h], err) ||
        grow_buffer(c, &hp->owner, had * 4, need * 4, err) || clear_owners(c, hp->owner, had, need, err))
        return -1;
    hp->cap = cap;
    return 0;
}

/* Every worker's bag is a slice of one buffer, so growing moves each slice to its new place. */
static int grow_bags(clnet *c, uint32_t cap, pgn_error *err) {
    cl_mem bigger;
    size_t bytes = (size_t)cap * 8 * c->workers, old = (size_t)c->bag_cap * 8 * c->workers;
    if (make_buffer(c, bytes, NULL, &bigger, err)) return -1;
    for (uint32_t j = 0; j < c->workers; j++) {
        if (pgn_device_copy(c->dev, c->bags, (size_t)j * c->bag_cap * 8, bigger, (size_t)j * cap * 8,
                            (size_t)c->bag_cap * 8, err)) {
            drop_buffer(c, &bigger, bytes);
            return -1;
        }
    }
    drop_buffer(c, &c->bags, old);
    c->bags = bigger;
    c->bag_cap = cap;
    return 0;
}

/* The bags are at their cap, a worker's is full, but together they hold at most a redex per
 * node: deals the redexes out again, `per` to a bag in worker order, into a fresh buffer. Each
 * bag's cap is at least twice its share plus what a rule reserves (inet_mem.c), so every bag is
 * then at most about half full and the worker that stopped can go on. Which worker reduces which
 * redex changes neither the normal form nor the interaction count. */
static int spread_bags(clnet *c, uint64_t itrs, pgn_error *err) {
    uint64_t total = 0;
    for (uint32_t j = 0; j < c->workers; j++) total += c->w[j].bag_hi - c->w[j].bag_lo;
    uint64_t per = (total + c->workers - 1) / c->workers;
    if (per == 0 || per + c->caps.bag_reserve > c->bag_cap)
        return fail_full(c, "redex bags are", total, "redexes", c->bag_cap < c->bag_limit ? UINT64_MAX : total, itrs,
                         err);
    size_t bytes = (size_t)c->bag_cap * 8 * c->workers;
    cl_mem fresh;
    if (make_buffer(c, bytes, NULL, &fresh, err)) return -1;
    uint64_t dst = 0, fill = 0;
    for (uint32_t j = 0; j < c->workers; j++) {
        uint64_t lo = c->w[j].bag_lo, n = c->w[j].bag_hi - lo;
        while (n) {
            uint64_t take = n < per - fill ? n : per - fill;
            if (pgn_device_copy(c->dev, c->bags, ((size_t)j * c->bag_cap + lo) * 8, fresh,
                                ((size_t)dst * c->bag_cap + fill) * 8, take * 8, err)) {
                drop_buffer(c, &fresh, bytes);
                return -1;
            }
            lo += take;
            n -= take;
            fill += take;
            if (fill == per) dst++, fill = 0;
        }
    }
    for (uint32_t j = 0; j < c->workers; j++) {
        uint64_t before = (uint64_t)j * per, left = total > before ? total - before : 0;
        c->w[j].bag_lo = 0;
        c->w[j].bag_hi = (uint32_t)(left < per ? left : per);
    }
    cl_int st = clEnqueueWriteBuffer(c->dev->queue, c->wk, CL_TRUE, 0, c->workers * sizeof *c->w, c->w, 0, NULL, NULL);
    if (st != CL_SUCCESS) {
        drop_buffer(c, &fresh, bytes);
        return cl_fail(err, st, "spreading the redex bags");
    }
    drop_buffer(c, &c->bags, bytes);
    c->bags = fresh;
    return 0;
}

/* Room for a worker whose bag is full: bigger bags, or at their cap the same redexes spread. */
static int make_bag_room(clnet *c, uint64_t itrs, pgn_error *err) {
    uint32_t cap = next_cap(c, c->bag_cap, 0, c->bag_limit, 8 * (size_t)c->workers);
    return cap ? grow_bags(c, cap, err) : spread_bags(c, itrs, err);
}

/* Uploads the book and sets up empty heaps, the workers and the seed redex @main ~ root. */
static int clnet_init(clnet *c, pgn_device *dev, const pgn_inet_book *book, const pgn_inet_limits *L,
                      unsigned workers, pgn_error *err) {
    c->dev = dev;
    c->workers = workers;
    c->kid = pgn_inet_kernel_of(dev);
    if (use_kernel(c, dev->programs[pgn_kernel_family_of(c->kid)], err)) return -1;
    cl_ulong max_alloc = 0;
    clGetDeviceInfo(dev->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    c->max_alloc = max_alloc ? max_alloc : (1ull << 30);
    pgn_inet_caps_of(book, L->max_nodes, workers, &c->caps);
    c->max_nodes = L->max_nodes;
    clheap *nodes = &c->heap[PGN_INET_HEAP_NODES], *vars = &c->heap[PGN_INET_HEAP_VARS];
    nodes->limit = c->caps.node_slots;
    vars->limit = c->caps.var_slots;
    c->bag_limit = c->caps.bag_slots;
    nodes->cap = INITIAL_NODES < nodes->limit ? INITIAL_NODES : nodes->limit;
    vars->cap = INITIAL_VARS < vars->limit ? INITIAL_VARS : vars->limit;
    c->bag_cap = INITIAL_BAG < c->bag_limit ? INITIAL_BAG : c->bag_limit;
    c->max_def_nodes = book->max_def_nodes;
    /* Whole cache lines per worker: CALL writes its scratch on every expansion; the gpu family
     * keeps its pending links at the end (kernels/inet_worker.h). */
    c->scratch_stride = (book->max_def_nodes + book->max_def_vars + 2 * PGN_INET_LINKS_CAP + 16) / 16 * 16;

    uint32_t *defs = calloc((size_t)book->n_defs * PGN_INET_DEF_WORDS + 1, sizeof *defs);
    c->w = calloc(workers, sizeof *c->w);
    c->itrs_before = calloc(workers, sizeof *c->itrs_before);
    c->ctl_host = calloc(PGN_INET_CTL_WORDS(workers), sizeof *c->ctl_host);
    c->mail_host = calloc(PGN_INET_MAIL_WORDS(workers), sizeof *c->mail_host);
    if (!defs || !c->w || !c->itrs_before || !c->ctl_host || !c->mail_host) {
        free(defs);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory setting up the reducer");
        return -1;
    }
    size_t defs_bytes = ((size_t)book->n_defs * PGN_INET_DEF_WORDS + 1) * sizeof *defs;
    hold(&c->host_bytes, &c->host_peak,
         pgn_inet_book_bytes(book) + defs_bytes + workers * sizeof *c->w +
             PGN_INET_CTL_WORDS(workers) * sizeof *c->ctl_host + PGN_INET_MAIL_WORDS(workers) * sizeof *c->mail_host);
    bool plans = pgn_inet_plans_mode() != PGN_INET_PLANS_OFF;
    for (uint32_t i = 0; i < book->n_defs; i++) {
        const pgn_inet_def *d = &book->defs[i];
        uint32_t *o = defs + (size_t)i * PGN_INET_DEF_WORDS;
        o[PGN_INET_DEF_ROOT] = d->root;
        o[PGN_INET_DEF_NODE_OFF] = d->node_off;
        o[PGN_INET_DEF_NODE_LEN] = d->node_len;
        o[PGN_INET_DEF_RBAG_OFF] = d->rbag_off;
        o[PGN_INET_DEF_RBAG_LEN] = d->rbag_len;
        o[PGN_INET_DEF_VARS_LEN] = d->vars_len;
        o[PGN_INET_DEF_SAFE] = d->safe;
        o[PGN_INET_DEF_LINKS] = d->links;
        o[PGN_INET_DEF_PLAN_OFF] = d->plan_off;
        o[PGN_INET_DEF_PLAN_LEN] = plans && d->plan_regs <= PGN_INET_PLAN_REGS ? d->plan_len : 0;
        o[PGN_INET_DEF_PLAN_REGS] = d->plan_regs;
    }
    c->ctl_host[PGN_INET_CTL_TOP(PGN_INET_HEAP_NODES)] = PGN_INET_CHUNK; /* chunk 0 is no worker's */
    c->ctl_host[PGN_INET_CTL_TOP(PGN_INET_HEAP_VARS)] = PGN_INET_CHUNK;
    c->w[0].bag_hi = 1;
    uint32_t root_none = PGN_INET_NONE;
    uint64_t seed = pgn_inet_pair(pgn_inet_port(PGN_INET_REF, 0), pgn_inet_port(PGN_INET_VAR, ROOT_VAR));
    /* Owner tables cover the heaps as they are, and grow with them. */
    size_t chunks[2];
    for (int h = 0; h < 2; h++) chunks[h] = owner_entries(c, c->heap[h].cap);
    int rc = make_buffer(c, nodes->cap * heap_elem[0], NULL, &nodes->slots, err) ||
             make_buffer(c, vars->cap * heap_elem[1], NULL, &vars->slots, err) ||
             make_buffer(c, chunks[0] * 4, NULL, &nodes->owner, err) ||
             make_buffer(c, chunks[1] * 4, NULL, &vars->owner, err) ||
             make_buffer(c, (size_t)book->n_nodes * 8, book->n_nodes ? book->nodes : NULL, &c->bnodes, err) ||
             make_buffer(c, (size_t)book->n_rbag * 8, book->n_rbag ? book->rbag : NULL, &c->brbag, err) ||
             make_buffer(c, (size_t)book->n_defs * PGN_INET_DEF_WORDS * 4, defs, &c->defs, err) ||
             make_buffer(c, (size_t)book->n_plan * PGN_INET_STEP_WORDS * 4, book->n_plan ? book->plan : NULL, &c->plan,
                         err) ||
             make_buffer(c, (size_t)c->bag_cap * 8 * workers, NULL, &c->bags, err) ||
             make_buffer(c, PGN_INET_MAIL_WORDS(workers) * 8, c->mail_host, &c->mail, err) ||
             make_buffer(c, workers * sizeof *c->w, c->w, &c->wk, err) ||
             make_buffer(c, PGN_INET_CTL_WORDS(workers) * 4, NULL, &c->ctl, err) ||
             make_buffer(c, (size_t)c->scratch_stride * 4 * workers, NULL, &c->scratch, err);
    free(defs);
    c->host_bytes -= defs_bytes;
    if (rc) return -1;
    for (int h = 0; h < 2; h++)
        if (clear_owners(c, c->heap[h].owner, 0, chunks[h], err)) return -1;
    return pgn_device_write(dev, vars->slots, ROOT_VAR * 4, 4, &root_none, true, err) ||
                   pgn_device_write(dev, c->bags, 0, 8, &seed, true, err)
               ? -1
               : 0;
}

/* The launch's work-items: the workers, in whole work-groups of the profile's size (one group of
 * all of them where they are fewer). */
static void geometry(const clnet *c, size_t *global, size_t *local) {
    *local = c->dev->profile.inet_local;
    if (*local > c->workers) *local = c->workers; /* no group larger than the run: idle padding */
    *global = (c->workers + *local - 1) / *local * *local;
}

/* One launch with every flag cleared; returns after reading the workers, control and mail back. */
static int launch(clnet *c, uint64_t budget, pgn_error *err) {
    c->ctl_host[PGN_INET_CTL_STOP] = 0;
    c->ctl_host[PGN_INET_CTL_IDLE] = 0;
    for (uint32_t j = 0; j < c->workers; j++) c->ctl_host[PGN_INET_CTL_HUNGRY(j)] = c->ctl_host[PGN_INET_CTL_GIFTS(j)] = 0;
    cl_int st = clEnqueueWriteBuffer(c->dev->queue, c->ctl, CL_FALSE, 0, PGN_INET_CTL_WORDS(c->workers) * 4,
                                     c->ctl_host, 0, NULL, NULL);
    if (st != CL_SUCCESS) return cl_fail(err, st, "writing the control block");
    const clheap *nodes = &c->heap[PGN_INET_HEAP_NODES], *vars = &c->heap[PGN_INET_HEAP_VARS];
    pgn_karg args[] = {KARG(nodes->slots),      KARG(vars->slots),       KARG(nodes->owner), KARG(vars->owner),
                       KARG(c->bnodes),         KARG(c->brbag),          KARG(c->defs),      KARG(c->plan),
                       KARG(c->bags),           KARG(c->mail),           KARG(c->wk),        KARG(c->ctl),
                       KARG(c->scratch),        KARG(c->workers),        KARG(nodes->cap),   KARG(vars->cap),
                       KARG(c->bag_cap),        KARG(c->scratch_stride), KARG(c->max_def_nodes), KARG(budget)};
    size_t global, local;
    geometry(c, &global, &local);
    (void)PGN_KERNEL_CHECKED(inet_reduce, args); /* the two reducers take the same arguments */
    (void)PGN_KERNEL_CHECKED(inet_reduce_gpu, args);
    if (pgn_launch_kernel(c->dev, c->kernel, c->kid, args, 1, &global, &local, err))
        return -1;
    st = clEnqueueReadBuffer(c->dev->queue, c->wk, CL_FALSE, 0, c->workers * sizeof *c->w, c->w, 0, NULL, NULL);
    if (st == CL_SUCCESS)
        st = clEnqueueReadBuffer(c->dev->queue, c->mail, CL_FALSE, 0, PGN_INET_MAIL_WORDS(c->workers) * 8,
                                 c->mail_host, 0, NULL, NULL);
    if (st == CL_SUCCESS)
        st = clEnqueueReadBuffer(c->dev->queue, c->ctl, CL_FALSE, 0, PGN_INET_CTL_WORDS(c->workers) * 4,
                                 c->ctl_host, 0, NULL, NULL);
    if (st != CL_SUCCESS) return cl_fail(err, st, "running the reducer");
    return pgn_device_finish(c->dev, err);
}

/* The program's own kernel (kernels/inet.cl with the book's plans compiled in, src), from
 * inet_build.c: waited for, or asked for between launches while a thread builds it. 1 when the
 * run now uses it, 0 while it is being built, -1 when building it failed. */
static int use_plans(clnet *c, const char *src, bool wait, double *waited, pgn_error *err) {
    size_t global, local;
    geometry(c, &global, &local);
    cl_program program;
    int rc = pgn_inet_build_kernel(c->dev, src, global, local, wait, &program, waited, err);
    if (rc == PGN_INET_BUILD_RUNNING) return 0;
    if (rc == PGN_INET_BUILD_FAILED) return -1;
    c->program = program;
    return use_kernel(c, program, err) ? -1 : 1;
}

/* Whether the device has built src for this run's geometry before (inet_build.c). */
static bool own_known(clnet *c, const char *src) {
    size_t global, local;
    geometry(c, &global, &local);
    return pgn_inet_build_known(c->dev, src, global, local);
}

/* The source of the program's own kernel: the reducer's file (kernels/inet.cl, or inet_gpu.cl for
 * the gpu family) with the book's small definitions compiled in (*src NULL when it has none: the shared kernel interprets every plan). */
static int own_source(const clnet *c, const pgn_inet_book *book, char **src, pgn_error *err) {
    uint32_t n_compiled = 0;
    char *defs = pgn_inet_plan_source(book, &n_compiled);
    const char *file = c->kid == PGN_K_inet_reduce_gpu ? "inet_gpu.cl" : "inet.cl";
    *src = defs && n_compiled ? pgn_program_source_one(file, "#define PGN_INET_COMPILED 1\n", defs) : NULL;
    bool failed = !defs || (n_compiled && !*src);
    free(defs);
    if (failed) pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory writing the program's kernel");
    return failed ? -1 : 0;
}

/* Downloads the heaps as far as they are used: *nodes and *vars (malloc'd), counted in the
 * host's bytes. */
static int clnet_download(clnet *c, uint64_t **nodes, uint32_t *n_nodes, uint32_t **vars, uint32_t *n_vars,
                          pgn_error *err) {
    uint32_t nn = c->ctl_host[PGN_INET_CTL_TOP(PGN_INET_HEAP_NODES)];
    uint32_t nv = c->ctl_host[PGN_INET_CTL_TOP(PGN_INET_HEAP_VARS)];
    if (nn > c->heap[PGN_INET_HEAP_NODES].cap) nn = c->heap[PGN_INET_HEAP_NODES].cap;
    if (nv > c->heap[PGN_INET_HEAP_VARS].cap) nv = c->heap[PGN_INET_HEAP_VARS].cap;
    *nodes = malloc((size_t)nn * 8 + 8);
    *vars = malloc((size_t)nv * 4 + 4);
    *n_nodes = nn;
    *n_vars = nv;
    hold(&c->host_bytes, &c->host_peak, (uint64_t)nn * 8 + 8 + (uint64_t)nv * 4 + 4);
    if (!*nodes || !*vars) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory reading the net back");
        return -1;
    }
    cl_int st = clEnqueueReadBuffer(c->dev->queue, c->heap[PGN_INET_HEAP_NODES].slots, CL_FALSE, 0, (size_t)nn * 8,
                                    *nodes, 0, NULL, NULL);
    if (st == CL_SUCCESS)
        st = clEnqueueReadBuffer(c->dev->queue, c->heap[PGN_INET_HEAP_VARS].slots, CL_TRUE, 0, (size_t)nv * 4, *vars,
                                 0, NULL, NULL);
    return st == CL_SUCCESS ? 0 : cl_fail(err, st, "reading the net back");
}

/* The normal form: printed from the downloaded heaps; or, with io, the heaps taken over by a host
 * net that performs the program's IO and goes on reducing (inet_io.c), then printed from it.
 * *itrs grows by the host's interactions; out gets the IO's output. */
static char *clnet_finish(clnet *c, const pgn_inet_book *book, const pgn_inet_limits *L, double elapsed,
                          const pgn_inet_io *io, const pgn_run_hooks *hooks, uint64_t *itrs, pgn_inet_result *out,
                          pgn_error *err) {
    uint64_t *nodes = NULL, printing = 0;
    uint32_t *vars = NULL, n_nodes = 0, n_vars = 0;
    char *nf = NULL;
    pgn_inet_net *n = NULL;
    pgn_inet_limits left = *L; /* the timeout goes on from where the device left it */
    if (left.timeout_s > 0) left.timeout_s = left.timeout_s > elapsed ? left.timeout_s - elapsed : 1e-9;
    if (clnet_download(c, &nodes, &n_nodes, &vars, &n_vars, err)) {
    } else if (!io) {
        nf = pgn_inet_readback(book, nodes, n_nodes, vars, n_vars, pgn_inet_port(PGN_INET_VAR, ROOT_VAR), &printing,
                               err);
        hold(&c->host_bytes, &c->host_peak, printing);
    } else if (pgn_inet_net_adopt(book, &left, nodes, n_nodes, vars, n_vars, ROOT_VAR, *itrs, &n, err) == 0) {
        if (pgn_inet_io_run(n, io, hooks, out, err) == 0) nf = pgn_inet_net_readback(n, err);
        *itrs = pgn_inet_net_interactions(n);
        uint64_t host_nodes, host_bytes;
        pgn_inet_net_peaks(n, &host_nodes, &host_bytes);
        hold(&c->host_bytes, &c->host_peak, host_bytes);
    }
    pgn_inet_net_free(n);
    free(nodes);
    free(vars);
    return nf;
}

/* What the workers asked for after a launch: grows it, or fails. 1: the run is over (normal form),
 * 0: launch again, -1: failed. */
static int after_launch(clnet *c, const pgn_inet_book *book, uint64_t itrs, pgn_error *err) {
    bool need[2] = {false, false}, need_bag = false, busy = false;
    for (uint32_t j = 0; j < c->workers; j++) {
        const pgn_inet_worker *w = &c->w[j];
        if (w->status == PGN_INET_ST_CLONE) return pgn_inet_fail_clone(book, w->status_arg, err);
        need[0] |= w->status == PGN_INET_ST_NEED_NODES;
        need[1] |= w->status == PGN_INET_ST_NEED_VARS;
        for (int h = 0; h < 2; h++) need[h] |= w->heap[h].end > c->heap[h].cap;
        need_bag |= w->status == PGN_INET_ST_NEED_BAG;
        busy |= w->bag_lo != w->bag_hi || c->mail_host[PGN_INET_MAIL(j)] != 0;
    }
    for (int h = 0; h < 2; h++)
        if (need[h] && grow_heap(c, h, itrs, err)) return -1;
    if (need_bag && make_bag_room(c, itrs, err)) return -1;
    return busy ? 0 : 1;
}

int pgn_inet_run_cl(pgn_device *dev, const pgn_inet_book *book, const pgn_inet_limits *lim, const pgn_inet_io *io,
                    unsigned workers, const pgn_run_hooks *hooks, pgn_inet_result *out, pgn_error *err) {
    pgn_inet_limits L = lim ? *lim : (pgn_inet_limits){0};
    *out = (pgn_inet_result){0};
    if (!workers) workers = dev->profile.inet_workers;
    clnet c = {0};
    if (clnet_init(&c, dev, book, &L, workers, err)) {
        clnet_release(&c);
        return -1;
    }
    /* The program's own kernel (inet_build.c): at once when asked ("now") or when the device has
     * built it before (its compiler cache answers at once), else once the run has gone on for
     * PGN_INET_COMPILE_AFTER_S (built by a thread). compiling: the seconds the run waited for it
     * before its first launch, not part of the reduction's. */
    pgn_inet_plans plans = pgn_inet_plans_mode();
    char *src = NULL;
    if (plans != PGN_INET_PLANS_OFF && own_source(&c, book, &src, err)) {
        clnet_release(&c);
        return -1;
    }
    double compiling = 0;
    bool first = src && (plans == PGN_INET_PLANS_NOW || own_known(&c, src));
    int own = first ? use_plans(&c, src, true, &compiling, err) : 0;
    if (own < 0) {
        free(src);
        clnet_release(&c);
        return -1;
    }
    bool compile = src && !own;
    double first_end = 0; /* when the first launch ended: time from there tells a long run */
    double t0 = pgn_now_s(), wall0 = t0 - compiling, next_report = t0 + PGN_INET_REPORT_EVERY_S;
    uint64_t budget = dev->profile.inet_first_budget, itrs = 0;
    int state;
    for (;;) {
        uint64_t b = budget;
        if (L.max_interactions) { /* stop near the limit: each worker may do its share of what is left */
            uint64_t left = L.max_interactions > itrs ? L.max_interactions - itrs : 0;
            uint64_t share = left / workers + 1;
            if (share < b) b = share;
        }
        double t = pgn_now_s();
        if (launch(&c, b, err)) {
            state = -1;
            break;
        }
        double slice = pgn_now_s() - t;
        uint64_t busiest = 0; /* the most one worker did in this launch */
        itrs = 0;
        for (uint32_t j = 0; j < workers; j++) {
            uint64_t did = c.w[j].itrs - c.itrs_before[j];
            if (did > busiest) busiest = did;
            c.itrs_before[j] = c.w[j].itrs;
            itrs += c.w[j].itrs;
        }
        state = after_launch(&c, book, itrs, err);
        if (L.max_interactions && itrs > L.max_interactions) {
            state = pgn_inet_fail_limit(err, "max_interactions", "%llu interactions reached",
                                        (unsigned long long)L.max_interactions);
        }
        if (state) break;
        double now = pgn_now_s();
        if (hooks && now >= next_report) { /* before the limits: a run they end has said how far it got */
            next_report = now + PGN_INET_REPORT_EVERY_S;
            pgn_inet_report(hooks, itrs, now - t0);
        }
        if (L.max_interactions && itrs == L.max_interactions) {
            state = pgn_inet_fail_limit(err, "max_interactions", "%llu interactions reached",
                                        (unsigned long long)L.max_interactions);
            break;
        }
        if (L.timeout_s > 0 && now - wall0 >= L.timeout_s) {
            state = pgn_inet_fail_limit(err, "timeout_s", "%g s reached (after %llu interactions)", L.timeout_s,
                                        (unsigned long long)itrs);
            break;
        }
        if (hooks && hooks->should_stop && hooks->should_stop(hooks->ctx)) {
            pgn_error_set(err, PGN_E_CANCELLED, "", "cancelled after %llu interactions", (unsigned long long)itrs);
            state = -1;
            break;
        }
        /* A run still going PGN_INET_COMPILE_AFTER_S after its first launch (which may include the
         * device compiling the shared kernel: seconds on a cold cache) is worth its own kernel:
         * asked for at each launch from then on, it is used from the launch after it is built. */
        if (!first_end) first_end = now; /* the first launch may hold the device's own compile */
        if (compile && now - first_end >= PGN_INET_COMPILE_AFTER_S) {
            double waited;
            own = use_plans(&c, src, false, &waited, err);
            if (own < 0) {
                state = -1;
                break;
            }
            if (own) {
                compile = false;
                slice = 0; /* the speed changes: the budget grows again from here */
            }
        }
        /* Size the next launch to take about SLICE_S at this launch's rate. */
        double scale = slice > 0 ? SLICE_S / slice : 4;
        if (scale > 4) scale = 4;
        if (busiest) budget = (uint64_t)((double)busiest * scale); /* none did any: as it was */
        if (budget < BUDGET_MIN) budget = BUDGET_MIN;
        if (budget > BUDGET_MAX) budget = BUDGET_MAX;
    }
    char *nf = state == 1 ? clnet_finish(&c, book, &L, pgn_now_s() - wall0, io, hooks, &itrs, out, err) : NULL;
    double seconds = pgn_now_s() - t0;
    uint64_t peak = c.ctl_host[PGN_INET_CTL_TOP(PGN_INET_HEAP_NODES)];
    if (peak > c.heap[PGN_INET_HEAP_NODES].cap) peak = c.heap[PGN_INET_HEAP_NODES].cap;
    peak = peak > PGN_INET_CHUNK ? peak - PGN_INET_CHUNK : 0;
    uint64_t dev_peak = c.dev_peak, host_peak = c.host_peak;
    clnet_release(&c);
    out->normal_form = nf;
    out->interactions = itrs;
    out->seconds = seconds;
    out->mips = seconds > 0 ? (double)itrs / seconds / 1e6 : 0;
    out->peak_nodes = peak;
    out->peak_bytes = dev_peak + host_peak;
    out->peak_device_bytes = dev_peak;
    out->compile_seconds = first ? compiling : 0;
    out->compiled = own > 0;
    free(src);
    return nf ? 0 : -1;
}
