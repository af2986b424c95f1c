/* test_json.c: pgn_json_dumps (engine/json_text.c) writes exactly jansson's compact text: the same
 * bytes as json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15)) for every
 * kind of value, every escape and real we can think of, and thousands of random trees; and no text
 * (NULL) where jansson writes none: a string that is not UTF-8. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine_helpers.h"

static char *jansson_text(const json_t *v) {
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
}

/* Takes v: both writers' text of it must be equal. */
static void same_text(json_t *v) {
    cr_assert_not_null(v);
    char *want = jansson_text(v), *got = pgn_json_dumps(v);
    cr_assert_not_null(want);
    cr_assert_not_null(got, "no text where jansson wrote %s", want);
    cr_assert_str_eq(got, want);
    free(want);
    free(got);
    json_decref(v);
}

Test(json_text, scalars_are_written_as_jansson_writes_them) {
    same_text(json_null());
    same_text(json_true());
    same_text(json_false());
    static const json_int_t ints[] = {0, 1, -1, 42, INT64_MAX, INT64_MIN, 1000000000000LL};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) same_text(json_integer(ints[i]));
    static const double reals[] = {0.0,    -0.0,    1.0,     -1.0,    0.1,      1.0 / 3.0, 1e15,    1e16,
                                   1e17,   1e21,    1e100,   1e300,   DBL_MAX,  -DBL_MAX,  1e-4,    1e-5,
                                   1e-7,   1e-300,  DBL_MIN, 5e-324,  123456.0, 6.616e-06, 2.5e-10, 0.151148708104757,
                                   100.0,  12345678901234567.0,   3.14159265358979, -7.25e+30, 999999999999999.0,
                                   -999999999999999.0, 1e14, 4503599627370496.5, -123.0};
    for (size_t i = 0; i < sizeof reals / sizeof *reals; i++) same_text(json_real(reals[i]));
}

Test(json_text, every_escape_and_code_point_range) {
    /* every byte below 0x20, the two mandatory escapes, DEL and '/', kept as they are */
    char all[0x30];
    for (int c = 1; c < 0x30; c++) all[c - 1] = (char)c;
    same_text(json_stringn(all, sizeof all - 1));
    same_text(json_stringn("a\0b", 3)); /* a NUL inside */
    same_text(json_string("quote \" backslash \\ slash / del \x7f tab\tend"));
    same_text(json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8")); /* 2, 3, 4 bytes, U+2028 */
    same_text(json_string(""));
    json_t *o = json_object();
    json_object_set_new(o, "key \"with\"\nescapes", json_string("v"));
    json_object_setn_new(o, "nul\0key", 7, json_integer(1));
    same_text(o);
}

Test(json_text, text_that_is_not_utf8_has_no_text_as_in_jansson) {
    static const char *const bad[] = {"\xff", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ab\xe2\x82", "\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *s = json_stringn_nocheck(bad[i], strlen(bad[i]));
        json_t *arr = json_pack("[o]", json_incref(s));
        char *want = jansson_text(arr);
        cr_assert_null(want, "jansson wrote %s", want);
        cr_assert_null(pgn_json_dumps(arr), "bad string %zu was written", i);
        cr_assert_null(pgn_json_dumps(s));
        json_decref(s);
        json_decref(arr);
    }
}

/* xorshift: the same trees on every run */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static json_t *random_string(void) {
    static const char *const pieces[] = {"a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\x01", "\x1f",
                                         "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "0", "\x7f"};
    char buf[64] = "";
    size_t len = 0, n = next() % 8;
    for (size_t i = 0; i < n; i++) {
        const char *p = pieces[next() % (sizeof pieces / sizeof *pieces)];
        memcpy(buf + len, p, strlen(p));
        len += strlen(p);
    }
    return json_stringn(buf, len);
}

static json_t *random_value(int depth) {
    switch (next() % (depth < 4 ? 8 : 6)) {
    case 0: return json_null();
    case 1: return json_boolean(next() & 1);
    case 2: return json_integer((json_int_t)next() >> (next() % 64));
    case 3: { /* reals across the whole range, both signs, whole and not */
        double d = ldexp((double)(next() >> 11), (int)(next() % 200) - 150);
        if (next() & 1) d = -d;
        if (next() % 4 == 0) d = floor(d);
        return json_real(d);
    }
    case 4:
    case 5: return random_string();
    case 6: {
        json_t *a = json_array();
        for (size_t i = 0, n = next() % 5; i < n; i++) json_array_append_new(a, random_value(depth + 1));
        return a;
    }
    default: {
        json_t *o = json_object();
        for (size_t i = 0, n = next() % 5; i < n; i++) {
            json_t *k = random_string();
            json_object_set_new(o, json_string_value(k), random_value(depth + 1));
            json_decref(k);
        }
        return o;
    }
    }
}

Test(json_text, random_trees_give_janssons_bytes) {
    for (int i = 0; i < 5000; i++) same_text(random_value(0));
}

Test(json_text, a_job_object_gives_janssons_bytes) {
    json_error_t e;
    same_text(json_loads("{\"id\":14,\"kind\":\"inet\",\"spec\":{\"program\":\"@main = 1\",\"limits\":{\"timeout_s\":60.0}},"
                         "\"progress\":1.0,\"result\":{\"seconds\":6.61600097373594e-06,\"mips\":0.151148708104757},"
                         "\"tags\":{},\"runs\":[{\"attempt\":1,\"outcome\":\"succeeded\"}],\"error\":null}",
                         0, &e));
}
