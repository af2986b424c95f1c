/* idx.h: the idx file reader (MNIST's format) that data.c loads real datasets with. Shared with
 * tests/test_data.c; not part of the public API. */
#ifndef PGN_IDX_H
#define PGN_IDX_H

#include <stdint.h>

#include "paragon.h"

/* Header sanity limits, checked before anything is allocated from the header's numbers. */
#define PGN_IDX_MAX_DIM 4096         /* rows and cols of one image */
#define PGN_IDX_MAX_ITEMS 10000000   /* images or labels in one file */
#define PGN_IDX_MAX_VALUES (1L << 30) /* pixels in one file: 4 GiB as float32 */

/* Reads an idx3 unsigned-byte image file (plain or gzip) into *x: n rows of rows*cols floats,
 * pixel / 255 so values lie in [0, 1]. Ownership: *x is malloc'd, the caller frees it.
 * Errors (code "data") name the file and what is wrong with it, and never quote the bytes of a
 * file that does not begin with the idx magic; field is copied into err->field and prefixes the
 * message when non-empty. */
int pgn_idx_read_images(const char *path, const char *field, float **x, int *n, int *rows,
                        int *cols, pgn_error *err);

/* Reads an idx1 unsigned-byte label file (plain or gzip) into *y (int32, malloc'd, caller frees)
 * and the largest label into *max_label. Errors as for images. */
int pgn_idx_read_labels(const char *path, const char *field, int32_t **y, int *n, int *max_label,
                        pgn_error *err);

#endif
