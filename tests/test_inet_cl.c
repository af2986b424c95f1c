/* test_inet_cl.c: the OpenCL interaction-net reducer (engine/inet/inet_cl.c, kernels/inet.cl) against
 * the host reference: the same normal form and the same interaction count for every example and
 * for random nets, with 1, 2, 4 and 64 work-items; heaps and bags that grow; limits, errors and
 * cancellation; and the inet job on a device. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_helpers.h"
#include "inet/inet.h"
#include "inet_gen.h"
#include "inet_memory_check.h"
#include "pgn_inet_dev.h"

static pgn_device *dev;

static void open_device(void) { dev = test_open_cl_device(); }
static void close_device(void) { pgn_device_close(dev); }

TestSuite(inet_cl, .init = open_device, .fini = close_device);

static pgn_inet_book *parse_ok(const char *text) {
    pgn_inet_book *book = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_parse(text, strlen(text), &book, &err), 0, "%s\n%s", err.message, text);
    return book;
}

/* "Result: <nf>\n- ITRS: <n>\n" as the CLI and the .expected files write it. */
static char *result_text(const pgn_inet_result *r) {
    size_t len = strlen(r->normal_form) + 64;
    char *s = malloc(len);
    cr_assert_not_null(s);
    snprintf(s, len, "Result: %s\n- ITRS: %llu\n", r->normal_form, (unsigned long long)r->interactions);
    return s;
}

/* Runs text on the device with `workers` work-items; the result text, or the test fails. */
static char *run_cl(const char *text, const pgn_inet_limits *lim, unsigned workers, uint64_t *peak) {
    pgn_inet_book *book = parse_ok(text);
    pgn_inet_result r;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_run_cl(dev, book, lim, NULL, workers, NULL, &r, &err), 0, "%u workers: %s: %s", workers,
                 pgn_error_code_name(err.code), err.message);
    pgn_inet_book_free(book);
    if (peak) *peak = r.peak_nodes;
    char *s = result_text(&r);
    pgn_inet_result_free(&r);
    return s;
}

static char *run_host(const char *text) {
    pgn_inet_book *book = parse_ok(text);
    pgn_inet_result r;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_run_host(book, NULL, NULL, NULL, &r, &err), 0, "%s: %s", pgn_error_code_name(err.code), err.message);
    pgn_inet_book_free(book);
    char *s = result_text(&r);
    pgn_inet_result_free(&r);
    return s;
}

static pgn_error cl_fails(const char *text, const pgn_inet_limits *lim, const pgn_run_hooks *hooks) {
    pgn_inet_book *book = parse_ok(text);
    pgn_inet_result r;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_run_cl(dev, book, lim, NULL, 2, hooks, &r, &err), -1, "ran: %.200s", text);
    pgn_inet_book_free(book);
    return err;
}

/* A file of the source tree's folder dir. */
static char *read_source(const char *dir, const char *name) {
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", root ? root : ".", dir, name);
    size_t len;
    char *text = pgn_read_file(path, &len);
    cr_assert_not_null(text, "cannot read %s (PARAGON_SOURCE_ROOT)", path);
    return text;
}

static char *read_example(const char *name) { return read_source("examples/inet", name); }

static const unsigned worker_counts[] = {1, 2, 4, 64};
static char *random_program(uint64_t seed);

/* The small examples, each on each count of work-items, give their .expected form and count. */
static void examples_give_the_expected(const unsigned *counts, size_t n_counts) {
    const char *names[] = {"fib", "tree_sum", "tree_dup", "sort", "loop", "loops", "u24_ops", "i24_ops", "f24_ops"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.hvm", names[i]);
        char *program = read_example(file);
        snprintf(file, sizeof file, "%s.expected", names[i]);
        char *expected = read_example(file);
        for (size_t w = 0; w < n_counts; w++) {
            char *got = run_cl(program, NULL, counts[w], NULL);
            cr_assert_str_eq(got, expected, "%s with %u work-items", names[i], counts[w]);
            free(got);
        }
        free(program);
        free(expected);
    }
}

Test(inet_cl, every_example_gives_the_expected_form_and_count_on_1_2_4_and_64_work_items) {
    examples_give_the_expected(worker_counts, sizeof worker_counts / sizeof *worker_counts);
}

/* The program's own kernel, built before the first launch (PARAGON_INET_PLANS=now), gives the
 * expected form and count: small definitions compiled into the worker's loop (fib, loops), the
 * rest's plans interpreted (sort_bitonic's many, train_xor's, a pgl program's book; the ops
 * examples' @main with operators whose first ports are variables), copies of numbers through DUPs
 * (tree_dup), and random nets. One build a program: each costs the compiler seconds. */
Test(inet_cl, compiled_kernels_give_the_expected_form_and_count, .timeout = 600) {
    const char *names[] = {"fib", "tree_sum", "tree_dup", "sort", "loops", "u24_ops", "i24_ops", "f24_ops",
                           "sort_bitonic", "train_xor"};
    static const unsigned workers[] = {1, 2, 4};
    setenv("PARAGON_INET_PLANS", "now", 1);
    for (size_t i = 0; i < sizeof names / sizeof *names + 3; i++) {
        char file[64], *program, *expected;
        if (i < sizeof names / sizeof *names) {
            bool pgl = !strcmp(names[i], "train_xor");
            snprintf(file, sizeof file, "%s.%s", names[i], pgl ? "pgl" : "hvm");
            program = read_example(file);
            if (pgl) {
                pgn_error err = {0};
                char *net = pgn_pgl_compile(program, strlen(program), &err);
                cr_assert_not_null(net, "%s", err.message);
                free(program);
                program = net;
            }
            if (pgl) {
                expected = run_host(program);
            } else {
                snprintf(file, sizeof file, "%s.expected", names[i]);
                expected = read_example(file);
            }
        } else {
            program = random_program(7 * i);
            expected = run_host(program);
        }
        for (size_t w = 0; w < sizeof workers / sizeof *workers; w++) {
            pgn_inet_book *book = parse_ok(program);
            uint32_t n_compiled;
            free(pgn_inet_plan_source(book, &n_compiled)); /* none (the ops examples: @main alone): interpreted plans */
            pgn_inet_result r;
            pgn_error err = {0};
            cr_assert_eq(pgn_inet_run_cl(dev, book, NULL, NULL, workers[w], NULL, &r, &err), 0, "%zu: %s", i, err.message);
            cr_assert_eq(r.compiled, n_compiled > 0, "%zu: built before the first launch", i);
            char *got = result_text(&r);
            cr_assert_str_eq(got, expected, "%zu with %u work-items", i, workers[w]);
            free(got);
            pgn_inet_result_free(&r);
            pgn_inet_book_free(book);
        }
        free(program);
        free(expected);
    }
    unsetenv("PARAGON_INET_PLANS");
}

/* A run switches to the program's own kernel between two launches, once it has run for
 * PGN_INET_COMPILE_AFTER_S, when a thread has built it: here built before (the device keeps it),
 * so the switch comes at the first launch past that time; the heaps and bags it leaves are the
 * new kernel's to go on with. */
/* Builds' records (inet_build.c) go to a folder of the test's own, so that runs of 1 and 4
 * work-items find none and switch to their own kernel during the run; a device opened afresh
 * then knows the build from its record alone and builds before its first launch. */
Test(inet_cl, a_run_switches_to_its_own_kernel_and_gives_the_same_form_and_count) {
    char cache[] = "/tmp/paragon-inet-cache-XXXXXX";
    cr_assert_not_null(mkdtemp(cache));
    setenv("XDG_CACHE_HOME", cache, 1);
    char *program = read_example("tree_sum22.hvm"), *expected = read_example("tree_sum22.expected");
    setenv("PARAGON_INET_PLANS", "now", 1);
    free(run_cl(program, NULL, 2, NULL));
    unsetenv("PARAGON_INET_PLANS");
    for (unsigned workers = 1; workers <= 4; workers *= 2) {
        pgn_inet_book *book = parse_ok(program);
        pgn_inet_result r;
        pgn_error err = {0};
        cr_assert_eq(pgn_inet_run_cl(dev, book, NULL, NULL, workers, NULL, &r, &err), 0, "%s", err.message);
        char *got = result_text(&r);
        cr_assert_str_eq(got, expected, "%u work-items", workers);
        cr_assert(r.compiled, "%u work-items: ended on the program's own kernel", workers);
        cr_assert_eq(r.compile_seconds > 0, workers == 2, "%u work-items: built before the first launch only "
                     "when built so before in this process", workers);
        free(got);
        pgn_inet_result_free(&r);
        pgn_inet_book_free(book);
    }
    pgn_device *fresh = test_open_cl_device();
    pgn_inet_book *book = parse_ok(program);
    pgn_inet_result r;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_run_cl(fresh, book, NULL, NULL, 4, NULL, &r, &err), 0, "%s", err.message);
    char *got = result_text(&r);
    cr_assert_str_eq(got, expected);
    cr_assert(r.compiled && r.compile_seconds > 0, "a fresh device finds the record and builds first");
    free(got);
    pgn_inet_result_free(&r);
    pgn_inet_book_free(book);
    pgn_device_close(fresh);
    test_remove_tree(cache);
    free(program);
    free(expected);
}

/* A random net in the shape of the host's fuzz test: definitions calling each other through
 * numbers, switches, operators, duplicators and erasers. */
static char *random_program(uint64_t seed) {
    static const char *const bodies[] = {
        "@main = r & @f ~ (%u r)\n@f = (?((%u @g) r) r)\n@g = ({a b} r) & @f ~ (a x) & @f ~ (b y) & x ~ $([+] $(y r))\n",
        "@main = (a b) & {a b} ~ (%u (%u *))\n",
        "@main = r & %u ~ $([*] $(%u r))\n",
        "@main = r & @f ~ (%u (%u r))\n@f = (a (b r)) & a ~ $([-] $(b r))\n",
        "@main = (r s) & @c ~ (%u r) & @c ~ (%u s)\n@c = (?((* (p ({q0 q1} (q0 q1)))) r) r) & p ~ *\n",
    };
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    s ^= s >> 29;
    unsigned k = (unsigned)(s % (sizeof bodies / sizeof *bodies));
    unsigned a = (unsigned)((s >> 8) % 9), b = (unsigned)((s >> 20) % 50);
    char *text = malloc(1024);
    cr_assert_not_null(text);
    snprintf(text, 1024, bodies[k], a, b);
    return text;
}

/* Random programs give the host reducer's result on 1 to most_workers work-items. */
static void random_programs_match(unsigned most_workers) {
    for (uint64_t seed = 0; seed < 40; seed++) {
        char *program = random_program(seed);
        char *want = run_host(program);
        char *got = run_cl(program, NULL, 1 + (unsigned)(seed % most_workers), NULL);
        cr_assert_str_eq(got, want, "seed %llu:\n%s", (unsigned long long)seed, program);
        free(got);
        free(want);
        free(program);
    }
}

Test(inet_cl, random_programs_match_the_host_reducer) { random_programs_match(4); }

/* The gpu family's reducer (kernels/inet_gpu.cl, a GPU's default) on pocl: workers in groups of
 * the profile's size that deal redexes at barriers, groups that hand work to idle groups. Every
 * example and random programs give the expected form and count on counts that fill groups or
 * not, and a program's own kernel of that family does too. */
Test(inet_cl, the_gpu_family_gives_the_expected_form_and_count, .timeout = 600) {
    pgn_device_close(dev);
    setenv("PARAGON_KERNELS", "gpu", 1);
    dev = test_open_cl_device();
    cr_assert_eq(dev->profile.family[PGN_OPS_INET], PGN_FAMILY_GPU);
    static const unsigned counts[] = {1, 3, 4, 16};
    examples_give_the_expected(counts, sizeof counts / sizeof *counts);
    setenv("PARAGON_INET_LOCAL_SLOTS", "64", 1); /* a local net that fills and flushes often */
    pgn_device_close(dev);
    dev = test_open_cl_device();
    static const unsigned three[] = {3}; /* groups of 2 and 1: slices of 32 and 64 slots */
    examples_give_the_expected(three, 1);
    unsetenv("PARAGON_INET_LOCAL_SLOTS");
    char *fib = read_example("fib.hvm"), *fib_expected = read_example("fib.expected");
    setenv("PARAGON_INET_PLANS", "now", 1); /* its own kernel of the gpu family, built first */
    char *got = run_cl(fib, NULL, 4, NULL);
    cr_assert_str_eq(got, fib_expected, "fib on its own kernel of the gpu family");
    unsetenv("PARAGON_INET_PLANS");
    free(got);
    free(fib);
    free(fib_expected);
    random_programs_match(8);
}

/* Each of HVM2's own benchmark programs at its small size (tests/inet_peers: the programs the GPU
 * check runs larger against HVM2's CUDA runtime, each .expected HVM2's own output) gives HVM2's
 * result and count on `workers` work-items (0: the device's count). */
static void peer_programs_give_hvm2s(const char *const *names, size_t n, unsigned workers, const char *how) {
    for (size_t i = 0; i < n; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.hvm", names[i]);
        char *program = read_source("tests/inet_peers", file);
        snprintf(file, sizeof file, "%s.expected", names[i]);
        char *expected = read_source("tests/inet_peers", file);
        char *got = run_cl(program, NULL, workers, NULL);
        cr_assert_str_eq(got, expected, "%s, %s, %u work-items", names[i], how, workers);
        free(got);
        free(program);
        free(expected);
    }
}

/* HVM2's programs on the gpu family: its local net at the size the device fits, on the device's
 * worker count; and at the smallest (PARAGON_INET_LOCAL_SLOTS=64: with 3 work-items, groups of 2
 * and 1, slices of 32 and 64, so it fills, flushes and leaves rules to global slots all the
 * time). The definitions are instantiated without plans (PARAGON_INET_PLANS=0), so no run builds
 * its own kernel (pocl seconds each, 80 s for these; the examples above cover plans on this
 * family). */
Test(inet_cl, the_gpu_family_gives_hvm2s_result_and_count_on_its_programs, .timeout = 600) {
    static const char *const names[] = {"tuples", "sort_bitonic", "sum_rec", "fib30", "sum_tree", "stress", "sort_radix"};
    static const char *const slots[] = {NULL, "64"};
    for (size_t k = 0; k < sizeof slots / sizeof *slots; k++) {
        pgn_device_close(dev);
        setenv("PARAGON_KERNELS", "gpu", 1);
        setenv("PARAGON_INET_PLANS", "0", 1);
        if (slots[k]) setenv("PARAGON_INET_LOCAL_SLOTS", slots[k], 1);
        dev = test_open_cl_device();
        cr_assert_eq(dev->profile.inet_local_slots, slots[k] ? 64u : PGN_INET_LOCAL_SLOTS_MAX);
        peer_programs_give_hvm2s(names, sizeof names / sizeof *names, slots[k] ? 3 : 0,
                                 slots[k] ? "64 local slots" : "all local slots");
        unsetenv("PARAGON_INET_LOCAL_SLOTS");
        unsetenv("PARAGON_INET_PLANS");
    }
}

/* Groups wider than a CPU's two, four of them (PARAGON_INET_GROUP=4 on 16 work-items: a GPU's
 * shape, small): a group with nothing left is handed up to a redex a work-item at once
 * (kernels/inet_gpu.cl), and HVM2's programs still give its result and count. pocl 3.1's default
 * way of running a work-group ("loops") crashes on this kernel with groups of 4 or 8 in
 * several groups, where its "repl" and Oclgrind run it, so the test asks pocl for "repl". */
Test(inet_cl, the_gpu_family_in_groups_of_4_gives_hvm2s_result_and_count, .timeout = 600) {
    static const char *const names[] = {"tuples", "sort_bitonic", "sum_rec", "sum_tree", "stress"};
    pgn_device_close(dev);
    setenv("PARAGON_KERNELS", "gpu", 1);
    setenv("PARAGON_INET_PLANS", "0", 1);
    setenv("PARAGON_INET_GROUP", "4", 1);
    setenv("POCL_WORK_GROUP_METHOD", "repl", 1);
    dev = test_open_cl_device();
    cr_assert_eq(dev->profile.inet_local, 4u);
    peer_programs_give_hvm2s(names, sizeof names / sizeof *names, 16, "groups of 4");
    unsetenv("POCL_WORK_GROUP_METHOD");
    unsetenv("PARAGON_INET_GROUP");
    unsetenv("PARAGON_INET_PLANS");
}

Test(inet_cl, random_well_formed_nets_give_the_host_result_or_fail_the_same_way) {
    /* the host's fuzz nets (tests/inet_gen.h): where the host finishes within the limits, the
     * device must print the same net after the same count; clone errors must match too */
    uint64_t seed = 12345;
    char *text = malloc(1 << 16);
    cr_assert_not_null(text);
    int compared = 0;
    for (int round = 0; round < 300; round++) {
        size_t o = inet_gen_program(&seed, text);
        pgn_inet_book *book = parse_ok(text);
        pgn_inet_limits lim = {.max_interactions = 5000, .max_nodes = 5000};
        pgn_inet_result host, dev_r;
        pgn_error err = {0}, derr = {0};
        int host_rc = pgn_inet_run_host(book, &lim, NULL, NULL, &host, &err);
        if (host_rc == 0 || err.code == PGN_E_INVALID_PROGRAM) {
            int dev_rc = pgn_inet_run_cl(dev, book, &lim, NULL, 1u << (round % 3), NULL, &dev_r, &derr);
            cr_assert_eq(dev_rc, host_rc, "round %d: host %s, device %s: %s\n%.*s", round, host_rc ? pgn_error_code_name(err.code) : "ok",
                         dev_rc ? pgn_error_code_name(derr.code) : "ok", derr.message, (int)o, text);
            if (host_rc == 0) {
                char *want = result_text(&host), *got = result_text(&dev_r);
                cr_assert_str_eq(got, want, "round %d:\n%.*s", round, (int)o, text);
                free(want);
                free(got);
                pgn_inet_result_free(&host);
                pgn_inet_result_free(&dev_r);
                compared++;
            }
        }
        pgn_inet_book_free(book);
    }
    free(text);
    cr_assert_gt(compared, 50, "only %d nets finished on the host", compared);
}

/* A definition of n constructor nodes: (1 (1 (... *))). */
static char *long_list(size_t n) {
    char *text = malloc(n * 4 + 32);
    cr_assert_not_null(text);
    char *p = text + sprintf(text, "@main = ");
    for (size_t i = 0; i < n; i++) p += sprintf(p, "(1 ");
    p += sprintf(p, "*");
    memset(p, ')', n);
    p[n] = '\n';
    p[n + 1] = '\0';
    return text;
}

Test(inet_cl, heaps_and_bags_grow_past_their_first_size) {
    /* 300,000 nodes in one CALL: more than the node heap starts with */
    char *big = long_list(300000);
    char *got = run_cl(big, NULL, 2, NULL);
    char *want = run_host(big);
    cr_assert_str_eq(got, want);
    free(got);
    free(want);
    free(big);

    /* 3,000 redexes from one CALL: more than a worker's bag starts with */
    char *many = malloc(3000 * 40 + 64);
    cr_assert_not_null(many);
    char *p = many + sprintf(many, "@main = *\n");
    for (int i = 0; i < 3000; i++) p += sprintf(p, "& %d ~ $([+] $(%d *))\n", i, i);
    got = run_cl(many, NULL, 4, NULL);
    want = run_host(many);
    cr_assert_str_eq(got, want);
    free(got);
    free(want);
    free(many);
}

Test(inet_cl, freed_nodes_are_reused_so_memory_follows_the_live_net) {
    char *loop = read_example("loop.hvm");
    uint64_t peak;
    free(run_cl(loop, NULL, 2, &peak));
    /* 5 million interactions in the chunks two workers take at first */
    cr_assert_leq(peak, 2 * 256, "a loop used %llu node slots", (unsigned long long)peak);
    free(loop);
}

Test(inet_cl, copying_a_definition_with_a_dup_through_a_dup_is_an_error) {
    pgn_error err = cl_fails("@c2 = ({f0 f1} (x r)) & f0 ~ (a r) & f1 ~ (x a)\n"
                             "@main = r & @c2 ~ (@c2 (@inc (0 r)))\n"
                             "@inc = ($([+1] r) r)\n",
                             NULL, NULL);
    cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_program");
    cr_assert(strstr(err.message, "@c2"), "%s", err.message);
}

Test(inet_cl, limits_stop_the_run_and_name_the_limit) {
    char *loop = read_example("loop.hvm");
    pgn_inet_limits lim = {.max_interactions = 1000};
    pgn_error err = cl_fails(loop, &lim, NULL);
    cr_assert_str_eq(pgn_error_code_name(err.code), "limit_exceeded");
    cr_assert_str_eq(err.field, "limits.max_interactions");
    cr_assert_str_eq(err.message, "max_interactions: 1000 interactions reached");
    /* a limit equal to what the program needs is enough; one less is not */
    lim.max_interactions = 5000006;
    free(run_cl(loop, &lim, 2, NULL));
    lim.max_interactions = 5000005;
    err = cl_fails(loop, &lim, NULL);
    cr_assert_str_eq(err.field, "limits.max_interactions");
    free(loop);

    /* the heap holds max_nodes (and the chunks workers hold back): 3,000 nodes do not fit in 100 */
    char *big = long_list(3000);
    lim = (pgn_inet_limits){.max_nodes = 100};
    err = cl_fails(big, &lim, NULL);
    cr_assert_str_eq(pgn_error_code_name(err.code), "limit_exceeded");
    cr_assert_str_eq(err.field, "limits.max_nodes");
    cr_assert(strstr(err.message, "max_nodes: the node heap is full"), "%s", err.message);
    lim.max_nodes = 4000;
    free(run_cl(big, &lim, 2, NULL));
    free(big);

    lim = (pgn_inet_limits){.timeout_s = 0.05};
    err = cl_fails("@loop = (?((0 @loop) r) r)\n@main = r & @loop ~ (16777215 r)", &lim, NULL);
    cr_assert_str_eq(err.field, "limits.timeout_s");
    cr_assert(strstr(err.message, "timeout_s: 0.05 s reached"), "%s", err.message);
}

/* ---- memory ------------------------------------------------------------------------------- */

/* Runs text with `workers` work-items under max_nodes: the result (or the stopped run's peaks). */
static int cl_run_with(const char *text, uint64_t max_nodes, unsigned workers, pgn_inet_result *r, pgn_error *err) {
    pgn_inet_book *book = parse_ok(text);
    pgn_inet_limits lim = {.max_nodes = max_nodes};
    *err = (pgn_error){0};
    int rc = pgn_inet_run_cl(dev, book, &lim, NULL, workers, NULL, r, err);
    pgn_inet_book_free(book);
    return rc;
}

Test(inet_cl, a_runaway_net_stops_at_max_nodes_within_its_estimate) {
    for (size_t w = 0; w < sizeof worker_counts / sizeof *worker_counts; w++) {
        pgn_inet_result r;
        pgn_error err;
        cr_assert_eq(cl_run_with(INET_RUNAWAY, 4096, worker_counts[w], &r, &err), -1);
        cr_assert_str_eq(pgn_error_code_name(err.code), "limit_exceeded", "%u work-items: %s", worker_counts[w], err.message);
        cr_assert_str_eq(err.field, "limits.max_nodes");
        cr_assert(strstr(err.message, "max_nodes: the ") && strstr(err.message, "the most 4096 nodes allow"), "%s",
                  err.message);
        cr_assert_null(r.normal_form);
        cr_assert_gt(r.peak_device_bytes, 8 * 4096, "the heap grew to the limit");
        inet_assert_within(&r, INET_RUNAWAY, 4096, pgn_device_get_info(dev), worker_counts[w], "runaway");
    }
}

Test(inet_cl, redexes_without_nodes_never_reach_the_bags) {
    char *want = run_host(INET_VOID_FLOOD);
    pgn_inet_result r;
    pgn_error err;
    cr_assert_eq(cl_run_with(INET_VOID_FLOOD, 64, 2, &r, &err), 0, "%s: %s", pgn_error_code_name(err.code), err.message);
    char *got = result_text(&r);
    cr_assert_str_eq(got, want);
    inet_assert_within(&r, INET_VOID_FLOOD, 64, pgn_device_get_info(dev), 2, "void flood");
    pgn_inet_result_free(&r);
    free(got);
    free(want);
}

Test(inet_cl, every_example_stays_within_its_estimate_on_1_2_4_and_64_work_items) {
    const char *names[] = {"fib", "tree_sum", "tree_dup", "sort", "loop", "loops", "u24_ops", "i24_ops", "f24_ops"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.hvm", names[i]);
        char *program = read_example(file);
        for (size_t w = 0; w < sizeof worker_counts / sizeof *worker_counts; w++) {
            pgn_inet_result r;
            pgn_error err;
            cr_assert_eq(cl_run_with(program, 65536, worker_counts[w], &r, &err), 0, "%s: %s", names[i], err.message);
            inet_assert_within(&r, program, 65536, pgn_device_get_info(dev), worker_counts[w], names[i]);
            pgn_inet_result_free(&r);
        }
        free(program);
    }
}

Test(inet_cl, a_bag_past_its_share_is_spread_over_the_others) {
    /* Each of 6,000 turns leaves a 200-turn loop under the next turn: the worker running the turns
     * piles them up faster than others take them, past its bag's cap (with 4 work-items, twice a
     * quarter of the node heap's 9,472 slots: 4,740). Spread over the four bags they fit. */
    const char *pile = "@work = (?((0 @work) r) r)\n"
                       "@loop = (?((0 @step) r) r)\n"
                       "@step = (p r) & @work ~ (200 *) & @loop ~ (p r)\n"
                       "@main = r & @loop ~ (6000 r)\n";
    pgn_inet_memory m = inet_estimate(pile, 8192, pgn_device_get_info(dev), 4);
    cr_assert_eq(m.bag_slots, 4 * 4740);
    char *want = run_host(pile);
    pgn_inet_result r;
    pgn_error err;
    cr_assert_eq(cl_run_with(pile, 8192, 4, &r, &err), 0, "%s: %s", pgn_error_code_name(err.code), err.message);
    char *got = result_text(&r);
    cr_assert_str_eq(got, want);
    inet_assert_within(&r, pile, 8192, pgn_device_get_info(dev), 4, "pile");
    pgn_inet_result_free(&r);
    free(got);
    free(want);
}

static bool stop_now(void *ctx) { return ++*(int *)ctx >= 2; }

Test(inet_cl, should_stop_cancels_between_launches) {
    int polls = 0;
    pgn_run_hooks hooks = {.ctx = &polls, .should_stop = stop_now};
    pgn_error err = cl_fails("@f = (x r) & @f ~ (x r)\n@main = r & @f ~ (1 r)", NULL, &hooks);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled");
    cr_assert_eq(polls, 2);
}

typedef struct {
    int interactions, mips, progress;
    double last_interactions;
} reports;

static void count_metric(void *ctx, const char *name, int64_t step, double value) {
    reports *r = ctx;
    if (!strcmp(name, "interactions")) {
        cr_assert_eq((double)step, value);
        r->interactions++;
        r->last_interactions = value;
        return;
    }
    cr_assert_str_eq(name, "mips");
    cr_assert_eq((double)step, r->last_interactions, "the rate at the count just reported");
    cr_assert_gt(value, 0);
    r->mips++;
}

static void count_progress(void *ctx, double fraction) {
    (void)fraction;
    ((reports *)ctx)->progress++;
}

/* As on the host: the interactions and their rate between launches, no fraction of a limit. */
Test(inet_cl, progress_reports_interactions_and_mips_not_a_fraction) {
    reports rep = {0};
    pgn_run_hooks hooks = {.ctx = &rep, .on_metric = count_metric, .on_progress = count_progress};
    pgn_inet_limits lim = {.timeout_s = 1.2, .max_interactions = UINT64_MAX / 2};
    pgn_error err = cl_fails("@f = (x r) & @f ~ (x r)\n@main = r & @f ~ (1 r)", &lim, &hooks);
    cr_assert_str_eq(err.field, "limits.timeout_s", "%s", err.message);
    cr_assert_geq(rep.interactions, 1);
    cr_assert_eq(rep.mips, rep.interactions);
    cr_assert_gt(rep.last_interactions, 0);
    cr_assert_eq(rep.progress, 0, "no fraction reported");
}

Test(inet_cl, an_inet_job_on_a_device_records_its_result_and_device) {
    pgn_job_spec spec;
    pgn_error err = {0};
    json_t *j = json_pack("{s:s, s:s}", "kind", "inet", "program", "@id = (a a)\n@main = r & @id ~ (5 r)");
    cr_assert_eq(pgn_spec_parse(j, &spec, &err), 0, "%s", err.message);
    json_decref(j);
    json_t *result = NULL;
    pgn_run_options opts = {0};
    cr_assert_eq(pgn_job_run(&spec, dev, &opts, NULL, &result, &err), 0, "%s", err.message);
    cr_assert_str_eq(json_string_value(json_object_get(result, "normal_form")), "5");
    cr_assert_eq(json_integer_value(json_object_get(result, "interactions")), 3);
    cr_assert_str_eq(json_string_value(json_object_get(result, "device")), pgn_device_get_info(dev)->id);
    /* the memory it reached, within what its spec allows on this device */
    json_int_t peak = json_integer_value(json_object_get(result, "peak_bytes"));
    pgn_inet_memory m;
    cr_assert_eq(pgn_inet_memory_estimate(&spec.inet, pgn_device_get_info(dev), &m, &err), 0, "%s", err.message);
    cr_assert(peak > 0 && (uint64_t)peak <= m.total, "peak_bytes %lld, estimate %llu", (long long)peak,
              (unsigned long long)m.total);
    json_decref(result);
    pgn_spec_free(&spec);
}
