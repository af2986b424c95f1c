/* gpt_gpu.cl: the gpu family's attention (docs/architecture.md, "Device profiles"). The cpu
 * family's kernels give a work-item a block of 16 queries or keys, so that pocl's one thread per
 * work-group runs 16 chains side by side; a GPU given those blocks runs B H T / 16 threads. These
 * give a work-item one query (forward, the backward's query half) or one key (the key half), in
 * work-groups of PGN_GPU_GROUP, through the one-row bodies of pgn_gpt.h, whose chains are the
 * blocks' (the bits are the host's). The launchers are in engine/tensor/ops_gpt.c. */

/* Work-item id -> (sequence b, head h, position t), positions fastest: a work-group's rows share
 * their keys and values, which it reads together. */
PGN_INLINE bool att_row_of(int rows, int T, int H, int *b, int *h, int *t) {
    int id = get_global_id(0);
    if (id >= rows * H) return false;
    *t = id % T;
    *h = id / T % H;
    *b = id / T / H;
    return true;
}

/* Causal self-attention forward, a query a work-item; global: B H T (rounded up to the group). */
__kernel void attention_forward_gpu(int rows, int T, int H, int C, __global const float *qkv, __global float *att,
                                    __global float *y) {
    int b, h, t;
    if (att_row_of(rows, T, H, &b, &h, &t)) pgn_attention_forward_query(T, H, C, b, h, t, qkv, att, y);
}

/* The backward's query half, a query a work-item: score gradients into ds, dq. */
__kernel void attention_backward_query_gpu(int rows, int T, int H, int C, __global const float *qkv,
                                           __global const float *att, __global const float *dy, __global float *ds,
                                           __global float *dqkv) {
    int b, h, t;
    if (att_row_of(rows, T, H, &b, &h, &t)) pgn_attention_backward_query(T, H, C, b, h, t, qkv, att, dy, ds, dqkv);
}

/* The backward's key half, a key a work-item, queued after the query half: dk and dv. */
__kernel void attention_backward_key_gpu(int rows, int T, int H, int C, __global const float *qkv,
                                         __global const float *att, __global const float *dy, __global const float *ds,
                                         __global float *dqkv) {
    int b, h, u;
    if (att_row_of(rows, T, H, &b, &h, &u)) pgn_attention_backward_key(T, H, C, b, h, u, qkv, att, dy, ds, dqkv);
}
