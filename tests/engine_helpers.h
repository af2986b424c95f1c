/* engine_helpers.h: shared set-up for engine unit tests: the first OpenCL device (tests fail,
 * not skip, without one: the test command installs pocl) and seeded test data. */
#ifndef PGN_TEST_ENGINE_HELPERS_H
#define PGN_TEST_ENGINE_HELPERS_H

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
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

static inline int test_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes a test's temporary folder and everything under it. */
static inline void test_remove_tree(const char *dir) { nftw(dir, test_remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Host and device results agree when their bits do, a NaN matching any NaN: IEEE 754 leaves a
 * produced NaN's sign and payload open (docs/architecture.md, Determinism). */
static inline bool test_same_bits(uint32_t a, uint32_t b) {
    return a == b || (pgn_float(a) != pgn_float(a) && pgn_float(b) != pgn_float(b));
}

/* Values in [-scale, scale) from the counter RNG, so every run sees the same data. */
static inline float *test_random(size_t n, uint64_t seed, float scale) {
    float *v = malloc(n * sizeof *v);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) v[i] = (pgn_rand_unit(seed, 99, i) * 2.0f - 1.0f) * scale;
    return v;
}

/* The same data on the host and on a device: an op run on both sides must give the same bits. */
typedef struct {
    pgn_tensor h, d;
} pair;

/* Both sides (rows, cols), holding data when it is not NULL. */
static inline void pair_init(pair *p, pgn_device *dev, int rows, int cols, const void *data) {
    pgn_error err = {0};
    cr_assert_eq(pgn_tensor_init(&p->h, NULL, rows, cols, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_init(&p->d, dev, rows, cols, &err), 0, "%s", err.message);
    if (!data) return;
    size_t n = (size_t)rows * cols;
    cr_assert_eq(pgn_tensor_write(&p->h, data, n, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_tensor_write(&p->d, data, n, &err), 0, "%s", err.message);
}

/* Both sides holding test_random(seed, scale) values. */
static inline void pair_random(pair *p, pgn_device *dev, int rows, int cols, uint64_t seed, float scale) {
    float *v = test_random((size_t)rows * cols, seed, scale);
    pair_init(p, dev, rows, cols, v);
    free(v);
}

static inline void pair_release(pair *p) {
    pgn_tensor_release(&p->h);
    pgn_tensor_release(&p->d);
}

#endif
