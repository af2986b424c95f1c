/* test_checkpoint.c: resuming trusts nothing in a checkpoint (engine/tensor/safetensors.c and the
 * resume path of engine/tensor/train.c): a checkpoint taken mid-epoch is altered one way at a time
 * (data bytes, metadata, header offsets, tensor names, dtypes and shapes), and each resume fails
 * with code "checkpoint", a message naming the file and what is wrong, and no step run. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine_helpers.h"
#include "safetensors_check.h"

/* 120 spiral samples in batches of 16: 8 steps per epoch, 4 epochs; momentum gives every
 * parameter one optimizer state tensor. */
#define SPEC                                                                                     \
    "{\"kind\":\"train\",\"seed\":3,\"model\":{\"type\":\"mlp\",\"layers\":[2,8,3]},"            \
    "\"data\":{\"source\":\"spiral\",\"samples\":40},\"optimizer\":{\"type\":\"sgd\","            \
    "\"lr\":0.1,\"momentum\":0.9},\"batch_size\":16,\"epochs\":4}"
#define STEPS_PER_EPOCH 8
#define STOP_EPOCH 2
#define STOP_STEP 3 /* the checkpoint: epoch 2 done, 3 steps into epoch 3, step 19 */

static char dir[64], path[128];
static pgn_job_spec spec;
static char *pristine; /* the checkpoint as written */
static size_t pristine_len;

typedef struct {
    int metrics, polls, stop_after;
} counter;

static void count_metric(void *ctx, const char *name, int64_t step, double value) {
    (void)name, (void)step, (void)value;
    ((counter *)ctx)->metrics++;
}

static bool stop_after(void *ctx) {
    counter *c = ctx;
    return c->stop_after && ++c->polls > c->stop_after;
}

static int run(bool resume, counter *c, json_t **result, pgn_error *err) {
    pgn_run_options o = {.data_dir = "data", .checkpoint_dir = dir, .resume = resume,
                         .checkpoint_on_stop = true};
    pgn_run_hooks h = {.ctx = c, .on_metric = count_metric, .should_stop = stop_after};
    *result = NULL;
    return pgn_job_run(&spec, NULL, &o, &h, result, err);
}

static char *read_file(size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*len);
    cr_assert_eq(fread(buf, 1, *len, f), *len);
    fclose(f);
    return buf;
}

static void write_bytes(const void *bytes, size_t len) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

/* Stops a run inside epoch 3 with checkpoint_on_stop, keeping the checkpoint it leaves. */
static void setup(void) {
    const char *text = SPEC;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    snprintf(dir, sizeof dir, "/tmp/pgn-ckpt-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/%s", dir, PGN_CHECKPOINT_FILE);
    counter c = {.stop_after = STOP_EPOCH * STEPS_PER_EPOCH + STOP_STEP};
    json_t *result;
    cr_assert_eq(run(false, &c, &result, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled", "%s", err.message);
    cr_assert(strstr(err.message, "checkpointed"), "%s", err.message);
    pristine = read_file(&pristine_len);
}

static void teardown(void) {
    free(pristine);
    unlink(path);
    rmdir(dir);
}

TestSuite(checkpoint, .init = setup, .fini = teardown);

/* ---- the checkpoint, taken apart and put back together ------------------------------------- */

typedef struct {
    json_t *header; /* tensors and __metadata__ */
    unsigned char *data;
    size_t data_len;
} parts;

static parts split(void) {
    size_t start;
    json_t *header = test_safetensors_header(pristine, pristine_len, &start);
    parts p = {header, malloc(pristine_len - start), pristine_len - start};
    memcpy(p.data, pristine + start, p.data_len);
    return p;
}

/* Writes the parts as a checkpoint (header padded to 8 bytes, as the engine writes it). */
static void join(parts *p) {
    char *text = json_dumps(p->header, JSON_COMPACT | JSON_SORT_KEYS);
    size_t hlen = strlen(text), padded = (hlen + 7) / 8 * 8;
    size_t len = 8 + padded + p->data_len;
    unsigned char *out = malloc(len);
    for (int k = 0; k < 8; k++) out[k] = (unsigned char)((uint64_t)padded >> (8 * k));
    memset(out + 8, ' ', padded);
    memcpy(out + 8, text, hlen);
    memcpy(out + 8 + padded, p->data, p->data_len);
    write_bytes(out, len);
    free(out);
    free(text);
    free(p->data);
    json_decref(p->header);
}

static json_t *meta(parts *p) { return json_object_get(p->header, "__metadata__"); }

static void set_meta(parts *p, const char *key, const char *value) {
    json_object_set_new(meta(p), key, json_string(value));
}

static json_int_t offset(parts *p, const char *tensor, int which) {
    json_t *t = json_object_get(p->header, tensor);
    cr_assert_not_null(t, "no tensor %s", tensor);
    return json_integer_value(json_array_get(json_object_get(t, "data_offsets"), (size_t)which));
}

static void set_offsets(parts *p, const char *tensor, json_int_t begin, json_int_t end) {
    json_object_set_new(json_object_get(p->header, tensor), "data_offsets",
                        json_pack("[I, I]", begin, end));
}

/* The digest a consistent forger would write: what the engine computes over the data. */
static void redigest(parts *p) {
    char hex[65];
    pgn_sha256_hex_of(p->data, p->data_len, hex);
    set_meta(p, "data_sha256", hex);
}

/* The resume fails with code "checkpoint", naming the file and saying `fragment`; no step ran
 * (no metric), and the checkpoint is left where it was. */
static void resume_fails(const char *fragment) {
    counter c = {0};
    json_t *result;
    pgn_error err = {0};
    cr_assert_eq(run(true, &c, &result, &err), -1, "resumed despite: %s", fragment);
    cr_assert_null(result);
    cr_assert_str_eq(pgn_error_code_name(err.code), "checkpoint", "%s", err.message);
    char named[192];
    snprintf(named, sizeof named, "checkpoint '%s': ", path);
    cr_assert(strstr(err.message, named) == err.message, "the file is not named first: %s",
              err.message);
    cr_assert(strstr(err.message, fragment), "no '%s' in: %s", fragment, err.message);
    cr_assert_eq(c.metrics, 0, "a step ran from a refused checkpoint");
    cr_assert_eq(access(path, F_OK), 0, "the checkpoint is kept");
}

/* ---- tests ---------------------------------------------------------------------------------- */

Test(checkpoint, an_untouched_checkpoint_resumes_to_the_uninterrupted_weights) {
    counter c = {0};
    json_t *resumed, *whole;
    pgn_error err = {0};
    cr_assert_eq(run(true, &c, &resumed, &err), 0, "%s", err.message);
    cr_assert_eq(json_integer_value(json_object_get(resumed, "resumed_from_step")),
                 STOP_EPOCH * STEPS_PER_EPOCH + STOP_STEP);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(run(false, &c, &whole, &err), 0, "%s", err.message);
    cr_assert_str_eq(json_string_value(json_object_get(resumed, "weights_sha256")),
                     json_string_value(json_object_get(whole, "weights_sha256")));
    json_decref(resumed);
    json_decref(whole);
}

/* The digest every weights SHA-256 and checkpoint key is written with: FIPS 180-4's examples,
 * in lower-case hex. */
Test(checkpoint, sha256_gives_the_standard_digests_in_hex) {
    char hex[65];
    pgn_sha256_hex_of("", 0, hex);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    pgn_sha256_hex_of("abc", 3, hex);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* two blocks */
    pgn_sha256_hex_of(two, strlen(two), hex);
    cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

Test(checkpoint, the_file_stores_the_digest_of_its_whole_tensor_data) {
    parts p = split();
    const char *stored = json_string_value(json_object_get(meta(&p), "data_sha256"));
    cr_assert_not_null(stored);
    char want[65];
    snprintf(want, sizeof want, "%s", stored);
    redigest(&p);
    cr_assert_str_eq(json_string_value(json_object_get(meta(&p), "data_sha256")), want);
    cr_assert_str_eq(json_string_value(json_object_get(meta(&p), "format")),
                     "paragon-checkpoint-2");
    json_decref(p.header);
    free(p.data);
}

Test(checkpoint, a_flipped_byte_in_the_weights_is_refused) {
    parts p = split();
    p.data[offset(&p, "layers.0.weight", 0) + 5] ^= 0x01;
    join(&p);
    resume_fails("the tensor data does not match its data_sha256");
}

Test(checkpoint, a_flipped_byte_in_the_optimizer_state_is_refused) {
    parts p = split();
    p.data[offset(&p, "optimizer.layers.1.bias.momentum_buffer", 0) + 2] ^= 0x40;
    join(&p);
    resume_fails("the tensor data does not match its data_sha256");
}

Test(checkpoint, a_flipped_byte_in_the_step_statistics_is_refused) {
    parts p = split();
    p.data[offset(&p, "trainer.step_stats", 0)] ^= 0x80;
    join(&p);
    resume_fails("the tensor data does not match its data_sha256");
}

/* Altered weights under a recomputed data digest still disagree with weights_sha256. */
Test(checkpoint, weights_that_disagree_with_weights_sha256_are_refused) {
    parts p = split();
    p.data[offset(&p, "layers.1.weight", 0) + 3] ^= 0x10;
    redigest(&p);
    join(&p);
    resume_fails("the weights read do not match its weights_sha256");
}

Test(checkpoint, metadata_out_of_range_or_unparseable_is_refused) {
    struct {
        const char *key, *value, *fragment;
    } cases[] = {
        {"epoch", "999999", "metadata \"epoch\" is '999999', expected an integer in 0..4"},
        {"epoch", "-1", "metadata \"epoch\" is '-1', expected an integer in 0..4"},
        {"step", "-5", "metadata \"step\" is '-5', expected an integer in 0..32"},
        {"step", "abc", "metadata \"step\" is 'abc', expected an integer in 0..32"},
        {"step", "", "metadata \"step\" is '', expected an integer in 0..32"},
        {"step", "19 ", "metadata \"step\" is '19 ', expected an integer in 0..32"},
        {"step", "99999999999999999999999", "expected an integer in 0..32"},
        {"step", "1\n9", "metadata \"step\" is '1\\x0a9', expected"},
        {"epoch_step", "8", "metadata \"epoch_step\" is '8', expected an integer in 0..7"},
        {"step", "18", "metadata \"step\" is 18, but \"epoch\" 2 and \"epoch_step\" 3 at 8 steps "
                       "per epoch make step 19"},
        {"epoch", "4", "metadata \"epoch_step\" is 3, but epoch 4 is the job's last"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parts p = split();
        set_meta(&p, cases[i].key, cases[i].value);
        join(&p);
        resume_fails(cases[i].fragment);
    }
    const char *required[] = {"epoch", "epoch_step", "step", "weights_sha256"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        parts p = split();
        json_object_del(meta(&p), required[i]);
        join(&p);
        char want[64];
        snprintf(want, sizeof want, "metadata has no \"%s\"", required[i]);
        resume_fails(want);
    }
}

Test(checkpoint, metadata_that_is_not_ours_is_refused) {
    parts p = split();
    set_meta(&p, "format", "paragon-checkpoint-1");
    join(&p);
    resume_fails("format paragon-checkpoint-1 was written by an earlier paragon");

    p = split();
    set_meta(&p, "format", "something-else");
    join(&p);
    resume_fails("not a paragon checkpoint (metadata \"format\" is 'something-else'");

    p = split();
    json_object_del(meta(&p), "data_sha256");
    join(&p);
    resume_fails("metadata has no \"data_sha256\", so its tensor data cannot be verified");

    p = split();
    json_object_set_new(meta(&p), "epoch", json_integer(2));
    join(&p);
    resume_fails("metadata \"epoch\" is not a string");
}

Test(checkpoint, data_offsets_that_do_not_tile_the_data_are_refused) {
    const char *w = "layers.0.weight"; /* (2, 8): 64 bytes */
    parts p = split();
    json_int_t b = offset(&p, w, 0), e = offset(&p, w, 1), total = (json_int_t)p.data_len;
    cr_assert_eq(e - b, 64);
    set_offsets(&p, w, b, total + 64);
    join(&p);
    char want[256];
    snprintf(want, sizeof want, "tensor 'layers.0.weight': data_offsets [%lld, %lld] point past "
             "the end of the %lld bytes of tensor data", (long long)b, (long long)total + 64,
             (long long)total);
    resume_fails(want);

    p = split();
    set_offsets(&p, w, e, b);
    join(&p);
    snprintf(want, sizeof want, "tensor 'layers.0.weight': data_offsets [%lld, %lld] are out of "
             "order (begin after end)", (long long)e, (long long)b);
    resume_fails(want);

    p = split();
    set_offsets(&p, w, b, e - 4);
    join(&p);
    snprintf(want, sizeof want, "tensor 'layers.0.weight': data_offsets [%lld, %lld] hold 60 "
             "bytes, but F32 (2, 8) needs 64", (long long)b, (long long)e - 4);
    resume_fails(want);

    /* layers.0.weight is the first tensor: moved on by 4 bytes it leaves a hole before it;
     * layers.0.bias follows another: moved back by 4 it overlaps that one. */
    cr_assert_eq(b, 0);
    p = split();
    set_offsets(&p, w, b + 4, e + 4);
    join(&p);
    resume_fails("bytes 0..3 of the tensor data belong to no tensor (before 'layers.0.weight'");

    p = split();
    json_int_t bb = offset(&p, "layers.0.bias", 0), be = offset(&p, "layers.0.bias", 1);
    set_offsets(&p, "layers.0.bias", bb - 4, be - 4);
    join(&p);
    snprintf(want, sizeof want, "and 'layers.0.bias' [%lld, %lld] overlap", (long long)bb - 4,
             (long long)be - 4);
    resume_fails(want);

    p = split();
    set_offsets(&p, w, -8, e);
    join(&p);
    resume_fails("tensor 'layers.0.weight': data_offsets [-8, ");

    p = split();
    json_object_set_new(json_object_get(p.header, w), "data_offsets", json_string("0-64"));
    join(&p);
    resume_fails("tensor 'layers.0.weight': data_offsets must be [begin, end], two integers");
}

Test(checkpoint, a_truncated_or_extended_file_is_refused) {
    write_bytes(pristine, pristine_len - 4);
    resume_fails("point past the end of the");
    char *longer = malloc(pristine_len + 4);
    memcpy(longer, pristine, pristine_len);
    memset(longer + pristine_len, 0, 4);
    write_bytes(longer, pristine_len + 4);
    free(longer);
    resume_fails("4 bytes of tensor data follow the last tensor");
    write_bytes(pristine, 5);
    resume_fails("5 bytes, shorter than the 8-byte header length");
    write_bytes(pristine, 100);
    resume_fails("header length");
}

Test(checkpoint, missing_unexpected_and_misshapen_tensors_are_named) {
    parts p = split();
    json_t *t = json_object_get(p.header, "optimizer.layers.0.bias.momentum_buffer");
    json_object_set(p.header, "optimizer.layers.0.bias.velocity", t);
    json_object_del(p.header, "optimizer.layers.0.bias.momentum_buffer");
    join(&p);
    resume_fails("tensor 'optimizer.layers.0.bias.momentum_buffer': missing");

    /* epoch_step 0 (step 16, consistent) takes no step statistics: the file's are extra */
    p = split();
    set_meta(&p, "epoch_step", "0");
    set_meta(&p, "step", "16");
    join(&p);
    resume_fails("tensor 'trainer.step_stats': unexpected: this job has no such tensor");

    p = split();
    json_object_set_new(json_object_get(p.header, "layers.0.weight"), "dtype", json_string("F16"));
    join(&p);
    resume_fails("tensor 'layers.0.weight': dtype is 'F16', expected F32");

    p = split();
    json_object_set_new(json_object_get(p.header, "layers.0.weight"), "shape",
                        json_pack("[i, i]", 8, 2));
    join(&p);
    resume_fails("tensor 'layers.0.weight': shape is (8, 2), expected (2, 8)");

    p = split();
    json_object_set_new(json_object_get(p.header, "layers.0.weight"), "shape",
                        json_pack("[i]", 16));
    join(&p);
    resume_fails("tensor 'layers.0.weight': shape is (16), expected (2, 8)");
}

/* Every byte of the header and of the first tensor, flipped one at a time: each resume fails
 * as a checkpoint error naming the file, except for flips in the one metadata key nothing reads
 * (paragon_version, informational); never a crash, a leak or another kind of error. */
Test(checkpoint, every_flipped_byte_is_refused_unless_nothing_reads_it) {
    size_t start;
    json_t *header = test_safetensors_header(pristine, pristine_len, &start);
    json_decref(header);
    const char *key = "\"paragon_version\"";
    const char *found = memmem(pristine, start, key, strlen(key));
    cr_assert_not_null(found);
    size_t free_from = (size_t)(found - pristine) + 1, free_to = free_from + strlen(key) - 2;
    char *copy = malloc(pristine_len);
    for (size_t at = 0; at < start + 64 && at < pristine_len; at++) {
        memcpy(copy, pristine, pristine_len);
        copy[at] ^= at < start ? 0x21 : 0x01; /* in the header: letters stay printable */
        write_bytes(copy, pristine_len);
        counter c = {0};
        json_t *result;
        pgn_error err = {0};
        if (run(true, &c, &result, &err) == 0) {
            json_decref(result);
            cr_assert(at >= free_from && at < free_to, "byte %zu flipped and resumed: %.40s", at,
                      copy + (at > 20 ? at - 20 : 0));
            continue;
        }
        cr_assert_str_eq(pgn_error_code_name(err.code), "checkpoint", "byte %zu: %s", at, err.message);
        cr_assert(strstr(err.message, path), "byte %zu: %s", at, err.message);
    }
    free(copy);
}

/* ---- a finished run ------------------------------------------------------------------------- */

/* Finishes the run from the setup's checkpoint: its result, and the checkpoint it leaves as the
 * one split() takes apart. */
static json_t *finish(void) {
    counter c = {0};
    json_t *result;
    pgn_error err = {0};
    cr_assert_eq(run(true, &c, &result, &err), 0, "%s", err.message);
    free(pristine);
    pristine = read_file(&pristine_len);
    return result;
}

/* What a run reports of its training, kept for a resume of it once finished. */
static const char *const FIGURES[] = {"train_loss", "train_accuracy", "seconds_per_epoch", "samples_per_second"};
#define N_FIGURES (sizeof FIGURES / sizeof FIGURES[0])

/* Resumes the finished checkpoint as it now is: no step runs, and it succeeds. */
static json_t *resume_finished(void) {
    counter c = {0};
    json_t *result;
    pgn_error err = {0};
    cr_assert_eq(run(true, &c, &result, &err), 0, "%s", err.message);
    cr_assert_eq(c.metrics, 0, "a finished run trains no more");
    cr_assert_eq(json_integer_value(json_object_get(result, "resumed_from_epoch")), 4);
    cr_assert_eq(json_integer_value(json_object_get(result, "steps")), 4 * STEPS_PER_EPOCH);
    cr_assert_eq(json_real_value(json_object_get(result, "flops")), 0.0, "no work done");
    return result;
}

Test(checkpoint, resuming_a_finished_run_reports_the_figures_it_reported) {
    json_t *done = finish();
    parts p = split();
    for (size_t i = 0; i < N_FIGURES; i++) {
        char want[32];
        snprintf(want, sizeof want, "%.17g", json_real_value(json_object_get(done, FIGURES[i])));
        cr_assert_str_eq(json_string_value(json_object_get(meta(&p), FIGURES[i])), want, "%s", FIGURES[i]);
    }
    json_decref(p.header);
    free(p.data);
    cr_assert_gt(json_real_value(json_object_get(done, "samples_per_second")), 0);

    json_t *again = resume_finished();
    for (size_t i = 0; i < N_FIGURES; i++)
        cr_assert_eq(json_real_value(json_object_get(again, FIGURES[i])),
                     json_real_value(json_object_get(done, FIGURES[i])), "%s", FIGURES[i]);
    cr_assert_eq(json_real_value(json_object_get(again, "gflops")), json_real_value(json_object_get(done, "gflops")));
    const char *same[] = {"test_loss", "test_accuracy"};
    for (size_t i = 0; i < 2; i++)
        cr_assert_eq(json_real_value(json_object_get(again, same[i])), json_real_value(json_object_get(done, same[i])),
                     "%s", same[i]);
    cr_assert_str_eq(json_string_value(json_object_get(again, "weights_sha256")),
                     json_string_value(json_object_get(done, "weights_sha256")));
    json_decref(again);

    /* and so does a resume of that resume: its checkpoint keeps them */
    again = resume_finished();
    cr_assert_eq(json_real_value(json_object_get(again, "train_loss")),
                 json_real_value(json_object_get(done, "train_loss")));
    json_decref(again);
    json_decref(done);
}

/* A finished checkpoint written before the figures were kept: what it knows, none made up. */
Test(checkpoint, a_finished_checkpoint_without_figures_reports_what_it_knows) {
    json_t *done = finish();
    parts p = split();
    for (size_t i = 0; i < N_FIGURES; i++) json_object_del(meta(&p), FIGURES[i]);
    join(&p);
    json_t *again = resume_finished();
    for (size_t i = 0; i < N_FIGURES; i++)
        cr_assert_null(json_object_get(again, FIGURES[i]), "%s reported", FIGURES[i]);
    cr_assert_null(json_object_get(again, "gflops"));
    cr_assert_eq(json_real_value(json_object_get(again, "test_accuracy")),
                 json_real_value(json_object_get(done, "test_accuracy")));
    json_decref(again);
    json_decref(done);
}

Test(checkpoint, a_finished_runs_figures_that_are_not_numbers_are_refused) {
    json_decref(finish());
    struct {
        const char *key, *value;
    } cases[] = {
        {"train_loss", "abc"},   {"train_loss", ""},          {"samples_per_second", "-1"},
        {"seconds_per_epoch", "nan"}, {"train_accuracy", "1e999"}, {"train_accuracy", "0.5x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parts p = split();
        set_meta(&p, cases[i].key, cases[i].value);
        join(&p);
        char want[128];
        snprintf(want, sizeof want, "metadata \"%s\" is '%s', expected a number >= 0", cases[i].key, cases[i].value);
        resume_fails(want);
    }
}

/* An MLP's log_every says what is reported, not what is trained: a checkpoint does not hold it
 * (so those written before it was a field resume), and a resume under another continues. */
Test(checkpoint, log_every_is_not_part_of_what_a_resume_must_match) {
    parts p = split();
    const char *stored = json_string_value(json_object_get(meta(&p), "spec"));
    cr_assert_not_null(stored);
    cr_assert_null(strstr(stored, "log_every"), "%s", stored);
    json_decref(p.header);
    free(p.data);
    spec.train.log_every = 3;
    counter c = {0};
    json_t *result;
    pgn_error err = {0};
    cr_assert_eq(run(true, &c, &result, &err), 0, "%s", err.message);
    cr_assert_eq(json_integer_value(json_object_get(result, "resumed_from_step")),
                 STOP_EPOCH * STEPS_PER_EPOCH + STOP_STEP);
    json_decref(result);
}
