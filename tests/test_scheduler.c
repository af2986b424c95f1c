/* test_scheduler.c: the scheduler's workers against a store that refuses writes. SQLite's files
 * go through a VFS of this test's (registered as the default, wrapping the real one) that fails
 * any write carrying a chosen byte string with SQLITE_FULL, as a full disk would: so exactly the
 * write of a job's end is refused, while claims, logs and reads work. No timing is asserted;
 * waits are bounded. */
#include "paragon.h"
#include "scheduler.h"
#include "store.h"
#include "views.h"

#include <criterion/criterion.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 120000

/* ---- a VFS whose writes fail on demand ------------------------------------------------ */

static sqlite3_vfs *real_vfs;
static sqlite3_vfs faulty_vfs;
static _Atomic(const char *) refuse_bytes; /* writes holding these bytes fail; NULL: none */
static atomic_int refused_writes;

typedef struct faulty_file {
    sqlite3_file base;
    sqlite3_file *real; /* follows this struct in the same allocation */
} faulty_file;

#define REAL(f) (((faulty_file *)(f))->real)

static int f_close(sqlite3_file *f) {
    int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
    return rc;
}
static int f_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o) {
    return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int f_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o) {
    const char *needle = atomic_load(&refuse_bytes);
    if (needle && memmem(b, (size_t)n, needle, strlen(needle))) {
        atomic_fetch_add(&refused_writes, 1);
        return SQLITE_FULL;
    }
    return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int f_truncate(sqlite3_file *f, sqlite3_int64 size) {
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int f_sync(sqlite3_file *f, int flags) { return REAL(f)->pMethods->xSync(REAL(f), flags); }
static int f_size(sqlite3_file *f, sqlite3_int64 *size) {
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}
static int f_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int f_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int f_reserved(sqlite3_file *f, int *out) {
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int f_control(sqlite3_file *f, int op, void *arg) {
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int f_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int f_chars(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int f_shm_map(sqlite3_file *f, int i, int size, int extend, void volatile **p) {
    return REAL(f)->pMethods->xShmMap(REAL(f), i, size, extend, p);
}
static int f_shm_lock(sqlite3_file *f, int off, int n, int flags) {
    return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void f_shm_barrier(sqlite3_file *f) { REAL(f)->pMethods->xShmBarrier(REAL(f)); }
static int f_shm_unmap(sqlite3_file *f, int del) {
    return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int f_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **p) {
    return REAL(f)->pMethods->xFetch(REAL(f), o, n, p);
}
static int f_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p) {
    return REAL(f)->pMethods->xUnfetch(REAL(f), o, p);
}

static const sqlite3_io_methods faulty_io = {
    3,        f_close,    f_read,      f_write,      f_truncate,    f_sync,
    f_size,   f_lock,     f_unlock,    f_reserved,   f_control,     f_sector,
    f_chars,  f_shm_map,  f_shm_lock,  f_shm_barrier, f_shm_unmap,  f_fetch,
    f_unfetch,
};

static int faulty_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out) {
    (void)vfs;
    faulty_file *ff = (faulty_file *)f;
    ff->real = (sqlite3_file *)(ff + 1);
    int rc = real_vfs->xOpen(real_vfs, name, ff->real, flags, out);
    f->pMethods = rc == SQLITE_OK && ff->real->pMethods ? &faulty_io : NULL;
    return rc;
}

static void install_faulty_vfs(void) {
    if (real_vfs) return;
    cr_assert_eq(sqlite3_initialize(), SQLITE_OK);
    real_vfs = sqlite3_vfs_find(NULL);
    cr_assert_not_null(real_vfs);
    cr_assert_geq(real_vfs->iVersion, 1);
    faulty_vfs = *real_vfs;
    faulty_vfs.zName = "faulty";
    faulty_vfs.szOsFile = (int)sizeof(faulty_file) + real_vfs->szOsFile;
    faulty_vfs.xOpen = faulty_open;
    faulty_vfs.pNext = NULL;
    cr_assert_eq(sqlite3_vfs_register(&faulty_vfs, 1), SQLITE_OK);
}

/* ---- fixture ----------------------------------------------------------------------------- */

static char tmpdir[256];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void setup(void) {
    install_faulty_vfs();
    atomic_store(&refuse_bytes, NULL);
    atomic_store(&refused_writes, 0);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/paragon-sched-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void) {
    atomic_store(&refuse_bytes, NULL);
    nftw(tmpdir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(scheduler, .init = setup, .fini = teardown);

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static pgd_store *open_store(void) {
    char path[300];
    snprintf(path, sizeof path, "%s/s.db", tmpdir);
    pgd_store *s;
    pgn_error err;
    cr_assert_eq(pgd_store_open(path, &s, &err), 0, "%s", err.message);
    return s;
}

/* Queues an inet job for device (a validated spec, as the API stores it, asking for the host). */
static int64_t queue_inet(pgd_store *s, const char *device, const char *program) {
    char text[256];
    snprintf(text, sizeof text, "{\"kind\":\"inet\",\"device\":\"host\",\"program\":\"%s\"}",
             program);
    pgn_job_spec spec;
    pgn_error err;
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    json_t *spec_json = pgn_spec_to_json(&spec);
    pgn_spec_free(&spec);
    pgd_new_job job = {.kind = PGN_JOB_INET, .name = "t", .device_requested = device, .device = device,
                       .spec = spec_json};
    int64_t id;
    cr_assert_eq(pgd_store_jobs_insert(s, &job, 1, &id, &err), 0, "%s", err.message);
    json_decref(spec_json);
    return id;
}

/* The job as the API shows it. */
static json_t *job(pgd_store *s, int64_t id) {
    pgd_job j;
    pgn_error err;
    cr_assert_eq(pgd_store_job_get(s, id, false, &j, &err), 0, "%s", err.message);
    json_t *o = pgd_job_json(&j, false);
    pgd_job_release(&j);
    return o;
}

static const char *state_of(const json_t *o) {
    return json_string_value(json_object_get(o, "state"));
}

/* Polls until the job's state is `state`; bounded. */
static json_t *wait_state(pgd_store *s, int64_t id, const char *state) {
    int64_t deadline = now_ms() + WAIT_MS;
    for (;;) {
        json_t *o = job(s, id);
        if (strcmp(state_of(o), state) == 0) return o;
        cr_assert_lt(now_ms(), deadline, "job %lld is %s, not %s", (long long)id, state_of(o), state);
        json_decref(o);
        usleep(20000);
    }
}

static pgd_scheduler *start(pgd_store *s) {
    pgd_scheduler *sched;
    pgn_error err;
    /* No OpenCL device: the host pseudo-device's worker alone. */
    cr_assert_eq(pgd_scheduler_start(s, NULL, NULL, 0, tmpdir, false, 3, 1, &sched, &err), 0, "%s",
                 err.message);
    return sched;
}

/* ---- tests ------------------------------------------------------------------------------- */

Test(scheduler, an_end_the_store_refuses_is_retried_until_it_lands_with_its_result) {
    pgd_store *s = open_store();
    /* Only the write of the job's end carries its result's key. */
    atomic_store(&refuse_bytes, "\"normal_form\"");
    int64_t id = queue_inet(s, "host", "@main = 42");
    pgd_scheduler *sched = start(s);

    int64_t deadline = now_ms() + WAIT_MS;
    while (atomic_load(&refused_writes) < 3) {
        cr_assert_lt(now_ms(), deadline, "the worker retries its refused end");
        usleep(20000);
    }
    json_t *o = job(s, id);
    cr_assert_str_eq(state_of(o), "running", "not recorded, not abandoned either");
    json_decref(o);

    /* Space again: the held outcome lands, result and all. */
    atomic_store(&refuse_bytes, NULL);
    o = wait_state(s, id, "succeeded");
    json_t *result = json_object_get(o, "result");
    cr_assert_str_eq(json_string_value(json_object_get(result, "normal_form")), "42");
    json_decref(o);

    /* The worker serves on. */
    int64_t next = queue_inet(s, "host", "@main = 7");
    pgd_scheduler_notify(sched, "host");
    json_decref(wait_state(s, next, "succeeded"));
    pgd_scheduler_stop(sched);
    pgd_store_close(s);
}

Test(scheduler, shutdown_stops_the_retries_and_the_next_start_recovers_the_job) {
    pgd_store *s = open_store();
    atomic_store(&refuse_bytes, "\"normal_form\"");
    int64_t id = queue_inet(s, "host", "@main = 5");
    pgd_scheduler *sched = start(s);
    int64_t deadline = now_ms() + WAIT_MS;
    while (atomic_load(&refused_writes) < 1) {
        cr_assert_lt(now_ms(), deadline);
        usleep(20000);
    }
    pgd_scheduler_stop(sched); /* returns: the worker does not retry forever at shutdown */
    atomic_store(&refuse_bytes, NULL);
    pgd_recovery rec;
    pgn_error err;
    cr_assert_eq(pgd_store_recover(s, 3, false, &rec, &err), 0, "%s", err.message);
    cr_assert_eq(rec.requeued, 1);
    sched = start(s);
    json_t *o = wait_state(s, id, "succeeded");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "result"), "normal_form")), "5");
    json_decref(o);
    pgd_scheduler_stop(sched);
    pgd_store_close(s);
}

Test(scheduler, a_cancel_of_a_running_job_that_no_worker_runs_ends_it) {
    pgd_store *s = open_store();
    pgd_scheduler *sched = start(s);
    /* Running in the store, on a device this scheduler has no worker for. */
    int64_t id = queue_inet(s, "gone-device", "@main = 1");
    pgn_error err;
    int64_t claimed, attempt;
    json_t *spec;
    cr_assert_eq(pgd_store_job_claim(s, "gone-device", NULL, 0, &claimed, &attempt, NULL, &spec, &err), 0, "%s", err.message);
    cr_assert_eq(claimed, id);
    json_decref(spec);

    pgd_job o;
    cr_assert_eq(pgd_scheduler_cancel(sched, id, &o, &err), 0, "%s", err.message);
    cr_assert_eq(o.state, PGD_JOB_CANCELLED, "ended now, not left waiting for a worker");
    cr_assert(o.has_error && strstr(o.error.message, "no worker"), "%s", o.error.message);
    pgd_job_release(&o);
    pgd_scheduler_stop(sched);
    pgd_store_close(s);
}
