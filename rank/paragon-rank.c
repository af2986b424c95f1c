/* paragon-rank: one rank of a distributed train job, run by mpirun (paragond starts it; see
 * docs/distributed.md):
 *
 *   mpirun -np N paragon-rank SPEC.json [--device DEV] [--data-dir DIR]
 *                             [--checkpoint-dir DIR] [--resume] [--ask-commit]
 *
 * Each rank opens its own device (DEV, else the spec's; "host" is the host reference) and runs
 * the engine's training loop with the MPI communicator bound to pgn_comm. Rank 0 writes the
 * run's events to standard output as JSON lines, each with its "rank": {"event":"started"} once
 * MPI is up, {"event":"log","line"},
 * {"event":"metric","name","step","value"} (every rank's own figures among them, as
 * "rankR.loss" ...), {"event":"progress","fraction"}, and at the end {"event":"result","result"};
 * any rank that fails writes {"event":"error","code","message"}. A line "stop" on
 * mpirun's standard input (which it forwards to rank 0), or SIGUSR1, SIGTERM or SIGINT sent to a
 * rank, asks for a stop: the ranks agree on it where they next meet, checkpoint there and exit 3.
 * (mpirun itself answers SIGTERM by killing the ranks, and here did not forward SIGUSR1.)
 * With --ask-commit (paragond passes it), rank 0 asks before it commits a checkpoint: it writes
 * {"event":"commit"} and waits for a line "commit yes" or "commit no" on its standard input; on
 * "no" (the job is another run's now), or when its input ends, it commits nothing and the ranks
 * are aborted (exit 1).
 * Exit status: 0 done, 1 the job failed (the other ranks are aborted), 2 bad usage, 3 stopped. */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paragon.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static int rank_of_world(void) {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

/* One event line: obj gains "rank" and goes out whole, in one write, so ranks' lines that mpirun
 * merges never interleave. Steals obj. */
static void emit(json_t *obj) {
    json_object_set_new(obj, "rank", json_integer(rank_of_world()));
    char *s = pgn_json_dumps(obj);
    json_decref(obj);
    if (!s) return;
    size_t n = strlen(s);
    s[n] = '\n';
    fwrite(s, 1, n + 1, stdout);
    fflush(stdout);
    free(s);
}

/* Logs, metrics and progress come from rank 0 alone (the engine gathers the other ranks' figures
 * to it): mpirun forwards each rank's output in chunks that need not end at a line, so two ranks
 * writing at once could interleave their lines. */
static void on_log(void *ctx, const char *line) {
    (void)ctx;
    if (rank_of_world() == 0) emit(json_pack("{s:s, s:s}", "event", "log", "line", line));
}

static void on_metric(void *ctx, const char *name, int64_t step, double value) {
    (void)ctx;
    if (rank_of_world() == 0)
        emit(json_pack("{s:s, s:s, s:I, s:f}", "event", "metric", "name", name, "step", (json_int_t)step, "value",
                       value));
}

static void on_progress(void *ctx, double fraction) {
    (void)ctx;
    if (rank_of_world() == 0) emit(json_pack("{s:s, s:f}", "event", "progress", "fraction", fraction));
}

/* Called once the device is open: pocl's LLVM takes SIGUSR1 for itself when it loads. */
static void catch_stop_signals(void) {
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* How long rank 0 waits for paragond's answer to a commit before it gives up (commits nothing). */
#define COMMIT_ANSWER_MS (120 * 1000)

/* Set when paragond answered "commit no": the ranks did not agree to stop, so they are aborted. */
static bool commit_refused;

/* Rank 0 reads standard input, which mpirun forwards from its own (the way paragond speaks to the
 * ranks, on whatever hosts they run): the next whole line into line (without its newline).
 * 1: a line; 0: none within timeout_ms; -1: the input ended. */
static int next_line(char *line, size_t size, int timeout_ms) {
    static bool closed;
    static char buf[64];
    static size_t len;
    if (closed) return -1;
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    while (poll(&p, 1, timeout_ms) == 1) {
        char c;
        ssize_t n = read(STDIN_FILENO, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            closed = true;
            return -1;
        }
        if (c != '\n') {
            if (len + 1 < sizeof buf) buf[len++] = c;
            continue;
        }
        buf[len] = '\0';
        snprintf(line, size, "%s", buf);
        len = 0;
        return 1;
    }
    return 0;
}

/* A line "stop" asks for a stop; other lines here are answers nobody waits for. */
static void read_stop_line(void) {
    char line[64];
    while (rank_of_world() == 0 && !stop_requested && next_line(line, sizeof line, 0) == 1)
        if (!strcmp(line, "stop")) stop_requested = 1;
}

static bool should_stop(void *ctx) {
    (void)ctx;
    read_stop_line();
    return stop_requested != 0;
}

/* Rank 0 asks paragond whether this run still holds its job before a checkpoint is committed
 * (its lease: another node may run the job now, docs/distributed.md); the other ranks write only
 * files named by their step, which no commit names until rank 0's. */
static bool may_commit(void *ctx) {
    (void)ctx;
    if (rank_of_world() != 0) return true;
    emit(json_pack("{s:s}", "event", "commit"));
    char line[64];
    int64_t deadline = pgn_now_ns() + COMMIT_ANSWER_MS * 1000000LL;
    for (int64_t left; (left = deadline - pgn_now_ns()) > 0;) {
        int got = next_line(line, sizeof line, (int)(left / 1000000) + 1);
        if (got < 0) break;
        if (got == 0) continue;
        if (!strcmp(line, "stop")) stop_requested = 1;
        else if (!strcmp(line, "commit yes")) return true;
        else if (!strcmp(line, "commit no")) break;
    }
    commit_refused = true;
    return false;
}

/* ---- pgn_comm over MPI_COMM_WORLD ------------------------------------------------------------ */

static int mpi_fail(pgn_error *err, const char *what, int code) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(code, text, &len);
    pgn_error_set(err, PGN_E_COMM, "", "%s failed: %s", what, text);
    return -1;
}

static int mpi_allgather(pgn_comm *c, const void *send, size_t bytes, void *recv, pgn_error *err) {
    (void)c;
    if (bytes > INT_MAX) {
        pgn_error_set(err, PGN_E_LIMIT_EXCEEDED, "", "one collective moves at most %d bytes; %zu asked", INT_MAX,
                      bytes);
        return -1;
    }
    int rc = MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(err, "MPI_Allgather", rc);
}

static int mpi_barrier(pgn_comm *c, pgn_error *err) {
    (void)c;
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(err, "MPI_Barrier", rc);
}

static void usage(FILE *f) {
    fprintf(f, "usage: mpirun -np N paragon-rank SPEC.json [--device DEV] [--data-dir DIR]\n"
               "                              [--checkpoint-dir DIR] [--resume] [--ask-commit]\n"
               "One rank of a distributed train job (the spec's \"distributed\" object); events go to\n"
               "standard output as JSON lines. DEV is auto, cpu, gpu, host, or a device id.\n"
               "A line \"stop\" on standard input stops the ranks at their next meeting, checkpointed.\n"
               "--ask-commit: rank 0 asks on standard output before each checkpoint commit and waits\n"
               "for \"commit yes\" or \"commit no\" on standard input.\n"
               "Exit status: 0 done, 1 failed, 2 bad usage, 3 stopped.\n");
}

/* The job's failure as an event; then the status to exit with. */
static int fail(const pgn_error *err) {
    emit(json_pack("{s:s, s:s, s:s}", "event", "error", "code", pgn_error_code_name(err->code), "message",
                   err->message));
    return err->code == PGN_E_CANCELLED && !commit_refused ? 3 : 1;
}

static int run(int argc, char **argv) {
    const char *file = NULL, *device = NULL, *data_dir = PGN_DEFAULT_DATA_DIR, *checkpoint_dir = NULL;
    bool resume = false, ask_commit = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc)
            device = argv[++i];
        else if (!strcmp(argv[i], "--data-dir") && i + 1 < argc)
            data_dir = argv[++i];
        else if (!strcmp(argv[i], "--checkpoint-dir") && i + 1 < argc)
            checkpoint_dir = argv[++i];
        else if (!strcmp(argv[i], "--resume"))
            resume = true;
        else if (!strcmp(argv[i], "--ask-commit"))
            ask_commit = true;
        else if (!strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else {
            fprintf(stderr, "paragon-rank: unexpected argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (!file || (resume && !checkpoint_dir)) {
        fprintf(stderr, "paragon-rank: %s\n", file ? "--resume needs --checkpoint-dir" : "missing the job spec file");
        usage(stderr);
        return 2;
    }
    pgn_error err = {0};
    size_t len = 0;
    char *text = pgn_read_file(file, &len);
    if (!text) {
        pgn_error_set(&err, PGN_E_IO, "", "cannot read '%s': %s", file, strerror(errno));
        return fail(&err);
    }
    pgn_job_spec spec;
    int rc = pgn_spec_parse_text(text, len, &spec, &err);
    free(text);
    if (rc) return fail(&err);
    if (spec.kind != PGN_JOB_TRAIN || spec.train.dist.ranks == 0) {
        pgn_error_set(&err, PGN_E_INVALID_SPEC, "distributed", "%s is not a distributed train job (no "
                      "\"distributed\" object)", file);
        pgn_spec_free(&spec);
        return fail(&err);
    }
    if (device) snprintf(spec.device, sizeof spec.device, "%s", device);

    pgn_device_info chosen;
    pgn_device *dev = NULL;
    rc = pgn_device_open_named(spec.device, &chosen, &dev, &err);
    if (rc) {
        pgn_spec_free(&spec);
        return fail(&err);
    }
    pgn_comm comm = {.allgather = mpi_allgather, .barrier = mpi_barrier};
    MPI_Comm_rank(MPI_COMM_WORLD, &comm.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &comm.size);
    pgn_run_options opts = {.data_dir = data_dir, .checkpoint_dir = checkpoint_dir, .resume = resume,
                            .checkpoint_on_stop = true, .comm = &comm};
    pgn_run_hooks hooks = {.on_log = on_log, .on_metric = on_metric, .on_progress = on_progress,
                           .should_stop = should_stop, .may_commit = ask_commit ? may_commit : NULL};
    json_t *result = NULL;
    catch_stop_signals();
    rc = pgn_job_run(&spec, dev, &opts, &hooks, &result, &err);
    pgn_device_close(dev);
    pgn_spec_free(&spec);
    if (rc) return fail(&err);
    if (comm.rank == 0) emit(json_pack("{s:s, s:o}", "event", "result", "result", result));
    else json_decref(result);
    return 0;
}

int main(int argc, char **argv) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "paragon-rank: MPI_Init failed\n");
        return 1;
    }
    /* the ranks are up: paragond tells a run that never started (mpirun could not launch it)
     * from one interrupted */
    if (rank_of_world() == 0) emit(json_pack("{s:s}", "event", "started"));
    int status = run(argc, argv);
    if (status == 1) MPI_Abort(MPI_COMM_WORLD, 1); /* the other ranks wait in a collective */
    MPI_Finalize();
    return status;
}
