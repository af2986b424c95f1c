/* datasets.h: the files of <data-dir>/datasets/ through the API: uploads streamed to a temporary
 * file, checked (name, size, format, checksum) and renamed into place; the listing of every file
 * there, uploaded or copied in by hand, with digests the store caches; delete; and the check that
 * a submitted spec's datasets exist. Routes are api.c's; the handlers live here. */
#ifndef PGD_DATASETS_H
#define PGD_DATASETS_H

#include "http.h"
#include "store.h"

#include <stdbool.h>
#include <stdint.h>

/* --max-dataset-mb: a full Fashion-MNIST set is 30 MiB gzip'd and 55 MiB plain; a text source is
 * read whole, at most 256 MiB. Larger uploads are refused (413) before they are written. */
#define PGD_DEFAULT_MAX_DATASET_MB 512
#define PGD_MAX_DATASET_MB_LIMIT (1024 * 1024)
/* A name is a file name a spec can write: [A-Za-z0-9._-], not starting with '.', this long. */
#define PGD_DATASET_NAME_MAX 128
/* The request header that carries the body's SHA-256 (64 hex digits) for the server to verify. */
#define PGD_DATASET_SHA256_HEADER "Content-SHA256"

typedef struct pgd_datasets pgd_datasets;

/* The datasets of data_dir (its PGN_DATASETS_SUBDIR, which must exist); uploads above max_bytes
 * are refused. Temporary files a previous process left (it died mid-upload) are removed. */
int pgd_datasets_create(const char *data_dir, pgd_store *store, int64_t max_bytes,
                        pgd_datasets **out, pgn_error *err);
void pgd_datasets_destroy(pgd_datasets *ds);

/* The sink of PUT /api/v1/datasets/{name} (http.h): refused (the token is missing or wrong) makes
 * one that answers at once and keeps nothing; so do a bad name, a declared length over the limit
 * and If-None-Match: * on a name that exists. NULL when out of memory. */
pgd_sink *pgd_datasets_sink_open(pgd_datasets *ds, const pgd_request *req, bool refused);

/* The handlers; the name is the path's last segment (req->path below /api/v1/datasets/). */
enum MHD_Result pgd_datasets_put(pgd_datasets *ds, const pgd_request *req);
enum MHD_Result pgd_datasets_list(pgd_datasets *ds, const pgd_request *req);
enum MHD_Result pgd_datasets_get(pgd_datasets *ds, const pgd_request *req);
enum MHD_Result pgd_datasets_delete(pgd_datasets *ds, const pgd_request *req);

/* Held from checking a spec's datasets to inserting its job, so that a delete or replace cannot
 * slip between them; deletes and replaces hold it from their in-use check to their rename. */
void pgd_datasets_lock(pgd_datasets *ds);
void pgd_datasets_unlock(pgd_datasets *ds);

/* Whether every dataset a train spec names exists: 0, or -1 with an invalid_spec error naming the
 * field and listing the datasets there are (and how to upload one). Caller holds the lock. */
int pgd_datasets_check_spec(pgd_datasets *ds, const pgn_job_spec *spec, pgn_error *err);

/* ---- the store's part (store_datasets.c) ------------------------------------------------- */

/* What is known of a dataset file, valid while its size and mtime are these. */
typedef struct pgd_dataset_meta {
    char name[PGD_DATASET_NAME_MAX * 2];
    int64_t bytes, mtime_ns;
    char sha256[65];
    char format[16];     /* "idx", "idx.gz", "text", or "unknown" */
    json_t *info;        /* owned: idx {"kind","dims"}, text {"chars"}, or {"invalid": message} */
    char created_at[32]; /* when it was uploaded; "" for a file copied in by hand */
} pgd_dataset_meta;

/* name's cached record into *out (*found false when there is none; the caller releases info). */
int pgd_store_dataset_get(pgd_store *store, const char *name, pgd_dataset_meta *out, bool *found,
                          pgn_error *err);
/* Records m (replacing name's record); created_at "" keeps NULL. */
int pgd_store_dataset_put(pgd_store *store, const pgd_dataset_meta *m, pgn_error *err);
int pgd_store_dataset_forget(pgd_store *store, const char *name, pgn_error *err);
/* [{"id","state","data"}] of the queued and running train jobs: the datasets in use. */
int pgd_store_datasets_in_use(pgd_store *store, json_t **out, pgn_error *err);

#endif
