/* test_lang.c: pgl, the language compiled to interaction nets (engine/lang/): every construct
 * gives its value on the host reducer and on OpenCL with the same count; the examples give their
 * expected results; every compile error names its line, column and what was wrong; the same
 * source compiles to the same net; inet specs take "language": "pgl". */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "engine_helpers.h"
#include "inet/inet.h"
#include "lang/lang.h"
#include "tensor/graph.h"

/* The normal form of src's main and its interaction count, on dev (NULL: the host reducer) with
 * `workers` work-items. */
static char *run_with(pgn_device *dev, unsigned workers, const char *src, uint64_t *itrs) {
    pgn_error err = {0};
    char *net = pgn_pgl_compile(src, strlen(src), &err);
    cr_assert_not_null(net, "%s\n%s", err.message, src);
    pgn_inet_book *book = NULL;
    cr_assert_eq(pgn_inet_parse(net, strlen(net), &book, &err), 0, "the net does not parse: %s\n%s", err.message, net);
    pgn_inet_result r;
    pgn_inet_limits lim = {.max_interactions = 1000000000};
    int rc = dev ? pgn_inet_run_cl(dev, book, &lim, NULL, workers, NULL, &r, &err)
                 : pgn_inet_run_host(book, &lim, NULL, NULL, &r, &err);
    cr_assert_eq(rc, 0, "%s\n%s", err.message, net);
    char *nf = strdup(r.normal_form);
    *itrs = r.interactions;
    pgn_inet_result_free(&r);
    pgn_inet_book_free(book);
    free(net);
    return nf;
}

static char *run_on(pgn_device *dev, const char *src, uint64_t *itrs) { return run_with(dev, 2, src, itrs); }

/* The text of $PARAGON_SOURCE_ROOT/examples/DIR/NAME.EXT (caller frees). */
static char *example(const char *dir, const char *name, const char *ext) {
    char path[512];
    size_t len;
    snprintf(path, sizeof path, "%s/examples/%s/%s.%s", getenv("PARAGON_SOURCE_ROOT"), dir, name, ext);
    char *text = pgn_read_file(path, &len);
    cr_assert_not_null(text, "%s", path);
    return text;
}

static pgn_device *dev;
static void setup(void) { dev = test_open_cl_device(); }
static void teardown(void) { pgn_device_close(dev); }
TestSuite(lang, .init = setup, .fini = teardown);

/* Asserts src's main is want, on the host and on OpenCL with the same count. */
static void check(const char *src, const char *want) {
    uint64_t h_itrs, d_itrs;
    char *h = run_on(NULL, src, &h_itrs), *d = run_on(dev, src, &d_itrs);
    cr_assert_str_eq(h, want, "host, for:\n%s", src);
    cr_assert_str_eq(d, want, "OpenCL, for:\n%s", src);
    cr_assert_eq(h_itrs, d_itrs, "interactions: host %llu, OpenCL %llu, for:\n%s", (unsigned long long)h_itrs,
                 (unsigned long long)d_itrs, src);
    free(h);
    free(d);
}

Test(lang, numbers_and_every_operator) {
    check("main = 42", "42");
    check("main = +42", "+42");
    check("main = -7", "-7");
    check("main = 1.5", "1.5");
    check("main = 2 + 3 * 4", "14");                 /* * binds tighter */
    check("main = (2 + 3) * 4", "20");
    check("main = 10 - 3 - 2", "5");                 /* left to right */
    check("main = 100 / 7 % 3", "2");                /* (100 / 7) % 3 = 14 % 3 */
    check("main = 1 << 2 + 1", "8");                 /* + binds tighter than << */
    check("main = 1 < 2 == 1", "1");                 /* < binds tighter than == */
    check("main = 6 & 3 | 8 ^ 1", "11");             /* & then ^ then |: 2 | 9 */
    check("main = 0 - 1", "16777215");               /* u24 wraps */
    check("main = -7 + +2", "-5");
    check("main = 1.5 * 2.0 - 0.25", "2.75");
    check("main = 7 != 7", "0");
    check("main = 3 > 2", "1");
    check("main = 20 >> 2", "5");
    /* a number on either side of a non-commutative operator (the swapped partial forms) */
    check("f(x) = x - 1\ng(x) = 100 - x\nh(x) = x / 4\nk(x) = 100 / x\nmain = f(10) * 1000000 + g(1) * 1000 + h(20) * 10 + k(50)",
          "9099052");
    check("lt(x) = x < 5\ngt(x) = 5 < x\nmain = lt(3) * 10 + gt(3)", "10");
    check("s(x) = 1 << x\nr(x) = x >> 1\nm(x) = x % 3\nmain = s(4) * 100 + r(9) * 10 + m(8)", "1642");
    /* casts, as HVM2's [u24] [i24] [f24]: f24 -> integers truncate toward zero */
    check("main = f24(3) / 2.0", "1.5");
    check("main = u24(2.7)", "2");
    check("main = i24(-1.5)", "-1");
    check("main = i24(16777215)", "-1"); /* u24 <-> i24 keep the 24 bits */
    check("byte(b) = f24(b) / 255.0\nmain = byte(51)", "0.20000076"); /* 0.2 to f24 precision */
    check("main = f24(u24(7) * 2)", "14.0");
}

/* A value definition larger than a data table's threshold is a reference, built where it is
 * consumed, and used twice it is built twice: the same value as written out in place. */
Test(lang, large_values_are_references_built_where_used) {
    pgn_text src = {0}, sum = {0};
    pgn_text_puts(&src, "table = [");
    for (int i = 0; i < 300; i++) pgn_text_printf(&src, "%s%d", i ? ", " : "", i);
    pgn_text_puts(&src, "]\ntotal(l) = match l { Nil: 0; Cons(x, t): x + total(t) }\n"
                        "main = total(table) + total(table)\n");
    char *text = pgn_text_take(&src);
    pgn_error err = {0};
    char *net = pgn_pgl_compile(text, strlen(text), &err);
    cr_assert_not_null(net, "%s", err.message);
    cr_assert(strstr(net, "\n@main = ") && strstr(strstr(net, "\n@main = "), "@table"), "%s", net);
    free(net);
    pgn_text_printf(&sum, "%d", 2 * (299 * 300 / 2));
    char *want = pgn_text_take(&sum);
    check(text, want);
    free(want);
    free(text);
}

Test(lang, lambdas_application_and_let) {
    check("main = (\\x. x + 1)(41)", "42");
    check("main = (\\x y. x - y)(10, 3)", "7");
    check("main = (λx. x * x)(9)", "81");
    check("twice(f, x) = f(f(x))\nmain = twice(\\z. z * 3, 2)", "18");
    check("add(a) = \\b. a + b\nmain = add(40)(2)", "42"); /* a closure */
    check("main = let x = 5; let f = \\y. y * x + x; f(3) + f(4)", "45");
    check("main = let unused = 99; 1", "1");               /* erased */
    check("main = let x = 2; x * x * x * x", "16");       /* four uses: three DUP nodes */
    check("main = let x = 1; let x = x + 10; x", "11");    /* shadowing */
    check("k(a, b) = a\nmain = k(3, 4)", "3");
}

Test(lang, switches_and_recursion) {
    check("f(n) = switch n { 0: 10; _: 20 }\nmain = f(0) + f(5)", "30");
    check("pred(n) = switch n { 0: 0; _ p: p }\nmain = pred(9)", "8");
    check("f(n) = switch n { 0: 100; 1: 101; 2: 102; _ k: k }\nmain = f(0) + f(2) + f(10)", "209"); /* 10 - 3 */
    /* free variables in both branches, and the scrutinee used inside a branch */
    check("f(n, a, b) = switch n { 0: a; _ p: a + b * n + p }\nmain = f(0, 1, 2) * 1000 + f(3, 1, 2)", "1009");
    check("sum(n) = switch n { 0: 0; _ p: n + sum(p) }\nmain = sum(100)", "5050");
    check("even(n) = switch n { 0: 1; _ p: odd(p) }\nodd(n) = switch n { 0: 0; _ p: even(p) }\nmain = even(10) * 10 + odd(7)",
          "11");
    check("c = 3\nd = c * 2\nmain = d + c", "9"); /* value definitions are inlined */
}

/* src's main read back in pgl's syntax on the host and OpenCL (the same both ways), or the raw
 * net when it has no pgl form. */
static void check_value(const char *src, const char *want) {
    for (int side = 0; side < 2; side++) {
        uint64_t itrs;
        char *nf = run_on(side ? dev : NULL, src, &itrs);
        char *v = pgn_pgl_readback(src, strlen(src), nf);
        cr_assert_str_eq(v ? v : nf, want, "%s, for:\n%s\n(net %s)", side ? "OpenCL" : "host", src, nf);
        free(v);
        free(nf);
    }
}

Test(lang, types_matches_tuples_and_lists) {
    const char *shapes = "type Shape = Circle(r) | Rect(w, h) | Dot\n"
                         "area(s) = match s { Dot: 0; Rect(w, h): w * h; Circle(r): 3 * r * r }\n";
    char src[512];
    snprintf(src, sizeof src, "%smain = area(Rect(3, 4)) + area(Circle(2)) + area(Dot)", shapes);
    check(src, "24");
    snprintf(src, sizeof src, "%smain = (Rect(3, 4), [Dot, Circle(+2)], (1.5, []))", shapes);
    check_value(src, "(Rect(3, 4), [Dot, Circle(+2)], 1.5, [])"); /* (a, (b, c)) is (a, b, c) */
    check_value("main = ((1, 2), 3, (4, 5))", "((1, 2), 3, 4, 5)");
    check("swap(p) = let (a, b) = p; (b, a)\nmain = let (x, y) = swap((1, 2)); x * 10 + y", "21");
    const char *lists = "map(f, xs) = match xs { Nil: []; Cons(h, t): Cons(f(h), map(f, t)) }\n"
                        "fold(f, acc, xs) = match xs { Nil: acc; Cons(h, t): fold(f, f(acc, h), t) }\n";
    snprintf(src, sizeof src, "%smain = map(\\x. x * 10, [1, 2, 3])", lists);
    check_value(src, "[10, 20, 30]");
    snprintf(src, sizeof src, "%smain = fold(\\a b. a + b, 0, map(\\x. x + 1, [1, 2, 3, 4]))", lists);
    check(src, "14");
    check_value("main = []", "[]");
    /* the same shape as Cons(h, t): a list is read back as a list */
    check_value("type Shape = Circle(r) | Rect(w, h)\nmain = ([1, 2], Circle(5))", "([1, 2], Circle(5))");
    /* the free variables of a match's cases travel with it: n is used in both */
    check("f(xs, n) = match xs { Nil: n; Cons(h, t): h * n + f(t, n) }\nmain = f([1, 2, 3], 10)", "70");
    check_value("main = \\x. x", "(x0 x0)"); /* a function has no pgl form: the net stands */
}

/* HVM2's one DUP label cannot copy a function holding a DUP of its own: through a reference the
 * runtime refuses it (test_inet), inline it gave a wrong value (twice(\y. y * y + k, 2) read back
 * a free variable). The compiler refuses what it can see, naming the value's line and column. */
Test(lang, copying_a_function_that_copies_is_a_compile_error_not_a_wrong_value) {
    static const struct {
        const char *src, *says;
    } cases[] = {
        {"twice(f, x) = f(f(x))\nmain = twice(\\x. x * x, 3)",
         "line 2, column 15: 'twice' copies its parameter 'f', and this function copies its own 'x'"},
        {"twice(f, x) = f(f(x))\nmain = let k = 3; twice(\\y. y * y + k, 2)", /* the silent one */
         "line 2, column 26: 'twice' copies its parameter 'f', and this function copies its own 'y'"},
        {"sq(x) = x * x\ntwice(f, x) = f(f(x))\nmain = twice(sq, 3)",
         "line 3, column 14: 'twice' copies its parameter 'f', and this function copies its own 'x'"},
        /* copied inside a branch, and passed on to a copied parameter */
        {"map(f, xs) = match xs { Nil: []; Cons(h, t): Cons(f(h), map(f, t)) }\nmain = map(\\x. x * x, [1, 2])",
         "line 2, column 13: 'map' copies its parameter 'f'"},
        {"twice(f, x) = f(f(x))\ng(h) = twice(h, 1)\nmain = g(\\x. let y = x + 1; y * y)",
         "line 3, column 11: 'g' copies its parameter 'h', and this function copies its own 'y'"},
        {"main = let f = \\x. x * x; (f(1), f(2))",
         "line 1, column 17: 'f' is used more than once, and this function copies its own 'x'"},
        /* in data: a closure in a list, the list copied, read back (9, 9) for (7, 12) */
        {"hd(l) = match l { Nil: \\x. x; Cons(h, t): h }\nmain = let k = 3; let l = [\\y. y * y + k]; (hd(l)(2), hd(l)(3))",
         "line 2, column 27: 'l' is used more than once, and a function in this value copies its own 'y'"},
        {"dup(p) = (p, p)\nmain = dup((1, \\y. y * y))",
         "line 2, column 12: 'dup' copies its parameter 'p', and a function in this value copies its own 'y'"},
        /* made by a call: mk(3) read back (5, 5) for (4, 7) */
        {"mk(k) = \\y. y * y + k\nmain = let f = mk(3); (f(1), f(2))",
         "line 2, column 18: 'f' is used more than once, and a function in this value copies its own 'y'"},
        /* chosen by a switch, taken out of data, captured by a partial application */
        {"pick(n) = switch n { 0: \\x. x * x; _: \\x. x + 1 }\nmain = let f = pick(0); (f(2), f(3))",
         "line 2, column 20: 'f' is used more than once, and a function in this value copies its own 'x'"},
        {"hd(l) = match l { Nil: \\x. x; Cons(h, t): h }\nmain = let l = [\\y. y * y]; let f = hd(l); (f(2), f(3))",
         "line 2, column 39: 'f' is used more than once, and a function in this value copies its own 'y'"},
        {"app(f, x) = f(x)\nmain = let g = app(\\x. x * x); (g(2), g(3))",
         "line 2, column 19: 'g' is used more than once, and a function in this value copies its own 'x'"},
        {"main = let p = (1, \\y. y * y); let (a, f) = p; let (b, g) = p; (f(a), g(b))",
         "'p' is used more than once, and a function in this value copies its own 'y'"},
        /* the function followed wherever it went: through a parameter called, an identity
         * applied to itself, a local lambda, and into a callee that copies what it made; each
         * read back (5, 5) for (4, 7) */
        {"mk(k) = \\y. y * y + k\napply(f, x) = f(x)\nmain = let g = apply(mk, 3); (g(1), g(2))",
         "line 3, column 21: 'g' is used more than once, and a function in this value copies its own 'y'"},
        {"mk(k) = \\y. y * y + k\nid(x) = x\nmain = let g = id(id)(mk(3)); (g(1), g(2))",
         "line 3, column 22: 'g' is used more than once, and a function in this value copies its own 'y'"},
        {"main = let mk = \\k. \\y. y * y + k; let g = mk(3); (g(1), g(2))",
         "line 1, column 46: 'g' is used more than once, and a function in this value copies its own 'y'"},
        {"mk(k) = \\y. y * y + k\nh(f) = let g = f(3); (g(1), g(2))\nmain = h(mk)",
         "line 2, column 17: 'g' is used more than once, and a function in this value copies its own 'y'"},
        {"mk(k) = \\y. y * y + k\nh(f) = let g = f(3); (g(1), g(2))\nmain = h(mk)", "(the "
         "function comes from the call at line 3, column 9)"},
        /* taken out of data, and chosen among several, then called (each read back (5, 5)) */
        {"mk(k) = \\y. y * y + k\nmk2(k) = mk(k)\nhd(l) = match l { Nil: \\x. x; Cons(h, t): h }\n"
         "main = let f = hd([mk2]); let g = f(3); (g(1), g(2))",
         "line 4, column 36: 'g' is used more than once, and a function in this value copies its own 'y'"},
        {"mk(k) = \\y. y * y + k\nsq(k) = \\y. y + k\npick(n) = switch n { 0: sq; _: mk }\n"
         "main = let g = pick(1)(3); (g(1), g(2))",
         "line 4, column 23: 'g' is used more than once, and a function in this value copies its own 'y'"},
        /* one of more functions than the check keeps apart: what calling it gives is not known */
        {"a(k) = k\nb(k) = k + 1\nc(k) = k + 2\nd(k) = k + 3\ne(k) = \\y. y * y + k\n"
         "pick(n) = switch n { 0: a; 1: b; 2: c; 3: d; _: e }\nmain = let g = pick(4)(3); (g(1), g(2))",
         "line 7, column 23: 'g' is used more than once, and the check cannot tell what this value holds"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pgn_error err = {0};
        char *net = pgn_pgl_compile(cases[i].src, strlen(cases[i].src), &err);
        cr_assert_null(net, "compiled:\n%s\nto\n%s", cases[i].src, net);
        cr_assert(strstr(err.message, cases[i].says), "for:\n%s\nsaid: %s", cases[i].src, err.message);
        cr_assert(strstr(err.message, "one duplicator label"), "%s", err.message);
    }
    /* copies of functions that copy nothing, a function copied only by the branch it is handed
     * to, and a copying function used once are fine */
    check("twice(f, x) = f(f(x))\nmain = twice(\\x. x * 10, 3)", "300");
    check("sq(x) = x * x\npick(n, f) = switch n { 0: f(2); _: f(3) }\nmain = pick(1, sq)", "9");
    check("sq(x) = x * x\napply(f, x) = f(x)\nmain = apply(sq, 5) + apply(\\y. y * y, 2)", "29");
    check("apply(f, x) = f(x)\nmain = let r = apply(\\x. x * x, 3); r + r", "18"); /* r is a number */
    check("sq(a, b) = a * a + b\nmain = let f = sq(3); f(1) * 100 + f(2)", "1011"); /* a copied before */
    check("main = let (n, f) = (3, \\y. y * y); (n + n) * 100 + f(4)", "616"); /* n is not the function */
    check("pick(n) = switch n { 0: \\x. x * 2; _: \\x. x + 1 }\nmain = let f = pick(0); f(2) * 10 + f(3)", "46");
    /* followed the same ways, a function whose results are numbers copies nothing */
    check("sq(x) = x * x\napply(f, x) = f(x)\nmain = let g = apply(sq, 3); g + g", "18");
    check("sq(x) = x * x\nh(f) = let g = f(3); g + g\nmain = h(sq)", "18");
    check("main = let mk = \\k. \\y. y + k; let g = mk(3); g(1) * 10 + g(2)", "45");
    check("inc(k) = k + 1\nsq(k) = k * k\npick(n) = switch n { 0: inc; _: sq }\nmain = let g = pick(1)(3); g + g", "18");
    check("hd(l) = match l { Nil: 0; Cons(h, t): h }\nmain = let x = hd([\\y. y + 1])(4); x * x", "25");
}

/* Written-out calls and values nest: 12 lines once compiled to 4^11 copies (58 s, 2.2 GB).
 * Each definition has a budget; past it calls stay calls, and the value is the same. */
Test(lang, writing_calls_out_is_bounded) {
    pgn_text src = {0};
    pgn_text_puts(&src, "id(x) = x\nf1(x) = id(id(id(id(x))))\n");
    for (int i = 2; i <= 11; i++) pgn_text_printf(&src, "f%d(x) = f%d(f%d(f%d(f%d(x))))\n", i, i - 1, i - 1, i - 1, i - 1);
    pgn_text_puts(&src, "main = let v = f11(\\y. y + 1); v(1) + v(2)\n");
    char *text = pgn_text_take(&src);
    pgn_error err = {0};
    char *net = pgn_pgl_compile(text, strlen(text), &err);
    cr_assert_not_null(net, "%s", err.message);
    cr_assert_lt(strlen(net), (size_t)8 << 20, "%zu bytes of net", strlen(net));
    free(net);
    check(text, "5");
    free(text);
    pgn_text vals = {0};
    pgn_text_puts(&vals, "a0 = 1\n");
    for (int i = 1; i <= 23; i++) pgn_text_printf(&vals, "a%d = a%d + a%d\n", i, i - 1, i - 1);
    pgn_text_puts(&vals, "main = a23\n");
    text = pgn_text_take(&vals);
    net = pgn_pgl_compile(text, strlen(text), &err);
    cr_assert_not_null(net, "%s", err.message);
    cr_assert_lt(strlen(net), (size_t)8 << 20, "%zu bytes of net", strlen(net));
    free(net);
    check(text, "8388608"); /* 2^23 (u24 wraps at 2^24) */
    free(text);
    /* the budget is the program's, not each definition's: 527 definitions each using f11 wrote
     * out 34 million nodes (176 MB of net, 57 s); now what the one budget allows */
    pgn_text_puts(&src, "id(x) = x\nf1(x) = id(id(id(id(x))))\n");
    for (int i = 2; i <= 11; i++) pgn_text_printf(&src, "f%d(x) = f%d(f%d(f%d(f%d(x))))\n", i, i - 1, i - 1, i - 1, i - 1);
    for (int i = 0; i < 527; i++) pgn_text_printf(&src, "g%d(x) = f11(x) + f11(x + 1)\n", i);
    pgn_text_puts(&src, "main = g526(1)\n");
    text = pgn_text_take(&src);
    net = pgn_pgl_compile(text, strlen(text), &err);
    cr_assert_not_null(net, "%s", err.message);
    cr_assert_lt(strlen(net), (size_t)4 << 20, "%zu bytes of net", strlen(net));
    free(net);
    check(text, "3");
    free(text);
}

/* A program giving a function still takes more arguments than its definition names, and a
 * name bound locally is not the definition: neither is the arity error. */
Test(lang, calls_past_a_definitions_parameters_apply_the_function_it_gives) {
    check("add(a, b) = a + b\nadder(k) = add(k)\nmain = adder(1, 2)", "3");
    check("mk(k) = \\y. y * k\nmain = mk(3, 4)", "12");
    check("double(x) = x + x\nmain = let double = \\a b. a - b; double(7, 4)", "3");
}

/* Each shape of deep tree the reader takes, at PGL_MAX_TREE_DEPTH: every pass recurses, on the
 * compiler's stack (pgl_on_stack), which these fit under ASan too (this test's build). One level
 * past it is refused naming where; a list literal of 4,096 items (the reader's most) is one
 * level, whatever its length. */
Test(lang, the_deepest_programs_compile_and_one_level_more_is_refused) {
    const int D = PGL_MAX_TREE_DEPTH;
    pgn_text t = {0};
    /* an operator chain: 1 + 1 + .. is D - 1 operators deep under main */
    pgn_text_puts(&t, "main = 1");
    for (int i = 1; i < D - 1; i++) pgn_text_puts(&t, "+1");
    char *chain = pgn_text_take(&t), want[32];
    snprintf(want, sizeof want, "%d", D - 1);
    check(chain, want);
    /* one more: refused, naming the line and column and the limit */
    size_t n = strlen(chain);
    char *over = malloc(n + 5);
    snprintf(over, n + 5, "%s+1+1", chain);
    pgn_error err = {0};
    char *net = pgn_pgl_compile(over, strlen(over), &err);
    cr_assert_null(net);
    char says[96];
    snprintf(says, sizeof says, "the expression nests deeper than %d levels", D);
    cr_assert(strstr(err.message, says) && !strncmp(err.message, "line 1, column ", 15), "%s", err.message);
    free(over);
    free(chain);
    /* a parameter used D - 2 times (a DUP tree as deep), a function of D - 4 parameters called
     * with as many arguments, and a lambda's body as deep */
    pgn_text_puts(&t, "f(x) = x");
    for (int i = 1; i < D - 2; i++) pgn_text_puts(&t, "+x");
    pgn_text_puts(&t, "\nmain = f(1)\n");
    char *dups = pgn_text_take(&t);
    snprintf(want, sizeof want, "%d", D - 2);
    check(dups, want);
    free(dups);
    pgn_text_puts(&t, "f = \\");
    for (int i = 0; i < D - 4; i++) pgn_text_printf(&t, "a%d ", i);
    pgn_text_puts(&t, ". a1\nmain = f(0");
    for (int i = 1; i < D - 4; i++) pgn_text_printf(&t, ", %d", i % 100);
    pgn_text_puts(&t, ")\n");
    char *args = pgn_text_take(&t);
    check(args, "1");
    free(args);
    /* the copy check following calls 9 definitions deep, each body an operator chain */
    pgn_text_puts(&t, "g0(f) = f\n");
    for (int i = 1; i < 10; i++) {
        pgn_text_printf(&t, "g%d(f) = g%d(1", i, i - 1);
        for (int k = 1; k < D - 16; k++) pgn_text_puts(&t, "+1");
        pgn_text_printf(&t, " + 0 * g%d(f))\n", i - 1);
    }
    pgn_text_puts(&t, "main = let h = g9(\\y. y); h(1) + h(2)\n");
    char *calls = pgn_text_take(&t);
    net = pgn_pgl_compile(calls, strlen(calls), &err);
    cr_assert_not_null(net, "%s", err.message);
    free(net);
    free(calls);
    /* a chain of 6,000 values, each the one before plus one: written out as deep as the
     * compiler allows, references past that, and the right sum */
    pgn_text_puts(&t, "a0 = 0\n");
    for (int i = 1; i < 6000; i++) pgn_text_printf(&t, "a%d = a%d + 1\n", i, i - 1);
    pgn_text_puts(&t, "main = a5999 + 0\n");
    char *values = pgn_text_take(&t);
    check(values, "5999");
    free(values);
    /* lists: 4,096 items (the most a literal takes), and lists nested 400 deep */
    pgn_text_puts(&t, "main = [0");
    for (int i = 1; i < 4096; i++) pgn_text_printf(&t, ", %d", i);
    pgn_text_puts(&t, "]\n");
    char *list = pgn_text_take(&t);
    uint64_t itrs;
    char *nf = run_on(NULL, list, &itrs), *v = pgn_pgl_readback(list, strlen(list), nf);
    cr_assert_not_null(v, "the list reads back");
    cr_assert(!strncmp(v, "[0, 1, 2, ", 10) && strstr(v, ", 4094, 4095]"), "%.40s .. %s", v, v + strlen(v) - 20);
    free(v);
    free(nf);
    free(list);
    pgn_text_puts(&t, "main = ");
    for (int i = 0; i < 400; i++) pgn_text_puts(&t, "[");
    pgn_text_puts(&t, "7");
    for (int i = 0; i < 400; i++) pgn_text_puts(&t, ", 2]");
    char *nested = pgn_text_take(&t);
    nf = run_on(NULL, nested, &itrs);
    v = pgn_pgl_readback(nested, strlen(nested), nf);
    cr_assert(v && !strncmp(v, "[[[[", 4) && strstr(v, "[[[7, 2], 2], 2], 2]") && !strcmp(v + strlen(v) - 4, ", 2]"),
              "%s", v ? v : nf);
    free(v);
    free(nf);
    free(nested);
}

/* main's value is written out whatever its size (a reference at the root is never expanded:
 * main = big printed "@big"). */
Test(lang, mains_value_is_computed_however_large) {
    pgn_text t = {0};
    pgn_text_puts(&t, "big = [0");
    for (int i = 1; i < 500; i++) pgn_text_printf(&t, ", %d", i);
    pgn_text_puts(&t, "]\nalso = big\nmain = also\n");
    char *src = pgn_text_take(&t);
    uint64_t itrs;
    char *nf = run_on(NULL, src, &itrs), *v = pgn_pgl_readback(src, strlen(src), nf);
    cr_assert(v && !strncmp(v, "[0, 1, 2, ", 10) && strstr(v, ", 498, 499]"), "%s", v ? v : nf);
    free(v);
    free(nf);
    free(src);
}

static bool stop_now(void *ctx) {
    (*(int *)ctx)++;
    return true;
}

/* A compile asked to stop ends cancelled, and one past its deadline ends at the time limit: a
 * job's compile runs inside its time limit and stops when cancelled. */
Test(lang, a_compile_stops_when_asked_and_at_its_deadline) {
    pgn_text t = {0};
    pgn_text_puts(&t, "main = [0");
    for (int i = 1; i < 4096; i++) pgn_text_printf(&t, ", %d * 2", i);
    pgn_text_puts(&t, "]\n");
    char *src = pgn_text_take(&t);
    int asked = 0;
    pgn_pgl_stop stop = {.should_stop = stop_now, .ctx = &asked};
    pgn_error err = {0};
    char *net = pgn_pgl_compile_until(src, strlen(src), &stop, &err);
    cr_assert_null(net);
    cr_assert_eq(err.code, PGN_E_CANCELLED, "%s", err.message);
    cr_assert_eq(asked, 1, "it stopped the first time it asked");
    pgn_pgl_stop late = {.deadline_s = pgn_now_s() - 1};
    net = pgn_pgl_compile_until(src, strlen(src), &late, &err);
    cr_assert_null(net);
    cr_assert_eq(err.code, PGN_E_LIMIT_EXCEEDED, "%s", err.message);
    cr_assert_str_eq(err.field, "limits.timeout_s");
    pgn_pgl_stop never = {.deadline_s = pgn_now_s() + 3600};
    net = pgn_pgl_compile_until(src, strlen(src), &never, &err);
    cr_assert_not_null(net, "%s", err.message);
    free(net);
    free(src);
}

/* paragond's stored spec keeps a pgl program as source, compiled by the run: inside the run's
 * stop (a cancel during the compile ends it cancelled) and its time limit. */
Test(lang, a_stored_pgl_spec_compiles_in_its_run_and_stops_with_it) {
    json_t *root = json_pack("{s:s, s:s, s:s}", "kind", "inet", "language", "pgl", "program", "main = [6 * 7, 1]");
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_stored(root, &spec, &err), 0, "%s", err.message);
    cr_assert_null(spec.inet.program, "not compiled when parsed");
    cr_assert_str_eq(spec.inet.source, "main = [6 * 7, 1]");
    json_t *result = NULL;
    cr_assert_eq(pgn_inet_job_run(&spec, NULL, NULL, NULL, &result, &err), 0, "%s", err.message);
    cr_assert_str_eq(json_string_value(json_object_get(result, "value")), "[42, 1]");
    json_decref(result);
    int asked = 0;
    pgn_run_hooks stop = {.ctx = &asked, .should_stop = stop_now};
    result = NULL;
    /* a program long enough to be asked (the compiler asks every few thousand expressions) */
    pgn_text t = {0};
    pgn_text_puts(&t, "main = [0");
    for (int i = 1; i < 4096; i++) pgn_text_printf(&t, ", %d * 2", i);
    pgn_text_puts(&t, "]\n");
    char *src = pgn_text_take(&t);
    free(spec.inet.source);
    spec.inet.source = src;
    cr_assert_eq(pgn_inet_job_run(&spec, NULL, NULL, &stop, &result, &err), -1);
    cr_assert_eq(err.code, PGN_E_CANCELLED, "%s", err.message);
    cr_assert_null(result);
    pgn_spec_free(&spec);
    json_decref(root);
}

/* The pgl examples against their .expected (the value read back, else the net, and the count, as
 * `paragon run -s` prints them less the net's line), on the host and on OpenCL. */
Test(lang, examples_give_their_expected_results) {
    /* the sorts of 2^16 numbers (252 and 67 million interactions) on OpenCL only: the host reducer
     * under ASan takes minutes; tests/test_inet.c holds the two reducers to the same counts
     * (train_fashion.pgl has a test of its own below) */
    static const struct {
        const char *dir, *name;
        bool opencl_only;
    } examples[] = {{"lang", "fib", false},      {"lang", "tree_sum", false},    {"lang", "ackermann", false},
                    {"lang", "numbers", false},  {"lang", "ops", false},         {"lang", "lists", false},
                    {"inet", "train_xor", false}, {"lang", "sort_bitonic", true}, {"lang", "sort_radix", true}};
    for (size_t i = 0; i < sizeof examples / sizeof *examples; i++) {
        char *src = example(examples[i].dir, examples[i].name, "pgl");
        char *expected = example(examples[i].dir, examples[i].name, "expected");
        for (int side = examples[i].opencl_only; side < 2; side++) {
            uint64_t itrs;
            char *nf = run_on(side ? dev : NULL, src, &itrs), got[256];
            char *value = pgn_pgl_readback(src, strlen(src), nf);
            snprintf(got, sizeof got, "Result: %s\n- ITRS: %llu\n", value ? value : nf, (unsigned long long)itrs);
            free(value);
            cr_assert_str_eq(got, expected, "%s on %s", examples[i].name, side ? "OpenCL" : "the host");
            free(nf);
        }
        free(src);
        free(expected);
    }
}

/* Training XOR frees, on one worker, gradient lists another built, so slots go back and forth
 * between workers all the time: this once crashed the OpenCL reducer in 11-14 runs of 20 on four
 * work-items (a hand-back of freed slots in the middle of a rule, kernels/inet.cl). */
Test(lang, train_xor_on_four_work_items_again_and_again) {
    char *src = example("inet", "train_xor", "pgl"), *expected = example("inet", "train_xor", "expected");
    for (int run = 0; run < 8; run++) {
        uint64_t itrs;
        char *nf = run_with(dev, 4, src, &itrs), got[256];
        char *value = pgn_pgl_readback(src, strlen(src), nf);
        snprintf(got, sizeof got, "Result: %s\n- ITRS: %llu\n", value ? value : nf, (unsigned long long)itrs);
        cr_assert_str_eq(got, expected, "run %d", run);
        free(value);
        free(nf);
    }
    free(src);
    free(expected);
}

/* fib as pgl costs what the hand-written HVM2 fib costs: the compiler adds no interaction. */
Test(lang, fib_costs_what_the_hand_written_net_costs) {
    char *text = example("inet", "fib", "expected"), *mine = example("lang", "fib", "expected");
    cr_assert_str_eq(mine, text);
    free(text);
    free(mine);
}

Test(lang, the_same_source_compiles_to_the_same_net) {
    char *src = example("lang", "tree_sum", "pgl");
    size_t len = strlen(src);
    pgn_error err = {0};
    char *a = pgn_pgl_compile(src, len, &err), *b = pgn_pgl_compile(src, len, &err);
    cr_assert(a && b, "%s", err.message);
    cr_assert_str_eq(a, b);
    cr_assert(strstr(a, "@sum__c0 = "), "sum's \\l r. lambda is a definition of its own:\n%s", a);
    free(a);
    free(b);
    free(src);
}

Test(lang, every_error_names_its_line_column_and_what_was_wrong) {
    static const struct {
        const char *src, *says;
    } cases[] = {
        {"main = foo(1)", "line 1, column 8: unknown name 'foo'"},
        {"main = (1 + 2", "line 1, column 14: expected ',' or ')', found the end of the program"},
        {"main = 1 +\n", "line 2, column 1: expected an expression"},
        {"f(x) = x\n", "no 'main' definition"},
        {"main = 1\nmain = 2", "line 2, column 1: 'main' is defined twice (first on line 1)"},
        {"main = switch 1 { 1: 2; _: 3 }", "line 1, column 19: expected the case '0:', found '1'"},
        {"main = switch 1 { 0: 2; 2: 3; _: 4 }", "line 1, column 25: expected the case '1:' or the default case '_:', found '2'"},
        {"main = switch 1 { 0: 2 }", "line 1, column 24: a switch ends with its default case '_:'"},
        {"main = switch 1 { _: 2 }", "line 1, column 19: a switch's numbered cases come first"},
        {"main = switch 1 { 0: 2; _: 3; 4 }", "line 1, column 31: expected '}' after the default case"},
        {"main = \\. 1", "line 1, column 9: expected a parameter name after the lambda, found '.'"},
        {"main = \\x 1", "line 1, column 11: expected a parameter name after the lambda, found '1'"},
        {"main = let = 1; 2", "line 1, column 12: expected a name after 'let', found '='"},
        {"main = let x = 1 2", "line 1, column 18: expected ';' after the let's value, found '2'"},
        {"main = 12abc", "line 1, column 10: a number ends at 'a'"},
        {"main = 99999999", "line 1, column 8: invalid number '99999999'"},
        {"f(x = 1\nmain = 1", "line 1, column 5: expected ',' or ')' after a parameter, found '='"},
        {"main = f(1, )\nf(a, b) = a", "line 1, column 13: expected an expression"},
        {"x = y\ny = x\nmain = x", "is defined by itself (only functions may be recursive)"},
        {"let = 1", "line 1, column 1: expected a definition (name = expression) or a type, found 'let'"},
        {"main = 1 $ 2", "line 1, column 10: expected a definition (name = expression) or a type, found '$'"},
        {"\n\n  main = λ", "line 3, column 11: expected a parameter name after the lambda, found the end"},
        {"main = match 1 { Foo: 1 }", "line 1, column 18: 'Foo' is not a constructor"},
        {"type T = A | B(x)\nmain = match A { A: 1 }", "line 2, column 8: the match has no case for 'B' (of T)"},
        {"type T = A | B(x)\nmain = match A { A: 1; B: 2 }", "line 2, column 24: 'B' has 1 field, the case names 0"},
        {"type T = A | B(x)\nmain = match A { A: 1; A: 2; B(y): y }", "line 2, column 24: a second case for 'A'"},
        {"type T = A | B(x)\ntype U = C\nmain = match A { A: 1; C: 2 }", "line 3, column 24: 'C' is not a constructor of T"},
        {"type T = A\ntype T = B\nmain = 1", "line 2, column 1: the type 'T' is declared twice (first on line 1)"},
        {"type T = A\nA = 1\nmain = 1", "line 2, column 1: 'A' is defined twice (first on line 1)"},
        {"main = let (a, b = 1; 2", "line 1, column 18: expected ',' or ')' in the let's tuple, found '='"},
        {"main = [1, 2", "line 1, column 13: expected ',' or ']', found the end"},
        {"main = f24 3", "line 1, column 12: expected '(' after a cast's type, as in f24(x), found '3'"},
        {"main = u24(1, 2)", "line 1, column 13: expected ')' after the cast's value, found ','"},
        {"f24(x) = x\nmain = 1", "line 1, column 1: expected a definition (name = expression) or a type, found 'f24'"},
        {"main = let i24 = 1; i24", "line 1, column 12: expected a name after 'let', found 'i24'"},
        {"double(x) = x + x\nmain = double(3, 4)", "line 2, column 8: 'double' takes 1 argument, and this call passes 2"},
        {"main = (\\x y. (x, y))(1, 2, 3)", "line 1, column 10: this function takes 2 arguments, and this call passes 3"},
        {"f(n) = switch n { 0: 1; _: 2 }\nmain = 1 + f(1, 2)", "line 2, column 12: 'f' takes 1 argument"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pgn_error err = {0};
        char *net = pgn_pgl_compile(cases[i].src, strlen(cases[i].src), &err);
        cr_assert_null(net, "compiled:\n%s\nto\n%s", cases[i].src, net);
        cr_assert_eq(err.code, PGN_E_INVALID_PROGRAM, "%s", cases[i].src);
        cr_assert(strstr(err.message, cases[i].says), "for:\n%s\nsaid: %s\nnot:  %s", cases[i].src, err.message,
                  cases[i].says);
    }
}

/* The source is len bytes, not a C string: a program cut anywhere is read within its bytes
 * (the fuzzer found a case number read past the end; ASan checks this test). */
Test(lang, a_program_cut_anywhere_is_read_within_its_bytes) {
    const char *whole = "f(n) = switch n { 0: 1; 12: 2; _ k: k }\nmain = f(3) + 1.25";
    for (size_t len = 0; len <= strlen(whole); len++) {
        char *cut = malloc(len ? len : 1);
        cr_assert_not_null(cut);
        memcpy(cut, whole, len);
        pgn_error err = {0};
        char *net = pgn_pgl_compile(cut, len, &err);
        cr_assert(net || err.message[0], "cut at %zu: neither a net nor an error", len);
        free(net);
        free(cut);
    }
}

/* An inet job spec with "language": "pgl" compiles its program (a compile error is the spec's
 * error, on the field "program") and keeps the source as written. */
Test(lang, inet_specs_take_pgl_programs) {
    const char *good = "{\"kind\":\"inet\",\"language\":\"pgl\",\"program\":\"main = 6 * 7\"}";
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(good, strlen(good), &spec, &err), 0, "%s", err.message);
    cr_assert(strstr(spec.inet.program, "@main = "), "%s", spec.inet.program);
    cr_assert_str_eq(spec.inet.source, "main = 6 * 7");
    json_t *j = pgn_spec_to_json(&spec);
    cr_assert_str_eq(json_string_value(json_object_get(j, "program")), "main = 6 * 7");
    cr_assert_str_eq(json_string_value(json_object_get(j, "language")), "pgl");
    json_decref(j);
    pgn_spec_free(&spec);

    const char *bad = "{\"kind\":\"inet\",\"language\":\"pgl\",\"program\":\"main = 1 +\"}";
    cr_assert_neq(pgn_spec_parse_text(bad, strlen(bad), &spec, &err), 0);
    cr_assert_str_eq(err.field, "program");
    cr_assert(strstr(err.message, "line 1, column 11: expected an expression"), "%s", err.message);
    pgn_spec_free(&spec);

    const char *unknown = "{\"kind\":\"inet\",\"language\":\"bend\",\"program\":\"main = 1\"}";
    cr_assert_neq(pgn_spec_parse_text(unknown, strlen(unknown), &spec, &err), 0);
    cr_assert_str_eq(err.field, "language");
    pgn_spec_free(&spec);
}

/* train_xor.pgl trains examples/jobs/xor.json's network by interaction nets: its initial weights
 * are the engine's for that spec (written out to 9 digits), and after the same 100 steps its
 * loss is the tensor engine's to f24's precision, every sample right on both. */
Test(lang, xor_trained_by_interaction_nets_matches_the_tensor_engine) {
    char *src = example("inet", "train_xor", "pgl"), *spec_text = example("jobs", "xor", "json");
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(spec_text, strlen(spec_text), &spec, &err), 0, "%s", err.message);
    /* the engine's initial weights, each in the source in order */
    pgn_graph g;
    pgn_graph_init(&g, NULL, 4, spec.seed);
    cr_assert_eq(pgn_graph_build_mlp(&g, &spec.train, &err), 0, "%s", err.message);
    const char *at = strstr(src, "init = ");
    cr_assert_not_null(at);
    for (int p = 0; p < g.n_params; p++) {
        const pgn_node *n = &g.nodes[g.params[p]];
        float v[64];
        cr_assert_leq((size_t)n->rows * n->cols, 64);
        cr_assert_eq(pgn_tensor_read(&n->value, v, (size_t)n->rows * n->cols, &err), 0);
        for (int i = 0; i < n->rows * n->cols; i++) {
            char num[32];
            snprintf(num, sizeof num, "%.9g", (double)v[i]);
            const char *found = strstr(at, num);
            cr_assert_not_null(found, "%s[%d] = %s is not next in train_xor.pgl's init", n->name, i, num);
            at = found + strlen(num);
        }
    }
    pgn_graph_release(&g);
    /* the tensor engine's run of the spec, on the host */
    json_t *result = NULL;
    pgn_run_options opts = {0};
    cr_assert_eq(pgn_job_run(&spec, NULL, &opts, NULL, &result, &err), 0, "%s", err.message);
    double engine_loss = json_real_value(json_object_get(result, "train_loss"));
    cr_assert_float_eq(json_real_value(json_object_get(result, "accuracy")), 1.0, 1e-9);
    json_decref(result);
    pgn_spec_free(&spec);
    /* the nets' run (the host reducer): (loss, right) */
    uint64_t itrs;
    char *nf = run_on(NULL, src, &itrs), *value = pgn_pgl_readback(src, strlen(src), nf);
    cr_assert_not_null(value, "%s", nf);
    double loss = 0;
    int right = 0;
    cr_assert_eq(sscanf(value, "(%lf, %d)", &loss, &right), 2, "%s", value);
    cr_assert_eq(right, 4, "%s", value);
    cr_assert_float_eq(loss, engine_loss, 1e-3 * engine_loss, "nets %g, tensor engine %g", loss, engine_loss);
    free(value);
    free(nf);
    /* the dashboard's template (web/form.js) carries this very program */
    char path[512];
    size_t len;
    snprintf(path, sizeof path, "%s/web/form.js", getenv("PARAGON_SOURCE_ROOT"));
    char *form = pgn_read_file(path, &len);
    cr_assert_not_null(form, "%s", path);
    cr_assert(strstr(form, src), "web/form.js's TRAIN_XOR_PGL is not examples/inet/train_xor.pgl as it is");
    free(form);
    free(src);
    free(spec_text);
}

/* The bytes of the pgl definition `name = [b0, b1, ..]` in src: n of them, each compared with the
 * dataset's pixel (byte / 255). */
static void assert_image_bytes(const char *src, const char *name, const float *x, int n) {
    char head[64];
    snprintf(head, sizeof head, "\n%s = [", name);
    const char *at = strstr(src, head);
    cr_assert_not_null(at, "no %s in train_fashion.pgl", name);
    at += strlen(head);
    for (int i = 0; i < n; i++) {
        char *end;
        long b = strtol(at, &end, 10);
        cr_assert(end != at, "%s has fewer than %d bytes", name, n);
        cr_assert_eq((float)b / 255.0f, x[i], "%s[%d] = %ld is not the dataset's pixel", name, i, b);
        at = end + strspn(end, ", \n");
    }
    cr_assert_eq(*at, ']', "%s has more than %d bytes", name, n);
}

/* train_fashion.pgl trains examples/jobs/fashion-linear.json's model by interaction nets: the same
 * images (its bytes and labels are the dataset's first 32 of each set), zero initial weights on
 * both sides and the same 20 full-batch steps. The loss agrees to f24's precision; the training
 * and test images classified right are the same. */
Test(lang, fashion_mnist_trained_by_interaction_nets_matches_the_tensor_engine) {
    char *src = example("inet", "train_fashion", "pgl"), *expected = example("inet", "train_fashion", "expected");
    char *spec_text = example("jobs", "fashion-linear", "json");
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(spec_text, strlen(spec_text), &spec, &err), 0, "%s", err.message);
    /* the same images and labels */
    pgn_dataset train, test;
    cr_assert_eq(pgn_dataset_load(&spec.train.data, "/nonexistent", &train, &test, &err), 0, "%s", err.message);
    const pgn_dataset *sets[2] = {&train, &test};
    for (int s = 0; s < 2; s++) {
        cr_assert_eq(sets[s]->n, 32);
        for (int i = 0; i < sets[s]->n; i++) {
            char name[32], leaf[64];
            snprintf(name, sizeof name, "%s_image%d", s ? "test" : "train", i);
            assert_image_bytes(src, name, sets[s]->x + (size_t)i * 784, 784);
            snprintf(leaf, sizeof leaf, "Leaf(%d, %s)", (int)sets[s]->y[i], name);
            cr_assert_not_null(strstr(src, leaf), "%s's label is not %d", name, (int)sets[s]->y[i]);
        }
    }
    pgn_dataset_free(&train);
    pgn_dataset_free(&test);
    /* the engine starts from zeros, as the program does */
    pgn_graph g;
    pgn_graph_init(&g, NULL, 32, spec.seed);
    cr_assert_eq(pgn_graph_build_mlp(&g, &spec.train, &err), 0, "%s", err.message);
    for (int p = 0; p < g.n_params; p++) {
        const pgn_node *n = &g.nodes[g.params[p]];
        size_t count = (size_t)n->rows * n->cols;
        float *v = malloc(count * sizeof *v);
        cr_assert_eq(pgn_tensor_read(&n->value, v, count, &err), 0, "%s", err.message);
        for (size_t i = 0; i < count; i++) cr_assert_eq(v[i], 0.0f, "%s[%zu] = %g", n->name, i, (double)v[i]);
        free(v);
    }
    pgn_graph_release(&g);
    /* the tensor engine's run, on the host */
    json_t *result = NULL;
    pgn_run_options opts = {0};
    cr_assert_eq(pgn_job_run(&spec, NULL, &opts, NULL, &result, &err), 0, "%s", err.message);
    double engine_loss = json_real_value(json_object_get(result, "train_loss"));
    double engine_train = json_real_value(json_object_get(result, "train_accuracy"));
    double engine_test = json_real_value(json_object_get(result, "test_accuracy"));
    json_decref(result);
    pgn_spec_free(&spec);
    /* the nets' run, on OpenCL: (loss, training images right, test images right) */
    uint64_t itrs;
    char *nf = run_on(dev, src, &itrs), *value = pgn_pgl_readback(src, strlen(src), nf), got[256];
    cr_assert_not_null(value, "%s", nf);
    double loss = 0;
    int right = 0, test_right = 0;
    cr_assert_eq(sscanf(value, "(%lf, %d, %d)", &loss, &right, &test_right), 3, "%s", value);
    cr_assert_float_eq(loss, engine_loss, 1e-3 * engine_loss, "nets %g, tensor engine %g", loss, engine_loss);
    cr_assert_eq(right, (int)lround(engine_train * 32), "nets %d of 32, tensor engine %g", right, engine_train);
    cr_assert_eq(test_right, (int)lround(engine_test * 32), "nets %d of 32, tensor engine %g", test_right, engine_test);
    snprintf(got, sizeof got, "Result: %s\n- ITRS: %llu\n", value, (unsigned long long)itrs);
    cr_assert_str_eq(got, expected);
    free(value);
    free(nf);
    free(src);
    free(expected);
    free(spec_text);
}
