/* inet.h: the interaction-net runtime: HVM2's text format parsed into a book of definitions,
 * the sequential host reference reducer, and the readback that prints a normal form the way HVM2
 * prints it. The book and heap layouts (kernels/pgn_inet_port.h) are what the OpenCL reducer
 * uploads and downloads, so it can share the parser and the printer. */
#ifndef PGN_INET_H
#define PGN_INET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "paragon.h"
#include "pgn_math.h"
#include "pgn_inet_port.h"
#include "pgn_inet_num.h"

/* ---- the book ------------------------------------------------------------------------------
 * One definition is a net template: its nodes, its redexes and its root port, where node ports
 * (tag >= CON) hold def-local node indices, VAR ports def-local variable indices and REF ports
 * definition ids. Instantiating it (the CALL rule) allocates node_len nodes and vars_len
 * variables and rebases those indices. As in HVM2, id 0 is @main and the other definitions
 * follow in name order. All definitions' nodes live in one array, and so do their redexes. */
typedef struct pgn_inet_def {
    const char *name; /* without the '@'; points into the book's name storage */
    bool safe;        /* no DUP node in it nor in anything it references: a DUP may copy it */
    uint32_t root;
    uint32_t node_off, node_len; /* book->nodes[node_off .. node_off + node_len) */
    uint32_t rbag_off, rbag_len; /* book->rbag[rbag_off .. rbag_off + rbag_len) */
    uint32_t vars_len;
    /* Its plan (kernels/pgn_inet_plan.h, engine/inet/inet_plan.c): book->plan's steps
     * [plan_off, plan_off + plan_len) over plan_regs registers; plan_len 0: none (too deep), its
     * CALL is interpreted. links: the most redexes its CALL may queue, either way. */
    uint32_t plan_off, plan_len, plan_regs, links;
} pgn_inet_def;

typedef struct pgn_inet_book {
    pgn_inet_def *defs;
    uint32_t n_defs;
    uint64_t *nodes; /* pgn_inet_pair(fst, snd) */
    uint32_t n_nodes;
    uint64_t *rbag; /* redexes; a `&!` redex's first port, when a REF, has PGN_INET_REF_PAR */
    uint32_t n_rbag;
    uint32_t max_def_nodes, max_def_vars; /* the largest definition, for scratch space */
    uint32_t max_def_rbag, max_def_links, max_plan_regs;
    uint32_t *plan; /* every definition's steps, PGN_INET_STEP_WORDS words each */
    uint32_t n_plan;
    char *names;                          /* every name, NUL-terminated, one after another */
} pgn_inet_book;

/* Parses a whole program. Errors have code "invalid_program" and a message that names line,
 * column and what was expected ("line 3, col 14: unbound variable 'x'"). On success *out is a
 * new book (pgn_inet_book_free). text need not be NUL-terminated; a NUL byte is a syntax error. */
int pgn_inet_parse(const char *text, size_t len, pgn_inet_book **out, pgn_error *err);
void pgn_inet_book_free(pgn_inet_book *book);
/* Compiles every definition of a parsed book into its plan (pgn_inet_parse does). */
int pgn_inet_plan_book(pgn_inet_book *book, pgn_error *err);
/* When the reducers run plans, from the environment's PARAGON_INET_PLANS: "0" never (to measure
 * what they bring: counts and results are the same either way); unset or "1": always on the
 * host, and on a device once a run has reduced for PGN_INET_COMPILE_AFTER_S past its first
 * launch, when its own kernel
 * is built (engine/inet/inet_cl.c: a build takes seconds, the first time a program is seen);
 * "now": on a device from the first launch. */
typedef enum { PGN_INET_PLANS_OFF, PGN_INET_PLANS_ON, PGN_INET_PLANS_NOW } pgn_inet_plans;
pgn_inet_plans pgn_inet_plans_mode(void);
#define PGN_INET_COMPILE_AFTER_S 0.1
/* The book's small definitions' plans as OpenCL C for kernels/inet.cl (one function each, and
 * inet_call_compiled dispatching to them; *n_compiled of them), malloc'd; NULL when out of
 * memory. */
char *pgn_inet_plan_source(const pgn_inet_book *book, uint32_t *n_compiled);

/* The id of the definition called name (without '@'), or -1. */
int64_t pgn_inet_book_find(const pgn_inet_book *book, const char *name);

/* ---- running ------------------------------------------------------------------------------ */

/* 0: no limit. max_nodes bounds the live nodes of the heap, and through them the variable heap
 * and the redex bags (pgn_inet_caps); 0 leaves the heaps' 29-bit address space as the bound. */
typedef struct {
    uint64_t max_interactions, max_nodes;
    double timeout_s;
} pgn_inet_limits;

/* normal_form: malloc'd, the normal form of @main in HVM2's syntax.
 * seconds: wall time of the reduction alone (not parsing, heap set-up or readback).
 * peak_nodes: the most nodes live at once.
 * peak_bytes: the most memory the run held at once, device and host together: the book, heaps,
 * bags and tables at their largest (a buffer being grown counted twice, old and new), and the
 * readback; peak_device_bytes: the device's share (0 on the host). Each is at most what
 * pgn_inet_memory_estimate gives for the run. */
typedef struct {
    char *normal_form;
    uint64_t interactions;
    double seconds, mips;
    uint64_t peak_nodes;
    uint64_t peak_bytes, peak_device_bytes;
    /* the run went on on the program's own kernel (pgn_inet_plans_mode), and how long it waited
     * for it to be built (not part of seconds; 0 unless built before the first launch) */
    bool compiled;
    double compile_seconds;
    /* IO (pgn_inet_io): calls performed, and what the program wrote to stdout and stderr when the
     * run keeps it (malloc'd, NUL-terminated; output_dropped bytes past output_max not kept) */
    uint64_t io_calls;
    char *output;
    size_t output_len;
    uint64_t output_dropped;
} pgn_inet_result;

/* Where an IO program's calls go. A program's normal form may be an IO/Call, which the run
 * performs and then resumes, until IO/Done, as HVM2's run.c does (inet_io.c): WRITE, READ, OPEN,
 * CLOSE, SEEK, FLUSH, GET_TIME, SLEEP; DL_OPEN, DL_CALL and DL_CLOSE are answered with an error
 * result. Interactions are counted across the rounds. A run given no pgn_inet_io does no IO: the
 * normal form of @main is the result. */
typedef struct pgn_inet_io {
    /* Files: dir NULL opens them as the process would, relative to its working directory (hvm
     * run-c). Else they are relative to dir and confined to it: no absolute path, no "..", no
     * symbolic link followed, so nothing outside dir can be read or written. */
    const char *dir;
    /* stdout and stderr: the process's own when process_streams (and stdin is the process's);
     * else kept in the result's output, at most output_max bytes, and given line by line to
     * hooks->on_log (stdin then reads nothing). */
    bool process_streams;
    size_t output_max;
} pgn_inet_io;

/* ---- memory caps (inet_mem.c) ----------------------------------------------------------------
 * The most slots each heap and bag of a run may hold, fixed before it starts from max_nodes, the
 * book and the worker count. The reducers grow up to these caps and no further: a program that
 * needs more fails with "limit_exceeded" on limits.max_nodes. pgn_inet_memory_estimate turns the
 * same caps into bytes, so the estimate and the reducers cannot disagree. */
typedef struct {
    unsigned workers;     /* OpenCL work-items; 0: the host reducer */
    uint64_t node_limit;  /* host: live nodes; device: node heap slots (workers' chunks included) */
    bool address_space;   /* node_limit is the 29-bit address space, not max_nodes */
    uint32_t node_slots;  /* node heap slots, slot 0 included */
    uint32_t var_limit;   /* variable heap slots in use at which the run fails */
    uint32_t var_slots;   /* host: var_limit and one interaction's variables; device: var_limit */
    uint32_t bag_slots;   /* host: the redex bag; device: each worker's bag */
    uint32_t bag_reserve; /* bag slots one interaction may fill (a CALL's redexes and its root) */
} pgn_inet_caps;

void pgn_inet_caps_of(const pgn_inet_book *book, uint64_t max_nodes, unsigned workers, pgn_inet_caps *out);
/* Bytes the parsed book occupies (the caller holds it for the whole run). */
uint64_t pgn_inet_book_bytes(const pgn_inet_book *book);

/* The sequential host reference reducer: reduces @main to normal form with HVM2's rules and
 * interaction count, and performs its IO when io is given. A limit that is hit fails with code "limit_exceeded", err->field set to
 * "limits.<name>" and a message naming it ("max_interactions: 1000 interactions reached");
 * hooks->should_stop (polled about every millisecond) fails it with "cancelled"; copying a
 * definition that contains a DUP through a DUP fails with "invalid_program", as in HVM2.
 * hooks->on_metric gets "interactions" (the count so far) and "mips" (their rate since the start),
 * both at the count as their step, every PGN_INET_REPORT_EVERY_S; hooks->on_progress nothing, as
 * no fraction of the work is known before its end.
 * lim and hooks may be NULL. *out is filled on success (pgn_inet_result_free); on failure it
 * has no normal form, only the interactions and peaks reached, which show a stopped run's memory. */
int pgn_inet_run_host(const pgn_inet_book *book, const pgn_inet_limits *lim, const pgn_inet_io *io,
                      const pgn_run_hooks *hooks, pgn_inet_result *out, pgn_error *err);
void pgn_inet_result_free(pgn_inet_result *r);

/* The OpenCL reducer (kernels/inet.cl) on dev with `workers` work-items (0: the device profile's
 * inet_workers). Same contract as pgn_inet_run_host: the same normal form and
 * interaction count for any number of workers (an IO program's rounds after the first go on on
 * the host: the heaps are taken over there); seconds covers the launches and any heap growth
 * between them; peak_nodes is the node heap's high-water mark (free slots held by workers
 * included). Limits are checked between launches (about every SLICE_S, engine/inet/inet_cl.c), so
 * timeout_s and max_interactions stop the run within that; max_nodes bounds the node heap, which
 * workers' unused chunks share, so a net near the limit may stop a little sooner than on host. */
int pgn_inet_run_cl(pgn_device *dev, const pgn_inet_book *book, const pgn_inet_limits *lim, const pgn_inet_io *io,
                    unsigned workers, const pgn_run_hooks *hooks, pgn_inet_result *out, pgn_error *err);

/* Seconds between both reducers' reports to the hooks (pgn_inet_report). */
#define PGN_INET_REPORT_EVERY_S 0.5
/* Shared by both reducers: the "limit_exceeded" error for limits.<name> (returns -1), the
 * refused copy of a definition with a DUP through a DUP, and a progress report to the hooks
 * (metrics "interactions" and "mips" after itrs interactions in elapsed seconds). */
int pgn_inet_fail_limit(pgn_error *err, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int pgn_inet_fail_clone(const pgn_inet_book *book, uint32_t fid, pgn_error *err);
void pgn_inet_report(const pgn_run_hooks *hooks, uint64_t itrs, double elapsed);

/* ---- readback ------------------------------------------------------------------------------
 * A reduced heap, as the reducers leave it: node[i] is a pair of ports, vars[v] a variable's
 * substitution (a port, or PGN_INET_NONE while unlinked). root is the port to print (usually
 * VAR of the root variable). Prints the tree HVM2 prints: substitutions followed, unlinked
 * variables named x0, x1, ... in order of first appearance (HVM2 names them by address, which
 * no two runtimes share; its test suite renames them so), numbers as pgn_inet_numb_show. A heap that is not a valid net (a port
 * out of range, a node reached twice) is an "internal" error. Returns a malloc'd string or NULL;
 * *peak_bytes (may be NULL) gets the most bytes it held at once, the returned text included. */
char *pgn_inet_readback(const pgn_inet_book *book, const uint64_t *nodes, size_t n_nodes,
                        const uint32_t *vars, size_t n_vars, uint32_t root, uint64_t *peak_bytes,
                        pgn_error *err);
/* The most the readback of a heap of n_nodes and n_vars slots allocates (its marks, names, stack
 * and the text), and in *text the longest text it can print, NUL included: what
 * pgn_inet_readback's *peak_bytes and strlen(normal form) + 1 never exceed. */
uint64_t pgn_inet_readback_bound(const pgn_inet_book *book, uint64_t n_nodes, uint64_t n_vars, uint64_t *text);

/* ---- numbers (inet_num.c) ------------------------------------------------------------------ */

/* Longest text pgn_inet_numb_show writes, NUL included. */
#define PGN_INET_NUMB_TEXT 32
/* A number as HVM2 prints it: u24 "5", i24 "+5"/"-5", f24 in Rust's shortest round-trip form
 * ("1.0", "0.1", "1e20", "+inf", "-inf", "+NaN"), operators "[+]", casts "[u24]", partial
 * applications "[+0x0000001]". Returns out. */
char *pgn_inet_numb_show(uint32_t numb, char out[PGN_INET_NUMB_TEXT]);
/* The shortest decimal that reads back as f (Rust's `{:?}` of an f32; f finite). */
void pgn_inet_f32_show(float f, char out[PGN_INET_NUMB_TEXT]);

/* Parses a number literal (the text of one token, as in "12", "+5", "-0x1F", "1.5", "inf",
 * "1_000") into a number; on failure returns -1 with a reason in why. */
int pgn_inet_numb_parse(const char *tok, size_t len, uint32_t *out, const char **why);

/* An inet job: the spec's program on dev (NULL: the host reducer), hooks polled between launches,
 * its IO as opts->inet_io allows (inet_job.c). */
int pgn_inet_job_run(const pgn_job_spec *spec, pgn_device *dev, const pgn_run_options *opts,
                     const pgn_run_hooks *hooks, json_t **result, pgn_error *err);

/* The inet part of a job spec (program, work_items, limits) from its root object (inet_spec.c);
 * s->program is then owned (pgn_spec_free). A pgl program is compiled when compile is true, else
 * only kept as source (s->program NULL: the run compiles it). And back, as a new object. */
int pgn_inet_spec_parse(const json_t *root, pgn_inet_spec *s, bool compile, pgn_error *err);
json_t *pgn_inet_spec_to_json(const pgn_inet_spec *s);

#endif
