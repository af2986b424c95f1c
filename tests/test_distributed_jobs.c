/* test_distributed_jobs.c: distributed train jobs through paragond: it starts mpirun's ranks,
 * records rank 0's figures and every rank's loss, runs a job whose rank was killed again from its
 * last committed checkpoint to the uninterrupted run's weights (and fails it as crashed once the
 * ranks have died --max-attempts times), stops all ranks on a cancel, and refuses distributed
 * jobs with a 400 where it cannot start ranks. The ranks' own behaviour is
 * test_dist.c's. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paragond_harness.h"

TestSuite(distributed_jobs, .init = harness_setup, .fini = harness_teardown);

/* Spirals through 2-32-32-3 with AdamW, DiLoCo over 2 ranks on the host reference. */
static char *diloco_spec(int epochs) {
    char *s = NULL;
    cr_assert(asprintf(&s,
                       "{\"kind\":\"train\",\"name\":\"spiral-diloco\",\"device\":\"host\",\"seed\":3,"
                       "\"model\":{\"type\":\"mlp\",\"layers\":[2,32,32,3],\"activation\":\"relu\"},"
                       "\"data\":{\"source\":\"spiral\",\"samples\":200,\"classes\":3},"
                       "\"optimizer\":{\"type\":\"adamw\",\"lr\":0.003},\"batch_size\":32,\"epochs\":%d,"
                       "\"distributed\":{\"ranks\":2,\"algorithm\":\"diloco\",\"inner_steps\":10}}",
                       epochs) > 0);
    return s;
}

static void need_ranks(void) {
    const char *p = getenv("PARAGON_RANK");
    if (!p || !*p) cr_skip_test("no paragon-rank in this build (Open MPI not found)");
}

/* The pid of a child of parent running program (pgrep -P), 0 when none. */
static int child_named(int parent, const char *program) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "pgrep -P %d -x %s | head -1", parent, program);
    FILE *p = popen(cmd, "r");
    int pid = 0;
    if (p && fscanf(p, "%d", &pid) != 1) pid = 0;
    if (p) pclose(p);
    return pid;
}

/* Waits (bounded) until the job has committed a distributed checkpoint. */
static void wait_committed(const server *s, int64_t id) {
    char path[512];
    snprintf(path, sizeof path, "%s/jobs/%lld/dist/committed", s->data, (long long)id);
    struct stat st;
    for (int i = 0; i < 6000 && stat(path, &st); i++) usleep(10000);
    cr_assert_eq(stat(path, &st), 0, "job %lld committed a checkpoint within 60 s", (long long)id);
}

static bool has_metric(const server *s, int64_t id, const char *name) {
    char url[128];
    json_t *m = get_json(s, job_url(url, sizeof url, id, "/metrics"), 200);
    bool found = false;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(m, "metrics"), i, row) found |= !strcmp(str(row, "name"), name);
    json_decref(m);
    return found;
}

Test(distributed_jobs, a_job_runs_as_ranks_and_reports_each) {
    need_ranks();
    server s = start_server();
    char *spec = diloco_spec(20);
    int64_t id = submit(&s, spec);
    json_t *job = wait_succeeded(&s, id);
    json_t *dist = json_object_get(json_object_get(job, "result"), "distributed");
    cr_assert_eq(json_integer_value(json_object_get(dist, "ranks")), 2);
    cr_assert_str_eq(str(dist, "algorithm"), "diloco");
    cr_assert_gt(json_integer_value(json_object_get(dist, "syncs")), 0);
    json_t *per_rank = json_object_get(dist, "per_rank");
    cr_assert_eq(json_array_size(per_rank), 2);
    cr_assert_str_eq(str(json_array_get(per_rank, 1), "device"), "host");
    cr_assert_gt(json_number_value(json_object_get(json_array_get(per_rank, 1), "bytes_sent")), 0);
    cr_assert(has_metric(&s, id, "loss") && has_metric(&s, id, "test_accuracy"), "rank 0's figures");
    cr_assert(has_metric(&s, id, "rank0.loss") && has_metric(&s, id, "rank1.loss"), "every rank's loss");
    char url[128];
    http_response r = request(&s, "GET", job_url(url, sizeof url, id, "/logs"), NULL, NULL);
    cr_assert(strstr(r.body, "started 2 ranks") && strstr(r.body, "rank 1 of 2 (diloco: its shard) on host"), "%s", r.body);
    http_response_free(&r);
    json_decref(job);
    free(spec);
    stop_server(&s);
}

Test(distributed_jobs, a_killed_rank_runs_again_to_the_same_weights) {
    need_ranks();
    server s = start_server();
    char *spec = diloco_spec(600);
    int64_t id = submit(&s, spec);
    wait_state(&s, id, "running", JOB_TIMEOUT_MS);
    wait_committed(&s, id);
    int mpirun = child_named(s.proc.pid, "mpirun");
    cr_assert_gt(mpirun, 0, "paragond started mpirun");
    int rank = child_named(mpirun, "paragon-rank");
    cr_assert_gt(rank, 0, "mpirun started the ranks");
    cr_assert_eq(kill(rank, SIGKILL), 0);
    json_t *job = wait_succeeded(&s, id);
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 2, "run again once");
    cr_assert_eq(json_integer_value(json_object_get(job, "interrupted")), 1);
    json_t *result = json_object_get(job, "result");
    cr_assert_gt(json_integer_value(json_object_get(result, "resumed_from_step")), 0, "from its checkpoint");
    int64_t again = submit(&s, spec);
    json_t *whole = wait_succeeded(&s, again);
    cr_assert_str_eq(str(result, "weights_sha256"), str(json_object_get(whole, "result"), "weights_sha256"),
                     "the same weights as an uninterrupted run");
    json_decref(job);
    json_decref(whole);
    free(spec);
    stop_server(&s);
}

Test(distributed_jobs, a_cancel_stops_every_rank_checkpointed) {
    need_ranks();
    server s = start_server();
    char *spec = diloco_spec(100000);
    int64_t id = submit(&s, spec);
    wait_state(&s, id, "running", JOB_TIMEOUT_MS);
    wait_committed(&s, id);
    cr_assert_eq(status_of(&s, "POST", id, "/cancel"), 202);
    json_t *job = wait_state(&s, id, "cancelled failed succeeded", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "cancelled");
    const char *message = str(json_object_get(job, "error"), "message");
    cr_assert(strstr(message, "checkpointed"), "%s", message);
    cr_assert_eq(child_named(s.proc.pid, "mpirun"), 0, "mpirun has ended");
    json_decref(job);
    free(spec);
    stop_server(&s);
}

Test(distributed_jobs, without_mpirun_a_distributed_job_is_a_clear_400) {
    const char *env[] = {"PATH=/nonexistent", NULL};
    server s = start_server_env(false, env);
    char *spec = diloco_spec(2);
    post_expect(&s, spec, 400, "invalid_spec", "distributed");
    http_response r = request(&s, "POST", "/api/v1/jobs", (const char *[]){"Content-Type: application/json", NULL},
                              spec);
    cr_assert(strstr(r.body, "mpirun is not on its PATH"), "%s", r.body);
    http_response_free(&r);
    cr_assert_eq(job_total(&s), 0, "nothing stored");
    free(spec);
    stop_server(&s);
}

/* A job whose ranks keep dying is not run for ever: with --max-attempts 1, the first killed rank
 * ends it failed as "crashed", saying why. */
Test(distributed_jobs, ranks_that_die_meet_the_crash_loop_cap) {
    need_ranks();
    const char *flags[] = {"--max-attempts", "1", NULL};
    int err_fd;
    server s = start_server_with(flags, "127.0.0.1", &err_fd);
    char *spec = diloco_spec(100000);
    int64_t id = submit(&s, spec);
    wait_state(&s, id, "running", JOB_TIMEOUT_MS);
    wait_committed(&s, id);
    int mpirun = child_named(s.proc.pid, "mpirun");
    int rank = mpirun ? child_named(mpirun, "paragon-rank") : 0;
    cr_assert_gt(rank, 0, "found a rank");
    cr_assert_eq(kill(rank, SIGKILL), 0);
    json_t *job = wait_state(&s, id, "failed succeeded cancelled", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "failed");
    json_t *error = json_object_get(job, "error");
    cr_assert_str_eq(str(error, "code"), "crashed");
    cr_assert(strstr(str(error, "message"), "the ranks ended without finishing"), "%s", str(error, "message"));
    json_decref(job);
    free(spec);
    free(stop_server_with(&s, err_fd));
}

/* A launch mpirun refuses (more ranks than the hosts' slots, which a host without ':slots' leaves
 * to mpirun to count) is the job's failure, at once: it counted as an interruption and ran again
 * until --max-attempts, then failed as "crashed". */
Test(distributed_jobs, a_launch_mpirun_refuses_fails_the_job_once_not_as_a_crash) {
    need_ranks();
    server s = start_server();
    char *spec = diloco_spec(2), *more = NULL;
    cr_assert(asprintf(&more, "%.*s,\"hosts\":[\"localhost\"]}}", (int)(strlen(spec) - 2), spec) > 0);
    char *two = strstr(more, "\"ranks\":2"), *many = NULL;
    cr_assert_not_null(two);
    /* more ranks than this machine has cores (mpirun counts cores, nproc hyperthreads) */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long ranks = 2 * cores + 1 < 256 ? 2 * cores + 1 : 256;
    cr_assert(asprintf(&many, "%.*s\"ranks\":%ld%s", (int)(two - more), more, ranks, two + 9) > 0);
    int64_t id = submit(&s, many);
    free(many);
    json_t *job = wait_state(&s, id, "failed succeeded cancelled", JOB_TIMEOUT_MS);
    cr_assert_str_eq(str(job, "state"), "failed");
    json_t *error = json_object_get(job, "error");
    cr_assert_str_eq(str(error, "code"), "comm", "%s", str(error, "message"));
    cr_assert(strstr(str(error, "message"), "mpirun could not start the ranks"), "%s", str(error, "message"));
    cr_assert_eq(json_integer_value(json_object_get(job, "attempts")), 1);
    cr_assert_eq(json_integer_value(json_object_get(job, "interrupted")), 0);
    json_decref(job);
    free(more);
    free(spec);
    stop_server(&s);
}
