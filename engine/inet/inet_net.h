/* inet_net.h: the host reducer's net (inet_host.c) as the IO loop (inet_io.c) works on it between
 * normalizations, the way HVM2's run.c works on its net: boot a redex against the root, reduce to
 * normal form, look at and make nodes and variables. Private to engine/inet. */
#ifndef PGN_INET_NET_H
#define PGN_INET_NET_H

#include "inet/inet.h"

typedef struct pgn_inet_net pgn_inet_net;

/* An empty net for book under lim (NULL: none), its root variable unlinked; timeout_s counts from
 * now. Or one taken over from a device's reduced heaps (n_nodes and n_vars slots, root variable
 * root, itrs interactions done), to go on with on the host. */
int pgn_inet_net_new(const pgn_inet_book *book, const pgn_inet_limits *lim, pgn_inet_net **out, pgn_error *err);
int pgn_inet_net_adopt(const pgn_inet_book *book, const pgn_inet_limits *lim, const uint64_t *nodes,
                       uint32_t n_nodes, const uint32_t *vars, uint32_t n_vars, uint32_t root, uint64_t itrs,
                       pgn_inet_net **out, pgn_error *err);
void pgn_inet_net_free(pgn_inet_net *n);

/* HVM2's boot_redex(a ~ b): empties the root variable, then a ~ b: a REF against the root itself
 * is called at once (a CALL, counted); anything else is linked, a redex for the next normalize. */
void pgn_inet_net_boot(pgn_inet_net *n, uint32_t a, uint32_t b);
/* Reduces every redex, counting; the limits (timeout_s from the net's making), should_stop and
 * failures as pgn_inet_run_host states them. */
int pgn_inet_net_normalize(pgn_inet_net *n, const pgn_run_hooks *hooks, pgn_error *err);

/* The root variable as a port; what it holds (a port, or PGN_INET_NONE), and setting that. */
uint32_t pgn_inet_net_root(const pgn_inet_net *n);
uint32_t pgn_inet_net_root_get(const pgn_inet_net *n);
void pgn_inet_net_root_set(pgn_inet_net *n, uint32_t port);
/* What p leads to through linked variables, none used up (HVM2's peek). */
uint32_t pgn_inet_net_peek(const pgn_inet_net *n, uint32_t p);
/* Node i's two ports (a pair; 0 for no node). */
uint64_t pgn_inet_net_load(const pgn_inet_net *n, uint32_t i);
/* A new node holding (fst, snd), its index; a new unlinked variable, as a port. A heap that cannot
 * grow flags the net: the next normalize fails saying why. */
uint32_t pgn_inet_net_node(pgn_inet_net *n, uint32_t fst, uint32_t snd);
uint32_t pgn_inet_net_var(pgn_inet_net *n);
/* Nodes live now. */
uint64_t pgn_inet_net_live(const pgn_inet_net *n);
/* Frees the trees at roots, which nothing else uses (the IO loop's consumed call, the copies its
 * reads expanded), without an interaction and so without a count: their nodes, the variables
 * both of whose ends lie in them, and what such a variable had been linked to. A variable with
 * one end elsewhere is left as it is, as HVM2, which keeps the whole call, leaves it; the tree
 * at keep (the continuation) is not entered. */
void pgn_inet_net_drop(pgn_inet_net *n, const uint32_t *roots, size_t n_roots, uint32_t keep);

uint64_t pgn_inet_net_interactions(const pgn_inet_net *n);
/* Seconds left before timeout_s, or -1 when there is no timeout. */
double pgn_inet_net_time_left(const pgn_inet_net *n);
/* Seconds since the net was made. */
double pgn_inet_net_seconds(const pgn_inet_net *n);
/* The normal form at the root, printed (pgn_inet_readback). */
char *pgn_inet_net_readback(pgn_inet_net *n, pgn_error *err);
void pgn_inet_net_peaks(const pgn_inet_net *n, uint64_t *nodes, uint64_t *bytes);

/* HVM2's IO loop (run.c's do_run_io) on a normalized net whose root may be an IO/Call (inet_io.c). */
int pgn_inet_io_run(pgn_inet_net *n, const pgn_inet_io *io, const pgn_run_hooks *hooks, pgn_inet_result *res,
                    pgn_error *err);

#endif
