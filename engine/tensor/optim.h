/* optim.h: optimizers as on-device update kernels: SGD (momentum, Nesterov), Adam, AdamW,
 * gradient clipping by global norm, and the learning-rate schedule (warm-up, cosine decay). */
#ifndef PGN_OPTIM_H
#define PGN_OPTIM_H

#include "tensor/graph.h"

/* The global norm is summed in chunks of at most this many elements, each within one parameter
 * and starting at its first element or a multiple of this past it (then the chunk sums in
 * order), so its bits depend neither on the device nor on the padding between parameters in the
 * store, which follows the device's buffer alignment (16 floats on the host, 32 on pocl here,
 * another on NVIDIA). */
#define PGN_NORM_CHUNK 4096

typedef struct pgn_optimizer {
    pgn_optimizer_spec spec;
    int n_params;
    /* State laid out like the graph's parameter store, updated in one launch; m[p], v[p] are
     * views of parameter p's state (for checkpoints). */
    pgn_tensor m_store, v_store;
    pgn_tensor *m; /* n_params views, owned: adam's first moment; sgd's momentum */
    pgn_tensor *v; /* n_params views, owned: adam's second moment */
    /* Views of the stores over the parameters that decay, [0, decay_elems), and those that do
     * not: updated by separate launches when weight decay is on and both groups exist. */
    pgn_tensor group_w[2], group_g[2], group_m[2], group_v[2];
    bool split;
    pgn_tensor ranges;                  /* (n_partials, 2) int32: each chunk's offset and length */
    pgn_tensor partials;                /* chunk sums of squares of the gradient store */
    pgn_tensor clip;                    /* [global norm, gradient scale] */
    int n_partials;
    int64_t t;           /* update steps taken: the schedule's and Adam's step count */
    int64_t total_steps; /* for cosine decay */
} pgn_optimizer;

/* Allocates the state for every parameter of g on g's device, zeroed. */
int pgn_optim_init(pgn_optimizer *o, pgn_graph *g, const pgn_optimizer_spec *spec,
                   int64_t total_steps, pgn_error *err);
void pgn_optim_release(pgn_optimizer *o);

/* Learning rate of update step t (0-based): linear warm-up over warmup_steps, then constant
 * or cosine decay to min_lr at total_steps. Computed on the host in double, once per step. */
float pgn_optim_lr(const pgn_optimizer *o, int64_t t);

/* Queues one update of every parameter from its gradient (clipped first when clip_norm > 0). */
int pgn_optim_step(pgn_optimizer *o, pgn_graph *g, pgn_error *err);

/* The state tensors of parameter p, for checkpoints: count is 0, 1 or 2. */
int pgn_optim_state(pgn_optimizer *o, int p, pgn_tensor **out, const char **names);

#endif
