/* test_profile.c: device profiles (engine/profile.c): what a device's type and limits give by
 * default, where each value came from, the kernel-family override (PARAGON_KERNELS), a family
 * this build cannot run refused naming the device, and an opened device carrying its profile. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine_helpers.h"

static pgn_device_info info_of(pgn_device_type type, unsigned cus, unsigned max_group) {
    pgn_device_info d = {.type = type, .compute_units = cus, .max_work_group = max_group};
    snprintf(d.id, sizeof d.id, "%s-test", pgn_device_type_name(type));
    return d;
}

static void clean_env(void) { unsetenv("PARAGON_KERNELS"); }
TestSuite(profile, .init = clean_env, .fini = clean_env);

Test(profile, a_devices_type_and_limits_give_its_defaults) {
    pgn_device_profile p;
    pgn_device_info cpu = info_of(PGN_DEVICE_CPU, 2, 4096);
    pgn_device_profile_default(&cpu, &p);
    cr_assert_eq(p.dev_class, PGN_CLASS_CPU);
    cr_assert(p.host_memory && p.coherent);
    for (int g = 0; g < PGN_OPS_COUNT; g++) {
        cr_assert_eq(p.family[g], PGN_FAMILY_CPU);
        cr_assert_eq(p.family_from[g], PGN_FROM_DEFAULT);
    }
    cr_assert_str_eq(pgn_gemm_tile_name(p.gemm_tile), "8x32");
    cr_assert_eq(p.inet_workers, 2, "one worker a compute unit");
    cr_assert_eq(p.inet_local, 1, "in work-groups of one");
    cr_assert_eq(p.inet_first_budget, 1u << 22);

    pgn_device_info gpu = info_of(PGN_DEVICE_GPU, 132, 1024);
    pgn_device_profile_default(&gpu, &p);
    cr_assert_eq(p.dev_class, PGN_CLASS_GPU);
    cr_assert(!p.host_memory && !p.coherent);
    cr_assert_eq(p.inet_workers, 132 * 64);
    cr_assert_eq(p.inet_local, 64);
    cr_assert_eq(p.inet_first_budget, 1u << 14);
    gpu.max_work_group = 32; /* a group no larger than the device allows */
    pgn_device_profile_default(&gpu, &p);
    cr_assert_eq(p.inet_local, 32);

    pgn_device_info host;
    pgn_device_info_host(&host);
    pgn_device_profile_default(&host, &p);
    cr_assert_eq(p.dev_class, PGN_CLASS_HOST);
    cr_assert(!p.host_memory, "the host reference is no device with memory of its own");

    /* "auto" takes the first device of the best rank: a GPU before a CPU */
    pgn_device_info list[2] = {cpu, gpu}, chosen;
    pgn_error err = {0};
    cr_assert_eq(pgn_device_select("auto", list, 2, &chosen, &err), 0, "%s", err.message);
    cr_assert_str_eq(chosen.id, gpu.id);
    cr_assert_eq(pgn_device_select("auto", list, 1, &chosen, &err), 0, "%s", err.message);
    cr_assert_str_eq(chosen.id, cpu.id);
}

Test(profile, the_kernel_family_override_says_where_it_came_from) {
    pgn_device_info cpu = info_of(PGN_DEVICE_CPU, 2, 4096);
    pgn_device_profile p;
    pgn_error err = {0};
    cr_assert_eq(pgn_device_profile_of(&cpu, "cpu", &p, &err), 0, "%s", err.message);
    cr_assert_eq(p.family[PGN_OPS_GEMM], PGN_FAMILY_CPU);
    cr_assert_eq(p.family_from[PGN_OPS_INET], PGN_FROM_OVERRIDE);
    setenv("PARAGON_KERNELS", "cpu", 1);
    cr_assert_eq(pgn_device_profile_of(&cpu, NULL, &p, &err), 0, "%s", err.message);
    cr_assert_eq(p.family_from[PGN_OPS_ROWS], PGN_FROM_OVERRIDE);
    setenv("PARAGON_KERNELS", "auto", 1);
    cr_assert_eq(pgn_device_profile_of(&cpu, NULL, &p, &err), 0, "%s", err.message);
    cr_assert_eq(p.family_from[PGN_OPS_ROWS], PGN_FROM_DEFAULT);
    /* a family that is no family: a clear error */
    setenv("PARAGON_KERNELS", "fpga", 1);
    cr_assert_eq(pgn_device_profile_of(&cpu, NULL, &p, &err), -1);
    cr_assert_str_eq(err.field, "PARAGON_KERNELS");
    cr_assert(strstr(err.message, "'fpga' is not a kernel family (auto, cpu or gpu)"), "%s", err.message);
    /* the gpu family on a CPU: each group that has it built runs it, the others keep cpu, and
     * the GEMM takes the gpu family's default shape */
    cr_assert_eq(pgn_device_profile_of(&cpu, "gpu", &p, &err), 0, "%s", err.message);
    cr_assert_eq(p.family[PGN_OPS_GEMM], PGN_FAMILY_GPU);
    cr_assert_eq(p.family_from[PGN_OPS_GEMM], PGN_FROM_OVERRIDE);
    cr_assert_eq(pgn_gemm_tile_shape_of(p.gemm_tile)->family, PGN_FAMILY_GPU);
    cr_assert_str_eq(pgn_gemm_tile_name(p.gemm_tile), "64x64k16");
    for (int g = 0; g < PGN_OPS_COUNT; g++) {
        bool built = false;
        for (int k = 0; k < PGN_KERNEL_COUNT; k++)
            built |= pgn_kernel_family_of((pgn_kernel_id)k) == PGN_FAMILY_GPU && (int)pgn_kernel_group_of((pgn_kernel_id)k) == g;
        cr_assert_eq(p.family[g], built ? PGN_FAMILY_GPU : PGN_FAMILY_CPU, "%s", pgn_ops_group_name((pgn_ops_group)g));
        cr_assert_eq(p.family_from[g], built ? PGN_FROM_OVERRIDE : PGN_FROM_DEFAULT);
    }
    /* a GPU runs the gpu family by default where it is built */
    unsetenv("PARAGON_KERNELS");
    pgn_device_info gpu = info_of(PGN_DEVICE_GPU, 132, 1024);
    cr_assert_eq(pgn_device_profile_of(&gpu, NULL, &p, &err), 0, "%s", err.message);
    cr_assert_eq(p.family[PGN_OPS_GEMM], PGN_FAMILY_GPU);
    cr_assert_eq(p.family_from[PGN_OPS_GEMM], PGN_FROM_DEFAULT);
    cr_assert_eq(pgn_device_profile_of(&gpu, "cpu", &p, &err), 0, "%s", err.message);
    cr_assert_eq(p.family[PGN_OPS_GEMM], PGN_FAMILY_CPU);
    cr_assert_str_eq(pgn_gemm_tile_name(p.gemm_tile), "8x32");

    json_t *j = pgn_device_profile_json(&(pgn_device_profile){0});
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(j, "families"), "inet"),
                                                       "from")),
                     "default");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "gemm"), "tile")), "8x32");
    json_decref(j);
}

/* An opened device carries its profile; a tile set on it says where it came from. */
Test(profile, an_opened_device_carries_its_profile) {
    pgn_device *dev = test_open_cl_device();
    const pgn_device_profile *p = pgn_device_get_profile(dev);
    pgn_device_profile want;
    pgn_device_profile_default(pgn_device_get_info(dev), &want);
    cr_assert_eq(p->inet_workers, want.inet_workers);
    cr_assert_eq(p->family[PGN_OPS_GEMM], want.family[PGN_OPS_GEMM]);
    pgn_error err = {0};
    cr_assert_eq(pgn_gemm_tile_set(dev, 1, PGN_FROM_TUNING, &err), 0, "%s", err.message);
    cr_assert_eq(p->gemm_tile, 1);
    cr_assert_eq(p->gemm_tile_from, PGN_FROM_TUNING);
    pgn_device_close(dev);
}

/* Each entry of the kernel list names its family; a device builds the cpu family's program
 * (which holds the kernels every family shares) and the other families its profile runs (one
 * program each, holding exactly that family's kernels), and nothing else. */
static void assert_builds_what_it_runs(void) {
    pgn_device *dev = test_open_cl_device();
    const pgn_device_profile *p = pgn_device_get_profile(dev);
    for (int f = 0; f < PGN_FAMILY_COUNT; f++) {
        bool runs = f == PGN_FAMILY_CPU;
        for (int g = 0; g < PGN_OPS_COUNT; g++) runs |= p->family[g] == (pgn_kernel_family)f;
        cr_assert_eq(dev->programs[f] != NULL, runs, "the %s family's program", pgn_kernel_family_name(f));
        for (int k = 0; k < PGN_KERNEL_COUNT; k++)
            if (pgn_kernel_family_of((pgn_kernel_id)k) == (pgn_kernel_family)f)
                cr_assert_eq(dev->kernels[k] != NULL, runs, "%s", pgn_kernel_name((pgn_kernel_id)k));
    }
    pgn_device_close(dev);
}

Test(profile, a_device_builds_the_families_its_profile_runs) {
    assert_builds_what_it_runs(); /* pocl: the cpu family alone */
    setenv("PARAGON_KERNELS", "gpu", 1);
    assert_builds_what_it_runs(); /* the gpu family's GEMM beside the cpu family's program */
}
