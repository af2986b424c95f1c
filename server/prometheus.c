/* prometheus.c: owns GET /metrics, paragond's Prometheus text exposition (format 0.0.4): the
 * standard process_* series, the request metrics (metrics.c) and the job, queue, device and
 * work figures read at scrape time from the store, the scheduler and /proc. */
#include "prometheus.h"

#include "metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* What the host has free for jobs that run on it, as /proc/meminfo says (0 when it does not). */
static double mem_available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (double)kb * 1024.0;
}

/* The standard process_* series every Prometheus client library exports (what dashboards and
 * alerts built for any service read), from /proc: CPU seconds, resident and virtual memory, open
 * and allowed file descriptors, start time. A figure /proc does not give is left out. */
static void process_series(pgn_text *t) {
    double tick = (double)sysconf(_SC_CLK_TCK), page = (double)sysconf(_SC_PAGESIZE);
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    /* after the command's name, which may hold spaces: field 3 (state) on; utime and stime are
     * fields 14 and 15, starttime 22 (clock ticks since boot) */
    const char *p = strrchr(buf, ')');
    unsigned long long utime, stime, start;
    if (p && tick > 0 &&
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu", &utime,
               &stime, &start) == 3) {
        pgd_metrics_family(t, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
        pgn_text_printf(t, "process_cpu_seconds_total %.9g\n", (double)(utime + stime) / tick);
        FILE *s = fopen("/proc/stat", "r");
        char line[256];
        unsigned long long btime = 0;
        while (s && fgets(line, sizeof line, s))
            if (sscanf(line, "btime %llu", &btime) == 1) break;
        if (s) fclose(s);
        if (btime) {
            pgd_metrics_family(t, "process_start_time_seconds", "gauge",
                               "Start time of the process since unix epoch in seconds.");
            pgn_text_printf(t, "process_start_time_seconds %.13g\n", (double)btime + (double)start / tick);
        }
    }
    unsigned long long size, resident;
    f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%llu %llu", &size, &resident) == 2) {
        pgd_metrics_family(t, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
        pgn_text_printf(t, "process_virtual_memory_bytes %.17g\n", (double)size * page);
        pgd_metrics_family(t, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        pgn_text_printf(t, "process_resident_memory_bytes %.17g\n", (double)resident * page);
    }
    if (f) fclose(f);
    DIR *fds = opendir("/proc/self/fd");
    if (fds) {
        long open = 0;
        for (struct dirent *e; (e = readdir(fds));)
            if (e->d_name[0] != '.') open++;
        closedir(fds);
        pgd_metrics_family(t, "process_open_fds", "gauge", "Number of open file descriptors.");
        pgn_text_printf(t, "process_open_fds %ld\n", open - 1); /* less the directory's own */
    }
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
        pgd_metrics_family(t, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        pgn_text_printf(t, "process_max_fds %.17g\n", (double)lim.rlim_cur);
    }
}

char *pgd_prometheus_render(pgd_store *store, pgd_scheduler *sched, pgn_error *err) {
    int64_t states[PGD_JOB_STATES];
    pgd_counters counters;
    if (pgd_store_job_state_counts(store, states, err) < 0 ||
        pgd_store_counters(store, &counters, err) < 0)
        return NULL;
    json_t *devices = pgd_scheduler_devices_json(sched, err);
    if (!devices) return NULL;

    pgn_text t = {0};
    process_series(&t);

    pgd_metrics_family(&t, "paragon_build_info", "gauge", "The running paragond's version (always 1).");
    pgn_text_printf(&t, "paragon_build_info{version=\"%s\"} 1\n", PGN_VERSION);

    pgd_metrics_family(&t, "paragon_jobs", "gauge", "Jobs in the store, by state.");
    for (int s = 0; s < PGD_JOB_STATES; s++)
        pgn_text_printf(&t, "paragon_jobs{state=\"%s\"} %lld\n", pgd_job_state_name((pgd_job_state)s),
            (long long)states[s]);
    pgd_metrics_family(&t, "paragon_jobs_finished_total", "counter",
           "Jobs that reached a final state, by outcome (deleting a job does not lower it).");
    static const pgd_job_state outcomes[] = {PGD_JOB_SUCCEEDED, PGD_JOB_FAILED, PGD_JOB_CANCELLED};
    for (size_t k = 0; k < sizeof outcomes / sizeof *outcomes; k++)
        pgn_text_printf(&t, "paragon_jobs_finished_total{outcome=\"%s\"} %.17g\n",
                        pgd_job_state_name(outcomes[k]), counters.finished[outcomes[k]]);

    char id[128];
    size_t i;
    json_t *d;
    pgd_metrics_family(&t, "paragon_queue_length", "gauge", "Jobs queued on each device.");
    json_array_foreach(devices, i, d)
        pgn_text_printf(&t, "paragon_queue_length{device=\"%s\"} %lld\n",
            pgd_metrics_label(json_string_value(json_object_get(d, "id")), id, sizeof id),
            (long long)json_integer_value(json_object_get(d, "queued")));
    pgd_metrics_family(&t, "paragon_device_busy_seconds_total", "counter",
           "Seconds each device's worker spent running jobs since paragond started.");
    json_array_foreach(devices, i, d)
        pgn_text_printf(&t, "paragon_device_busy_seconds_total{device=\"%s\"} %.9g\n",
            pgd_metrics_label(json_string_value(json_object_get(d, "id")), id, sizeof id),
            json_number_value(json_object_get(d, "busy_seconds")));
    pgd_metrics_family(&t, "paragon_device_memory_bytes", "gauge",
           "Global memory each OpenCL device reports (0 for the host pseudo-device: see "
           "paragon_host_memory_available_bytes).");
    json_array_foreach(devices, i, d)
        pgn_text_printf(&t, "paragon_device_memory_bytes{device=\"%s\"} %.17g\n",
            pgd_metrics_label(json_string_value(json_object_get(d, "id")), id, sizeof id),
            json_number_value(json_object_get(d, "global_mem_bytes")));
    json_decref(devices);
    pgd_metrics_family(&t, "paragon_host_memory_available_bytes", "gauge",
           "Memory the host has available now (MemAvailable), what host jobs are admitted against.");
    pgn_text_printf(&t, "paragon_host_memory_available_bytes %.17g\n", mem_available_bytes());

    pgd_metrics_render_http(&t);

    pgd_metrics_family(&t, "paragon_inet_interactions_total", "counter",
           "Interactions reduced by the inet jobs that succeeded.");
    pgn_text_printf(&t, "paragon_inet_interactions_total %.17g\n", counters.interactions);
    pgd_metrics_family(&t, "paragon_flops_total", "counter",
           "Floating-point operations of the train jobs that succeeded.");
    pgn_text_printf(&t, "paragon_flops_total %.17g\n", counters.flops);

    char *out = pgn_text_take(&t);
    if (!out) pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "out of memory rendering /metrics");
    return out;
}
