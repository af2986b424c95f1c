/* dist.c: the parts of a distributed train job that involve more than one rank: each rank's data,
 * ddp's gradient sum, DiLoCo's outer step, the stop flag that rides on each collective, and the
 * checkpoint commit. The reductions gather every rank's buffer to every rank (one allgather) and
 * sum it on the host in rank order: MPI_Allreduce may add in any order, and the bits must not
 * depend on it. Each rank receives size times the buffer where a ring all-reduce moves about
 * twice it: the price of determinism, small at the rank counts of one job (docs/distributed.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/dist.h"
#include "tensor/optim.h"
#include "pgn_math.h"

#define PGN_STREAM_SHARD 0x5348415244ULL /* "SHARD": apart from the init and shuffle streams */

static int oom(pgn_error *err) {
    pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate the distributed run's buffers");
    return -1;
}

int pgn_dist_check(const pgn_dist_spec *spec, const pgn_comm *comm, pgn_error *err) {
    if (spec->ranks > 0 && !comm)
        return pgn_spec_fail(err, "distributed", "a distributed job runs as %d processes under mpirun "
                             "(paragon-rank; paragond starts them), not in one", spec->ranks);
    if (comm && comm->size != spec->ranks)
        return pgn_spec_fail(err, "distributed.ranks", "is %d, but %d processes run the job", spec->ranks,
                             comm->size);
    return 0;
}

int pgn_dist_init(pgn_dist *d, const pgn_dist_spec *spec, pgn_comm *comm, pgn_graph *g, pgn_error *err) {
    memset(d, 0, sizeof *d);
    d->spec = spec;
    d->comm = comm;
    d->committed = -1;
    d->started = pgn_now_s();
    d->elems = g->store_elems;
    if (d->elems + 1 > (size_t)INT32_MAX) {
        pgn_error_set(err, PGN_E_LIMIT_EXCEEDED, "model", "a distributed model holds at most %d parameters",
                      INT32_MAX - 1);
        return -1;
    }
    d->send = malloc((d->elems + 1) * sizeof *d->send);
    d->gathered = malloc((size_t)comm->size * (d->elems + 1) * sizeof *d->gathered);
    if (!d->send || !d->gathered) return oom(err);
    /* MPI sets up its connections on the first collectives (tens of ms): here, uncounted */
    if (comm->barrier(comm, err) || comm->allgather(comm, d->send, sizeof *d->send, d->gathered, err)) return -1;
    d->started = pgn_now_s();
    if (spec->algorithm != PGN_DIST_DILOCO) return 0;
    if (!(d->local = malloc(d->elems * sizeof *d->local))) return oom(err);
    return pgn_tensor_init(&d->theta, NULL, 1, (int)d->elems, err) ||
                   pgn_tensor_init(&d->momentum, NULL, 1, (int)d->elems, err) ||
                   pgn_tensor_read(&g->param_store, d->theta.host, d->elems, err)
               ? -1
               : 0;
}

void pgn_dist_free(pgn_dist *d) {
    free(d->send);
    free(d->gathered);
    free(d->local);
    pgn_tensor_release(&d->theta);
    pgn_tensor_release(&d->momentum);
    d->send = d->gathered = d->local = NULL;
}

int *pgn_dist_shard(uint64_t seed, int n, int rank, int size, int *count) {
    int each = n / size;
    int *perm = malloc((size_t)(n > 0 ? n : 1) * sizeof *perm);
    if (!perm) return NULL;
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0 && size > 1; i--) { /* one rank keeps every sample in order */
        int j = (int)(pgn_rand64(seed, PGN_STREAM_SHARD, (pgn_u64)i) % (pgn_u64)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* the slice, sorted back into ascending ids (a counting pass over a mark per sample) */
    unsigned char *mine = calloc((size_t)(n > 0 ? n : 1), 1);
    if (!mine) {
        free(perm);
        return NULL;
    }
    for (int i = rank * each; i < (rank + 1) * each; i++) mine[perm[i]] = 1;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (mine[i]) perm[k++] = i;
    free(mine);
    *count = k;
    return perm;
}

void pgn_dist_rows(int rows, int rank, int size, int *lo, int *hi) {
    *lo = (int)((int64_t)rows * rank / size);
    *hi = (int)((int64_t)rows * (rank + 1) / size);
}

static int barrier(pgn_dist *d, double *seconds, pgn_error *err) {
    pgn_comm *c = d->comm;
    double t0 = pgn_now_s();
    int rc = c->barrier(c, err);
    *seconds += pgn_now_s() - t0;
    c->collectives++;
    return rc;
}

/* One allgather, counted and timed: first a barrier, whose time is the wait for the slowest rank
 * (wait_seconds), then the transfer among ranks that have all arrived (seconds). */
static int gather(pgn_dist *d, const void *send, size_t bytes, void *recv, pgn_error *err) {
    pgn_comm *c = d->comm;
    if (barrier(d, &c->wait_seconds, err)) return -1;
    double t0 = pgn_now_s();
    int rc = c->allgather(c, send, bytes, recv, err);
    c->seconds += pgn_now_s() - t0;
    c->collectives++;
    c->bytes_sent += (double)bytes * (c->size - 1);
    return rc;
}

/* Gathers send (elems floats, then the stop flag) from every rank; *stop_all when any flag is set. */
static int gather_with_stop(pgn_dist *d, bool stop, bool *stop_all, pgn_error *err) {
    size_t stride = d->elems + 1;
    d->send[d->elems] = stop ? 1.0f : 0.0f;
    if (gather(d, d->send, stride * sizeof *d->send, d->gathered, err)) return -1;
    *stop_all = false;
    for (int r = 0; r < d->comm->size; r++) *stop_all |= d->gathered[(size_t)r * stride + d->elems] != 0.0f;
    return 0;
}

/* out[i] = sum over ranks of the gathered buffers' element i, in rank order (out may be send). */
static void sum_in_rank_order(const pgn_dist *d, float *out) {
    size_t stride = d->elems + 1;
    memcpy(out, d->gathered, d->elems * sizeof *out);
    for (int r = 1; r < d->comm->size; r++) {
        const float *x = d->gathered + (size_t)r * stride;
        for (size_t i = 0; i < d->elems; i++) out[i] += x[i];
    }
}

int pgn_dist_reduce_grads(pgn_dist *d, pgn_graph *g, bool stop, bool *stop_all, pgn_error *err) {
    if (pgn_tensor_read(&g->grad_store, d->send, d->elems, err) || gather_with_stop(d, stop, stop_all, err))
        return -1;
    d->outer_steps++;
    if (*stop_all) return 0; /* the step is not taken: the run stops before it */
    sum_in_rank_order(d, d->send);
    return pgn_tensor_write(&g->grad_store, d->send, d->elems, err);
}

int pgn_dist_outer_step(pgn_dist *d, pgn_graph *g, bool stop, bool *stop_all, pgn_error *err) {
    float *theta = d->theta.host, *u = d->momentum.host, *delta = d->send;
    if (pgn_tensor_read(&g->param_store, delta, d->elems, err)) return -1;
    for (size_t i = 0; i < d->elems; i++) delta[i] = theta[i] - delta[i];
    if (gather_with_stop(d, stop, stop_all, err)) return -1;
    sum_in_rank_order(d, delta);
    const float n = (float)d->comm->size, lr = d->spec->outer_lr, mu = d->spec->outer_momentum;
    for (size_t i = 0; i < d->elems; i++) {
        float mean = delta[i] / n;
        u[i] = mu * u[i] + mean;
        float step = d->spec->nesterov ? mean + mu * u[i] : u[i];
        theta[i] = theta[i] - lr * step;
    }
    d->outer_steps++;
    return pgn_tensor_write(&g->param_store, theta, d->elems, err);
}

int pgn_dist_gather(pgn_dist *d, const double *v, int n, double *all, pgn_error *err) {
    if (n > PGN_DIST_GATHER_MAX) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "pgn_dist_gather: %d values, at most %d", n, PGN_DIST_GATHER_MAX);
        return -1;
    }
    return gather(d, v, (size_t)n * sizeof *v, all, err);
}

int pgn_dist_sum(pgn_dist *d, double *v, int n, pgn_error *err) {
    double all[PGN_DIST_GATHER_MAX * PGN_DIST_MAX_RANKS];
    if (pgn_dist_gather(d, v, n, all, err)) return -1;
    for (int i = 0; i < n; i++) {
        v[i] = all[i];
        for (int r = 1; r < d->comm->size; r++) v[i] += all[r * n + i];
    }
    return 0;
}

json_t *pgn_dist_ranks_json(pgn_dist *d, const char *device, pgn_error *err) {
    char ids[PGN_DIST_MAX_RANKS][64], mine[64] = {0};
    snprintf(mine, sizeof mine, "%s", device);
    pgn_comm *c = d->comm;
    /* the figures as they stand before these two calls, the same on every rank's row */
    double v[4] = {c->bytes_sent, c->seconds, c->wait_seconds, pgn_now_s() - d->started};
    double all[4 * PGN_DIST_MAX_RANKS];
    if (gather(d, mine, sizeof mine, ids, err) || pgn_dist_gather(d, v, 4, all, err)) return NULL;
    json_t *ranks = json_array();
    for (int r = 0; r < c->size; r++) {
        const double *x = all + 4 * r, per = x[3] > 0 ? 1.0 / x[3] : 0.0;
        ids[r][63] = '\0';
        json_array_append_new(ranks, json_pack("{s:i, s:s, s:f, s:f, s:f, s:f, s:f, s:f}", "rank", r, "device",
                                               ids[r], "bytes_sent", x[0], "comm_seconds", x[1], "wait_seconds",
                                               x[2], "seconds", x[3], "comm_share", x[1] * per, "wait_share",
                                               x[2] * per));
    }
    return ranks;
}

int pgn_dist_use_global(pgn_dist *d, pgn_graph *g, pgn_error *err) {
    return pgn_tensor_read(&g->param_store, d->local, d->elems, err) ||
                   pgn_tensor_write(&g->param_store, d->theta.host, d->elems, err)
               ? -1
               : 0;
}

int pgn_dist_use_local(pgn_dist *d, pgn_graph *g, pgn_error *err) {
    return pgn_tensor_write(&g->param_store, d->local, d->elems, err);
}

int pgn_dist_resumed(pgn_dist *d, pgn_graph *g, pgn_error *err) {
    if (d->spec->algorithm != PGN_DIST_DILOCO) return 0;
    return pgn_tensor_read(&g->param_store, d->theta.host, d->elems, err);
}

int pgn_dist_emit(pgn_dist *d, const pgn_run_hooks *h, int64_t step, double loss, pgn_error *err) {
    static const char *const names[] = {"loss", "syncs", "bytes_sent", "comm_seconds", "wait_seconds"};
    enum { N = sizeof names / sizeof *names };
    const pgn_comm *c = d->comm;
    double mine[N] = {loss, (double)d->outer_steps, c->bytes_sent, c->seconds, c->wait_seconds};
    double all[N * PGN_DIST_MAX_RANKS];
    if (pgn_dist_gather(d, mine, N, all, err)) return -1;
    for (int r = 0; r < c->size && c->rank == 0; r++)
        for (int i = 0; i < N; i++) {
            char name[48];
            snprintf(name, sizeof name, "rank%d.%s", r, names[i]);
            pgn_hooks_metric(h, name, step, all[r * N + i]);
        }
    return 0;
}

int pgn_dist_introduce(pgn_dist *d, const pgn_run_hooks *h, const char *device, int samples, pgn_error *err) {
    char ids[PGN_DIST_MAX_RANKS][64], mine[64] = {0};
    snprintf(mine, sizeof mine, "%s", device);
    double n = samples, all[PGN_DIST_MAX_RANKS];
    if (gather(d, mine, sizeof mine, ids, err) || pgn_dist_gather(d, &n, 1, all, err)) return -1;
    for (int r = 0; r < d->comm->size && d->comm->rank == 0; r++) {
        ids[r][63] = '\0';
        pgn_hooks_log(h, "rank %d of %d (%s) on %s: %.0f training samples", r, d->comm->size,
                      d->spec->algorithm == PGN_DIST_DDP ? "ddp: a share of each global batch" : "diloco: its shard",
                      ids[r], all[r]);
    }
    return 0;
}

json_t *pgn_dist_result(pgn_dist *d, const char *device, pgn_error *err) {
    json_t *ranks = pgn_dist_ranks_json(d, device, err);
    if (!ranks) return NULL;
    /* this rank's own row's figures, so that both say the same */
    json_t *j = json_deep_copy(json_array_get(ranks, (size_t)d->comm->rank));
    json_object_del(j, "rank");
    json_object_del(j, "device");
    json_object_set_new(j, "ranks", json_integer(d->comm->size));
    json_object_set_new(j, "algorithm", json_string(d->spec->algorithm == PGN_DIST_DDP ? "ddp" : "diloco"));
    json_object_set_new(j, "syncs", json_integer(d->outer_steps));
    json_object_set_new(j, "per_rank", ranks);
    return j;
}

/* ---- checkpoints ----------------------------------------------------------------------------- */

/* state as this rank's file at step, with the outer momentum beside the rest under diloco. */
static void rank_state(pgn_dist *d, pgn_train_state *state, int64_t step, char *name, size_t size) {
    pgn_dist_checkpoint_name(d->comm->rank, step, name, size);
    state->file = name;
    if (d->spec->algorithm == PGN_DIST_DILOCO) {
        d->momentum_entry = (pgn_st_entry){PGN_DIST_MOMENTUM, &d->momentum};
        state->extra = &d->momentum_entry;
        state->n_extra = 1;
    }
}

int pgn_dist_checkpoint(pgn_dist *d, pgn_train_state state, int epoch, int step, pgn_error *err) {
    if (!state.dir) return 0;
    char name[96], sha[65];
    int64_t t = state.optim->t;
    rank_state(d, &state, t, name, sizeof name);
    /* a rank's own file is named by its step, which nothing reads until the commit names it: the
     * commit alone asks whether this run still holds its job */
    const pgn_run_hooks *hooks = state.hooks;
    state.hooks = NULL;
    if (pgn_dist_prepare(state.dir, err) || pgn_graph_weights_sha256(state.graph, sha, err) ||
        pgn_checkpoint_save(&state, epoch, step, sha, err) || pgn_dist_commit(d, state.dir, t, d->committed, hooks, err))
        return -1;
    d->committed = t;
    return 0;
}

int pgn_dist_resume(pgn_dist *d, pgn_train_state state, int *epoch, int *step, pgn_error *err) {
    *epoch = *step = 0;
    int64_t at;
    if (!state.dir) return 0;
    if (pgn_dist_committed(state.dir, &at, err)) return -1;
    if (at < 0) return 0;
    char name[96], path[PGN_PATH_MAX * 2];
    rank_state(d, &state, at, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", state.dir, name);
    struct stat st;
    if (stat(path, &st)) {
        pgn_error_set(err, PGN_E_CHECKPOINT, "", "step %lld was committed but %s is missing (%s); remove "
                      "%s/" PGN_DIST_SUBDIR " to start over", (long long)at, path, strerror(errno), state.dir);
        return -1;
    }
    if (pgn_checkpoint_load(&state, epoch, step, err) || pgn_dist_resumed(d, state.graph, err)) return -1;
    d->committed = at;
    return 0;
}


void pgn_dist_checkpoint_name(int rank, int64_t step, char *out, size_t size) {
    snprintf(out, size, PGN_DIST_SUBDIR "/rank-%d.step-%lld.safetensors", rank, (long long)step);
}

int pgn_dist_prepare(const char *dir, pgn_error *err) {
    char path[PGN_PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/" PGN_DIST_SUBDIR, dir);
    if (mkdir(path, 0755) == 0 || errno == EEXIST) return 0;
    pgn_error_set(err, PGN_E_IO, "", "cannot create %s: %s", path, strerror(errno));
    return -1;
}

/* Writes step to path atomically: a temporary file, synced, renamed over it. */
static int write_commit(const char *path, int64_t step, pgn_error *err) {
    char tmp[PGN_PATH_MAX * 2 + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    bool ok = f && fprintf(f, "%lld\n", (long long)step) > 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f && fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) == 0) return 0;
    pgn_error_set(err, PGN_E_IO, "", "cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
    return -1;
}

int pgn_dist_commit(pgn_dist *d, const char *dir, int64_t step, int64_t prev, const pgn_run_hooks *hooks,
                    pgn_error *err) {
    char path[PGN_PATH_MAX * 2], name[96];
    if (barrier(d, &d->comm->seconds, err)) return -1; /* every rank's file for step is whole */
    snprintf(path, sizeof path, "%s/" PGN_DIST_SUBDIR "/" PGN_DIST_COMMIT_FILE, dir);
    if (d->comm->rank == 0 && hooks && hooks->may_commit && !hooks->may_commit(hooks->ctx)) {
        pgn_error_set(err, PGN_E_CANCELLED, "", "step %lld not committed: this run no longer holds its job",
                      (long long)step);
        return -1;
    }
    if (d->comm->rank == 0 && write_commit(path, step, err)) return -1;
    if (barrier(d, &d->comm->seconds, err)) return -1; /* committed: the previous set may go */
    if (prev >= 0 && prev != step) {
        pgn_dist_checkpoint_name(d->comm->rank, prev, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        unlink(path);
    }
    return 0;
}

int pgn_dist_committed(const char *dir, int64_t *step, pgn_error *err) {
    char path[PGN_PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/" PGN_DIST_SUBDIR "/" PGN_DIST_COMMIT_FILE, dir);
    *step = -1;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) return 0;
        pgn_error_set(err, PGN_E_CHECKPOINT, "", "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    long long s = -1;
    char extra;
    int got = fscanf(f, "%lld %c", &s, &extra);
    fclose(f);
    if (got != 1 || s < 0) {
        pgn_error_set(err, PGN_E_CHECKPOINT, "", "%s does not hold one step number; remove %s/" PGN_DIST_SUBDIR
                      " to start over", path, dir);
        return -1;
    }
    *step = s;
    return 0;
}
