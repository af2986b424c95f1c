/* assets.h: the files paragond carries inside it (scripts/embed.py; pgn_embedded in paragon.h):
 * the dashboard's web files, the SQLite migrations and the API's OpenAPI document. */
#ifndef PGD_ASSETS_H
#define PGD_ASSETS_H

#include "paragon.h"

extern const pgn_embedded pgd_web_sources[];    /* web/: index.html, style.css, the modules */
extern const pgn_embedded pgd_schema_sources[];    /* schema/NNN_name.sql in order (SQLite) */
extern const pgn_embedded pgd_schema_postgresql[]; /* schema/postgresql/NNN_name.sql */
extern const pgn_embedded pgd_api_docs[];       /* server/openapi.json: the API described */
#define PGD_OPENAPI_FILE "openapi.json"


#endif
