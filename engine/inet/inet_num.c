/* inet_num.c: HVM2 number literals as text: parsing a literal token into a number and showing a
 * number the way HVM2 prints it (Rust's formatting: i24 with its sign, f24 as the shortest
 * decimal that reads back as the same f32). The arithmetic itself is kernels/pgn_inet_num.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "inet/inet.h"

/* ---- showing ------------------------------------------------------------------------------ */

static const char *const OP_TEXT[PGN_INET_OP_LAST + 1] = {
    [PGN_INET_TY_U24] = "u24", [PGN_INET_TY_I24] = "i24", [PGN_INET_TY_F24] = "f24",
    [PGN_INET_OP_ADD] = "+",   [PGN_INET_OP_SUB] = "-",   [PGN_INET_FP_SUB] = ":-",
    [PGN_INET_OP_MUL] = "*",   [PGN_INET_OP_DIV] = "/",   [PGN_INET_FP_DIV] = ":/",
    [PGN_INET_OP_REM] = "%",   [PGN_INET_FP_REM] = ":%",  [PGN_INET_OP_EQ] = "=",
    [PGN_INET_OP_NEQ] = "!",   [PGN_INET_OP_LT] = "<",    [PGN_INET_OP_GT] = ">",
    [PGN_INET_OP_AND] = "&",   [PGN_INET_OP_OR] = "|",    [PGN_INET_OP_XOR] = "^",
    [PGN_INET_OP_SHL] = "<<",  [PGN_INET_FP_SHL] = ":<<", [PGN_INET_OP_SHR] = ">>",
    [PGN_INET_FP_SHR] = ":>>",
};

/* A decimal candidate digits * 10^scale, and whether it reads back (round to nearest even, as
 * strtof does and as Rust's parser does) as exactly f. */
static bool reads_back(uint64_t digits, int scale, float f) {
    char buf[48];
    snprintf(buf, sizeof buf, "%llue%d", (unsigned long long)digits, scale);
    float g = strtof(buf, NULL);
    return memcmp(&g, &f, sizeof g) == 0;
}

/* The shortest digit string that reads back as |f| (finite, nonzero), and among those the one
 * nearest to it, as Rust's (Grisu/Dragon) shortest mode gives: *digits * 10^*scale with no
 * trailing zeros in *digits. For p digits the nearest p-digit decimal is printf's %.{p-1}e; when
 * it misses the rounding interval (which is lopsided at a power of two) a neighbour may still hit
 * it, so both neighbours are tried too. */
static void shortest_digits(float f, uint64_t *digits, int *scale) {
    double x = fabs((double)f);
    for (int p = 1; p <= 9; p++) {
        char buf[48];
        snprintf(buf, sizeof buf, "%.*e", p - 1, x);
        uint64_t m = 0;
        const char *c = buf;
        for (; *c && *c != 'e'; c++)
            if (*c >= '0' && *c <= '9') m = m * 10 + (uint64_t)(*c - '0');
        int e10 = atoi(c + 1);
        int s = e10 - (p - 1);
        uint64_t best = 0;
        double best_dist = INFINITY;
        for (int d = -1; d <= 1; d++) {
            uint64_t cand = m + (uint64_t)(int64_t)d;
            if (cand == 0 || !reads_back(cand, s, fabsf(f))) continue;
            char cb[48];
            snprintf(cb, sizeof cb, "%llue%d", (unsigned long long)cand, s);
            double dist = fabs(strtod(cb, NULL) - x);
            if (dist <= best_dist) best_dist = dist, best = cand; /* an exact tie goes up, as in Rust */
        }
        if (best) {
            while (best % 10 == 0) best /= 10, s++;
            *digits = best;
            *scale = s;
            return;
        }
    }
    /* nine significant digits always identify an f32; this is not reached */
    char buf[48];
    snprintf(buf, sizeof buf, "%.8e", x);
    *digits = 0;
    for (const char *c = buf; *c && *c != 'e'; c++)
        if (*c >= '0' && *c <= '9') *digits = *digits * 10 + (uint64_t)(*c - '0');
    *scale = atoi(strchr(buf, 'e') + 1) - 8;
}

void pgn_inet_f32_show(float f, char out[PGN_INET_NUMB_TEXT]) {
    char *o = out;
    if (signbit(f)) *o++ = '-';
    if (f == 0.0f) {
        strcpy(o, "0.0");
        return;
    }
    uint64_t digits;
    int scale;
    shortest_digits(f, &digits, &scale);
    char d[24];
    int n = snprintf(d, sizeof d, "%llu", (unsigned long long)digits);
    int k = scale + n - 1; /* decimal exponent of the first digit */
    float a = fabsf(f);
    if (a < 1e-4f || a >= 1e16f) { /* Rust's Debug switches to exponent form out there */
        *o++ = d[0];
        if (n > 1) {
            *o++ = '.';
            memcpy(o, d + 1, (size_t)n - 1);
            o += n - 1;
        }
        snprintf(o, 16, "e%d", k);
    } else if (k >= 0) { /* k <= 15 here, so at most 16 integer digits */
        for (int i = 0; i <= k; i++) *o++ = i < n ? d[i] : '0';
        *o++ = '.';
        if (n > k + 1) {
            memcpy(o, d + k + 1, (size_t)(n - k - 1));
            o += n - k - 1;
        } else {
            *o++ = '0';
        }
        *o = '\0';
    } else { /* -4 <= k < 0 */
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -k - 1; i++) *o++ = '0';
        memcpy(o, d, (size_t)n);
        o[n] = '\0';
    }
}

char *pgn_inet_numb_show(uint32_t numb, char out[PGN_INET_NUMB_TEXT]) {
    uint32_t type = pgn_inet_numb_type(numb), payload = pgn_inet_get_u24(numb);
    switch (type) {
    case PGN_INET_TY_SYM:
        if (payload >= PGN_INET_TY_U24 && payload <= PGN_INET_OP_LAST)
            snprintf(out, PGN_INET_NUMB_TEXT, "[%s]", OP_TEXT[payload]);
        else
            snprintf(out, PGN_INET_NUMB_TEXT, "[?]");
        break;
    case PGN_INET_TY_U24: snprintf(out, PGN_INET_NUMB_TEXT, "%u", payload); break;
    case PGN_INET_TY_I24: snprintf(out, PGN_INET_NUMB_TEXT, "%+d", pgn_inet_get_i24(numb)); break;
    case PGN_INET_TY_F24: {
        float f = pgn_inet_get_f24(numb);
        if (isnan(f))
            snprintf(out, PGN_INET_NUMB_TEXT, "+NaN");
        else if (isinf(f))
            snprintf(out, PGN_INET_NUMB_TEXT, "%sinf", f < 0 ? "-" : "+");
        else
            pgn_inet_f32_show(f, out);
        break;
    }
    default:
        snprintf(out, PGN_INET_NUMB_TEXT, "[%s0x%07X]", type <= PGN_INET_OP_LAST ? OP_TEXT[type] : "?",
                 payload);
        break;
    }
    return out;
}

/* ---- parsing ------------------------------------------------------------------------------ */

/* Rust's f32 grammar (what HVM2 hands float tokens to): an optional sign, then inf, infinity or
 * nan in any case, or digits with an optional point and an optional exponent, with at least one
 * digit before the exponent and at least one in it. */
static bool is_float_syntax(const char *t, size_t n) {
    size_t i = 0;
    if (i < n && (t[i] == '+' || t[i] == '-')) i++;
    size_t rest = n - i;
    if ((rest == 3 && !strncasecmp(t + i, "inf", 3)) || (rest == 8 && !strncasecmp(t + i, "infinity", 8)) ||
        (rest == 3 && !strncasecmp(t + i, "nan", 3)))
        return true;
    size_t digits = 0;
    while (i < n && t[i] >= '0' && t[i] <= '9') i++, digits++;
    if (i < n && t[i] == '.') {
        i++;
        while (i < n && t[i] >= '0' && t[i] <= '9') i++, digits++;
    }
    if (!digits) return false;
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < n && (t[i] == '+' || t[i] == '-')) i++;
        size_t exp = 0;
        while (i < n && t[i] >= '0' && t[i] <= '9') i++, exp++;
        if (!exp) return false;
    }
    return i == n;
}

/* HVM2's integer syntax: 0x hex, 0b binary or decimal digits, into 64 bits (more is an error).
 * Our one addition: '_' may separate digits (1_000_000). */
static int parse_int(const char *t, size_t n, uint64_t *out, const char **why) {
    unsigned base = 10;
    if (n >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'b')) {
        base = t[1] == 'x' ? 16 : 2;
        t += 2, n -= 2;
    }
    if (n == 0) {
        *why = "expected digits";
        return -1;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (c == '_' && i > 0 && i + 1 < n && t[i - 1] != '_') continue;
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 99u;
        if (d >= base) {
            *why = base == 16 ? "invalid hexadecimal digit"
                   : base == 2 ? "invalid binary digit"
                               : "invalid digit (floats need a '.')";
            return -1;
        }
        if (v > (UINT64_MAX - d) / base) {
            *why = "number too large";
            return -1;
        }
        v = v * base + d;
    }
    *out = v;
    return 0;
}

static bool contains(const char *t, size_t n, const char *what) {
    size_t w = strlen(what);
    for (size_t i = 0; i + w <= n; i++)
        if (!memcmp(t + i, what, w)) return true;
    return false;
}

int pgn_inet_numb_parse(const char *tok, size_t len, uint32_t *out, const char **why) {
    if (len == 0) {
        *why = "expected a number";
        return -1;
    }
    /* HVM2's classification: a '.', "inf" or "NaN" anywhere makes an f24 */
    if (memchr(tok, '.', len) || contains(tok, len, "inf") || contains(tok, len, "NaN")) {
        if (!is_float_syntax(tok, len) || len >= 64) {
            *why = "invalid float literal";
            return -1;
        }
        char buf[64];
        memcpy(buf, tok, len);
        buf[len] = '\0';
        *out = pgn_inet_f24(strtof(buf, NULL));
        return 0;
    }
    uint64_t v;
    if (tok[0] == '+' || tok[0] == '-') {
        if (parse_int(tok + 1, len - 1, &v, why)) return -1;
        uint32_t bits = (uint32_t)v; /* HVM2 keeps the low bits: the value wraps to 24 */
        if (tok[0] == '-') bits = 0u - bits;
        *out = ((bits << 5) | PGN_INET_TY_I24) & PGN_INET_NUMB_MASK;
        return 0;
    }
    if (parse_int(tok, len, &v, why)) return -1;
    *out = pgn_inet_u24((uint32_t)v);
    return 0;
}
