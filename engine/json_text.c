/* json_text.c: pgn_json_dumps, the compact JSON text every stored, streamed and served object is
 * written in. Byte for byte what jansson's json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY |
 * JSON_REAL_PRECISION(15)) writes (tests/test_json.c compares the two), three to four times
 * faster: jansson hands every fragment to a callback and walks every string code point by code
 * point, 20-28 us for a 1.3 KB job object against 6-8 us here (2026-11-29, 2-core Emerald
 * Rapids), and a third of a GET /api/v1/jobs/{id}'s CPU was jansson's.
 * Objects keep jansson's insertion order; a string that is not UTF-8 (only json_stringn_nocheck
 * makes one) fails the whole text, as in jansson. The writer (pgn_jw_*) puts the same text down
 * value by value from the same functions, for objects that would be built only to be printed; the
 * reader (pgn_json_loads) gives jansson's values for stored text without jansson's stream. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paragon.h"

/* jansson's own limit on nesting when it dumps (JSON_PARSER_DEFAULT_DEPTH). */
#define JSON_TEXT_MAX_DEPTH 2048

/* The text is built in a pgn_text; a value that has no text (a string that is not UTF-8, nesting
 * past jansson's limit) fails it as a failed allocation does: oom set, pgn_text_take gives NULL. */
static void fail(pgn_text *b) { b->oom = true; }

/* Appends within the room the text has (the NUL after it is written once, at the end), and
 * through pgn_text_put when it must grow: a call per fragment was a third of the time. */
static inline void put(pgn_text *b, const char *s, size_t n) {
    if (!b->oom && b->len + n + 1 <= b->cap) {
        memcpy(b->data + b->len, s, n);
        b->len += n;
    } else {
        pgn_text_put(b, s, n);
    }
}

static inline void put_char(pgn_text *b, char c) {
    if (!b->oom && b->len + 2 <= b->cap) b->data[b->len++] = c;
    else pgn_text_put(b, &c, 1);
}

/* The length of the UTF-8 sequence at s (at most n bytes), 0 when it is not one: jansson's
 * rules (no overlong forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_sequence(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

static void put_string(pgn_text *b, const char *str, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *s = (const unsigned char *)str;
    put_char(b, '"');
    size_t run = 0; /* bytes from s[run] up to i need no escape */
    for (size_t i = 0; i < n && !b->oom;) {
        unsigned char c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t len = utf8_sequence(s + i, n - i);
            if (!len) {
                fail(b);
                break;
            }
            i += len;
            continue;
        }
        put(b, str + run, i - run);
        char esc[6] = {'\\', 0};
        size_t esc_len = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            esc_len = 6;
        }
        put(b, esc, esc_len);
        run = ++i;
    }
    put(b, str + run, n - run);
    put_char(b, '"');
}

/* An integer in decimal, as %lld writes it. */
static void put_int(pgn_text *b, int64_t v) {
    char s[24], *p = s + sizeof s;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *--p = '-';
    put(b, p, (size_t)(s + sizeof s - p));
}

/* A real as jansson writes it: %.15g, a ".0" when that reads as an integer, the exponent without
 * '+' or leading zeros. */
static void put_real(pgn_text *b, double v) {
    char s[40];
    if (fabs(v) < 1e15 && v == (double)(int64_t)v && !(v == 0 && signbit(v))) {
        /* a whole number below 10^15: %.15g writes its digits (no exponent), so the integer's
         * text and ".0" (printf's float path was most of a job object's cost) */
        put_int(b, (int64_t)v);
        put(b, ".0", 2);
        return;
    }
    int n = snprintf(s, sizeof s - 2, "%.15g", v);
    if (n < 0 || (size_t)n >= sizeof s - 2) {
        fail(b);
        return;
    }
    char *comma = strchr(s, ','); /* a locale's decimal point */
    if (comma) *comma = '.';
    if (!strchr(s, '.') && !strchr(s, 'e')) {
        memcpy(s + n, ".0", 3);
        n += 2;
    }
    char *e = strchr(s, 'e');
    if (e) {
        char *from = e + 1, *to = e + 1;
        if (*from == '-') from++, to++;
        else if (*from == '+') from++;
        while (*from == '0' && from[1]) from++;
        memmove(to, from, strlen(from) + 1);
        n = (int)strlen(s);
    }
    put(b, s, (size_t)n);
}

static void put_value(pgn_text *b, const json_t *v, int depth) {
    if (b->oom) return;
    if (depth > JSON_TEXT_MAX_DEPTH) {
        fail(b);
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        put_char(b, '{');
        bool first = true;
        for (void *it = json_object_iter((json_t *)v); it; it = json_object_iter_next((json_t *)v, it)) {
            if (!first) put_char(b, ',');
            first = false;
            put_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
            put_char(b, ':');
            put_value(b, json_object_iter_value(it), depth + 1);
        }
        put_char(b, '}');
        break;
    }
    case JSON_ARRAY: {
        put_char(b, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) put_char(b, ',');
            put_value(b, json_array_get(v, i), depth + 1);
        }
        put_char(b, ']');
        break;
    }
    case JSON_STRING: put_string(b, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: put_int(b, json_integer_value(v)); break;
    case JSON_REAL: put_real(b, json_real_value(v)); break;
    case JSON_TRUE: put(b, "true", 4); break;
    case JSON_FALSE: put(b, "false", 5); break;
    case JSON_NULL: put(b, "null", 4); break;
    }
}

char *pgn_json_dumps(const json_t *value) {
    if (!value) return NULL;
    pgn_text b = {0};
    put_value(&b, value, 0);
    pgn_text_put(&b, "", 0); /* the NUL */
    return pgn_text_take(&b);
}

/* ---- the writer ------------------------------------------------------------------------- */

/* Before a value: the comma after the element before it; false (and the writer bad) when a value
 * cannot stand here (an object's member without its key, a second value at the top). */
static bool value_begins(pgn_json_writer *w) {
    if (w->bad) return false;
    if (w->depth == 0) {
        if (w->text.len == 0) return true;
        w->bad = true;
        return false;
    }
    int d = w->depth - 1;
    if (w->in_object[d]) {
        if (!w->after_key) {
            w->bad = true;
            return false;
        }
        w->after_key = false;
        return true;
    }
    if (w->not_first[d]) put_char(&w->text, ',');
    w->not_first[d] = true;
    return true;
}

static void open_container(pgn_json_writer *w, char c, bool object) {
    if (!value_begins(w)) return;
    if (w->depth == PGN_JSON_WRITER_DEPTH) {
        w->bad = true;
        return;
    }
    w->not_first[w->depth] = false;
    w->in_object[w->depth] = object;
    w->depth++;
    put_char(&w->text, c);
}

void pgn_jw_object(pgn_json_writer *w) { open_container(w, '{', true); }

void pgn_jw_array(pgn_json_writer *w) { open_container(w, '[', false); }

void pgn_jw_end(pgn_json_writer *w) {
    if (w->bad) return;
    if (w->depth == 0 || w->after_key) {
        w->bad = true;
        return;
    }
    w->depth--;
    put_char(&w->text, w->in_object[w->depth] ? '}' : ']');
}

void pgn_jw_key(pgn_json_writer *w, const char *key) {
    if (w->bad) return;
    int d = w->depth - 1;
    if (d < 0 || !w->in_object[d] || w->after_key) {
        w->bad = true;
        return;
    }
    if (w->not_first[d]) put_char(&w->text, ',');
    w->not_first[d] = true;
    put_string(&w->text, key, strlen(key));
    put_char(&w->text, ':');
    w->after_key = true;
}

void pgn_jw_string(pgn_json_writer *w, const char *s) {
    if (value_begins(w)) put_string(&w->text, s, strlen(s));
}

void pgn_jw_int(pgn_json_writer *w, int64_t v) {
    if (value_begins(w)) put_int(&w->text, v);
}

void pgn_jw_real(pgn_json_writer *w, double v) {
    if (value_begins(w)) put_real(&w->text, v);
}

void pgn_jw_bool(pgn_json_writer *w, bool v) {
    if (value_begins(w)) put(&w->text, v ? "true" : "false", v ? 4 : 5);
}

void pgn_jw_null(pgn_json_writer *w) {
    if (value_begins(w)) put(&w->text, "null", 4);
}

void pgn_jw_value(pgn_json_writer *w, const json_t *v) {
    if (!value_begins(w)) return;
    if (v) put_value(&w->text, v, w->depth);
    else put(&w->text, "null", 4);
}

void pgn_jw_raw(pgn_json_writer *w, const char *text, size_t n) {
    if (value_begins(w)) put(&w->text, text, n);
}

char *pgn_jw_take(pgn_json_writer *w) {
    bool whole = !w->bad && w->depth == 0 && !w->after_key && w->text.len > 0;
    pgn_text_put(&w->text, "", 0); /* the NUL */
    char *text = pgn_text_take(&w->text);
    if (!whole || !text) {
        free(text);
        text = NULL;
    }
    *w = (pgn_json_writer){0};
    return text;
}

/* ---- the reader ------------------------------------------------------------------------- */

/* jansson's own limit on nesting when it parses (JSON_PARSER_MAX_DEPTH). */
#define JSON_READ_MAX_DEPTH 2048

/* A reading in progress: p walks text up to end; rare is set when the text holds something this
 * reader leaves to jansson (a \u escape, an integer past int64, nesting past jansson's limit, a
 * locale whose decimal point is not '.'), bad when it is not JSON at all. */
typedef struct {
    const char *p, *end;
    bool rare, bad;
} reading;

static void skip_space(reading *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r')) r->p++;
}

static bool take_word(reading *r, const char *word, size_t n) {
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return false;
    r->p += n;
    return true;
}

/* A string, at r->p just after its opening quote: its bytes unescaped (malloc'd, NUL-terminated)
 * and their count in *len; NULL with r->bad or r->rare set. */
static char *read_string(reading *r, size_t *len) {
    const char *s = r->p;
    size_t i = 0, n = (size_t)(r->end - s);
    bool escaped = false;
    for (;; i++) { /* to the closing quote: control characters are not JSON, escapes come later */
        if (i == n) goto bad;
        unsigned char c = (unsigned char)s[i];
        if (c == '"') break;
        if (c < 0x20) goto bad;
        if (c == '\\') {
            escaped = true;
            if (++i == n) goto bad;
        } else if (c >= 0x80) {
            size_t seq = utf8_sequence((const unsigned char *)s + i, n - i);
            if (!seq) goto bad;
            i += seq - 1;
        }
    }
    char *out = malloc(i + 1);
    if (!out) goto bad;
    size_t o = 0;
    if (!escaped) {
        memcpy(out, s, i);
        o = i;
    } else {
        for (size_t k = 0; k < i; k++) {
            if (s[k] != '\\') {
                out[o++] = s[k];
                continue;
            }
            switch (s[++k]) {
            case '"': out[o++] = '"'; break;
            case '\\': out[o++] = '\\'; break;
            case '/': out[o++] = '/'; break;
            case 'b': out[o++] = '\b'; break;
            case 'f': out[o++] = '\f'; break;
            case 'n': out[o++] = '\n'; break;
            case 'r': out[o++] = '\r'; break;
            case 't': out[o++] = '\t'; break;
            case 'u': r->rare = true; break; /* code points and surrogate pairs: jansson's */
            default: r->bad = true;
            }
            if (r->rare || r->bad) {
                free(out);
                return NULL;
            }
        }
    }
    out[o] = 0;
    *len = o;
    r->p = s + i + 1;
    return out;
bad:
    r->bad = true;
    return NULL;
}

/* A number as jansson reads it: an integer (no fraction, no exponent) by strtoll, anything else
 * by strtod; JSON's grammar first (no leading zeros, no '+', digits after '.' and 'e'). */
static json_t *read_number(reading *r) {
    const char *s = r->p, *q = s;
    if (q < r->end && *q == '-') q++;
    if (q == r->end || *q < '0' || *q > '9') goto bad;
    if (*q == '0') q++;
    else while (q < r->end && *q >= '0' && *q <= '9') q++;
    bool integer = true;
    if (q < r->end && *q == '.') {
        integer = false;
        if (++q == r->end || *q < '0' || *q > '9') goto bad;
        while (q < r->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < r->end && (*q == 'e' || *q == 'E')) {
        integer = false;
        if (++q < r->end && (*q == '+' || *q == '-')) q++;
        if (q == r->end || *q < '0' || *q > '9') goto bad;
        while (q < r->end && *q >= '0' && *q <= '9') q++;
    }
    char token[64]; /* strtoll and strtod want a NUL after it */
    size_t n = (size_t)(q - s);
    if (n >= sizeof token) {
        r->rare = true;
        return NULL;
    }
    memcpy(token, s, n);
    token[n] = 0;
    r->p = q;
    errno = 0;
    if (integer) {
        long long v = strtoll(token, NULL, 10);
        if (errno == ERANGE) {
            r->rare = true; /* jansson says "too big integer" */
            return NULL;
        }
        return json_integer((json_int_t)v);
    }
    double d = strtod(token, NULL);
    if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL)) {
        r->rare = true; /* jansson says "real number overflow" */
        return NULL;
    }
    return json_real(d);
bad:
    r->bad = true;
    return NULL;
}

/* Past c, the next character but for whitespace, when it is c. */
static bool take(reading *r, char c) {
    skip_space(r);
    if (r->p == r->end || *r->p != c) return false;
    r->p++;
    return true;
}

static json_t *read_value(reading *r, int depth);

/* After its '{'; NULL with r->bad or r->rare set. */
static json_t *read_object(reading *r, int depth) {
    json_t *o = json_object();
    if (take(r, '}')) return o;
    do {
        size_t klen;
        char *key = take(r, '"') ? read_string(r, &klen) : NULL;
        json_t *v = key && take(r, ':') ? read_value(r, depth + 1) : NULL;
        bool kept = v && json_object_setn_new_nocheck(o, key, klen, v) == 0; /* takes v either way */
        free(key);
        if (!kept) {
            if (!r->rare) r->bad = true;
            json_decref(o);
            return NULL;
        }
    } while (take(r, ','));
    if (take(r, '}')) return o;
    r->bad = true;
    json_decref(o);
    return NULL;
}

/* After its '['; NULL with r->bad or r->rare set. */
static json_t *read_array(reading *r, int depth) {
    json_t *a = json_array();
    if (take(r, ']')) return a;
    do {
        json_t *v = read_value(r, depth + 1);
        if (!v || json_array_append_new(a, v) < 0) {
            if (!r->rare) r->bad = true;
            json_decref(a);
            return NULL;
        }
    } while (take(r, ','));
    if (take(r, ']')) return a;
    r->bad = true;
    json_decref(a);
    return NULL;
}

static json_t *read_value(reading *r, int depth) {
    if (depth > JSON_READ_MAX_DEPTH) {
        r->rare = true;
        return NULL;
    }
    skip_space(r);
    if (r->p == r->end) {
        r->bad = true;
        return NULL;
    }
    switch (*r->p) {
    case '{': r->p++; return read_object(r, depth);
    case '[': r->p++; return read_array(r, depth);
    case '"': {
        r->p++;
        size_t len;
        char *s = read_string(r, &len);
        if (!s) return NULL;
        json_t *v = json_stringn_nocheck(s, len); /* UTF-8 checked as it was read; a NUL only comes by \u */
        if (!v) r->bad = true;
        free(s);
        return v;
    }
    case 't': if (take_word(r, "true", 4)) return json_true(); break;
    case 'f': if (take_word(r, "false", 5)) return json_false(); break;
    case 'n': if (take_word(r, "null", 4)) return json_null(); break;
    default: return read_number(r);
    }
    r->bad = true;
    return NULL;
}

json_t *pgn_json_loads(const char *text) {
    if (!text) return NULL;
    const struct lconv *lc = localeconv();
    if (lc->decimal_point[0] == '.' && lc->decimal_point[1] == 0) {
        reading r = {.p = text, .end = text + strlen(text)};
        json_t *v = read_value(&r, 0);
        if (v) {
            skip_space(&r);
            if (r.p == r.end) return v;
            json_decref(v);
            r.bad = true;
        }
        if (r.bad) return NULL;
    }
    return json_loads(text, JSON_DECODE_ANY, NULL); /* what this reader leaves to jansson */
}
