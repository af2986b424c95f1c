/* kernels.c: the kernel list of kernels.h as a table: each kernel's name, argument count, family
 * and group of ops, for the device that builds and launches them (device.c, program.c) and the
 * profile that asks which families this build has for each group (profile.c). */
#include "core.h"

static const struct {
    const char *name;
    int nargs;
    pgn_kernel_family family;
    pgn_ops_group group;
} kernel_table[PGN_KERNEL_COUNT] = {
#define PGN_KERNEL_ROW(name, nargs, family, group) {#name, nargs, PGN_FAMILY_##family, PGN_OPS_##group},
    PGN_KERNEL_LIST(PGN_KERNEL_ROW)
#undef PGN_KERNEL_ROW
};

const char *pgn_kernel_name(pgn_kernel_id id) { return kernel_table[id].name; }
int pgn_kernel_nargs(pgn_kernel_id id) { return kernel_table[id].nargs; }
pgn_kernel_family pgn_kernel_family_of(pgn_kernel_id id) { return kernel_table[id].family; }
pgn_ops_group pgn_kernel_group_of(pgn_kernel_id id) { return kernel_table[id].group; }
