/* test_inet.c: the interaction-net runtime (engine/inet*.c): parse errors name line, column and
 * what was expected; numbers follow HVM2's semantics and print as HVM2 prints them; every
 * example in examples/inet reduces to its expected normal form with HVM2's interaction count;
 * limits, cancellation and the DUP-clone rule stop a run with a clear error; freed nodes are
 * reused; no input, however mangled, crashes the parser or the reducer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inet/inet.h"
#include "inet_gen.h"
#include "inet_memory_check.h"
#include "pgn_inet_dev.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static pgn_error parse_fails(const char *text) {
    pgn_inet_book *book = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_parse(text, strlen(text), &book, &err), -1, "accepted: %s", text);
    cr_assert_null(book);
    return err;
}

static pgn_inet_book *parse_ok(const char *text) {
    pgn_inet_book *book = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_parse(text, strlen(text), &book, &err), 0, "%s\n%s", err.message, text);
    return book;
}

/* Runs text on the host; returns "normal form" and sets *itrs, or fails the test. */
static char *run_ok(const char *text, const pgn_inet_limits *lim, uint64_t *itrs, uint64_t *peak) {
    pgn_inet_book *book = parse_ok(text);
    pgn_inet_result r;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_run_host(book, lim, NULL, NULL, &r, &err), 0, "%s: %s", pgn_error_code_name(err.code), err.message);
    pgn_inet_book_free(book);
    if (itrs) *itrs = r.interactions;
    if (peak) *peak = r.peak_nodes;
    return r.normal_form;
}

static pgn_error run_fails(const char *text, const pgn_inet_limits *lim, const pgn_run_hooks *hooks) {
    pgn_inet_book *book = parse_ok(text);
    pgn_inet_result r;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_run_host(book, lim, NULL, hooks, &r, &err), -1, "ran: %s", text);
    pgn_inet_book_free(book);
    return err;
}

static char *read_example(const char *name) {
    const char *root = getenv("PARAGON_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/inet/%s", root ? root : ".", name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s (PARAGON_SOURCE_ROOT)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* ---- parse errors ------------------------------------------------------------------------- */

Test(inet_parse, syntax_errors_name_line_column_and_what_was_expected) {
    struct {
        const char *text, *message;
    } cases[] = {
        {"@main (a a)", "line 1, col 7: expected '=' after the definition's name, found '('"},
        {"@main = (a a", "line 1, col 13: expected ')' to close the node opened at line 1, col 9, found end of input"},
        {"@main = {a a)", "line 1, col 13: expected '}' to close the node opened at line 1, col 9, found ')'"},
        {"@main = a\n  & a ~ ", "line 2, col 9: expected a tree"},
        {"@main = a\n  & a * ", "line 2, col 7: expected '~' between the two sides of a redex, found '*'"},
        {"@main = %", "line 1, col 9: expected a tree"},
        {"main = *", "line 1, col 1: expected '@' to start a definition"},
        {"@ = *", "line 1, col 2: expected a definition name after '@', found ' '"},
        {"@main = @", "line 1, col 10: expected a definition name after '@', found end of input"},
        {"@main = $ a", "line 1, col 11: expected '(' after '$'"},
        {"@main = ?[", "line 1, col 10: expected '(' after '?'"},
        {"@main = [?]", "line 1, col 10: expected an operator"},
        {"@main = [u24 1]", "line 1, col 14: expected ']' (a cast takes no operand)"},
        {"@main = [+1", "line 1, col 12: expected ']'"},
        {"// a comment\n\n@main = *\n@f = (* *) junk", "line 4, col 12: expected '@' to start a definition"},
        {"@main = \x01", "line 1, col 9: expected a tree: a variable, *, @name, a number, (a b), {a b}, $(a b) or "
                         "?(a b), found byte 0x01"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pgn_error err = parse_fails(cases[i].text);
        cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_program");
        cr_assert(strstr(err.message, cases[i].message), "case %zu: got \"%s\", want \"%s\"", i, err.message,
                  cases[i].message);
    }
}

Test(inet_parse, a_nul_byte_is_a_syntax_error_not_the_end) {
    const char text[] = "@main = *\0 junk";
    pgn_inet_book *book = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_parse(text, sizeof text - 1, &book, &err), -1);
    cr_assert(strstr(err.message, "line 1, col 10: expected '@' to start a definition (@name = tree), found byte 0x00"), "%s",
              err.message);
}

Test(inet_parse, variables_must_be_used_exactly_twice) {
    pgn_error err = parse_fails("@main = (a b)\n  & b ~ *");
    cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_program");
    cr_assert(strstr(err.message, "line 1, col 10: unbound variable 'a'"), "%s", err.message);

    err = parse_fails("@main = (x x)\n  & x ~ *");
    cr_assert(strstr(err.message, "line 2, col 5: variable 'x' used more than twice"), "%s", err.message);

    /* names are per definition: x in @f is not the x of @main */
    err = parse_fails("@main = (x x)\n@f = (x *)");
    cr_assert(strstr(err.message, "line 2, col 7: unbound variable 'x'"), "%s", err.message);
}

Test(inet_parse, references_and_main) {
    pgn_error err = parse_fails("@f = *");
    cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_program");
    cr_assert(strstr(err.message, "@main"), "%s", err.message);
    err = parse_fails("");
    cr_assert(strstr(err.message, "@main"), "%s", err.message);
    err = parse_fails("  // only a comment\n");
    cr_assert(strstr(err.message, "@main"), "%s", err.message);

    err = parse_fails("@main = (@f @g)\n@f = *");
    cr_assert(strstr(err.message, "line 1, col 13: undefined reference '@g'"), "%s", err.message);

    err = parse_fails("@main = *\n@main = *");
    cr_assert(strstr(err.message, "line 2, col 1: duplicate definition '@main'"), "%s", err.message);
}

Test(inet_parse, bad_numbers) {
    struct {
        const char *text, *message;
    } cases[] = {
        {"@main = 12x", "line 1, col 9: invalid number '12x': invalid digit"},
        {"@main = 0x", "invalid number '0x': expected digits"},
        {"@main = 0xZZ", "invalid number '0xZZ': invalid hexadecimal digit"},
        {"@main = 0b12", "invalid number '0b12': invalid binary digit"},
        {"@main = 1e5", "invalid number '1e5': invalid digit (floats need a '.')"},
        {"@main = 1.2.3", "invalid number '1.2.3': invalid float literal"},
        {"@main = 1.5e", "invalid number '1.5e': invalid float literal"},
        {"@main = +", "invalid number '+': expected digits"},
        {"@main = -", "invalid number '-': expected digits"},
        {"@main = 1-2", "invalid number '1-2'"},
        {"@main = 99999999999999999999999", "number too large"},
        {"@main = 1__0", "invalid digit"},
        {"@main = 10_", "invalid digit"},
        {"@main = [+1x]", "line 1, col 11: invalid number '1x'"},
        {"@main = infinite", "unbound variable 'infinite'"}, /* not a number: a variable */
        {"@main = +info", "invalid number '+info': invalid float literal"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pgn_error err = parse_fails(cases[i].text);
        cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_program");
        cr_assert(strstr(err.message, cases[i].message), "case %zu: got \"%s\", want \"%s\"", i, err.message,
                  cases[i].message);
    }
}

Test(inet_parse, book_layout_ids_safety_and_sharing_hint) {
    pgn_inet_book *b = parse_ok("@zeta = (a a)\n"
                                "@main = r &! @beta ~ (1 r)\n"
                                "@beta = ({x y} z) & @alpha ~ (x (y z))\n"
                                "@alpha = (a (* a))\n"
                                "@gamma = @beta\n");
    cr_assert_eq(b->n_defs, 5);
    const char *want[] = {"main", "alpha", "beta", "gamma", "zeta"}; /* @main, then by name */
    for (int i = 0; i < 5; i++) cr_assert_str_eq(b->defs[i].name, want[i]);
    cr_assert_eq(pgn_inet_book_find(b, "gamma"), 3);
    cr_assert_eq(pgn_inet_book_find(b, "nope"), -1);
    /* @beta has a DUP; @main and @gamma reference it; @alpha and @zeta are safe */
    cr_assert(!b->defs[2].safe && !b->defs[0].safe && !b->defs[3].safe);
    cr_assert(b->defs[1].safe && b->defs[4].safe);
    /* @beta: nodes CON({x y}, z), DUP(x, y), and the redex's CON(x, CON(y, z)) */
    cr_assert_eq(b->defs[2].node_len, 4);
    cr_assert_eq(b->defs[2].vars_len, 3);
    cr_assert_eq(b->defs[2].rbag_len, 1);
    cr_assert_eq(b->max_def_nodes, 4);
    cr_assert_eq(pgn_inet_tag(b->defs[2].root), PGN_INET_CON);
    /* `&!` marks a REF on the left of its redex */
    uint32_t left = pgn_inet_fst(b->rbag[b->defs[0].rbag_off]);
    cr_assert_eq(pgn_inet_tag(left), PGN_INET_REF);
    cr_assert_eq(pgn_inet_val(left), PGN_INET_REF_PAR | 2);
    pgn_inet_book_free(b);
}

Test(inet_parse, deep_nesting_is_parsed_and_printed_without_recursion) {
    size_t depth = 200000;
    char *text = malloc(depth * 4 + 32);
    char *p = text + sprintf(text, "@main = ");
    for (size_t i = 0; i < depth; i++) *p++ = '(';
    *p++ = '*';
    for (size_t i = 0; i < depth; i++) p += sprintf(p, " *)");
    pgn_inet_book *b = parse_ok(text);
    cr_assert_eq(b->n_nodes, depth);
    pgn_inet_result r;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_run_host(b, NULL, NULL, NULL, &r, &err), 0, "%s", err.message);
    cr_assert_eq(strlen(r.normal_form), depth * 4 + 1); /* printed back, iteratively too */
    pgn_inet_result_free(&r);
    pgn_inet_book_free(b);
    free(text);

    /* a million open nodes that never close: an error at the end, not a stack overflow */
    depth = 1000000;
    text = malloc(depth + 16);
    strcpy(text, "@main = ");
    memset(text + 8, '{', depth);
    text[8 + depth] = '\0';
    pgn_error e = parse_fails(text);
    cr_assert(strstr(e.message, "line 1, col 1000009: expected a tree"), "%s", e.message);
    cr_assert(strstr(e.message, "found end of input"), "%s", e.message);
    free(text);
}

/* ---- numbers ------------------------------------------------------------------------------ */

static uint32_t num(const char *lit) {
    uint32_t n;
    const char *why = NULL;
    if (lit[0] == '[') { /* through the parser, for operators */
        char text[64];
        snprintf(text, sizeof text, "@main = %s", lit);
        pgn_inet_book *b = parse_ok(text);
        n = pgn_inet_val(b->defs[0].root);
        pgn_inet_book_free(b);
        return n;
    }
    cr_assert_eq(pgn_inet_numb_parse(lit, strlen(lit), &n, &why), 0, "%s: %s", lit, why);
    return n;
}

static const char *show(uint32_t n) {
    static char buf[PGN_INET_NUMB_TEXT];
    return pgn_inet_numb_show(n, buf);
}

Test(inet_num, literals) {
    struct {
        const char *lit, *shown;
    } cases[] = {
        {"0", "0"}, {"123", "123"}, {"0x1F", "31"}, {"0b101", "5"}, {"1_000_000", "1000000"},
        {"16777215", "16777215"}, {"16777216", "0"}, /* HVM2 keeps the low 24 bits */
        {"+5", "+5"}, {"-5", "-5"}, {"+0", "+0"}, {"-0x10", "-16"}, {"+8388608", "-8388608"},
        {"1.5", "1.5"}, {"-0.0", "-0.0"}, {"0.1", "0.10000038"}, {".5", "0.5"}, {"5.", "5.0"},
        {"1.5e3", "1500.0"}, {"1.0e20", "1.0000018e20"}, {"1.0e-5", "1.0000076e-5"}, {"+inf", "+inf"},
        {"-inf", "-inf"}, {"inf", "+inf"}, {"+NaN", "+NaN"}, {"-NaN", "+NaN"}, {"123456.0", "123456.0"},
        {"1.0e16", "1.0000058e16"}, {"0.0001", "9.999983e-5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        cr_assert_str_eq(show(num(cases[i].lit)), cases[i].shown, "%s", cases[i].lit);
}

Test(inet_num, shortest_float_form_matches_rust_debug) {
    struct {
        float f;
        const char *shown;
    } cases[] = {
        {1.0f, "1.0"},           {0.1f, "0.1"},          {1e16f, "1e16"},        {9.999999e15f, "9999999000000000.0"},
        {1e-4f, "0.0001"},       {9.9e-5f, "9.9e-5"},    {1.5e-5f, "1.5e-5"},    {-0.0f, "-0.0"},
        {123456789.0f, "123456790.0"}, {3.75f, "3.75"}, {1e20f, "1e20"},        {-2.5e-7f, "-2.5e-7"},
        {16777216.0f, "16777216.0"}, {0.3f, "0.3"},     {1e15f, "1000000000000000.0"},
        {-425.390625f, "-425.39063"}, /* an exact tie between two shortest forms rounds up, as in Rust */
        {1.17549435e-38f, "1.1754944e-38"}, {1e-45f, "1e-45"}, {3.4028235e38f, "3.4028235e38"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[PGN_INET_NUMB_TEXT];
        pgn_inet_f32_show(cases[i].f, buf);
        cr_assert_str_eq(buf, cases[i].shown, "case %zu", i);
    }
}

Test(inet_num, f24_rounds_to_nearest_even_and_has_one_nan) {
    /* 1.0 + half of f24's last place: a tie, and the kept bits are even: stays */
    cr_assert_eq(pgn_inet_get_f24(pgn_inet_f24(pgn_float(0x3F800080u))), 1.0f);
    /* the same tie above an odd kept value rounds up to even */
    cr_assert_eq(pgn_bits(pgn_inet_get_f24(pgn_inet_f24(pgn_float(0x3F800180u)))), 0x3F800200u);
    /* just above a tie rounds up, just below down */
    cr_assert_eq(pgn_bits(pgn_inet_get_f24(pgn_inet_f24(pgn_float(0x3F800081u)))), 0x3F800100u);
    cr_assert_eq(pgn_bits(pgn_inet_get_f24(pgn_inet_f24(pgn_float(0x3F80007Fu)))), 0x3F800000u);
    /* every NaN, even one whose payload is only in the dropped bits, becomes the one NaN of the
     * literal +NaN, so host and devices agree on its bits */
    cr_assert_eq(pgn_inet_f24(pgn_float(0x7F800001u)), PGN_INET_F24_NAN);
    cr_assert_eq(pgn_inet_f24(pgn_float(0xFFC00000u)), PGN_INET_F24_NAN);
    cr_assert_eq(num("+NaN"), PGN_INET_F24_NAN);
    cr_assert(isnan(pgn_inet_get_f24(PGN_INET_F24_NAN)));
    cr_assert_eq(pgn_inet_operate(pgn_inet_operate(num("0.0"), num("[/]")), num("0.0")), PGN_INET_F24_NAN);
    /* the largest finite f32 rounds to infinity */
    cr_assert(isinf(pgn_inet_get_f24(pgn_inet_f24(3.4028235e38f))));
}

Test(inet_num, operator_table) {
    /* a ~ $(op $(b r)) computes r = a op b; the table checks operate() the same way, via the
     * partial application the first step makes */
    struct {
        const char *a, *op, *b, *r;
    } cases[] = {
        /* u24 */
        {"100", "[+]", "7", "107"}, {"100", "[-]", "7", "93"}, {"100", "[:-]", "7", "16777123"},
        {"100", "[*]", "7", "700"}, {"100", "[/]", "7", "14"}, {"100", "[:/]", "7", "0"},
        {"100", "[%]", "7", "2"}, {"100", "[:%]", "7", "7"}, {"100", "[=]", "7", "0"},
        {"100", "[!]", "7", "1"}, {"100", "[<]", "7", "0"}, {"100", "[>]", "7", "1"},
        {"100", "[&]", "7", "4"}, {"100", "[|]", "7", "103"}, {"100", "[^]", "7", "99"},
        {"100", "[<<]", "7", "12800"}, {"100", "[:<<]", "7", "112"}, {"100", "[>>]", "7", "0"},
        {"100", "[:>>]", "7", "0"}, {"0", "[-]", "1", "16777215"}, {"7", "[/]", "0", "0"},
        {"7", "[%]", "0", "0"}, {"1", "[<<]", "24", "0"},
        /* i24 */
        {"-100", "[+]", "+7", "-93"}, {"-100", "[:-]", "+7", "+107"}, {"-100", "[*]", "+7", "-700"},
        {"-100", "[/]", "+7", "-14"}, {"-100", "[%]", "+7", "-2"}, {"-100", "[<]", "+7", "1"},
        {"-100", "[&]", "+7", "+4"}, {"-100", "[^]", "+7", "-101"}, {"-100", "[<<]", "+7", "+0"},
        {"+8388607", "[+]", "+1", "-8388608"}, {"+4096", "[*]", "+4096", "+0"},
        {"-8388608", "[/]", "-1", "-8388608"}, {"+7", "[/]", "+0", "+0"},
        /* f24 */
        {"1.5", "[+]", "2.25", "3.75"}, {"1.5", "[-]", "2.25", "-0.75"}, {"1.5", "[:-]", "2.25", "0.75"},
        {"1.5", "[*]", "2.25", "3.375"}, {"1.5", "[/]", "2.25", "0.66667175"}, {"1.5", "[%]", "2.25", "1.5"},
        {"1.5", "[:%]", "2.25", "0.75"}, {"1.5", "[=]", "1.5", "1"}, {"1.5", "[<]", "2.25", "1"},
        {"1.0", "[&]", "-1.0", "2.3562012"}, {"2.0", "[|]", "8.0", "3.0"}, {"2.0", "[^]", "0.5", "1.4142151"},
        {"0.5", "[<<]", "1.0", "0.99749756"}, {"0.25", "[>>]", "0.5", "0.93159485"},
        {"1.5", "[:<<]", "2.25", "0.0"}, {"1.0", "[/]", "0.0", "+inf"}, {"0.0", "[/]", "0.0", "+NaN"},
        {"+NaN", "[=]", "+NaN", "0"},
        /* the right operand's type decides: 3 as f24 bits is tiny, so 3 + 1.5 is 1.5 */
        {"3", "[+]", "1.5", "1.5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint32_t partial = pgn_inet_operate(num(cases[i].a), num(cases[i].op));
        uint32_t r = pgn_inet_operate(partial, num(cases[i].b));
        cr_assert_str_eq(show(r), cases[i].r, "%s %s %s", cases[i].a, cases[i].op, cases[i].b);
    }
}

Test(inet_num, symbols_partials_and_casts) {
    cr_assert_str_eq(show(num("[+]")), "[+]");
    cr_assert_str_eq(show(num("[:>>]")), "[:>>]");
    cr_assert_str_eq(show(num("[u24]")), "[u24]");
    cr_assert_str_eq(show(num("[f24]")), "[f24]");
    cr_assert_str_eq(show(num("[+1]")), "[+0x0000001]");
    cr_assert_str_eq(show(num("[:-0xFFFFFF]")), "[:-0x0FFFFFF]");
    cr_assert_str_eq(show(num("[*-1]")), "[*0x0FFFFFF]");
    /* a partial applied to a value: its payload is the left operand; flipped ops swap sides */
    cr_assert_str_eq(show(pgn_inet_operate(num("[-1]"), num("41"))), "16777176");
    cr_assert_str_eq(show(pgn_inet_operate(num("41"), num("[:-1]"))), "40");
    /* casts, either argument order */
    struct {
        const char *cast, *v, *r;
    } casts[] = {
        {"[u24]", "-1", "16777215"},  {"[i24]", "16777215", "-1"},  {"[f24]", "16777215", "16777216.0"},
        {"[f24]", "-100", "-100.0"},  {"[u24]", "3.75", "3"},       {"[u24]", "-1.5", "0"},
        {"[u24]", "1.0e9", "16777215"}, {"[u24]", "+NaN", "0"},     {"[i24]", "-3.75", "-3"},
        {"[i24]", "-1.0e9", "-8388608"}, {"[i24]", "+NaN", "+0"},   {"[f24]", "0.5", "0.5"},
        {"[u24]", "5", "5"},          {"[i24]", "-5", "-5"},
    };
    for (size_t i = 0; i < sizeof casts / sizeof *casts; i++) {
        cr_assert_str_eq(show(pgn_inet_operate(num(casts[i].cast), num(casts[i].v))), casts[i].r, "%s %s",
                         casts[i].cast, casts[i].v);
        cr_assert_str_eq(show(pgn_inet_operate(num(casts[i].v), num(casts[i].cast))), casts[i].r);
    }
    /* no operator, or two: 0 */
    cr_assert_str_eq(show(pgn_inet_operate(num("3"), num("4"))), "0");
    cr_assert_str_eq(show(pgn_inet_operate(num("[+]"), num("[*]"))), "0");
    cr_assert_str_eq(show(pgn_inet_operate(num("[+1]"), num("[*2]"))), "0");
}

/* ---- readback ----------------------------------------------------------------------------- */

/* Prints the heap nodes[0..n) with vars {NONE, root port}; checks the memory against the bound. */
static char *print_heap(const uint64_t *nodes, size_t n, uint32_t root_port, pgn_error *err) {
    pgn_inet_book *book = parse_ok("@main = *");
    uint32_t vars[2] = {PGN_INET_NONE, root_port};
    uint64_t peak = 0, text_max = 0;
    char *nf = pgn_inet_readback(book, nodes, n, vars, 2, pgn_inet_port(PGN_INET_VAR, 1), &peak, err);
    uint64_t bound = pgn_inet_readback_bound(book, n, 2, &text_max);
    if (nf) {
        cr_assert_leq(peak, bound, "%llu bytes, bound %llu", (unsigned long long)peak, (unsigned long long)bound);
        cr_assert_leq(strlen(nf) + 1, text_max);
        cr_assert_geq(peak, strlen(nf) + 1);
    }
    pgn_inet_book_free(book);
    return nf;
}

Test(inet_print, the_readback_stays_within_its_bound_and_names_a_corrupt_heap) {
    enum { N = 2000 };
    uint64_t *nodes = calloc(N + 1, sizeof *nodes);
    cr_assert_not_null(nodes);
    uint32_t era = pgn_inet_port(PGN_INET_ERA, 0);
    /* left-nested, the deepest stack a tree makes, of operators (whose brackets are the widest)
     * with the longest numbers: $($($(* -1234511000000000.0) -1234511000000000.0) ...) */
    uint32_t num = pgn_inet_port(PGN_INET_NUM, pgn_inet_f24(-1.2345e15f));
    for (uint32_t i = 1; i <= N; i++)
        nodes[i] = pgn_inet_pair(i < N ? pgn_inet_port(PGN_INET_OPR, i + 1) : era, num);
    pgn_error err = {0};
    char *nf = print_heap(nodes, N + 1, pgn_inet_port(PGN_INET_OPR, 1), &err);
    cr_assert_not_null(nf, "%s", err.message);
    cr_assert(!strncmp(nf, "$($($(", 6) && strstr(nf, "$(* -1234511000000000.0) -1234511000000000.0)"), "%.80s",
              nf);
    free(nf);

    /* an eraser carries no value: one that does is corruption, not punctuation */
    nodes[N] = pgn_inet_pair(pgn_inet_port(PGN_INET_ERA, ')'), num);
    cr_assert_null(print_heap(nodes, N + 1, pgn_inet_port(PGN_INET_OPR, 1), &err));
    cr_assert_str_eq(err.message, "readback: the heap is corrupt (an eraser with a value)");
    /* a node reached twice */
    nodes[N] = pgn_inet_pair(pgn_inet_port(PGN_INET_OPR, 1), num);
    cr_assert_null(print_heap(nodes, N + 1, pgn_inet_port(PGN_INET_OPR, 1), &err));
    cr_assert_str_eq(err.message, "readback: the heap is corrupt (a node reachable twice)");
    free(nodes);
}

/* ---- reduction ---------------------------------------------------------------------------- */

Test(inet_run, every_example_matches_its_expected_normal_form_and_count) {
    const char *names[] = {"fib", "tree_sum", "tree_dup", "sort", "loop", "loops", "u24_ops", "i24_ops", "f24_ops"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.hvm", names[i]);
        char *program = read_example(file);
        snprintf(file, sizeof file, "%s.expected", names[i]);
        char *expected = read_example(file);
        uint64_t itrs;
        char *nf = run_ok(program, NULL, &itrs, NULL);
        size_t len = strlen(nf) + 64;
        char *got = malloc(len);
        snprintf(got, len, "Result: %s\n- ITRS: %llu\n", nf, (unsigned long long)itrs);
        cr_assert_str_eq(got, expected, "%s", names[i]);
        free(got);
        free(nf);
        free(program);
        free(expected);
    }
}

Test(inet_run, small_programs_counted_by_hand) {
    struct {
        const char *text, *nf;
        uint64_t itrs;
    } cases[] = {
        /* CALL @main, CALL @id, ANNI */
        {"@id = (a a)\n@main = r & @id ~ (5 r)", "5", 3},
        /* nothing but the first CALL; the root is data */
        {"@main = (1 (+2 (3.5 *)))", "(1 (+2 (3.5 *)))", 1},
        /* free wires print as x0, x1, ... in order of appearance, as HVM2's tests normalise them */
        {"@main = (a (b a)) & * ~ b", "(x0 (* x0))", 1},
        {"@main = (a (b (c (d (e (f (g (h (i (j (k (k (j (i (h (g (f (e (d (c (b a)))))))))))))))))))))",
         "(x0 (x1 (x2 (x3 (x4 (x5 (x6 (x7 (x8 (x9 (x10 (x10 (x9 (x8 (x7 (x6 (x5 (x4 (x3 (x2 (x1 x0)))))))))))))))))))))", 1},
        /* ERA ~ CON: ERAS, then two VOIDs against numbers */
        {"@main = * & * ~ (1 2)", "*", 4},
        /* NUM ~ DUP copies the number (ERAS) */
        {"@main = (a b) & 7 ~ {a b}", "(7 7)", 2},
        /* DUP ~ CON commutes (4 new nodes), then each number meets a DUP copy (ERAS) */
        {"@main = (a b) & {a b} ~ (1 2)", "((1 2) (1 2))", 4},
        /* OPER waits for its operand: the swap counts, then the computation */
        {"@main = r & 3 ~ $([+] $(x r)) & x ~ 4", "7", 4},
        /* SWIT on 0: (10 *) ~ (r *) is an ANNI whose erasers then meet (VOID) */
        {"@main = r & 0 ~ ?((10 *) r)", "10", 4},
        /* SWIT on 5: (* (p p)) ~ (* (4 r)): ANNI, VOID, ANNI */
        {"@main = r & 5 ~ ?((* (p p)) r)", "4", 5},
        /* REF ~ ERA and REF ~ NUM vanish without expanding */
        {"@f = (a a)\n@main = * & @f ~ * & @f ~ 1", "*", 3},
        /* a DUP may copy a definition that holds no DUP: twice(inc)(0) is CALL @main, two ANNIs,
         * the copy (ERAS), then CALL, ANNI and OPER for each of the two increments */
        {"@inc = ($([+1] r) r)\n@main = r & ({f0 f1} (x a)) ~ (@inc (0 r)) & f0 ~ (b a) & f1 ~ (x b)", "2", 10},
        /* a wire closed on itself just disappears */
        {"@main = * & a ~ a", "*", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint64_t itrs;
        char *nf = run_ok(cases[i].text, NULL, &itrs, NULL);
        cr_assert_str_eq(nf, cases[i].nf, "case %zu", i);
        cr_assert_eq(itrs, cases[i].itrs, "case %zu: %llu interactions", i, (unsigned long long)itrs);
        free(nf);
    }
}

Test(inet_run, copying_a_definition_with_a_dup_through_a_dup_is_an_error) {
    pgn_error err = run_fails("@c2 = ({f0 f1} (x r)) & f0 ~ (a r) & f1 ~ (x a)\n"
                              "@main = r & @c2 ~ (@c2 (@inc (0 r)))\n"
                              "@inc = ($([+1] r) r)\n",
                              NULL, NULL);
    cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_program");
    cr_assert(strstr(err.message, "@c2"), "%s", err.message);
    cr_assert(strstr(err.message, "non-affine"), "%s", err.message);
    /* unsafety propagates: @wrap has no DUP itself but references @c2 */
    err = run_fails("@c2 = ({f0 f1} (x r)) & f0 ~ (a r) & f1 ~ (x a)\n"
                    "@wrap = (f r) & @c2 ~ (f r)\n"
                    "@main = r & {a b} ~ @wrap & a ~ * & b ~ r\n",
                    NULL, NULL);
    cr_assert(strstr(err.message, "@wrap"), "%s", err.message);
}

Test(inet_run, limits_stop_the_run_and_name_the_limit) {
    char *loop = read_example("loop.hvm");
    pgn_inet_limits lim = {.max_interactions = 1000};
    pgn_error err = run_fails(loop, &lim, NULL);
    cr_assert_str_eq(pgn_error_code_name(err.code), "limit_exceeded");
    cr_assert_str_eq(err.field, "limits.max_interactions");
    cr_assert_str_eq(err.message, "max_interactions: 1000 interactions reached");

    /* a limit equal to what the program needs is enough; one less is not */
    lim.max_interactions = 5000006;
    uint64_t itrs;
    free(run_ok(loop, &lim, &itrs, NULL));
    cr_assert_eq(itrs, 5000006);
    lim.max_interactions = 5000005;
    err = run_fails(loop, &lim, NULL);
    cr_assert_str_eq(err.field, "limits.max_interactions");
    free(loop);

    char *tree = read_example("tree_sum.hvm");
    lim = (pgn_inet_limits){.max_nodes = 20};
    err = run_fails(tree, &lim, NULL);
    cr_assert_str_eq(pgn_error_code_name(err.code), "limit_exceeded");
    cr_assert_str_eq(err.field, "limits.max_nodes");
    cr_assert(strstr(err.message, "max_nodes: 20 live nodes reached"), "%s", err.message);
    lim.max_nodes = 1000;
    free(run_ok(tree, &lim, NULL, NULL));
    free(tree);

    /* 84 million interactions stopped by the clock long before they finish */
    lim = (pgn_inet_limits){.timeout_s = 0.01};
    err = run_fails("@loop = (?((0 @loop) r) r)\n@main = r & @loop ~ (16777215 r)", &lim, NULL);
    cr_assert_str_eq(pgn_error_code_name(err.code), "limit_exceeded");
    cr_assert_str_eq(err.field, "limits.timeout_s");
    cr_assert(strstr(err.message, "timeout_s: 0.01 s reached"), "%s", err.message);
}

/* ---- memory ------------------------------------------------------------------------------- */

/* Runs text on the host under max_nodes; the result (or the stopped run's peaks) and the error. */
static int run_with(const char *text, uint64_t max_nodes, pgn_inet_result *r, pgn_error *err) {
    pgn_inet_book *book = parse_ok(text);
    pgn_inet_limits lim = {.max_nodes = max_nodes};
    *err = (pgn_error){0};
    int rc = pgn_inet_run_host(book, &lim, NULL, NULL, r, err);
    pgn_inet_book_free(book);
    return rc;
}

Test(inet_memory, the_estimate_is_the_reducers_caps_in_bytes) {
    const char *prog = INET_RUNAWAY; /* largest definition: 4 nodes, 3 variables, 2 redexes */
    pgn_inet_memory m = inet_estimate(prog, 4096, NULL, 0);
    cr_assert_eq(m.workers, 0);
    cr_assert_eq(m.node_slots, 4097, "max_nodes and slot 0");
    cr_assert_eq(m.var_slots, 1 + 2 * 4096 + 4, "two a node, slot 0, and a COMMUTE's four above the cap");
    cr_assert_eq(m.bag_slots, 4096 + 4, "a redex a node, and a rule's four links");
    cr_assert_eq(m.host.nodes, 8 * m.node_slots);
    cr_assert_eq(m.host.vars, 4 * m.var_slots);
    cr_assert_eq(m.host.bags, 8 * m.bag_slots);
    cr_assert_eq(m.host.growth, m.host.bags, "the largest buffer, held twice while realloc copies it");
    cr_assert_eq(m.device.total, 0);
    cr_assert_eq(m.total, m.host.total);
    cr_assert_eq(m.host.total, m.host.nodes + m.host.vars + m.host.bags + m.host.tables + m.host.growth + m.host.book +
                                   m.host.workers + m.host.readback);

    /* a CPU device runs a work-item per compute unit, each holding back a chunk of 256 slots */
    pgn_device_info cpu = {.type = PGN_DEVICE_CPU, .compute_units = 2};
    m = inet_estimate(prog, 4096, &cpu, 0);
    cr_assert_eq(m.workers, 2);
    cr_assert_eq(m.node_slots, 4096 + 3 * 256);
    cr_assert_eq(m.var_slots, 2 * m.node_slots);
    cr_assert_eq(m.bag_slots, 2 * (m.node_slots + 4), "with two work-items each bag may hold every redex");
    cr_assert_eq(m.device.bags, 8 * m.bag_slots);
    cr_assert_gt(m.host.readback, m.device.nodes + m.device.vars, "the heaps come down to be printed");
    cr_assert_eq(m.total, m.device.total + m.host.total);
    cr_assert_eq(inet_estimate(prog, 4096, &cpu, 8).workers, 8, "work_items wins over the default");

    /* a GPU's thousands of work-items share the bound instead of each holding all of it */
    pgn_device_info gpu = {.type = PGN_DEVICE_GPU, .compute_units = 10};
    m = inet_estimate(prog, 1u << 20, &gpu, 0);
    cr_assert_eq(m.workers, 640);
    cr_assert_leq(m.bag_slots, 2 * m.node_slots + 640 * (1 + 4), "%llu bag slots for %llu nodes",
                  (unsigned long long)m.bag_slots, (unsigned long long)m.node_slots);
}

Test(inet_memory, the_bound_is_finite_for_any_max_nodes_and_grows_with_it) {
    pgn_device_info cpu = {.type = PGN_DEVICE_CPU, .compute_units = 2};
    const pgn_device_info *where[] = {NULL, &cpu};
    for (int w = 0; w < 2; w++) {
        /* the default: a few hundred MiB of heaps; most of the rest would print a normal form as
         * large as the heap (up to 35 bytes a node) */
        pgn_inet_memory d = inet_estimate(INET_RUNAWAY, 16777216, where[w], 0);
        const pgn_inet_memory_part *p = w ? &d.device : &d.host;
        uint64_t heaps = p->nodes + p->vars + p->bags;
        cr_assert(heaps >= (256ull << 20) && heaps <= (640ull << 20), "%d: %llu bytes of heaps", w,
                  (unsigned long long)heaps);
        cr_assert_lt(d.total, 4ull << 30, "%d: %llu bytes", w, (unsigned long long)d.total);
        /* the most the spec accepts: the heaps' 29-bit address space binds, tens of GiB (on a
         * device, below the values that name a work-group's local slots) */
        pgn_inet_memory big = inet_estimate(INET_RUNAWAY, 1ull << 31, where[w], 0);
        cr_assert(big.total >= (32ull << 30) && big.total < (128ull << 30), "%d: %llu bytes", w,
                  (unsigned long long)big.total);
        cr_assert_eq(big.node_slots, w ? PGN_INET_DEV_SLOTS : PGN_INET_VAL_MAX - 1);
        /* no limit at all is the same address space */
        pgn_inet_memory none = inet_estimate(INET_RUNAWAY, 0, where[w], 0);
        cr_assert_eq(none.total, big.total);
        uint64_t last = 0;
        for (uint64_t n = 16; n <= (1ull << 31); n *= 4) {
            uint64_t t = inet_estimate(INET_RUNAWAY, n, where[w], 0).total;
            cr_assert_geq(t, last, "%d: max_nodes %llu", w, (unsigned long long)n);
            last = t;
        }
    }
    /* a program that does not parse has no estimate */
    pgn_inet_spec spec = {.program = "@main = (a", .max_nodes = 16};
    pgn_inet_memory m;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_memory_estimate(&spec, NULL, &m, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_program");
}

Test(inet_memory, a_runaway_net_stops_at_max_nodes_within_its_estimate) {
    pgn_inet_result r;
    pgn_error err;
    cr_assert_eq(run_with(INET_RUNAWAY, 4096, &r, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "limit_exceeded");
    cr_assert_str_eq(err.field, "limits.max_nodes");
    cr_assert(strstr(err.message, "max_nodes: 4096 live nodes reached"), "%s", err.message);
    cr_assert_null(r.normal_form);
    cr_assert_eq(r.peak_nodes, 4096);
    cr_assert_gt(r.peak_bytes, 8 * 4096, "the heap grew to the limit");
    inet_assert_within(&r, INET_RUNAWAY, 4096, NULL, 0, "runaway");
}

Test(inet_memory, redexes_without_nodes_never_reach_the_bag) {
    /* 400,000 of them under a bag of 64 + 4 redexes */
    pgn_inet_result r;
    pgn_error err;
    cr_assert_eq(run_with(INET_VOID_FLOOD, 64, &r, &err), 0, "%s: %s", pgn_error_code_name(err.code), err.message);
    cr_assert_str_eq(r.normal_form, "0");
    cr_assert_gt(r.interactions, 900000);
    inet_assert_within(&r, INET_VOID_FLOOD, 64, NULL, 0, "void flood");
    cr_assert_lt(inet_estimate(INET_VOID_FLOOD, 64, NULL, 0).host.bags, 1024);
    pgn_inet_result_free(&r);
}

Test(inet_memory, variables_past_their_cap_fail_on_max_nodes) {
    /* seven variables (the root's and six) and no node: more than two a node of max_nodes 2.
     * @main's plan makes one of them (a wire's first end takes the port it meets), so the cap
     * is checked on the interpreted CALL, which every definition too deep to plan still takes. */
    const char *wires = "@main = a0 & a0 ~ a1 & a1 ~ a2 & a2 ~ a3 & a3 ~ a4 & a4 ~ a5 & a5 ~ *";
    pgn_inet_result r;
    pgn_error err;
    cr_assert_eq(run_with(wires, 2, &r, &err), 0, "%s", err.message);
    cr_assert_str_eq(r.normal_form, "*");
    pgn_inet_result_free(&r);
    setenv("PARAGON_INET_PLANS", "0", 1);
    cr_assert_eq(run_with(wires, 2, &r, &err), -1);
    cr_assert_str_eq(pgn_error_code_name(err.code), "limit_exceeded");
    cr_assert_str_eq(err.field, "limits.max_nodes");
    cr_assert_str_eq(err.message, "max_nodes: the variable heap is full at 4 variables, the most 2 nodes allow "
                                  "(after 1 interactions)");
    inet_assert_within(&r, wires, 2, NULL, 0, "wires");
    cr_assert_eq(run_with(wires, 3, &r, &err), -1);
    cr_assert(strstr(err.message, "full at 6 variables, the most 3 nodes allow"), "%s", err.message);
    /* four are enough */
    cr_assert_eq(run_with(wires, 4, &r, &err), 0, "%s", err.message);
    cr_assert_str_eq(r.normal_form, "*");
    pgn_inet_result_free(&r);
    unsetenv("PARAGON_INET_PLANS");
}

Test(inet_memory, every_example_stays_within_its_estimate) {
    const char *names[] = {"fib", "tree_sum", "tree_dup", "sort", "loop", "loops", "u24_ops", "i24_ops", "f24_ops"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.hvm", names[i]);
        char *program = read_example(file);
        pgn_inet_result r;
        pgn_error err;
        cr_assert_eq(run_with(program, 4096, &r, &err), 0, "%s: %s", names[i], err.message);
        inet_assert_within(&r, program, 4096, NULL, 0, names[i]);
        pgn_inet_result_free(&r);
        free(program);
    }
}

static bool stop_on_third_poll(void *ctx) { return ++*(int *)ctx >= 3; }

Test(inet_run, should_stop_cancels) {
    int polls = 0;
    pgn_run_hooks hooks = {.ctx = &polls, .should_stop = stop_on_third_poll};
    pgn_error err = run_fails("@loop = (?((0 @loop) r) r)\n@main = r & @loop ~ (16777215 r)", NULL, &hooks);
    cr_assert_str_eq(pgn_error_code_name(err.code), "cancelled");
    cr_assert_eq(polls, 3);
}

Test(inet_run, freed_nodes_are_reused_so_memory_follows_the_live_net) {
    uint64_t itrs, peak;
    free(run_ok("@loop = (?((0 @loop) r) r)\n@main = r & @loop ~ (1000000 r)", NULL, &itrs, &peak));
    cr_assert_eq(itrs, 5000006);
    cr_assert_leq(peak, 8, "a loop keeps %llu nodes live", (unsigned long long)peak);
    /* and under a node limit far below the interaction count */
    pgn_inet_limits lim = {.max_nodes = 16};
    free(run_ok("@loop = (?((0 @loop) r) r)\n@main = r & @loop ~ (1000000 r)", &lim, NULL, NULL));

    char *tree = read_example("tree_sum.hvm");
    free(run_ok(tree, NULL, &itrs, &peak));
    cr_assert_gt(itrs, 2000000);
    cr_assert_lt(peak, 200, "the tree sum kept %llu nodes live", (unsigned long long)peak);
    free(tree);
}

typedef struct {
    int interactions, mips, progress;
    double last_interactions, last_mips;
} reports;

static void count_metric(void *ctx, const char *name, int64_t step, double value) {
    reports *r = ctx;
    if (!strcmp(name, "interactions")) {
        cr_assert_eq((double)step, value);
        cr_assert_geq(value, r->last_interactions, "the count only grows");
        r->interactions++;
        r->last_interactions = value;
    } else {
        cr_assert_str_eq(name, "mips");
        cr_assert_eq((double)step, r->last_interactions, "the rate at the count just reported");
        cr_assert_gt(value, 0);
        r->mips++;
        r->last_mips = value;
    }
}

static void count_progress(void *ctx, double fraction) {
    (void)fraction;
    ((reports *)ctx)->progress++;
}

/* How far a program is cannot be known before its normal form: a run reports its interactions
 * and their rate, never a fraction (not even the share of a limit it has used). */
Test(inet_run, progress_reports_interactions_and_mips_not_a_fraction) {
    /* a loop that never ends, in constant memory, stopped by the clock after 1.2 s */
    reports rep = {0};
    pgn_run_hooks hooks = {.ctx = &rep, .on_metric = count_metric, .on_progress = count_progress};
    pgn_inet_limits lim = {.timeout_s = 1.2, .max_interactions = UINT64_MAX / 2};
    pgn_error err = run_fails("@f = (x r) & @f ~ (x r)\n@main = r & @f ~ (1 r)", &lim, &hooks);
    cr_assert_str_eq(err.field, "limits.timeout_s");
    cr_assert_geq(rep.interactions, 2, "a report every %g s", PGN_INET_REPORT_EVERY_S);
    cr_assert_eq(rep.mips, rep.interactions);
    cr_assert_gt(rep.last_interactions, 0);
    /* the rate is the count over the time so far: no more than the count over the first report's time */
    cr_assert_leq(rep.last_mips, rep.last_interactions / PGN_INET_REPORT_EVERY_S / 1e6);
    cr_assert_eq(rep.progress, 0, "no fraction reported");
}

/* ---- robustness --------------------------------------------------------------------------- */

/* A small deterministic generator, so a failure names a reproducible case. */
static uint64_t next_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

Test(inet_fuzz, mangled_programs_never_crash) {
    const char *names[] = {"fib.hvm", "sort.hvm", "tree_dup.hvm", "f24_ops.hvm"};
    static const char alphabet[] = "(){}$?@*&!~=[]:+-<>/%^|_.0123456789abxyz \n/";
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    int parsed = 0, ran = 0;
    for (size_t f = 0; f < sizeof names / sizeof *names; f++) {
        char *base = read_example(names[f]);
        size_t len = strlen(base);
        for (int round = 0; round < 150; round++) {
            char *text = malloc(len + 64);
            memcpy(text, base, len);
            size_t n = len;
            int edits = 1 + (int)(next_rand(&seed) % 6);
            for (int e = 0; e < edits; e++) {
                size_t at = next_rand(&seed) % n;
                switch (next_rand(&seed) % 4) {
                case 0: text[at] = alphabet[next_rand(&seed) % (sizeof alphabet - 1)]; break;
                case 1: text[at] = (char)(next_rand(&seed) & 0xFF); break;
                case 2: memmove(text + at, text + at + 1, n - at - 1), n--; break;
                default: n = at; break; /* truncate */
                }
                if (n == 0) break;
            }
            pgn_inet_book *book = NULL;
            pgn_error err = {0};
            if (pgn_inet_parse(text, n, &book, &err) == 0) {
                parsed++;
                pgn_inet_limits lim = {.max_interactions = 20000, .max_nodes = 20000};
                pgn_inet_result r;
                if (pgn_inet_run_host(book, &lim, NULL, NULL, &r, &err) == 0) {
                    ran++;
                    pgn_inet_result_free(&r);
                } else {
                    cr_assert(err.message[0], "a failed run must say why");
                }
                pgn_inet_book_free(book);
            } else {
                cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_program");
                cr_assert(!strncmp(err.message, "line ", 5) || strstr(err.message, "@main"), "%s", err.message);
            }
            free(text);
        }
        free(base);
    }
    cr_assert_gt(parsed, 0);
    cr_assert_gt(ran, 0);
}

/* A run of text on the host with plans on or off: 0 and the result, or the error's code. */
static int run_plans(const char *text, size_t len, bool plans, const pgn_inet_limits *lim, pgn_inet_result *r) {
    setenv("PARAGON_INET_PLANS", plans ? "1" : "0", 1);
    pgn_inet_book *book = NULL;
    pgn_error err = {0};
    cr_assert_eq(pgn_inet_parse(text, len, &book, &err), 0, "%s\n%s", err.message, text);
    int rc = pgn_inet_run_host(book, lim, NULL, NULL, r, &err);
    pgn_inet_book_free(book);
    unsetenv("PARAGON_INET_PLANS");
    return rc ? (int)err.code : 0;
}

Test(inet_run, plans_give_the_interpreted_calls_forms_and_counts) {
    /* every example, and random nets (operators with variables for first ports, switches, copies
     * of numbers and erasers, references everywhere) run to the end by both */
    const char *names[] = {"fib", "tree_sum", "tree_dup", "sort", "loop", "loops", "u24_ops", "i24_ops", "f24_ops",
                           "train_xor"};
    int compared = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names + 400; i++) {
        char *program, file[64];
        uint64_t seed = 777 + i;
        if (i < sizeof names / sizeof *names) {
            snprintf(file, sizeof file, "%s.%s", names[i], strcmp(names[i], "train_xor") ? "hvm" : "pgl");
            program = read_example(file);
            if (!strcmp(names[i], "train_xor")) { /* pgl: its compiled net */
                pgn_error err = {0};
                char *net = pgn_pgl_compile(program, strlen(program), &err);
                cr_assert_not_null(net, "%s", err.message);
                free(program);
                program = net;
            }
        } else {
            program = malloc(1 << 16);
            inet_gen_program(&seed, program);
        }
        bool example = i < sizeof names / sizeof *names;
        pgn_inet_limits lim = {.max_interactions = example ? 0 : 200000, .max_nodes = example ? 0 : 100000};
        pgn_inet_result with, without;
        int a = run_plans(program, strlen(program), true, &lim, &with);
        int b = run_plans(program, strlen(program), false, &lim, &without);
        if (i < sizeof names / sizeof *names) cr_assert(a == 0 && b == 0, "%s: %d %d", names[i], a, b);
        if (a == 0 && b == 0) {
            compared++;
            cr_assert_str_eq(with.normal_form, without.normal_form, "%zu\n%s", i, program);
            cr_assert_eq(with.interactions, without.interactions, "%zu\n%s", i, program);
        } else if (a == PGN_E_INVALID_PROGRAM || b == PGN_E_INVALID_PROGRAM) {
            cr_assert_eq(a, b, "a refused copy is refused either way: %zu\n%s", i, program);
        }
        if (a == 0) pgn_inet_result_free(&with);
        if (b == 0) pgn_inet_result_free(&without);
        free(program);
    }
    cr_assert_gt(compared, 100, "only %d random nets ran to the end", compared - 10);
}

Test(inet_fuzz, random_well_formed_nets_reduce_or_fail_cleanly) {
    /* random trees with every variable used twice, random references between a few
     * definitions (often recursive, so many runs end at the limit) */
    uint64_t seed = 12345;
    char *text = malloc(1 << 16);
    for (int round = 0; round < 300; round++) {
        size_t o = inet_gen_program(&seed, text);
        pgn_inet_book *book = NULL;
        pgn_error err = {0};
        cr_assert_eq(pgn_inet_parse(text, o, &book, &err), 0, "%s\n%s", err.message, text);
        pgn_inet_limits lim = {.max_interactions = 5000, .max_nodes = 5000};
        pgn_inet_result r;
        if (pgn_inet_run_host(book, &lim, NULL, NULL, &r, &err) == 0)
            pgn_inet_result_free(&r);
        else
            cr_assert(err.code == PGN_E_LIMIT_EXCEEDED || err.code == PGN_E_INVALID_PROGRAM, "%s: %s",
                      pgn_error_code_name(err.code), err.message);
        pgn_inet_book_free(book);
    }
    free(text);
}
