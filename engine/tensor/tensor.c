/* tensor.c: device tensors: allocation on the host or in an OpenCL buffer, upload, download.
 * Elements are 4 bytes (float32, or int32 for labels and predictions). */
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"

#define PGN_ELEM_SIZE 4

static void scratch_release(pgn_device *dev, void *data) {
    pgn_tensor_scratch *sc = data;
    pgn_device_release_buffer(dev, sc->gemm);
    pgn_device_release_buffer(dev, sc->reduce);
    free(sc);
}

pgn_tensor_scratch *pgn_tensor_scratch_of(pgn_device *dev, pgn_error *err) {
    if (!dev->part[PGN_PART_TENSOR]) {
        pgn_tensor_scratch *sc = calloc(1, sizeof *sc);
        if (!sc) {
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory");
            return NULL;
        }
        dev->part[PGN_PART_TENSOR] = sc;
        dev->part_release[PGN_PART_TENSOR] = scratch_release;
    }
    return dev->part[PGN_PART_TENSOR];
}

int pgn_tensor_init(pgn_tensor *t, pgn_device *dev, int rows, int cols, pgn_error *err) {
    memset(t, 0, sizeof *t);
    if (rows <= 0 || cols <= 0) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "tensor shape (%d, %d) must be positive", rows, cols);
        return -1;
    }
    t->dev = dev;
    t->rows = rows;
    t->cols = cols;
    size_t bytes = pgn_tensor_count(t) * PGN_ELEM_SIZE;
    if (!dev) {
        t->host = calloc(pgn_tensor_count(t), PGN_ELEM_SIZE);
        if (!t->host) {
            pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate %zu bytes on the host",
                          bytes);
            return -1;
        }
        return 0;
    }
    cl_int st;
    t->mem = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, bytes, NULL, &st);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "cannot allocate %zu bytes on %s: %s", bytes,
                      dev->info.id, pgn_cl_status_name(st));
        t->mem = NULL;
        return -1;
    }
    return pgn_tensor_fill_zero(t, err);
}

void pgn_tensor_release(pgn_tensor *t) {
    if (!t) return;
    if (!t->view) free(t->host);
    if (t->mem) pgn_device_release_buffer(t->dev, t->mem);
    memset(t, 0, sizeof *t);
}

static int check_count(const pgn_tensor *t, size_t count, pgn_error *err) {
    if (count > pgn_tensor_count(t)) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "transfer of %zu elements exceeds tensor of %zu",
                      count, pgn_tensor_count(t));
        return -1;
    }
    return 0;
}

int pgn_tensor_write(pgn_tensor *t, const void *src, size_t count, pgn_error *err) {
    if (check_count(t, count, err)) return -1;
    if (!t->dev) {
        memcpy(t->host, src, count * PGN_ELEM_SIZE);
        return 0;
    }
    return pgn_device_write(t->dev, t->mem, 0, count * PGN_ELEM_SIZE, src, true, err);
}

int pgn_tensor_read(const pgn_tensor *t, void *dst, size_t count, pgn_error *err) {
    if (check_count(t, count, err)) return -1;
    if (!t->dev) {
        memcpy(dst, t->host, count * PGN_ELEM_SIZE);
        return 0;
    }
    cl_int st = clEnqueueReadBuffer(t->dev->queue, t->mem, CL_TRUE, 0, count * PGN_ELEM_SIZE, dst,
                                    0, NULL, NULL);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_DEVICE, "", "download from %s failed: %s", t->dev->info.id,
                      pgn_cl_status_name(st));
        return -1;
    }
    return 0;
}

int pgn_tensor_fill_zero(pgn_tensor *t, pgn_error *err) {
    if (!t->dev) {
        memset(t->host, 0, pgn_tensor_count(t) * PGN_ELEM_SIZE);
        return 0;
    }
    return pgn_device_fill_u32(t->dev, t->mem, 0, pgn_tensor_count(t) * PGN_ELEM_SIZE, 0, err);
}

size_t pgn_tensor_view_align(const pgn_device *dev) {
    size_t bytes = dev && dev->align_bytes > 64 ? dev->align_bytes : 64; /* a cache line */
    return bytes / PGN_ELEM_SIZE;
}

int pgn_tensor_share(pgn_tensor *t, pgn_tensor *parent, pgn_error *err) {
    *t = *parent;
    t->view = true;
    if (t->mem && clRetainMemObject(t->mem) != CL_SUCCESS) {
        memset(t, 0, sizeof *t);
        pgn_error_set(err, PGN_E_DEVICE, "", "sharing a buffer on %s failed", parent->dev->info.id);
        return -1;
    }
    return 0;
}

int pgn_tensor_view(pgn_tensor *t, pgn_tensor *parent, size_t offset, int rows, int cols,
                    pgn_error *err) {
    memset(t, 0, sizeof *t);
    size_t count = (size_t)rows * cols;
    if (rows <= 0 || cols <= 0 || offset + count > pgn_tensor_count(parent) ||
        offset % pgn_tensor_view_align(parent->dev)) {
        pgn_error_set(err, PGN_E_INTERNAL, "", "tensor view (%d, %d) at %zu does not fit or align",
                      rows, cols, offset);
        return -1;
    }
    t->dev = parent->dev;
    t->rows = rows;
    t->cols = cols;
    t->view = true;
    if (!parent->dev) {
        t->host = (char *)parent->host + offset * PGN_ELEM_SIZE;
        return 0;
    }
    cl_buffer_region region = {offset * PGN_ELEM_SIZE, count * PGN_ELEM_SIZE};
    cl_int st;
    t->mem = clCreateSubBuffer(parent->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                               &region, &st);
    if (st != CL_SUCCESS) {
        pgn_error_set(err, PGN_E_DEVICE, "", "sub-buffer on %s failed: %s", parent->dev->info.id,
                      pgn_cl_status_name(st));
        t->mem = NULL;
        return -1;
    }
    return 0;
}
