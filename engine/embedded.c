/* embedded.c: lookup in the tables that scripts/embed.py generates. */
#include "embedded.h"

#include <string.h>

const pgn_embedded *pgn_embedded_find(const pgn_embedded *table, const char *name) {
    for (const pgn_embedded *e = table; e->name; e++)
        if (strcmp(e->name, name) == 0) return e;
    return NULL;
}
