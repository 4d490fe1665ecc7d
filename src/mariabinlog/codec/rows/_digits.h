/* Decimal digits two at a time, shared by the C fast paths (row values, DECIMAL,
 * FLOAT/DOUBLE and date/time text): a division by 100 and a table lookup per pair
 * instead of a division and a reversal per digit.
 */
#ifndef MARIABINLOG_DIGITS_H
#define MARIABINLOG_DIGITS_H

#include <stdint.h>

static const char MB_DIGIT_PAIRS[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* The digits of v written so that they end just before `end`; returns where they start. */
static inline char *mb_digits_before(char *end, uint64_t v)
{
    while (v >= 100) {
        const char *pair = MB_DIGIT_PAIRS + (v % 100) * 2;
        v /= 100;
        *--end = pair[1];
        *--end = pair[0];
    }
    if (v >= 10) {
        *--end = MB_DIGIT_PAIRS[v * 2 + 1];
        *--end = MB_DIGIT_PAIRS[v * 2];
    }
    else {
        *--end = (char)('0' + v);
    }
    return end;
}

/* The digits of v, at least `width` (<= 20) of them, zero-padded as printf's %0*llu, ending
 * just before `end`; returns where they start. */
static inline char *mb_digits_padded(char *end, uint64_t v, int width)
{
    char *start = mb_digits_before(end, v);
    while (end - start < width) {
        *--start = '0';
    }
    return start;
}

/* Exactly `width` digits of v (v < 10**width: zero-padded) ending just before `end`. */
static inline void mb_digits_fixed(char *end, uint64_t v, int width)
{
    char *start = end - width;
    while (end - start >= 2) {
        const char *pair = MB_DIGIT_PAIRS + (v % 100) * 2;
        v /= 100;
        *--end = pair[1];
        *--end = pair[0];
    }
    if (end > start) {
        *--end = (char)('0' + v % 10);
    }
}

#endif
