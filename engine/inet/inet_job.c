/* inet_job.c: the inet job kind: parses the spec's program and reduces it to the normal form
 * of @main, reporting interactions, time and MIPS: on an OpenCL device with the OpenCL reducer,
 * on the host pseudo-device with the sequential reference reducer. Its IO is what the run's
 * options allow (pgn_inet_io_mode): a confined run's directory gets the spec's files first. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inet/inet.h"
#include "core.h"

#define DEFAULT_OUTPUT_MAX (64u << 10)

/* The spec's files written into dir (made when missing), each new: none may be there already,
 * and none is written through a symbolic link. */
static int write_files(const pgn_inet_spec *s, const char *dir, pgn_error *err) {
    if (mkdir(dir, 0755) && errno != EEXIST) {
        pgn_error_set(err, PGN_E_IO, "", "cannot create the program's directory %s: %s", dir, strerror(errno));
        return -1;
    }
    for (int i = 0; i < s->n_files; i++) {
        char path[PGN_PATH_MAX * 2 + 300];
        snprintf(path, sizeof path, "%s/%s", dir, s->file_names[i]);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        size_t len = strlen(s->file_texts[i]);
        bool ok = fd >= 0 && write(fd, s->file_texts[i], len) == (ssize_t)len;
        if (fd >= 0 && close(fd)) ok = false;
        if (!ok) {
            pgn_error_set(err, PGN_E_IO, "", "cannot write the spec's file %s: %s", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

int pgn_inet_job_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                     const pgn_run_hooks *hooks, json_t **result, pgn_error *err) {
    const pgn_inet_spec *s = &spec->inet;
    pgn_inet_io io = {.process_streams = true}, *use = NULL;
    if (opts && opts->inet_io == PGN_INET_IO_PROCESS) use = &io;
    if (opts && opts->inet_io == PGN_INET_IO_CONFINED) {
        if (!opts->io_dir) {
            pgn_error_set(err, PGN_E_INTERNAL, "", "a confined inet run needs its directory");
            return -1;
        }
        io = (pgn_inet_io){.dir = opts->io_dir, .output_max = opts->io_output_max ? opts->io_output_max : DEFAULT_OUTPUT_MAX};
        use = &io;
        if (s->n_files && write_files(s, opts->io_dir, err)) return -1;
    }
    /* A stored pgl spec (pgn_spec_parse_stored) is compiled here: the compile counts toward the
     * time limit and stops when the run is asked to. */
    double t0 = pgn_now_s();
    char *compiled = NULL;
    if (!s->program && s->source) {
        pgn_pgl_stop stop = {hooks ? hooks->should_stop : NULL, hooks ? hooks->ctx : NULL,
                             s->timeout_s > 0 ? t0 + s->timeout_s : 0};
        if (!(compiled = pgn_pgl_compile_until(s->source, strlen(s->source), &stop, err))) return -1;
    }
    const char *program = compiled ? compiled : s->program;
    pgn_inet_book *book = NULL;
    int parsed = program ? pgn_inet_parse(program, strlen(program), &book, err) : -1;
    if (!program) pgn_error_set(err, PGN_E_INTERNAL, "", "an inet spec without its program");
    free(compiled);
    if (parsed) return -1;
    pgn_inet_limits lim = {s->max_interactions, s->max_nodes, s->timeout_s};
    if (lim.timeout_s > 0) { /* what the compile left of it, and never none: the reducer's 0 is no limit */
        lim.timeout_s -= pgn_now_s() - t0;
        if (lim.timeout_s < 1e-3) lim.timeout_s = 1e-3;
    }
    pgn_inet_result r = {0};
    int rc = dev ? pgn_inet_run_cl(dev, book, &lim, use, (unsigned)s->work_items, hooks, &r, err)
                 : pgn_inet_run_host(book, &lim, use, hooks, &r, err);
    pgn_inet_book_free(book);
    if (rc) {
        pgn_inet_result_free(&r);
        return -1;
    }
    /* the final count and rate, at the count as their step as the reports during the run are, so
     * a job's metrics in step order end with them */
    if (hooks && hooks->on_metric) {
        hooks->on_metric(hooks->ctx, "interactions", (int64_t)r.interactions, (double)r.interactions);
        hooks->on_metric(hooks->ctx, "mips", (int64_t)r.interactions, r.mips);
    }
    *result = json_pack("{s:s, s:I, s:f, s:f, s:I, s:I, s:s}", "normal_form", r.normal_form,
                        "interactions", (json_int_t)r.interactions, "seconds", r.seconds, "mips",
                        r.mips, "peak_nodes", (json_int_t)r.peak_nodes, "peak_bytes",
                        (json_int_t)r.peak_bytes, "device", dev ? pgn_device_get_info(dev)->id : "host");
    if (*result && use) json_object_set_new(*result, "io_calls", json_integer((json_int_t)r.io_calls));
    if (*result && dev) /* whether it ended on its own kernel, and any wait for it (not in "seconds") */
        json_object_set_new(*result, "compiled", json_boolean(r.compiled));
    if (*result && r.compile_seconds > 0)
        json_object_set_new(*result, "compile_seconds", json_real(r.compile_seconds));
    if (*result && s->source) { /* pgl: the value in pgl's syntax, where it has one */
        char *value = pgn_pgl_readback(s->source, strlen(s->source), r.normal_form);
        if (value) json_object_set_new(*result, "value", json_string(value));
        free(value);
    }
    /* what it wrote, as text (invalid UTF-8 bytes escaped), and what did not fit; nothing for a
     * program that wrote nothing */
    if (*result && r.output && (r.output_len > 0 || r.output_dropped > 0)) {
        json_t *out = json_stringn(r.output, r.output_len);
        if (!out) {
            char *shown = pgn_text_visible(r.output);
            out = json_string(shown ? shown : "");
            free(shown);
        }
        json_object_set_new(*result, "output", out);
        json_object_set_new(*result, "output_truncated", json_integer((json_int_t)r.output_dropped));
    }
    pgn_inet_result_free(&r);
    return *result ? 0 : -1;
}
