/* test_cost.c: the cost model (engine/bench/cost.c): rates from what benchmark runs measured,
 * fallbacks from a device's properties, and job estimates that make small jobs cheap and big
 * ones expensive. */
#include <criterion/criterion.h>
#include <string.h>

#include "bench/bench.h"
#include "paragon.h"

static pgn_device_info cpu_info(void) {
    pgn_device_info d = {.type = PGN_DEVICE_CPU, .compute_units = 2, .max_clock_mhz = 2600};
    strcpy(d.id, "cpu-test");
    return d;
}

Test(cost, rates_come_from_what_was_measured_and_fall_back_to_properties) {
    pgn_device_info d = cpu_info();
    pgn_device_rates est, r;
    pgn_device_rates_estimate(&d, &est);
    cr_assert(!est.measured);
    cr_assert_float_eq(est.gflops, 2 * 2.6 * 32, 1e-9);
    cr_assert_float_eq(est.mips, 2 * 80, 1e-9);
    cr_assert_float_eq(est.launch_us, 35, 1e-9);

    pgn_measured_rates all = {.device = "cpu-test", .gflops = 380, .mips = 200, .launch_us = 4.5};
    pgn_device_rates_measured(&d, &all, &r);
    cr_assert(r.measured);
    cr_assert_float_eq(r.gflops, 380.0, 1e-9);
    cr_assert_float_eq(r.mips, 200.0, 1e-9);
    cr_assert_float_eq(r.launch_us, 4.5, 1e-9);

    /* a reducer rate alone: measured, the rest estimated */
    pgn_measured_rates inet = {.device = "cpu-test", .mips = 200};
    pgn_device_rates_measured(&d, &inet, &r);
    cr_assert(r.measured);
    cr_assert_float_eq(r.gflops, est.gflops, 1e-9);
    cr_assert_float_eq(r.launch_us, est.launch_us, 1e-9);

    /* a launch cost alone does not make the device measured */
    pgn_measured_rates launch = {.device = "cpu-test", .launch_us = 4.5};
    pgn_device_rates_measured(&d, &launch, &r);
    cr_assert(!r.measured);
    cr_assert_float_eq(r.launch_us, 4.5, 1e-9);

    /* nothing measured: the estimate */
    pgn_measured_rates none = {.device = "cpu-test"};
    pgn_device_rates_measured(&d, &none, &r);
    cr_assert(!r.measured);
    cr_assert_float_eq(r.gflops, est.gflops, 1e-9);
    cr_assert_float_eq(r.mips, est.mips, 1e-9);
}

Test(cost, work_units_have_names_that_read_back) {
    for (pgn_work_unit u = PGN_WORK_NONE; u <= PGN_WORK_INTERACTIONS; u++) {
        pgn_work_unit back = PGN_WORK_NONE;
        cr_assert_eq(pgn_work_unit_parse(pgn_work_unit_name(u), &back), 0, "%s", pgn_work_unit_name(u));
        cr_assert_eq(back, u);
    }
    pgn_work_unit u;
    cr_assert_eq(pgn_work_unit_parse("flops", &u), -1);
    cr_assert_eq(pgn_work_unit_parse(NULL, &u), -1);
}

static pgn_job_spec parse(const char *text) {
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), 0, "%s", err.message);
    return spec;
}

Test(cost, estimates_scale_with_the_work_and_the_device) {
    pgn_job_spec xor = parse("{\"kind\":\"train\",\"data\":{\"source\":\"xor\"},\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},"
                             "\"batch_size\":4,\"epochs\":100}");
    pgn_job_spec mnist = parse("{\"kind\":\"train\",\"data\":{\"source\":\"fashion-mnist\"},"
                               "\"model\":{\"type\":\"mlp\",\"layers\":[784,256,256,10]},\"batch_size\":128,\"epochs\":5}");
    pgn_device_rates slow = {.gflops = 10, .mips = 50, .launch_us = 1}, fast = {.gflops = 10000, .mips = 500, .launch_us = 20};
    pgn_job_estimate a, b;
    pgn_job_estimate_on(&mnist, &slow, &a);
    cr_assert_eq(a.unit, PGN_WORK_FLOP);
    cr_assert_str_eq(pgn_work_unit_name(a.unit), "flop");
    /* 6 * (784*256 + 256*256 + 256*10) FLOPs a sample, 60,000 samples, 5 epochs, and each
     * epoch's evaluation of the 10,000 test samples (the forward: a third) */
    cr_assert_float_eq(a.work, 6.0 * (784 * 256 + 256 * 256 + 256 * 10) * (60000 + 10000 / 3.0) * 5, 1.0);
    pgn_job_estimate_on(&mnist, &fast, &b);
    cr_assert_lt(b.seconds, a.seconds, "a big job is faster on the fast device");
    /* XOR: 100 steps of 3 tiny layers: launch-bound, so the device with cheap launches wins */
    pgn_job_estimate_on(&xor, &slow, &a);
    pgn_job_estimate_on(&xor, &fast, &b);
    cr_assert_lt(a.seconds, b.seconds, "a tiny job is faster where launches are cheap: %g vs %g", a.seconds, b.seconds);

    pgn_job_spec inet = parse("{\"kind\":\"inet\",\"program\":\"@main = 1\"}");
    pgn_job_estimate_on(&inet, &slow, &a);
    pgn_job_estimate_on(&inet, &fast, &b);
    cr_assert_eq(a.unit, PGN_WORK_INTERACTIONS);
    cr_assert_str_eq(pgn_work_unit_name(a.unit), "interactions");
    cr_assert_lt(b.seconds, a.seconds);
    pgn_spec_free(&inet);
}

/* Parameters and device bytes as train.c allocates them: weights (with the GEMM's packed copy),
 * gradients, optimizer moments, per-layer batch buffers and both datasets. */
Test(cost, memory_estimate_counts_parameters_state_batch_and_data) {
    pgn_job_spec sgd = parse("{\"kind\":\"train\",\"data\":{\"source\":\"fashion-mnist\"},"
                             "\"model\":{\"type\":\"mlp\",\"layers\":[784,256,10]},\"batch_size\":100,"
                             "\"optimizer\":{\"type\":\"sgd\",\"lr\":0.1}}");
    const double p = 784.0 * 256 + 256 + 256.0 * 10 + 10;
    cr_assert_eq(pgn_train_param_count(&sgd.train), (uint64_t)p);
    pgn_memory_estimate m;
    pgn_job_memory_estimate(&sgd, &m);
    cr_assert_eq(m.n_params, (uint64_t)p);
    cr_assert_float_eq(m.params, p * 4 * 2, 0.5);
    cr_assert_float_eq(m.gradients, p * 4, 0.5);
    cr_assert_float_eq(m.optimizer, 0, 0.5, "plain SGD keeps no state");
    cr_assert_float_eq(m.activations, 4.0 * 100 * (784 + 256 + 10) * 4, 0.5);
    cr_assert(m.dataset_known);
    cr_assert_float_eq(m.dataset, (60000.0 + 10000) * (784 + 2) * 4, 0.5);
    cr_assert_float_eq(m.total, m.params + m.gradients + m.optimizer + m.activations + m.dataset, 0.5);

    pgn_job_spec adam = parse("{\"kind\":\"train\",\"data\":{\"source\":\"xor\"},"
                              "\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},\"optimizer\":{\"type\":\"adam\"}}");
    pgn_job_memory_estimate(&adam, &m);
    cr_assert_float_eq(m.optimizer, (2 * 8 + 8 + 8 * 2 + 2) * 4.0 * 2, 0.5, "two moments");
    pgn_job_spec momentum = parse("{\"kind\":\"train\",\"data\":{\"source\":\"xor\"},"
                                  "\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},"
                                  "\"optimizer\":{\"type\":\"sgd\",\"momentum\":0.9}}");
    pgn_job_memory_estimate(&momentum, &m);
    cr_assert_float_eq(m.optimizer, (2 * 8 + 8 + 8 * 2 + 2) * 4.0, 0.5, "one momentum buffer");

    /* a distributed job's ranks each hold all of it, and the collectives' buffers; on this machine
     * (no hosts) all its ranks */
    pgn_job_spec diloco = parse("{\"kind\":\"train\",\"data\":{\"source\":\"xor\"},"
                                "\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},\"optimizer\":{\"type\":\"adam\"},"
                                "\"distributed\":{\"ranks\":3,\"algorithm\":\"diloco\"}}");
    pgn_job_memory_estimate(&diloco, &m);
    const double q = 2 * 8 + 8 + 8 * 2 + 2;
    cr_assert_eq(m.ranks_here, 3);
    cr_assert_float_eq(m.distributed, q * 4 * (1 + 3 + 3), 0.5, "sent, 3 received, theta, momentum, own");
    cr_assert_float_eq(m.total, 3 * (m.params + m.gradients + m.optimizer + m.activations + m.dataset + m.distributed),
                       0.5);
    pgn_job_spec spread = parse("{\"kind\":\"train\",\"data\":{\"source\":\"xor\"},"
                                "\"model\":{\"type\":\"mlp\",\"layers\":[2,8,2]},"
                                "\"distributed\":{\"ranks\":3,\"algorithm\":\"ddp\",\"hosts\":[\"a\",\"b\",\"c\"]}}");
    pgn_job_memory_estimate(&spread, &m);
    cr_assert_eq(m.ranks_here, 1, "on other machines: one rank's share is what a machine holds");
    cr_assert_float_eq(m.distributed, q * 4 * (1 + 3), 0.5);

    /* idx data is sized only once read: no guess */
    pgn_job_spec idx = parse("{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[784,10]},"
                             "\"data\":{\"source\":\"idx\",\"train_images\":\"a\",\"train_labels\":\"b\","
                             "\"test_images\":\"c\",\"test_labels\":\"d\"}}");
    pgn_job_memory_estimate(&idx, &m);
    cr_assert(!m.dataset_known);
    cr_assert_float_eq(m.dataset, 0, 0.5);

    /* 65536 * 65536 weights: past 4G, counted without overflow */
    pgn_job_spec wide = parse("{\"kind\":\"train\",\"data\":{\"source\":\"xor\"},"
                              "\"model\":{\"type\":\"mlp\",\"layers\":[2,65536,65536,2]}}");
    cr_assert_eq(pgn_train_param_count(&wide.train),
                 2ull * 65536 + 65536 + 65536ull * 65536 + 65536 + 65536ull * 2 + 2);
    pgn_job_spec inet = parse("{\"kind\":\"inet\",\"program\":\"@main = 1\"}");
    pgn_job_memory_estimate(&inet, &m);
    cr_assert_float_eq(m.total, 0, 0.5, "only train jobs are estimated");
    pgn_spec_free(&inet);
}

/* With what the cost suite measured: the run's setup, the data set's loading (both files read
 * whole, whatever train_samples keeps), each epoch's steps and evaluation batches at a step's
 * launch cost, and the FLOPs (of the samples kept) at the MLP rate. */
Test(cost, a_train_estimate_counts_setup_loading_launches_and_flops_as_measured) {
    pgn_job_spec linear = parse("{\"kind\":\"train\",\"data\":{\"source\":\"fashion-mnist\",\"train_samples\":320,"
                                "\"test_samples\":64},\"model\":{\"type\":\"mlp\",\"layers\":[784,10]},"
                                "\"batch_size\":32,\"epochs\":20}");
    pgn_device_rates r = {.gflops = 500, .launch_us = 5,
                          .train = {.step_launch_us = 12, .mlp_gflops = 100, .mlp_setup_s = 0.02, .load_mbps = 110,
                                    .gpt_gflops = 50, .gpt_setup_s = 0.3}};
    pgn_job_estimate e;
    pgn_job_estimate_on(&linear, &r, &e);
    double per_sample = 6.0 * 784 * 10;
    cr_assert_float_eq(e.work, per_sample * (320 + 64 / 3.0) * 20, 1e-3, "the samples kept, not 60,000");
    double launches = (10 * PGN_MLP_STEP_LAUNCHES(1) + 2 * PGN_MLP_EVAL_LAUNCHES(1)) * 20;
    cr_assert_float_eq(e.launches, launches, 1e-9);
    double load = 70000.0 * 784 / 110e6;
    cr_assert_float_eq(e.seconds, 0.02 + load + e.work / 100e9 + launches * 12e-6, 1e-12);

    /* not measured: the GEMM rate and the queued launch cost, no setup, no loading */
    pgn_device_rates general = {.gflops = 500, .launch_us = 5};
    pgn_job_estimate_on(&linear, &general, &e);
    cr_assert_float_eq(e.seconds, e.work / 500e9 + launches * 5e-6, 1e-12);

    /* what the job shows of the rates: those its estimate used */
    pgn_device_rates used = r;
    pgn_device_rates_for(&linear, &used);
    cr_assert_eq(used.gflops, 100);
    cr_assert_eq(used.launch_us, 12);
    used = general;
    pgn_device_rates_for(&linear, &used);
    cr_assert(used.gflops == 500 && used.launch_us == 5);

    /* a gpt: its steps and its evaluations (every eval_every steps, the last at the end), each
     * evaluation batch a forward (a third of a step), its kernels as the engine queues them */
    pgn_job_spec gpt = parse("{\"kind\":\"train\",\"data\":{\"source\":\"fortunes\"},\"model\":{\"type\":\"gpt\","
                             "\"n_layer\":4,\"n_head\":4,\"d_model\":128,\"context\":64},\"batch_size\":32,"
                             "\"steps\":250,\"eval_every\":100,\"eval_windows\":64,"
                             "\"optimizer\":{\"type\":\"adamw\",\"clip_norm\":1.0}}");
    pgn_job_estimate_on(&gpt, &r, &e);
    double steps = 250 + 3 * 2 / 3.0; /* evaluations at 100, 200 and 250, of two batches each */
    cr_assert_float_eq(e.work, pgn_train_flops_per_sample(&gpt.train) * 32 * steps, 1.0);
    cr_assert_float_eq(e.launches, PGN_GPT_STEP_LAUNCHES(4, true) * steps, 1e-9);
    cr_assert_eq(PGN_GPT_STEP_LAUNCHES(4, true), 163, "char-gpt.json's step, as the engine counted it");
    cr_assert_float_eq(e.seconds, 0.3 + e.work / 50e9 + e.launches * 12e-6, 1e-12);
    used = r;
    pgn_device_rates_for(&gpt, &used);
    cr_assert_eq(used.gflops, 50);
    pgn_spec_free(&linear);
    pgn_spec_free(&gpt);
}
