/* test_spec.c: job-spec validation: defaults, and every kind of bad input gets an error that
 * names its field; and the devices a spec's "device" names. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "paragon.h"

#define XOR_BODY "\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},\"data\":{\"source\":\"xor\"}"

static pgn_error parse_err(const char *text) {
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), -1, "accepted: %s", text);
    return err;
}

Test(spec, minimal_train_spec_gets_defaults) {
    const char *text = "{\"kind\":\"train\"," XOR_BODY "}";
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    cr_assert_eq(spec.kind, PGN_JOB_TRAIN);
    cr_assert_str_eq(spec.device, "auto");
    cr_assert_str_eq(spec.name, "train");
    cr_assert_eq(spec.train.n_layers, 3);
    cr_assert_eq(spec.train.layers[1], 8);
    cr_assert_eq(spec.train.batch_size, 32);
    cr_assert_eq(spec.train.epochs, 10);
    cr_assert_eq(spec.train.optimizer.type, PGN_OPT_SGD);
    cr_assert_eq(spec.train.optimizer.lr, 0.01f);
    cr_assert_eq(spec.train.optimizer.momentum, 0.0f);
    cr_assert_eq(spec.train.activation, PGN_ACT_RELU);
    cr_assert_eq(spec.train.loss, PGN_LOSS_CROSS_ENTROPY);
    cr_assert_eq(spec.train.checkpoint_every, 0);
    cr_assert_eq(spec.train.log_every, 10, "a step_loss point every 10 steps");
}

Test(spec, normalised_json_round_trips) {
    const char *text = "{\"kind\":\"train\",\"name\":\"x\",\"seed\":42,\"epochs\":7,\"batch_size\":3,\"log_every\":4,"
                       "\"optimizer\":{\"lr\":0.1,\"momentum\":0.9}," XOR_BODY "}";
    pgn_job_spec a, b;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &a, &err), 0, "%s", err.message);
    json_t *j = pgn_spec_to_json(&a);
    char *dumped = pgn_json_dumps(j);
    cr_assert(strstr(dumped, "\"lr\":0.1,"), "lr should print as 0.1: %s", dumped);
    cr_assert_eq(pgn_spec_parse(j, &b, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
    cr_assert_eq(b.seed, 42);
    cr_assert_eq(json_integer_value(json_object_get(j, "log_every")), 4);
    free(dumped);
    json_decref(j);
}

Test(spec, malformed_json_names_line_and_column) {
    pgn_error err = parse_err("{\"kind\":\"train\",\n \"epochs\": }");
    cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_json");
    cr_assert(strstr(err.message, "line 2"), "%s", err.message);
}

Test(spec, errors_name_their_field) {
    struct {
        const char *text, *field, *fragment;
    } cases[] = {
        {"[1,2]", "(root)", "must be a JSON object"},
        {"{}", "kind", "required"},
        {"{\"kind\":\"paint\"}", "kind",
         "unknown job kind 'paint' (this build runs: \"train\", \"inet\", \"bench\", \"generate\" or \"sleep\")"},
        {"{\"kind\":\"sleep\"}", "seconds", "required"},
        {"{\"kind\":\"sleep\",\"seconds\":-1}", "seconds", "must be between 0 and 86400"},
        {"{\"kind\":\"sleep\",\"seconds\":\"1\"}", "seconds", "must be a number"},
        {"{\"kind\":\"sleep\",\"seconds\":1,\"epochs\":3}", "epochs", "unknown field"},
        {"{\"kind\":7}", "kind", "must be a string"},
        {"{\"kind\":\"train\",\"colour\":1," XOR_BODY "}", "colour", "unknown field"},
        {"{\"kind\":\"train\",\"data\":{\"source\":\"xor\"}}", "model", "missing"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2],\"depth\":3},"
         "\"data\":{\"source\":\"xor\"}}", "model.depth", "unknown field"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"cnn\",\"layers\":[2,2]},\"data\":{\"source\":\"xor\"}}",
         "model.type", "unknown value 'cnn'"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,0,2]},\"data\":{\"source\":\"xor\"}}",
         "model.layers[1]", "must be > 0"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,\"8\",2]},\"data\":{\"source\":\"xor\"}}",
         "model.layers[1]", "must be an integer"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2]},\"data\":{\"source\":\"xor\"}}",
         "model.layers", "between 2 and"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[3,8,2]},\"data\":{\"source\":\"xor\"}}",
         "model.layers[0]", "must be 2"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,3]},\"data\":{\"source\":\"xor\"}}",
         "model.layers[2]", "must be 2"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2],\"activation\":\"swish\"},"
         "\"data\":{\"source\":\"xor\"}}", "model.activation", "unknown value 'swish' (expected one of: none, relu, gelu, tanh, sigmoid)"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},\"data\":{\"source\":\"mnist9\"}}",
         "data.source", "unknown data source"},
        {"{\"kind\":\"train\",\"optimizer\":{\"lr\":-1}," XOR_BODY "}", "optimizer.lr", "must be >"},
        {"{\"kind\":\"train\",\"optimizer\":{\"lr\":\"fast\"}," XOR_BODY "}", "optimizer.lr", "must be a number"},
        {"{\"kind\":\"train\",\"optimizer\":{\"momentum\":1.5}," XOR_BODY "}", "optimizer.momentum", "must be >="},
        {"{\"kind\":\"train\",\"optimizer\":{\"type\":\"lion\"}," XOR_BODY "}", "optimizer.type", "unknown value 'lion'"},
        {"{\"kind\":\"train\",\"optimizer\":{\"type\":\"adam\",\"momentum\":0.9}," XOR_BODY "}", "optimizer.momentum", "only applies to \"sgd\""},
        {"{\"kind\":\"train\",\"optimizer\":{\"beta1\":0.9}," XOR_BODY "}", "optimizer.beta1", "only applies to \"adam\""},
        {"{\"kind\":\"train\",\"optimizer\":{\"nesterov\":true}," XOR_BODY "}", "optimizer.nesterov", "needs optimizer.momentum"},
        {"{\"kind\":\"train\",\"optimizer\":{\"nesterov\":1}," XOR_BODY "}", "optimizer.nesterov", "must be true or false"},
        {"{\"kind\":\"train\",\"optimizer\":{\"schedule\":\"step\"}," XOR_BODY "}", "optimizer.schedule", "unknown value 'step'"},
        {"{\"kind\":\"train\",\"optimizer\":{\"lr\":0.1,\"min_lr\":0.5}," XOR_BODY "}", "optimizer.min_lr", "must be <="},
        {"{\"kind\":\"train\",\"optimizer\":{\"clip_norm\":-1}," XOR_BODY "}", "optimizer.clip_norm", "must be >="},
        {"{\"kind\":\"train\",\"optimizer\":{\"warmup_steps\":-3}," XOR_BODY "}", "optimizer.warmup_steps", "between 0 and"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2],\"dropout\":1.0},\"data\":{\"source\":\"xor\"}}", "model.dropout", "<= 0.95"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2],\"loss\":\"hinge\"},\"data\":{\"source\":\"xor\"}}", "model.loss", "unknown value 'hinge'"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2],\"init\":\"ones\"},\"data\":{\"source\":\"xor\"}}", "model.init", "unknown value 'ones'"},
        {"{\"kind\":\"train\",\"checkpoint_every\":-1," XOR_BODY "}", "checkpoint_every", "between 0 and"},
        {"{\"kind\":\"train\",\"optimizer\":[]," XOR_BODY "}", "optimizer", "must be an object"},
        {"{\"kind\":\"train\",\"batch_size\":0," XOR_BODY "}", "batch_size", "between 1 and"},
        {"{\"kind\":\"train\",\"epochs\":2.5," XOR_BODY "}", "epochs", "must be an integer"},
        {"{\"kind\":\"train\",\"epochs\":1000000," XOR_BODY "}", "epochs", "between 1 and"},
        {"{\"kind\":\"train\",\"log_every\":0," XOR_BODY "}", "log_every", "between 1 and"},
        {"{\"kind\":\"train\",\"log_every\":\"10\"," XOR_BODY "}", "log_every", "must be an integer"},
        {"{\"kind\":\"train\",\"seed\":-1," XOR_BODY "}", "seed", "between 0 and"},
        {"{\"kind\":\"train\",\"device\":\"\"," XOR_BODY "}", "device", "must not be empty"},
        {"{\"kind\":\"train\",\"name\":5," XOR_BODY "}", "name", "must be a string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pgn_error err = parse_err(cases[i].text);
        cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_spec", "%s", cases[i].text);
        cr_assert_str_eq(err.field, cases[i].field, "%s -> field '%s' (%s)", cases[i].text,
                         err.field, err.message);
        cr_assert(strstr(err.message, cases[i].fragment), "%s -> message '%s'", cases[i].text,
                  err.message);
        cr_assert_eq(strncmp(err.message, cases[i].field, strlen(cases[i].field)), 0,
                     "message should start with the field: %s", err.message);
    }
}

Test(spec, device_selection) {
    pgn_device_info list[2] = {0}, out;
    pgn_error err = {0};
    snprintf(list[0].id, sizeof list[0].id, "cpu-00000001");
    list[0].type = PGN_DEVICE_CPU;
    snprintf(list[1].id, sizeof list[1].id, "gpu-00000002");
    list[1].type = PGN_DEVICE_GPU;
    cr_assert_eq(pgn_device_select("auto", list, 2, &out, &err), 0);
    cr_assert_str_eq(out.id, "gpu-00000002");
    cr_assert_eq(pgn_device_select("cpu", list, 2, &out, &err), 0);
    cr_assert_str_eq(out.id, "cpu-00000001");
    cr_assert_eq(pgn_device_select("host", list, 2, &out, &err), 0);
    cr_assert_str_eq(out.id, "host");
    cr_assert_eq(pgn_device_select("cpu-00000001", list, 2, &out, &err), 0);
    cr_assert_eq(pgn_device_select("tpu-9", list, 2, &out, &err), -1);
    cr_assert_str_eq(err.field, "device");
    cr_assert(strstr(err.message, "unknown device 'tpu-9'"), "%s", err.message);
    cr_assert(strstr(err.message, "a device id: host, cpu-00000001, gpu-00000002"), "the ids that exist: %s",
              err.message);
    cr_assert_eq(pgn_device_select("gpu", list, 1, &out, &err), -1);
    cr_assert(strstr(err.message, "no OpenCL gpu device"), "%s", err.message);
    cr_assert_eq(pgn_device_select("auto", list, 0, &out, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "no_device");
}

/* A request names the devices it runs on (engine/device_pick.c): "all" every OpenCL device, any
 * other the one pgn_device_select picks; the host is opened for a run as no device, and a
 * request for one device refuses "all" as pgn_device_select does. */
Test(spec, a_device_request_names_the_devices_it_runs_on) {
    pgn_error err = {0};
    pgn_device_info *listed = NULL, *named = NULL, chosen;
    size_t n_listed = 0, n_named = 0;
    cr_assert_eq(pgn_devices_list(&listed, &n_listed, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_devices_named("all", &named, &n_named, &err), 0, "%s", err.message);
    cr_assert_eq(n_named, n_listed);
    for (size_t i = 0; i < n_named; i++) cr_assert_str_eq(named[i].id, listed[i].id);
    free(named);
    cr_assert_eq(pgn_devices_named("host", &named, &n_named, &err), 0, "%s", err.message);
    cr_assert_eq(n_named, 1);
    cr_assert_str_eq(named[0].id, "host");
    free(named);
    for (size_t i = 0; i < n_listed; i++) {
        cr_assert_eq(pgn_devices_named(listed[i].id, &named, &n_named, &err), 0, "%s", err.message);
        cr_assert_eq(n_named, 1);
        cr_assert_str_eq(named[0].id, listed[i].id);
        free(named);
    }
    cr_assert_eq(pgn_devices_named("tpu-9", &named, &n_named, &err), -1);
    cr_assert(strstr(err.message, "unknown device 'tpu-9'"), "%s", err.message);
    cr_assert_null(named);
    cr_assert_eq(n_named, 0);
    pgn_device *dev = NULL;
    cr_assert_eq(pgn_device_open_named("host", &chosen, &dev, &err), 0, "%s", err.message);
    cr_assert_str_eq(chosen.id, "host");
    cr_assert_null(dev, "the host runs with no device");
    cr_assert_eq(pgn_device_open_named("all", &chosen, &dev, &err), -1);
    cr_assert_str_eq(err.field, "device");
    cr_assert(strstr(err.message, "unknown device 'all'"), "%s", err.message);
    cr_assert_null(dev);
    free(listed);
}

Test(spec, inet_spec_parses_program_and_limits) {
    const char *text = "{\"kind\":\"inet\",\"program\":\"@main = 42\","
                       "\"limits\":{\"max_interactions\":1000,\"timeout_s\":2.5}}";
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    cr_assert_eq(spec.kind, PGN_JOB_INET);
    cr_assert_str_eq(spec.inet.program, "@main = 42");
    cr_assert_eq(spec.inet.max_interactions, 1000);
    cr_assert_eq(spec.inet.timeout_s, 2.5);
    cr_assert_str_eq(spec.device, "auto", "inet jobs go to a device like any other");
    json_t *j = pgn_spec_to_json(&spec);
    pgn_job_spec again;
    cr_assert_eq(pgn_spec_parse(j, &again, &err), 0, "%s", err.message);
    cr_assert_str_eq(again.inet.program, spec.inet.program);
    json_decref(j);
    pgn_spec_free(&again);
    pgn_spec_free(&spec);
}

Test(spec, inet_errors_name_their_field) {
    struct {
        const char *text, *field, *fragment;
    } cases[] = {
        {"{\"kind\":\"inet\"}", "program", "required"},
        {"{\"kind\":\"inet\",\"program\":7}", "program", "must be a string"},
        {"{\"kind\":\"inet\",\"program\":\"@main = (a b)\"}", "program", "line 1, col"},
        {"{\"kind\":\"inet\",\"program\":\"@foo = *\"}", "program", "@main"},
        {"{\"kind\":\"inet\",\"program\":\"@main = *\",\"epochs\":3}", "epochs", "unknown field"},
        {"{\"kind\":\"inet\",\"program\":\"@main = *\",\"limits\":{\"max_nodes\":0}}", "limits.max_nodes", "between"},
        {"{\"kind\":\"inet\",\"program\":\"@main = *\",\"limits\":{\"timeout_s\":-1}}", "limits.timeout_s", "must be >"},
        {"{\"kind\":\"inet\",\"program\":\"@main = *\",\"limits\":{\"steps\":1}}", "limits.steps", "unknown field"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pgn_error err = parse_err(cases[i].text);
        cr_assert_str_eq(err.field, cases[i].field, "%s -> %s (%s)", cases[i].text, err.field, err.message);
        cr_assert(strstr(err.message, cases[i].fragment), "%s -> %s", cases[i].text, err.message);
    }
}

Test(spec, bench_spec_names_suite_cases_and_repeats) {
    const char *text = "{\"kind\":\"bench\",\"suite\":\"mlp-forward\",\"device\":\"all\","
                       "\"cases\":[\"S1\",\"M3\"],\"repeats\":20}";
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    cr_assert_eq(spec.kind, PGN_JOB_BENCH);
    cr_assert_str_eq(spec.bench.suite, "mlp-forward");
    cr_assert_str_eq(spec.device, "all");
    cr_assert_eq(spec.bench.n_cases, 2);
    cr_assert_str_eq(spec.bench.cases[1], "M3");
    cr_assert_eq(spec.bench.repeats, 20);
    json_t *j = pgn_spec_to_json(&spec);
    pgn_job_spec again;
    cr_assert_eq(pgn_spec_parse(j, &again, &err), 0, "%s", err.message);
    cr_assert_eq(again.bench.n_cases, 2);
    json_decref(j);

    struct {
        const char *text, *field, *message;
    } bad[] = {
        {"{\"kind\":\"bench\"}", "suite", "suite: required (a suite name or \"all\")"},
        {"{\"kind\":\"bench\",\"suite\":\"nope\"}", "suite",
         "suite: unknown suite 'nope' (one of: mlp-forward, tensor-micro, gemm, inet, train, gpt, all)"},
        {"{\"kind\":\"bench\",\"suite\":\"gemm\",\"cases\":\"S1\"}", "cases", "cases: must be an array of case ids"},
        {"{\"kind\":\"bench\",\"suite\":\"gemm\",\"cases\":[\"\"]}", "cases[0]", "cases[0]: must be a non-empty string"},
        {"{\"kind\":\"bench\",\"suite\":\"gemm\",\"repeats\":0}", "repeats", NULL},
        {"{\"kind\":\"bench\",\"suite\":\"gemm\",\"epochs\":3}", "epochs", NULL},
        {"{\"kind\":\"train\",\"device\":\"all\"}", "device", "device: \"all\" is only for bench jobs"},
        {"{\"kind\":\"inet\",\"device\":\"all\",\"program\":\"@main = 1\"}", "device",
         "device: \"all\" is only for bench jobs"},
        {"{\"kind\":\"bench\",\"suite\":\"train\",\"cases\":[\"fashion-mlp\",\"xor\"]}", "cases[1]",
         "cases[1]: suite train has no case 'xor' (its cases: cost-xor, cost-fashion, cost-gpt, fashion-mlp)"},
        {"{\"kind\":\"bench\",\"suite\":\"gpt\",\"cases\":[\"generate\",\"gpt2\"]}", "cases[1]",
         "cases[1]: suite gpt has no case 'gpt2' (its cases: char-gpt, generate)"},
        {"{\"kind\":\"inet\",\"program\":\"@main = 1\",\"limits\":{\"timeout_s\":1e-46}}",
         "limits.timeout_s",
         "limits.timeout_s: 1e-46 is 0 as a 32-bit float, which the engine computes with; must be > 0 "
         "(the smallest float above it is 1.4013e-45)"},
        {"{\"kind\":\"bench\",\"name\":\"a\\nb\",\"suite\":\"gemm\"}", "name",
         "name: control character 0x0a at offset 1 is not allowed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(pgn_spec_parse_text(bad[i].text, strlen(bad[i].text), &spec, &err), -1, "%s", bad[i].text);
        cr_assert_str_eq(err.field, bad[i].field, "%s: %s", bad[i].text, err.message);
        if (bad[i].message) cr_assert_str_eq(err.message, bad[i].message);
    }
}

#define GPT_BODY "\"model\":{\"type\":\"gpt\"},\"data\":{\"source\":\"fortunes\"}"

Test(spec, gpt_spec_gets_defaults_and_round_trips) {
    const char *text = "{\"kind\":\"train\"," GPT_BODY ",\"optimizer\":{\"type\":\"adamw\"}}";
    pgn_job_spec a, b;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &a, &err), 0, "%s", err.message);
    cr_assert_eq(a.train.model, PGN_MODEL_GPT);
    cr_assert_eq(a.train.gpt.n_layer, 4);
    cr_assert_eq(a.train.gpt.n_head, 4);
    cr_assert_eq(a.train.gpt.d_model, 128);
    cr_assert_eq(a.train.gpt.context, 64);
    cr_assert(a.train.gpt.tie_embeddings);
    cr_assert_eq(a.train.steps, 1000);
    cr_assert_eq(a.train.eval_every, 100);
    cr_assert_eq(a.train.log_every, 10);
    cr_assert_eq(a.train.eval_windows, 128);
    cr_assert_eq(a.train.data.source, PGN_DATA_FORTUNES);
    json_t *j = pgn_spec_to_json(&a);
    cr_assert_null(json_object_get(j, "epochs"), "a gpt run has steps, not epochs");
    cr_assert_eq(pgn_spec_parse(j, &b, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
    json_decref(j);

    const char *text2 = "{\"kind\":\"train\",\"model\":{\"type\":\"gpt\",\"n_layer\":2,\"n_head\":3,\"d_model\":48,"
                        "\"context\":16,\"tie_embeddings\":false},\"data\":{\"source\":\"text\",\"path\":\"a/b.txt\"},"
                        "\"steps\":50,\"eval_every\":10,\"log_every\":5,\"eval_windows\":8,\"checkpoint_every\":25}";
    cr_assert_eq(pgn_spec_parse_text(text2, strlen(text2), &a, &err), 0, "%s", err.message);
    cr_assert_eq(a.train.gpt.n_head, 3);
    cr_assert_not(a.train.gpt.tie_embeddings);
    cr_assert_str_eq(a.train.data.path, "a/b.txt");
    cr_assert_eq(a.train.checkpoint_every, 25);
    j = pgn_spec_to_json(&a);
    cr_assert_eq(pgn_spec_parse(j, &b, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
    json_decref(j);
}

Test(spec, gpt_errors_name_their_field) {
    struct {
        const char *text, *field, *message;
    } bad[] = {
        {"{\"kind\":\"train\",\"model\":{\"type\":\"gpt\",\"n_head\":3},\"data\":{\"source\":\"fortunes\"}}",
         "model.n_head", "model.n_head: must divide model.d_model (128): 3 does not"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"gpt\",\"layers\":[2,2]},\"data\":{\"source\":\"fortunes\"}}",
         "model.layers", "model.layers: does not apply to model.type \"gpt\""},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,2],\"n_head\":2},\"data\":{\"source\":\"xor\"}}",
         "model.n_head", "model.n_head: does not apply to model.type \"mlp\""},
        {"{\"kind\":\"train\",\"epochs\":3," GPT_BODY "}", "epochs", "epochs: does not apply to model.type \"gpt\""},
        {"{\"kind\":\"train\",\"steps\":3," XOR_BODY "}", "steps", "steps: does not apply to model.type \"mlp\""},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"gpt\"},\"data\":{\"source\":\"xor\"}}", "data.source",
         "data.source: 'xor' is not text: model.type \"gpt\" trains on \"text\" or \"fortunes\""},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[2,2]},\"data\":{\"source\":\"fortunes\"}}",
         "data.source", "data.source: 'fortunes' is text: it trains model.type \"gpt\""},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"gpt\"},\"data\":{\"source\":\"text\"}}", "data.path",
         "data.path: required for source \"text\" (a path relative to the datasets directory)"},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"gpt\"},\"data\":{\"source\":\"text\",\"path\":\"/etc/passwd\"}}",
         "data.path", NULL},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"gpt\",\"context\":0}," "\"data\":{\"source\":\"fortunes\"}}",
         "model.context", NULL},
        {"{\"kind\":\"train\",\"steps\":0," GPT_BODY "}", "steps", NULL},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"gpt\",\"tie_embeddings\":1},\"data\":{\"source\":\"fortunes\"}}",
         "model.tie_embeddings", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pgn_error err = parse_err(bad[i].text);
        cr_assert_str_eq(err.field, bad[i].field, "%s: %s", bad[i].text, err.message);
        if (bad[i].message) cr_assert_str_eq(err.message, bad[i].message);
    }
}

#define DIST(obj) "{\"kind\":\"train\"," XOR_BODY ",\"distributed\":" obj "}"

Test(spec, distributed_spec_gets_defaults_and_round_trips) {
    pgn_job_spec a, b;
    pgn_error err = {0};
    const char *text = DIST("{\"ranks\":2,\"algorithm\":\"diloco\"}");
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &a, &err), 0, "%s", err.message);
    const pgn_dist_spec *d = &a.train.dist;
    cr_assert_eq(d->ranks, 2);
    cr_assert_eq(d->algorithm, PGN_DIST_DILOCO);
    cr_assert_eq(d->inner_steps, 50);
    cr_assert_float_eq(d->outer_lr, 0.7f, 1e-7);
    cr_assert_float_eq(d->outer_momentum, 0.9f, 1e-7);
    cr_assert(d->nesterov);
    cr_assert_eq(d->n_hosts, 0);
    json_t *j = pgn_spec_to_json(&a);
    cr_assert_null(json_object_get(json_object_get(j, "distributed"), "hosts"), "no hosts: this machine");
    cr_assert_eq(pgn_spec_parse(j, &b, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
    json_decref(j);

    text = DIST("{\"ranks\":4,\"algorithm\":\"ddp\",\"hosts\":[\"node-1.lab:2\",\"10.0.0.7\"]}");
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &a, &err), 0, "%s", err.message);
    cr_assert_eq(a.train.dist.algorithm, PGN_DIST_DDP);
    cr_assert_eq(a.train.dist.n_hosts, 2);
    cr_assert_str_eq(a.train.dist.hosts[0], "node-1.lab:2");
    j = pgn_spec_to_json(&a);
    cr_assert_null(json_object_get(json_object_get(j, "distributed"), "inner_steps"), "ddp has no inner steps");
    cr_assert_eq(pgn_spec_parse(j, &b, &err), 0, "%s", err.message);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0);
    json_decref(j);

    text = "{\"kind\":\"train\"," XOR_BODY "}";
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &a, &err), 0, "%s", err.message);
    cr_assert_eq(a.train.dist.ranks, 0, "no distributed object: one process");
    j = pgn_spec_to_json(&a);
    cr_assert_null(json_object_get(j, "distributed"));
    json_decref(j);
}

Test(spec, distributed_errors_name_their_field) {
    struct {
        const char *text, *field, *fragment;
    } bad[] = {
        {DIST("{\"algorithm\":\"ddp\"}"), "distributed.ranks", "required"},
        {DIST("{\"ranks\":0,\"algorithm\":\"ddp\"}"), "distributed.ranks", NULL},
        {DIST("{\"ranks\":2}"), "distributed.algorithm", "required"},
        {DIST("{\"ranks\":2,\"algorithm\":\"allreduce\"}"), "distributed.algorithm", "unknown value 'allreduce'"},
        {DIST("{\"ranks\":2,\"algorithm\":\"diloco\",\"inner_steps\":0}"), "distributed.inner_steps", NULL},
        {DIST("{\"ranks\":2,\"algorithm\":\"diloco\",\"outer_lr\":0}"), "distributed.outer_lr", NULL},
        {DIST("{\"ranks\":2,\"algorithm\":\"diloco\",\"outer_momentum\":1}"), "distributed.outer_momentum", NULL},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"inner_steps\":5}"), "distributed.inner_steps",
         "only applies to \"diloco\""},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"workers\":5}"), "distributed.workers", "unknown field"},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"hosts\":[]}"), "distributed.hosts", "1 to"},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"hosts\":\"a,b\"}"), "distributed.hosts", NULL},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"hosts\":[\"a\",7]}"), "distributed.hosts[1]", "must be a string"},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"hosts\":[\"a b\"]}"), "distributed.hosts[0]", "found ' '"},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"hosts\":[\"-a\"]}"), "distributed.hosts[0]", NULL},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"hosts\":[\"a:0\"]}"), "distributed.hosts[0]", "slots"},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"hosts\":[\"a:x\"]}"), "distributed.hosts[0]", "slots"},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"hosts\":[\"a;rm -rf\"]}"), "distributed.hosts[0]", NULL},
        {DIST("{\"ranks\":5,\"algorithm\":\"ddp\",\"hosts\":[\"a:2\",\"b:2\"]}"), "distributed.ranks",
         "5 ranks, but the hosts offer 4 slots"},
        {DIST("{\"ranks\":2,\"algorithm\":\"ddp\",\"hosts\":[\"localhost:1\"]}"), "distributed.ranks",
         "the hosts offer 1 slot "},
        {DIST("7"), "distributed", NULL},
        {"{\"kind\":\"train\",\"model\":{\"type\":\"gpt\"},\"data\":{\"source\":\"fortunes\"},"
         "\"distributed\":{\"ranks\":2,\"algorithm\":\"ddp\",\"outer_lr\":1}}", "distributed.outer_lr", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pgn_error err = parse_err(bad[i].text);
        cr_assert_str_eq(err.field, bad[i].field, "%s: %s", bad[i].text, err.message);
        if (bad[i].fragment) cr_assert(strstr(err.message, bad[i].fragment), "%s: %s", bad[i].text, err.message);
    }
}

/* Every job of examples/jobs/ is a valid spec (they are what the README and the dashboard's
 * templates point people to); gpt-small is nanoGPT's Shakespeare-character size. */
Test(spec, every_example_job_parses) {
    static const char *const names[] = {"xor", "fashion-mlp", "fashion-linear", "fashion-mlp-ddp", "fashion-mlp-diloco",
                                        "char-gpt", "gpt-small", "bench-mlp-forward"};
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/examples/jobs/%s.json", root ? root : ".", names[i]);
        size_t len;
        char *text = pgn_read_file(path, &len);
        cr_assert_not_null(text, "cannot read %s", path);
        pgn_job_spec spec;
        pgn_error err = {0};
        cr_assert_eq(pgn_spec_parse_text(text, len, &spec, &err), 0, "%s: %s", path, err.message);
        free(text);
        if (!strcmp(names[i], "gpt-small")) {
            const pgn_gpt_spec *g = &spec.train.gpt;
            cr_assert(g->n_layer == 6 && g->n_head == 6 && g->d_model == 384 && g->context == 256);
            cr_assert_eq(spec.train.batch_size, 64);
            cr_assert_eq(spec.train.dropout, 0.0f);
        }
    }
}

Test(spec, a_sleep_spec_round_trips) {
    pgn_job_spec spec;
    pgn_error err;
    const char text[] = "{\"kind\":\"sleep\",\"seconds\":0.25,\"device\":\"host\"}";
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    cr_assert_eq(spec.kind, PGN_JOB_SLEEP);
    cr_assert_float_eq(spec.sleep.seconds, 0.25, 0);
    cr_assert_str_eq(spec.name, "sleep");
    json_t *stored = pgn_spec_to_json(&spec);
    cr_assert_float_eq(json_real_value(json_object_get(stored, "seconds")), 0.25, 0);
    pgn_job_spec again;
    cr_assert_eq(pgn_spec_parse_stored(stored, &again, &err), 0, "%s", err.message);
    cr_assert_float_eq(again.sleep.seconds, 0.25, 0);
    json_decref(stored);
    pgn_spec_free(&spec);
    pgn_spec_free(&again);
    cr_assert_str_eq(pgn_job_kinds_text(false), "train, inet, bench, generate or sleep");
}
