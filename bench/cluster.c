/* cluster.c: bench-cluster, paragond nodes sharing a PostgreSQL store (issue 29), measured on
 * this machine:
 *   1. throughput through 1, 2 and 3 nodes: JOBS_PER_NODE x N sleep jobs of a fixed length asking
 *      for "cpu" (one at a time on each node's CPU device, without using the CPU: a machine of
 *      two cores can show N nodes), submitted through the nodes in turn; jobs/s over the span
 *      from the first run's start to the last run's end on the store's clock, against one node's;
 *   2. claim latency on three idle nodes: from a job's insert to its run's start (store clock),
 *      jobs submitted one at a time, p50/p99 over all and by where it ran (the node it was
 *      submitted through, woken directly; another node, woken by the store's announcement);
 *   3. durable submissions/s and their latency, closed loops of POSTs on THREADS connections, on
 *      a node whose device is busy (nothing else runs): SQLite (the default store) beside
 *      PostgreSQL.
 * PostgreSQL is the one libpq's environment names (PGHOST, PGPORT...); each configuration gets a
 * database of its own, dropped after. Without one at hand:
 *   pg_virtualenv -t -o fsync=off build-rel/bench/bench-cluster [--seconds S] [--job-seconds L]
 * fsync=off as the tests use it: what is measured is the service, not this machine's disk.
 * Prints one table per phase. */
#include <curl/curl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PARAGOND_PATH
#define PARAGOND_PATH "paragond"
#endif

#define MAX_NODES 3
#define JOBS_PER_NODE 40
#define CLAIM_JOBS 60
#define THREADS 4
#define WAIT_MS 300000

extern char **environ;

typedef struct {
    pid_t pid;
    int port;
    char token[128];
} node;

static char tmp[256];
static const char *paragond = PARAGOND_PATH;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench-cluster: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pause_ms(int ms) {
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* ---- PostgreSQL ------------------------------------------------------------------------- */

static PGresult *pg_query(const char *conninfo, const char *sql, PGconn **keep) {
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) die("PostgreSQL (%s): %s", conninfo, PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
        die("%s: %s", sql, PQresultErrorMessage(r));
    *keep = c;
    return r;
}

static void pg_admin(const char *sql) {
    PGconn *c;
    PQclear(pg_query("dbname=postgres options='-c client_min_messages=warning'", sql, &c));
    PQfinish(c);
}

static double pg_number(const char *url, const char *sql) {
    PGconn *c;
    PGresult *r = pg_query(url, sql, &c);
    double v = PQntuples(r) && !PQgetisnull(r, 0, 0) ? strtod(PQgetvalue(r, 0, 0), NULL) : 0;
    PQclear(r);
    PQfinish(c);
    return v;
}

/* A fresh database for one configuration: its URL into url. */
static void fresh_db(const char *name, char *url, size_t size) {
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    pg_admin(sql);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    pg_admin(sql);
    snprintf(url, size, "postgresql:///%s", name);
}

static void drop_db(const char *name) {
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
    pg_admin(sql);
}

/* ---- nodes ------------------------------------------------------------------------------ */

/* paragond on store, as node `name` of a cluster sharing dir (name NULL: a lone paragond whose
 * data dir is dir). */
static node start_node(const char *store, const char *dir, const char *name) {
    int out[2];
    if (pipe(out) < 0) die("pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 0, 0);
    const char *args[] = {paragond, "--port", "0", "--store", store, name ? "--shared-dir" : "--data-dir", dir,
                          "--no-calibration", "--max-queued", "1000000", "--max-attempts", "1000",
                          name ? "--node" : NULL, name, NULL};
    node n = {0};
    if (posix_spawn(&n.pid, paragond, &fa, NULL, (char *const *)args, environ) != 0)
        die("cannot start %s", paragond);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    char line[256] = "";
    if (!f || !fgets(line, sizeof line, f)) die("%s ended before it listened (run it alone to see why)", paragond);
    fclose(f);
    const char *colon = strrchr(line, ':');
    n.port = colon ? atoi(colon + 1) : 0;
    if (n.port <= 0) die("unexpected first line from paragond: %s", line);
    char path[400];
    snprintf(path, sizeof path, "%s/token", dir);
    FILE *t = fopen(path, "r");
    if (!t || !fgets(n.token, sizeof n.token, t)) die("no token in %s", path);
    fclose(t);
    n.token[strcspn(n.token, "\r\n")] = 0;
    return n;
}

static void stop_node(node *n) {
    kill(n->pid, SIGTERM);
    int status;
    waitpid(n->pid, &status, 0);
}

/* ---- HTTP --------------------------------------------------------------------------------- */

typedef struct {
    char buf[4096];
    size_t len;
} text;

static size_t keep(char *data, size_t size, size_t n, void *ctx) {
    text *t = ctx;
    size_t k = size * n;
    if (t->len + k < sizeof t->buf) {
        memcpy(t->buf + t->len, data, k);
        t->len += k;
        t->buf[t->len] = 0;
    }
    return k;
}

/* POSTs spec to n's /api/v1/jobs on handle c (kept alive between calls): the HTTP status; *id the
 * job's when 201 (id may be NULL). */
static long post_job(CURL *c, const node *n, const char *spec, int64_t *id) {
    char url[96], auth[200];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/api/v1/jobs", n->port);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", n->token);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Content-Type: application/json");
    text body = {.len = 0};
    body.buf[0] = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, spec);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    if (status == 201 && id) {
        json_t *j = json_loads(body.buf, 0, NULL);
        *id = json_integer_value(json_object_get(j, "id"));
        json_decref(j);
    }
    return status;
}

static void post_or_die(CURL *c, const node *n, const char *spec, int64_t *id) {
    long status = post_job(c, n, spec, id);
    if (status != 201) die("POST /api/v1/jobs answered %ld", status);
}

/* Waits until the store holds `want` jobs in `state` (PostgreSQL url). */
static void wait_jobs(const char *url, const char *state, int want) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs WHERE state = '%s'", state);
    double t0 = now_s();
    while (pg_number(url, sql) < want) {
        if ((now_s() - t0) * 1000 > WAIT_MS) die("%d jobs did not reach %s within %d s", want, state, WAIT_MS / 1000);
        pause_ms(100);
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p) {
    if (n == 0) return 0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

/* nodes nodes b1.. on a fresh database `<tag>` and shared directory: its URL into url. */
static void start_cluster(const char *tag, int nodes, node *n, char *db, size_t db_size, char *url, size_t url_size) {
    char dir[320];
    snprintf(db, db_size, "bench_cluster_%d_%s", (int)getpid(), tag);
    fresh_db(db, url, url_size);
    snprintf(dir, sizeof dir, "%s/shared-%s", tmp, tag);
    mkdir(dir, 0700);
    for (int k = 0; k < nodes; k++) {
        char name[16];
        snprintf(name, sizeof name, "b%d", k + 1);
        n[k] = start_node(url, dir, name);
    }
}

/* ---- 1. throughput ------------------------------------------------------------------------ */

static double throughput(int nodes, double job_s, int *per_node, double *span_out) {
    char db[64], url[128], tag[16];
    node n[MAX_NODES];
    snprintf(tag, sizeof tag, "%d", nodes);
    start_cluster(tag, nodes, n, db, sizeof db, url, sizeof url);
    CURL *c = curl_easy_init();
    char spec[96];
    snprintf(spec, sizeof spec, "{\"kind\":\"sleep\",\"seconds\":%g,\"device\":\"cpu\"}", job_s);
    int jobs = JOBS_PER_NODE * nodes;
    for (int i = 0; i < jobs; i++) post_or_die(c, &n[i % nodes], spec, NULL);
    wait_jobs(url, "succeeded", jobs);
    double span = pg_number(url, "SELECT EXTRACT(EPOCH FROM max(ended_at::timestamptz) - min(started_at::timestamptz))"
                                 " FROM job_runs");
    for (int k = 0; k < nodes; k++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM job_runs WHERE node = 'b%d'", k + 1);
        per_node[k] = (int)pg_number(url, sql);
    }
    curl_easy_cleanup(c);
    for (int k = 0; k < nodes; k++) stop_node(&n[k]);
    drop_db(db);
    *span_out = span;
    return span > 0 ? jobs / span : 0;
}

/* ---- 2. claim latency --------------------------------------------------------------------- */

static void claim_latency(void) {
    char db[64], url[128];
    node n[MAX_NODES];
    start_cluster("claim", MAX_NODES, n, db, sizeof db, url, sizeof url);
    CURL *c = curl_easy_init();
    int64_t ids[CLAIM_JOBS];
    int via[CLAIM_JOBS];
    for (int i = 0; i < CLAIM_JOBS; i++) {
        via[i] = i % MAX_NODES;
        post_or_die(c, &n[via[i]], "{\"kind\":\"sleep\",\"seconds\":0.01,\"device\":\"cpu\"}", &ids[i]);
        pause_ms(100); /* every device idle again before the next */
    }
    wait_jobs(url, "succeeded", CLAIM_JOBS);
    PGconn *pc;
    PGresult *r = pg_query(url,
                           "SELECT j.id, 1000 * EXTRACT(EPOCH FROM r.started_at::timestamptz - j.created_at::timestamptz),"
                           " r.node FROM jobs AS j JOIN job_runs AS r ON r.job_id = j.id ORDER BY j.id",
                           &pc);
    double all[CLAIM_JOBS], same[CLAIM_JOBS], other[CLAIM_JOBS];
    size_t n_all = 0, n_same = 0, n_other = 0;
    for (int row = 0; row < PQntuples(r) && row < CLAIM_JOBS; row++) {
        int64_t id = strtoll(PQgetvalue(r, row, 0), NULL, 10);
        double ms = strtod(PQgetvalue(r, row, 1), NULL);
        int ran = atoi(PQgetvalue(r, row, 2) + 1) - 1;
        int through = -1;
        for (int i = 0; i < CLAIM_JOBS; i++)
            if (ids[i] == id) through = via[i];
        all[n_all++] = ms;
        if (ran == through) same[n_same++] = ms;
        else other[n_other++] = ms;
    }
    PQclear(r);
    PQfinish(pc);
    printf("\nclaim latency, %d idle nodes, %d jobs submitted one at a time (insert to run start, store clock)\n",
           MAX_NODES, CLAIM_JOBS);
    printf("%-34s %6s %9s %9s\n", "ran on", "jobs", "p50 ms", "p99 ms");
    printf("%-34s %6zu %9.1f %9.1f\n", "any node", n_all, pct(all, n_all, 0.5), pct(all, n_all, 0.99));
    printf("%-34s %6zu %9.1f %9.1f\n", "the node it was submitted through", n_same, pct(same, n_same, 0.5),
           pct(same, n_same, 0.99));
    printf("%-34s %6zu %9.1f %9.1f\n", "another node (woken by NOTIFY)", n_other, pct(other, n_other, 0.5),
           pct(other, n_other, 0.99));
    curl_easy_cleanup(c);
    for (int k = 0; k < MAX_NODES; k++) stop_node(&n[k]);
    drop_db(db);
}

/* ---- 3. durable submissions --------------------------------------------------------------- */

typedef struct {
    const node *n;
    double until;
    double *lat; /* ms, one per 201 */
    size_t n_lat, cap;
    long refused;
} loop;

static void *submit_loop(void *arg) {
    loop *l = arg;
    CURL *c = curl_easy_init();
    while (now_s() < l->until) {
        double t0 = now_s();
        long status = post_job(c, l->n, "{\"kind\":\"sleep\",\"seconds\":1,\"device\":\"cpu\"}", NULL);
        double ms = (now_s() - t0) * 1000;
        if (status != 201) {
            l->refused++;
            continue;
        }
        if (l->n_lat == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 4096;
            l->lat = realloc(l->lat, l->cap * sizeof *l->lat);
            if (!l->lat) die("out of memory");
        }
        l->lat[l->n_lat++] = ms;
    }
    curl_easy_cleanup(c);
    return NULL;
}

static void submissions(const char *engine, const char *store, const char *dir, const char *name, double seconds) {
    mkdir(dir, 0700);
    node n = start_node(store, dir, name);
    CURL *c = curl_easy_init();
    /* the device busy for the whole phase: submissions queue, nothing else runs */
    post_or_die(c, &n, "{\"kind\":\"sleep\",\"seconds\":3600,\"device\":\"cpu\"}", NULL);
    curl_easy_cleanup(c);
    pause_ms(500);
    loop l[THREADS] = {0};
    pthread_t t[THREADS];
    double until = now_s() + seconds;
    for (int i = 0; i < THREADS; i++) {
        l[i] = (loop){.n = &n, .until = until};
        pthread_create(&t[i], NULL, submit_loop, &l[i]);
    }
    double *all = NULL;
    size_t total = 0;
    long refused = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        all = realloc(all, (total + l[i].n_lat + 1) * sizeof *all);
        if (!all) die("out of memory");
        memcpy(all + total, l[i].lat, l[i].n_lat * sizeof *all);
        total += l[i].n_lat;
        refused += l[i].refused;
        free(l[i].lat);
    }
    printf("%-12s %8zu %10.0f %9.2f %9.2f %8ld\n", engine, total, (double)total / seconds, pct(all, total, 0.5),
           pct(all, total, 0.99), refused);
    free(all);
    stop_node(&n);
}

/* ---- main --------------------------------------------------------------------------------- */

static int remove_tree(const char *path) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    return system(cmd);
}

int main(int argc, char **argv) {
    double seconds = 5, job_s = 0.2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--job-seconds") && i + 1 < argc) job_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--paragond") && i + 1 < argc) paragond = argv[++i];
        else {
            fprintf(stderr, "usage: bench-cluster [--seconds S (phase 3, 5)] [--job-seconds L (phase 1, 0.2)] "
                            "[--paragond PATH]\n  (PostgreSQL from libpq's environment: pg_virtualenv -t -o "
                            "fsync=off bench-cluster)\n");
            return 2;
        }
    }
    if (seconds <= 0 || job_s <= 0) die("--seconds and --job-seconds must be > 0");
    snprintf(tmp, sizeof tmp, "/tmp/bench-cluster-XXXXXX");
    if (!mkdtemp(tmp)) die("cannot make a temporary directory");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pg_admin("SELECT 1"); /* PostgreSQL is there, or the run ends here saying so */

    printf("bench-cluster: sleep jobs of %g s asking for \"cpu\" (one at a time on each node's CPU device), "
           "%d per node, submitted through the nodes in turn\n",
           job_s, JOBS_PER_NODE);
    printf("%-6s %6s %9s %8s %12s %8s  %s\n", "nodes", "jobs", "span s", "jobs/s", "x one node", "ideal", "runs per node");
    double one = 0;
    for (int nodes = 1; nodes <= MAX_NODES; nodes++) {
        int per[MAX_NODES] = {0};
        double span;
        double rate = throughput(nodes, job_s, per, &span);
        if (nodes == 1) one = rate;
        char spread[64] = "";
        for (int k = 0; k < nodes; k++)
            snprintf(spread + strlen(spread), sizeof spread - strlen(spread), "%s%d", k ? " " : "", per[k]);
        printf("%-6d %6d %9.2f %8.2f %12.2f %8.2f  %s\n", nodes, JOBS_PER_NODE * nodes, span, rate,
               one > 0 ? rate / one : 0, nodes / job_s, spread);
        fflush(stdout);
    }

    claim_latency();
    fflush(stdout);

    printf("\ndurable submissions, %d connections, %g s, a node whose device is busy (the jobs queue)\n", THREADS,
           seconds);
    printf("%-12s %8s %10s %9s %9s %8s\n", "store", "jobs", "jobs/s", "p50 ms", "p99 ms", "refused");
    char store[400], dir[320];
    snprintf(dir, sizeof dir, "%s/sqlite", tmp);
    snprintf(store, sizeof store, "sqlite:%s/sqlite/paragon.db", tmp);
    submissions("sqlite", store, dir, NULL, seconds);
    char db[64], url[128];
    snprintf(db, sizeof db, "bench_cluster_%d_submit", (int)getpid());
    fresh_db(db, url, sizeof url);
    snprintf(dir, sizeof dir, "%s/shared-submit", tmp);
    submissions("postgresql", url, dir, "b1", seconds);
    drop_db(db);
    curl_global_cleanup();
    remove_tree(tmp);
    return 0;
}
