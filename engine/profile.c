/* profile.c: owns every per-device choice (docs/architecture.md, "Device profiles"): from a
 * device's type and limits, the kernel family each group of ops runs and that family's
 * parameters, each with where it came from; the override of the family (PARAGON_KERNELS,
 * --kernels). The only place in paragon that tests what kind of device a device is. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "embedded.h"
#include "pgn_gemm.h"
#include "pgn_math.h" /* with pgn_inet_port.h: what pgn_inet_dev.h uses */
#include "pgn_inet_port.h"
#include "pgn_inet_dev.h"

/* The GEMM's shapes, the profile's gemm parameter: which is fastest depends on the device
 * (measured at first start, pgn_device_calibrate among its family's), and none changes a bit of
 * a result. The cpu family's: a work-item's register tile (kernels/gemm.cl). The gpu family's: a
 * work-group's block of C, the depth of its local tiles and its work-items (kernels/gemm_gpu.cl,
 * whose kernels these sizes must match); the first is the default. */
#define CPU_TILE(name, kernel, mr, np) {name, PGN_FAMILY_CPU, PGN_K_##kernel, mr, np, 0, 0, 0, 0, 0}
#define GPU_TILE(mwg, nwg, kwg, mdimc, ndimc)                                                             \
    {#mwg "x" #nwg "k" #kwg, PGN_FAMILY_GPU, PGN_K_gemm_gpu_##mwg##x##nwg, 0, 0, mwg, nwg, kwg, mdimc, ndimc}
static const pgn_gemm_tile_shape tiles[] = {
    CPU_TILE("8x32", gemm_tile, GEMM_MR, 1),     CPU_TILE("4x64", gemm_tile_4x64, 4, 2),
    CPU_TILE("6x64", gemm_tile_6x64, 6, 2),      CPU_TILE("12x32", gemm_tile_12x32, 12, 1),
    CPU_TILE("14x32", gemm_tile_14x32, 14, 1),   GPU_TILE(64, 64, 16, 16, 16),
    GPU_TILE(128, 128, 16, 16, 16),              GPU_TILE(128, 64, 16, 32, 8),
    GPU_TILE(64, 128, 16, 8, 32),                GPU_TILE(32, 64, 32, 8, 16),
    GPU_TILE(32, 32, 32, 8, 8),
};
#define N_TILES ((int)(sizeof tiles / sizeof *tiles))
_Static_assert(GEMM_MR == 8 && GEMM_NR == 32, "tiles[0] is named for GEMM_MR x GEMM_NR");

const pgn_gemm_tile_shape *pgn_gemm_tile_shape_of(int tile) { return tile >= 0 && tile < N_TILES ? &tiles[tile] : NULL; }
int pgn_gemm_tile_count(void) { return N_TILES; }
const char *pgn_gemm_tile_name(int tile) { return tile >= 0 && tile < N_TILES ? tiles[tile].name : NULL; }

int pgn_gemm_tile_default(pgn_kernel_family family) {
    for (int i = 0; i < N_TILES; i++)
        if (tiles[i].family == family) return i;
    return 0;
}

int pgn_gemm_tile_find(const char *name) {
    for (int i = 0; i < N_TILES; i++)
        if (name && !strcmp(name, tiles[i].name)) return i;
    return -1;
}

/* The interaction-net reducer (engine/inet/inet_cl.c, kernels/inet.cl): a worker is one
 * work-item. A CPU device runs one a compute unit, in work-groups of one (pocl runs a group's
 * work-items one after another in one thread: two in a group would never run at once). A GPU's
 * worker is one thread chasing pointers through global memory, a hundred times slower than a CPU
 * core (0.5 MIPS on an H200), so it gets many, in groups of 64; its first launch of the CPU's
 * 4 million interactions a worker took 8 s there, past a 1.2 s timeout, so it starts at 16,384
 * and each launch grows at most 4x toward the reducer's time slice. */
#define INET_GPU_WORKERS_PER_CU 64u
#define INET_GPU_LOCAL 64u
#define INET_FIRST_BUDGET_CPU (1u << 22)
#define INET_FIRST_BUDGET_GPU (1u << 14)
/* The gpu family's reducer (kernels/inet_gpu.cl) deals redexes within a work-group at barriers.
 * On a GPU its groups are the cpu family's there (64 workers a compute unit, groups of 64). On a
 * CPU, where it runs to be checked, pocl runs a group's work-items one after another in one
 * thread: a group a core, of INET_GPU_LOCAL_ON_CPU workers, enough to deal among. */
#define INET_GPU_LOCAL_ON_CPU 2u

/* The gpu family's local net (kernels/inet_worker.h): the most slots of each heap, a power of two
 * up to PGN_INET_LOCAL_SLOTS_MAX, whose 12 bytes (a node and a variable) fit in the device's local
 * memory beside the deal's arrays; 0 when not even 64 fit, and the inet group keeps the cpu
 * family. NVIDIA's 48 KB and pocl take the most; Oclgrind's 32 KB half of it. */
/* A local slot's port never reaches NONE (a SWI port of value PGN_INET_VAL_MAX): at 16,384
 * slots the last one would, and a SWI node there read as an unlinked variable (tried: HVM2's
 * sort_bitonic_16 ended in a wrong normal form). */
_Static_assert(PGN_INET_LOCAL_BASE + PGN_INET_LOCAL_SLOTS_MAX - 1 < PGN_INET_VAL_MAX,
               "local slots' ports stay below NONE");

static unsigned inet_local_slots(const pgn_device_info *info) {
    uint64_t mem = info->local_mem_bytes ? info->local_mem_bytes : 32768;
    unsigned n = PGN_INET_LOCAL_SLOTS_MAX;
    while (n >= 64 && (uint64_t)n * 12 + PGN_INET_GPU_DEAL_BYTES > mem) n /= 2;
    return n >= 64 ? n : 0;
}

/* PARAGON_INET_LOCAL_SLOTS=N (64 up to what fits) makes the local net smaller: tests use it to
 * make it fill, flush and fall back to global slots often on small programs. */
static unsigned inet_local_slots_wanted(const pgn_device_info *info) {
    unsigned fit = inet_local_slots(info);
    const char *want = getenv("PARAGON_INET_LOCAL_SLOTS");
    unsigned long n = want && *want ? strtoul(want, NULL, 10) : 0;
    return n >= 64 && n < fit ? (unsigned)n : fit;
}

/* PARAGON_INET_GROUP=N (2 up to PGN_INET_GPU_LOCAL_MAX) sets the gpu family's work-group size:
 * tests use it to give pocl groups larger than a CPU's two, which hand each other batches. */
static unsigned inet_group_wanted(unsigned dflt) {
    const char *want = getenv("PARAGON_INET_GROUP");
    unsigned long n = want && *want ? strtoul(want, NULL, 10) : 0;
    return n >= 2 && n <= PGN_INET_GPU_LOCAL_MAX ? (unsigned)n : dflt;
}

/* The reducer's shape: workers, their group size and the first launch's budget, which follow
 * the device's class and the family its inet group runs. */
static void inet_shape(const pgn_device_info *info, pgn_device_profile *p) {
    unsigned cus = info->compute_units ? info->compute_units : 1;
    bool gpu = p->dev_class == PGN_CLASS_GPU, dealt = p->family[PGN_OPS_INET] == PGN_FAMILY_GPU;
    unsigned group = gpu ? INET_GPU_LOCAL : dealt ? INET_GPU_LOCAL_ON_CPU : 1; /* the host: 1 */
    p->inet_local = dealt ? inet_group_wanted(group) : group;
    p->inet_workers = p->dev_class == PGN_CLASS_HOST ? 1 : cus * (gpu ? INET_GPU_WORKERS_PER_CU : p->inet_local);
    if (info->max_work_group && p->inet_local > info->max_work_group) p->inet_local = info->max_work_group;
    if (dealt && p->inet_local > PGN_INET_GPU_LOCAL_MAX) p->inet_local = PGN_INET_GPU_LOCAL_MAX;
    p->inet_first_budget = gpu ? INET_FIRST_BUDGET_GPU : INET_FIRST_BUDGET_CPU;
    p->inet_local_slots = dealt ? inet_local_slots_wanted(info) : 0;
}

const char *pgn_kernel_family_name(pgn_kernel_family f) { return f == PGN_FAMILY_GPU ? "gpu" : "cpu"; }

const char *pgn_ops_group_name(pgn_ops_group g) {
    static const char *const names[PGN_OPS_COUNT] = {"gemm", "rows", "inet"};
    return g < PGN_OPS_COUNT ? names[g] : "?";
}

const char *pgn_profile_source_name(pgn_profile_source s) {
    return s == PGN_FROM_TUNING ? "tuning" : s == PGN_FROM_OVERRIDE ? "override" : "default";
}

static const char *class_name(pgn_device_class c) {
    return c == PGN_CLASS_HOST ? "host" : c == PGN_CLASS_GPU ? "gpu" : "cpu";
}

/* Whether this build has kernels of family f for group g (the kernel list says: engine/kernels.h). */
static bool family_built(pgn_kernel_family f, pgn_ops_group g) {
    for (int k = 0; k < PGN_KERNEL_COUNT; k++)
        if (pgn_kernel_family_of((pgn_kernel_id)k) == f && pgn_kernel_group_of((pgn_kernel_id)k) == g) return true;
    return false;
}

/* Whether family f runs group g on this device: built, and for the gpu family's reducer, its
 * local net fits. */
static bool family_runs(const pgn_device_info *info, pgn_kernel_family f, pgn_ops_group g) {
    if (f == PGN_FAMILY_GPU && g == PGN_OPS_INET && !inet_local_slots(info)) return false;
    return family_built(f, g);
}

/* Sets group g's family (and, for the GEMM, that family's default shape). */
static void set_family(pgn_device_profile *p, pgn_ops_group g, pgn_kernel_family f, pgn_profile_source from) {
    p->family[g] = f;
    p->family_from[g] = from;
    if (g == PGN_OPS_GEMM) {
        p->gemm_tile = pgn_gemm_tile_default(f);
        p->gemm_tile_from = PGN_FROM_DEFAULT;
        p->gemm_gflops = 0;
    }
}

void pgn_device_profile_default(const pgn_device_info *info, pgn_device_profile *out) {
    memset(out, 0, sizeof *out);
    /* what the device is: its defaults follow */
    pgn_device_class c = info->type == PGN_DEVICE_HOST ? PGN_CLASS_HOST
                         : info->type == PGN_DEVICE_CPU ? PGN_CLASS_CPU
                                                        : PGN_CLASS_GPU; /* GPUs, accelerators, others */
    out->dev_class = c;
    out->auto_rank = info->type == PGN_DEVICE_GPU ? 0 : info->type == PGN_DEVICE_CPU ? 1 : c == PGN_CLASS_HOST ? 3 : 2;
    out->host_memory = c == PGN_CLASS_CPU;
    out->coherent = c == PGN_CLASS_CPU;
    /* the family: a GPU's is gpu for each group that has it built, the others' cpu; the GEMM's
     * shape that family's default until a tuning measures another (pgn_device_calibrate) */
    for (int g = 0; g < PGN_OPS_COUNT; g++)
        set_family(out, (pgn_ops_group)g,
                   c == PGN_CLASS_GPU && family_runs(info, PGN_FAMILY_GPU, (pgn_ops_group)g) ? PGN_FAMILY_GPU : PGN_FAMILY_CPU,
                   PGN_FROM_DEFAULT);
    out->row_group = 0;
    out->row_group_from = PGN_FROM_DEFAULT;
    inet_shape(info, out);
    out->inet_from = PGN_FROM_DEFAULT;
}

int pgn_device_profile_of(const pgn_device_info *info, const char *kernels, pgn_device_profile *out,
                          pgn_error *err) {
    pgn_device_profile_default(info, out);
    const char *from_env = getenv("PARAGON_KERNELS");
    const char *want = kernels && *kernels ? kernels : from_env && *from_env ? from_env : "auto";
    const char *field = kernels && *kernels ? "kernels" : "PARAGON_KERNELS";
    if (!strcmp(want, "auto")) return 0;
    if (strcmp(want, "cpu") && strcmp(want, "gpu")) {
        pgn_error_set(err, PGN_E_INVALID_PARAMETER, field, "%s: '%.32s' is not a kernel family (auto, cpu or gpu)",
                      field, want);
        return -1;
    }
    pgn_kernel_family family = strcmp(want, "gpu") ? PGN_FAMILY_CPU : PGN_FAMILY_GPU;
    if (out->dev_class == PGN_CLASS_HOST) return 0; /* the host reference runs no kernels */
    /* each group that has the family built runs it; a group without keeps the cpu family (every
     * group has that), so the profile says which group runs what */
    bool any = false;
    for (int g = 0; g < PGN_OPS_COUNT; g++) {
        if (!family_runs(info, family, (pgn_ops_group)g)) {
            set_family(out, (pgn_ops_group)g, PGN_FAMILY_CPU, PGN_FROM_DEFAULT);
            continue;
        }
        set_family(out, (pgn_ops_group)g, family, PGN_FROM_OVERRIDE);
        any = true;
    }
    inet_shape(info, out);
    if (!any) {
        pgn_error_set(err, PGN_E_DEVICE, field,
                      "%s: the %s kernel family cannot run on %s: this build has no kernels of that family yet "
                      "(auto picks one it has)",
                      field, pgn_kernel_family_name(family), info->id);
        return -1;
    }
    return 0;
}

json_t *pgn_device_profile_json(const pgn_device_profile *p) {
    json_t *families = json_object();
    for (int g = 0; g < PGN_OPS_COUNT; g++)
        json_object_set_new(families, pgn_ops_group_name((pgn_ops_group)g),
                            json_pack("{s:s, s:s}", "family", pgn_kernel_family_name(p->family[g]), "from",
                                      pgn_profile_source_name(p->family_from[g])));
    const char *tile = pgn_gemm_tile_name(p->gemm_tile);
    json_t *j = json_pack("{s:s, s:o, s:{s:s, s:s}, s:{s:I, s:s}, s:{s:I, s:I, s:I, s:s}}", "class",
                     class_name(p->dev_class), "families", families, "gemm", "tile", tile ? tile : "?", "from",
                     pgn_profile_source_name(p->gemm_tile_from), "rows", "group", (json_int_t)p->row_group,
                     "from", pgn_profile_source_name(p->row_group_from), "inet", "workers",
                     (json_int_t)p->inet_workers, "local", (json_int_t)p->inet_local, "first_budget",
                     (json_int_t)p->inet_first_budget, "from", pgn_profile_source_name(p->inet_from));
    if (j && p->gemm_gflops > 0) json_object_set_new(json_object_get(j, "gemm"), "gflops", json_real(p->gemm_gflops));
    if (j && p->inet_local_slots) /* the gpu family's local net */
        json_object_set_new(json_object_get(j, "inet"), "local_slots", json_integer((json_int_t)p->inet_local_slots));
    return j;
}
