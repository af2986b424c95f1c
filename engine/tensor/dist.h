/* dist.h: what a distributed train job adds to the training loop (dist.c): the rows each rank
 * trains on, ddp's gradient all-reduce, DiLoCo's outer step, a stop all ranks agree on, and
 * checkpoints committed by every rank at once. Every sum over ranks runs in rank order on the
 * host, so a rerun gives the same bits whatever the timing (docs/distributed.md). */
#ifndef PGN_DIST_H
#define PGN_DIST_H

#include "tensor/graph.h"

/* Under the checkpoint directory: each rank's checkpoints and the step they were committed at. */
#define PGN_DIST_SUBDIR "dist"
#define PGN_DIST_COMMIT_FILE "committed"

typedef struct pgn_dist {
    const pgn_dist_spec *spec;
    pgn_comm *comm;
    size_t elems;    /* the graph's parameter store, padding included */
    float *send;     /* elems + 1: this rank's part of a collective, then its stop flag */
    float *gathered; /* size * (elems + 1) */
    /* diloco, on the host: the global parameters after the last outer step, and the outer
     * momentum (checkpointed under PGN_DIST_MOMENTUM) */
    pgn_tensor theta, momentum;
    float *local; /* diloco: this rank's parameters while theta stands in for them */
    int64_t outer_steps; /* collectives that moved parameters or gradients */
    int64_t committed;   /* the step of the last committed checkpoint, or -1 */
    double started;      /* pgn_now_s() at init: the shares of time are of the time since */
    pgn_st_entry momentum_entry; /* diloco: the outer momentum's checkpoint entry */
} pgn_dist;

#define PGN_DIST_MOMENTUM "distributed.outer_momentum"

/* That comm's processes can run a job with this spec: it is distributed exactly when a
 * communicator is given, with as many ranks as the spec names. */
int pgn_dist_check(const pgn_dist_spec *spec, const pgn_comm *comm, pgn_error *err);

/* Allocates the buffers for graph g (compiled, parameters initialised: theta starts as them). */
int pgn_dist_init(pgn_dist *d, const pgn_dist_spec *spec, pgn_comm *comm, pgn_graph *g, pgn_error *err);
void pgn_dist_free(pgn_dist *d);

/* diloco: the samples of a training set of n that rank trains on, ascending: the rank-th of
 * size equal slices of a permutation drawn from seed (the n mod size left over are dropped).
 * With one rank, every sample. Returns a malloc'd array of *count ids, NULL when out of memory. */
int *pgn_dist_shard(uint64_t seed, int n, int rank, int size, int *count);

/* ddp: the rows [*lo, *hi) of global batch rows (batch sizes B per rank, size ranks) that rank
 * takes: B each in a whole batch, an even split of a short last one. */
void pgn_dist_rows(int rows, int rank, int size, int *lo, int *hi);

/* ddp: replaces g's gradients with their sum over the ranks (each rank's loss already divided
 * by the global batch), in rank order. *stop_all: some rank asked to stop (stop). */
int pgn_dist_reduce_grads(pgn_dist *d, pgn_graph *g, bool stop, bool *stop_all, pgn_error *err);

/* diloco: the outer step. Delta = mean over ranks of (theta - the rank's parameters), summed in
 * rank order then divided by the ranks; u = momentum u + Delta; theta -= outer_lr (Nesterov:
 * Delta + momentum u, else u); every rank's parameters become theta. */
int pgn_dist_outer_step(pgn_dist *d, pgn_graph *g, bool stop, bool *stop_all, pgn_error *err);

#define PGN_DIST_GATHER_MAX 8
/* Every rank's n doubles v (n <= PGN_DIST_GATHER_MAX) into all (size * n), rank order. */
int pgn_dist_gather(pgn_dist *d, const double *v, int n, double *all, pgn_error *err);
/* diloco: puts the global parameters (theta) in g in place of this rank's, kept aside; and back. */
int pgn_dist_use_global(pgn_dist *d, pgn_graph *g, pgn_error *err);
int pgn_dist_use_local(pgn_dist *d, pgn_graph *g, pgn_error *err);

/* n doubles summed over the ranks in rank order, in place, on every rank. */
int pgn_dist_sum(pgn_dist *d, double *v, int n, pgn_error *err);
/* Every rank's device, bytes sent, seconds moving data and waiting for the other ranks, the
 * seconds since its init, and the shares of those: [{"rank","device","bytes_sent",
 * "comm_seconds","wait_seconds","seconds","comm_share","wait_share"}...]. All ranks call it;
 * NULL on failure. New reference. */
json_t *pgn_dist_ranks_json(pgn_dist *d, const char *device, pgn_error *err);

/* After a checkpoint is resumed: theta becomes the parameters read. */
int pgn_dist_resumed(pgn_dist *d, pgn_graph *g, pgn_error *err);

/* This rank's checkpoint at state's position (epoch, step of it), then the commit: state's file
 * and extra entries are set here. A resume from the committed set, if any: *epoch and *step as
 * pgn_checkpoint_load sets them (0 when there is none). */
int pgn_dist_checkpoint(pgn_dist *d, pgn_train_state state, int epoch, int step, pgn_error *err);
int pgn_dist_resume(pgn_dist *d, pgn_train_state state, int *epoch, int *step, pgn_error *err);

/* Every rank's figures at step, gathered, as rank 0's metrics (the ranks' events all come
 * from rank 0, so that their lines never interleave): "rankR.loss" (rank R's own loss),
 * "rankR.syncs", "rankR.bytes_sent", "rankR.comm_seconds", "rankR.wait_seconds". All ranks
 * call it. */
int pgn_dist_emit(pgn_dist *d, const pgn_run_hooks *hooks, int64_t step, double loss, pgn_error *err);
/* Rank 0 logs every rank's device and training samples. All ranks call it. */
int pgn_dist_introduce(pgn_dist *d, const pgn_run_hooks *hooks, const char *device, int samples, pgn_error *err);

/* The result's "distributed" object: ranks, algorithm, syncs, this rank's figures as its row of
 * "per_rank" gives them (pgn_dist_ranks_json), and "per_rank". All ranks call it. */
json_t *pgn_dist_result(pgn_dist *d, const char *device, pgn_error *err);

/* Checkpoints. Each rank writes <dir>/dist/rank-R.step-S.safetensors; then, once every rank
 * has, rank 0 writes S to <dir>/dist/committed (atomically), and each rank removes its previous
 * file. A resume reads committed and each rank its file at that step, so a rank that died
 * mid-write leaves the last whole set in force. */
void pgn_dist_checkpoint_name(int rank, int64_t step, char *out, size_t size);
/* Before the ranks write their files for step: makes <dir>/dist. */
int pgn_dist_prepare(const char *dir, pgn_error *err);
/* After this rank wrote its file for step: waits for all, commits, removes the file of prev
 * (< 0: none). Rank 0 first asks hooks->may_commit (when given): on no, nothing is committed and
 * the call fails (PGN_E_CANCELLED) on rank 0 alone, whose caller aborts the ranks. */
int pgn_dist_commit(pgn_dist *d, const char *dir, int64_t step, int64_t prev, const pgn_run_hooks *hooks,
                    pgn_error *err);
/* The committed step, or -1 when none; an unreadable commit file is an error. */
int pgn_dist_committed(const char *dir, int64_t *step, pgn_error *err);

#endif
