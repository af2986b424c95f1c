/* test_client.c: the paragon command as paragond's client, run as a user runs it against a live
 * server: submit (--wait, --follow, -q), jobs, status, logs (-f), metrics (table, CSV), cancel,
 * delete, export and generate --job; what each prints, their exit statuses, and the errors: a
 * missing job, a bad spec, no server, a missing token, bad arguments; --help on every command. */
#include "paragond_harness.h"
#include "paragon.h" /* pgn_read_file */

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(client, .init = harness_setup, .fini = harness_teardown);

static int paragon(const server *s, const char *args, char **out, char **err) {
    return run_cli(s, args, out, err);
}

/* A spec file in tmpdir holding text; returns its path (static buffer). */
static const char *spec_file(const char *name, const char *text) {
    static char path[320];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

Test(client, submit_wait_then_status_jobs_logs_and_metrics_show_the_job) {
    server s = start_server();
    char *out, *err, args[600];
    snprintf(args, sizeof args, "submit '%s' --wait", spec_file("xor.json", xor_spec));
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    cr_assert(strstr(out, "job 1 succeeded\n"), "%s", out);
    cr_assert(strstr(out, "  test_accuracy "), "the result follows: %s", out);
    free(out), free(err);

    cr_assert_eq(paragon(&s, "status 1", &out, &err), 0, "%s", err);
    cr_assert(!strncmp(out, "job 1  train  \"xor\"  succeeded\n", 31), "%s", out);
    cr_assert(strstr(out, "  progress   100.0%\n"), "%s", out);
    cr_assert(strstr(out, "  result\n    accuracy "), "%s", out);
    char *text = out;
    free(err);

    cr_assert_eq(paragon(&s, "status 1 --json", &out, &err), 0, "%s", err);
    json_t *job = json_loads(out, 0, NULL);
    cr_assert(job && json_integer_value(json_object_get(json_object_get(job, "result"), "epochs")) == XOR_EPOCHS,
              "%s", out);
    /* how long it ran, beside the cost model's estimate where it was placed */
    cr_assert(strstr(text, "\n  run time   "), "%s", text);
    cr_assert(!strstr(text, " so far"), "it has ended: %s", text);
    double estimate = json_number_value(json_object_get(json_object_get(job, "estimate"), "seconds"));
    cr_assert(estimate >= 0.001, "the job was placed with an estimate: %s", out);
    cr_assert(strstr(text, " (estimated "), "%s", text);
    json_decref(job);
    free(text), free(out), free(err);

    cr_assert_eq(paragon(&s, "jobs --kind train", &out, &err), 0, "%s", err);
    cr_assert(!strncmp(out, "    ID  KIND      STATE", 23), "a header first: %s", out);
    cr_assert(strstr(out, "     1  train     succeeded   100%"), "%s", out);
    free(out), free(err);

    cr_assert_eq(paragon(&s, "logs 1", &out, &err), 0, "%s", err);
    cr_assert(strstr(out, " info  training xor on "), "%s", out);
    cr_assert(strstr(out, " info  epoch 300/300: loss "), "%s", out);
    free(out), free(err);

    cr_assert_eq(paragon(&s, "metrics 1", &out, &err), 0, "%s", err);
    cr_assert(!strncmp(out, "    STEP", 8), "%s", out);
    cr_assert(strstr(out, "test_accuracy"), "%s", out);
    cr_assert(strstr(out, "\n     300 "), "a row per step, the last too: %s", out);
    free(out), free(err);

    cr_assert_eq(paragon(&s, "metrics 1 --name test_accuracy --csv", &out, &err), 0, "%s", err);
    cr_assert(!strncmp(out, "name,step,value\ntest_accuracy,1,", 32), "%s", out);
    size_t lines = 0;
    for (const char *c = out; *c; c++) lines += *c == '\n';
    cr_assert_eq(lines, 1 + XOR_EPOCHS, "a row per epoch: %s", out);
    free(out), free(err);
    stop_server(&s);
}

Test(client, submit_follow_prints_the_log_as_it_comes_then_the_result) {
    server s = start_server();
    char *out, *err, args[600];
    snprintf(args, sizeof args, "submit '%s' --follow --name followed", spec_file("xor.json", xor_spec));
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    const char *queued = strstr(out, "job 1 queued on ");
    const char *training = strstr(out, "training followed on ");
    const char *last = strstr(out, "epoch 300/300: loss ");
    const char *ended = strstr(out, "job 1 succeeded\n");
    cr_assert(queued && training && last && ended, "%s", out);
    cr_assert(queued < training && training < last && last < ended, "in order: %s", out);
    free(out), free(err);

    /* -q: the id alone, for scripts */
    snprintf(args, sizeof args, "submit '%s' -q --device host", spec_file("xor.json", xor_spec));
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    cr_assert_str_eq(out, "2\n");
    free(out), free(err);
    json_decref(wait_succeeded(&s, 2));
    stop_server(&s);
}

Test(client, cancel_stops_a_job_and_following_it_exits_3) {
    server s = start_server();
    char *long_xor = spec_with("\"epochs\":300", "\"epochs\":100000");
    char *out, *err, args[600];
    snprintf(args, sizeof args, "submit '%s' -q", spec_file("long.json", long_xor));
    free(long_xor);
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    free(out), free(err);
    json_decref(wait_state(&s, 1, "running", JOB_TIMEOUT_MS));
    cr_assert_eq(paragon(&s, "cancel 1", &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "job 1 stops at its next step boundary"), "%s", out);
    free(out), free(err);
    /* -f follows to the end and says how it ended through the exit status */
    cr_assert_eq(paragon(&s, "logs 1 -f", &out, &err), 3, "%s%s", out, err);
    cr_assert(strstr(out, " info  training xor on "), "%s", out);
    free(out), free(err);
    cr_assert_eq(paragon(&s, "cancel 1", &out, &err), 1, "%s", out);
    cr_assert(strstr(err, "paragon cancel: job 1 has already finished (cancelled)"), "%s", err);
    free(out), free(err);

    cr_assert_eq(paragon(&s, "delete 1", &out, &err), 0, "%s", err);
    cr_assert_str_eq(out, "job 1 deleted, with its metrics, logs and files\n");
    free(out), free(err);
    cr_assert_eq(paragon(&s, "status 1", &out, &err), 1, "%s", out);
    cr_assert_str_eq(err, "paragon status: job 1 does not exist (not_found, HTTP 404)\n");
    free(out), free(err);
    stop_server(&s);
}

Test(client, export_writes_the_checkpoint_and_benchmark_rows) {
    server s = start_server();
    int64_t id = submit_xor(&s, XOR_EPOCHS, NULL);
    json_decref(wait_succeeded(&s, id));
    char *out, *err, args[600], file[320];
    snprintf(file, sizeof file, "%s/xor.safetensors", tmpdir);
    snprintf(args, sizeof args, "export --checkpoint %lld -o '%s'", (long long)id, file);
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s", err);
    cr_assert(strstr(err, "paragon export: wrote "), "%s", err);
    size_t len, want_len;
    char *got = pgn_read_file(file, &len), *want = data_file(&s, id, &want_len);
    cr_assert(got && want && len == want_len && !memcmp(got, want, len), "the checkpoint as stored");
    free(got), free(want), free(out), free(err);

    int64_t bench = submit(&s, gemm_bench_spec);
    json_decref(wait_bench(&s, bench));
    cr_assert_eq(paragon(&s, "export --bench --suite gemm --format csv", &out, &err), 0, "%s", err);
    cr_assert(!strncmp(out, "case,", 5) && strstr(out, "\nN=128,"), "%s", out);
    free(out), free(err);
    /* by job and by time: the bench job's rows, the train job's none, nothing stored in 2999 */
    snprintf(args, sizeof args, "export --bench --suite gemm --format csv --job %lld --since 2025-01-01", (long long)bench);
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "\nN=128,"), "%s", out);
    free(out), free(err);
    snprintf(args, sizeof args, "export --bench --job %lld", (long long)id);
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "\"rows\":[]"), "%s", out);
    free(out), free(err);
    cr_assert_eq(paragon(&s, "export --bench --suite gemm --format csv --since 2999-01-01T00:00:00Z", &out, &err), 0,
                 "%s", err);
    cr_assert(!strchr(strchr(out, '\n') + 1, '\n'), "the header alone: %s", out);
    free(out), free(err);
    /* a refusal is the server's message, and nothing is left behind */
    snprintf(args, sizeof args, "export --checkpoint 99 -o '%s/none.safetensors'", tmpdir);
    cr_assert_eq(paragon(&s, args, &out, &err), 1, "%s", err);
    cr_assert(strstr(err, "job 99"), "%s", err);
    snprintf(file, sizeof file, "%s/none.safetensors.part", tmpdir);
    cr_assert_neq(access(file, F_OK), 0, "no partial file");
    free(out), free(err);
    stop_server(&s);
}

/* A .pgl file is submitted as an inet job in pgl: its result carries the value in pgl's syntax;
 * a compile error is the server's 400, naming line and column, and exit status 1. */
Test(client, submit_takes_a_pgl_program) {
    server s = start_server();
    char *out, *err, args[600];
    snprintf(args, sizeof args, "submit '%s' --wait",
             spec_file("pairs.pgl", "f(n) = switch n { 0: []; _ k: Cons(n, f(k)) }\nmain = (f(3), 2.5)\n"));
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    cr_assert(strstr(out, "job 1 succeeded\n"), "%s", out);
    cr_assert(strstr(out, "  value         ([3, 2, 1], 2.5)\n"), "%s", out);
    free(out), free(err);
    /* the job list's summary carries the value beside the net */
    cr_assert_eq(paragon(&s, "jobs --json", &out, &err), 0, "%s", err);
    json_t *list = json_loads(out, 0, NULL), *jobs = json_is_array(list) ? list : json_object_get(list, "jobs");
    json_t *sum = json_object_get(json_array_get(jobs, 0), "summary");
    cr_assert_str_eq(json_string_value(json_object_get(sum, "value")), "([3, 2, 1], 2.5)", "%s", out);
    cr_assert_not_null(json_string_value(json_object_get(sum, "normal_form")), "%s", out);
    json_decref(list);
    free(out), free(err);
    /* and the table shows the value first, what was asked for; the net after it */
    cr_assert_eq(paragon(&s, "jobs", &out, &err), 0, "%s", err);
    const char *value = strstr(out, "value ([3, 2, 1], 2.5)"), *net = strstr(out, "normal_form ");
    cr_assert(value && net && value < net, "%s", out);
    free(out), free(err);
    snprintf(args, sizeof args, "submit '%s'", spec_file("bad.pgl", "main = (1,\n"));
    cr_assert_eq(paragon(&s, args, &out, &err), 1, "%s%s", out, err);
    cr_assert(strstr(err, "program: line 2, column 1: expected an expression"), "%s", err);
    free(out), free(err);
    stop_server(&s);
}

/* --tag KEY:VALUE (repeatable) tags a submission beside the spec's own tags, status shows them,
 * and a tag that is not KEY:VALUE is a usage error. */
Test(client, submit_tags_a_job_and_status_shows_its_tags) {
    server s = start_server();
    char *out, *err, args[600];
    snprintf(args, sizeof args, "submit '%s' --tag team:vision --tag run:3 --tag 'note:a:b' -q",
             spec_file("nap.json", "{\"kind\":\"sleep\",\"seconds\":0,\"tags\":{\"team\":\"speech\",\"own\":\"x\"}}"));
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    long long id = atoll(out);
    free(out), free(err);
    json_t *job = wait_succeeded(&s, id);
    json_t *tags = json_object_get(job, "tags");
    cr_assert_str_eq(str(tags, "team"), "vision", "--tag wins over the spec's");
    cr_assert_str_eq(str(tags, "run"), "3");
    cr_assert_str_eq(str(tags, "note"), "a:b", "the value is what follows the first colon");
    cr_assert_str_eq(str(tags, "own"), "x", "the spec's other tags stay");
    json_decref(job);
    snprintf(args, sizeof args, "status %lld", id);
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "  tags       ") && strstr(out, " team:vision") && strstr(out, " run:3"), "%s", out);
    free(out), free(err);
    snprintf(args, sizeof args, "submit '%s' --tag nocolon", spec_file("nap2.json", "{\"kind\":\"sleep\",\"seconds\":0}"));
    cr_assert_eq(paragon(&s, args, &out, &err), 2, "%s%s", out, err);
    cr_assert(strstr(err, "--tag 'nocolon': a tag is KEY:VALUE"), "%s", err);
    free(out), free(err);
    stop_server(&s);
}

/* --priority N orders a device's queue; submit --wait says in one line what a job waits behind;
 * status shows priority and place; jobs shows tags; resume queues a cancelled job again. */
Test(client, submit_priority_and_wait_say_where_a_job_waits_and_resume_queues_it_again) {
    server s = start_server();
    char *out, *err, args[700];
    snprintf(args, sizeof args, "submit '%s' -q --tag team:vision",
             spec_file("hold.json", "{\"kind\":\"sleep\",\"seconds\":1.5,\"device\":\"host\",\"name\":\"hold\"}"));
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    long long hold = atoll(out);
    free(out), free(err);
    json_decref(wait_state(&s, hold, "running", JOB_TIMEOUT_MS));
    const char *nap = spec_file("nap.json", "{\"kind\":\"sleep\",\"seconds\":0,\"device\":\"host\"}");
    snprintf(args, sizeof args, "submit '%s' --priority 3 --wait", nap);
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    char want[96];
    snprintf(want, sizeof want, "queued 1st behind job %lld (hold, ", hold);
    cr_assert(strstr(out, want), "submit --wait says what it waits behind: %s", out);
    free(out), free(err);
    snprintf(args, sizeof args, "submit '%s' --priority high", nap);
    cr_assert_eq(paragon(&s, args, &out, &err), 2, "%s%s", out, err);
    cr_assert(strstr(err, "--priority 'high': a whole number"), "%s", err);
    free(out), free(err);
    snprintf(args, sizeof args, "submit '%s' --priority 5000", nap);
    cr_assert_eq(paragon(&s, args, &out, &err), 1, "%s%s", out, err);
    cr_assert(strstr(err, "priority: must be a whole number from -1000 to 1000"), "%s", err);
    free(out), free(err);
    cr_assert_eq(paragon(&s, "jobs", &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "team:vision"), "the jobs table shows tags: %s", out);
    free(out), free(err);

    snprintf(args, sizeof args, "submit '%s' -q",
             spec_file("long.json", "{\"kind\":\"sleep\",\"seconds\":600,\"device\":\"host\",\"priority\":-2}"));
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    long long id = atoll(out);
    free(out), free(err);
    snprintf(args, sizeof args, "status %lld", id);
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "  priority   -2"), "%s", out);
    free(out), free(err);
    snprintf(args, sizeof args, "resume %lld", id);
    cr_assert_eq(paragon(&s, args, &out, &err), 1, "%s%s", out, err);
    cr_assert(strstr(err, "only a cancelled job resumes"), "%s", err);
    free(out), free(err);
    snprintf(args, sizeof args, "cancel %lld", id);
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    free(out), free(err);
    json_decref(wait_state(&s, id, "cancelled", JOB_TIMEOUT_MS));
    snprintf(args, sizeof args, "resume %lld", id);
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    snprintf(want, sizeof want, "job %lld queued again on host", id);
    cr_assert(strstr(out, want), "%s", out);
    free(out), free(err);
    json_decref(wait_state(&s, id, "running", JOB_TIMEOUT_MS));
    cr_assert_eq(status_of(&s, "POST", id, "/cancel"), 202);
    json_decref(wait_state(&s, id, "cancelled", JOB_TIMEOUT_MS));
    stop_server(&s);
}

/* A program's output is the user's terminal's only as text: an escape sequence it writes reaches
 * status and submit --wait as \x1b, not as a command to the terminal. */
Test(client, a_jobs_output_reaches_the_terminal_escaped) {
    server s = start_server();
    size_t len;
    char *hello = source_file("examples/inet/io_hello.hvm", &len);
    /* @s_hello becomes ESC [ 3 1 m X, newline */
    char *from = strstr(hello, "@s_hello = s0"), *to = strstr(hello, "\n\n@main");
    cr_assert(from && to);
    char program[8192];
    snprintf(program, sizeof program,
             "%.*s@s_hello = s0\n  & @String/Cons ~ (27 (s1 s0))\n  & @String/Cons ~ (91 (s2 s1))\n"
             "  & @String/Cons ~ (51 (s3 s2))\n  & @String/Cons ~ (49 (s4 s3))\n  & @String/Cons ~ (109 (s5 s4))\n"
             "  & @String/Cons ~ (88 (s6 s5))\n  & @String/Cons ~ (10 (@String/Nil s6))%s",
             (int)(from - hello), hello, to);
    free(hello);
    char *out, *err, args[600];
    snprintf(args, sizeof args, "submit '%s' --wait", spec_file("red.hvm", program));
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s%s", out, err);
    cr_assert(strstr(out, "\\x1b[31mX\\x0a"), "%s", out);
    cr_assert_null(strchr(out, 0x1b), "no raw escape: %s", out);
    free(out), free(err);
    cr_assert_eq(paragon(&s, "status 1", &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "\\x1b[31mX"), "%s", out);
    cr_assert_null(strchr(out, 0x1b), "no raw escape: %s", out);
    free(out), free(err);
    cr_assert_eq(paragon(&s, "jobs", &out, &err), 0, "%s", err);
    cr_assert_null(strchr(out, 0x1b), "no raw escape: %s", out);
    free(out), free(err);
    stop_server(&s);
}

Test(client, errors_name_what_is_wrong_with_their_exit_status) {
    server s = start_server();
    char *out, *err, args[600];
    struct {
        const char *args;
        int status;
        const char *says;
    } cases[] = {
        {"status 99", 1, "paragon status: job 99 does not exist (not_found, HTTP 404)"},
        {"status x", 2, "paragon status: 'x' is not a job id"},
        {"status", 2, "paragon status: missing the job id"},
        {"status 1 2", 2, "only one job id, got '2' too"},
        {"jobs --state bogus", 1, "state: 'bogus' is not a job state"},
        {"jobs --bogus", 2, "unrecognized option '--bogus'"},
        {"metrics 1 --csv --json", 2, "--csv or --json, not both"},
        {"export", 2, "one of --bench, --checkpoint ID or --weights ID"},
        {"export --checkpoint 1 --suite gemm", 2, "--suite, --device, --job, --since, --until and --format are for --bench"},
        {"export --bench --job x", 2, "'x' is not a job id"},
        {"export --bench --since yesterday", 1, "since: 'yesterday' is not an ISO 8601 time"},
        {"export --bench --job 99", 1, "job: job 99 does not exist (not_found, HTTP 404)"},
        {"upload", 2, "missing the FILE to upload"},
        {"upload /nonexistent.idx", 2, "cannot read '/nonexistent.idx'"},
        {"datasets rm", 2, "rm takes one NAME"},
        {"submit", 2, "missing the job spec"},
        {"submit /nonexistent.json", 1, "cannot read '/nonexistent.json'"},
        {"submit examples/jobs/xor.json --wait --follow", 2, "--wait or --follow, not both"},
        {"status 1 --url ftp://x", 2, "--url: 'ftp://x' is not an http:// or https:// URL"},
        {"status 1 --token-file /nonexistent", 2, "--token-file: cannot read '/nonexistent'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_assert_eq(paragon(&s, cases[i].args, &out, &err), cases[i].status, "%s: %s%s", cases[i].args, out, err);
        cr_assert(strstr(err, cases[i].says), "%s: %s", cases[i].args, err);
        free(out), free(err);
    }
    /* a spec the server refuses: its message, naming the field */
    snprintf(args, sizeof args, "submit '%s'", spec_file("bad.json", "{\"kind\":\"train\",\"epochs\":-1}"));
    cr_assert_eq(paragon(&s, args, &out, &err), 1, "%s", err);
    cr_assert(strstr(err, "(invalid_spec, HTTP 400)"), "%s", err);
    free(out), free(err);
    snprintf(args, sizeof args, "submit '%s'", spec_file("broken.json", "{\"kind\":"));
    cr_assert_eq(paragon(&s, args, &out, &err), 1, "%s", err);
    cr_assert(strstr(err, "broken.json: line 1, column"), "%s", err);
    free(out), free(err);
    /* writes need the token */
    snprintf(args, sizeof args, "submit examples/jobs/xor.json --url http://127.0.0.1:%u --token-file /dev/null", s.port);
    cr_assert_eq(paragon(NULL, args, &out, &err), 1, "%s", err);
    cr_assert(strstr(err, "HTTP 401"), "%s", err);
    free(out), free(err);
    stop_server(&s);
    /* no server */
    cr_assert_eq(paragon(NULL, "jobs --url http://127.0.0.1:1", &out, &err), 4, "%s", err);
    cr_assert(strstr(err, "paragon jobs: no answer from paragond at http://127.0.0.1:1"), "%s", err);
    free(out), free(err);
}

Test(client, every_command_answers_help) {
    static const char *const commands[] = {"devices", "run", "bench", "generate", "submit", "jobs", "status",
                                           "logs", "metrics", "cancel", "delete", "export", "datasets", "upload"};
    char *out, *err, args[64], want[64];
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        snprintf(args, sizeof args, "%s --help", commands[i]);
        snprintf(want, sizeof want, "usage: paragon %s", commands[i]);
        cr_assert_eq(paragon(NULL, args, &out, &err), 0, "%s: %s", args, err);
        cr_assert(!strncmp(out, want, strlen(want)), "%s: %s", args, out);
        cr_assert(strstr(out, "exit status: 0 "), "%s: its exit statuses: %s", args, out);
        free(out), free(err);
        snprintf(args, sizeof args, "help %s", commands[i]);
        cr_assert_eq(paragon(NULL, args, &out, &err), 0, "%s: %s", args, err);
        cr_assert(!strncmp(out, want, strlen(want)), "%s: %s", args, out);
        free(out), free(err);
    }
    cr_assert_eq(paragon(NULL, "help", &out, &err), 0);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        snprintf(want, sizeof want, "\n  %s ", commands[i]);
        cr_assert(strstr(out, want), "the overview lists %s: %s", commands[i], out);
    }
    free(out), free(err);
    cr_assert_eq(paragon(NULL, "frobnicate", &out, &err), 2);
    cr_assert(strstr(err, "paragon: unknown command 'frobnicate'"), "%s", err);
    free(out), free(err);
}

Test(client, generate_job_streams_the_text_the_server_generates) {
    server s = start_server();
    int64_t id = train_tiny_gpt(&s);
    char *out, *err, args[300];
    snprintf(args, sizeof args,
             "generate --job %lld --prompt 'the lazy' --max-tokens 24 --temperature 0.7 --top-k 4 --seed 5", (long long)id);
    cr_assert_eq(paragon(&s, args, &out, &err), 0, "%s", err);
    cr_assert(!strncmp(out, "the lazy", 8), "the prompt, then its continuation: %s", out);
    cr_assert(strstr(err, "24 characters"), "%s", err);
    /* the same text as the API's one JSON answer for the same seed */
    char path[96];
    snprintf(path, sizeof path, "/api/v1/jobs/%lld/generate", (long long)id);
    http_response r = request(&s, "POST", path, json_headers,
                              "{\"prompt\":\"the lazy\",\"max_tokens\":24,\"temperature\":0.7,\"top_k\":4,\"seed\":5}");
    cr_assert_eq(r.status, 200, "%s", r.body);
    json_t *job = parse_body(&r);
    cr_assert_str_eq(out, str(json_object_get(job, "result"), "text"));
    json_decref(job);
    http_response_free(&r);
    free(out), free(err);
    /* a job that is not a gpt: the server's refusal */
    snprintf(args, sizeof args, "generate --job %lld --prompt x", (long long)submit_xor(&s, 1, NULL));
    cr_assert_eq(paragon(&s, args, &out, &err), 1, "%s", err);
    cr_assert(strstr(err, "is not a gpt train job"), "%s", err);
    free(out), free(err);
    stop_server(&s);
}

/* ---- the scripts: run.sh's dashboard link, the curl examples ---------------------------- */

/* A script of the source tree (scripts/..., examples/curl/...) run by bash with env (NAME=value
 * words, shell-quoted by the caller) and args; its stdout and stderr into *out (malloc'd).
 * Returns its exit status. */
static int run_script(const char *rel, const char *args, const char *env, char **out) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && env %s /bin/bash '%s' %s 2>&1 </dev/null", getenv("PARAGON_SOURCE_ROOT"),
             env ? env : "", rel, args ? args : "");
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, len = 0, got;
    *out = malloc(cap);
    cr_assert_not_null(*out);
    while ((got = fread(*out + len, 1, cap - len - 1, p)) > 0) len += got;
    (*out)[len] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* run.sh prints its link through dashboard-link.sh, from the arguments paragond gets: with
 * --port and --data-dir, the link is to that port and carries that data dir's token. */
Test(client, the_dashboard_link_follows_paragonds_port_and_data_dir) {
    server s = start_server();
    char args[512], *out, want[512];
    snprintf(args, sizeof args, "--port %u --data-dir '%s'", (unsigned)s.port, s.data);
    cr_assert_eq(run_script("scripts/dashboard-link.sh", args, NULL, &out), 0, "%s", out);
    char *token = read_token(&s);
    token[strcspn(token, "\n")] = 0;
    snprintf(want, sizeof want, "Dashboard: http://127.0.0.1:%u/#token=%s\n", (unsigned)s.port, token);
    cr_assert(strstr(out, want), "%s", out);
    snprintf(want, sizeof want, "export PARAGON_URL=http://127.0.0.1:%u PARAGON_TOKEN_FILE=%s/token", (unsigned)s.port,
             s.data);
    cr_assert(strstr(out, want), "%s", out);
    free(out), free(token);
    stop_server(&s);
}

/* The curl examples go to $PARAGON_URL with $PARAGON_TOKEN, as the paragon command does (the
 * token file named does not exist: submitting needs the token). */
Test(client, the_curl_example_talks_to_paragon_url_with_paragon_token) {
    server s = start_server();
    char url[64], env[400], want[128], *out;
    snprintf(url, sizeof url, "http://127.0.0.1:%u", (unsigned)s.port);
    char *token = read_token(&s);
    token[strcspn(token, "\n")] = 0;
    snprintf(env, sizeof env, "PARAGON_URL=%s PARAGON_TOKEN=%s PARAGON_TOKEN_FILE=/nonexistent", url, token);
    cr_assert_eq(run_script("examples/curl/xor.sh", NULL, env, &out), 0, "%s", out);
    snprintf(want, sizeof want, "submitted job 1 (%s/api/v1/jobs/1)", url);
    cr_assert(strstr(out, want), "%s", out);
    cr_assert(strstr(out, "result:\n  accuracy: 1"), "%s", out);
    cr_assert(strstr(out, "metrics:\nname ") && strstr(out, "\ntest_accuracy ") && strstr(out, " 100  "),
              "a line per metric (100 epochs' points): %s", out);
    cr_assert_lt(strlen(out), 4000, "a summary, not every point: %s", out);
    free(out), free(token);
    json_t *job = job_now(&s, 1);
    cr_assert_str_eq(str(job, "state"), "succeeded");
    json_decref(job);
    stop_server(&s);
}
