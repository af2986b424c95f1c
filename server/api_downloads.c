/* api_downloads.c: a train job's files through the API: its checkpoint as it is and its weights
 * alone (as PyTorch loads them), each served only once it passes the engine's checks, and only
 * a plain file this job wrote, opened below the data dir without following a link. */
#include "api_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Opens <data dir>/jobs/<id>/<name> for reading, never through a link: each directory below
 * the data dir is opened with O_NOFOLLOW, then the file, which must be a regular file (a link
 * planted there could otherwise serve /etc/passwd). Returns the fd with *st, or -1 with errno
 * (ENOENT for missing, ELOOP/ENOTDIR/EINVAL for something that is not a plain file there). */
int api_open_job_file(const pgd_api *api, int64_t id, const char *name, struct stat *st) {
    char id_text[24];
    snprintf(id_text, sizeof id_text, "%lld", (long long)id);
    const char *const parts[] = {"jobs", id_text};
    int dir = open(api->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (size_t i = 0; i < 2 && dir >= 0; i++) {
        int next = openat(dir, parts[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int saved = errno;
        close(dir);
        errno = saved;
        dir = next;
    }
    if (dir < 0) return -1;
    /* O_NONBLOCK: a FIFO planted there must not hang this thread. */
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int saved = errno;
    close(dir);
    if (fd >= 0 && (fstat(fd, st) < 0 || !S_ISREG(st->st_mode))) {
        close(fd);
        fd = -1;
        saved = EINVAL;
    }
    errno = saved;
    return fd;
}

/* Opens train job id's checkpoint.safetensors for a download, or answers why not (*reply): the
 * engine replaces it by rename, so the open file stays one whole checkpoint while it is read.
 * Only a file the job wrote is served: one older than the job (left by an earlier job with this
 * id under a database started afresh) is not, nor anything that is not a plain file. Returns the
 * fd (with *st, and the file's name in messages, its place in the data dir, in name), or -1
 * once *reply is queued. */
static int open_checkpoint(pgd_api *api, const pgd_request *req, int64_t id, struct stat *st,
                           enum MHD_Result *reply, char *name, size_t name_size) {
    snprintf(name, name_size, "jobs/%lld/%s", (long long)id, PGN_CHECKPOINT_FILE);
    pgd_job job;
    pgn_error err;
    if (pgd_store_job_get(api->store, id, false, &job, &err) < 0) {
        *reply = api_job_error(req, &err);
        return -1;
    }
    const char *kind = pgn_job_kind_name(job.kind);
    bool train = job.kind == PGN_JOB_TRAIN;
    int fd = train ? api_open_job_file(api, id, PGN_CHECKPOINT_FILE, st) : -1;
    int open_errno = errno;
    int64_t created_ms;
    if (fd >= 0 && pgn_utc_ms(job.created_at, &created_ms) &&
        (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000 < created_ms) {
        close(fd);
        fd = -1;
        open_errno = ENOENT; /* not this job's */
    }
    bool planted = open_errno == ELOOP || open_errno == ENOTDIR || open_errno == EINVAL;
    if (fd < 0 && train && planted)
        fprintf(stderr, "paragond: job %lld: its checkpoint path is not a plain file (%s); not served\n",
                (long long)id, strerror(open_errno));
    if (fd < 0 && train && open_errno != ENOENT && !planted) {
        pgn_error_set(&err, PGN_E_INTERNAL, "", "cannot read the checkpoint of job %lld: %s",
                      (long long)id, strerror(open_errno));
        *reply = api_internal_error(req, &err);
    } else if (fd < 0 && !train) {
        *reply = pgd_reply_error(req, PGN_E_NO_CHECKPOINT, NULL,
                                 "job %lld has no checkpoint: it is a%s %s job, and only train jobs "
                                 "keep one",
                                 (long long)id, strchr("aeiou", kind[0]) ? "n" : "", kind);
    } else if (fd < 0) {
        *reply = pgd_reply_error(req, PGN_E_NO_CHECKPOINT, NULL,
                                 "job %lld has no checkpoint yet (it is %s): a train job writes one "
                                 "every checkpoint_every epochs, when it is stopped, and when it "
                                 "finishes",
                                 (long long)id, pgd_job_state_name(job.state));
    }
    pgd_job_release(&job);
    return fd;
}

/* A download of a response: application/octet-stream, attachment `filename`. */
static enum MHD_Result reply_download(const pgd_request *req, struct MHD_Response *resp,
                                      const char *filename) {
    char disposition[96];
    snprintf(disposition, sizeof disposition, "attachment; filename=\"%s\"", filename);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition);
    enum MHD_Result r = pgd_queue_response(req, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return r;
}

/* A checkpoint that fails the engine's checks: its error, told to the log and answered. */
static enum MHD_Result refuse_checkpoint(const pgd_request *req, int64_t id, const pgn_error *err) {
    fprintf(stderr, "paragond: job %lld: its checkpoint fails its checks: %s\n", (long long)id, err->message);
    return pgd_reply_pgn_error(req, err, NULL, NULL);
}

/* GET /api/v1/jobs/{id}/checkpoint: the job's checkpoint.safetensors as it is, once it passes the
 * checks /weights makes (a corrupt file was served here while /weights refused it). */
enum MHD_Result api_get_checkpoint(pgd_api *api, const pgd_request *req, int64_t id) {
    struct stat st;
    enum MHD_Result reply;
    char name[64];
    int fd = open_checkpoint(api, req, id, &st, &reply, name, sizeof name);
    if (fd < 0) return reply;
    pgn_error err;
    pgn_error_clear(&err);
    if (pgn_checkpoint_verify(name, fd, &err) < 0) {
        close(fd);
        return refuse_checkpoint(req, id, &err);
    }
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!resp) {
        close(fd);
        return MHD_NO;
    }
    char filename[48];
    snprintf(filename, sizeof filename, "job-%lld.safetensors", (long long)id);
    return reply_download(req, resp, filename); /* MHD closes fd when it is done with it */
}

/* GET /api/v1/jobs/{id}/weights: the checkpoint's weights alone, as PyTorch's modules load them
 * (pgn_weights_export). A checkpoint that fails its checks answers the engine's error, naming
 * the file by its place in the data dir. */
enum MHD_Result api_get_weights(pgd_api *api, const pgd_request *req, int64_t id) {
    struct stat st;
    enum MHD_Result reply;
    char name[64];
    int fd = open_checkpoint(api, req, id, &st, &reply, name, sizeof name);
    if (fd < 0) return reply;
    unsigned char *bytes;
    size_t len;
    pgn_error err;
    pgn_error_clear(&err);
    int rc = pgn_weights_export(name, fd, &bytes, &len, &err);
    close(fd);
    if (rc < 0) return refuse_checkpoint(req, id, &err);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, bytes, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(bytes);
        return MHD_NO;
    }
    char filename[48];
    snprintf(filename, sizeof filename, "job-%lld-weights.safetensors", (long long)id);
    return reply_download(req, resp, filename);
}
