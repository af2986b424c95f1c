/* test_cli.c: the paragon command as a user runs it: an HVM2 program printed as `hvm run-c` prints
 * it, and run's limits: none but memory for a program unless --max-interactions, --max-nodes or
 * --timeout set one, each checked, and none of them on a job spec. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Runs `paragon ARGS` (a shell-quoted string) from the source tree, stdout and stderr together
 * into *out; returns the exit status. */
static int paragon(const char *args, char **out) {
    const char *cli = getenv("PARAGON_CLI"), *root = getenv("PARAGON_SOURCE_ROOT");
    cr_assert(cli && root, "PARAGON_CLI and PARAGON_SOURCE_ROOT are set by meson");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>&1", root, cli, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, len = 0;
    *out = malloc(cap);
    size_t got;
    while ((got = fread(*out + len, 1, cap - len - 1, p)) > 0) len += got;
    (*out)[len] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(cli, a_program_prints_as_hvm_run_c_does) {
    char *out;
    cr_assert_eq(paragon("run examples/inet/fib.hvm -s --device host", &out), 0, "%s", out);
    cr_assert(!strncmp(out, "Result: 17711\n- ITRS: 718993\n- TIME: ", 36), "%s", out);
    cr_assert(strstr(out, "\n- MIPS: "), "%s", out);
    free(out);
    cr_assert_eq(paragon("run examples/inet/fib.hvm", &out), 0, "%s", out);
    cr_assert_str_eq(out, "Result: 17711\n", "without -s, the result alone");
    free(out);
}

Test(cli, a_program_runs_unlimited_unless_a_flag_limits_it) {
    char *out;
    /* 20,001,398 interactions: more than the flag allows, on either reducer */
    const char *limited[] = {"run examples/inet/loops.hvm --device host --max-interactions 1000",
                             "run examples/inet/loops.hvm --device cpu --max-interactions 1000"};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(paragon(limited[i], &out), 1, "%s: %s", limited[i], out);
        cr_assert(strstr(out, "max_interactions: 1000 interactions reached"), "%s", out);
        free(out);
    }
    cr_assert_eq(paragon("run examples/inet/loops.hvm --device host --max-interactions 30000000 --max-nodes 4096 "
                         "--timeout 600", &out), 0, "%s", out);
    cr_assert_str_eq(out, "Result: 0\n");
    free(out);
    /* a net that needs more nodes than it was given stops at that bound */
    cr_assert_eq(paragon("run examples/inet/tree_dup.hvm --device host --max-nodes 64", &out), 1, "%s", out);
    cr_assert(strstr(out, "max_nodes"), "%s", out);
    free(out);
}

Test(cli, limit_flags_are_checked) {
    struct {
        const char *args, *says;
    } bad[] = {
        {"run examples/inet/fib.hvm --max-interactions 0", "--max-interactions: '0' must be a count of interactions"},
        {"run examples/inet/fib.hvm --max-interactions many", "--max-interactions: 'many'"},
        {"run examples/inet/fib.hvm --max-nodes 8", "--max-nodes: '8' must be a count of nodes from 16 to 2^31"},
        {"run examples/inet/fib.hvm --max-nodes 4294967296", "--max-nodes: '4294967296'"},
        {"run examples/inet/fib.hvm --timeout -1", "--timeout: '-1' must be a number of seconds > 0"},
        {"run examples/inet/fib.hvm --timeout 3s", "--timeout: '3s'"},
        {"run examples/jobs/xor.json --timeout 3", "--timeout: only for .hvm programs"},
        {"run examples/jobs/xor.json --max-nodes 100", "--max-nodes: only for .hvm programs"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out;
        cr_assert_eq(paragon(bad[i].args, &out), 2, "%s: %s", bad[i].args, out);
        cr_assert(strstr(out, bad[i].says), "%s: %s", bad[i].args, out);
        free(out);
    }
}
