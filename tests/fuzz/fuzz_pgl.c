/* fuzz_pgl.c: a libFuzzer target for pgl's reader and compiler (engine/lang/). Not part of the
 * build or the tests: see README.md here. Beyond "no crash and no sanitizer report" it checks:
 *   - a refused program has the code invalid_program (or out_of_memory) and a message that
 *     names a line and column inside the input, or says that main is missing;
 *   - an accepted program's net parses as HVM2 (the compiler never writes a net the runtime
 *     refuses), and compiling it again gives the same text. */
#include "paragon.h"
#include "inet/inet.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *src = (const char *)data;
    pgn_error err = {0};
    char *net = pgn_pgl_compile(src, size, &err);
    if (!net) {
        if (err.code == PGN_E_OUT_OF_MEMORY) return 0;
        if (err.code != PGN_E_INVALID_PROGRAM || !err.message[0]) abort();
        int line = 0, col = 0;
        if (sscanf(err.message, "line %d, column %d:", &line, &col) == 2) {
            int lines = 1;
            for (size_t i = 0; i < size; i++) lines += src[i] == '\n';
            if (line < 1 || line > lines || col < 1) abort();
        } else if (!strstr(err.message, "no 'main' definition")) {
            abort();
        }
        return 0;
    }
    pgn_inet_book *book = NULL;
    if (pgn_inet_parse(net, strlen(net), &book, &err)) {
        fprintf(stderr, "the compiled net does not parse: %s\n%s\n", err.message, net);
        abort();
    }
    pgn_inet_book_free(book);
    char *again = pgn_pgl_compile(src, size, &err);
    if (!again || strcmp(again, net)) abort();
    free(again);
    free(net);
    return 0;
}
