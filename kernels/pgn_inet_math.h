/* pgn_inet_math.h: the f24 transcendental operators (atan2, log, pow, sin, tan) written once for
 * the host reducer and the OpenCL reducer. libm and a device's built-ins round differently; these
 * use only float +, -, *, / (correctly rounded: the device program is built with
 * -cl-fp32-correctly-rounded-divide-sqrt; never contracted) and integer bit tricks, so every IEEE
 * float implementation gives the same bits. Requires pgn_math.h first.
 *
 * Where 24 bits are not enough (a reduced angle, a logarithm that pow multiplies) a value is an
 * unevaluated sum hi + lo of two floats, a "double-float" of about 48 bits, built from error-free
 * transformations: Knuth's two-sum and Dekker's product with Veltkamp's split (there is no fma).
 * Every polynomial is a truncated Taylor series. Results are within 0.6 ulp of the true value
 * (every float checked for log, sin and tan, millions of pairs for atan2 and pow; pow reaches
 * 0.75 where its result is subnormal), special values as C99's Annex F and glibc give them
 * (tests/test_inet_math.c). A device that flushes subnormals to zero (OpenCL 1.2 allows it) can
 * differ where an argument, an intermediate or a result is subnormal. */
#ifndef PGN_INET_MATH_H
#define PGN_INET_MATH_H

/* ---- double-float arithmetic -------------------------------------------------------------- */

typedef struct {
    float hi, lo; /* |lo| <= half an ulp of hi */
} pgn_inet_df;

PGN_INLINE pgn_inet_df pgn_inet_df_make(float hi, float lo) {
    pgn_inet_df r;
    r.hi = hi;
    r.lo = lo;
    return r;
}

PGN_INLINE pgn_inet_df pgn_inet_df_neg(pgn_inet_df a) { return pgn_inet_df_make(-a.hi, -a.lo); }

/* a + b exactly, for any a and b (Knuth). */
PGN_INLINE pgn_inet_df pgn_inet_two_sum(float a, float b) {
    float s = a + b, bb = s - a;
    return pgn_inet_df_make(s, (a - (s - bb)) + (b - bb));
}

/* a + b exactly when |a| >= |b| (Dekker). */
PGN_INLINE pgn_inet_df pgn_inet_fast_two_sum(float a, float b) {
    float s = a + b;
    return pgn_inet_df_make(s, b - (s - a));
}

/* a * b exactly (Dekker): Veltkamp's split cuts each factor into 12-bit halves whose products
 * are exact. The split overflows beyond 2^115; callers stay far below. */
PGN_INLINE float pgn_inet_split_hi(float a) {
    float c = 4097.0f * a; /* 2^12 + 1 */
    return c - (c - a);
}
PGN_INLINE pgn_inet_df pgn_inet_two_prod(float a, float b) {
    float p = a * b;
    float ah = pgn_inet_split_hi(a), al = a - ah;
    float bh = pgn_inet_split_hi(b), bl = b - bh;
    return pgn_inet_df_make(p, ((ah * bh - p) + ah * bl + al * bh) + al * bl);
}

/* Sum, product and quotient, each within a few 2^-48 relative (Joldes, Muller and Popescu,
 * "Tight and rigorous error bounds for basic building blocks of double-word arithmetic", 2017). */
PGN_INLINE pgn_inet_df pgn_inet_df_add(pgn_inet_df a, pgn_inet_df b) {
    pgn_inet_df s = pgn_inet_two_sum(a.hi, b.hi), t = pgn_inet_two_sum(a.lo, b.lo);
    s = pgn_inet_fast_two_sum(s.hi, s.lo + t.hi);
    return pgn_inet_fast_two_sum(s.hi, s.lo + t.lo);
}
PGN_INLINE pgn_inet_df pgn_inet_df_mul(pgn_inet_df a, pgn_inet_df b) {
    pgn_inet_df p = pgn_inet_two_prod(a.hi, b.hi);
    return pgn_inet_fast_two_sum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}
PGN_INLINE pgn_inet_df pgn_inet_df_div(pgn_inet_df a, pgn_inet_df b) {
    float q = a.hi / b.hi;
    pgn_inet_df p = pgn_inet_two_prod(q, b.hi); /* p.hi is close to a.hi: a.hi - p.hi is exact */
    float rest = (((a.hi - p.hi) - p.lo) + a.lo) - q * b.lo;
    return pgn_inet_fast_two_sum(q, rest / b.hi);
}

/* x * 2^k for k in [-252, 254], in two steps, each exact unless the result is subnormal. */
PGN_INLINE float pgn_inet_scale(float x, pgn_i32 k) {
    pgn_i32 h = k / 2;
    return x * pgn_pow2i(h) * pgn_pow2i(k - h);
}

/* Constants to the nearest float, and the rest where they need it. */
#define PGN_INET_PI_HI 3.14159274101257324219f
#define PGN_INET_PI_LO -8.74227765734758577310e-8f
#define PGN_INET_LN2_HI 6.93147182464599609375e-1f
#define PGN_INET_LN2_LO -1.90465421212593355449e-9f

/* ---- log and exp ---------------------------------------------------------------------------- */

/* log(x) for finite x > 0, to about 2^-40 relative: pow needs that much. x = m 2^e with m in
 * [sqrt(1/2), sqrt(2)]; log(m) = 2 atanh(s) with s = (m - 1)/(m + 1), |s| <= 0.1716:
 * 2s + s^3 (2/3 + 2s^2/5 + ... + 2s^12/13), the remainder below 2^-39 relative. Terms from s^5 on
 * weigh under 2^-12 and are summed in float; 2s and (2/3)s^3 in double-float. */
PGN_INLINE pgn_inet_df pgn_inet_log_df(float x) {
    pgn_i32 e = 0;
    if (x < 1.17549435e-38f) { /* subnormal: scale into the normal range first */
        x = x * 8388608.0f;    /* 2^23, exact */
        e = -23;
    }
    pgn_u32 bits = pgn_bits(x);
    e += (pgn_i32)(bits >> 23) - 127;
    float m = pgn_float((bits & 0x007FFFFFu) | 0x3F800000u); /* [1, 2) */
    if (m > 1.41421353816986083984f) {
        m = m * 0.5f;
        e += 1;
    }
    /* m - 1 is exact (Sterbenz), m + 1 is not: carry it whole */
    pgn_inet_df s = pgn_inet_df_div(pgn_inet_df_make(m - 1.0f, 0.0f), pgn_inet_two_sum(m, 1.0f));
    pgn_inet_df s2 = pgn_inet_df_mul(s, s);
    float z = s2.hi;
    float q = 0.153846153846f;   /* 2/13 */
    q = q * z + 0.181818181818f; /* 2/11 */
    q = q * z + 0.222222222222f; /* 2/9 */
    q = q * z + 0.285714285714f; /* 2/7 */
    q = q * z + 0.4f;            /* 2/5 */
    pgn_inet_df c = pgn_inet_fast_two_sum(0.666666686534881591797f, /* 2/3 in two floats */
                                          -1.98682155172491548e-8f + q * z);
    pgn_inet_df logm = pgn_inet_df_add(pgn_inet_df_make(2.0f * s.hi, 2.0f * s.lo),
                                       pgn_inet_df_mul(pgn_inet_df_mul(s, s2), c));
    /* e ln2: e * LN2_HI exactly, e * LN2_LO rounded (|e| <= 149, so off by < 2^-45) */
    float fe = (float)e;
    pgn_inet_df eln2 = pgn_inet_two_prod(fe, PGN_INET_LN2_HI);
    eln2 = pgn_inet_fast_two_sum(eln2.hi, eln2.lo + fe * PGN_INET_LN2_LO);
    return pgn_inet_df_add(eln2, logm);
}

PGN_INLINE float pgn_inet_logf(float x) {
    if (x != x || x < 0.0f) return PGN_NAN;
    if (x == 0.0f) return -PGN_INF;
    if (x == PGN_INF) return x;
    return pgn_inet_log_df(x).hi;
}

/* e^a for a = hi + lo, hi in [-104, 89] (pow has dealt with anything beyond). a = k ln2 + r,
 * |r| <= ln2/2, with ln2 in two floats (k ln2 off by < 2^-45); e^r = 1 + r + r^2 (1/2 + r/3! +
 * ... + r^6/8!), the remainder below 2^-32. The result is rounded once, then scaled by 2^k, which
 * rounds a second time if it is subnormal (off by at most one subnormal ulp). */
PGN_INLINE float pgn_inet_exp_df(pgn_inet_df a) {
    if (a.hi > 89.0f) return PGN_INF;
    if (a.hi < -104.0f) return 0.0f;
    pgn_i32 k = (pgn_i32)(a.hi * 1.44269502162933349609f + (a.hi < 0.0f ? -0.5f : 0.5f));
    float fk = (float)k;
    pgn_inet_df r = pgn_inet_df_add(a, pgn_inet_df_neg(pgn_inet_two_prod(fk, PGN_INET_LN2_HI)));
    r = pgn_inet_fast_two_sum(r.hi, r.lo - fk * PGN_INET_LN2_LO);
    float t = r.hi;
    float p = 2.48015873016e-5f;   /* 1/8! */
    p = p * t + 1.98412698413e-4f; /* 1/7! */
    p = p * t + 1.38888888889e-3f; /* 1/6! */
    p = p * t + 8.33333333333e-3f; /* 1/5! */
    p = p * t + 4.16666666667e-2f; /* 1/4! */
    p = p * t + 1.66666666667e-1f; /* 1/3! */
    p = p * t + 0.5f;
    pgn_inet_df one_t = pgn_inet_two_sum(1.0f, t);
    float e = one_t.hi + (one_t.lo + (r.lo * (1.0f + t) + t * t * p));
    return pgn_inet_scale(e, k);
}

/* ---- pow ---------------------------------------------------------------------------------- */

/* x^y = e^(y log|x|), the sign from y's parity when x < 0. Special values as C99 Annex F:
 * x^0 = 1 and 1^y = 1 even for NaN, (-1)^inf = 1, a negative finite x to a non-integer NaN. */
PGN_INLINE float pgn_inet_powf(float x, float y) {
    if (y == 0.0f || x == 1.0f) return 1.0f;
    if (x != x || y != y) return PGN_NAN;
    float ax = x < 0.0f ? -x : x, ay = y < 0.0f ? -y : y;
    /* y is an even integer from 2^24 up (infinity included) */
    int y_int = 1, y_odd = 0;
    if (ay < 16777216.0f) {
        pgn_i32 n = (pgn_i32)ay;
        y_int = (float)n == ay;
        y_odd = y_int && (n & 1);
    }
    float sign = (pgn_bits(x) >> 31) && y_odd ? -1.0f : 1.0f; /* -0 counts as negative */
    if (x < 0.0f && !y_int && ax != PGN_INF) return PGN_NAN;
    if (ax == 1.0f) return sign;
    if (ay == PGN_INF) return (ax < 1.0f) == (y > 0.0f) ? 0.0f : PGN_INF;
    if (ax == 0.0f) return sign * (y > 0.0f ? 0.0f : PGN_INF);
    if (ax == PGN_INF) return sign * (y > 0.0f ? PGN_INF : 0.0f);
    /* |log x| >= 2^-24 for x != 1, so from |y| = 2^31 on the result is 0 or inf (and y even) */
    if (ay >= 2147483648.0f) return (ax > 1.0f) == (y > 0.0f) ? PGN_INF : 0.0f;
    pgn_inet_df l = pgn_inet_log_df(ax);
    pgn_inet_df yl = pgn_inet_two_prod(y, l.hi);
    yl = pgn_inet_fast_two_sum(yl.hi, yl.lo + y * l.lo);
    return sign * pgn_inet_exp_df(yl);
}

/* ---- sin and tan -------------------------------------------------------------------------- */

/* x = k pi/2 + r with |r| about pi/4 at most; only k mod 4 is kept. */
typedef struct {
    pgn_inet_df r;
    pgn_u32 k;
} pgn_inet_reduced;

/* pi/2 in three floats, 72 bits (the rest is 1.1e-23). */
#define PGN_INET_PIO2_1 1.57079637050628662109f
#define PGN_INET_PIO2_2 -4.37113882867379288655e-8f
#define PGN_INET_PIO2_3 -1.71512451000588187280e-15f
/* Below 2^17, Cody-Waite's r is off by k 2^-76 < 2^-59 (and double-float rounding relative to r),
 * and no float there lies within 2^-28 of a multiple of pi/2 (checked on all of them), so r keeps
 * over 30 correct bits. */
#define PGN_INET_CODY_WAITE_MAX 131072.0f

/* Cody-Waite: x - k P1 - k P2 - k P3 with each product exact (Dekker), summed in double-float.
 * Rounding x 2/pi in float may pick a k one off near a half-way point; |r| then exceeds pi/4 by
 * less than 0.01, which the polynomials below cover. */
PGN_INLINE pgn_inet_reduced pgn_inet_reduce_cody_waite(float ax) {
    pgn_inet_reduced out;
    float k = (float)(pgn_i32)(ax * 0.636619746685028076172f + 0.5f);
    pgn_inet_df p = pgn_inet_two_prod(k, PGN_INET_PIO2_1);
    pgn_inet_df r = pgn_inet_two_sum(ax - p.hi, -p.lo); /* ax - p.hi is exact (Sterbenz) */
    r = pgn_inet_df_add(r, pgn_inet_df_neg(pgn_inet_two_prod(k, PGN_INET_PIO2_2)));
    out.r = pgn_inet_df_add(r, pgn_inet_df_neg(pgn_inet_two_prod(k, PGN_INET_PIO2_3)));
    out.k = (pgn_u32)k & 3u;
    return out;
}

/* 32 bits of 2/pi = 0.A2F9836E 4E441529 ... (hex) from bit q + 1 on; q < 0 gives -q leading
 * zeros. 256 bits cover every float: the largest needs bits up to 198. */
PGN_INLINE pgn_u32 pgn_inet_two_over_pi_word(pgn_i32 i) {
    switch (i) {
    case 0: return 0xA2F9836Eu;
    case 1: return 0x4E441529u;
    case 2: return 0xFC2757D1u;
    case 3: return 0xF534DDC0u;
    case 4: return 0xDB629599u;
    case 5: return 0x3C439041u;
    case 6: return 0xFE5163ABu;
    case 7: return 0xDEBBC561u;
    default: return 0u;
    }
}
PGN_INLINE pgn_u32 pgn_inet_two_over_pi_bits(pgn_i32 q) {
    if (q < 0) return pgn_inet_two_over_pi_word(0) >> (pgn_u32)-q;
    pgn_u32 sh = (pgn_u32)q & 31u, w = pgn_inet_two_over_pi_word(q >> 5);
    return sh ? (w << sh) | (pgn_inet_two_over_pi_word((q >> 5) + 1) >> (32u - sh)) : w;
}

/* Payne-Hanek for |x| >= 2^17, in integers. x = m 2^(s+2) with m the 24-bit mantissa; bits of
 * 2/pi above s + 1 give multiples of 4 (whole turns) and drop out, the next 96 give
 * x 2/pi mod 4 = m W 2^-94 to 2^-70. Its top 64 bits are k and r/(pi/2) in 2.62 fixed point. */
PGN_INLINE pgn_inet_reduced pgn_inet_reduce_payne_hanek(float ax) {
    pgn_inet_reduced out;
    pgn_u32 bits = pgn_bits(ax);
    pgn_u64 m = (bits & 0x007FFFFFu) | 0x00800000u;
    pgn_i32 s = (pgn_i32)(bits >> 23) - 152;
    pgn_u64 y = ((m * pgn_inet_two_over_pi_bits(s)) << 32) + m * pgn_inet_two_over_pi_bits(s + 32) +
                ((m * pgn_inet_two_over_pi_bits(s + 64)) >> 32);
    pgn_u64 k = (y + ((pgn_u64)1 << 61)) >> 62; /* to nearest */
    pgn_u64 f = y - (k << 62);                 /* r/(pi/2) 2^62, two's complement */
    pgn_u32 neg = (pgn_u32)(f >> 63);
    pgn_u64 mag = neg ? (pgn_u64)0 - f : f;
    /* mag < 2^61 as hi + lo: 48 bits, all of them when r is small */
    float hi = (float)mag;
    pgn_u64 hi_int = (pgn_u64)hi;
    float lo = mag >= hi_int ? (float)(mag - hi_int) : -(float)(hi_int - mag);
    float unit = pgn_pow2i(-62);
    out.r = pgn_inet_df_mul(pgn_inet_df_make(hi * unit, lo * unit),
                            pgn_inet_df_make(PGN_INET_PIO2_1, PGN_INET_PIO2_2));
    if (neg) out.r = pgn_inet_df_neg(out.r);
    out.k = (pgn_u32)k & 3u;
    return out;
}

/* The one reduction sin and tan share, for finite ax >= 0. */
PGN_INLINE pgn_inet_reduced pgn_inet_reduce(float ax) {
    if (ax <= 0.785398185253143310547f) { /* pi/4 */
        pgn_inet_reduced out;
        out.r = pgn_inet_df_make(ax, 0.0f);
        out.k = 0u;
        return out;
    }
    if (ax < PGN_INET_CODY_WAITE_MAX) return pgn_inet_reduce_cody_waite(ax);
    return pgn_inet_reduce_payne_hanek(ax);
}

/* sin(r) for |r| <= 0.8: r + r^3 (-1/3! + r^2/5! - ... - r^8/11!), the remainder below 2^-36
 * relative; the -1/3! term in double-float. */
PGN_INLINE pgn_inet_df pgn_inet_sin_df(pgn_inet_df r) {
    pgn_inet_df r2 = pgn_inet_df_mul(r, r);
    float z = r2.hi;
    float p = -2.50521083854e-8f;   /* -1/11! */
    p = p * z + 2.75573192240e-6f;  /* 1/9! */
    p = p * z + -1.98412698413e-4f; /* -1/7! */
    p = p * z + 8.33333333333e-3f;  /* 1/5! */
    pgn_inet_df c = pgn_inet_fast_two_sum(-0.166666671633720397949f, /* -1/3! in two floats */
                                          4.96705387931228870e-9f + p * z);
    return pgn_inet_df_add(r, pgn_inet_df_mul(pgn_inet_df_mul(r, r2), c));
}

/* cos(r) for |r| <= 0.8: 1 - r^2/2 + r^4 (1/4! - r^2/6! + ... + r^8/12!), the remainder below
 * 2^-40. */
PGN_INLINE pgn_inet_df pgn_inet_cos_df(pgn_inet_df r) {
    pgn_inet_df r2 = pgn_inet_df_mul(r, r);
    float z = r2.hi;
    float p = 2.08767569879e-9f;    /* 1/12! */
    p = p * z + -2.75573192240e-7f; /* -1/10! */
    p = p * z + 2.48015873016e-5f;  /* 1/8! */
    p = p * z + -1.38888888889e-3f; /* -1/6! */
    p = p * z + 4.16666666667e-2f;  /* 1/4! */
    p = p * (z * z);
    pgn_inet_df c = pgn_inet_df_add(pgn_inet_df_make(1.0f, 0.0f),
                                    pgn_inet_df_make(-0.5f * r2.hi, -0.5f * r2.lo));
    return pgn_inet_df_add(c, pgn_inet_df_make(p, 0.0f));
}

/* sin(x) = sin(r), cos(r), -sin(r), -cos(r) by quadrant; odd, so reduce |x|. */
PGN_INLINE float pgn_inet_sinf(float x) {
    pgn_u32 neg = pgn_bits(x) >> 31;
    float ax = neg ? -x : x;
    if (!(ax < PGN_INF)) return PGN_NAN;
    pgn_inet_reduced red = pgn_inet_reduce(ax);
    float v = (red.k & 1u) ? pgn_inet_cos_df(red.r).hi : pgn_inet_sin_df(red.r).hi;
    return ((red.k >> 1) ^ neg) ? -v : v;
}

/* tan(x) = sin(r)/cos(r), or -cos(r)/sin(r) in odd quadrants, divided in double-float. */
PGN_INLINE float pgn_inet_tanf(float x) {
    pgn_u32 neg = pgn_bits(x) >> 31;
    float ax = neg ? -x : x;
    if (!(ax < PGN_INF)) return PGN_NAN;
    pgn_inet_reduced red = pgn_inet_reduce(ax);
    pgn_inet_df s = pgn_inet_sin_df(red.r), c = pgn_inet_cos_df(red.r);
    float v = (red.k & 1u) ? -pgn_inet_df_div(c, s).hi : pgn_inet_df_div(s, c).hi;
    return neg ? -v : v;
}

/* ---- atan2 -------------------------------------------------------------------------------- */

/* atan(t) for t = hi + lo in [0, 1]. Above tan(pi/8), atan(t) = pi/4 + atan((t - 1)/(t + 1)),
 * so the series sees |u| <= tan(pi/8): u - u^3/3 + u^5/5 - ... + u^21/21, the remainder below
 * 2^-32 relative; the -1/3 term in double-float. */
PGN_INLINE pgn_inet_df pgn_inet_atan_df(pgn_inet_df t) {
    pgn_inet_df base = pgn_inet_df_make(0.0f, 0.0f);
    if (t.hi > 0.414213562f) {
        pgn_inet_df one = pgn_inet_df_make(1.0f, 0.0f);
        t = pgn_inet_df_div(pgn_inet_df_add(t, pgn_inet_df_neg(one)), pgn_inet_df_add(t, one));
        base = pgn_inet_df_make(0.25f * PGN_INET_PI_HI, 0.25f * PGN_INET_PI_LO);
    }
    pgn_inet_df t2 = pgn_inet_df_mul(t, t);
    float z = t2.hi;
    float q = 0.0476190476190f;    /* 1/21 */
    q = q * z + -0.0526315789474f; /* -1/19 */
    q = q * z + 0.0588235294118f;  /* 1/17 */
    q = q * z + -0.0666666666667f; /* -1/15 */
    q = q * z + 0.0769230769231f;  /* 1/13 */
    q = q * z + -0.0909090909091f; /* -1/11 */
    q = q * z + 0.111111111111f;   /* 1/9 */
    q = q * z + -0.142857142857f;  /* -1/7 */
    q = q * z + 0.2f;              /* 1/5 */
    pgn_inet_df c = pgn_inet_fast_two_sum(-0.333333343267440795898f, /* -1/3 in two floats */
                                          9.93410775862457740e-9f + q * z);
    pgn_inet_df u = pgn_inet_df_add(t, pgn_inet_df_mul(pgn_inet_df_mul(t, t2), c));
    return pgn_inet_df_add(base, u);
}

/* atan2(y, x) from t = min(|x|, |y|) / max(|x|, |y|) in double-float: atan(t), pi - atan(t),
 * pi/2 - atan(t) or pi/2 + atan(t) by which is larger and x's sign; y's sign last. */
PGN_INLINE float pgn_inet_atan2f(float y, float x) {
    if (x != x || y != y) return PGN_NAN;
    pgn_u32 y_neg = pgn_bits(y) >> 31, x_neg = pgn_bits(x) >> 31; /* -0 counts as negative */
    float ax = x_neg ? -x : x, ay = y_neg ? -y : y, v;
    if (ay == 0.0f) v = x_neg ? PGN_INET_PI_HI : 0.0f;
    else if (ax == PGN_INF && ay == PGN_INF)
        v = x_neg ? 2.35619449615478515625f : 0.785398185253143310547f; /* 3pi/4, pi/4 */
    else if (ax == 0.0f || ay == PGN_INF) v = 0.5f * PGN_INET_PI_HI;
    else if (ax == PGN_INF) v = x_neg ? PGN_INET_PI_HI : 0.0f;
    else {
        int swap = ay > ax;
        float num = swap ? ax : ay, den = swap ? ay : ax;
        pgn_inet_df t = pgn_inet_df_make(num / den, 0.0f);
        if (t.hi >= 9.09494702e-13f) { /* 2^-40; below, atan(t) = t to 2^-80 */
            /* scale both so den is in [1, 2): Dekker's product in the division cannot overflow */
            if (den < 1.17549435e-38f) {
                num = num * 16777216.0f; /* 2^24, exact */
                den = den * 16777216.0f;
            }
            pgn_i32 e = (pgn_i32)(pgn_bits(den) >> 23) - 127;
            t = pgn_inet_df_div(pgn_inet_df_make(pgn_inet_scale(num, -e), 0.0f),
                                pgn_inet_df_make(pgn_inet_scale(den, -e), 0.0f));
        }
        pgn_inet_df a = pgn_inet_atan_df(t);
        pgn_inet_df pi = pgn_inet_df_make(PGN_INET_PI_HI, PGN_INET_PI_LO);
        pgn_inet_df half_pi = pgn_inet_df_make(0.5f * PGN_INET_PI_HI, 0.5f * PGN_INET_PI_LO);
        if (swap) a = pgn_inet_df_add(half_pi, x_neg ? a : pgn_inet_df_neg(a));
        else if (x_neg) a = pgn_inet_df_add(pi, pgn_inet_df_neg(a));
        v = a.hi;
    }
    return y_neg ? -v : v;
}

#endif
