/* cost.c: the cost model behind "auto" placement: a device's rates (what benchmark runs measured
 * of it, or estimated from its properties where they measured nothing) and a job's estimated work
 * and time on a device. Pure functions: the scheduler brings the measurements and the queue. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

/* Fallbacks from a device's properties, used only until a benchmark run has measured it: FLOPs a compute
 * unit does per clock on the GEMM (half an AVX-512 core's FMA peak on a CPU; a GPU's CU runs
 * 64-128 lanes), interactions a CPU compute unit reduces per second, and launch costs (a pocl
 * launch is about 35 us with a wait, docs/architecture.md). */
#define CPU_FLOPS_PER_CU_CLOCK 32.0
#define GPU_FLOPS_PER_CU_CLOCK 128.0
#define CPU_MIPS_PER_CU 80.0
#define GPU_MIPS_PER_CU 20.0
#define CPU_LAUNCH_US 35.0
#define GPU_LAUNCH_US 10.0
#define HOST_GFLOPS 20.0
#define HOST_MIPS 100.0

/* What an inet job's work is taken to be before it runs: its count is unknown until it ends. */
#define INET_NOMINAL_INTERACTIONS 1e8
/* Samples in a data source whose size is known only once read (idx). */
#define UNKNOWN_SAMPLES 60000.0
/* Characters of Debian's fortunes (2,576,627 in fortunes 1:1.99.1-7.3). */
#define FORTUNES_CHARS 2.6e6

void pgn_device_rates_estimate(const pgn_device_info *info, pgn_device_rates *out) {
    double cus = info->compute_units ? info->compute_units : 1;
    double ghz = info->max_clock_mhz ? info->max_clock_mhz / 1000.0 : 1.0;
    pgn_device_profile profile;
    pgn_device_profile_default(info, &profile);
    bool gpu = profile.dev_class == PGN_CLASS_GPU;
    *out = (pgn_device_rates){0};
    if (profile.dev_class == PGN_CLASS_HOST) {
        out->gflops = HOST_GFLOPS;
        out->mips = HOST_MIPS;
        out->launch_us = 0;
    } else {
        out->gflops = cus * ghz * (gpu ? GPU_FLOPS_PER_CU_CLOCK : CPU_FLOPS_PER_CU_CLOCK);
        out->mips = cus * (gpu ? GPU_MIPS_PER_CU : CPU_MIPS_PER_CU);
        out->launch_us = gpu ? GPU_LAUNCH_US : CPU_LAUNCH_US;
    }
}

void pgn_device_rates_measured(const pgn_device_info *info, const pgn_measured_rates *m, pgn_device_rates *out) {
    pgn_device_rates_estimate(info, out);
    if (m->gflops > 0) {
        out->gflops = m->gflops;
        out->measured = true;
    }
    if (m->mips > 0) {
        out->mips = m->mips;
        out->measured = true;
    }
    if (m->launch_us > 0) out->launch_us = m->launch_us;
    out->train = m->train;
}

static const char *const work_units[] = {[PGN_WORK_NONE] = "none", [PGN_WORK_FLOP] = "flop",
                                         [PGN_WORK_INTERACTIONS] = "interactions"};

const char *pgn_work_unit_name(pgn_work_unit unit) {
    return (size_t)unit < sizeof work_units / sizeof *work_units ? work_units[unit] : "none";
}

int pgn_work_unit_parse(const char *name, pgn_work_unit *out) {
    for (size_t i = 0; name && i < sizeof work_units / sizeof *work_units; i++)
        if (!strcmp(work_units[i], name)) {
            *out = (pgn_work_unit)i;
            return 0;
        }
    return -1;
}

/* Samples a data source holds, and of them the first n a spec keeps (0: all). */
static double kept(double held, int n) { return n > 0 && n < held ? n : held; }

static double samples_per_epoch(const pgn_data_spec *d) {
    switch (d->source) {
    case PGN_DATA_XOR: return 4;
    case PGN_DATA_SPIRAL: return (double)d->samples * d->classes;
    case PGN_DATA_FASHION_MNIST: return kept(PGN_FASHION_TRAIN, d->train_samples);
    case PGN_DATA_IDX: return kept(UNKNOWN_SAMPLES, d->train_samples);
    case PGN_DATA_TEXT:
    case PGN_DATA_FORTUNES: break; /* text has windows, not samples: a gpt counts steps */
    }
    return UNKNOWN_SAMPLES;
}

/* Samples of the evaluation set, evaluated after each epoch (and uploaded beside the training
 * set). */
static double test_samples(const pgn_data_spec *d) {
    switch (d->source) {
    case PGN_DATA_XOR: return 4;
    case PGN_DATA_SPIRAL: return (double)d->samples * d->classes; /* same size, other noise */
    case PGN_DATA_FASHION_MNIST: return kept(PGN_FASHION_TEST, d->test_samples);
    case PGN_DATA_IDX: return kept(UNKNOWN_SAMPLES / 6, d->test_samples); /* Fashion's proportion */
    case PGN_DATA_TEXT:
    case PGN_DATA_FORTUNES: break;
    }
    return 0;
}

/* Bytes of samples a data source reads from files (both sets, whole: data.c keeps the first
 * train_samples only after reading all), features bytes each; 0 for a source made in memory. */
static double file_bytes(const pgn_data_spec *d, int features) {
    switch (d->source) {
    case PGN_DATA_FASHION_MNIST: return (PGN_FASHION_TRAIN + PGN_FASHION_TEST) * features;
    case PGN_DATA_IDX: return UNKNOWN_SAMPLES * 7 / 6 * features;
    default: return 0;
    }
}


/* The FLOP rate and launch cost a train job's estimate counts with: the cost suite's for its
 * kind of model where it measured them, else the GEMM rate and the queued launch cost. */
static double train_gflops(const pgn_train_spec *t, const pgn_device_rates *r) {
    double m = t->model == PGN_MODEL_GPT ? r->train.gpt_gflops : r->train.mlp_gflops;
    return m > 0 ? m : r->gflops;
}

static double train_launch_us(const pgn_device_rates *r) {
    return r->train.step_launch_us > 0 ? r->train.step_launch_us : r->launch_us;
}

void pgn_device_rates_for(const pgn_job_spec *spec, pgn_device_rates *r) {
    if (spec->kind != PGN_JOB_TRAIN) return;
    r->gflops = train_gflops(&spec->train, r);
    r->launch_us = train_launch_us(r);
}

/* An MLP: its setup, its data's loading, and each epoch's steps and evaluation: FLOPs at the
 * MLP rate and kernels at a step's launch cost, as the cost suite measured them on the device
 * (the GEMM rate and the queued launch cost where it did not). */
static void estimate_mlp(const pgn_train_spec *t, const pgn_device_rates *r, pgn_job_estimate *out) {
    const pgn_train_rates *m = &r->train;
    int layers = t->n_layers - 1;
    double train_n = samples_per_epoch(&t->data), test_n = test_samples(&t->data);
    double steps = ceil(train_n / t->batch_size), evals = ceil(test_n / t->batch_size);
    double per_sample = pgn_train_flops_per_sample(t);
    out->work = per_sample * (train_n + PGN_FORWARD_SHARE * test_n) * t->epochs;
    out->unit = PGN_WORK_FLOP;
    out->launches = (steps * PGN_MLP_STEP_LAUNCHES(layers) + evals * PGN_MLP_EVAL_LAUNCHES(layers)) * t->epochs;
    double load = m->load_mbps > 0 ? file_bytes(&t->data, t->layers[0]) / (m->load_mbps * 1e6) : 0;
    out->seconds = m->mlp_setup_s + load + out->work / (train_gflops(t, r) * 1e9) +
                   out->launches * train_launch_us(r) * 1e-6;
}

/* A gpt: its setup, its steps, and its evaluations (eval_windows windows every eval_every steps,
 * the last at the end), at the gpt rate the cost suite measured on the device. */
static void estimate_gpt(const pgn_train_spec *t, const pgn_device_rates *r, pgn_job_estimate *out) {
    const pgn_train_rates *m = &r->train;
    double evals = ceil((double)t->steps / (t->eval_every > 0 ? t->eval_every : t->steps));
    double eval_steps = evals * ceil((double)t->eval_windows / t->batch_size);
    double step_flops = pgn_train_flops_per_sample(t) * t->batch_size;
    out->work = step_flops * (t->steps + PGN_FORWARD_SHARE * eval_steps);
    out->unit = PGN_WORK_FLOP;
    bool clips = t->optimizer.clip_norm > 0;
    out->launches = PGN_GPT_STEP_LAUNCHES(t->gpt.n_layer, clips) * (t->steps + PGN_FORWARD_SHARE * eval_steps);
    out->seconds = m->gpt_setup_s + out->work / (train_gflops(t, r) * 1e9) + out->launches * train_launch_us(r) * 1e-6;
}

void pgn_job_estimate_on(const pgn_job_spec *spec, const pgn_device_rates *r, pgn_job_estimate *out) {
    *out = (pgn_job_estimate){0};
    switch (spec->kind) {
    case PGN_JOB_TRAIN:
        if (spec->train.model == PGN_MODEL_GPT) estimate_gpt(&spec->train, r, out);
        else estimate_mlp(&spec->train, r, out);
        break;
    case PGN_JOB_INET:
        out->work = INET_NOMINAL_INTERACTIONS;
        out->unit = PGN_WORK_INTERACTIONS;
        out->launches = 1;
        out->seconds = out->work / (r->mips * 1e6) + r->launch_us * 1e-6;
        break;
    case PGN_JOB_BENCH:
        /* a benchmark measures the device it names; its time does not steer placement */
        out->unit = PGN_WORK_NONE;
        break;
    case PGN_JOB_GENERATE:
        /* a few seconds at most; it runs where its model trained unless the request says */
        out->unit = PGN_WORK_NONE;
        break;
    case PGN_JOB_SLEEP: /* its length, on any device */
        out->unit = PGN_WORK_NONE;
        out->seconds = spec->sleep.seconds;
        break;
    }
}

/* ---- device memory ---------------------------------------------------------------------- */

/* Floats a gpt holds per row (token) of a batch, per block: values of LayerNorm 1 (C + 2 of
 * statistics), the QKV product and its bias (6C), attention (the probabilities, H T, and the
 * heads' output C), the projection and its bias (2C), the residual sum (C), LayerNorm 2 (C + 2),
 * the MLP's first product and GELU (8C), its projection and bias (2C) and the sum (C): 23C +
 * H T + 4; gradients as many again, with the attention's score gradients (H T) and the residual
 * stream's second gradient (C). Outside the blocks: embeddings, the last LayerNorm, the logits
 * and their gradients. */
static double gpt_floats_per_row(const pgn_train_spec *t) {
    double C = t->gpt.d_model, HT = (double)t->gpt.n_head * t->gpt.context, V = PGN_TEXT_NOMINAL_VOCAB;
    double block = 2.0 * (23.0 * C + HT + 4.0) + HT + C;
    return t->gpt.n_layer * block + 6.0 * C + 3.0 * V + 8.0;
}


/* What train.c and graph.c allocate on the device, in floats (every tensor is 4-byte floats
 * or ints): the parameters, their gradients, the optimizer's moments, the per-layer buffers of
 * one batch (value, pre-activation, gradient and the dropout mask or softmax of each layer),
 * and both datasets with their labels and shuffle index. The GEMM's packed copy of each weight
 * matrix counts with the parameters. */
#define ACTIVATION_BUFFERS_PER_WIDTH 4.0
#define PACKED_WEIGHT_COPIES 1.0

/* A distributed job's ranks each hold their own of everything, and the collectives' buffers: the
 * parameters sent, every rank's received, and DiLoCo's global parameters, outer momentum and the
 * rank's own parameters set aside while the global ones are evaluated (dist.c). */
static void distributed_share(const pgn_train_spec *t, pgn_memory_estimate *out) {
    const pgn_dist_spec *d = &t->dist;
    out->ranks_here = d->ranks > 0 && d->n_hosts == 0 ? d->ranks : 1;
    if (d->ranks > 0)
        out->distributed = (double)out->n_params * 4.0 * (1 + d->ranks + (d->algorithm == PGN_DIST_DILOCO ? 3 : 0));
    out->total = (out->params + out->gradients + out->optimizer + out->activations + out->dataset + out->distributed) *
                 out->ranks_here;
}

void pgn_job_memory_estimate(const pgn_job_spec *spec, pgn_memory_estimate *out) {
    *out = (pgn_memory_estimate){.ranks_here = 1};
    /* an inet job's bound depends on where it runs (its work-items): pgn_inet_memory_estimate */
    if (spec->kind != PGN_JOB_TRAIN) return;
    const pgn_train_spec *t = &spec->train;
    const double f = 4.0;
    out->n_params = pgn_train_param_count(t);
    double p = (double)out->n_params;
    out->params = p * f * (1.0 + PACKED_WEIGHT_COPIES);
    out->gradients = p * f;
    const pgn_optimizer_spec *o = &t->optimizer;
    int moments = o->type != PGN_OPT_SGD ? 2 : o->momentum > 0.0f ? 1 : 0;
    out->optimizer = p * f * moments;
    if (t->model == PGN_MODEL_GPT) {
        out->activations = (double)t->batch_size * t->gpt.context * gpt_floats_per_row(t) * f;
        if (t->data.source == PGN_DATA_FORTUNES) { /* a text file's size is known once read */
            out->dataset = FORTUNES_CHARS * f;
            out->dataset_known = true;
        }
        distributed_share(t, out);
        return;
    }
    double widths = 0;
    for (int l = 0; l < t->n_layers; l++) widths += t->layers[l];
    out->activations = ACTIVATION_BUFFERS_PER_WIDTH * t->batch_size * widths * f;
    int features = 0, classes = 0;
    if (pgn_data_shape(&t->data, &features, &classes)) {
        double n = samples_per_epoch(&t->data) + test_samples(&t->data);
        out->dataset = n * (features + 2) * f; /* features, label, index */
        out->dataset_known = true;
    }
    distributed_share(t, out);
}
