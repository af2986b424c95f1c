/* test_admission.c: server/admission.c: the JSON shape check in front of the spec parser
 * (depth, array length, strings and escapes, where it stops) and the per-job checks
 * (parameters, memory against a device's size and the host's available memory, for train and
 * inet jobs). */
#include "admission.h"
#include "host_load.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Runs the check; on refusal returns the limit's name ("" when accepted). */
static const char *shape(const char *text, pgn_error *err, json_t **extra) {
    pgn_error_clear(err);
    *extra = NULL;
    if (pgd_admit_json(text, strlen(text), err, extra) == 0) {
        cr_assert_null(*extra);
        return "";
    }
    cr_assert_str_eq(pgn_error_code_name(err->code), "limit_exceeded");
    cr_assert(err->message[0]);
    return json_string_value(json_object_get(*extra, "limit"));
}

static char *repeat(const char *open, int n, const char *close) {
    size_t len = (strlen(open) + strlen(close)) * (size_t)n + 1;
    char *s = calloc(1, len);
    for (int i = 0; i < n; i++) strcat(s, open);
    for (int i = 0; i < n; i++) strcat(s, close);
    return s;
}

Test(admission, nesting_deeper_than_32_is_refused_where_it_happens) {
    pgn_error err;
    json_t *extra;
    char *ok = repeat("[", PGD_JSON_MAX_DEPTH, "]");
    cr_assert_str_eq(shape(ok, &err, &extra), "");
    free(ok);
    char *deep = repeat("{\"a\":", PGD_JSON_MAX_DEPTH + 1, "}");
    cr_assert_str_eq(shape(deep, &err, &extra), "json_depth");
    cr_assert_eq(json_integer_value(json_object_get(extra, "max")), 32);
    cr_assert_eq(json_integer_value(json_object_get(extra, "value")), 33);
    cr_assert_eq(json_integer_value(json_object_get(extra, "column")), 32 * 5 + 1);
    cr_assert(strstr(err.message, "deeper than 32 levels"), "%s", err.message);
    json_decref(extra);
    free(deep);

    /* Mixed objects and arrays count alike; lines are counted for the message. */
    char text[200] = "\n\n  ";
    for (int i = 0; i < 33; i++) strcat(text, i % 2 ? "[" : "{\"k\":");
    cr_assert_str_eq(shape(text, &err, &extra), "json_depth");
    cr_assert_eq(json_integer_value(json_object_get(extra, "line")), 3);
    json_decref(extra);
}

Test(admission, brackets_and_quotes_inside_strings_are_text) {
    pgn_error err;
    json_t *extra;
    char *s = repeat("[", 100, "");
    char text[400];
    snprintf(text, sizeof text, "{\"a\":\"%s\",\"b\":\"\\\"%s\\\\\",\"c\":[1]}", s, s);
    cr_assert_str_eq(shape(text, &err, &extra), "", "%s", err.message);
    free(s);
    /* An escaped quote does not end the string: the brackets after it are still text. */
    cr_assert_str_eq(shape("[\"\\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"]", &err, &extra), "");
}

Test(admission, arrays_longer_than_10000_are_refused_objects_are_not_counted) {
    pgn_error err;
    json_t *extra;
    size_t cap = 12 * 20001 + 64;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    for (int n = PGD_JSON_MAX_ARRAY; n <= PGD_JSON_MAX_ARRAY + 1; n++) {
        char *at = text + sprintf(text, "{\"x\":[[0],");
        for (int i = 0; i < n - 2; i++) at += sprintf(at, "%d,", i); /* + [0] and the last 0 */
        strcpy(at, "0]}");
        const char *limit = shape(text, &err, &extra);
        if (n == PGD_JSON_MAX_ARRAY) {
            cr_assert_str_eq(limit, "", "%d elements: %s", n, err.message);
        } else {
            cr_assert_str_eq(limit, "json_array_length");
            cr_assert_eq(json_integer_value(json_object_get(extra, "value")), n);
            cr_assert(strstr(err.message, "longer than 10000 elements"), "%s", err.message);
            json_decref(extra);
        }
    }
    /* Each array counts its own elements: two arrays of 6000 are fine. */
    char *at = text + sprintf(text, "[[");
    for (int i = 0; i < 6000; i++) at += sprintf(at, "1,");
    at += sprintf(at, "1],[");
    for (int i = 0; i < 6000; i++) at += sprintf(at, "1,");
    strcpy(at, "1]]");
    cr_assert_str_eq(shape(text, &err, &extra), "", "%s", err.message);
    /* Object members are not array elements. */
    at = text + sprintf(text, "{");
    for (int i = 0; i < 12000; i++) at += sprintf(at, "\"k%d\":1,", i);
    strcpy(at, "\"z\":1}");
    cr_assert_str_eq(shape(text, &err, &extra), "", "%s", err.message);
    free(text);
}

static pgn_job_spec parse(const char *text) {
    pgn_job_spec spec;
    pgn_error err;
    pgn_error_clear(&err);
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    return spec;
}

Test(admission, jobs_past_the_parameter_limit_or_the_device_memory_are_refused) {
    pgn_device_info gpu = {.id = "gpu-test", .type = PGN_DEVICE_GPU,
                           .global_mem_bytes = 64ull << 20};
    pgn_error err;
    json_t *extra;
    /* This machine's memory now: the host is judged by what is available. */
    pgd_host_memory mem;
    cr_assert_eq(pgd_host_memory_read(&mem), 0);
    pgn_job_spec small = parse("{\"kind\":\"train\",\"data\":{\"source\":\"xor\"},"
                               "\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]}}");
    cr_assert_eq(pgd_admit_job(&small, &gpu, &mem, &err, &extra), 0, "%s", err.message);

    /* 7000 * 7000 + 7000 * 2 > 50M */
    pgn_job_spec big = parse("{\"kind\":\"train\",\"data\":{\"source\":\"xor\"},"
                             "\"model\":{\"type\":\"mlp\",\"layers\":[2,7000,7200,2]}}");
    cr_assert_eq(pgd_admit_job(&big, &gpu, &mem, &err, &extra), -1);
    cr_assert_str_eq(err.field, "model.layers");
    cr_assert_str_eq(json_string_value(json_object_get(extra, "limit")), "max_params");
    cr_assert_eq(json_integer_value(json_object_get(extra, "value")),
                 2 * 7000 + 7000 + 7000 * 7200 + 7200 + 7200 * 2 + 2);
    json_decref(extra);

    /* 4000x4000 weights with Adam: 16M parameters, about 320 MB: past a 64 MiB device. */
    pgn_job_spec model = parse("{\"kind\":\"train\",\"data\":{\"source\":\"xor\"},"
                               "\"model\":{\"type\":\"mlp\",\"layers\":[2,4000,4000,2]},"
                               "\"optimizer\":{\"type\":\"adam\"}}");
    cr_assert_eq(pgd_admit_job(&model, &gpu, &mem, &err, &extra), -1);
    cr_assert_str_eq(err.field, "model.layers", "the model weighs most: %s", err.message);
    cr_assert(strstr(err.message, "device gpu-test has 64.0 MiB"), "%s", err.message);
    cr_assert_str_eq(json_string_value(json_object_get(extra, "limit")), "device_memory");
    cr_assert_eq(json_integer_value(json_object_get(extra, "max")), 64 << 20);
    json_t *est = json_object_get(extra, "estimate");
    cr_assert_gt(json_integer_value(json_object_get(est, "optimizer")), 0);
    json_decref(extra);

    /* A small model with a huge batch: the batch is to blame. */
    pgn_job_spec batch = parse("{\"kind\":\"train\",\"data\":{\"source\":\"xor\"},"
                               "\"model\":{\"type\":\"mlp\",\"layers\":[2,4096,2]},\"batch_size\":65536}");
    cr_assert_eq(pgd_admit_job(&batch, &gpu, &mem, &err, &extra), -1);
    cr_assert_str_eq(err.field, "batch_size", "%s", err.message);
    json_decref(extra);

    /* Fashion-MNIST alone is about 220 MB on the device: the data is to blame. */
    pgn_job_spec data = parse("{\"kind\":\"train\",\"data\":{\"source\":\"fashion-mnist\"},"
                              "\"model\":{\"type\":\"mlp\",\"layers\":[784,16,10]},\"batch_size\":8}");
    cr_assert_eq(pgd_admit_job(&data, &gpu, &mem, &err, &extra), -1);
    cr_assert_str_eq(err.field, "data", "%s", err.message);
    json_decref(extra);

    /* A device that does not say how much it has is not judged; the host is judged by the
     * machine's memory, which holds this job. */
    pgn_device_info unknown = gpu;
    unknown.global_mem_bytes = 0;
    cr_assert_eq(pgd_admit_job(&data, &unknown, &mem, &err, &extra), 0);
    pgn_device_info host;
    pgn_device_info_host(&host);
    cr_assert_eq(pgd_admit_job(&data, &host, &mem, &err, &extra), 0, "%s", err.message);
    pgn_job_spec inet = parse("{\"kind\":\"inet\",\"program\":\"@main = 1\","
                              "\"limits\":{\"max_nodes\":4096}}");
    cr_assert_eq(pgd_admit_job(&inet, &gpu, &mem, &err, &extra), 0, "%s", err.message);
    pgn_spec_free(&inet);
}

/* A host with 16 GiB, of which `available` is free now. */
static pgd_host_memory host_with(double available) {
    return (pgd_host_memory){.total = 16.0 * (1 << 30), .available = available};
}

Test(admission, host_jobs_are_judged_by_the_memory_available_now_not_the_total) {
    pgn_device_info host;
    pgn_device_info_host(&host);
    pgn_error err;
    json_t *extra;
    /* Fashion-MNIST's ~220 MB fits a host with 4 GiB available, not one with 300 MiB (less the
     * 819 MiB margin of 5 % of 16 GiB: nothing), whatever its total. */
    pgn_job_spec data = parse("{\"kind\":\"train\",\"data\":{\"source\":\"fashion-mnist\"},"
                              "\"model\":{\"type\":\"mlp\",\"layers\":[784,16,10]}}");
    pgd_host_memory roomy = host_with(4.0 * (1 << 30)), busy = host_with(300.0 * (1 << 20));
    cr_assert_eq(pgd_admit_job(&data, &host, &roomy, &err, &extra), 0, "%s", err.message);
    cr_assert_eq(pgd_admit_job(&data, &host, &busy, &err, &extra), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "limit_exceeded");
    cr_assert(strstr(err.message, "MemAvailable 300.0 MiB"), "%s", err.message);
    cr_assert_str_eq(json_string_value(json_object_get(extra, "limit")), "device_memory");
    json_decref(extra);

    /* A CPU device's buffers are host memory: pocl's 11.3 GiB does not help a host with 300 MiB
     * available, and a host with plenty does not lift pocl's own cap. */
    pgn_device_info cpu = {.id = "cpu-test", .type = PGN_DEVICE_CPU,
                           .global_mem_bytes = (uint64_t)(11.3 * (1 << 30))};
    cr_assert_eq(pgd_admit_job(&data, &cpu, &busy, &err, &extra), -1);
    cr_assert(strstr(err.message, "device cpu-test (host memory) has"), "%s", err.message);
    json_decref(extra);
    cr_assert_eq(pgd_admit_job(&data, &cpu, &roomy, &err, &extra), 0, "%s", err.message);
    cpu.global_mem_bytes = 64u << 20;
    cr_assert_eq(pgd_admit_job(&data, &cpu, &roomy, &err, &extra), -1);
    cr_assert(strstr(err.message, "device cpu-test has 64.0 MiB"), "%s", err.message);
    json_decref(extra);
}

Test(admission, an_inet_jobs_max_nodes_is_admitted_by_the_memory_it_may_take) {
    pgn_device_info host;
    pgn_device_info_host(&host);
    pgn_error err;
    json_t *extra;
    pgd_host_memory mem = host_with(12.0 * (1 << 30));
    /* The reproducer: a net that doubles forever, allowed 2^31 nodes on the host. */
    pgn_job_spec fork = parse("{\"kind\":\"inet\",\"device\":\"host\",\"program\":"
                              "\"@f = (* (r0 r1)) & @f ~ (* r0) & @f ~ (* r1)\\n@main = r & @f ~ (* r)\","
                              "\"limits\":{\"max_nodes\":2147483648}}");
    cr_assert_eq(pgd_admit_job(&fork, &host, &mem, &err, &extra), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "limit_exceeded");
    cr_assert_str_eq(err.field, "limits.max_nodes");
    cr_assert(strstr(err.message, "2147483648 nodes may need up to") && strstr(err.message, "GiB"),
              "%s", err.message);
    cr_assert(strstr(err.message, "the host has"), "%s", err.message);
    cr_assert_str_eq(json_string_value(json_object_get(extra, "limit")), "memory");
    cr_assert_gt(json_integer_value(json_object_get(extra, "value")),
                 json_integer_value(json_object_get(extra, "max")), "both numbers, need > have");
    cr_assert_gt(json_integer_value(json_object_get(json_object_get(extra, "estimate"), "total")), 0);
    json_decref(extra);
    pgn_spec_free(&fork);

    /* The defaults fit this host; a thousand nodes fit anything. */
    pgn_job_spec plain = parse("{\"kind\":\"inet\",\"program\":\"@main = 1\"}");
    cr_assert_eq(pgd_admit_job(&plain, &host, &mem, &err, &extra), 0, "%s", err.message);
    /* On a 64 MiB GPU the default heaps do not fit the device: the device part is judged. */
    pgn_device_info gpu = {.id = "gpu-test", .type = PGN_DEVICE_GPU, .compute_units = 2,
                           .global_mem_bytes = 64u << 20};
    cr_assert_eq(pgd_admit_job(&plain, &gpu, &mem, &err, &extra), -1);
    cr_assert(strstr(err.message, "device gpu-test has 64.0 MiB"), "%s", err.message);
    json_decref(extra);
    pgn_spec_free(&plain);
    pgn_job_spec small = parse("{\"kind\":\"inet\",\"program\":\"@main = 1\",\"limits\":{\"max_nodes\":1024}}");
    cr_assert_eq(pgd_admit_job(&small, &gpu, &mem, &err, &extra), 0, "%s", err.message);
    pgn_spec_free(&small);
}

/* Two processes spinning while this one sleeps: the machine's other work reads at least half a
 * CPU (they get most of two, beside whatever else runs), and this process's own time is not in it. */
Test(admission, the_machines_other_work_is_read_without_paragonds_own) {
    int cpus;
    pgd_host_other_cpus(&cpus); /* a reading to start the window from */
    cr_assert_geq(cpus, 1);
    pid_t spin[2];
    for (int i = 0; i < 2; i++) {
        spin[i] = fork();
        cr_assert_geq(spin[i], 0);
        if (spin[i] == 0) {
            struct timespec t0, t;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            volatile unsigned long x = 0;
            do {
                for (int k = 0; k < 1000000; k++) x += (unsigned long)k;
                clock_gettime(CLOCK_MONOTONIC, &t);
            } while (t.tv_sec - t0.tv_sec < 3);
            _exit(0);
        }
    }
    usleep(1200000);
    double other = pgd_host_other_cpus(&cpus);
    for (int i = 0; i < 2; i++) {
        kill(spin[i], SIGKILL);
        waitpid(spin[i], NULL, 0);
    }
    cr_assert_geq(other, PGD_HOST_LOADED_CPUS, "two spinning processes read as %.2f CPUs of %d", other, cpus);
    cr_assert_leq(other, cpus + 0.01, "no more than the machine has: %.2f of %d", other, cpus);
}
