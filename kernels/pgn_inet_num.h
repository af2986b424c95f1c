/* pgn_inet_num.h: HVM2's native numbers, the value of a NUM port, for the host reducer and the
 * OpenCL reducer alike. A number is 29 bits: a 24-bit payload over a 5-bit type. The type is
 * u24, i24 or f24 (a value), or an operator: SYM holds a bare operator or cast in its payload
 * (`[+]`, `[u24]`), and a type >= OP_ADD is an operator partially applied to the payload
 * (`[+1]`). f24 is an f32 with its 8 low bits dropped, rounded to nearest, ties to even.
 * Requires pgn_math.h first.
 *
 * Semantics follow HVM2's runtime (src/hvm.c, operate/cast/partial) exactly, with two choices
 * where HVM2 has none: integer division or remainder by zero gives 0 (HVM2 traps), and i24
 * multiplication wraps instead of overflowing. The f24 transcendental operators are our own
 * (pgn_inet_math.h), not libm's or the device's, so host and device give the same bits; they are
 * within an ulp or two of glibc's, which after rounding to f24 almost always agrees. */
#ifndef PGN_INET_NUM_H
#define PGN_INET_NUM_H

/* The OpenCL program has no include path: there pgn_inet_math.h comes before this file in
 * meson.build's kernel_files. */
#ifndef __OPENCL_VERSION__
#include "pgn_inet_math.h"
#endif

#define PGN_INET_TY_SYM 0x00u
#define PGN_INET_TY_U24 0x01u
#define PGN_INET_TY_I24 0x02u
#define PGN_INET_TY_F24 0x03u
#define PGN_INET_OP_ADD 0x04u
#define PGN_INET_OP_SUB 0x05u
#define PGN_INET_FP_SUB 0x06u /* flipped: b - a */
#define PGN_INET_OP_MUL 0x07u
#define PGN_INET_OP_DIV 0x08u
#define PGN_INET_FP_DIV 0x09u
#define PGN_INET_OP_REM 0x0Au
#define PGN_INET_FP_REM 0x0Bu
#define PGN_INET_OP_EQ 0x0Cu
#define PGN_INET_OP_NEQ 0x0Du
#define PGN_INET_OP_LT 0x0Eu
#define PGN_INET_OP_GT 0x0Fu
#define PGN_INET_OP_AND 0x10u /* f24: atan2 */
#define PGN_INET_OP_OR 0x11u  /* f24: log of b in base a */
#define PGN_INET_OP_XOR 0x12u /* f24: pow */
#define PGN_INET_OP_SHL 0x13u /* f24: sin(a + b) */
#define PGN_INET_FP_SHL 0x14u
#define PGN_INET_OP_SHR 0x15u /* f24: tan(a + b) */
#define PGN_INET_FP_SHR 0x16u
#define PGN_INET_OP_LAST PGN_INET_FP_SHR

#define PGN_INET_NUMB_MASK 0x1FFFFFFFu

/* fmod is exact, so libm and the device agree on it. */
#ifdef __OPENCL_VERSION__
#define pgn_inet_fmodf(a, b) fmod((a), (b))
#else
#define pgn_inet_fmodf(a, b) fmodf((a), (b))
#endif

PGN_INLINE pgn_u32 pgn_inet_numb_type(pgn_u32 n) { return n & 0x1Fu; }
PGN_INLINE pgn_u32 pgn_inet_numb_payload(pgn_u32 n) { return (n >> 5) & 0xFFFFFFu; }

PGN_INLINE pgn_u32 pgn_inet_sym(pgn_u32 op) { return ((op << 5) | PGN_INET_TY_SYM) & PGN_INET_NUMB_MASK; }
PGN_INLINE pgn_u32 pgn_inet_u24(pgn_u32 v) { return ((v << 5) | PGN_INET_TY_U24) & PGN_INET_NUMB_MASK; }
PGN_INLINE pgn_u32 pgn_inet_i24(pgn_i32 v) {
    return (((pgn_u32)v << 5) | PGN_INET_TY_I24) & PGN_INET_NUMB_MASK;
}
PGN_INLINE pgn_u32 pgn_inet_get_u24(pgn_u32 n) { return (n >> 5) & 0xFFFFFFu; }
/* Sign-extends the 24-bit payload: shift it to the top of 32 bits, then back arithmetically. */
PGN_INLINE pgn_i32 pgn_inet_get_i24(pgn_u32 n) { return ((pgn_i32)(n << 3)) >> 8; }

/* Every NaN becomes this one: the f24 of the literal +NaN (a quiet NaN, its low bit set as HVM2
 * sets it). HVM2 keeps whatever sign and payload the hardware or libm produced, which differ
 * between glibc and an OpenCL device (x86's 0/0 is negative, for one); one NaN keeps host and
 * devices bit-identical and still prints "+NaN", as HVM2 prints every NaN. */
#define PGN_INET_F24_NAN (((0x7FC001u << 5) | PGN_INET_TY_F24) & PGN_INET_NUMB_MASK)

/* f32 -> f24: keep the top 24 bits, rounding the 8 dropped bits to nearest, ties to even (a
 * carry out of the mantissa correctly rounds up into the exponent, up to infinity). */
PGN_INLINE pgn_u32 pgn_inet_f24(float f) {
    if (f != f) return PGN_INET_F24_NAN;
    pgn_u32 bits = pgn_bits(f);
    pgn_u32 kept = bits >> 8, lost = bits & 0xFFu;
    /* lost > 0x80 rounds up; lost == 0x80 (a tie) rounds up only when kept is odd */
    pgn_u32 up = (lost - ((lost >> 7) & ~kept & 1u)) >> 7;
    kept = (kept + up) & 0xFFFFFFu;
    return ((kept << 5) | PGN_INET_TY_F24) & PGN_INET_NUMB_MASK;
}
PGN_INLINE float pgn_inet_get_f24(pgn_u32 n) { return pgn_float((n << 3) & 0xFFFFFF00u); }

PGN_INLINE int pgn_inet_numb_is_value(pgn_u32 n) {
    pgn_u32 t = pgn_inet_numb_type(n);
    return t >= PGN_INET_TY_U24 && t <= PGN_INET_TY_F24;
}
PGN_INLINE int pgn_inet_numb_is_cast(pgn_u32 n) {
    pgn_u32 s = pgn_inet_get_u24(n);
    return pgn_inet_numb_type(n) == PGN_INET_TY_SYM && s >= PGN_INET_TY_U24 && s <= PGN_INET_TY_F24;
}

/* An operator symbol applied to a value: the value's payload under the operator's type. */
PGN_INLINE pgn_u32 pgn_inet_partial(pgn_u32 sym, pgn_u32 v) {
    return (v & ~0x1Fu & PGN_INET_NUMB_MASK) | (pgn_inet_get_u24(sym) & 0x1Fu);
}

/* Casts in the spirit of Rust's `as`: u24 <-> i24 reinterpret the 24 bits; f24 -> integer
 * truncates toward zero and saturates, NaN giving 0; integer -> f24 rounds. */
PGN_INLINE pgn_u32 pgn_inet_cast(pgn_u32 cast, pgn_u32 v) {
    pgn_u32 to = pgn_inet_get_u24(cast), from = pgn_inet_numb_type(v);
    if (to == from) return v;
    if (to == PGN_INET_TY_U24 && from == PGN_INET_TY_I24) return pgn_inet_u24((pgn_u32)pgn_inet_get_i24(v));
    if (to == PGN_INET_TY_I24 && from == PGN_INET_TY_U24) return pgn_inet_i24((pgn_i32)pgn_inet_get_u24(v));
    if (to == PGN_INET_TY_F24 && from == PGN_INET_TY_U24) return pgn_inet_f24((float)pgn_inet_get_u24(v));
    if (to == PGN_INET_TY_F24 && from == PGN_INET_TY_I24) return pgn_inet_f24((float)pgn_inet_get_i24(v));
    if (from == PGN_INET_TY_F24) {
        float f = pgn_inet_get_f24(v);
        if (f != f) return to == PGN_INET_TY_U24 ? pgn_inet_u24(0) : pgn_inet_i24(0);
        if (to == PGN_INET_TY_U24) {
            f = f < 0.0f ? 0.0f : (f > 16777215.0f ? 16777215.0f : f);
            return pgn_inet_u24((pgn_u32)f);
        }
        f = f < -8388608.0f ? -8388608.0f : (f > 8388607.0f ? 8388607.0f : f);
        return pgn_inet_i24((pgn_i32)f);
    }
    return pgn_inet_u24(0);
}

PGN_INLINE pgn_u32 pgn_inet_op_u24(pgn_u32 op, pgn_u32 a, pgn_u32 b) {
    switch (op) {
    case PGN_INET_OP_ADD: return pgn_inet_u24(a + b);
    case PGN_INET_OP_SUB: return pgn_inet_u24(a - b);
    case PGN_INET_FP_SUB: return pgn_inet_u24(b - a);
    case PGN_INET_OP_MUL: return pgn_inet_u24(a * b);
    case PGN_INET_OP_DIV: return pgn_inet_u24(b ? a / b : 0u);
    case PGN_INET_FP_DIV: return pgn_inet_u24(a ? b / a : 0u);
    case PGN_INET_OP_REM: return pgn_inet_u24(b ? a % b : 0u);
    case PGN_INET_FP_REM: return pgn_inet_u24(a ? b % a : 0u);
    case PGN_INET_OP_EQ: return pgn_inet_u24(a == b);
    case PGN_INET_OP_NEQ: return pgn_inet_u24(a != b);
    case PGN_INET_OP_LT: return pgn_inet_u24(a < b);
    case PGN_INET_OP_GT: return pgn_inet_u24(a > b);
    case PGN_INET_OP_AND: return pgn_inet_u24(a & b);
    case PGN_INET_OP_OR: return pgn_inet_u24(a | b);
    case PGN_INET_OP_XOR: return pgn_inet_u24(a ^ b);
    case PGN_INET_OP_SHL: return pgn_inet_u24(a << (b & 31u));
    case PGN_INET_FP_SHL: return pgn_inet_u24(b << (a & 31u));
    case PGN_INET_OP_SHR: return pgn_inet_u24(a >> (b & 31u));
    case PGN_INET_FP_SHR: return pgn_inet_u24(b >> (a & 31u));
    default: return pgn_inet_u24(0);
    }
}

/* i24 has no shifts in HVM2 (they give +0). Arithmetic runs on the 32-bit two's complement
 * bits, so it wraps where C's signed arithmetic would overflow. */
PGN_INLINE pgn_u32 pgn_inet_op_i24(pgn_u32 op, pgn_i32 a, pgn_i32 b) {
    pgn_u32 ua = (pgn_u32)a, ub = (pgn_u32)b;
    switch (op) {
    case PGN_INET_OP_ADD: return pgn_inet_i24((pgn_i32)(ua + ub));
    case PGN_INET_OP_SUB: return pgn_inet_i24((pgn_i32)(ua - ub));
    case PGN_INET_FP_SUB: return pgn_inet_i24((pgn_i32)(ub - ua));
    case PGN_INET_OP_MUL: return pgn_inet_i24((pgn_i32)(ua * ub));
    case PGN_INET_OP_DIV: return pgn_inet_i24(b ? a / b : 0);
    case PGN_INET_FP_DIV: return pgn_inet_i24(a ? b / a : 0);
    case PGN_INET_OP_REM: return pgn_inet_i24(b ? a % b : 0);
    case PGN_INET_FP_REM: return pgn_inet_i24(a ? b % a : 0);
    case PGN_INET_OP_EQ: return pgn_inet_u24(a == b);
    case PGN_INET_OP_NEQ: return pgn_inet_u24(a != b);
    case PGN_INET_OP_LT: return pgn_inet_u24(a < b);
    case PGN_INET_OP_GT: return pgn_inet_u24(a > b);
    case PGN_INET_OP_AND: return pgn_inet_i24(a & b);
    case PGN_INET_OP_OR: return pgn_inet_i24(a | b);
    case PGN_INET_OP_XOR: return pgn_inet_i24(a ^ b);
    default: return pgn_inet_i24(0);
    }
}

/* f24: the operation in f32 (no contraction), rounded to f24. The flipped shifts give 0.0. */
PGN_INLINE pgn_u32 pgn_inet_op_f24(pgn_u32 op, float a, float b) {
    switch (op) {
    case PGN_INET_OP_ADD: return pgn_inet_f24(a + b);
    case PGN_INET_OP_SUB: return pgn_inet_f24(a - b);
    case PGN_INET_FP_SUB: return pgn_inet_f24(b - a);
    case PGN_INET_OP_MUL: return pgn_inet_f24(a * b);
    case PGN_INET_OP_DIV: return pgn_inet_f24(a / b);
    case PGN_INET_FP_DIV: return pgn_inet_f24(b / a);
    case PGN_INET_OP_REM: return pgn_inet_f24(pgn_inet_fmodf(a, b));
    case PGN_INET_FP_REM: return pgn_inet_f24(pgn_inet_fmodf(b, a));
    case PGN_INET_OP_EQ: return pgn_inet_u24(a == b);
    case PGN_INET_OP_NEQ: return pgn_inet_u24(a != b);
    case PGN_INET_OP_LT: return pgn_inet_u24(a < b);
    case PGN_INET_OP_GT: return pgn_inet_u24(a > b);
    case PGN_INET_OP_AND: return pgn_inet_f24(pgn_inet_atan2f(a, b));
    case PGN_INET_OP_OR: return pgn_inet_f24(pgn_inet_logf(b) / pgn_inet_logf(a));
    case PGN_INET_OP_XOR: return pgn_inet_f24(pgn_inet_powf(a, b));
    case PGN_INET_OP_SHL: return pgn_inet_f24(pgn_inet_sinf(a + b));
    case PGN_INET_OP_SHR: return pgn_inet_f24(pgn_inet_tanf(a + b));
    default: return pgn_inet_f24(0.0f);
    }
}

/* The OPER rule's arithmetic: combines the number arriving at an OPR node with the one it
 * holds. Which of the two is the operator decides the roles, not the order of the arguments:
 * a bare symbol meeting a value makes a partial application (or a cast), a partial meeting a
 * value computes "partial's payload OP value". Anything else (two values, two operators) is 0. */
PGN_INLINE pgn_u32 pgn_inet_operate(pgn_u32 a, pgn_u32 b) {
    pgn_u32 at = pgn_inet_numb_type(a), bt = pgn_inet_numb_type(b);
    if (at == PGN_INET_TY_SYM && bt == PGN_INET_TY_SYM) return pgn_inet_u24(0);
    if (pgn_inet_numb_is_cast(a) && pgn_inet_numb_is_value(b)) return pgn_inet_cast(a, b);
    if (pgn_inet_numb_is_cast(b) && pgn_inet_numb_is_value(a)) return pgn_inet_cast(b, a);
    if (at == PGN_INET_TY_SYM) return pgn_inet_partial(a, b);
    if (bt == PGN_INET_TY_SYM) return pgn_inet_partial(b, a);
    if ((at >= PGN_INET_OP_ADD) == (bt >= PGN_INET_OP_ADD)) return pgn_inet_u24(0);
    pgn_u32 op = at >= PGN_INET_OP_ADD ? at : bt;
    pgn_u32 x = at >= PGN_INET_OP_ADD ? a : b; /* the partial: its payload is the left operand */
    pgn_u32 y = at >= PGN_INET_OP_ADD ? b : a;
    switch (pgn_inet_numb_type(y)) {
    case PGN_INET_TY_U24: return pgn_inet_op_u24(op, pgn_inet_get_u24(x), pgn_inet_get_u24(y));
    case PGN_INET_TY_I24: return pgn_inet_op_i24(op, pgn_inet_get_i24(x), pgn_inet_get_i24(y));
    case PGN_INET_TY_F24: return pgn_inet_op_f24(op, pgn_inet_get_f24(x), pgn_inet_get_f24(y));
    default: return pgn_inet_u24(0);
    }
}

#endif
