/* Packed DECIMAL (MariaDB's bin2decimal layout), shared by the C fast paths.
 *
 * One implementation for codec/rows/_rowsfast.c (row values -> decimal.Decimal) and
 * tools/printer/_dumpfast.c (the dump's ### lines); the Python definition it mirrors is
 * mariabinlog.codec.rows.packed._decimal_codec.  A DECIMAL(precision, scale) is stored
 * big-endian in groups of 9 digits (4 bytes), the integer part's leading partial
 * group and the fraction's trailing one in 1-4 bytes; the sign bit is the top bit
 * of the first byte, flipped, and a negative value has every byte inverted.
 */
#ifndef MARIABINLOG_DECIMAL_H
#define MARIABINLOG_DECIMAL_H

#include <stdint.h>

#include "_digits.h"

/* Longest text: sign, 65 digits, point, 30 fraction digits (scale <= 30 by the
 * server, 65 here to stay safe with any metadata), terminator. */
#define MB_DECIMAL_TEXT_MAX (1 + 65 + 1 + 65 + 1)

static const int MB_DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t MB_DEC_POW10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};

/* Packed size in bytes of DECIMAL(precision, scale) (my_decimal_get_binary_size). */
static inline long mb_decimal_size(long precision, long scale)
{
    long intg = precision - scale;
    return intg / 9 * 4 + MB_DIG2BYTES[intg % 9] + scale / 9 * 4 + MB_DIG2BYTES[scale % 9];
}

static inline uint32_t mb_dec_group(const unsigned char *p, int n)
{
    uint32_t v = 0;
    for (int i = 0; i < n; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

static inline void mb_dec_digits(char **out, uint32_t value, int digits)
{
    mb_digits_fixed(*out + digits, value, digits);
    *out += digits;
}

/* Text of the packed DECIMAL(precision, scale) at d: "-" for a negative value, the
 * integer part without leading zeros ("0" for none), then "." and exactly `scale`
 * fraction digits.  Writes into text (MB_DECIMAL_TEXT_MAX bytes, not terminated)
 * and returns the length; -1 for a declaration or a digit group no server writes
 * (the caller falls back to the Python definition, which says what it means). */
static int mb_decimal_text(const unsigned char *d, long precision, long scale, char *text)
{
    if (precision <= 0 || precision > 65 || scale < 0 || scale > precision) {
        return -1;
    }
    long size = mb_decimal_size(precision, scale);
    unsigned char buf[40];
    int negative = !(d[0] & 0x80);
    for (long i = 0; i < size; i++) {
        buf[i] = negative ? (unsigned char)~d[i] : d[i];
    }
    buf[0] ^= 0x80;
    long intg = precision - scale;
    char *out = text + 1; /* room for the sign */
    const unsigned char *q = buf;
    int lead = (int)(intg % 9);
    if (lead) {
        uint32_t g = mb_dec_group(q, MB_DIG2BYTES[lead]);
        if (g >= MB_DEC_POW10[lead]) {
            return -1;
        }
        mb_dec_digits(&out, g, lead);
        q += MB_DIG2BYTES[lead];
    }
    for (long i = 0; i < intg / 9; i++) {
        uint32_t g = mb_dec_group(q, 4);
        if (g >= MB_DEC_POW10[9]) {
            return -1;
        }
        mb_dec_digits(&out, g, 9);
        q += 4;
    }
    char *digits = text + 1;
    while (digits < out - 1 && *digits == '0') {
        digits++;
    }
    if (digits == out) {
        *out++ = '0';
    }
    if (scale) {
        *out++ = '.';
        for (long i = 0; i < scale / 9; i++) {
            uint32_t g = mb_dec_group(q, 4);
            if (g >= MB_DEC_POW10[9]) {
                return -1;
            }
            mb_dec_digits(&out, g, 9);
            q += 4;
        }
        int tail = (int)(scale % 9);
        if (tail) {
            uint32_t g = mb_dec_group(q, MB_DIG2BYTES[tail]);
            if (g >= MB_DEC_POW10[tail]) {
                return -1;
            }
            mb_dec_digits(&out, g, tail);
        }
    }
    if (negative) {
        *--digits = '-';
    }
    long len = out - digits;
    if (digits != text) {
        memmove(text, digits, (size_t)len);
    }
    return (int)len;
}

#endif
