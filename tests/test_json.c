/* test_json.c: pgn_json_dumps (engine/json_text.c) writes exactly jansson's compact text: the same
 * bytes as json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15)) for every
 * kind of value, every escape and real we can think of, and thousands of random trees; and no text
 * (NULL) where jansson writes none: a string that is not UTF-8. The writer (pgn_jw_*) writes the
 * same bytes for the same trees described call by call, and none for calls out of order; the
 * reader (pgn_json_loads) reads what jansson reads as jansson reads it, and refuses what it refuses. */
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

/* ---- the writer: the same bytes from calls that describe the tree ------------------------- */

/* Describes v to w call by call, choosing at random (the same way each run) to hand a whole
 * container over as a jansson value or as its text instead. */
static void describe(pgn_json_writer *w, const json_t *v) {
    uint64_t how = next() % 8;
    if ((json_is_object(v) || json_is_array(v)) && how == 0) {
        pgn_jw_value(w, v);
        return;
    }
    if ((json_is_object(v) || json_is_array(v)) && how == 1) {
        char *text = pgn_json_dumps(v);
        pgn_jw_raw(w, text, strlen(text));
        free(text);
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        pgn_jw_object(w);
        const char *key;
        json_t *member;
        json_object_foreach((json_t *)v, key, member) {
            pgn_jw_key(w, key);
            describe(w, member);
        }
        pgn_jw_end(w);
        break;
    }
    case JSON_ARRAY:
        pgn_jw_array(w);
        for (size_t i = 0; i < json_array_size(v); i++) describe(w, json_array_get(v, i));
        pgn_jw_end(w);
        break;
    case JSON_STRING: pgn_jw_string(w, json_string_value(v)); break;
    case JSON_INTEGER: pgn_jw_int(w, json_integer_value(v)); break;
    case JSON_REAL: pgn_jw_real(w, json_real_value(v)); break;
    case JSON_TRUE:
    case JSON_FALSE: pgn_jw_bool(w, json_is_true(v)); break;
    case JSON_NULL: pgn_jw_null(w); break;
    }
}

Test(json_writer, random_trees_described_call_by_call_give_janssons_bytes) {
    for (int i = 0; i < 5000; i++) {
        json_t *v = random_value(0); /* its strings hold no NUL: pgn_jw_string takes C strings */
        pgn_json_writer w = {0};
        describe(&w, v);
        char *want = jansson_text(v), *got = pgn_jw_take(&w);
        cr_assert_not_null(got, "no text where jansson wrote %s", want);
        cr_assert_str_eq(got, want);
        free(want);
        free(got);
        json_decref(v);
    }
}

Test(json_writer, calls_out_of_order_give_no_text) {
    pgn_json_writer w = {0};
    pgn_jw_object(&w);
    pgn_jw_int(&w, 1); /* a member without its key */
    pgn_jw_end(&w);
    cr_assert_null(pgn_jw_take(&w));

    pgn_jw_array(&w);
    pgn_jw_key(&w, "k"); /* a key in an array */
    cr_assert_null(pgn_jw_take(&w));

    pgn_jw_object(&w);
    pgn_jw_key(&w, "k"); /* a key with no value */
    pgn_jw_end(&w);
    cr_assert_null(pgn_jw_take(&w));

    pgn_jw_array(&w); /* never closed */
    cr_assert_null(pgn_jw_take(&w));

    pgn_jw_int(&w, 1);
    pgn_jw_int(&w, 2); /* two values at the top */
    cr_assert_null(pgn_jw_take(&w));

    pgn_jw_end(&w); /* nothing open */
    cr_assert_null(pgn_jw_take(&w));

    cr_assert_null(pgn_jw_take(&w), "nothing written is no text");

    pgn_jw_array(&w);
    pgn_jw_string(&w, "ab\xe2\x82"); /* not UTF-8 */
    pgn_jw_end(&w);
    cr_assert_null(pgn_jw_take(&w));

    for (int d = 0; d <= PGN_JSON_WRITER_DEPTH; d++) pgn_jw_array(&w);
    for (int d = 0; d <= PGN_JSON_WRITER_DEPTH; d++) pgn_jw_end(&w);
    cr_assert_null(pgn_jw_take(&w), "deeper than the writer's depth");

    /* and the writer is reset after each: a whole value now gives its text */
    pgn_jw_object(&w);
    pgn_jw_key(&w, "a");
    pgn_jw_array(&w);
    pgn_jw_null(&w);
    pgn_jw_raw(&w, "{\"x\":1}", 7);
    pgn_jw_value(&w, NULL);
    pgn_jw_end(&w);
    pgn_jw_end(&w);
    char *text = pgn_jw_take(&w);
    cr_assert_str_eq(text, "{\"a\":[null,{\"x\":1},null]}");
    free(text);
}

/* ---- the reader: jansson's values, or none where jansson reads none -------------------------- */

/* pgn_json_loads and json_loads agree on text: both no value, or equal values that print alike
 * (json_equal does not tell an object's order). */
static void same_reading(const char *text) {
    json_t *want = json_loads(text, JSON_DECODE_ANY, NULL), *got = pgn_json_loads(text);
    if (!want) {
        cr_assert_null(got, "read a value from '%s', which jansson refuses", text);
        return;
    }
    cr_assert_not_null(got, "no value from '%s', which jansson reads", text);
    cr_assert(json_equal(got, want), "'%s' read as another value", text);
    char *a = pgn_json_dumps(got), *b = pgn_json_dumps(want);
    cr_assert_str_eq(a, b, "'%s'", text);
    free(a);
    free(b);
    json_decref(got);
    json_decref(want);
}

Test(json_reader, random_trees_read_back_as_jansson_reads_them) {
    for (int i = 0; i < 5000; i++) {
        json_t *v = random_value(0);
        char *text = jansson_text(v);
        same_reading(text);
        free(text);
        text = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY); /* with whitespace between */
        same_reading(text);
        free(text);
        json_decref(v);
    }
}

Test(json_reader, every_token_and_every_fault_as_jansson_reads_them) {
    static const char *const texts[] = {
        /* values */
        "0", "-0", "7", "-12", "9223372036854775807", "-9223372036854775808", "0.5", "-0.0", "1e5", "1E5",
        "1e+5", "2.5e-3", "1e-400", "123456789012345678901234567890.5", "true", "false", "null", "\"\"",
        "\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", " \t\r\n[ 1 ,\n2 ] ",
        "{}", "[]", "{\"a\":{\"b\":[{}]}}", "{\"a\":1,\"a\":2}", "{\"b\":1,\"a\":2,\"b\":3}",
        /* left to jansson */
        "\"\\u00e9\"", "\"\\ud83d\\ude00\"", "\"\\u0000\"", "{\"\\u0000\":1}", "9223372036854775808",
        "-9223372036854775809", "1e400", "-1e400", "\"\\ud83d\"",
        "0.000000000000000000000000000000000000000000000000000000000000000000000000000000000001",
        /* not JSON */
        "", " ", "01", "-01", "1.", ".5", "+1", "-", "1e", "1e+", "tru", "truex", "nul", "[1,]", "[,1]", "[1 2]",
        "1 2", "{\"a\":1,}", "{\"a\"}", "{\"a\" 1}", "{a:1}", "{\"a\":}", "[", "{", "]", "\"abc", "\"\\x\"",
        "\"\x01\"", "\"\xff\"", "\"\xc0\x80\"", "\"\xed\xa0\x80\"", "[1]x", "{\"a\":1}}", "'a'", "NaN",
        "Infinity", "[-]",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) same_reading(texts[i]);
}

Test(json_reader, nesting_past_janssons_limit_is_refused_as_jansson_refuses_it) {
    char deep[5000];
    for (int depth = 2040; depth <= 2060; depth += 4) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        deep[2 * depth] = 0;
        same_reading(deep);
    }
}
