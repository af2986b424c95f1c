/* inet_print.c: readback: the normal form left in a reduced heap, printed in HVM2's syntax.
 * Shared by the host and OpenCL reducers (the latter after downloading its heap), so both
 * print the same text for the same net. Iterative, so deep trees cannot exhaust the stack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inet.h"

/* The stack holds ports still to print and punctuation still to emit (flagged in bit 32). */
#define PUNCT (1ull << 32)

char *pgn_inet_readback(const pgn_inet_book *book, const uint64_t *nodes, size_t n_nodes,
                        const uint32_t *vars, size_t n_vars, uint32_t root, pgn_error *err) {
    pgn_text out = {0};
    uint64_t *stack = NULL;
    size_t top = 0, cap = 0;
    uint8_t *seen = calloc(n_nodes / 8 + 1, 1);  /* nodes already printed: a second visit is a cycle */
    uint32_t *name = calloc(n_vars + 1, sizeof *name); /* 1 + the name number of an unlinked variable */
    uint32_t names = 0;
    const char *bad = NULL;
    if (!seen || !name) goto oom;

#define PUSH(x)                                                                  \
    do {                                                                         \
        if (top == cap) {                                                        \
            size_t ncap = cap ? cap * 2 : 64;                                    \
            uint64_t *ns = realloc(stack, ncap * sizeof *stack);                 \
            if (!ns) goto oom;                                                   \
            stack = ns;                                                          \
            cap = ncap;                                                          \
        }                                                                        \
        stack[top++] = (x);                                                      \
    } while (0)

    PUSH(root);
    while (top && !out.oom) {
        uint64_t item = stack[--top];
        if (item & PUNCT) {
            char c = (char)(item & 0xFF);
            pgn_text_put(&out, &c, 1);
            continue;
        }
        uint32_t port = (uint32_t)item;
        /* follow substitutions to the port this one stands for */
        for (size_t steps = 0; pgn_inet_tag(port) == PGN_INET_VAR; steps++) {
            uint32_t v = pgn_inet_val(port);
            if (v >= n_vars || steps > n_vars) {
                bad = "a variable outside the heap";
                goto fail;
            }
            if (vars[v] == PGN_INET_NONE) break;
            port = vars[v];
        }
        uint32_t tag = pgn_inet_tag(port), val = pgn_inet_val(port);
        char buf[PGN_INET_NUMB_TEXT + 16];
        switch (tag) {
        case PGN_INET_VAR:
            if (!name[val]) name[val] = ++names;
            snprintf(buf, sizeof buf, "v%x", name[val] - 1);
            pgn_text_puts(&out, buf);
            break;
        case PGN_INET_REF:
            if ((val & PGN_INET_REF_FID) >= book->n_defs) {
                bad = "a reference to no definition";
                goto fail;
            }
            pgn_text_put(&out, "@", 1);
            pgn_text_puts(&out, book->defs[val & PGN_INET_REF_FID].name);
            break;
        case PGN_INET_ERA: pgn_text_put(&out, "*", 1); break;
        case PGN_INET_NUM: pgn_text_puts(&out, pgn_inet_numb_show(val, buf)); break;
        default: {
            if (val >= n_nodes) {
                bad = "a node outside the heap";
                goto fail;
            }
            if (seen[val / 8] & (1u << (val % 8))) {
                /* a node's principal port has one wire, so a valid net never reaches a node
                 * twice from the root: only a corrupt heap does */
                bad = "a node reachable twice";
                goto fail;
            }
            seen[val / 8] |= (uint8_t)(1u << (val % 8));
            static const char *const OPEN[] = {"(", "{", "$(", "?("};
            static const char CLOSE[] = {')', '}', ')', ')'};
            pgn_text_puts(&out, OPEN[tag - PGN_INET_CON]);
            PUSH(PUNCT | (uint8_t)CLOSE[tag - PGN_INET_CON]);
            PUSH(pgn_inet_snd(nodes[val]));
            PUSH(PUNCT | (uint8_t)' ');
            PUSH(pgn_inet_fst(nodes[val]));
            break;
        }
        }
    }
#undef PUSH
    char *printed = pgn_text_take(&out);
    if (!printed) goto oom;
    free(stack);
    free(seen);
    free(name);
    return printed;

fail:
    pgn_error_set(err, "internal", "", "readback: the heap is corrupt (%s)", bad);
    goto out_fail;
oom:
    pgn_error_set(err, "internal", "", "out of memory while printing the normal form");
out_fail:
    free(stack);
    free(seen);
    free(name);
    free(out.data);
    return NULL;
}
