/* lock.h: one paragond per database. Two servers on one database would both run its "running"
 * jobs (writing one checkpoint file) and each would re-queue the other's at start, so the
 * server takes this lock before it creates, reads or recovers anything. */
#ifndef PGD_LOCK_H
#define PGD_LOCK_H

#include "paragon.h"

#define PGD_LOCK_SUFFIX ".lock"

typedef struct pgd_lock pgd_lock;

/* Takes an exclusive lock on <db>.lock (created when missing), <db> being db_path's real file
 * (symbolic links resolved), and writes our pid into it. Held by another process: code
 * "locked", the message naming that process's pid; a database with a second hard link: code
 * "store", naming the links. */
int pgd_lock_take(const char *db_path, pgd_lock **out, pgn_error *err);
/* Empties the file and releases the lock. NULL is ignored. */
void pgd_lock_release(pgd_lock *lock);

#endif
