/* test_dist.c: distributed training under mpirun (paragon-rank, two ranks on this machine): ddp
 * against one process at the global batch, DiLoCo with one rank against plain training, reruns
 * bit-identical over shared memory and over TCP, and a stop or a killed rank resumed to the same
 * final weights; for the character GPT too (ddp against the global batch, DiLoCo's reruns and a
 * stop). Skipped where the build has no MPI (PARAGON_RANK unset). The bounds the
 * comparisons use are derived in docs/distributed.md. */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine_helpers.h"
#include "safetensors_check.h"
#include "tensor/dist.h"

/* Spirals (600 points, 3 arms) through 2-32-32-3: a few ms per epoch on the host reference. */
static const char *const SPIRAL =
    "{\"kind\":\"train\",\"name\":\"dist\",\"device\":\"host\",\"seed\":3,"
    "\"model\":{\"type\":\"mlp\",\"layers\":[2,32,32,3],\"activation\":\"relu\"},"
    "\"data\":{\"source\":\"spiral\",\"samples\":200,\"classes\":3},"
    "\"optimizer\":{\"type\":\"sgd\",\"lr\":0.1},\"batch_size\":%d,\"epochs\":%d%s%s}";

static char tmp_root[] = "/tmp/paragon-test-dist-XXXXXX";

static const char *rank_program(void) {
    const char *p = getenv("PARAGON_RANK");
    if (!p || !*p) cr_skip_test("no paragon-rank in this build (Open MPI not found)");
    return p;
}

/* A directory of its own under the test's temporary root. */
static void fresh_dir(const char *name, char *out, size_t size) {
    if (!strstr(tmp_root, "XXXXXX") || mkdtemp(tmp_root)) {
        snprintf(out, size, "%s/%s", tmp_root, name);
        cr_assert(mkdir(out, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", out, strerror(errno));
        return;
    }
    cr_assert_fail("mkdtemp: %s", strerror(errno));
}

static void write_spec(const char *dir, const char *text, char *path, size_t size) {
    snprintf(path, size, "%s/spec.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static char *spec_text(int batch, int epochs, const char *dist) {
    char *s = NULL;
    cr_assert(asprintf(&s, SPIRAL, batch, epochs, dist ? ",\"distributed\":" : "", dist ? dist : "") > 0);
    return s;
}

/* mpirun -np ranks paragon-rank SPEC --checkpoint-dir DIR [extra...]; its standard output in *out
 * (malloc'd); returns the exit status, or -signal. */
typedef struct {
    int ranks;
    const char *spec, *dir;
    const char *stop_on;   /* once an output line holds this, "stop" goes to mpirun's input */
    const char *extra[4];  /* more arguments: "--resume", MCA flags */
    bool tcp;              /* --mca btl tcp,self: the transport between machines */
} launch;

static int run_ranks(const launch *l, char **out) {
    char np[16];
    snprintf(np, sizeof np, "%d", l->ranks);
    const char *argv[32] = {"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", np};
    int n = 5;
    if (l->tcp) { /* over loopback, which Open MPI leaves out unless told: a machine may have no other */
        const char *tcp[] = {"--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo"};
        for (int i = 0; i < 6; i++) argv[n++] = tcp[i];
    }
    argv[n++] = rank_program();
    argv[n++] = l->spec;
    argv[n++] = "--data-dir";
    argv[n++] = tmp_root;
    argv[n++] = "--checkpoint-dir";
    argv[n++] = l->dir;
    for (int i = 0; i < 4 && l->extra[i]; i++) argv[n++] = l->extra[i];
    argv[n] = NULL;
    int in[2], o[2];
    cr_assert(pipe(in) == 0 && pipe(o) == 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(o[1], 1);
        close(in[0]), close(in[1]), close(o[0]), close(o[1]);
        execvp("mpirun", (char **)argv);
        _exit(127);
    }
    close(in[0]);
    close(o[1]);
    if (!l->stop_on) close(in[1]);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t got;
    bool asked = !l->stop_on;
    while ((got = read(o[0], buf + len, cap - len - 1)) > 0) {
        len += (size_t)got;
        buf[len] = '\0';
        if (!asked && strstr(buf, l->stop_on)) {
            cr_assert_eq(write(in[1], "stop\n", 5), 5);
            close(in[1]);
            asked = true;
        }
        if (len + 1 == cap) cr_assert_not_null(buf = realloc(buf, cap *= 2));
    }
    if (!asked) close(in[1]);
    buf[len] = '\0';
    close(o[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

/* The "result" event of the ranks' output (rank 0's); fails the test when there is none. */
static json_t *result_of(const char *out) {
    for (const char *line = out; line && *line;) {
        const char *end = strchr(line, '\n');
        json_t *j = json_loadb(line, end ? (size_t)(end - line) : strlen(line), 0, NULL);
        const char *ev = json_string_value(json_object_get(j, "event"));
        if (ev && !strcmp(ev, "result")) {
            json_t *r = json_incref(json_object_get(j, "result"));
            json_decref(j);
            return r;
        }
        json_decref(j);
        line = end ? end + 1 : NULL;
    }
    cr_assert_fail("no result event in:\n%s", out + (strlen(out) > 3000 ? strlen(out) - 3000 : 0));
    return NULL;
}

static json_t *train_ranks(const launch *l) {
    char *out;
    int rc = run_ranks(l, &out);
    cr_assert_eq(rc, 0, "mpirun exited %d:\n%.4000s", rc, out);
    json_t *r = result_of(out);
    free(out);
    return r;
}

/* The spec trained in this process (no ranks) on the host, its checkpoint into dir. */
static json_t *train_plain(const char *text, const char *dir) {
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    pgn_run_options opts = {.data_dir = tmp_root, .checkpoint_dir = dir};
    json_t *result = NULL;
    cr_assert_eq(pgn_job_run(&spec, NULL, &opts, NULL, &result, &err), 0, "%s", err.message);
    return result;
}

/* A checkpoint's parameters (not optimizer or trainer state) as name -> float array. */
typedef struct {
    char name[64];
    const float *v;
    size_t n;
} param;

typedef struct {
    char *bytes;
    param p[16];
    int n;
} weights;

/* A checkpoint's parameters whose names start with prefix: every one (there must be at most
 * 16), or with some_of, the first 16 (a GPT has more; the first ones stand for all). */
static void read_params(const char *dir, const char *prefix, bool some_of, weights *w) {
    char path[512];
    snprintf(path, sizeof path, "%s/" PGN_CHECKPOINT_FILE, dir);
    size_t len;
    w->bytes = pgn_read_file(path, &len);
    cr_assert_not_null(w->bytes, "%s: %s", path, strerror(errno));
    size_t start;
    json_t *h = test_safetensors_header(w->bytes, len, &start);
    const char *name;
    json_t *t;
    w->n = 0;
    json_object_foreach(h, name, t) {
        if (strncmp(name, prefix, strlen(prefix)) || (some_of && w->n == 16)) continue;
        cr_assert_lt(w->n, 16, "more than 16 parameters named %s*", prefix);
        param *p = &w->p[w->n++];
        snprintf(p->name, sizeof p->name, "%s", name);
        json_t *off = json_object_get(t, "data_offsets");
        size_t b = (size_t)json_integer_value(json_array_get(off, 0)), e = (size_t)json_integer_value(json_array_get(off, 1));
        p->v = (const float *)(w->bytes + start + b);
        p->n = (e - b) / 4;
    }
    json_decref(h);
    cr_assert_gt(w->n, 0);
}

static void read_weights(const char *dir, weights *w) { read_params(dir, "layers.", false, w); }

static const param *find(const weights *w, const char *name) {
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->p[i].name, name)) return &w->p[i];
    cr_assert_fail("no %s", name);
    return NULL;
}

static double max_diff(const weights *a, const weights *b) {
    double m = 0;
    for (int i = 0; i < a->n; i++) {
        const param *q = find(b, a->p[i].name);
        cr_assert_eq(q->n, a->p[i].n);
        for (size_t k = 0; k < q->n; k++) m = fmax(m, fabs((double)a->p[i].v[k] - q->v[k]));
    }
    return m;
}

static const char *sha(json_t *r) { return json_string_value(json_object_get(r, "weights_sha256")); }

/* ddp over 2 ranks at batch 32 each is one process at batch 64: the same per-row terms, each
 * gradient summed as (rank 0's rows) + (rank 1's rows) instead of in one chain. */
Test(dist, ddp_matches_one_process_at_the_global_batch) {
    rank_program();
    char d_ddp[256], d_64[256], d_32[256], spec[512];
    fresh_dir("ddp", d_ddp, sizeof d_ddp);
    fresh_dir("plain64", d_64, sizeof d_64);
    fresh_dir("plain32", d_32, sizeof d_32);
    char *text = spec_text(32, 3, "{\"ranks\":2,\"algorithm\":\"ddp\"}");
    write_spec(d_ddp, text, spec, sizeof spec);
    char *out;
    int rc = run_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d_ddp}, &out);
    cr_assert_eq(rc, 0, "mpirun exited %d:\n%.4000s", rc, out);
    json_t *r = result_of(out);
    /* a rank knows only its own share of a step: per-step figures are a single process's */
    cr_assert_null(strstr(out, "\"step_loss\""), "a distributed run reported step_loss");
    free(out);
    free(text);
    json_t *dist = json_object_get(r, "distributed");
    cr_assert_eq(json_integer_value(json_object_get(r, "steps")), json_integer_value(json_object_get(dist, "syncs")),
                 "one gradient all-reduce per step");
    char *t64 = spec_text(64, 3, NULL), *t32 = spec_text(32, 3, NULL);
    json_t *p64 = train_plain(t64, d_64), *p32 = train_plain(t32, d_32);
    cr_assert_eq(json_integer_value(json_object_get(r, "steps")), json_integer_value(json_object_get(p64, "steps")));
    weights w, w64, w32;
    read_weights(d_ddp, &w);
    read_weights(d_64, &w64);
    read_weights(d_32, &w32);
    double near = max_diff(&w, &w64), far = max_diff(&w, &w32);
    cr_log_info("mlp ddp: max |difference| %g from batch 64, %g from batch 32", near, far);
    cr_assert_leq(near, 1e-5, "ddp against one process at batch 64: max |difference| %g", near);
    cr_assert_gt(far, 1e-3, "and not the run at batch 32 (max |difference| %g)", far);
    cr_assert_float_eq(json_real_value(json_object_get(r, "test_loss")),
                       json_real_value(json_object_get(p64, "test_loss")), 1e-5);
    free(w.bytes), free(w64.bytes), free(w32.bytes), free(t64), free(t32);
    json_decref(r), json_decref(p64), json_decref(p32);
}

/* One rank, one outer step at the end (inner_steps past the run), outer lr 1, no momentum: the
 * result is theta0 - 1 (theta0 - theta_k) in float, where theta_k is plain training's. Computed
 * exactly that is theta_k; each element's rounding is at most u (1 + u) |theta0 - theta_k| + u
 * |theta_k| (u = 2^-24, docs/distributed.md). */
Test(dist, diloco_one_rank_ends_where_plain_training_ends) {
    rank_program();
    char d_dl[256], d_plain[256], spec[512];
    fresh_dir("diloco1", d_dl, sizeof d_dl);
    fresh_dir("plain", d_plain, sizeof d_plain);
    char *text = spec_text(32, 1, "{\"ranks\":1,\"algorithm\":\"diloco\",\"inner_steps\":1000000,"
                                  "\"outer_lr\":1,\"outer_momentum\":0}");
    write_spec(d_dl, text, spec, sizeof spec);
    json_t *r = train_ranks(&(launch){.ranks = 1, .spec = spec, .dir = d_dl});
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(r, "distributed"), "syncs")), 1);
    char *plain_text = spec_text(32, 1, NULL);
    json_t *p = train_plain(plain_text, d_plain);
    /* theta0: the graph as the trainer builds it, before any step */
    pgn_job_spec s;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(plain_text, strlen(plain_text), &s, &err), 0, "%s", err.message);
    pgn_graph g;
    pgn_graph_init(&g, NULL, 32, s.seed);
    cr_assert_eq(pgn_graph_build_mlp(&g, &s.train, &err), 0, "%s", err.message);
    weights w, wp;
    read_weights(d_dl, &w);
    read_weights(d_plain, &wp);
    const double u = ldexp(1.0, -24);
    int checked = 0, inexact = 0;
    for (int i = 0; i < g.n_params; i++) {
        const pgn_node *node = &g.nodes[g.params[i]];
        const param *a = find(&w, node->name), *b = find(&wp, node->name);
        const float *theta0 = node->value.host;
        for (size_t k = 0; k < a->n; k++, checked++) {
            double r_k = a->v[k], b_k = b->v[k], d = fabs((double)theta0[k] - b_k);
            double bound = u * (1 + u) * d + u * fabs(b_k);
            cr_assert_leq(fabs(r_k - b_k), bound, "%s[%zu]: %.9g against plain %.9g (theta0 %.9g): past %g",
                          node->name, k, r_k, b_k, (double)theta0[k], bound);
            inexact += r_k != b_k;
        }
    }
    cr_assert_gt(checked, 1000);
    cr_log_info("diloco with one rank: %d of %d parameters differ from plain training by rounding", inexact,
                checked);
    pgn_graph_release(&g);
    free(w.bytes), free(wp.bytes), free(text), free(plain_text);
    json_decref(r), json_decref(p);
}

/* Two reruns of DiLoCo over 2 ranks give the same weights; so does the TCP transport. */
Test(dist, reruns_are_bit_identical_over_shared_memory_and_tcp) {
    rank_program();
    char d1[256], d2[256], d3[256], spec[512];
    fresh_dir("rerun1", d1, sizeof d1);
    fresh_dir("rerun2", d2, sizeof d2);
    fresh_dir("tcp", d3, sizeof d3);
    char *text = spec_text(32, 4, "{\"ranks\":2,\"algorithm\":\"diloco\",\"inner_steps\":3}");
    write_spec(d1, text, spec, sizeof spec);
    json_t *a = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d1});
    json_t *b = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d2});
    json_t *c = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d3, .tcp = true});
    cr_assert_str_eq(sha(a), sha(b));
    cr_assert_str_eq(sha(a), sha(c), "the TCP transport moves the same bytes");
    json_t *ranks = json_object_get(json_object_get(a, "distributed"), "per_rank");
    cr_assert_eq(json_array_size(ranks), 2);
    cr_assert_gt(json_real_value(json_object_get(json_array_get(ranks, 1), "bytes_sent")), 0);
    free(text);
    json_decref(a), json_decref(b), json_decref(c);
}

/* A "stop" line on mpirun's input, sent once the first epoch is done, stops both ranks where they
 * next meet, checkpointed; the resumed run ends with the uninterrupted run's weights. */
Test(dist, a_stop_resumes_to_the_same_weights) {
    rank_program();
    const char *algorithms[] = {"{\"ranks\":2,\"algorithm\":\"ddp\"}",
                                "{\"ranks\":2,\"algorithm\":\"diloco\",\"inner_steps\":4}"};
    for (int i = 0; i < 2; i++) {
        char d_all[256], d_stop[256], spec[512];
        fresh_dir(i ? "stop-diloco-all" : "stop-ddp-all", d_all, sizeof d_all);
        fresh_dir(i ? "stop-diloco" : "stop-ddp", d_stop, sizeof d_stop);
        char *text = spec_text(32, 40, algorithms[i]);
        write_spec(d_all, text, spec, sizeof spec);
        json_t *whole = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d_all});
        char *out;
        int rc = run_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d_stop,
                                     .stop_on = "\"name\":\"loss\",\"step\":1,"}, &out);
        cr_assert_neq(rc, 0, "stopped:\n%.2000s", out);
        cr_assert(strstr(out, "\"code\":\"cancelled\"") && strstr(out, "checkpointed"), "%.2000s", out);
        free(out);
        json_t *resumed = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d_stop, .extra = {"--resume"}});
        cr_assert_geq(json_integer_value(json_object_get(resumed, "resumed_from_step")), 10,
                      "stopped after the first epoch");
        cr_assert_str_eq(sha(resumed), sha(whole), "%s", algorithms[i]);
        free(text);
        json_decref(whole), json_decref(resumed);
    }
}

/* kill -9 of one rank once a checkpoint is committed: mpirun ends the other; the resumed run
 * ends with the uninterrupted run's weights. */
Test(dist, a_killed_rank_resumes_to_the_same_weights) {
    rank_program();
    char d_all[256], d_kill[256], spec[512], committed[512];
    fresh_dir("kill-all", d_all, sizeof d_all);
    fresh_dir("kill", d_kill, sizeof d_kill);
    char *text = spec_text(32, 300, "{\"ranks\":2,\"algorithm\":\"diloco\",\"inner_steps\":5}");
    write_spec(d_all, text, spec, sizeof spec);
    json_t *whole = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d_all});
    snprintf(committed, sizeof committed, "%s/" PGN_DIST_SUBDIR "/" PGN_DIST_COMMIT_FILE, d_kill);
    pid_t runner = fork();
    cr_assert_geq(runner, 0);
    if (runner == 0) { /* mpirun's parent, so that this process can find and kill a rank */
        char np[] = "2";
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(null, 1);
        execlp("mpirun", "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", np, rank_program(), spec,
               "--data-dir", tmp_root, "--checkpoint-dir", d_kill, (char *)NULL);
        _exit(127);
    }
    struct stat st;
    for (int i = 0; i < 3000 && stat(committed, &st); i++) usleep(10000);
    cr_assert_eq(stat(committed, &st), 0, "a checkpoint was committed within 30 s");
    /* a rank: a child of mpirun running paragon-rank */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "pgrep -P %d -x paragon-rank | head -1", (int)runner);
    FILE *p = popen(cmd, "r");
    int victim = 0;
    cr_assert_eq(fscanf(p, "%d", &victim), 1, "found a rank of mpirun %d", (int)runner);
    pclose(p);
    kill(victim, SIGKILL);
    int status;
    cr_assert_eq(waitpid(runner, &status, 0), runner);
    cr_assert(!WIFEXITED(status) || WEXITSTATUS(status) != 0, "mpirun reports the killed rank");
    json_t *resumed = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d_kill, .extra = {"--resume"}});
    cr_assert_str_eq(sha(resumed), sha(whole));
    free(text);
    json_decref(whole), json_decref(resumed);
}

/* ---- the character GPT -------------------------------------------------------------------- */

/* A tiny GPT (1 layer, d_model 16, context 8) on a text of its own, written under the datasets
 * directory: a few hundred milliseconds a run. The ddp comparison trains with SGD: Adam divides
 * each gradient by its own running size, so two sums of a near-zero gradient that differ in the
 * last bits can move its weight by a good part of lr, where SGD moves it by lr times the
 * difference (docs/distributed.md). */
static const char *const GPT =
    "{\"kind\":\"train\",\"name\":\"dist-gpt\",\"device\":\"host\",\"seed\":5,"
    "\"model\":{\"type\":\"gpt\",\"n_layer\":1,\"n_head\":2,\"d_model\":16,\"context\":8},"
    "\"data\":{\"source\":\"text\",\"path\":\"dist.txt\"},\"optimizer\":{\"type\":\"%s\",\"lr\":%s},"
    "\"batch_size\":%d,\"steps\":%d,\"eval_every\":10,\"log_every\":5,\"eval_windows\":16%s%s}";

static char *gpt_text(int batch, int steps, const char *dist) {
    bool sgd = dist == NULL || strstr(dist, "ddp");
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/datasets", tmp_root);
    fresh_dir("datasets", dir, sizeof dir);
    snprintf(path, sizeof path, "%s/dist.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    static const char *const words[] = {"the ", "quick ", "brown ", "fox ", "jumps ", "over ", "a ", "lazy ",
                                        "dog ", "and ", "runs ", "away.\n"};
    for (int i = 0; i < 3000; i++) fputs(words[(i * 7 + i / 12) % 12], f);
    fclose(f);
    char *s = NULL;
    cr_assert(asprintf(&s, GPT, sgd ? "sgd" : "adamw", sgd ? "0.5" : "0.003", batch, steps,
                       dist ? ",\"distributed\":" : "", dist ? dist : "") > 0);
    return s;
}

/* The GPT's checkpoint's first 16 parameters (the names are GPT-2's). */
static void read_gpt_weights(const char *dir, weights *w) { read_params(dir, "transformer.", true, w); }

/* ddp of the GPT over 2 ranks at 4 windows each is one process at 8: rank r takes windows
 * (2 s + r) 4 .. of step s, the single process windows 8 s ..: the same ones. */
Test(dist, gpt_ddp_matches_one_process_at_the_global_batch) {
    rank_program();
    char d_ddp[256], d_8[256], d_4[256], spec[512];
    fresh_dir("gpt-ddp", d_ddp, sizeof d_ddp);
    fresh_dir("gpt-plain8", d_8, sizeof d_8);
    fresh_dir("gpt-plain4", d_4, sizeof d_4);
    char *text = gpt_text(4, 20, "{\"ranks\":2,\"algorithm\":\"ddp\"}");
    write_spec(d_ddp, text, spec, sizeof spec);
    json_t *r = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d_ddp});
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(r, "distributed"), "syncs")), 20);
    char *t8 = gpt_text(8, 20, NULL), *t4 = gpt_text(4, 20, NULL);
    json_t *p8 = train_plain(t8, d_8), *p4 = train_plain(t4, d_4);
    weights w, w8, w4;
    read_gpt_weights(d_ddp, &w);
    read_gpt_weights(d_8, &w8);
    read_gpt_weights(d_4, &w4);
    double near = max_diff(&w, &w8), far = max_diff(&w, &w4);
    cr_log_info("gpt ddp: max |difference| %g from batch 8, %g from batch 4", near, far);
    cr_assert_leq(near, 1e-5, "ddp against one process at batch 8: max |difference| %g", near);
    cr_assert_gt(far, 1e-4, "and not the run at batch 4 (max |difference| %g)", far);
    cr_assert_float_eq(json_real_value(json_object_get(r, "val_loss")), json_real_value(json_object_get(p8, "val_loss")),
                       1e-4);
    free(w.bytes), free(w8.bytes), free(w4.bytes), free(text), free(t8), free(t4);
    json_decref(r), json_decref(p8), json_decref(p4);
}

/* DiLoCo of the GPT: reruns give the same weights, and a stop resumes to them. */
Test(dist, gpt_diloco_reruns_and_resumes_bit_identically) {
    rank_program();
    char d1[256], d2[256], d_stop[256], spec[512];
    fresh_dir("gpt-diloco1", d1, sizeof d1);
    fresh_dir("gpt-diloco2", d2, sizeof d2);
    fresh_dir("gpt-diloco-stop", d_stop, sizeof d_stop);
    char *text = gpt_text(4, 60, "{\"ranks\":2,\"algorithm\":\"diloco\",\"inner_steps\":5}");
    write_spec(d1, text, spec, sizeof spec);
    json_t *a = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d1});
    json_t *b = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d2});
    cr_assert_str_eq(sha(a), sha(b));
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(a, "distributed"), "syncs")), 12);
    char *out;
    int rc = run_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d_stop, .stop_on = "\"name\":\"loss\",\"step\":10,"},
                       &out);
    cr_assert_neq(rc, 0, "stopped:\n%.2000s", out);
    cr_assert(strstr(out, "checkpointed"), "%.2000s", out);
    free(out);
    json_t *resumed = train_ranks(&(launch){.ranks = 2, .spec = spec, .dir = d_stop, .extra = {"--resume"}});
    cr_assert_geq(json_integer_value(json_object_get(resumed, "resumed_from_step")), 10);
    cr_assert_str_eq(sha(resumed), sha(a));
    free(text);
    json_decref(a), json_decref(b), json_decref(resumed);
}
