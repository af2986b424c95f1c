/* inet_gen.h: random well-formed interaction nets for the reducers' tests: three definitions of
 * random trees (CON, DUP, OPR, SWI, numbers, operators, references that often recurse) with every
 * variable used exactly twice. Shared by test_inet.c (host) and test_inet_cl.c (host vs device). */
#ifndef PGN_TEST_INET_GEN_H
#define PGN_TEST_INET_GEN_H

#include <stdint.h>
#include <stdio.h>

/* xorshift64: a small deterministic generator, so a failure names a reproducible case. */
static inline uint64_t inet_gen_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#define INET_GEN_MAX 60000 /* text grows to at most this (plus the closing lines) */

/* Writes a program into text (at least 64 KiB) from *seed; returns its length. */
static inline size_t inet_gen_program(uint64_t *seed, char *text) {
    static const char *const leaves[] = {"*", "0", "1", "+2", "-3", "1.5", "[+]", "[*]", "[<]", "[:-1]",
                                         "[u24]", "[f24]", "@main", "@f0", "@f1"};
    size_t o = 0;
    for (int d = 0; d < 3; d++) {
        o += (size_t)sprintf(text + o, d == 0 ? "@main = " : "\n@f%d = ", d - 1);
        int open = 0, made = 0;
        /* a tree in prefix form from a random shape, closing variables as it goes */
        int pending = 1, stack[64], top = 0;
        while (pending > 0 && o < INET_GEN_MAX) {
            uint64_t k = inet_gen_rand(seed) % 10;
            if (k < 3 && top < 60) {
                static const char *const opens[] = {"(", "{", "$(", "?("};
                static const char closes[] = {')', '}', ')', ')'};
                int t = (int)(inet_gen_rand(seed) % 4);
                o += (size_t)sprintf(text + o, "%s", opens[t]);
                stack[top++] = closes[t];
                stack[top++] = 2; /* children left */
                pending--;
                pending += 2;
                continue;
            }
            if (k < 6) {
                if (open && inet_gen_rand(seed) % 2) {
                    o += (size_t)sprintf(text + o, "v%d ", made - open);
                    open--;
                } else {
                    o += (size_t)sprintf(text + o, "v%d ", made++);
                    open++;
                }
            } else {
                o += (size_t)sprintf(text + o, "%s ", leaves[inet_gen_rand(seed) % 15]);
            }
            pending--;
            while (top) {
                if (--stack[top - 1] > 0) break;
                top--;
                text[o++] = (char)stack[--top];
                text[o++] = ' ';
            }
        }
        /* variables opened last-in first-out were closed in that order; close the rest */
        while (open) {
            o += (size_t)sprintf(text + o, "\n  & v%d ~ *", made - open);
            open--;
        }
    }
    text[o] = '\0';
    return o;
}

#endif
