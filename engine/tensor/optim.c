/* optim.c: optimizer state and update steps (kernels in kernels/tensor.cl, bodies in
 * kernels/pgn_ops.h), gradient clipping by global norm and the learning-rate schedule. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/optim.h"

static bool uses_adam(const pgn_optimizer *o) { return o->spec.type != PGN_OPT_SGD; }

/* The global norm's chunks (optim.h: PGN_NORM_CHUNK) as (offset in the store, length) pairs in
 * o->ranges, parameter by parameter. */
static int norm_ranges(pgn_optimizer *o, const pgn_graph *g, pgn_error *err) {
    int n = 0;
    for (int p = 0; p < g->n_params; p++) {
        int count = (int)pgn_tensor_count(&g->nodes[g->params[p]].value);
        n += (count + PGN_NORM_CHUNK - 1) / PGN_NORM_CHUNK;
    }
    int *r = malloc((size_t)(n ? n : 1) * 2 * sizeof *r);
    if (!r) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory for the optimizer's state");
        return -1;
    }
    int c = 0;
    for (int p = 0; p < g->n_params; p++) {
        int count = (int)pgn_tensor_count(&g->nodes[g->params[p]].value);
        for (int at = 0; at < count; at += PGN_NORM_CHUNK, c++) {
            r[2 * c] = (int)g->param_offset[p] + at;
            r[2 * c + 1] = count - at < PGN_NORM_CHUNK ? count - at : PGN_NORM_CHUNK;
        }
    }
    o->n_partials = n;
    int rc = n ? pgn_tensor_init(&o->ranges, g->dev, n, 2, err) || pgn_tensor_write(&o->ranges, r, (size_t)n * 2, err)
               : 0;
    free(r);
    return rc ? -1 : 0;
}

int pgn_optim_init(pgn_optimizer *o, pgn_graph *g, const pgn_optimizer_spec *spec,
                   int64_t total_steps, pgn_error *err) {
    memset(o, 0, sizeof *o);
    o->spec = *spec;
    o->n_params = g->n_params;
    o->total_steps = total_steps;
    int total = (int)g->store_elems;
    o->m = calloc((size_t)g->n_params + 1, sizeof *o->m);
    o->v = calloc((size_t)g->n_params + 1, sizeof *o->v);
    if (!o->m || !o->v) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory for the optimizer's state");
        goto fail;
    }
    bool needs_m = uses_adam(o) || spec->momentum > 0.0f;
    if ((needs_m && pgn_tensor_init(&o->m_store, g->dev, 1, total, err)) ||
        (uses_adam(o) && pgn_tensor_init(&o->v_store, g->dev, 1, total, err)))
        goto fail;
    for (int p = 0; p < g->n_params; p++) {
        const pgn_tensor *w = &g->nodes[g->params[p]].value;
        size_t off = g->param_offset[p];
        if (needs_m && pgn_tensor_view(&o->m[p], &o->m_store, off, w->rows, w->cols, err)) goto fail;
        if (uses_adam(o) && pgn_tensor_view(&o->v[p], &o->v_store, off, w->rows, w->cols, err))
            goto fail;
    }
    /* weight decay on some parameters only: each group is a run of the stores */
    o->split = spec->weight_decay != 0.0f && g->decay_elems > 0 && g->decay_elems < g->store_elems;
    for (int k = 0; o->split && k < 2; k++) {
        size_t off = k ? g->decay_elems : 0, n = k ? g->store_elems - g->decay_elems : g->decay_elems;
        if (pgn_tensor_view(&o->group_w[k], &g->param_store, off, 1, (int)n, err) ||
            pgn_tensor_view(&o->group_g[k], &g->grad_store, off, 1, (int)n, err) ||
            (needs_m && pgn_tensor_view(&o->group_m[k], &o->m_store, off, 1, (int)n, err)) ||
            (uses_adam(o) && pgn_tensor_view(&o->group_v[k], &o->v_store, off, 1, (int)n, err)))
            goto fail;
    }
    if (norm_ranges(o, g, err)) goto fail;
    const float no_clip[2] = {0.0f, 1.0f};
    if (pgn_tensor_init(&o->partials, g->dev, o->n_partials, 1, err) ||
        pgn_tensor_init(&o->clip, g->dev, 1, 2, err) || pgn_tensor_write(&o->clip, no_clip, 2, err))
        goto fail;
    return 0;
fail:
    pgn_optim_release(o);
    return -1;
}

void pgn_optim_release(pgn_optimizer *o) {
    for (int k = 0; k < 2; k++) {
        pgn_tensor_release(&o->group_w[k]);
        pgn_tensor_release(&o->group_g[k]);
        pgn_tensor_release(&o->group_m[k]);
        pgn_tensor_release(&o->group_v[k]);
    }
    for (int p = 0; o->m && o->v && p < o->n_params; p++) {
        pgn_tensor_release(&o->m[p]);
        pgn_tensor_release(&o->v[p]);
    }
    free(o->m);
    free(o->v);
    o->m = o->v = NULL;
    pgn_tensor_release(&o->m_store); /* after the views into them */
    pgn_tensor_release(&o->v_store);
    pgn_tensor_release(&o->ranges);
    pgn_tensor_release(&o->partials);
    pgn_tensor_release(&o->clip);
}

float pgn_optim_lr(const pgn_optimizer *o, int64_t t) {
    const pgn_optimizer_spec *s = &o->spec;
    double lr = s->lr;
    if (s->warmup_steps > 0 && t < s->warmup_steps) return (float)(lr * (double)(t + 1) / s->warmup_steps);
    if (s->schedule == PGN_SCHEDULE_COSINE) {
        double span = (double)(o->total_steps - s->warmup_steps);
        double progress = span > 1 ? (double)(t - s->warmup_steps) / (span - 1) : 1.0;
        if (progress > 1.0) progress = 1.0;
        lr = s->min_lr + (lr - s->min_lr) * 0.5 * (1.0 + cos(M_PI * progress));
    }
    return (float)lr;
}

/* clip[1] = min(1, clip_norm / global norm) from the parameters' gradients, all on the device. */
static int clip_gradients(pgn_optimizer *o, pgn_graph *g, pgn_error *err) {
    return pgn_op_sumsq_ranges(&g->grad_store, o->n_partials, &o->ranges, &o->partials, err) ||
           pgn_op_clip_scale(o->n_partials, &o->partials, o->spec.clip_norm, &o->clip, err);
}

int pgn_optim_step(pgn_optimizer *o, pgn_graph *g, pgn_error *err) {
    const pgn_optimizer_spec *s = &o->spec;
    if (s->clip_norm > 0.0f && clip_gradients(o, g, err)) return -1;
    float lr = pgn_optim_lr(o, o->t);
    o->t++;
    pgn_adam_args a = {.lr = lr, .b1 = s->beta1, .b2 = s->beta2, .eps = s->eps,
                       .bc1 = (float)(1.0 - pow((double)s->beta1, (double)o->t)),
                       .bc2 = (float)(1.0 - pow((double)s->beta2, (double)o->t)),
                       .wd = s->weight_decay, .decoupled = s->type == PGN_OPT_ADAMW};
    /* One launch over the whole store (padding is zero and stays zero under every update), or
     * one per decay group. */
    for (int k = 0; k < (o->split ? 2 : 1); k++) {
        pgn_tensor *w = o->split ? &o->group_w[k] : &g->param_store;
        pgn_tensor *grad = o->split ? &o->group_g[k] : &g->grad_store;
        pgn_tensor *m = o->split ? &o->group_m[k] : &o->m_store;
        pgn_tensor *v = o->split ? &o->group_v[k] : &o->v_store;
        float wd = k == 0 && g->decay_elems > 0 ? s->weight_decay : 0.0f;
        int rc;
        if (uses_adam(o)) {
            a.wd = wd;
            rc = pgn_op_adam_update(w, grad, m, v, &o->clip, &a, err);
        } else {
            /* without momentum the kernel never touches v: the gradient stands in for it */
            rc = pgn_op_sgd_update(w, grad, s->momentum > 0.0f ? m : grad, &o->clip, lr, s->momentum,
                                   s->nesterov, wd, err);
        }
        if (rc) return -1;
    }
    return 0;
}

int pgn_optim_state(pgn_optimizer *o, int p, pgn_tensor **out, const char **names) {
    int count = 0;
    if (o->m[p].rows) {
        out[count] = &o->m[p];
        names[count++] = uses_adam(o) ? "exp_avg" : "momentum_buffer";
    }
    if (o->v[p].rows) {
        out[count] = &o->v[p];
        names[count++] = "exp_avg_sq";
    }
    return count;
}
