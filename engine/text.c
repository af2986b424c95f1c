/* text.c: a growable NUL-terminated string, for the texts built piece by piece: normal forms,
 * benchmark CSV, the /metrics exposition; and control characters made visible for logs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paragon.h"

/* Room for n more bytes and the NUL; false (and oom set) when memory runs out. */
static bool reserve(pgn_text *t, size_t n) {
    if (t->oom) return false;
    if (t->len + n + 1 <= t->cap) return true;
    size_t cap = t->cap ? t->cap : 256;
    while (t->len + n + 1 > cap) cap *= 2;
    char *grown = realloc(t->data, cap);
    if (!grown) {
        t->oom = true;
        return false;
    }
    t->data = grown;
    t->cap = cap;
    return true;
}

void pgn_text_put(pgn_text *t, const char *s, size_t n) {
    if (!reserve(t, n)) return;
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

void pgn_text_puts(pgn_text *t, const char *s) { pgn_text_put(t, s, strlen(s)); }

void pgn_text_printf(pgn_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->oom = true;
        return;
    }
    if (!reserve(t, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void pgn_text_put_visible(pgn_text *t, const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) pgn_text_printf(t, "\\x%02x", *p);
        else pgn_text_put(t, (const char *)p, 1);
    }
}

char *pgn_text_visible(const char *s) {
    pgn_text t = {0};
    pgn_text_put_visible(&t, s);
    return pgn_text_take(&t);
}

char *pgn_text_take(pgn_text *t) {
    if (t->oom) {
        free(t->data);
        *t = (pgn_text){0};
        return NULL;
    }
    if (!t->data) pgn_text_put(t, "", 0);
    char *s = t->oom ? NULL : t->data;
    *t = (pgn_text){0};
    return s;
}

