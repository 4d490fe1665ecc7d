/* Shortest round-trip text of a double, exactly as Python's float.__repr__ writes it.
 *
 * The rows view renders every FLOAT/DOUBLE value as float.__repr__ does.  CPython's repr
 * (David Gay's dtoa, mode 0) works with arbitrary-precision integers and took more than half
 * of the compiled map builder's time on a table with one DOUBLE column.  This is Ulf Adams'
 * Ryu algorithm ("Ryu: fast float-to-string conversion", PLDI 2018): the interval of
 * decimals that read back as the double is scaled by a 128-bit power of five
 * (codec/rows/_pow5.h, generated) and the shortest decimal inside it is found by dropping digits;
 * where several are shortest, the nearest wins (ties to even), as in dtoa mode 0.  The
 * digits are then laid out by repr's rules: positional for a decimal point position in
 * (-4, 16], else d.ddde+XX.  tests/codec/test_shortest.py checks it against repr.
 */
#ifndef MARIABINLOG_SHORTEST_H
#define MARIABINLOG_SHORTEST_H

#include <stdint.h>
#include <string.h>

#include "_digits.h"
#include "_pow5.h"

/* Longest text: sign, 17 digits, point, "e-308". */
#define MB_DOUBLE_TEXT_MAX 32

/* Bits of 5**e (e >= 0), ceil(log2(5**e)) + (e == 0). */
static inline int32_t mb_pow5_bits(int32_t e)
{
    return (int32_t)(((uint32_t)e * 1217359u) >> 19) + 1;
}

/* floor(log10(2**e)) and floor(log10(5**e)), e >= 0. */
static inline uint32_t mb_log10_pow2(int32_t e)
{
    return ((uint32_t)e * 78913u) >> 18;
}

static inline uint32_t mb_log10_pow5(int32_t e)
{
    return ((uint32_t)e * 732923u) >> 20;
}

/* True when 5**p divides v (v > 0). */
static inline int mb_divisible_pow5(uint64_t v, uint32_t p)
{
    uint32_t count = 0;
    while (v % 5 == 0) {
        v /= 5;
        count++;
    }
    return count >= p;
}

/* (m * mul) >> j for a 128-bit multiplier (low, high), j >= 64. */
static inline uint64_t mb_mul_shift(uint64_t m, const uint64_t *mul, int32_t j)
{
    unsigned __int128 low = (unsigned __int128)m * mul[0];
    unsigned __int128 high = (unsigned __int128)m * mul[1];
    return (uint64_t)(((low >> 64) + high) >> (j - 64));
}

/* The shortest decimal (digits, exponent) that reads back as the finite, nonzero double
 * with the given IEEE mantissa and biased exponent: value = *digits * 10***exponent. */
static void mb_shortest(uint64_t ieee_mantissa, uint32_t ieee_exponent, uint64_t *digits, int32_t *exponent)
{
    int32_t e2;
    uint64_t m2;
    if (ieee_exponent == 0) {
        e2 = 1 - 1023 - 52 - 2;
        m2 = ieee_mantissa;
    }
    else {
        e2 = (int32_t)ieee_exponent - 1023 - 52 - 2;
        m2 = ((uint64_t)1 << 52) | ieee_mantissa;
    }
    const int even = (m2 & 1) == 0;  /* an even mantissa reads back from its interval's bounds */
    const uint64_t mv = 4 * m2;
    /* The lower half-gap is half as wide below a power of two. */
    const uint32_t mm_shift = ieee_mantissa != 0 || ieee_exponent <= 1;

    /* The interval (vm, vp) around vr, scaled to decimal exponent e10. */
    uint64_t vr, vp, vm;
    int32_t e10;
    int vm_zeros = 0, vr_zeros = 0;  /* whether the dropped digits of vm / vr are all zero */
    if (e2 >= 0) {
        const uint32_t q = mb_log10_pow2(e2) - (e2 > 3);
        e10 = (int32_t)q;
        const int32_t k = MB_POW5_INV_BITS + mb_pow5_bits((int32_t)q) - 1;
        const int32_t i = -e2 + (int32_t)q + k;
        const uint64_t *mul = MB_POW5_INV[q];
        vr = mb_mul_shift(4 * m2, mul, i);
        vp = mb_mul_shift(4 * m2 + 2, mul, i);
        vm = mb_mul_shift(4 * m2 - 1 - mm_shift, mul, i);
        if (q <= 21) {
            /* At most one of mv - 1 - mm_shift, mv, mv + 2 is a multiple of 5. */
            if (mv % 5 == 0) {
                vr_zeros = mb_divisible_pow5(mv, q);
            }
            else if (even) {
                vm_zeros = mb_divisible_pow5(mv - 1 - mm_shift, q);
            }
            else {
                vp -= (uint64_t)mb_divisible_pow5(mv + 2, q);
            }
        }
    }
    else {
        const uint32_t q = mb_log10_pow5(-e2) - (-e2 > 1);
        e10 = (int32_t)q + e2;
        const int32_t i = -e2 - (int32_t)q;
        const int32_t k = mb_pow5_bits(i) - MB_POW5_BITS;
        const int32_t j = (int32_t)q - k;
        const uint64_t *mul = MB_POW5[i];
        vr = mb_mul_shift(4 * m2, mul, j);
        vp = mb_mul_shift(4 * m2 + 2, mul, j);
        vm = mb_mul_shift(4 * m2 - 1 - mm_shift, mul, j);
        if (q <= 1) {
            /* mv has at least q trailing zero bits (it is a multiple of 4). */
            vr_zeros = 1;
            if (even) {
                vm_zeros = mm_shift == 1;
            }
            else {
                --vp;
            }
        }
        else if (q < 63) {
            vr_zeros = (mv & (((uint64_t)1 << q) - 1)) == 0;
        }
    }

    /* Drop digits while the interval still holds a shorter decimal. */
    int32_t removed = 0;
    uint64_t output;
    if (vm_zeros || vr_zeros) {
        /* Then, where vm's dropped digits are all zero (vm itself in the interval), drop
         * its trailing zeros too (the interval cannot hold a shorter decimal again). */
        uint32_t last = 0;
        for (;;) {
            const int shorter = vp / 10 > vm / 10;
            if (!shorter && !(vm_zeros && vm % 10 == 0)) {
                break;
            }
            vm_zeros &= vm % 10 == 0;
            vr_zeros &= last == 0;
            last = (uint32_t)(vr % 10);
            vr /= 10;
            vp /= 10;
            vm /= 10;
            removed++;
        }
        if (vr_zeros && last == 5 && vr % 2 == 0) {
            last = 4;  /* exactly halfway: round to even */
        }
        output = vr + ((vr == vm && (!even || !vm_zeros)) || last >= 5);
    }
    else {
        int round_up = 0;
        if (vp / 100 > vm / 100) {
            round_up = vr % 100 >= 50;
            vr /= 100;
            vp /= 100;
            vm /= 100;
            removed += 2;
        }
        while (vp / 10 > vm / 10) {
            round_up = vr % 10 >= 5;
            vr /= 10;
            vp /= 10;
            vm /= 10;
            removed++;
        }
        output = vr + (vr == vm || round_up);
    }
    *digits = output;
    *exponent = e10 + removed;
}

/* float.__repr__(d) into out (MB_DOUBLE_TEXT_MAX bytes, not terminated); returns the length,
 * or -1 for infinities and NaN (the caller asks Python). */
static int mb_double_repr(double d, char *out)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    const uint64_t ieee_mantissa = bits & (((uint64_t)1 << 52) - 1);
    const uint32_t ieee_exponent = (uint32_t)(bits >> 52) & 0x7ff;
    if (ieee_exponent == 0x7ff) {
        return -1;
    }
    char *o = out;
    if (bits >> 63) {
        *o++ = '-';
    }
    if (ieee_exponent == 0 && ieee_mantissa == 0) {
        memcpy(o, "0.0", 3);
        return (int)(o - out) + 3;
    }
    uint64_t value;
    int32_t exponent;
    mb_shortest(ieee_mantissa, ieee_exponent, &value, &exponent);
    char buf[20];
    const char *digits = mb_digits_before(buf + 20, value);
    int n = (int)(buf + 20 - digits);
    while (n > 1 && digits[n - 1] == '0') {  /* repr's digits never end in zero */
        n--;
        exponent++;
    }
    const int point = n + exponent;  /* value = 0.digits * 10**point */
    if (point <= -4 || point > 16) {
        *o++ = digits[0];
        if (n > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)(n - 1));
            o += n - 1;
        }
        *o++ = 'e';
        int x = point - 1;
        *o++ = x < 0 ? '-' : '+';
        x = x < 0 ? -x : x;
        if (x >= 100) {
            *o++ = (char)('0' + x / 100);
            x %= 100;
        }
        *o++ = (char)('0' + x / 10);
        *o++ = (char)('0' + x % 10);
    }
    else if (point <= 0) {
        *o++ = '0';
        *o++ = '.';
        memset(o, '0', (size_t)-point);
        o += -point;
        memcpy(o, digits, (size_t)n);
        o += n;
    }
    else if (point >= n) {
        memcpy(o, digits, (size_t)n);
        o += n;
        memset(o, '0', (size_t)(point - n));
        o += point - n;
        *o++ = '.';
        *o++ = '0';
    }
    else {
        memcpy(o, digits, (size_t)point);
        o += point;
        *o++ = '.';
        memcpy(o, digits + point, (size_t)(n - point));
        o += n - point;
    }
    return (int)(o - out);
}

#endif
