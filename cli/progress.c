/* progress.c: the progress line of long work (progress.h): a bar, counts, rates and the time
 * left, redrawn in place on a terminal, printed as plain lines elsewhere. */
#include "progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paragon.h"

/* A terminal redraws at most this often: a train step can be well under a millisecond. */
#define REDRAW_EVERY_S 0.1
/* Without a known share, plain output prints a progress line this often. */
#define PLAIN_EVERY_S 10.0
#define BAR_WIDTH 24

void cli_progress_start(cli_progress *p, FILE *out) {
    memset(p, 0, sizeof *p);
    p->out = out;
    p->tty = isatty(fileno(out)) && getenv("TERM") && strcmp(getenv("TERM"), "dumb");
    p->started_s = p->drawn_s = pgn_now_s();
    p->fraction = -1;
    p->step = -1;
    p->loss = NAN;
}

/* "1:05" or "1:02:05". */
static void clock_text(double s, char *out, size_t size) {
    if (!isfinite(s) || s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(out, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(out, size, "%ld:%02ld", t / 60, t % 60);
}

/* 1234567 as "1.23M". */
static void count_text(double v, char *out, size_t size) {
    const char *unit[] = {"", "k", "M", "G", "T"};
    int u = 0;
    while (fabs(v) >= 1000 && u < 4) {
        v /= 1000;
        u++;
    }
    snprintf(out, size, u ? "%.3g%s" : "%.0f%s", v, unit[u]);
}

/* The figures after the bar: what is known of steps, loss, rates and time. */
static void figures(const cli_progress *p, double now, char *out, size_t size) {
    size_t n = 0;
    char a[32], b[32];
#define ADD(...) (n += (size_t)snprintf(out + n, n < size ? size - n : 0, __VA_ARGS__), n = n < size ? n : size - 1)
    out[0] = 0;
    if (p->step >= 0) {
        ADD("step %lld", (long long)p->step);
        double dt = now - p->step_s;
        if (p->step > p->step0 && dt > 0.5) {
            double per_s = (double)(p->step - p->step0) / dt;
            if (p->samples_per_step) ADD("  %.0f samples/s", per_s * (double)p->samples_per_step);
            else ADD("  %.1f steps/s", per_s);
        }
    }
    if (p->tokens_per_s > 0) {
        count_text(p->tokens_per_s, a, sizeof a);
        ADD("  %s tokens/s", a);
    }
    if (isfinite(p->loss)) ADD("  loss %.4f", p->loss);
    if (p->interactions > 0) {
        count_text(p->interactions, a, sizeof a);
        ADD("%s%s interactions  %.1f MIPS", n ? "  " : "", a, p->mips);
    }
    double gone = now - p->started_s;
    clock_text(gone, a, sizeof a);
    ADD("%s%s", n ? "  " : "", a);
    double moved = p->fraction - p->fraction0;
    if (moved > 0.001 && p->fraction < 1) {
        clock_text((now - p->fraction0_s) * (1 - p->fraction) / moved, b, sizeof b);
        ADD("  ETA %s", b);
    }
#undef ADD
}

static void draw(cli_progress *p, bool force) {
    double now = pgn_now_s();
    char text[256];
    if (p->tty) {
        if (!force && now - p->drawn_s < REDRAW_EVERY_S) return;
        figures(p, now, text, sizeof text);
        char bar[BAR_WIDTH + 1] = "";
        if (p->fraction >= 0) {
            int full = (int)(p->fraction * BAR_WIDTH + 0.5);
            for (int i = 0; i < BAR_WIDTH; i++) bar[i] = i < full ? '#' : '.';
            bar[BAR_WIDTH] = 0;
            fprintf(p->out, "\r\033[K[%s] %3.0f%%  %s", bar, p->fraction * 100, text);
        } else {
            fprintf(p->out, "\r\033[K%s", text);
        }
        p->drawn = true;
    } else {
        int tenth = p->fraction >= 0 ? (int)(p->fraction * 10) : 0;
        bool due = p->fraction >= 0 ? tenth > p->plain_tenth && tenth < 10 : now - p->drawn_s >= PLAIN_EVERY_S;
        if (!due) return; /* plain output repeats nothing: only the next tenth, or after a while */
        p->plain_tenth = tenth;
        figures(p, now, text, sizeof text);
        if (p->fraction >= 0) fprintf(p->out, "progress %3.0f%%  %s\n", p->fraction * 100, text);
        else fprintf(p->out, "progress  %s\n", text);
    }
    p->drawn_s = now;
    fflush(p->out);
}

void cli_progress_fraction(cli_progress *p, double fraction) {
    if (p->fraction < 0 && fraction >= 0) {
        p->fraction0 = fraction;
        p->fraction0_s = pgn_now_s();
    }
    p->fraction = fraction < 0 ? -1 : fraction > 1 ? 1 : fraction;
    draw(p, false);
}

void cli_progress_metric(cli_progress *p, const char *name, int64_t step, double value) {
    if (!strcmp(name, "step_loss") || !strcmp(name, "loss")) {
        if (p->step < 0) {
            p->step0 = step;
            p->step_s = pgn_now_s();
        }
        /* an MLP's per-epoch "loss" is numbered by epoch; per-step figures come as step_loss */
        if (!strcmp(name, "step_loss") || step > p->step) p->step = step;
        p->loss = value;
    } else if (!strcmp(name, "tokens_per_second")) {
        p->tokens_per_s = value;
    } else if (!strcmp(name, "interactions")) {
        double now = pgn_now_s();
        if (now > p->started_s) p->mips = value / (now - p->started_s) / 1e6;
        p->interactions = value;
    } else if (!strcmp(name, "mips")) {
        p->mips = value;
    } else {
        return;
    }
    draw(p, false);
}

void cli_progress_log(cli_progress *p, const char *line) {
    if (p->tty && p->drawn) fprintf(p->out, "\r\033[K");
    fprintf(p->out, "%s\n", line);
    p->drawn = false;
    if (p->tty) draw(p, true);
    fflush(p->out);
}

void cli_progress_end(cli_progress *p) {
    if (p->tty && p->drawn) fprintf(p->out, "\r\033[K");
    p->drawn = false;
    fflush(p->out);
}
