/* checkpoint.c: a training run's checkpoint: its parameters, each parameter's optimizer state
 * and (taken mid-epoch) the epoch's step statistics, in safetensors with the spec, position and
 * digests in its metadata (a finished MLP run's also the figures it reported); and resuming from
 * one, which first verifies all of it: the layout, the data digest, the metadata's ranges against
 * this job, the tensors' names and shapes, then the weights against weights_sha256. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tensor/graph.h"
#include "tensor/optim.h"

/* 2: the metadata holds the data section's SHA-256 (safetensors.c) and epoch_step; a gpt's also
 * its vocabulary ("vocab", pgn_vocab_to_json) and its text's SHA-256 ("text_sha256"). A gpt run
 * is one "epoch" of its steps: epoch 0 and epoch_step s while it runs, epoch 1 once done. */
#define PGN_CHECKPOINT_FORMAT "paragon-checkpoint-2"
#define PGN_CHECKPOINT_FORMAT_V1 "paragon-checkpoint-1"

/* Checkpoint entries: parameters, then each parameter's optimizer state. Names follow
 * PyTorch's state_dict where they can ("layers.0.weight", "optimizer.layers.0.weight.exp_avg"). */
typedef struct {
    pgn_st_entry *e; /* 3 a parameter (value and up to two states) + the step statistics */
    char (*names)[96];
    int n;
} st_list;

static void st_list_free(st_list *l) {
    free(l->e);
    free(l->names);
}

/* A checkpoint taken inside an epoch (a stop between steps) also keeps the per-step statistics
 * of the epoch's steps so far, so the epoch's loss and accuracy come out as if never stopped. */
#define PGN_CHECKPOINT_STATS "trainer.step_stats"

/* The entries of a checkpoint taken epoch_step steps into an epoch. */
static int checkpoint_entries(const pgn_train_state *tr, int epoch_step, st_list *l, pgn_error *err) {
    l->n = 0;
    pgn_graph *g = tr->graph;
    size_t most = 3 * (size_t)g->n_params + 1 + (size_t)tr->n_extra;
    l->e = calloc(most, sizeof *l->e);
    l->names = calloc(most, sizeof *l->names);
    if (!l->e || !l->names) {
        st_list_free(l);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory listing a checkpoint's tensors");
        return -1;
    }
    for (int p = 0; p < g->n_params; p++) {
        pgn_node *node = &g->nodes[g->params[p]];
        snprintf(l->names[l->n], sizeof l->names[0], "%s", node->name);
        l->e[l->n] = (pgn_st_entry){l->names[l->n], &node->value};
        l->n++;
        pgn_tensor *state[2];
        const char *names[2];
        int k = pgn_optim_state(tr->optim, p, state, names);
        for (int i = 0; i < k; i++) {
            snprintf(l->names[l->n], sizeof l->names[0], "optimizer.%s.%s", node->name, names[i]);
            l->e[l->n] = (pgn_st_entry){l->names[l->n], state[i]};
            l->n++;
        }
    }
    for (int i = 0; i < tr->n_extra; i++) {
        snprintf(l->names[l->n], sizeof l->names[0], "%s", tr->extra[i].name);
        l->e[l->n] = (pgn_st_entry){l->names[l->n], tr->extra[i].t};
        l->n++;
    }
    if (epoch_step > 0) {
        snprintf(l->names[l->n], sizeof l->names[0], "%s", PGN_CHECKPOINT_STATS);
        l->e[l->n] = (pgn_st_entry){l->names[l->n], tr->stats};
        l->n++;
    }
    return 0;
}

static int checkpoint_path(const pgn_train_state *tr, char *out, size_t size) {
    if (!tr->dir) return 0;
    snprintf(out, size, "%s/%s", tr->dir, tr->file ? tr->file : PGN_CHECKPOINT_FILE);
    return 1;
}

/* What must match for a checkpoint to continue this job: everything but name and device. */
static json_t *resume_key(const pgn_job_spec *spec) {
    json_t *j = json_pack("{s:s, s:I}", "kind", "train", "seed", (json_int_t)spec->seed);
    json_t *train = pgn_train_spec_to_json(&spec->train);
    json_object_update(j, train);
    json_decref(train);
    json_object_del(j, "checkpoint_every");
    /* An MLP's log_every changes what is reported, not what is trained, and its checkpoints
     * predate it; a gpt's sizes the window of step statistics its checkpoints keep. */
    if (spec->train.model == PGN_MODEL_MLP) json_object_del(j, "log_every");
    return j;
}

/* A finished run's figures in its metadata: the result's names, the values as "%.17g" (exact
 * for a double). */
static const struct {
    const char *key;
    size_t offset;
} REPORT_FIGURES[] = {
    {"train_loss", offsetof(pgn_train_report, train_loss)},
    {"train_accuracy", offsetof(pgn_train_report, train_accuracy)},
    {"seconds_per_epoch", offsetof(pgn_train_report, seconds_per_epoch)},
    {"samples_per_second", offsetof(pgn_train_report, samples_per_second)},
};
#define N_REPORT_FIGURES (sizeof REPORT_FIGURES / sizeof REPORT_FIGURES[0])

static double *report_figure(pgn_train_report *r, size_t i) {
    return (double *)((char *)r + REPORT_FIGURES[i].offset);
}

static void save_report(json_t *meta, pgn_train_report *r) {
    for (size_t i = 0; i < N_REPORT_FIGURES; i++) {
        double v = *report_figure(r, i);
        if (!isfinite(v)) continue;
        char text[32];
        snprintf(text, sizeof text, "%.17g", v);
        json_object_set_new(meta, REPORT_FIGURES[i].key, json_string(text));
    }
}

int pgn_checkpoint_save(const pgn_train_state *tr, int epochs_done, int epoch_step, const char *sha,
                        pgn_error *err) {
    char path[PGN_PATH_MAX * 2];
    if (!checkpoint_path(tr, path, sizeof path)) return 0;
    if (tr->hooks && tr->hooks->may_commit && !tr->hooks->may_commit(tr->hooks->ctx)) {
        pgn_error_set(err, PGN_E_CANCELLED, "", "checkpoint not written: this run no longer holds its job");
        return -1;
    }
    st_list l;
    if (checkpoint_entries(tr, epoch_step, &l, err)) return -1;
    json_t *key = resume_key(tr->spec);
    char *spec_text = pgn_json_dumps(key);
    json_decref(key);
    char epoch[32], step[32], in_epoch[32];
    snprintf(epoch, sizeof epoch, "%d", epochs_done);
    snprintf(step, sizeof step, "%lld", (long long)tr->optim->t);
    snprintf(in_epoch, sizeof in_epoch, "%d", epoch_step);
    json_t *meta = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "format",
                             PGN_CHECKPOINT_FORMAT, "paragon_version", PGN_VERSION, "epoch",
                             epoch, "epoch_step", in_epoch, "step", step, "spec",
                             spec_text ? spec_text : "", "weights_sha256", sha);
    free(spec_text);
    if (tr->corpus) {
        json_t *vocab = pgn_vocab_to_json(&tr->corpus->vocab);
        char *vocab_text = pgn_json_dumps(vocab);
        json_decref(vocab);
        json_object_set_new(meta, "vocab", json_string(vocab_text ? vocab_text : ""));
        json_object_set_new(meta, "text_sha256", json_string(tr->corpus->sha256));
        free(vocab_text);
    }
    if (tr->report && epochs_done == tr->epochs) save_report(meta, tr->report);
    int rc = pgn_safetensors_write(path, l.e, l.n, meta, err);
    json_decref(meta);
    st_list_free(&l);
    return rc;
}

/* A metadata value shown in an error: its first QUOTED_CHARS characters, each unprintable one
 * as \xNN (4 characters), then "..." when cut. */
#define QUOTED_CHARS 32
#define QUOTED_SIZE (4 * QUOTED_CHARS + 4)

static void quote_value(const char *v, char out[QUOTED_SIZE]) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; v[i] && i < QUOTED_CHARS; i++) {
        unsigned char c = (unsigned char)v[i];
        const char *fmt = c >= 0x20 && c < 0x7f ? "%c" : "\\x%02x";
        len += (size_t)snprintf(out + len, QUOTED_SIZE - len, fmt, c);
    }
    if (strlen(v) > QUOTED_CHARS) snprintf(out + len, QUOTED_SIZE - len, "...");
}

/* A count the checkpoint's metadata holds under key: decimal digits only, in 0..max. */
static int meta_count(const pgn_st_file *f, const char *key, long long max, long long *out,
                      pgn_error *err) {
    const char *v = json_string_value(json_object_get(f->metadata, key));
    if (!v) return pgn_checkpoint_fail(err, f->path, "metadata has no \"%s\"", key);
    long long x = 0;
    bool ok = v[0] != '\0';
    for (const char *p = v; ok && *p; p++) {
        ok = *p >= '0' && *p <= '9' && x <= (LLONG_MAX - 9) / 10;
        if (ok) x = x * 10 + (*p - '0');
    }
    if (!ok || x > max) {
        char shown[QUOTED_SIZE];
        quote_value(v, shown);
        return pgn_checkpoint_fail(err, f->path, "metadata \"%s\" is '%s', expected an integer in "
                                   "0..%lld", key, shown, max);
    }
    *out = x;
    return 0;
}

/* The figures a finished run's metadata holds; one it lacks (a checkpoint written before they
 * were kept) stays NaN, one that is not a finite number >= 0 fails the load. */
static int load_report(const pgn_st_file *f, pgn_train_report *r, pgn_error *err) {
    for (size_t i = 0; i < N_REPORT_FIGURES; i++) {
        const char *key = REPORT_FIGURES[i].key;
        const char *v = json_string_value(json_object_get(f->metadata, key));
        double *out = report_figure(r, i);
        *out = NAN;
        if (!v) continue;
        char *end;
        errno = 0;
        double x = strtod(v, &end);
        if (end == v || *end || errno || !isfinite(x) || !(x >= 0)) {
            char shown[QUOTED_SIZE];
            quote_value(v, shown);
            return pgn_checkpoint_fail(err, f->path, "metadata \"%s\" is '%s', expected a number >= 0", key,
                                       shown);
        }
        *out = x;
    }
    return 0;
}

/* A checkpoint of this paragon's format, with a spec and its data digest verified; *spec_text
 * is the spec as stored. */
static int check_format(const pgn_st_file *f, const char **spec_text_out, pgn_error *err) {
    const char *format = json_string_value(json_object_get(f->metadata, "format"));
    const char *spec_text = json_string_value(json_object_get(f->metadata, "spec"));
    if (format && !strcmp(format, PGN_CHECKPOINT_FORMAT_V1))
        return pgn_checkpoint_fail(err, f->path, "format %s was written by an earlier paragon and "
                                   "carries no digest of its optimizer state; this paragon resumes "
                                   "%s only: remove it to start over", PGN_CHECKPOINT_FORMAT_V1,
                                   PGN_CHECKPOINT_FORMAT);
    if (!format || strcmp(format, PGN_CHECKPOINT_FORMAT) || !spec_text) {
        char shown[QUOTED_SIZE];
        quote_value(format ? format : "", shown);
        return pgn_checkpoint_fail(err, f->path, "not a paragon checkpoint (metadata \"format\" is "
                                   "'%s', expected '%s', and \"spec\" is %s)", shown,
                                   PGN_CHECKPOINT_FORMAT, spec_text ? "present" : "missing");
    }
    if (!f->digest_checked)
        return pgn_checkpoint_fail(err, f->path, "metadata has no \"%s\", so its tensor data "
                                   "cannot be verified", PGN_ST_DATA_SHA256);
    *spec_text_out = spec_text;
    return 0;
}

int pgn_checkpoint_spec(const pgn_st_file *f, pgn_train_spec *t, pgn_error *err) {
    const char *spec_text;
    if (check_format(f, &spec_text, err)) return -1;
    json_t *spec = json_loads(spec_text, 0, NULL);
    pgn_error perr = {0};
    int rc = spec ? pgn_train_spec_parse(spec, t, &perr) : -1;
    json_decref(spec);
    if (rc)
        return pgn_checkpoint_fail(err, f->path, "its metadata \"spec\" is not a train spec%s%s",
                                   perr.message[0] ? ": " : " (not JSON)", perr.message);
    return 0;
}

/* The metadata a resume believes, checked against this job: the format, the spec, and a
 * position (epoch, epoch_step, step) that this job's epochs and steps per epoch allow. */
static int check_checkpoint_meta(const pgn_train_state *tr, const pgn_st_file *f, long long *epoch,
                                 long long *in_epoch, long long *step, pgn_error *err) {
    const char *spec_text;
    if (check_format(f, &spec_text, err)) return -1;
    json_t *key = resume_key(tr->spec);
    char *want = pgn_json_dumps(key);
    json_decref(key);
    bool same = want && !strcmp(want, spec_text);
    free(want);
    if (!same)
        return pgn_checkpoint_fail(err, f->path, "belongs to a different job spec; remove it to "
                                   "start over");
    if (!json_string_value(json_object_get(f->metadata, "weights_sha256")))
        return pgn_checkpoint_fail(err, f->path, "metadata has no \"weights_sha256\"");
    if (tr->corpus) {
        const char *text_sha = json_string_value(json_object_get(f->metadata, "text_sha256"));
        if (!text_sha || strcmp(text_sha, tr->corpus->sha256))
            return pgn_checkpoint_fail(err, f->path, "was trained on another text than %s now holds "
                                       "(its SHA-256 differs); remove it to start over", tr->corpus->what);
        pgn_vocab vocab;
        if (pgn_checkpoint_vocab(f, &vocab, err)) return -1;
        bool same_vocab = pgn_vocab_equal(&vocab, &tr->corpus->vocab);
        pgn_vocab_free(&vocab);
        if (!same_vocab)
            return pgn_checkpoint_fail(err, f->path, "its vocabulary is not the one %s gives", tr->corpus->what);
    }
    long long epochs = tr->epochs, per_epoch = tr->steps_per_epoch;
    if (meta_count(f, "epoch", epochs, epoch, err) ||
        meta_count(f, "epoch_step", per_epoch - 1, in_epoch, err) ||
        meta_count(f, "step", epochs * per_epoch, step, err))
        return -1;
    if (*epoch == epochs && *in_epoch > 0)
        return pgn_checkpoint_fail(err, f->path, "metadata \"epoch_step\" is %lld, but epoch "
                                   "%lld is the job's last: a finished run has no steps of a next "
                                   "epoch", *in_epoch, *epoch);
    if (*step != *epoch * per_epoch + *in_epoch)
        return pgn_checkpoint_fail(err, f->path, "metadata \"step\" is %lld, but \"epoch\" %lld "
                                   "and \"epoch_step\" %lld at %lld steps per epoch make step %lld",
                                   *step, *epoch, *in_epoch, per_epoch,
                                   *epoch * per_epoch + *in_epoch);
    return 0;
}

int pgn_checkpoint_vocab(const pgn_st_file *f, pgn_vocab *v, pgn_error *err) {
    const char *text = json_string_value(json_object_get(f->metadata, "vocab"));
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    if (!j) return pgn_checkpoint_fail(err, f->path, "metadata has no \"vocab\" (a JSON object)");
    char what[PGN_PATH_MAX + 32];
    snprintf(what, sizeof what, "checkpoint '%s'", f->path);
    int rc = pgn_vocab_from_json(j, v, what, err);
    json_decref(j);
    return rc;
}

int pgn_checkpoint_load(const pgn_train_state *tr, int *epochs_done, int *epoch_step, pgn_error *err) {
    char path[PGN_PATH_MAX * 2];
    *epochs_done = 0;
    *epoch_step = 0;
    if (!checkpoint_path(tr, path, sizeof path)) return 0;
    struct stat st;
    if (stat(path, &st) && errno == ENOENT) return 0; /* other errors: open names them */
    pgn_st_file f;
    if (pgn_safetensors_open(path, &f, err)) return -1;
    long long epoch, in_epoch, step;
    int rc = check_checkpoint_meta(tr, &f, &epoch, &in_epoch, &step, err);
    if (rc == 0 && tr->report && epoch == tr->epochs) rc = load_report(&f, tr->report, err);
    if (rc == 0) {
        st_list l;
        rc = checkpoint_entries(tr, (int)in_epoch, &l, err);
        if (rc == 0) {
            rc = pgn_safetensors_load(&f, l.e, l.n, err);
            st_list_free(&l);
        }
    }
    char sha[65];
    const char *want = json_string_value(json_object_get(f.metadata, "weights_sha256"));
    if (rc == 0 && (rc = pgn_graph_weights_sha256(tr->graph, sha, err)) == 0 && strcmp(want, sha))
        rc = pgn_checkpoint_fail(err, path, "the weights read do not match its weights_sha256");
    if (rc == 0) {
        *epochs_done = (int)epoch;
        *epoch_step = (int)in_epoch;
        tr->optim->t = step;
    }
    pgn_safetensors_close(&f);
    return rc;
}
