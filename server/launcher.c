/* launcher.c: a distributed train job runs as mpirun's ranks, a child of paragond: mpirun -np N
 * paragon-rank <job dir>/spec.json, with a hostfile from the spec's hosts. The ranks write JSON
 * lines (rank/paragon-rank.c); this file turns them into the job's logs, metrics, progress and
 * result, and asks for a stop with a "stop" line on mpirun's standard input, which mpirun hands
 * to rank 0 and rank 0 to the others at their next meeting (docs/distributed.md). Rank 0 asks
 * before each checkpoint commit ({"event":"commit"}) and commits only on "commit yes": the run's
 * may_commit, so ranks of a run that lost its lease never commit over the job's new run. */
#include "launcher.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* How often a run's should_stop is polled while the ranks work. */
#define STOP_POLL_MS 200
/* An output line longer than this (a result is a few kB) is dropped, said in the log. */
#define LINE_LIMIT (16u << 20)
/* Lines of mpirun's standard error kept for the log (the last ones). */
#define STDERR_KEPT 12

/* ---- finding mpirun and paragon-rank ---------------------------------------------------------- */

static pthread_once_t found_once = PTHREAD_ONCE_INIT;
static char rank_path[PATH_MAX], mpirun_path[PATH_MAX];

static void find_programs(void) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = n > 0 ? (exe[n] = '\0', strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = '\0';
        int len = snprintf(rank_path, sizeof rank_path, "%.*s/paragon-rank", PATH_MAX - 16, exe);
        if (len >= (int)sizeof rank_path || access(rank_path, X_OK) != 0) rank_path[0] = '\0';
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p && !mpirun_path[0];) {
        size_t len = strcspn(p, ":");
        snprintf(mpirun_path, sizeof mpirun_path, "%.*s/mpirun", (int)len, p);
        if (len == 0 || access(mpirun_path, X_OK) != 0) mpirun_path[0] = '\0';
        p += len + (p[len] == ':');
    }
}

int pgd_launch_available(pgn_error *err) {
    pthread_once(&found_once, find_programs);
    if (mpirun_path[0] && rank_path[0]) return 0;
    pgn_error_set(err, PGN_E_INVALID_SPEC, "distributed", "distributed: this paragond cannot start ranks: %s",
                  !mpirun_path[0] ? "mpirun is not on its PATH (Debian: openmpi-bin)"
                                  : "paragon-rank is not beside paragond (it is built where Open MPI's "
                                    "libopenmpi-dev is installed)");
    return -1;
}

/* ---- the ranks' output --------------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
    bool dropping; /* the current line passed LINE_LIMIT */
} line_buf;

typedef struct {
    const pgn_run_hooks *hooks;
    json_t *result;
    int to_ranks;     /* mpirun's standard input, which it forwards to rank 0 */
    bool started;     /* rank 0 said it is up: mpirun launched the ranks */
    bool failed;      /* a rank said why it ended: first */
    pgn_error error;
    /* mpirun's last words on standard error, told only when the ranks did not say why they
     * ended: its banners after a stop the ranks agreed on are noise */
    char said[STDERR_KEPT][256];
    int n_said;
} run_state;


/* One event line from a rank. */
static void on_event(run_state *st, json_t *ev) {
    const pgn_run_hooks *h = st->hooks;
    const char *kind = json_string_value(json_object_get(ev, "event"));
    json_int_t rank = json_integer_value(json_object_get(ev, "rank"));
    if (!kind) return;
    if (!strcmp(kind, "started")) {
        st->started = true;
    } else if (!strcmp(kind, "commit") && rank == 0) {
        /* rank 0 waits for the answer before it commits a checkpoint: only while this run holds
         * the job (its lease), as a run in this process asks (store.h, "runs") */
        bool yes = !h || !h->may_commit || h->may_commit(h->ctx);
        const char *answer = yes ? "commit yes\n" : "commit no\n";
        if (write(st->to_ranks, answer, strlen(answer)) != (ssize_t)strlen(answer))
            pgn_hooks_log(h, "could not answer the ranks' commit: %s", strerror(errno));
        else if (!yes)
            pgn_hooks_log(h, "the ranks' checkpoint was not committed: this run no longer holds its job");
    } else if (!strcmp(kind, "log") && rank == 0) {
        const char *line = json_string_value(json_object_get(ev, "line"));
        if (line) pgn_hooks_log(st->hooks, "%s", line);
    } else if (!strcmp(kind, "metric") && rank == 0 && h && h->on_metric) {
        const char *name = json_string_value(json_object_get(ev, "name"));
        if (name)
            h->on_metric(h->ctx, name, json_integer_value(json_object_get(ev, "step")),
                         json_number_value(json_object_get(ev, "value")));
    } else if (!strcmp(kind, "progress") && rank == 0 && h && h->on_progress) {
        h->on_progress(h->ctx, json_number_value(json_object_get(ev, "fraction")));
    } else if (!strcmp(kind, "result") && rank == 0) {
        json_decref(st->result);
        st->result = json_incref(json_object_get(ev, "result"));
    } else if (!strcmp(kind, "error") && !st->failed) {
        pgn_error_code code = PGN_E_INTERNAL;
        pgn_error_code_parse(json_string_value(json_object_get(ev, "code")), &code);
        const char *message = json_string_value(json_object_get(ev, "message"));
        if (!message) message = "no message";
        /* every rank stops with the same words; another failure is one rank's own */
        if (rank == 0 || code == PGN_E_CANCELLED) pgn_error_set(&st->error, code, "", "%s", message);
        else pgn_error_set(&st->error, code, "", "rank %lld: %s", (long long)rank, message);
        st->failed = true;
    }
}

static void on_line(run_state *st, char *line, bool is_stderr) {
    if (!*line) return;
    if (is_stderr) { /* mpirun's own words (a rank that died, a host it cannot reach) */
        if (strspn(line, "-") == strlen(line)) return; /* its banners' rules */
        if (st->n_said == STDERR_KEPT) {
            memmove(st->said[0], st->said[1], sizeof st->said - sizeof st->said[0]);
            st->n_said--;
        }
        snprintf(st->said[st->n_said++], sizeof st->said[0], "%s", line);
        return;
    }
    json_t *ev = json_loads(line, 0, NULL);
    if (ev) on_event(st, ev);
    else pgn_hooks_log(st->hooks, "mpirun: %s", line);
    json_decref(ev);
}

/* Appends n bytes read from a pipe and hands on each whole line. */
static void take(run_state *st, line_buf *b, const char *data, size_t n, bool is_stderr) {
    for (size_t i = 0; i < n; i++) {
        if (data[i] == '\n') {
            if (b->dropping) pgn_hooks_log(st->hooks, "a line of the ranks' output over %u bytes was dropped", LINE_LIMIT);
            else if (b->len) {
                b->p[b->len] = '\0';
                on_line(st, b->p, is_stderr);
            }
            b->len = 0;
            b->dropping = false;
            continue;
        }
        if (b->dropping) continue;
        if (b->len + 2 > b->cap) {
            size_t cap = b->cap ? b->cap * 2 : 4096;
            char *p = cap <= LINE_LIMIT ? realloc(b->p, cap) : NULL;
            if (!p) {
                b->dropping = true;
                continue;
            }
            b->p = p;
            b->cap = cap;
        }
        b->p[b->len++] = data[i];
    }
}

/* ---- the run ------------------------------------------------------------------------------- */

/* Writes text to <dir>/<name>. */
static int write_file(const char *dir, const char *name, const char *text, char *path, size_t size,
                      pgn_error *err) {
    snprintf(path, size, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) ok = false;
    if (ok) return 0;
    pgn_error_set(err, PGN_E_IO, "", "cannot write %s: %s", path, strerror(errno));
    return -1;
}

/* An Open MPI hostfile from the spec's hosts ("name" or "name:slots"). */
static char *hostfile_text(const pgn_dist_spec *d) {
    size_t cap = (size_t)d->n_hosts * (PGN_DIST_HOST_MAX + 16) + 1, len = 0;
    char *text = malloc(cap);
    if (!text) return NULL;
    text[0] = '\0';
    for (int i = 0; i < d->n_hosts; i++) {
        const char *h = d->hosts[i], *colon = strchr(h, ':');
        len += (size_t)(colon ? snprintf(text + len, cap - len, "%.*s slots=%s\n", (int)(colon - h), h, colon + 1)
                              : snprintf(text + len, cap - len, "%s\n", h));
    }
    return text;
}

int pgd_launch_run(const pgn_job_spec *spec, const json_t *spec_json, const pgn_run_options *opts,
                   const pgn_run_hooks *hooks, json_t **result, bool *interrupted, pgn_error *err) {
    *result = NULL;
    *interrupted = false;
    if (pgd_launch_available(err)) return -1;
    const pgn_dist_spec *d = &spec->train.dist;
    char spec_path[PGN_PATH_MAX * 2 + 32], hosts_path[PGN_PATH_MAX * 2 + 32], data_dir[PATH_MAX];
    char *text = pgn_json_dumps(spec_json), *hosts = d->n_hosts ? hostfile_text(d) : NULL;
    int rc = 0;
    if (!text || (d->n_hosts && !hosts)) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory writing the ranks' files");
        rc = -1;
    }
    if (rc == 0) rc = write_file(opts->checkpoint_dir, "spec.json", text, spec_path, sizeof spec_path, err);
    if (rc == 0 && hosts) rc = write_file(opts->checkpoint_dir, "hostfile", hosts, hosts_path, sizeof hosts_path, err);
    free(text);
    free(hosts);
    if (rc) return -1;
    if (!realpath(opts->data_dir ? opts->data_dir : PGN_DEFAULT_DATA_DIR, data_dir)) {
        pgn_error_set(err, PGN_E_IO, "", "cannot resolve the data directory: %s", strerror(errno));
        return -1;
    }

    /* pocl runs a thread per core in each rank: on this machine, share the cores out */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char np[16], threads[48], device[16];
    snprintf(np, sizeof np, "%d", d->ranks);
    snprintf(threads, sizeof threads, "POCL_MAX_PTHREAD_COUNT=%ld", cores > d->ranks ? cores / d->ranks : 1);
    /* each rank picks its own device of the kind the job was placed on (ids may differ between
     * machines) */
    snprintf(device, sizeof device, "%s", !strcmp(spec->device, "host") ? "host" : "auto");
    const char *argv[40];
    int n = 0;
    argv[n++] = mpirun_path;
    if (geteuid() == 0) argv[n++] = "--allow-run-as-root";
    argv[n++] = "-np";
    argv[n++] = np;
    if (d->n_hosts) {
        argv[n++] = "--hostfile";
        argv[n++] = hosts_path;
    } else {
        argv[n++] = "--oversubscribe"; /* this machine: as many ranks as asked, cores or not */
    }
    argv[n++] = "-x";
    argv[n++] = threads;
    argv[n++] = rank_path;
    argv[n++] = spec_path;
    argv[n++] = "--device";
    argv[n++] = device;
    argv[n++] = "--data-dir";
    argv[n++] = data_dir;
    argv[n++] = "--checkpoint-dir";
    argv[n++] = opts->checkpoint_dir;
    if (opts->resume) argv[n++] = "--resume";
    argv[n++] = "--ask-commit";
    argv[n] = NULL;

    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "cannot make pipes for mpirun: %s", strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (in[i] >= 0) close(in[i]);
            if (out[i] >= 0) close(out[i]);
            if (errp[i] >= 0) close(errp[i]);
        }
        return -1;
    }
    pid_t parent = getpid(), pid = fork();
    if (pid == 0) {
        /* mpirun ends with paragond, whatever ends it (kill -9 included): its ranks with it */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(1);
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(errp[1], 2);
        execv(mpirun_path, (char *const *)argv); /* the pipes' other ends close on exec */
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(errp[1]);
    if (pid < 0) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "cannot start mpirun: %s", strerror(errno));
        close(in[1]), close(out[0]), close(errp[0]);
        return -1;
    }
    pgn_hooks_log(hooks, "started %d ranks: mpirun -np %d%s%s paragon-rank (pid %d)", d->ranks,
             d->ranks, d->n_hosts ? " --hostfile " : "", d->n_hosts ? hosts_path : "", (int)pid);

    run_state st = {.hooks = hooks, .to_ranks = in[1]};
    line_buf bufs[2] = {{0}, {0}};
    struct pollfd fds[2] = {{.fd = out[0], .events = POLLIN}, {.fd = errp[0], .events = POLLIN}};
    bool asked = false;
    int open_fds = 2;
    while (open_fds > 0) {
        if (!asked && hooks && hooks->should_stop && hooks->should_stop(hooks->ctx)) {
            asked = true;
            if (write(in[1], "stop\n", 5) != 5) pgn_hooks_log(st.hooks, "could not ask the ranks to stop: %s", strerror(errno));
            else pgn_hooks_log(st.hooks, "asked the ranks to stop at their next meeting");
        }
        int ready = poll(fds, 2, STOP_POLL_MS);
        if (ready < 0 && errno != EINTR) break;
        for (int i = 0; i < 2 && ready > 0; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char chunk[65536];
            ssize_t got = read(fds[i].fd, chunk, sizeof chunk);
            if (got > 0) {
                take(&st, &bufs[i], chunk, (size_t)got, i == 1);
            } else if (got == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        if (fds[i].fd >= 0) close(fds[i].fd);
        free(bufs[i].p);
    }
    close(in[1]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    bool exited = WIFEXITED(status);
    int code = exited ? WEXITSTATUS(status) : WTERMSIG(status);

    if (st.result && (!st.failed || (exited && code == 0))) {
        *result = st.result;
        return 0;
    }
    json_decref(st.result);
    if (st.failed) { /* a rank said why: the job's own failure, or the stop it was asked for */
        *err = st.error;
        return -1;
    }
    for (int i = 0; i < st.n_said; i++) pgn_hooks_log(st.hooks, "mpirun: %s", st.said[i]);
    if (!st.started) { /* mpirun never launched them (too few slots, a host it cannot reach): the job's
                        * fault or its machines', which running it again would only repeat */
        pgn_error_set(err, PGN_E_COMM, "distributed", "mpirun could not start the ranks (it %s %d)%s%s",
                      exited ? "exited" : "was killed by signal", code, st.n_said ? ": " : "",
                      st.n_said ? st.said[st.n_said - 1] : "");
        return -1;
    }
    *interrupted = true;
    pgn_error_set(err, PGN_E_COMM, "", "the ranks ended without finishing: mpirun %s %d%s%s",
                  exited ? "exited" : "was killed by signal", code, st.n_said ? ": " : "",
                  st.n_said ? st.said[st.n_said - 1] : "");
    return -1;
}
