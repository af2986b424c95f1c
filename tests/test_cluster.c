/* test_cluster.c: paragond nodes sharing a PostgreSQL store (issue 29), three on this machine
 * (tests/with_postgresql.sh gives a throwaway server; each test its own database and shared
 * directory): a node killed with -9 mid-run loses its job to another node, which resumes it from
 * the last committed checkpoint to the weights of an uninterrupted run; a cancel through any node
 * stops the run on the node that holds it; many short jobs each run exactly once; a node refuses
 * to start without --shared-dir or as a node that is already running. Skipped (exit 77 from the
 * wrapper) where PostgreSQL is not installed. */
#include "http_client.h"
#include "paragond_harness.h"
#include "pg_admin.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NODES 3

static char dbname[64], url[256], shared[300];

/* One number from the store: the first column of the one row of sql. */
static int64_t pg_int(const char *sql) {
    PGconn *c = PQconnectdb(url);
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "%s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_TUPLES_OK, "%s: %s", sql, PQresultErrorMessage(r));
    int64_t v = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
    PQclear(r);
    PQfinish(c);
    return v;
}

static void setup(void) {
    harness_setup();
    snprintf(dbname, sizeof dbname, "paragon_cluster_%d", (int)getpid());
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", dbname);
    pg_admin(sql);
    snprintf(url, sizeof url, "postgresql:///%s", dbname);
    snprintf(shared, sizeof shared, "%s/shared", tmpdir);
}

static void teardown(void) {
    harness_teardown(); /* kills what a failed test left running first */
    char sql[128];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", dbname);
    pg_admin(sql);
}

TestSuite(cluster, .init = setup, .fini = teardown);

/* Node k of the cluster (n1, n2, ...) with extra_env (NULL: none), its stderr captured into
 * *err_fd when err_fd. */
static server start_node_env(int k, int *err_fd, const char *const *extra_env) {
    char name[16], lease[8] = "2";
    snprintf(name, sizeof name, "n%d", k);
    const char *args[] = {"--port", "0", "--store", url, "--shared-dir", shared, "--node", name,
                          "--lease-seconds", lease, "--no-calibration", NULL};
    server s = {0};
    s.proc = spawn(args, extra_env, err_fd != NULL);
    if (err_fd) *err_fd = s.proc.err_fd;
    char line[256];
    read_listening_line(&s.proc, line, sizeof line);
    const char *at = strrchr(line, ':');
    cr_assert(at && atoi(at + 1) > 0, "unexpected first line: %s", line);
    s.port = (uint16_t)atoi(at + 1);
    snprintf(s.data, sizeof s.data, "%s", shared); /* the token is the cluster's */
    snprintf(s.db, sizeof s.db, "%s", url);
    return s;
}

static server start_node(int k, int *err_fd) { return start_node_env(k, err_fd, NULL); }

/* The node (index into nodes) whose GET /api/v1/nodes says it runs job id; -1 when none. */
static int runner_of(server *nodes, int64_t id);

/* The node that runs job id, once it runs and a node says so (asserted). */
static int wait_runner(server *nodes, int64_t id) {
    json_t *job = wait_state(&nodes[NODES - 1], id, "running succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "running");
    json_decref(job);
    int k = -1;
    for (int tries = 0; k < 0 && tries < 1200; tries++) {
        k = runner_of(nodes, id);
        if (k < 0) usleep(25 * 1000);
    }
    cr_assert(k >= 0, "a node says it runs job %lld", (long long)id);
    return k;
}

static int runner_of(server *nodes, int64_t id) {
    json_t *v = get_json(&nodes[0], "/api/v1/nodes", 200);
    int found = -1;
    size_t i, k;
    json_t *n, *j;
    json_array_foreach(json_object_get(v, "nodes"), i, n) {
        json_array_foreach(json_object_get(n, "running"), k, j) {
            if (json_integer_value(j) == id) found = atoi(str(n, "id") + 1) - 1;
        }
    }
    json_decref(v);
    return found;
}

/* Whether attempt 2 of job id started (its job_runs row), within a minute. */
static bool wait_second_run(int64_t id) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM job_runs WHERE job_id = %lld AND attempt = 2", (long long)id);
    for (int tries = 0; tries < 2400; tries++) {
        if (pg_int(sql) == 1) return true;
        usleep(25 * 1000);
    }
    return false;
}

static char *xor_long(void) {
    return spec_with("\"epochs\":300", "\"epochs\":4000,\"checkpoint_every\":500");
}

Test(cluster, a_node_killed_mid_run_loses_its_job_to_another_node_which_resumes_it_to_the_same_weights) {
    server nodes[NODES];
    for (int k = 0; k < NODES; k++) nodes[k] = start_node(k + 1, NULL);
    char *spec = xor_long();
    int64_t ref = submit(&nodes[0], spec);
    json_t *done = wait_succeeded(&nodes[1], ref); /* any node answers for any job */
    char sha[65];
    snprintf(sha, sizeof sha, "%s", str(json_object_get(done, "result"), "weights_sha256"));
    json_decref(done);

    int64_t id = submit(&nodes[0], spec);
    free(spec);
    int victim = wait_runner(nodes, id);
    /* past a checkpoint or two (every 500 of 4000 epochs) */
    for (int tries = 0; tries < 600; tries++) {
        json_t *now = job_now(&nodes[0], id);
        double progress = json_real_value(json_object_get(now, "progress"));
        json_decref(now);
        if (progress >= 0.25) break;
        usleep(50 * 1000);
    }
    int64_t killed_at = now_ms();
    kill_server(&nodes[victim]);

    server *other = &nodes[(victim + 1) % NODES];
    int64_t took_ms = wait_second_run(id) ? now_ms() - killed_at : -1; /* a figure, not a test */
    char sql[256];
    json_t *job = wait_succeeded(other, id);
    cr_assert_str_eq(str(json_object_get(job, "result"), "weights_sha256"), sha,
                     "the run that took over reaches the uninterrupted run's weights");
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2);
    cr_assert_geq(json_integer_value(json_object_get(json_object_get(job, "result"), "resumed_from_epoch")), 500,
                  "resumed from a checkpoint, not from step 0");
    json_decref(job);
    job = job_now(&nodes[(victim + 2) % NODES], id); /* where each attempt ran, as the API says */
    json_t *runs = json_object_get(job, "runs");
    cr_assert_eq(json_array_size(runs), 2, "%s", json_dumps(job, 0));
    char victim_name[16];
    snprintf(victim_name, sizeof victim_name, "n%d", victim + 1);
    cr_assert_str_eq(str(json_array_get(runs, 0), "node"), victim_name);
    cr_assert_str_eq(str(json_array_get(runs, 0), "outcome"), "queued", "the killed node's run was run again");
    cr_assert_str_neq(str(json_array_get(runs, 1), "node"), victim_name);
    cr_assert_str_eq(str(json_array_get(runs, 1), "outcome"), "succeeded");
    cr_assert_str_eq(str(json_array_get(runs, 1), "device"), str(job, "device"));
    json_decref(job);
    snprintf(sql, sizeof sql,
             "SELECT count(DISTINCT node) FROM job_runs WHERE job_id = %lld AND attempt IN (1, 2)", (long long)id);
    cr_assert_eq(pg_int(sql), 2, "the two runs were on two nodes");
    snprintf(sql, sizeof sql, "SELECT count(*) FROM job_runs WHERE job_id = %lld AND outcome = 'succeeded'", (long long)id);
    cr_assert_eq(pg_int(sql), 1, "one run ran to completion");
    fprintf(stderr, "cluster: job %lld: attempt 2 started on another node %.2f s after its node was killed "
                    "(lease 2 s)\n", (long long)id, (double)took_ms / 1000.0);
    for (int k = 0; k < NODES; k++)
        if (k != victim) stop_server(&nodes[k]);
}

/* Submit on one node, follow the job's event stream on a second, cancel through a third: the
 * stream hears the run stop. */
Test(cluster, a_job_followed_on_one_node_and_cancelled_through_another_stops_where_it_runs) {
    server nodes[NODES];
    for (int k = 0; k < NODES; k++) nodes[k] = start_node(k + 1, NULL);
    char *spec = spec_with("\"epochs\":300", "\"epochs\":100000,\"checkpoint_every\":1000");
    int64_t id = submit(&nodes[0], spec);
    free(spec);
    int runner = wait_runner(nodes, id);
    server *via = &nodes[(runner + 1) % NODES], *follower = &nodes[(runner + 2) % NODES];
    char path[64], auth[128];
    auth_header(follower, auth, sizeof auth);
    const char *headers[] = {auth, NULL};
    http_stream *stream = http_stream_open(follower->port, job_url(path, sizeof path, id, "/events"), headers,
                                           HTTP_TIMEOUT_MS);
    cr_assert_not_null(stream, "%s", http_last_error());
    cr_assert_eq(http_stream_head(stream)->status, 200);
    /* the run's metrics, written on another node, reach this node's stream */
    for (size_t len = 0; !strstr(http_stream_data(stream, &len), "event: metric");)
        cr_assert_gt(http_stream_read(stream, JOB_TIMEOUT_MS), 0, "event stream: %s", http_last_error());
    http_response r = request(via, "POST", job_url(path, sizeof path, id, "/cancel"), NULL, "");
    cr_assert_eq(r.status, 202, "%ld: %s", r.status, r.body);
    http_response_free(&r);
    /* the follower's stream: what the node that runs the job did, relayed, to its end */
    for (;;) {
        int n = http_stream_read(stream, JOB_TIMEOUT_MS);
        cr_assert_geq(n, 0, "event stream: %s", http_last_error());
        if (n == 0) break;
    }
    size_t len;
    const char *events = http_stream_data(stream, &len);
    cr_assert(strstr(events, "event: end"), "the stream ends with the job: %s", events);
    cr_assert(strstr(events, "\"state\":\"cancelled\"") || strstr(events, "\"state\": \"cancelled\""),
              "the follower heard it cancelled: %s", events);
    cr_assert(strstr(events, "cancel requested"), "and the log line of the request: %s", events);
    http_stream_close(stream);
    json_t *job = wait_state(&nodes[2], id, "cancelled succeeded failed", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "cancelled");
    cr_assert(strstr(str(json_object_get(job, "error"), "message"), "cancelled on request"), "%s",
              str(json_object_get(job, "error"), "message"));
    json_decref(job);
    char ck[400];
    snprintf(ck, sizeof ck, "%s/jobs/%lld/checkpoint.safetensors", shared, (long long)id);
    struct stat st;
    cr_assert_eq(stat(ck, &st), 0, "the cancelled run left its checkpoint in the shared directory");
    for (int k = 0; k < NODES; k++) stop_server(&nodes[k]);
}

/* 500 short jobs submitted through the three nodes in turn, asking for a kind, "auto" or the host:
 * each runs exactly once, and no device of any node ever runs two at once (the runs of each
 * node's device do not overlap on the store's clock). */
Test(cluster, short_jobs_over_three_nodes_each_run_exactly_once_and_no_device_runs_two_at_once) {
    server nodes[NODES];
    for (int k = 0; k < NODES; k++) nodes[k] = start_node(k + 1, NULL);
    enum { JOBS = 500 };
    static const char *const asks[] = {"cpu", "auto", "host"};
    int64_t t0 = now_ms();
    for (int i = 0; i < JOBS; i++) {
        char spec[96];
        snprintf(spec, sizeof spec, "{\"kind\":\"sleep\",\"seconds\":0.005,\"device\":\"%s\"}", asks[i % 3]);
        submit(&nodes[i % NODES], spec);
    }
    int64_t submitted = now_ms();
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')");
    for (int tries = 0; tries < 2400 && pg_int(sql) > 0; tries++) usleep(25 * 1000);
    int64_t done = now_ms();
    cr_assert_eq(pg_int("SELECT count(*) FROM jobs WHERE state = 'succeeded'"), JOBS, "every job succeeded");
    cr_assert_eq(pg_int("SELECT count(*) FROM jobs WHERE attempts <> 1"), 0, "no job ran twice");
    cr_assert_eq(pg_int("SELECT count(*) FROM job_runs"), JOBS, "one run a job");
    cr_assert_eq(pg_int("SELECT count(*) FROM job_runs AS a JOIN job_runs AS b"
                        " ON a.node = b.node AND a.device = b.device AND a.job_id < b.job_id"
                        " AND a.started_at < b.ended_at AND b.started_at < a.ended_at"),
                 0, "no device of a node ran two jobs at once");
    int64_t used = pg_int("SELECT count(DISTINCT node) FROM job_runs");
    int64_t devices = pg_int("SELECT count(*) FROM (SELECT DISTINCT node, device FROM job_runs) AS d");
    fprintf(stderr, "cluster: %d jobs (submitted in %.1f s, all ended %.1f s later) ran on %lld devices of %lld of %d nodes\n",
            JOBS, (double)(submitted - t0) / 1000.0, (double)(done - submitted) / 1000.0, (long long)devices,
            (long long)used, NODES);
    for (int k = 0; k < NODES; k++) stop_server(&nodes[k]);
}

Test(cluster, a_node_needs_the_shared_dir_and_a_name_of_its_own) {
    const char *no_shared[] = {"--port", "0", "--store", url, "--node", "n1", "--no-calibration", NULL};
    char *out = NULL, *err = NULL;
    cr_assert_eq(run_to_exit(no_shared, NULL, &out, &err), 1);
    cr_assert(strstr(err, "needs --shared-dir DIR"), "%s", err);
    free(out);
    free(err);

    server first = start_node(1, NULL);
    char name[] = "n1";
    const char *same[] = {"--port", "0", "--store", url, "--shared-dir", shared, "--node", name,
                          "--no-calibration", NULL};
    cr_assert_eq(run_to_exit(same, NULL, &out, &err), 1);
    cr_assert(strstr(err, "node 'n1' is running on this store already"), "%s", err);
    free(out);
    free(err);
    stop_server(&first);
}

/* A store URL that lists several hosts, the first of them down, with target_session_attrs (as a
 * primary and its standbys are named): libpq takes the first that answers read-write, and the
 * node runs jobs on it. */
Test(cluster, a_url_listing_several_hosts_reaches_the_one_that_answers) {
    const char *port = getenv("PGPORT");
    if (!port) cr_skip_test("PGPORT does not name the server's port");
    char multi[256];
    snprintf(multi, sizeof multi, "postgresql://localhost:1,localhost:%s/%s?target_session_attrs=read-write", port,
             dbname);
    snprintf(url, sizeof url, "%s", multi); /* start_node reads url */
    server node = start_node(1, NULL);
    json_decref(wait_succeeded(&node, submit_xor(&node, 1, NULL)));
    stop_server(&node);
}

/* A node stopped (SIGSTOP) past its lease, as one cut off from the store would be: another node
 * takes the job; when the first comes back (SIGCONT) it stops its run at once, its late writes
 * are refused, and the job ends once, by the run that holds it. */
Test(cluster, a_node_that_comes_back_after_its_lease_ran_out_stops_its_run_and_writes_nothing) {
    server nodes[NODES];
    int err_fd[NODES];
    for (int k = 0; k < NODES; k++) nodes[k] = start_node(k + 1, &err_fd[k]);
    char *spec = xor_long();
    int64_t id = submit(&nodes[0], spec);
    free(spec);
    int sleeper = wait_runner(nodes, id);
    cr_assert_eq(kill(nodes[sleeper].proc.pid, SIGSTOP), 0);
    cr_assert(wait_second_run(id), "another node took the job while its node was stopped");
    char sql[256];
    cr_assert_eq(kill(nodes[sleeper].proc.pid, SIGCONT), 0);

    server *other = &nodes[(sleeper + 1) % NODES];
    json_t *job = wait_succeeded(other, id);
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2, "no third run: the first wrote no end");
    json_decref(job);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM job_runs WHERE job_id = %lld AND outcome = 'succeeded'", (long long)id);
    cr_assert_eq(pg_int(sql), 1, "one final state");
    char who[64];
    snprintf(who, sizeof who, "n%d", sleeper + 1);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM job_runs WHERE job_id = %lld AND attempt = 2 AND node = '%s'",
             (long long)id, who);
    cr_assert_eq(pg_int(sql), 0, "the run that finished was not the stopped node's");
    /* the node that came back is a node like the others: it runs the next job it claims */
    int64_t next = submit_xor(&nodes[sleeper], 20, NULL);
    json_decref(wait_succeeded(&nodes[sleeper], next));
    for (int k = 0; k < NODES; k++) {
        char *err = stop_server_with(&nodes[k], err_fd[k]);
        if (k == sleeper)
            cr_assert(strstr(err, "stops now"), "node %s said its run stopped: %s", who, err);
        free(err);
    }
}

/* The pids of program's processes whose parent is parent (pgrep -P), up to max; how many. */
static int children_named(int parent, const char *program, int *pids, int max) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "pgrep -P %d -x %s", parent, program);
    FILE *p = popen(cmd, "r");
    int n = 0;
    while (p && n < max && fscanf(p, "%d", &pids[n]) == 1) n++;
    if (p) pclose(p);
    return n;
}

/* A file's whole text (asserted readable); free it. */
static char *file_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s is there", path);
    char *text = NULL;
    size_t cap = 0;
    *len = 0;
    for (size_t got; (cap = cap ? cap * 2 : 65536, text = realloc(text, cap)) &&
                     (got = fread(text + *len, 1, cap - *len, f)) > 0;)
        *len += got;
    fclose(f);
    return text;
}

/* A distributed job (mpirun's ranks beside paragond) on a node that freezes whole past its lease,
 * paragond, mpirun and ranks (SIGSTOP), as a machine cut off: another node runs the job to its end;
 * when the first comes back (SIGCONT) its ranks ask before they commit, are refused, and end
 * without writing over the job's committed step or its final checkpoint. Run by
 * test_cluster_distributed (PARAGON_RANK set: Open MPI's ranks under ASan's slow unwinder). */
Test(cluster, a_distributed_jobs_ranks_cut_off_past_their_lease_never_commit_over_the_new_run) {
    const char *rank = getenv("PARAGON_RANK");
    if (!rank || !*rank) cr_skip_test("test_cluster_distributed runs it (PARAGON_RANK: Open MPI's paragon-rank)");
    server nodes[NODES];
    int err_fd[NODES];
    for (int k = 0; k < NODES; k++) nodes[k] = start_node(k + 1, &err_fd[k]);
    const char *spec = "{\"kind\":\"train\",\"name\":\"spiral-diloco\",\"device\":\"host\",\"seed\":3,"
                       "\"model\":{\"type\":\"mlp\",\"layers\":[2,32,32,3],\"activation\":\"relu\"},"
                       "\"data\":{\"source\":\"spiral\",\"samples\":200,\"classes\":3},"
                       "\"optimizer\":{\"type\":\"adamw\",\"lr\":0.003},\"batch_size\":32,\"epochs\":400,"
                       "\"distributed\":{\"ranks\":2,\"algorithm\":\"diloco\",\"inner_steps\":10}}";
    int64_t id = submit(&nodes[0], spec);
    int cut = wait_runner(nodes, id);
    char committed[400], final[400];
    snprintf(committed, sizeof committed, "%s/jobs/%lld/dist/committed", shared, (long long)id);
    snprintf(final, sizeof final, "%s/jobs/%lld/checkpoint.safetensors", shared, (long long)id);
    struct stat st;
    for (int i = 0; i < 6000 && stat(committed, &st); i++) usleep(10000);
    cr_assert_eq(stat(committed, &st), 0, "the ranks committed a checkpoint within 60 s");

    int mpirun = 0, ranks[8], n_ranks = 0;
    cr_assert_eq(children_named(nodes[cut].proc.pid, "mpirun", &mpirun, 1), 1, "the node started mpirun");
    n_ranks = children_named(mpirun, "paragon-rank", ranks, 8);
    cr_assert_eq(n_ranks, 2, "mpirun started two ranks");
    for (int i = 0; i < n_ranks; i++) cr_assert_eq(kill(ranks[i], SIGSTOP), 0);
    cr_assert_eq(kill(mpirun, SIGSTOP), 0);
    cr_assert_eq(kill(nodes[cut].proc.pid, SIGSTOP), 0);

    cr_assert(wait_second_run(id), "another node took the job while the first was stopped");
    server *other = &nodes[(cut + 1) % NODES];
    json_t *job = wait_succeeded(other, id);
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2);
    cr_assert_gt(json_integer_value(json_object_get(json_object_get(job, "result"), "resumed_from_step")), 0,
                 "the new run resumed from the committed checkpoint");
    json_decref(job);
    size_t committed_len, final_len;
    char *committed_then = file_text(committed, &committed_len), *final_then = file_text(final, &final_len);

    cr_assert_eq(kill(nodes[cut].proc.pid, SIGCONT), 0);
    cr_assert_eq(kill(mpirun, SIGCONT), 0);
    for (int i = 0; i < n_ranks; i++) cr_assert_eq(kill(ranks[i], SIGCONT), 0);
    int left = 1;
    for (int i = 0; i < 6000 && (left = children_named(nodes[cut].proc.pid, "mpirun", &mpirun, 1)); i++)
        usleep(10000);
    cr_assert_eq(left, 0, "the ranks of the node that came back ended within 60 s");

    size_t len;
    char *now = file_text(committed, &len);
    cr_assert(len == committed_len && !memcmp(now, committed_then, len), "the committed step stayed the new run's: "
              "%.*s, not %.*s", (int)committed_len, committed_then, (int)len, now);
    free(now);
    now = file_text(final, &len);
    cr_assert(len == final_len && !memcmp(now, final_then, len), "the final checkpoint stayed the new run's");
    free(now);
    free(committed_then);
    free(final_then);
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM job_runs WHERE job_id = %lld AND outcome = 'succeeded'", (long long)id);
    cr_assert_eq(pg_int(sql), 1, "one final state");
    for (int k = 0; k < NODES; k++) {
        char *err = stop_server_with(&nodes[k], err_fd[k]);
        if (k == cut) cr_assert(strstr(err, "stops now"), "node n%d said its run stopped: %s", k + 1, err);
        free(err);
    }
}

#define OCLGRIND_ICD "/usr/lib/oclgrind/liboclgrind-rt-icd.so"

/* Nodes with different devices: n1 has pocl's CPU device, n2 only Oclgrind's simulated GPU (its
 * ICD alone, as a node with one GPU). While no node has a GPU, a job that asks n1 for "gpu" waits,
 * saying why; once n2 starts it runs there. One that asks for an id only n2 has runs there; an id
 * no node has is refused naming those that exist; "cpu" asked of n2 runs on n1. */
Test(cluster, a_job_asking_for_a_gpu_waits_for_a_node_that_has_one) {
    if (access(OCLGRIND_ICD, R_OK) != 0)
        cr_skip_test("oclgrind is not installed (" OCLGRIND_ICD "; scripts/install-deps.sh --test)");
    char icd_dir[300], icd[340];
    snprintf(icd_dir, sizeof icd_dir, "%s/icd", tmpdir);
    cr_assert_eq(mkdir(icd_dir, 0700), 0);
    snprintf(icd, sizeof icd, "%s/oclgrind.icd", icd_dir);
    FILE *f = fopen(icd, "w");
    cr_assert_not_null(f);
    fputs(OCLGRIND_ICD "\n", f);
    fclose(f);
    char env[340];
    snprintf(env, sizeof env, "OCL_ICD_VENDORS=%s", icd_dir);
    const char *gpu_env[] = {env, NULL};
    server cpu_node = start_node(1, NULL);

    /* no node has a GPU yet: the job waits, and says so */
    int64_t early = submit_xor(&cpu_node, 1, "gpu");
    json_t *job = job_now(&cpu_node, early);
    cr_assert_str_eq(str(job, "state"), "queued");
    cr_assert_str_eq(str(job, "device"), "gpu", "queued for any node's GPU");
    json_decref(job);
    char path[64];
    http_response r = request(&cpu_node, "GET", job_url(path, sizeof path, early, "/logs"), NULL, NULL);
    cr_assert(strstr(r.body, "queued for any node's gpu device (no node that has one is up now: it waits for one"),
              "%s", r.body);
    http_response_free(&r);
    usleep(500 * 1000);
    job = job_now(&cpu_node, early);
    cr_assert_str_eq(str(job, "state"), "queued", "a node without a GPU does not take it");
    json_decref(job);

    server gpu_node = start_node_env(2, NULL, gpu_env);
    job = wait_succeeded(&cpu_node, early);
    json_t *run = json_array_get(json_object_get(job, "runs"), 0);
    cr_assert_str_eq(str(run, "node"), "n2");
    cr_assert(!strncmp(str(run, "device"), "gpu-", 4), "ran on n2's GPU: %s", str(run, "device"));
    char gpu_id[64];
    snprintf(gpu_id, sizeof gpu_id, "%s", str(run, "device"));
    json_decref(job);

    /* an id only n2 has, asked of n1 */
    int64_t by_id = submit_xor(&cpu_node, 1, gpu_id);
    job = wait_succeeded(&gpu_node, by_id);
    cr_assert_str_eq(str(json_array_get(json_object_get(job, "runs"), 0), "node"), "n2");
    json_decref(job);
    r = request(&cpu_node, "GET", job_url(path, sizeof path, by_id, "/logs"), NULL, NULL);
    cr_assert(strstr(r.body, "node with one: n2"), "%s", r.body);
    http_response_free(&r);

    /* an id no node has */
    char *spec = spec_with("\"epochs\":300", "\"epochs\":1,\"device\":\"gpu-00000000\"");
    r = request(&cpu_node, "POST", "/api/v1/jobs", json_headers, spec);
    free(spec);
    assert_error(&r, 400, "invalid_spec", "device");
    cr_assert(strstr(r.body, "no node of the cluster has a device 'gpu-00000000'") && strstr(r.body, gpu_id),
              "%s", r.body);
    http_response_free(&r);

    /* "cpu" asked of the GPU node runs on n1's CPU device */
    int64_t cpu_job = submit_xor(&gpu_node, 1, "cpu");
    job = wait_succeeded(&gpu_node, cpu_job);
    run = json_array_get(json_object_get(job, "runs"), 0);
    cr_assert_str_eq(str(run, "node"), "n1");
    cr_assert(!strncmp(str(run, "device"), "cpu-", 4), "%s", str(run, "device"));
    json_decref(job);
    stop_server(&gpu_node);
    stop_server(&cpu_node);
}

/* POSTs spec through s until it is acknowledged (201), as a client does while the store is away
 * (503 store_unavailable, Retry-After); the job's id, or 0 when 20 s did not do. */
static int64_t submit_retrying(server *s, const char *spec, int *refused) {
    for (int tries = 0; tries < 400; tries++) {
        http_response r = request(s, "POST", "/api/v1/jobs", json_headers, spec);
        if (r.status == 201) {
            json_t *job = parse_body(&r);
            int64_t id = json_integer_value(json_object_get(job, "id"));
            json_decref(job);
            http_response_free(&r);
            return id;
        }
        cr_assert_eq(r.status, 503, "only 'unavailable' while the store is away: %ld %s", r.status, r.body);
        cr_assert(strstr(r.body, "store_unavailable"), "%s", r.body);
        http_response_free(&r);
        (*refused)++;
        usleep(50 * 1000);
    }
    return 0;
}

/* PostgreSQL restarted (every connection cut) while a checkpointing training runs and short jobs
 * wait: the nodes make their connections again, every job a node acknowledged (before, or after
 * with a retry while the store was away) runs to success, and every node is heard from again. */
Test(cluster, a_postgresql_restart_mid_run_loses_nothing_acknowledged) {
    if (!getenv("PG_CLUSTER_CONF_ROOT"))
        cr_skip_test("the PostgreSQL server is not this test's own to restart (PGHOST named one)");
    server nodes[NODES];
    for (int k = 0; k < NODES; k++) nodes[k] = start_node(k + 1, NULL);
    enum { BEFORE = 12, AFTER = 12 };
    int64_t ids[BEFORE + AFTER];
    char *spec = spec_with("\"epochs\":300", "\"epochs\":3000,\"checkpoint_every\":500");
    int64_t train = submit(&nodes[0], spec);
    free(spec);
    wait_runner(nodes, train);
    const char *sleep_spec = "{\"kind\":\"sleep\",\"seconds\":0.2,\"device\":\"cpu\"}";
    for (int i = 0; i < BEFORE; i++) ids[i] = submit(&nodes[i % NODES], sleep_spec);
    /* stop, then start until it starts: under load a start right after the stop can still find
     * the old server's pid file ("Cluster is already running") */
    cr_assert_eq(system("c=$(pg_lsclusters -h | awk 'NR == 1 {print $2}') &&"
                        " pg_ctlcluster \"$PGVERSION\" \"$c\" stop -m fast >&2 &&"
                        " for i in 1 2 3 4 5 6 7 8 9 10; do"
                        "  pg_ctlcluster \"$PGVERSION\" \"$c\" start >&2 && exit 0; sleep 0.5; done; exit 1"),
                 0, "PostgreSQL restarted");
    int refused = 0;
    for (int i = BEFORE; i < BEFORE + AFTER; i++) {
        ids[i] = submit_retrying(&nodes[i % NODES], sleep_spec, &refused);
        cr_assert_gt(ids[i], 0, "a submission is acknowledged again after the restart");
    }
    for (int i = 0; i < BEFORE + AFTER; i++) json_decref(wait_succeeded(&nodes[(i + 1) % NODES], ids[i]));
    json_t *job = wait_succeeded(&nodes[1], train);
    int64_t attempts = json_integer_value(json_object_get(job, "attempts"));
    json_decref(job);
    cr_assert_eq(pg_int("SELECT count(*) FROM jobs WHERE state <> 'succeeded'"), 0, "every job succeeded");
    json_t *list = get_json(&nodes[2], "/api/v1/nodes", 200);
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(list, "nodes"), i, n) {
        double age = json_number_value(json_object_get(n, "heartbeat_age_s"));
        cr_assert_lt(age, 4.0, "node %s heard from %g s ago", str(n, "id"), age);
    }
    json_decref(list);
    fprintf(stderr, "cluster: PostgreSQL restarted mid-run: %d submission(s) refused as unavailable meanwhile, "
                    "the training ended on attempt %lld\n", refused, (long long)attempts);
    for (int k = 0; k < NODES; k++) stop_server(&nodes[k]);
}
