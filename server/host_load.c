/* host_load.c: owns what paragond knows of the machine's other work: the CPUs that processes
 * other than this paragond kept busy (and what a hypervisor took: steal) over the last second or
 * more, from /proc/stat's busy time less this process's own (/proc/self/stat), so that an
 * estimate made on a loaded machine says so. The cost model's rates are a quiet machine's. A
 * distributed job's ranks are processes of their own: their time counts as other work. */
#include "host_load.h"

#include "paragon.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The shortest window a reading covers: a shorter one is mostly rounding of clock ticks. */
#define WINDOW_NS 1000000000LL

typedef struct {
    int64_t at_ns;
    unsigned long long busy, total, own; /* clock ticks */
} sample;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sample last;
static double other = -1; /* the last window's reading; -1 before there is one */
static int online = 1;    /* CPUs online at the last window (sysconf reads a file for it) */

static bool read_sample(sample *s) {
    unsigned long long v[10] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return false;
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6], &v[7], &v[8], &v[9]);
    fclose(f);
    if (n < 8) return false;
    /* user nice system idle iowait irq softirq steal (guest time is inside user already) */
    s->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    s->total = s->busy + v[3] + v[4];
    f = fopen("/proc/self/stat", "r");
    if (!f) return false;
    char buf[1024];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    unsigned long long utime, stime;
    /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return false;
    s->own = utime + stime;
    s->at_ns = pgn_now_ns();
    return true;
}

double pgd_host_other_cpus(int *cpus) {
    pthread_mutex_lock(&lock);
    sample now;
    if ((!last.at_ns || pgn_now_ns() - last.at_ns >= WINDOW_NS) && read_sample(&now)) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        online = n > 0 ? (int)n : 1;
        if (last.at_ns && now.total > last.total) {
            double ticks = (double)(now.total - last.total) / online; /* the window, in ticks of one CPU */
            double busy = (double)(now.busy - last.busy) - (double)(now.own - last.own);
            other = busy > 0 ? busy / ticks : 0;
        }
        last = now;
    }
    double result = other;
    *cpus = online;
    pthread_mutex_unlock(&lock);
    return result;
}
