/* engine_helpers.h: shared set-up for engine unit tests: the first OpenCL device (tests fail,
 * not skip, without one: the test command installs pocl) and seeded test data. */
#ifndef PGN_TEST_ENGINE_HELPERS_H
#define PGN_TEST_ENGINE_HELPERS_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "tensor/tensor.h"
#include "pgn_math.h"

static inline pgn_device *test_open_cl_device(void) {
    pgn_error err = {0};
    pgn_device_info *list = NULL, info;
    size_t n = 0;
    cr_assert_eq(pgn_devices_list(&list, &n, &err), 0, "%s", err.message);
    cr_assert_gt(n, 0, "no OpenCL device: install pocl-opencl-icd (scripts/install-deps.sh)");
    cr_assert_eq(pgn_device_select("auto", list, n, &info, &err), 0, "%s", err.message);
    free(list);
    pgn_device *dev = NULL;
    cr_assert_eq(pgn_device_open(&info, &dev, &err), 0, "%s", err.message);
    return dev;
}

/* Values in [-scale, scale) from the counter RNG, so every run sees the same data. */
static inline float *test_random(size_t n, uint64_t seed, float scale) {
    float *v = malloc(n * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) v[i] = (pgn_rand_unit(seed, 99, i) * 2.0f - 1.0f) * scale;
    return v;
}

#endif
