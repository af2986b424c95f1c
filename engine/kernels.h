/* kernels.h: every __kernel of kernels/ (*.cl), listed once with its argument count. The list
 * gives the kernel ids (PGN_K_name) the device creates its kernel objects by, and the count
 * every launch is checked against: at compile time for the arguments a launcher passes
 * (PGN_LAUNCH), at device open for the kernel's own signature (CL_KERNEL_NUM_ARGS), and the
 * program may hold no kernel the list lacks. Adding a kernel is one line here. */
#ifndef PGN_KERNELS_H
#define PGN_KERNELS_H

#include "paragon.h" /* pgn_kernel_family */

/* X(name, number of arguments, kernel family, group of ops), in the order of the files that
 * define them. A family's kernels are in its own files (a cpu family's in kernels/NAME.cl, a gpu
 * family's in kernels/NAME_gpu.cl), and a group of ops runs a family where the list has kernels
 * of that family for it (engine/profile.c). A device builds the cpu family's program, which
 * also holds the kernels every family shares (elementwise ops, the optimisers), and the gpu
 * family's when its profile runs it, and checks that each program holds exactly its family's
 * kernels (engine/program.c). */
#define PGN_KERNEL_LIST(X)                                                                      \
    /* kernels/gemm.cl */                                                                      \
    X(gemm_pack, 11, CPU, GEMM)                                                                \
    X(gemm_tile, 18, CPU, GEMM)                                                                \
    X(gemm_tile_4x64, 18, CPU, GEMM)                                                           \
    X(gemm_tile_6x64, 18, CPU, GEMM)                                                           \
    X(gemm_tile_12x32, 18, CPU, GEMM)                                                          \
    X(gemm_tile_14x32, 18, CPU, GEMM)                                                          \
    X(gemm_vec, 12, CPU, GEMM)                                                                 \
    /* kernels/tensor.cl */                                                                    \
    X(bias_act_forward, 6, CPU, ROWS)                                                          \
    X(bias_act_backward, 8, CPU, ROWS)                                                         \
    X(act_forward, 4, CPU, ROWS)                                                               \
    X(relu_forward, 3, CPU, ROWS)                                                              \
    X(act_backward, 6, CPU, ROWS)                                                              \
    X(dropout_forward, 8, CPU, ROWS)                                                           \
    X(mul, 4, CPU, ROWS)                                                                       \
    X(add, 4, CPU, ROWS)                                                                       \
    X(colsum_partial, 4, CPU, ROWS)                                                            \
    X(colsum_finish, 4, CPU, ROWS)                                                             \
    X(finish_sums, 6, CPU, ROWS)                                                               \
    X(broadcast_rows, 5, CPU, ROWS)                                                            \
    X(fused_loss, 9, CPU, ROWS)                                                                \
    X(gather_rows, 6, CPU, ROWS)                                                               \
    X(windows, 11, CPU, ROWS)                                                                  \
    X(loss_stats, 6, CPU, ROWS)                                                                \
    X(sumsq_ranges, 4, CPU, ROWS)                                                              \
    X(clip_scale, 4, CPU, ROWS)                                                                \
    X(sgd_update, 9, CPU, ROWS)                                                                \
    X(adam_update, 14, CPU, ROWS)                                                              \
    X(copy_u32, 6, CPU, ROWS)                                                                  \
    X(fill_u32, 5, CPU, ROWS)                                                                  \
    /* kernels/gpt.cl */                                                                       \
    X(embed_forward, 8, CPU, ROWS)                                                             \
    X(embed_at, 7, CPU, ROWS)                                                                  \
    X(embed_backward_wte, 6, CPU, ROWS)                                                        \
    X(embed_backward_wpe, 6, CPU, ROWS)                                                        \
    X(layernorm_forward, 8, CPU, ROWS)                                                         \
    X(layernorm_backward, 8, CPU, ROWS)                                                        \
    X(layernorm_backward_params, 6, CPU, ROWS)                                                 \
    X(layernorm_params_finish, 5, CPU, ROWS)                                                   \
    X(attention_forward, 7, CPU, ROWS)                                                         \
    X(attention_decode, 7, CPU, ROWS)                                                          \
    X(attention_backward_query, 9, CPU, ROWS)                                                  \
    X(attention_backward_key, 9, CPU, ROWS)                                                    \
    /* kernels/inet.cl */                                                                      \
    X(inet_reduce, 20, CPU, INET)                                                              \
    /* kernels/gemm_gpu.cl */                                                                  \
    X(gemm_gpu_128x128, 15, GPU, GEMM)                                                         \
    X(gemm_gpu_128x64, 15, GPU, GEMM)                                                          \
    X(gemm_gpu_64x128, 15, GPU, GEMM)                                                          \
    X(gemm_gpu_64x64, 15, GPU, GEMM)                                                           \
    X(gemm_gpu_32x64, 15, GPU, GEMM)                                                           \
    X(gemm_gpu_32x32, 15, GPU, GEMM)                                                           \
    X(gemm_gpu_row, 12, GPU, GEMM)                                                             \
    /* kernels/tensor_gpu.cl */                                                                \
    X(layernorm_forward_gpu, 8, GPU, ROWS)                                                     \
    X(layernorm_backward_gpu, 8, GPU, ROWS)                                                    \
    X(layernorm_backward_params_gpu, 6, GPU, ROWS)                                             \
    X(colsum_partial_gpu, 4, GPU, ROWS)                                                        \
    X(bias_act_backward_gpu, 8, GPU, ROWS)                                                     \
    X(embed_backward_wte_gpu, 6, GPU, ROWS)                                                    \
    X(fused_loss_gpu, 9, GPU, ROWS)                                                            \
    X(loss_stats_gpu, 6, GPU, ROWS)                                                            \
    X(sumsq_ranges_gpu, 4, GPU, ROWS)                                                          \
    X(clip_scale_gpu, 4, GPU, ROWS)                                                            \
    /* kernels/gpt_gpu.cl */                                                                   \
    X(attention_forward_gpu, 8, GPU, ROWS)                                                     \
    X(attention_backward_query_gpu, 10, GPU, ROWS)                                             \
    X(attention_backward_key_gpu, 9, GPU, ROWS)                                                \
    /* kernels/inet_gpu.cl */                                                                  \
    X(inet_reduce_gpu, 20, GPU, INET)

typedef enum {
#define PGN_KERNEL_ID(name, nargs, family, group) PGN_K_##name,
    PGN_KERNEL_LIST(PGN_KERNEL_ID)
#undef PGN_KERNEL_ID
        PGN_KERNEL_COUNT
} pgn_kernel_id;

enum {
#define PGN_KERNEL_NARGS(name, nargs, family, group) PGN_KARGS_##name = nargs,
    PGN_KERNEL_LIST(PGN_KERNEL_NARGS)
#undef PGN_KERNEL_NARGS
};

/* The kernel's name in the program, its number of arguments, its family and its group. */
const char *pgn_kernel_name(pgn_kernel_id id);
int pgn_kernel_nargs(pgn_kernel_id id);
pgn_kernel_family pgn_kernel_family_of(pgn_kernel_id id);
pgn_ops_group pgn_kernel_group_of(pgn_kernel_id id);

/* PGN_K_name, failing to compile unless the array args holds exactly the arguments kernel
 * name takes (a _Static_assert inside a struct, so that it can stand in an expression). */
#define PGN_KERNEL_CHECKED(name, args)                                                          \
    (PGN_K_##name + 0 * (int)sizeof(struct {                                                    \
         _Static_assert(sizeof(args) / sizeof((args)[0]) == PGN_KARGS_##name,                   \
                        "the arguments passed to " #name " are not the count kernels.h lists"); \
         char c;                                                                                \
     }))

/* Queues kernel name with the array args (see pgn_launch in core.h). */
#define PGN_LAUNCH(dev, name, args, dims, global, local, err)                                   \
    pgn_launch((dev), (pgn_kernel_id)PGN_KERNEL_CHECKED(name, args), (args), (dims), (global),  \
               (local), (err))

#endif
