/* spec.c: job specs, the front door shared by paragond and the CLI: the fields every job has
 * (kind, name, device, and a train job's seed), then the kind's own part, parsed by its owner
 * (tensor/train_spec.c, inet/inet_spec.c, bench/bench_spec.c, jobs/sleep.c); and the stored form. Every
 * error names the JSON path of the field at fault; unknown fields are errors. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "inet/inet.h"
#include "jobs/sleep.h"
#include "tensor/tensor.h"

void pgn_spec_free(pgn_job_spec *spec) {
    if (!spec) return;
    free(spec->inet.program);
    spec->inet.program = NULL;
    free(spec->inet.source);
    spec->inet.source = NULL;
    for (int i = 0; i < spec->inet.n_files; i++) {
        free(spec->inet.file_names[i]);
        free(spec->inet.file_texts[i]);
    }
    spec->inet.n_files = 0;
    free(spec->generate.prompt);
    spec->generate.prompt = NULL;
}

static int parse(const json_t *root, pgn_job_spec *out, bool compile, pgn_error *err) {
    memset(out, 0, sizeof *out);
    if (!json_is_object(root)) return pgn_spec_fail(err, "(root)", "a job spec must be a JSON object");
    char kind[32] = "";
    if (pgn_spec_string(root, "kind", "kind", kind, sizeof kind, err)) return -1;
    if (!kind[0]) return pgn_spec_fail(err, "kind", "required (%s)", pgn_job_kinds_text(true));
    if (pgn_job_kind_parse(kind, &out->kind))
        return pgn_spec_fail(err, "kind", "unknown job kind '%s' (this build runs: %s)", kind,
                             pgn_job_kinds_text(true));
    snprintf(out->name, sizeof out->name, "%s", kind);
    snprintf(out->device, sizeof out->device, "auto");
    if (pgn_spec_string(root, "name", "name", out->name, sizeof out->name, err) ||
        pgn_spec_string(root, "device", "device", out->device, sizeof out->device, err) ||
        pgn_spec_no_controls(out->name, "name", err) || pgn_spec_no_controls(out->device, "device", err))
        return -1;
    if (!out->device[0]) return pgn_spec_fail(err, "device", "must not be empty");
    if (!strcmp(out->device, "all") && out->kind != PGN_JOB_BENCH)
        return pgn_spec_fail(err, "device", "\"all\" is only for bench jobs");
    if (out->kind == PGN_JOB_INET) {
        if (pgn_inet_spec_parse(root, &out->inet, compile, err) == 0) return 0;
        pgn_spec_free(out);
        return -1;
    }
    if (out->kind == PGN_JOB_BENCH) return pgn_bench_spec_parse(root, &out->bench, err);
    if (out->kind == PGN_JOB_GENERATE) {
        if (pgn_generate_spec_parse(root, &out->generate, err) == 0) return 0;
        pgn_spec_free(out);
        return -1;
    }
    if (out->kind == PGN_JOB_SLEEP) return pgn_sleep_spec_parse(root, &out->sleep, err);
    long long seed = 0;
    if (pgn_spec_int(root, "seed", "seed", 0, (long long)9007199254740991LL, &seed, err)) return -1;
    out->seed = (uint64_t)seed;
    return pgn_train_spec_parse(root, &out->train, err);
}

int pgn_spec_parse(const json_t *root, pgn_job_spec *out, pgn_error *err) { return parse(root, out, true, err); }

int pgn_spec_parse_stored(const json_t *root, pgn_job_spec *out, pgn_error *err) { return parse(root, out, false, err); }

int pgn_spec_parse_text(const char *text, size_t len, pgn_job_spec *out, pgn_error *err) {
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        pgn_error_set(err, PGN_E_INVALID_JSON, "", "line %d, column %d: %s", jerr.line, jerr.column,
                      jerr.text);
        return -1;
    }
    int rc = pgn_spec_parse(root, out, err);
    json_decref(root);
    return rc;
}

const pgn_job_kind pgn_job_kinds[PGN_JOB_KINDS] = {PGN_JOB_TRAIN, PGN_JOB_INET, PGN_JOB_BENCH,
                                                   PGN_JOB_GENERATE, PGN_JOB_SLEEP};

static char kinds_text[2][128]; /* [quoted] */

static void make_kinds_text(void) {
    for (int q = 0; q < 2; q++) {
        size_t len = 0;
        for (size_t i = 0; i < PGN_JOB_KINDS; i++) {
            const char *sep = i == 0 ? "" : i + 1 == PGN_JOB_KINDS ? " or " : ", ";
            len += (size_t)snprintf(kinds_text[q] + len, sizeof kinds_text[q] - len, "%s%s%s%s", sep,
                                    q ? "\"" : "", pgn_job_kind_name(pgn_job_kinds[i]), q ? "\"" : "");
        }
    }
}

const char *pgn_job_kinds_text(bool quoted) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_kinds_text);
    return kinds_text[quoted ? 1 : 0];
}

int pgn_job_kind_parse(const char *name, pgn_job_kind *out) {
    for (size_t i = 0; i < PGN_JOB_KINDS; i++)
        if (name && !strcmp(name, pgn_job_kind_name(pgn_job_kinds[i]))) {
            *out = pgn_job_kinds[i];
            return 0;
        }
    return -1;
}

const char *pgn_job_kind_name(pgn_job_kind kind) {
    switch (kind) {
    case PGN_JOB_TRAIN: return "train";
    case PGN_JOB_INET: return "inet";
    case PGN_JOB_BENCH: return "bench";
    case PGN_JOB_GENERATE: return "generate";
    case PGN_JOB_SLEEP: return "sleep";
    }
    return "unknown";
}

json_t *pgn_spec_to_json(const pgn_job_spec *spec) {
    json_t *o = json_pack("{s:s, s:s, s:s}", "kind", pgn_job_kind_name(spec->kind), "name", spec->name,
                          "device", spec->device);
    json_t *own = NULL;
    switch (spec->kind) {
    case PGN_JOB_TRAIN:
        json_object_set_new(o, "seed", json_integer((json_int_t)spec->seed));
        own = pgn_train_spec_to_json(&spec->train);
        break;
    case PGN_JOB_INET: own = pgn_inet_spec_to_json(&spec->inet); break;
    case PGN_JOB_BENCH: own = pgn_bench_spec_to_json(&spec->bench); break;
    case PGN_JOB_GENERATE: own = pgn_generate_spec_to_json(&spec->generate); break;
    case PGN_JOB_SLEEP: own = pgn_sleep_spec_to_json(&spec->sleep); break;
    }
    if (!o || !own) {
        json_decref(o);
        json_decref(own);
        return NULL;
    }
    json_object_update(o, own);
    json_decref(own);
    return o;
}
