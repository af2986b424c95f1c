/* kernels.h: every __kernel of kernels/ (*.cl), listed once with its argument count. The list
 * gives the kernel ids (PGN_K_name) the device creates its kernel objects by, and the count
 * every launch is checked against: at compile time for the arguments a launcher passes
 * (PGN_LAUNCH), at device open for the kernel's own signature (CL_KERNEL_NUM_ARGS), and the
 * program may hold no kernel the list lacks. Adding a kernel is one line here. */
#ifndef PGN_KERNELS_H
#define PGN_KERNELS_H

/* X(name, number of arguments), in the order of the files that define them. */
#define PGN_KERNEL_LIST(X)                                                                      \
    /* kernels/gemm.cl */                                                                       \
    X(gemm_pack, 11)                                                                            \
    X(gemm_tile, 18)                                                                            \
    X(gemm_tile_4x64, 18)                                                                       \
    X(gemm_tile_6x64, 18)                                                                       \
    X(gemm_tile_12x32, 18)                                                                      \
    X(gemm_tile_14x32, 18)                                                                      \
    X(gemm_vec, 12)                                                                             \
    /* kernels/tensor.cl */                                                                     \
    X(bias_act_forward, 6)                                                                      \
    X(bias_act_backward, 8)                                                                     \
    X(act_forward, 4)                                                                           \
    X(relu_forward, 3)                                                                          \
    X(act_backward, 6)                                                                          \
    X(dropout_forward, 8)                                                                       \
    X(mul, 4)                                                                                   \
    X(add, 4)                                                                                   \
    X(colsum_partial, 4)                                                                        \
    X(colsum_finish, 4)                                                                         \
    X(broadcast_rows, 5)                                                                        \
    X(fused_loss, 9)                                                                            \
    X(gather_rows, 6)                                                                           \
    X(windows, 11)                                                                              \
    X(loss_stats, 6)                                                                            \
    X(sumsq_ranges, 4)                                                                          \
    X(clip_scale, 4)                                                                            \
    X(sgd_update, 9)                                                                            \
    X(adam_update, 14)                                                                          \
    X(copy_u32, 6)                                                                              \
    X(fill_u32, 5)                                                                              \
    /* kernels/gpt.cl */                                                                        \
    X(embed_forward, 8)                                                                         \
    X(embed_at, 7)                                                                              \
    X(embed_backward_wte, 6)                                                                    \
    X(embed_backward_wpe, 6)                                                                    \
    X(layernorm_forward, 8)                                                                     \
    X(layernorm_backward, 7)                                                                    \
    X(layernorm_backward_params, 7)                                                             \
    X(attention_forward, 7)                                                                     \
    X(attention_decode, 7)                                                                      \
    X(attention_backward_query, 9)                                                              \
    X(attention_backward_key, 9)                                                                \
    /* kernels/inet.cl */                                                                       \
    X(inet_reduce, 19)

typedef enum {
#define PGN_KERNEL_ID(name, nargs) PGN_K_##name,
    PGN_KERNEL_LIST(PGN_KERNEL_ID)
#undef PGN_KERNEL_ID
        PGN_KERNEL_COUNT
} pgn_kernel_id;

enum {
#define PGN_KERNEL_NARGS(name, nargs) PGN_KARGS_##name = nargs,
    PGN_KERNEL_LIST(PGN_KERNEL_NARGS)
#undef PGN_KERNEL_NARGS
};

/* The kernel's name in the program, and its number of arguments. */
const char *pgn_kernel_name(pgn_kernel_id id);
int pgn_kernel_nargs(pgn_kernel_id id);

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
