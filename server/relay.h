/* relay.h: a cluster node's relay of the job changes other nodes make (their runs' states,
 * progress and log lines) to this node's event streams, from what the store announces
 * (store.h, "hearing other nodes' writes"), so that a job is followed through any node. */
#ifndef PGD_RELAY_H
#define PGD_RELAY_H

#include "events.h"
#include "scheduler.h"
#include "store.h"

typedef struct pgd_relay pgd_relay;

/* Starts the relay on its own connection to target; *out NULL (and 0) where the store announces
 * nothing (SQLite: one paragond). store, events and sched must outlive it. */
int pgd_relay_start(const char *target, pgd_store *store, pgd_events *events, pgd_scheduler *sched,
                    pgd_relay **out, pgn_error *err);
/* Stops the thread and frees the relay; NULL is ignored. */
void pgd_relay_stop(pgd_relay *relay);

#endif
