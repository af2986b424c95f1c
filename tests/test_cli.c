/* test_cli.c: the paragon command as a user runs it: an HVM2 program printed as `hvm run-c` prints
 * it, and run's limits: none but memory for a program unless --max-interactions, --max-nodes or
 * --timeout set one, each checked, and none of them on a job spec; a --checkpoint-dir that does
 * not exist yet, and Ctrl-C, which checkpoints a train run where it stands; and a bad option or
 * value, read the same way by every command. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
    /* a progress line may come first, on stderr, when the run takes a while (as under ASan) */
    size_t len = strlen(out);
    cr_assert(len >= 10 && !strcmp(out + len - 10, "Result: 0\n"), "%s", out);
    free(out);
    /* a net that needs more nodes than it was given stops at that bound */
    cr_assert_eq(paragon("run examples/inet/tree_dup.hvm --device host --max-nodes 64", &out), 1, "%s", out);
    cr_assert(strstr(out, "max_nodes"), "%s", out);
    free(out);
}

/* `paragon ARGS` that must fail as a usage error (exit 2), saying `says`. */
typedef struct usage_case {
    const char *args, *says;
} usage_case;

static void each_a_usage_error(const usage_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char *out;
        cr_assert_eq(paragon(cases[i].args, &out), 2, "%s: %s", cases[i].args, out);
        cr_assert(strstr(out, cases[i].says), "%s: %s", cases[i].args, out);
        free(out);
    }
}

Test(cli, limit_flags_are_checked) {
    static const usage_case bad[] = {
        {"run examples/inet/fib.hvm --max-interactions 0", "--max-interactions: '0' must be a count of interactions"},
        {"run examples/inet/fib.hvm --max-interactions many", "--max-interactions: 'many'"},
        {"run examples/inet/fib.hvm --max-nodes 8", "--max-nodes: '8' must be a count of nodes from 16 to 2^31"},
        {"run examples/inet/fib.hvm --max-nodes 4294967296", "--max-nodes: '4294967296'"},
        {"run examples/inet/fib.hvm --timeout -1", "--timeout: '-1' must be a number of seconds > 0"},
        {"run examples/inet/fib.hvm --timeout 3s", "--timeout: '3s'"},
        {"run examples/jobs/xor.json --timeout 3", "--timeout: only for .hvm programs"},
        {"run examples/jobs/xor.json --max-nodes 100", "--max-nodes: only for .hvm programs"},
    };
    each_a_usage_error(bad, sizeof bad / sizeof *bad);
}

/* paragon devices shows each device's profile, and --kernels (PARAGON_KERNELS) sets the family:
 * where each value came from is said; a family that is no family is a usage error. */
Test(cli, devices_show_their_profiles_and_the_kernels_flag_sets_the_family) {
    char *out, dir[] = "/tmp/paragon-cli-profile-XXXXXX", args[128];
    cr_assert_not_null(mkdtemp(dir));
    /* a data dir of its own: a checkout's data/tunings.json (a bench run there) is no default */
    snprintf(args, sizeof args, "devices --json --data-dir '%s'", dir);
    cr_assert_eq(paragon(args, &out), 0, "%s", out);
    rmdir(dir);
    json_t *list = json_loads(out, 0, NULL);
    cr_assert(json_is_array(list), "%s", out);
    size_t i;
    json_t *d;
    json_array_foreach(list, i, d) {
        json_t *p = json_object_get(d, "profile"), *inet = json_object_get(p, "inet");
        const char *type = json_string_value(json_object_get(d, "type"));
        cr_assert_str_eq(json_string_value(json_object_get(p, "class")), type, "%s", out);
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(p, "families"), "gemm"),
                                                           "from")),
                         "default");
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(p, "gemm"), "from")), "default");
        if (!strcmp(type, "cpu"))
            cr_assert_eq(json_integer_value(json_object_get(inet, "workers")),
                         json_integer_value(json_object_get(d, "compute_units")), "one worker a compute unit");
    }
    json_decref(list);
    free(out);
    cr_assert_eq(paragon("devices --json --kernels cpu", &out), 0, "%s", out);
    cr_assert(strstr(out, "\"from\": \"override\""), "%s", out);
    free(out);
    cr_assert_eq(paragon("devices --kernels cpu", &out), 0, "%s", out);
    cr_assert(strstr(out, "cpu*"), "the table marks the override: %s", out);
    free(out);
    /* the gpu family for every group (gemm, rows, inet: this build has each), one word in the table;
     * its inet reducer deals redexes in work-groups of more than one */
    cr_assert_eq(paragon("devices --kernels gpu", &out), 0, "%s", out);
    cr_assert(strstr(out, "gpu* ") && !strstr(out, "gpu*/"), "the table shows one family: %s", out);
    free(out);
    cr_assert_eq(paragon("devices --json --kernels gpu", &out), 0, "%s", out);
    list = json_loads(out, 0, NULL);
    cr_assert(json_is_array(list), "%s", out);
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *p = json_object_get(json_array_get(list, i), "profile");
        if (strcmp(json_string_value(json_object_get(p, "class")), "cpu")) continue;
        cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(p, "families"), "inet"),
                                                           "family")),
                         "gpu", "%s", out);
        cr_assert_gt(json_integer_value(json_object_get(json_object_get(p, "inet"), "local")), 1, "%s", out);
    }
    json_decref(list);
    free(out);
    cr_assert_eq(paragon("run examples/inet/fib.hvm --device cpu --kernels fpga", &out), 2, "%s", out);
    cr_assert(strstr(out, "--kernels: 'fpga' is not a kernel family (auto, cpu or gpu)"), "%s", out);
    free(out);
    cr_assert_eq(paragon("run examples/inet/fib.hvm --device cpu --kernels gpu", &out), 0, "%s", out);
    free(out);
    cr_assert_eq(paragon("run examples/inet/fib.hvm --device cpu --kernels cpu", &out), 0, "%s", out);
    free(out);
}

/* Every command reads its options one way (cli/args.c): a bad option shows the command's usage,
 * a value refused as it is read names its option, and neither does anything (exit 2). */
Test(cli, a_bad_option_or_value_is_a_usage_error) {
    static const usage_case bad[] = {
        {"devices --bogus", "unrecognized option '--bogus'\nusage: paragon devices"},
        {"logs -x", "invalid option -- 'x'\nusage: paragon logs ID [-f]"},
        {"status --url", "option '--url' requires an argument\nusage: paragon status ID"},
        {"bench --repeats 3x", "paragon bench: --repeats: '3x' is not a number"},
        {"bench --kernels fpga", "paragon bench: --kernels: 'fpga' is not a kernel family (auto, cpu or gpu)"},
        {"generate --max-tokens 1.5", "paragon generate: --max-tokens: '1.5' is not a number"},
        {"generate --temperature warm", "paragon generate: --temperature: 'warm' is not a number"},
        {"generate model.safetensors --url http://127.0.0.1:1", "--url and --token-file go with --job"},
    };
    each_a_usage_error(bad, sizeof bad / sizeof *bad);
}

/* A scratch directory for one test (removed by the shell afterwards). */
static void scratch(char *dir, size_t size) {
    snprintf(dir, size, "/tmp/paragon-cli-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_tree(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(cli, a_checkpoint_dir_is_created_when_missing) {
    char dir[64], args[300], path[400], *out;
    scratch(dir, sizeof dir);
    snprintf(args, sizeof args, "run examples/jobs/xor.json --device host --checkpoint-dir '%s/a/b'", dir);
    cr_assert_eq(paragon(args, &out), 0, "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/a/b/checkpoint.safetensors", dir);
    cr_assert_eq(access(path, R_OK), 0, "%s", path);
    /* a path that cannot be a directory: said before anything runs */
    snprintf(args, sizeof args, "run examples/jobs/xor.json --checkpoint-dir '%s/a/b/checkpoint.safetensors'", dir);
    cr_assert_eq(paragon(args, &out), 1, "%s", out);
    cr_assert(strstr(out, "--checkpoint-dir: the checkpoint directory"), "%s", out);
    free(out);
    remove_tree(dir);
}

/* Without paragond, the CLI keeps its devices' tunings in <data-dir>/tunings.json: a train run
 * calibrates a device that has none, the next uses it, and a record made with other kernels is
 * measured again; paragon devices shows what is kept. */
Test(cli, a_runs_tuning_is_kept_in_the_data_dir) {
    char dir[64], args[300], path[400], *out;
    scratch(dir, sizeof dir);
    snprintf(args, sizeof args, "run examples/jobs/xor.json --device cpu --data-dir '%s'", dir);
    cr_assert_eq(paragon(args, &out), 0, "%s", out);
    cr_assert(strstr(out, "calibrating cpu-") && strstr(out, "its first tuning"), "%s", out);
    free(out);
    snprintf(path, sizeof path, "%s/tunings.json", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    json_t *list = json_loadf(f, 0, NULL);
    fclose(f);
    cr_assert(json_is_array(list) && json_array_size(list) == 1, "one record");
    json_t *t = json_array_get(list, 0);
    cr_assert_str_eq(json_string_value(json_object_get(t, "family")), "cpu");
    bool too_slow = json_is_true(json_object_get(t, "too_slow"));
    char tile[16];
    snprintf(tile, sizeof tile, "%s", json_string_value(json_object_get(json_object_get(t, "params"), "gemm_tile")));
    cr_assert(json_string_value(json_object_get(t, "kernels_hash")));
    cr_assert_eq(paragon(args, &out), 0, "%s", out);
    cr_assert_null(strstr(out, "calibrating"), "the kept tuning is used: %s", out);
    free(out);
    snprintf(args, sizeof args, "devices --json --data-dir '%s'", dir);
    cr_assert_eq(paragon(args, &out), 0, "%s", out);
    char want[96];
    snprintf(want, sizeof want, "\"tile\": \"%s\",\n        \"from\": \"%s\"", too_slow ? "8x32" : tile,
             too_slow ? "default" : "tuning");
    cr_assert(strstr(out, want), "%s in %s", want, out);
    free(out);
    /* made with other kernels: measured again */
    json_object_set_new(t, "kernels_hash", json_string("another build"));
    cr_assert_eq(json_dump_file(list, path, 0), 0);
    json_decref(list);
    snprintf(args, sizeof args, "run examples/jobs/xor.json --device cpu --data-dir '%s'", dir);
    cr_assert_eq(paragon(args, &out), 0, "%s", out);
    cr_assert(strstr(out, "its driver or the kernels changed since its tuning"), "%s", out);
    free(out);
    remove_tree(dir);
}

/* One spec file serves `submit` and `run`: the submission's tags and submission_id mean nothing
 * to a run here and are passed over; a field the engine does not know is still an error. */
Test(cli, a_run_passes_over_a_submissions_tags) {
    char dir[64], path[120], args[200], *out;
    scratch(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tagged.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("{\"kind\":\"train\",\"name\":\"xor\",\"tags\":{\"team\":\"a\"},\"submission_id\":\"k1\","
          "\"model\":{\"type\":\"mlp\",\"layers\":[2,4,2]},\"data\":{\"source\":\"xor\"},\"epochs\":2}", f);
    fclose(f);
    snprintf(args, sizeof args, "run '%s' --device host --json", path);
    cr_assert_eq(paragon(args, &out), 0, "%s", out);
    cr_assert(strstr(out, "\"epochs\": 2") || strstr(out, "\"epochs\":2"), "%s", out);
    free(out);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("{\"kind\":\"train\",\"tags\":{},\"label\":\"x\",\"data\":{\"source\":\"xor\"}}", f);
    fclose(f);
    cr_assert_eq(paragon(args, &out), 1, "%s", out);
    cr_assert(strstr(out, "label: unknown field"), "%s", out);
    free(out);
    remove_tree(dir);
}

/* Starts `paragon run` in cwd with args (NULL-ended, after "run"), stdout and stderr into one
 * pipe; waits for a line containing `until`, sends Ctrl-C (SIGINT), and returns the exit status
 * with everything it wrote in *out. */
static int interrupt_run(const char *cwd, const char *const *args, const char *until, char **out) {
    const char *cli = getenv("PARAGON_CLI");
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        const char *argv[16] = {cli, "run"};
        int n = 2;
        for (const char *const *a = args; *a && n < 15; a++) argv[n++] = *a;
        argv[n] = NULL;
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        if (chdir(cwd)) _exit(127);
        execv(cli, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 1 << 16, len = 0;
    *out = calloc(cap, 1);
    bool sent = false;
    ssize_t got;
    while ((got = read(fds[0], *out + len, cap - len - 1)) > 0) {
        len += (size_t)got;
        (*out)[len] = 0;
        if (!sent && strstr(*out, until)) {
            kill(pid, SIGINT);
            sent = true;
        }
        if (len + 1 >= cap) break;
    }
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(sent, "the run ended before it printed '%s': %s", until, *out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(cli, ctrl_c_checkpoints_a_train_run_where_it_stands) {
    char dir[64], spec[400], ckpt[300];
    scratch(dir, sizeof dir);
    /* a spiral of 3000 points for 100000 epochs: minutes, far longer than a Ctrl-C takes */
    snprintf(spec, sizeof spec, "%s/long.json", dir);
    FILE *f = fopen(spec, "w");
    cr_assert_not_null(f);
    fputs("{\"kind\":\"train\",\"name\":\"long spiral\",\"model\":{\"type\":\"mlp\",\"layers\":[2,64,64,3]},"
          "\"data\":{\"source\":\"spiral\",\"samples\":1000},\"batch_size\":32,\"epochs\":100000,"
          "\"checkpoint_every\":0}",
          f);
    fclose(f);
    /* without --checkpoint-dir: ./NAME-checkpoint, its name made safe for a path */
    const char *first[] = {spec, "--device", "host", NULL};
    char *out;
    cr_assert_eq(interrupt_run(dir, first, "epoch 1/100000: loss", &out), 130, "%s", out);
    cr_assert(strstr(out, "paragon run: long spiral: stopped at epoch "), "%s", out);
    cr_assert(strstr(out, "; checkpointed"), "%s", out);
    cr_assert(strstr(out, "--checkpoint-dir long_spiral-checkpoint --resume"), "how to go on: %s", out);
    free(out);
    snprintf(ckpt, sizeof ckpt, "%s/long_spiral-checkpoint/checkpoint.safetensors", dir);
    cr_assert_eq(access(ckpt, R_OK), 0, "%s", ckpt);
    /* --resume goes on from there (and stops again where it stands) */
    const char *again[] = {spec, "--device", "host", "--checkpoint-dir", "long_spiral-checkpoint", "--resume", NULL};
    cr_assert_eq(interrupt_run(dir, again, "resumed from long_spiral-checkpoint after epoch", &out), 130, "%s", out);
    cr_assert(strstr(out, "training long spiral on host: 3000 samples, batch 32, 100000 epochs, seed 0 (resumed)"), "%s",
              out);
    cr_assert(strstr(out, "; checkpointed"), "%s", out);
    free(out);
    remove_tree(dir);
}
