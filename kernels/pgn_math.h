/* pgn_math.h: the one source of math for host reference code and OpenCL kernels.
 * This header compiles both as C17 (engine/, with -ffp-contract=off) and as OpenCL C (prepended
 * to every kernel program). Everything here uses only +, -, *, explicit fma, correctly rounded
 * division and bit manipulation, so host and device produce the same bits (docs/architecture.md). */
#ifndef PGN_MATH_H
#define PGN_MATH_H

#ifdef __OPENCL_VERSION__
#pragma OPENCL FP_CONTRACT OFF
typedef uint pgn_u32;
typedef int pgn_i32;
typedef ulong pgn_u64;
#define PGN_INLINE static inline
#define pgn_fma(a, b, c) fma((a), (b), (c))
#define pgn_floor(x) floor(x)
#define pgn_sqrt(x) sqrt(x) /* correctly rounded: -cl-fp32-correctly-rounded-divide-sqrt */
#define pgn_bits(f) as_uint(f)
#define pgn_float(u) as_float(u)
#define PGN_INF INFINITY
#define PGN_NAN NAN
#else
#include <math.h>
#include <stdint.h>
#include <string.h>
typedef uint32_t pgn_u32;
typedef int32_t pgn_i32;
typedef uint64_t pgn_u64;
#define PGN_INLINE static inline
#define pgn_fma(a, b, c) fmaf((a), (b), (c))
#define pgn_floor(x) floorf(x)
#define pgn_sqrt(x) sqrtf(x)
PGN_INLINE pgn_u32 pgn_bits(float f) {
    pgn_u32 u;
    memcpy(&u, &f, sizeof u);
    return u;
}
PGN_INLINE float pgn_float(pgn_u32 u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
#define PGN_INF INFINITY
#define PGN_NAN NAN
#endif

/* 2^k for k in [-126, 127], built from the exponent bits. */
PGN_INLINE float pgn_pow2i(pgn_i32 k) { return pgn_float((pgn_u32)(k + 127) << 23); }

/* exp(x): Cody-Waite reduction x = n ln2 + r with |r| <= ln2/2, a degree-8 Taylor polynomial
 * in Horner form (truncation error < 6e-9 relative, under one ulp), then scaling by 2^n in two
 * exact steps so results that land in the subnormal range round once, identically everywhere. */
PGN_INLINE float pgn_expf(float x) {
    if (x != x) return x;
    if (x > 88.72283935546875f) return PGN_INF;
    if (x < -103.972084045410156f) return 0.0f;
    float n = pgn_floor(pgn_fma(x, 1.44269502162933349609f, 0.5f));
    float r = pgn_fma(-n, 0.693145751953125f, x);        /* ln2 high part: 16 bits, exact n*hi */
    r = pgn_fma(-n, 1.42860682030941723212e-06f, r);     /* ln2 low part */
    float p = 2.48015873015873015873e-05f;               /* 1/8! */
    p = pgn_fma(p, r, 1.98412698412698412698e-04f);      /* 1/7! */
    p = pgn_fma(p, r, 1.38888888888888888889e-03f);      /* 1/6! */
    p = pgn_fma(p, r, 8.33333333333333333333e-03f);      /* 1/5! */
    p = pgn_fma(p, r, 4.16666666666666666667e-02f);      /* 1/4! */
    p = pgn_fma(p, r, 1.66666666666666666667e-01f);      /* 1/3! */
    p = pgn_fma(p, r, 0.5f);
    p = pgn_fma(p, r, 1.0f);
    p = pgn_fma(p, r, 1.0f);
    pgn_i32 k = (pgn_i32)n;
    pgn_i32 k1 = k / 2;
    return p * pgn_pow2i(k1) * pgn_pow2i(k - k1);
}

/* log(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s), s = (m-1)/(m+1),
 * summed as an odd series in s up to s^13 (|s| <= 0.1716, remainder below 1e-11). */
PGN_INLINE float pgn_logf(float x) {
    if (x != x || x < 0.0f) return PGN_NAN;
    if (x == 0.0f) return -PGN_INF;
    if (x == PGN_INF) return x;
    pgn_i32 e = 0;
    if (x < 1.17549435e-38f) { /* subnormal: scale into the normal range first */
        x = x * 8388608.0f;    /* 2^23, exact */
        e = -23;
    }
    pgn_u32 bits = pgn_bits(x);
    e += (pgn_i32)((bits >> 23) & 0xffu) - 127;
    float m = pgn_float((bits & 0x007fffffu) | 0x3f800000u); /* [1, 2) */
    if (m > 1.41421353816986083984f) {
        m = m * 0.5f;
        e += 1;
    }
    float s = (m - 1.0f) / (m + 1.0f);
    float s2 = s * s;
    float p = 0.0769230769230769230769f; /* 1/13 */
    p = pgn_fma(p, s2, 0.0909090909090909090909f);
    p = pgn_fma(p, s2, 0.111111111111111111111f);
    p = pgn_fma(p, s2, 0.142857142857142857143f);
    p = pgn_fma(p, s2, 0.2f);
    p = pgn_fma(p, s2, 0.333333333333333333333f);
    p = pgn_fma(p, s2, 1.0f);
    float logm = 2.0f * s * p;
    float fe = (float)e;
    return pgn_fma(fe, 0.693145751953125f, pgn_fma(fe, 1.42860682030941723212e-06f, logm));
}

/* tanh(x): an odd Taylor series where 1 - 2/(e^2x + 1) would cancel (|x| < 0.3, series error
 * below 1e-9 relative), the exp form elsewhere, and +-1 once that is what float rounds to. */
PGN_INLINE float pgn_tanhf(float x) {
    if (x != x) return x;
    float ax = x < 0.0f ? -x : x;
    float r;
    if (ax < 0.3f) {
        float x2 = ax * ax;
        float p = -0.00886323552990219656f;              /* -1382/155925 */
        p = pgn_fma(p, x2, 0.0218694885361552028f);      /* 62/2835 */
        p = pgn_fma(p, x2, -0.0539682539682539683f);     /* -17/315 */
        p = pgn_fma(p, x2, 0.133333333333333333f);       /* 2/15 */
        p = pgn_fma(p, x2, -0.333333333333333333f);      /* -1/3 */
        r = pgn_fma(p * x2, ax, ax);
    } else if (ax < 9.0f) {
        r = 1.0f - 2.0f / (pgn_expf(2.0f * ax) + 1.0f);
    } else {
        r = 1.0f;
    }
    return x < 0.0f ? -r : r;
}

/* 1 / (1 + e^-x), written so that exp never overflows. */
PGN_INLINE float pgn_sigmoidf(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + pgn_expf(-x));
    float e = pgn_expf(x);
    return e / (1.0f + e);
}

/* Counter-based random numbers (splitmix64 finaliser): the value for (seed, stream, index) is the
 * same wherever it is computed, so initialisation, shuffles and dropout agree on every device. */
PGN_INLINE pgn_u64 pgn_mix64(pgn_u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9UL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebUL;
    return z ^ (z >> 31);
}

PGN_INLINE pgn_u64 pgn_rand64(pgn_u64 seed, pgn_u64 stream, pgn_u64 index) {
    return pgn_mix64(seed * 0x9e3779b97f4a7c15UL + pgn_mix64(stream * 0xd1b54a32d192ed03UL + index));
}

/* Uniform in [0, 1) with 24 random bits: exact in float. */
PGN_INLINE float pgn_rand_unit(pgn_u64 seed, pgn_u64 stream, pgn_u64 index) {
    return (float)(pgn_u32)(pgn_rand64(seed, stream, index) >> 40) * 5.9604644775390625e-08f;
}

#endif
