/* embedded.h: files compiled into the binaries by scripts/embed.py (kernels, schema, web).
 * Each table ends with an entry whose name is NULL; data is NUL-terminated past size. */
#ifndef PGN_EMBEDDED_H
#define PGN_EMBEDDED_H

#include <stddef.h>

typedef struct pgn_embedded {
    const char *name; /* base name of the source file, e.g. "tensor.cl" */
    const unsigned char *data;
    size_t size;
} pgn_embedded;

extern const pgn_embedded pgn_kernel_sources[]; /* kernels/: headers first, then *.cl */
extern const pgn_embedded pgn_schema_sources[]; /* schema/NNN_name.sql in order */
extern const pgn_embedded pgn_web_sources[];    /* web/ assets */
extern const pgn_embedded pgn_inet_examples[];  /* examples/inet: NAME.hvm and NAME.expected */

/* Finds an entry by name in a table; NULL when absent. */
const pgn_embedded *pgn_embedded_find(const pgn_embedded *table, const char *name);

#endif
