/* embedded.h: the engine's files compiled into the binaries by scripts/embed.py: the kernel
 * sources and the example programs the inet benchmark runs (pgn_embedded is in paragon.h). */
#ifndef PGN_EMBEDDED_H
#define PGN_EMBEDDED_H

#include "paragon.h"

extern const pgn_embedded pgn_kernel_sources[]; /* kernels/: headers first, then *.cl */
extern const pgn_embedded pgn_inet_examples[];  /* examples/inet: NAME.hvm and NAME.expected */

#endif
