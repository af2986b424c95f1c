/* inet_run.c: a run on the host reference reducer, as HVM2's run.c makes one: @main booted
 * against the root, the net normalized, the program's IO rounds performed (inet_io.c) when the
 * run allows IO, and the normal form read back with the run's figures. The reducer itself
 * (inet_host.c) knows nothing of IO. */
#include "inet/inet.h"
#include "inet/inet_net.h"

int pgn_inet_run_host(const pgn_inet_book *book, const pgn_inet_limits *lim, const pgn_inet_io *io,
                      const pgn_run_hooks *hooks, pgn_inet_result *out, pgn_error *err) {
    *out = (pgn_inet_result){0};
    pgn_inet_net *n;
    if (pgn_inet_net_new(book, lim, &n, err)) return -1;
    /* The run starts as HVM2's does, with the redex @main ~ ROOT, a CALL that counts. */
    pgn_inet_net_boot(n, pgn_inet_port(PGN_INET_REF, 0), pgn_inet_net_root(n));
    int rc = pgn_inet_net_normalize(n, hooks, err);
    if (rc == 0 && io) rc = pgn_inet_io_run(n, io, hooks, out, err);
    double seconds = pgn_inet_net_seconds(n);
    char *nf = rc == 0 ? pgn_inet_net_readback(n, err) : NULL;
    uint64_t itrs = pgn_inet_net_interactions(n);
    out->normal_form = nf;
    out->interactions = itrs;
    out->seconds = nf ? seconds : 0;
    out->mips = nf && seconds > 0 ? (double)itrs / seconds / 1e6 : 0;
    pgn_inet_net_peaks(n, &out->peak_nodes, &out->peak_bytes);
    pgn_inet_net_free(n);
    return nf ? 0 : -1;
}
