/* Compiled fast paths of mariabinlog.tools.printer (``mariabinlog dump``).
 *
 * The loops that dominate a dump of a large ROW-format binlog, each the exact
 * counterpart of a pure-Python function of this package (base.py, rowsizes.py,
 * rowsql.py) that stays the reference (and the fallback when this module is not
 * built, or with MARIABINLOG_PURE_PYTHON=1):
 *
 *   base64_lines(data)            base._base64_lines: base64 in 76-character lines,
 *                                 each ending with "\n" (my_base64_encode + "\n").
 *   count_rows(data, pos, end, sizes, width, cols, cols_ai)
 *                                 codec/rows/layout.row_counter: Rows_log_event::count_row_events.
 *                                 Its plan ``sizes`` is the size codes of
 *                                 codec/rows/layout.size_codes, the one description of
 *                                 the row-image layout; nothing here decides a size.
 *   verbose_rows(data, pos, end, kind, width, cols, cols_ai, plan, header, verbose)
 *                                 rowsql.rows_sql: the "###" lines of -v / -vv,
 *                                 and the number of rows; None whenever anything
 *                                 is unusual (truncated or odd data, an odd
 *                                 DECIMAL digit group, an UPDATE without after
 *                                 columns ...): the Python code then produces
 *                                 the output, or the error, itself.
 *   print_groups(data, pos, limit, soft, cfg, session, tables, table_maps, timestamp, accept)
 *                                 printer.Printer.print_event over whole ordinary groups
 *                                 (GTID, Annotate_rows, Table_map, rows events, Xid), using
 *                                 the loops above; any other group is left, whole, to the
 *                                 Python printer (see the comment at print_groups).
 *
 * Events are read with codec/_event.h, the codec's one C reader of event bytes.  The column plan of verbose_rows comes from rows.py's _verbose_plan (one tuple per column:
 * opcode, two parameters, the "###   @N=" label and the -vv comments); all
 * column-type knowledge stays there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../codec/_event.h"
#include "../../codec/rows/_decimal.h"
#include "../../codec/rows/_shortest.h"

/* Bump together with base._FAST_VERSION whenever the plan or a signature changes. */
#define FAST_VERSION 6

/* ------------------------------------------------------------------ output buffer */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = PyMem_Realloc(b->data, cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const char *s, Py_ssize_t n) {
    if (n == 0) /* nothing to copy; an empty buffer may have no storage yet (data NULL) */
        return 0;
    if (buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

static int buf_printf(Buf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof tmp) {
        PyErr_SetString(PyExc_OverflowError, "formatted value too long");
        return -1;
    }
    return buf_put(b, tmp, n);
}

/* Decimal digits of v, at least ``width`` of them (zero-padded): printf's %0*llu. */
static int put_upad(Buf *b, uint64_t v, int width) {
    char tmp[24];
    const char *start = mb_digits_padded(tmp + 24, v, width);
    return buf_put(b, start, tmp + 24 - start);
}

static inline int put_i64(Buf *b, int64_t v) {
    if (v < 0) {
        if (buf_put(b, "-", 1) < 0)
            return -1;
        return put_upad(b, (uint64_t)0 - (uint64_t)v, 1);
    }
    return put_upad(b, (uint64_t)v, 1);
}

/* ------------------------------------------------------------------ base64 */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/* Two base64 characters per 12 bits: one table lookup per half of a 3-byte group. */
static uint16_t B64_PAIRS[4096];

static void init_b64_pairs(void) {
    for (int i = 0; i < 4096; i++) {
        char pair[2] = {B64[i >> 6], B64[i & 63]};
        memcpy(&B64_PAIRS[i], pair, 2);
    }
}

/* Size of the base64 lines of n bytes (my_base64_encode + "\n", as base64.encodebytes). */
static inline Py_ssize_t b64_size(Py_ssize_t n) {
    Py_ssize_t full = n / 57, rest = n % 57;
    return n == 0 ? 1 : full * 77 + (rest ? (rest + 2) / 3 * 4 + 1 : 0);
}

/* Write the b64_size(n) bytes of the base64 lines of src to dst. */
static void b64_encode(char *dst, const unsigned char *src, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t line_end = i + 57 < n ? i + 57 : n;
        while (i + 3 <= line_end) {
            uint32_t v = (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 | src[i + 2];
            memcpy(dst, &B64_PAIRS[v >> 12], 2);
            memcpy(dst + 2, &B64_PAIRS[v & 4095], 2);
            dst += 4;
            i += 3;
        }
        if (i < line_end) {
            uint32_t v = (uint32_t)src[i] << 16;
            if (i + 1 < line_end)
                v |= (uint32_t)src[i + 1] << 8;
            dst[0] = B64[v >> 18];
            dst[1] = B64[v >> 12 & 63];
            dst[2] = i + 1 < line_end ? B64[v >> 6 & 63] : '=';
            dst[3] = '=';
            dst += 4;
            i = line_end;
        }
        *dst++ = '\n';
    }
    if (n == 0)
        *dst = '\n';
}

static PyObject *base64_lines(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, b64_size(view.len));
    if (out != NULL) {
        char *dst = PyBytes_AS_STRING(out);
        Py_BEGIN_ALLOW_THREADS
        b64_encode(dst, view.buf, view.len);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    return out;
}

/* Append the base64 lines of n bytes to b. */
static int buf_b64(Buf *b, const unsigned char *src, Py_ssize_t n) {
    Py_ssize_t size = b64_size(n);
    if (buf_reserve(b, size) < 0)
        return -1;
    b64_encode(b->data + b->len, src, n);
    b->len += size;
    return 0;
}

/* ------------------------------------------------------------------ helpers */

static inline int bit(const unsigned char *bitmap, Py_ssize_t nbits_len, Py_ssize_t i) {
    return (i >> 3) < nbits_len && (bitmap[i >> 3] >> (i & 7) & 1);
}

/* Present columns of a bitmap among the first ``width``: their indexes into ``out``. */
static Py_ssize_t present_columns(const unsigned char *bitmap, Py_ssize_t bitmap_len, Py_ssize_t width,
                                  Py_ssize_t *out) {
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < width; i++)
        if (bit(bitmap, bitmap_len, i))
            out[n++] = i;
    return n;
}

static inline uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* ------------------------------------------------------------------ count_rows */

/* One image of count_row_events; returns 0 to go on, 1 when the tool stops counting. */
static int count_image(const unsigned char *d, Py_ssize_t *ppos, Py_ssize_t end, const long *sizes,
                       const Py_ssize_t *cols, Py_ssize_t ncols) {
    Py_ssize_t pos = *ppos;
    if (ncols == 0)
        return 1;
    Py_ssize_t nbytes = (ncols + 7) >> 3;
    if (pos + nbytes > end)
        return 1;
    const unsigned char *nulls = d + pos;
    pos += nbytes;
    for (Py_ssize_t k = 0; k < ncols; k++) {
        if (nulls[k >> 3] >> (k & 7) & 1)
            continue;
        long size = sizes[cols[k]];
        if (size > 0) {
            pos += size;
        } else if (size == -1 || size == -11) {
            if (pos >= end)
                return 1;
            pos += d[pos] + 1;
        } else if (size == -2 || size == -12) {
            if (pos + 2 > end)
                return 1;
            pos += (Py_ssize_t)le(d + pos, 2) + 2;
        } else if (size == -13) {
            if (pos + 3 > end)
                return 1;
            pos += (Py_ssize_t)le(d + pos, 3) + 3;
        } else if (size == -14) {
            if (pos + 4 > end)
                return 1;
            pos += (Py_ssize_t)le(d + pos, 4) + 4;
        } else {
            return 1;
        }
        if (pos > end)
            return 1;
    }
    *ppos = pos;
    return 0;
}

/* Rows_log_event::count_row_events over d[pos:end] with the size codes ``sizes``; the number
 * of rows, or -1 with a Python error. */
static long long count_core(const unsigned char *d, Py_ssize_t pos, Py_ssize_t end, PyObject *sizes_obj,
                            Py_ssize_t width, const unsigned char *cols, Py_ssize_t cols_len,
                            const unsigned char *ai, Py_ssize_t ai_len) {
    long long n = -1;
    Py_ssize_t nsizes = PyTuple_GET_SIZE(sizes_obj);
    if (width > nsizes)
        width = nsizes;
    long *sizes = PyMem_Malloc(sizeof(long) * (nsizes + 1));
    Py_ssize_t *pcols = PyMem_Malloc(sizeof(Py_ssize_t) * (width + 1));
    Py_ssize_t *pcols_ai = PyMem_Malloc(sizeof(Py_ssize_t) * (width + 1));
    if (!sizes || !pcols || !pcols_ai) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nsizes; i++) {
        sizes[i] = PyLong_AsLong(PyTuple_GET_ITEM(sizes_obj, i));
        if (sizes[i] == -1 && PyErr_Occurred())
            goto done;
    }
    Py_ssize_t ncols = present_columns(cols, cols_len, width, pcols);
    Py_ssize_t ncols_ai = ai != NULL ? present_columns(ai, ai_len, width, pcols_ai) : 0;
    n = 0;
    while (pos < end) {
        n++;
        if (count_image(d, &pos, end, sizes, pcols, ncols))
            break;
        if (ai != NULL && count_image(d, &pos, end, sizes, pcols_ai, ncols_ai))
            break;
    }
done:
    PyMem_Free(sizes);
    PyMem_Free(pcols);
    PyMem_Free(pcols_ai);
    return n;
}

static PyObject *count_rows(PyObject *self, PyObject *args) {
    Py_buffer view, cols_view, ai_view;
    Py_ssize_t pos, end, width;
    PyObject *sizes_obj, *ai_obj;
    if (!PyArg_ParseTuple(args, "y*nnO!ny*O", &view, &pos, &end, &PyTuple_Type, &sizes_obj, &width, &cols_view,
                          &ai_obj))
        return NULL;
    PyObject *result = NULL;
    int have_ai = ai_obj != Py_None;
    if (!have_ai || PyObject_GetBuffer(ai_obj, &ai_view, PyBUF_SIMPLE) == 0) {
        if (end > view.len)
            end = view.len;
        long long n = count_core(view.buf, pos, end, sizes_obj, width, cols_view.buf, cols_view.len,
                                 have_ai ? ai_view.buf : NULL, have_ai ? ai_view.len : 0);
        if (n >= 0)
            result = PyLong_FromLongLong(n);
        if (have_ai)
            PyBuffer_Release(&ai_view);
    }
    PyBuffer_Release(&view);
    PyBuffer_Release(&cols_view);
    return result;
}

/* ------------------------------------------------------------------ verbose_rows */

enum {
    V_INT = 1,        /* a = size (1, 2, 3, 4, 8), signed with the unsigned reading when negative */
    V_DECIMAL = 2,    /* a = precision, b = scale */
    V_FLOAT = 3,
    V_DOUBLE = 4,
    V_BIT = 5,        /* a = bits */
    V_SET = 6,        /* a = bytes */
    V_ENUM = 7,       /* a = bytes */
    V_TIMESTAMP = 8,
    V_TIMESTAMP2 = 9, /* a = fsp */
    V_DATETIME = 10,
    V_DATETIME2 = 11, /* a = fsp */
    V_TIME = 12,
    V_TIME2 = 13,     /* a = fsp */
    V_DATE = 14,
    V_YEAR = 15,
    V_STRING = 16,    /* a = length-prefix bytes (1..4) */
};

typedef struct {
    int op;
    long a, b;
    const char *label;
    Py_ssize_t label_len;
    const char *comment;
    Py_ssize_t comment_len;
    const char *null_comment;
    Py_ssize_t null_comment_len;
} VCol;

static const long long POW10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};
static const long FRAC_UNIT[7] = {1, 10000, 10000, 100, 100, 1, 1};
static const int DT_WIDTHS[6] = {4, 2, 2, 2, 2, 2};
static const int T_WIDTHS[3] = {2, 2, 2};

static int put_frac(Buf *out, long long usec, long fsp) {
    if (!fsp)
        return 0;
    if (buf_put(out, ".", 1) < 0)
        return -1;
    return put_upad(out, (uint64_t)(usec / POW10[6 - fsp]), (int)fsp);
}

/* 'sep'-separated zero-padded fields: "%0*w1 sep1 %0*w2 ..." of n values. */
static int put_fields(Buf *out, const uint64_t *values, const int *widths, const char *seps, int n) {
    for (int i = 0; i < n; i++) {
        if (i && buf_put(out, &seps[i - 1], 1) < 0)
            return -1;
        if (put_upad(out, values[i], widths[i]) < 0)
            return -1;
    }
    return 0;
}

/* The packed DECIMAL at d as the tool prints it; 1 = odd data (fallback). */
static int put_decimal(Buf *out, const unsigned char *d, long precision, long scale) {
    char text[MB_DECIMAL_TEXT_MAX];
    int len = mb_decimal_text(d, precision, scale, text);
    if (len < 0)
        return 1;
    if (len == 2 && text[0] == '-' && text[1] == '0')
        return buf_put(out, "0", 1) < 0 ? -1 : 0; /* bin2decimal's "-0" is plain 0 */
    return buf_put(out, text, len) < 0 ? -1 : 0;
}

static int put_bits(Buf *out, const unsigned char *d, int nbytes, long nbits) {
    if (buf_reserve(out, 8 * nbytes + 3) < 0)
        return -1;
    char *q = out->data + out->len;
    *q++ = 'b';
    *q++ = '\'';
    long skip = 8L * nbytes - nbits;
    for (long i = skip; i < 8L * nbytes; i++)
        *q++ = (d[i >> 3] >> (7 - (i & 7)) & 1) ? '1' : '0';
    *q++ = '\'';
    out->len = q - out->data;
    return 0;
}

static int put_quoted(Buf *out, const unsigned char *s, Py_ssize_t n) {
    if (buf_reserve(out, 4 * n + 2) < 0)
        return -1;
    char *q = out->data + out->len;
    *q++ = '\'';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            *q++ = '\\';
            *q++ = 'x';
            *q++ = hex[c >> 4];
            *q++ = hex[c & 15];
        } else {
            *q++ = (char)c;
        }
    }
    *q++ = '\'';
    out->len = q - out->data;
    return 0;
}

/* One value at *ppos; 0 ok, 1 fallback (odd or truncated data), -1 Python error. */
static int put_value(Buf *out, const VCol *c, const unsigned char *d, Py_ssize_t *ppos, Py_ssize_t end) {
    Py_ssize_t pos = *ppos;
    Py_ssize_t need;
    long fb;
    switch (c->op) {
    case V_INT: need = c->a; break;
    case V_DECIMAL: need = mb_decimal_size(c->a, c->b); break;
    case V_FLOAT: need = 4; break;
    case V_DOUBLE: need = 8; break;
    case V_BIT: need = (c->a + 7) / 8; break;
    case V_SET: case V_ENUM: need = c->a; break;
    case V_TIMESTAMP: need = 4; break;
    case V_TIMESTAMP2: need = 4 + (c->a + 1) / 2; break;
    case V_DATETIME: need = 8; break;
    case V_DATETIME2: need = 5 + (c->a + 1) / 2; break;
    case V_TIME: need = 3; break;
    case V_TIME2: need = 3 + (c->a + 1) / 2; break;
    case V_DATE: need = 3; break;
    case V_YEAR: need = 1; break;
    case V_STRING: {
        if (pos + c->a > end)
            return 1;
        uint64_t len = le(d + pos, (int)c->a);
        if ((uint64_t)(end - pos - c->a) < len)
            return 1;
        *ppos = pos + c->a + (Py_ssize_t)len;
        return put_quoted(out, d + pos + c->a, (Py_ssize_t)len) < 0 ? -1 : 0;
    }
    default: return 1;
    }
    if (pos + need > end)
        return 1;
    const unsigned char *p = d + pos;
    *ppos = pos + need;
    int r = 0;
    switch (c->op) {
    case V_INT: {
        int bits = (int)(8 * c->a);
        uint64_t u = le(p, (int)c->a);
        int64_t v = bits == 64 ? (int64_t)u : (int64_t)(u << (64 - bits)) >> (64 - bits);
        r = put_i64(out, v);
        if (!r && v < 0) {
            r = buf_put(out, " (", 2);
            if (!r)
                r = put_upad(out, bits == 64 ? u : (uint64_t)(v + ((int64_t)1 << bits)), 1);
            if (!r)
                r = buf_put(out, ")", 1);
        }
        break;
    }
    case V_DECIMAL:
        r = put_decimal(out, p, c->a, c->b);
        break;
    case V_FLOAT: {
        float f;
        memcpy(&f, p, 4);
        r = buf_printf(out, "%-20g", (double)f);
        break;
    }
    case V_DOUBLE: {
        double f;
        memcpy(&f, p, 8);
        r = buf_printf(out, "%.20g", f);
        break;
    }
    case V_BIT:
        r = put_bits(out, p, (int)need, c->a);
        break;
    case V_SET:
        r = put_bits(out, p, (int)need, 8 * need);
        break;
    case V_ENUM:
        r = put_upad(out, le(p, (int)need), 1);
        break;
    case V_TIMESTAMP:
        r = put_i64(out, (int32_t)(uint32_t)le(p, 4));
        break;
    case V_TIMESTAMP2: {
        fb = (c->a + 1) / 2;
        uint64_t v = be(p, (int)need);
        r = put_upad(out, v >> (8 * fb), 1);
        if (!r)
            r = put_frac(out, (long long)(v & ((1ULL << (8 * fb)) - 1)) * FRAC_UNIT[c->a], c->a);
        break;
    }
    case V_DATETIME: {
        uint64_t v = le(p, 8);
        uint64_t dd = v / 1000000, t = v % 1000000;
        uint64_t f[6] = {dd / 10000, dd / 100 % 100, dd % 100, t / 10000, t / 100 % 100, t % 100};
        r = buf_put(out, "'", 1);
        if (!r)
            r = put_fields(out, f, DT_WIDTHS, "-- ::", 6);
        if (!r)
            r = buf_put(out, "'", 1);
        break;
    }
    case V_DATETIME2: {
        fb = (c->a + 1) / 2;
        uint64_t v = be(p, (int)need);
        long long intpart = (long long)(v >> (8 * fb)) - 0x8000000000LL;
        if (intpart < 0)
            intpart = -intpart;
        long long ymd = intpart >> 17, ym = ymd >> 5, hms = intpart & 0x1FFFF;
        uint64_t f[6] = {(uint64_t)(ym / 13), (uint64_t)(ym % 13), (uint64_t)(ymd & 31), (uint64_t)(hms >> 12),
                         (uint64_t)(hms >> 6 & 63), (uint64_t)(hms & 63)};
        r = buf_put(out, "'", 1);
        if (!r)
            r = put_fields(out, f, DT_WIDTHS, "-- ::", 6);
        if (!r)
            r = put_frac(out, (long long)(v & ((1ULL << (8 * fb)) - 1)) * FRAC_UNIT[c->a], c->a);
        if (!r)
            r = buf_put(out, "'", 1);
        break;
    }
    case V_TIME: {
        int32_t v = (int32_t)((uint32_t)le(p, 3) << 8) >> 8;
        int32_t a = v < 0 ? -v : v;
        uint64_t f[3] = {(uint64_t)(a / 10000), (uint64_t)(a / 100 % 100), (uint64_t)(a % 100)};
        r = buf_put(out, v < 0 ? "'-" : "'", v < 0 ? 2 : 1);
        if (!r)
            r = put_fields(out, f, T_WIDTHS, "::", 3);
        if (!r)
            r = buf_put(out, "'", 1);
        break;
    }
    case V_TIME2: {
        fb = (c->a + 1) / 2;
        int shift = (int)(8 * fb);
        long long v = (long long)be(p, (int)need) - ((long long)0x800000 << shift);
        long long a = v < 0 ? -v : v;
        long long hms = a >> shift;
        uint64_t f[3] = {(uint64_t)(hms >> 12 & 1023), (uint64_t)(hms >> 6 & 63), (uint64_t)(hms & 63)};
        r = buf_put(out, v < 0 ? "'-" : "'", v < 0 ? 2 : 1);
        if (!r)
            r = put_fields(out, f, T_WIDTHS, "::", 3);
        if (!r)
            r = put_frac(out, (a & ((1LL << shift) - 1)) * FRAC_UNIT[c->a], c->a);
        if (!r)
            r = buf_put(out, "'", 1);
        break;
    }
    case V_DATE: {
        uint32_t v = (uint32_t)le(p, 3);
        uint64_t f[3] = {v >> 9, v >> 5 & 15, v & 31};
        r = buf_put(out, "'", 1);
        if (!r)
            r = put_fields(out, f, DT_WIDTHS, "::", 3);
        if (!r)
            r = buf_put(out, "'", 1);
        break;
    }
    case V_YEAR:
        r = put_upad(out, p[0] ? p[0] + 1900 : 1900, 4);
        break;
    }
    return r;
}

/* One row image: its "###   @N=value" lines; 0 ok, 1 fallback, -1 error. */
static int put_image(Buf *out, const VCol *plan, const Py_ssize_t *cols, Py_ssize_t ncols, const unsigned char *d,
                     Py_ssize_t *ppos, Py_ssize_t end, int verbose) {
    Py_ssize_t pos = *ppos;
    Py_ssize_t nbytes = (ncols + 7) >> 3;
    if (ncols == 0 || pos + nbytes > end)
        return 1;
    const unsigned char *nulls = d + pos;
    pos += nbytes;
    for (Py_ssize_t k = 0; k < ncols; k++) {
        const VCol *c = &plan[cols[k]];
        if (buf_put(out, c->label, c->label_len) < 0)
            return -1;
        if (nulls[k >> 3] >> (k & 7) & 1) {
            if (buf_put(out, "NULL", 4) < 0)
                return -1;
            if (verbose > 1 && buf_put(out, c->null_comment, c->null_comment_len) < 0)
                return -1;
        } else {
            int r = put_value(out, c, d, &pos, end);
            if (r)
                return r;
            if (verbose > 1 && buf_put(out, c->comment, c->comment_len) < 0)
                return -1;
        }
        if (buf_put(out, "\n", 1) < 0)
            return -1;
    }
    *ppos = pos;
    return 0;
}

/* The "###" lines of d[pos:end] (kind 0 insert, 1 delete, 2 update, whose after-image bitmap
 * is ``ai``) appended to out, the number of rows in *nrows: 0, else 1 (fall back to the
 * Python printer) or -1 (a Python error). */
static int verbose_core(Buf *out, const unsigned char *d, Py_ssize_t pos, Py_ssize_t end, int kind,
                        Py_ssize_t width, const unsigned char *cols_bits, Py_ssize_t cols_len,
                        const unsigned char *ai, Py_ssize_t ai_len, PyObject *plan_obj, const char *header,
                        Py_ssize_t header_len, int verbose, long long *nrows) {
    static const char *clause1[] = {"### SET\n", "### WHERE\n", "### WHERE\n"};
    int status = 1;
    Py_ssize_t nplan = PyTuple_GET_SIZE(plan_obj);
    if (width > nplan || (kind == 2) != (ai != NULL) || pos >= end)
        return 1;
    VCol *plan = PyMem_Calloc(nplan + 1, sizeof(VCol));
    Py_ssize_t *cols = PyMem_Malloc(sizeof(Py_ssize_t) * (width + 1));
    Py_ssize_t *cols_ai = PyMem_Malloc(sizeof(Py_ssize_t) * (width + 1));
    if (!plan || !cols || !cols_ai) {
        PyErr_NoMemory();
        status = -1;
        goto done;
    }
    for (Py_ssize_t i = 0; i < nplan; i++) {
        PyObject *t = PyTuple_GET_ITEM(plan_obj, i);
        char *label, *comment, *null_comment;
        Py_ssize_t label_len, comment_len, null_comment_len;
        if (!PyArg_ParseTuple(t, "illy#y#y#", &plan[i].op, &plan[i].a, &plan[i].b, &label, &label_len, &comment,
                              &comment_len, &null_comment, &null_comment_len)) {
            status = -1;
            goto done;
        }
        plan[i].label = label;
        plan[i].label_len = label_len;
        plan[i].comment = comment;
        plan[i].comment_len = comment_len;
        plan[i].null_comment = null_comment;
        plan[i].null_comment_len = null_comment_len;
    }
    Py_ssize_t ncols = present_columns(cols_bits, cols_len, width, cols);
    Py_ssize_t ncols_ai = ai != NULL ? present_columns(ai, ai_len, width, cols_ai) : 0;
    if (ncols == 0 || (ai != NULL && ncols_ai == 0))
        goto done;
    long long n = 0;
    while (pos < end) {
        if (buf_put(out, header, header_len) < 0 || buf_put(out, clause1[kind], strlen(clause1[kind])) < 0) {
            status = -1;
            goto done;
        }
        int r = put_image(out, plan, cols, ncols, d, &pos, end, verbose);
        if (r) {
            status = r;
            goto done;
        }
        if (kind == 2) {
            if (buf_put(out, "### SET\n", 8) < 0) {
                status = -1;
                goto done;
            }
            r = put_image(out, plan, cols_ai, ncols_ai, d, &pos, end, verbose);
            if (r) {
                status = r;
                goto done;
            }
        }
        n++;
    }
    *nrows = n;
    status = 0;
done:
    PyMem_Free(plan);
    PyMem_Free(cols);
    PyMem_Free(cols_ai);
    return status;
}

static PyObject *verbose_rows(PyObject *self, PyObject *args) {
    Py_buffer view, cols_view, header_view, ai_view;
    Py_ssize_t pos, end, width;
    int kind, verbose;
    PyObject *ai_obj, *plan_obj;
    if (!PyArg_ParseTuple(args, "y*nniny*OO!y*i", &view, &pos, &end, &kind, &width, &cols_view, &ai_obj,
                          &PyTuple_Type, &plan_obj, &header_view, &verbose))
        return NULL;
    int have_ai = ai_obj != Py_None;
    PyObject *result = NULL;
    Buf out = {NULL, 0, 0};
    if (!have_ai || PyObject_GetBuffer(ai_obj, &ai_view, PyBUF_SIMPLE) == 0) {
        long long nrows = 0;
        int r = end > view.len ? 1
                               : verbose_core(&out, view.buf, pos, end, kind, width, cols_view.buf, cols_view.len,
                                              have_ai ? ai_view.buf : NULL, have_ai ? ai_view.len : 0, plan_obj,
                                              header_view.buf, header_view.len, verbose, &nrows);
        if (r == 0) {
            PyObject *text = PyBytes_FromStringAndSize(out.data, out.len);
            if (text != NULL)
                result = Py_BuildValue("(NL)", text, nrows);
        } else if (r == 1) {
            result = Py_NewRef(Py_None);
        }
        if (have_ai)
            PyBuffer_Release(&ai_view);
    }
    PyMem_Free(out.data);
    PyBuffer_Release(&view);
    PyBuffer_Release(&cols_view);
    PyBuffer_Release(&header_view);
    return result;
}

/* ------------------------------------------------------------------ print_groups */

/* The whole-group printer: mariadb-binlog's output of the ordinary OLTP transaction
 * (GTID, then Annotate_rows, Table_map and rows events, then Xid) in one call per run of
 * groups, the exact counterpart of printer.Printer.print_event over those events (the
 * Python families stay the reference; tests compare both on every corpus binlog).  A
 * group is printed whole or not at all: the first one with anything else (another event
 * type, a flag, a table map or rows event the Python printer has not met yet, a CRC
 * mismatch, data the ### printer falls back on) ends the call before it, and the Python
 * printer takes that group event by event. */

typedef struct {
    int checksum, verify, positions, encoded, verbose, row_count, skip_annotate;
    const unsigned char *rows_post; /* post-header lengths of types 23-25, 30-32 */
    Py_ssize_t at;                  /* the "# at" position of every event (.ibb), or -1: its offset */
    PyObject *tables, *table_maps, *timestamp, *accept;
    uint32_t ts_when;               /* the header timestamp last rendered */
    char ts_text[32];
    Py_ssize_t ts_len;
} GroupCfg;

/* The printed GTID session variables: skip_parallel_replication, gtid_domain_id, server_id. */
typedef struct {
    long ap_printed, ap, dom_printed, dom, srv_printed, srv, flags2;
} Session;

static const char *const ROWS_NAMES[3] = {"Write_rows", "Update_rows", "Delete_rows"};
static const char *const ROWS_COMMANDS[3] = {"### INSERT INTO ", "### UPDATE ", "### DELETE FROM "};
static const int ROWS_KIND_CODE[3] = {0, 2, 1}; /* verbose_core's kinds: insert 0, delete 1, update 2 */
static const char DELIM_NL[] = "/*!*/;\n";
/* The largest group (bytes of input) printed whole: a bigger one goes event by event, so
 * its output leaves in the dumper's usual slices instead of being held whole in memory
 * (bulk transactions; their per-event cost is small beside their rows anyway). */
#define MAX_GROUP_BYTES (1 << 20)

static inline int put_s(Buf *b, const char *s) { return buf_put(b, s, (Py_ssize_t)strlen(s)); }
static inline int put_u(Buf *b, uint64_t v) { return put_upad(b, v, 1); }

static int put_hex8(Buf *b, uint32_t v) {
    static const char hex[] = "0123456789abcdef";
    char t[8];
    for (int i = 7; i >= 0; i--, v >>= 4)
        t[i] = hex[v & 15];
    return buf_put(b, t, 8);
}

/* PrintContext.header: "#<time> server id N  end_log_pos N[ CRC32 0x...] " (0, or -1 error). */
static int put_header(Buf *b, GroupCfg *c, const EvHeader *h, uint32_t crc) {
    if (c->ts_len < 0 || h->when != c->ts_when) {
        PyObject *text = PyObject_CallFunction(c->timestamp, "k", (unsigned long)h->when);
        if (text == NULL)
            return -1;
        if (!PyBytes_Check(text) || PyBytes_GET_SIZE(text) >= (Py_ssize_t)sizeof c->ts_text) {
            Py_DECREF(text);
            PyErr_SetString(PyExc_TypeError, "timestamp() must return a short bytes object");
            return -1;
        }
        c->ts_len = PyBytes_GET_SIZE(text);
        memcpy(c->ts_text, PyBytes_AS_STRING(text), c->ts_len);
        c->ts_when = h->when;
        Py_DECREF(text);
    }
    if (buf_put(b, "#", 1) < 0 || buf_put(b, c->ts_text, c->ts_len) < 0 || put_s(b, " server id ") < 0 ||
        put_u(b, h->server_id) < 0 || put_s(b, "  end_log_pos ") < 0 || put_u(b, h->log_pos) < 0)
        return -1;
    if (c->checksum)
        return put_s(b, " CRC32 0x") < 0 || put_hex8(b, crc) < 0 || buf_put(b, " ", 1) < 0 ? -1 : 0;
    return buf_put(b, " ", 1);
}

/* An attribute of a TableInfo of the expected type, borrowed (the info keeps it), or NULL
 * (with no Python error) when it is not that type yet. */
static PyObject *info_attr(PyObject *info, const char *name, PyTypeObject *type) {
    PyObject *v = PyObject_GetAttrString(info, name);
    if (v == NULL) {
        PyErr_Clear();
        return NULL;
    }
    Py_DECREF(v); /* the TableInfo holds a reference for as long as we use it */
    return Py_IS_TYPE(v, type) ? v : NULL;
}

/* The Annotate_rows text as _print_annotate prints it: "#Q> " before every non-empty line. */
static int put_annotate(Buf *b, const unsigned char *t, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t j = i;
        while (j < n && t[j] != '\n' && t[j] != '\r')
            j++;
        if (j > i && (put_s(b, "#Q> ") < 0 || buf_put(b, (const char *)t + i, j - i) < 0 || buf_put(b, "\n", 1) < 0))
            return -1;
        i = j + 1;
    }
    return 0;
}

/* accept(domain, server, seq) of a group's GTID: 1 go on, 0 stop, -1 a Python error. */
static int gtid_accepted(PyObject *accept, const EvGtid *g, uint32_t server) {
    PyObject *go = PyObject_CallFunction(accept, "kkK", (unsigned long)g->domain_id, (unsigned long)server,
                                         (unsigned long long)g->seq_no);
    if (go == NULL)
        return -1;
    int more = PyObject_IsTrue(go);
    Py_DECREF(go);
    return more;
}

/* A group writer of write_groups: the group at d[pos] (ending by limit) into out: 0 (*gend its
 * end, *g and *server its GTID), 1 not for this path (out may hold part of it), -1 error. */
typedef int (*GroupWriter)(void *state, const unsigned char *d, Py_ssize_t pos, Py_ssize_t limit, Buf *out,
                           Py_ssize_t *gend, EvGtid *g, uint32_t *server);
/* Called when accept let the group just written stay. */
typedef void (*GroupKept)(void *state, const EvGtid *g);

/* The loop of print_groups and json_groups: groups from *ppos while they end by limit, none
 * started at or past soft, each written whole or not at all and kept only when
 * accept(domain, server, seq) says reading goes on (*stopped when it did not); 0, or -1 with
 * a Python error. */
static int write_groups(GroupWriter write, GroupKept kept, void *state, PyObject *accept, const unsigned char *d,
                        Py_ssize_t *ppos, Py_ssize_t limit, Py_ssize_t soft, Buf *out, int *stopped) {
    Py_ssize_t pos = *ppos;
    while (pos < soft) {
        Py_ssize_t mark = out->len, gend = 0;
        EvGtid g = {0};
        uint32_t server = 0;
        int st = write(state, d, pos, limit, out, &gend, &g, &server);
        if (st < 0)
            return -1;
        if (st) {
            out->len = mark;
            break;
        }
        int more = gtid_accepted(accept, &g, server);
        if (more < 0)
            return -1;
        if (!more) {
            out->len = mark;
            *stopped = 1;
            break;
        }
        kept(state, &g);
        pos = gend;
    }
    *ppos = pos;
    return 0;
}

/* One group at d[pos:limit] into out (head, body and tail are the tool's caches, empty on
 * entry and on success): 0 printed (*gend its end, *gtid its id), 1 not for this path
 * (out may hold part of it), -1 a Python error. */
static int print_group(GroupCfg *c, Session *s, const unsigned char *d, Py_ssize_t pos, Py_ssize_t limit, Buf *out,
                       Buf *head, Buf *body, Buf *tail, Py_ssize_t *gend, EvGtid *gtid, uint32_t *gserver) {
    int crc_len = c->checksum ? 4 : 0;
    /* First only the headers: a group too big or with another event is not rendered at all. */
    Py_ssize_t group_limit = ev_ordinary_group_end(d, pos, limit - pos > MAX_GROUP_BYTES ? pos + MAX_GROUP_BYTES : limit);
    if (group_limit < 0)
        return 1;
    const unsigned char *annotate = NULL; /* the kept Annotate_rows event, printed with the next Table_map */
    EvHeader ah;
    uint32_t acrc = 0;
    long long row_events = 0;
    int first = 1;
    for (;;) {
        if (pos + EV_HEADER_LEN > group_limit)
            return 1;
        const unsigned char *p = d + pos;
        EvHeader h;
        ev_header(p, &h);
        Py_ssize_t end = pos + (Py_ssize_t)h.length;
        if (h.length < 23 || end > group_limit || (h.flags & EV_SKIP_REPLICATION_F))
            return 1;
        uint32_t crc = 0;
        if (crc_len) {
            crc = le32(d + end - 4);
            if (c->verify && crc32_of(p, h.length - 4) != crc)
                return 1;
        }
        const unsigned char *b = p + EV_HEADER_LEN;
        Py_ssize_t n = (Py_ssize_t)h.length - EV_HEADER_LEN - crc_len;
        if (first != (h.type == EV_GTID))
            return 1;
        if (c->positions && (put_s(out, "# at ") < 0 || put_u(out, c->at >= 0 ? c->at : pos) < 0 ||
                             buf_put(out, "\n", 1) < 0))
            return -1;
        if (h.type == EV_GTID) {
            EvGtid g;
            if (ev_gtid(b, n, &g) || (g.flags2 & EV_FL_STANDALONE))
                return 1;
            if (put_header(out, c, &h, crc) < 0 || put_s(out, "\tGTID ") < 0 || put_u(out, g.domain_id) < 0 ||
                buf_put(out, "-", 1) < 0 || put_u(out, h.server_id) < 0 || buf_put(out, "-", 1) < 0 ||
                put_u(out, g.seq_no) < 0)
                return -1;
            if ((g.flags2 & EV_FL_GROUP_COMMIT_ID) && (put_s(out, " cid=") < 0 || put_u(out, g.commit_id) < 0))
                return -1;
            if (((g.flags2 & EV_FL_DDL) && put_s(out, " ddl") < 0) ||
                ((g.flags2 & EV_FL_TRANSACTIONAL) && put_s(out, " trans") < 0) ||
                ((g.flags2 & EV_FL_WAITED) && put_s(out, " waited") < 0) || buf_put(out, "\n", 1) < 0)
                return -1;
            long allow = (g.flags2 & EV_FL_ALLOW_PARALLEL) != 0;
            if (!s->ap_printed || s->ap != allow) {
                if (put_s(out, "/*M!100101 SET @@session.skip_parallel_replication=") < 0 ||
                    put_u(out, allow ? 0 : 1) < 0 || put_s(out, "*/") < 0 || put_s(out, DELIM_NL) < 0)
                    return -1;
                s->ap = allow;
                s->ap_printed = 1;
            }
            if (!s->dom_printed || s->dom != (long)g.domain_id) {
                if (put_s(out, "/*M!100001 SET @@session.gtid_domain_id=") < 0 || put_u(out, g.domain_id) < 0 ||
                    put_s(out, "*/") < 0 || put_s(out, DELIM_NL) < 0)
                    return -1;
                s->dom = (long)g.domain_id;
                s->dom_printed = 1;
            }
            if (!s->srv_printed || s->srv != (long)h.server_id) {
                if (put_s(out, "/*M!100001 SET @@session.server_id=") < 0 || put_u(out, h.server_id) < 0 ||
                    put_s(out, "*/") < 0 || put_s(out, DELIM_NL) < 0)
                    return -1;
                s->srv = (long)h.server_id;
                s->srv_printed = 1;
            }
            if (put_s(out, "/*M!100001 SET @@session.gtid_seq_no=") < 0 || put_u(out, g.seq_no) < 0 ||
                put_s(out, "*/") < 0 || put_s(out, DELIM_NL) < 0 || put_s(out, "START TRANSACTION\n/*!*/;\n") < 0)
                return -1;
            s->flags2 = g.flags2;
            *gtid = g;
            *gserver = h.server_id;
            first = 0;
        } else if (h.type == EV_ANNOTATE_ROWS) {
            if (!c->skip_annotate) {
                annotate = p;
                ah = h;
                acrc = crc;
            }
        } else if (h.type == EV_TABLE_MAP) {
            PyObject *key = PyBytes_FromStringAndSize((const char *)b, n);
            if (key == NULL)
                return -1;
            PyObject *info = PyDict_GetItemWithError(c->tables, key);
            Py_DECREF(key);
            if (info == NULL)
                return PyErr_Occurred() ? -1 : 1;
            PyObject *line = info_attr(info, "line", &PyBytes_Type);
            PyObject *table_id = info_attr(info, "table_id", &PyLong_Type);
            if (line == NULL || table_id == NULL)
                return 1;
            if (annotate != NULL) {
                const unsigned char *t = annotate + EV_HEADER_LEN;
                Py_ssize_t tn = (Py_ssize_t)ah.length - EV_HEADER_LEN - crc_len;
                if (put_header(head, c, &ah, acrc) < 0 || put_s(head, "\tAnnotate_rows:\n") < 0 ||
                    put_annotate(head, t, tn) < 0)
                    return -1;
                annotate = NULL;
            }
            if (put_header(head, c, &h, crc) < 0 || buf_put(head, PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line)) < 0)
                return -1;
            if (c->encoded && buf_b64(body, p, h.length) < 0)
                return -1;
            if ((c->verbose || c->row_count) && PyDict_SetItem(c->table_maps, table_id, info) < 0)
                return -1;
            if (buf_put(out, head->data, head->len) < 0)
                return -1;
            head->len = 0;
        } else if (ev_rows_op(h.type) >= 0) {
            int op = ev_rows_op(h.type);
            EvRows r;
            int post = c->rows_post[h.type <= 25 ? op : 3 + op];
            if (ev_rows(b, n, post, op == 1, &r))
                return 1;
            PyObject *id = PyLong_FromUnsignedLongLong(r.table_id);
            if (id == NULL)
                return -1;
            PyObject *info = PyDict_GetItemWithError(c->table_maps, id);
            Py_DECREF(id);
            if (info == NULL)
                return PyErr_Occurred() ? -1 : 1;
            int stmt_end = r.flags & 1;
            if (put_header(head, c, &h, crc) < 0 || buf_put(head, "\t", 1) < 0 || put_s(head, ROWS_NAMES[op]) < 0 ||
                put_s(head, ": table id ") < 0 || put_u(head, r.table_id) < 0 ||
                (stmt_end && put_s(head, " flags: STMT_END_F") < 0) || buf_put(head, "\n", 1) < 0)
                return -1;
            if (c->encoded && buf_b64(body, p, h.length) < 0)
                return -1;
            const unsigned char *rows = b + r.rows_at;
            Py_ssize_t rows_len = n - r.rows_at;
            if (c->verbose) {
                PyObject *plan = info_attr(info, "verbose_plan", &PyTuple_Type);
                PyObject *names = info_attr(info, "names", &PyBytes_Type);
                if (plan == NULL || names == NULL || rows_len == 0)
                    return 1;
                char hdr[512];
                Py_ssize_t cmd_len = (Py_ssize_t)strlen(ROWS_COMMANDS[op]), names_len = PyBytes_GET_SIZE(names);
                if (cmd_len + names_len + 1 > (Py_ssize_t)sizeof hdr)
                    return 1;
                memcpy(hdr, ROWS_COMMANDS[op], cmd_len);
                memcpy(hdr + cmd_len, PyBytes_AS_STRING(names), names_len);
                hdr[cmd_len + names_len] = '\n';
                long long nrows = 0;
                int st = verbose_core(tail, rows, 0, rows_len, ROWS_KIND_CODE[op], r.width, r.cols, r.nbytes,
                                      r.cols_ai, r.nbytes, plan, hdr, cmd_len + names_len + 1, c->verbose, &nrows);
                if (st)
                    return st;
                row_events += nrows;
            } else if (c->row_count) {
                if (op == 0 && rows_len == 0) {
                    row_events += 1;
                } else {
                    PyObject *sizes = info_attr(info, "sizes", &PyTuple_Type);
                    if (sizes == NULL)
                        return 1;
                    long long nrows = count_core(rows, 0, rows_len, sizes, r.width, r.cols, r.nbytes, r.cols_ai,
                                                 r.nbytes);
                    if (nrows < 0)
                        return -1;
                    row_events += nrows;
                }
            }
            if (stmt_end) {
                annotate = NULL;
                if (buf_put(out, head->data, head->len) < 0 ||
                    (c->encoded && (put_s(out, "\nBINLOG '\n") < 0 || buf_put(out, body->data, body->len) < 0 ||
                                    put_s(out, "'/*!*/;\n") < 0)) ||
                    buf_put(out, tail->data, tail->len) < 0)
                    return -1;
                if (c->row_count &&
                    (put_s(out, "# Number of rows: ") < 0 || put_u(out, (uint64_t)row_events) < 0 || buf_put(out, "\n", 1) < 0))
                    return -1;
                head->len = body->len = tail->len = 0;
                row_events = 0;
            }
        } else if (h.type == EV_XID) {
            if (n < 8 || head->len || body->len || tail->len || annotate != NULL)
                return 1;
            if (put_header(out, c, &h, crc) < 0 || put_s(out, "\tXid = ") < 0 || put_u(out, le64(b)) < 0 ||
                put_s(out, "\nCOMMIT/*!*/;\n") < 0)
                return -1;
            *gend = end;
            return 0;
        } else {
            return 1;
        }
        pos = end;
    }
}

/* print_groups' state for write_groups: the session variables as kept and as the group
 * being written leaves them, and the tool's three caches. */
typedef struct {
    GroupCfg *c;
    Session kept, trial;
    Buf head, body, tail;
} TextGroups;

static int text_group(void *state, const unsigned char *d, Py_ssize_t pos, Py_ssize_t limit, Buf *out,
                      Py_ssize_t *gend, EvGtid *g, uint32_t *server) {
    TextGroups *t = state;
    t->trial = t->kept;
    t->head.len = t->body.len = t->tail.len = 0;
    return print_group(t->c, &t->trial, d, pos, limit, out, &t->head, &t->body, &t->tail, gend, g, server);
}

static void text_kept(void *state, const EvGtid *g) {
    (void)g;
    TextGroups *t = state;
    t->kept = t->trial;
}

/* print_groups(data, pos, limit, soft, cfg, session, tables, table_maps, timestamp, accept)
 *   -> (pos, text, stopped)
 * Prints groups from pos while they end by limit, starting none at or past soft.  cfg is
 * (checksum, verify, positions, encoded, verbose, row_count, skip_annotate, rows_post, at);
 * session the list of the GTID session variables (updated); tables the printer's Table_map
 * cache by body bytes; table_maps its maps by table id (updated); timestamp(when) the
 * header's time text; accept(domain, server, seq) is called before a group is printed and
 * says whether reading goes on (stopped True: it did not, and the group was not printed). */
static PyObject *print_groups(PyObject *self, PyObject *args) {
    Py_buffer view, post_view;
    Py_ssize_t pos, limit, soft;
    PyObject *session_obj;
    GroupCfg c;
    c.ts_len = -1;
    c.ts_when = 0;
    if (!PyArg_ParseTuple(args, "y*nnn(ppppippy*n)O!O!O!OO", &view, &pos, &limit, &soft, &c.checksum, &c.verify,
                          &c.positions, &c.encoded, &c.verbose, &c.row_count, &c.skip_annotate, &post_view, &c.at,
                          &PyList_Type, &session_obj, &PyDict_Type, &c.tables, &PyDict_Type, &c.table_maps,
                          &c.timestamp, &c.accept))
        return NULL;
    PyObject *result = NULL;
    Buf out = {NULL, 0, 0};
    Session s;
    long *fields[7] = {&s.ap_printed, &s.ap, &s.dom_printed, &s.dom, &s.srv_printed, &s.srv, &s.flags2};
    int stopped = 0;
    if (post_view.len != 6 || PyList_GET_SIZE(session_obj) != 7) {
        PyErr_SetString(PyExc_ValueError, "print_groups: 6 post-header lengths and 7 session fields");
        goto done;
    }
    c.rows_post = post_view.buf;
    for (int i = 0; i < 7; i++) {
        *fields[i] = PyLong_AsLong(PyList_GET_ITEM(session_obj, i));
        if (*fields[i] == -1 && PyErr_Occurred())
            goto done;
    }
    if (limit > view.len)
        limit = view.len;
    TextGroups t = {&c, s, s, {NULL, 0, 0}, {NULL, 0, 0}, {NULL, 0, 0}};
    int failed = write_groups(text_group, text_kept, &t, c.accept, view.buf, &pos, limit, soft, &out, &stopped);
    PyMem_Free(t.head.data);
    PyMem_Free(t.body.data);
    PyMem_Free(t.tail.data);
    if (failed)
        goto done;
    s = t.kept;
    for (int i = 0; i < 7; i++) {
        PyObject *v = PyLong_FromLong(*fields[i]);
        if (v == NULL || PyList_SetItem(session_obj, i, v) < 0)
            goto done;
    }
    result = Py_BuildValue("(ny#O)", pos, out.data ? out.data : "", out.len, stopped ? Py_True : Py_False);
done:
    PyMem_Free(out.data);
    PyBuffer_Release(&view);
    PyBuffer_Release(&post_view);
    return result;
}

/* ------------------------------------------------------------------ json_groups */

/* The JSON writer's twin of print_groups: jsonout.JsonSink.print_event over whole ordinary
 * groups, one JSON object per event and line, rows rendered from their images as
 * jsonout.json_value renders the row decoder's values.  The same all-or-nothing rule: a
 * group with anything the Python writer has to do itself (a table map it has not met, a
 * table whose plan is None, a value whose JSON form is not one of the simple ones below)
 * is left to it, whole. */

enum { J_SIGNED = 0, J_UNSIGNED = 1 };        /* V_INT */
/* V_STRING: UTF-8 text or bytes (validity decides), always bytes, or text in a single-byte
 * ASCII-compatible charset (latin1 ...): ASCII values only, others go to the Python writer. */
enum { J_TEXT = 0, J_BINARY = 1, J_ASCII = 2 };

typedef struct {
    int op;
    long a, b;
    int kind;
    const char *key;       /* '"name": ' */
    Py_ssize_t key_len;
    PyObject *members;     /* ENUM/SET: tuple of JSON strings (bytes), or NULL: the number */
    int is_set;
} JCol;

/* Output dialects of the value renderer: jsonout.json_value and debezium.encode_value of the
 * row decoder's values. */
enum { D_JSON = 0, D_DEBEZIUM = 1 };

typedef struct GroupEv GroupEv;
/* A writer of walk_group's events: 0, 1 not for this path, -1 error. */
typedef int (*EventWriter)(void *writer, const GroupEv *e, Buf *out);

/* The group walk of json_groups and debezium_groups: what it reads with (the writer's table
 * maps), the GTID text of the group being walked and of the last one kept. */
typedef struct {
    int checksum, verify;
    const unsigned char *rows_post;
    PyObject *tables;      /* Table_map body -> (table_id, its fields, view) */
    PyObject *views;       /* the writer's views by table id (updated) */
    const char *plan_attr; /* the view attribute holding the writer's rows plan */
    EventWriter write;
    void *writer;
    char gtid[64];         /* the group being walked: "domain-server-seq" */
    Py_ssize_t gtid_len;
    char last[64];         /* the last group kept, with its flags2 (-1: none) */
    Py_ssize_t last_len;
    long flags2;
} GroupWalk;

typedef struct {
    GroupWalk *walk;
    const char *file;      /* the "file" value, JSON */
    Py_ssize_t file_len;
    PyObject *types;       /* type code -> '"type": ..., "type_code": N' */
    uint32_t ts_when;
    char ts_text[64];
    Py_ssize_t ts_len;
} JsonCfg;

/* JSON string of UTF-8 text (ensure_ascii=False: only '"', '\\' and controls escaped). */
static int put_json_str(Buf *b, const unsigned char *s, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    if (buf_reserve(b, n * 6 + 2) < 0)
        return -1;
    char *q = b->data + b->len;
    *q++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *q++ = (char)c;
            continue;
        }
        *q++ = '\\';
        switch (c) {
        case '"': *q++ = '"'; break;
        case '\\': *q++ = '\\'; break;
        case '\n': *q++ = 'n'; break;
        case '\r': *q++ = 'r'; break;
        case '\t': *q++ = 't'; break;
        case '\b': *q++ = 'b'; break;
        case '\f': *q++ = 'f'; break;
        default:
            *q++ = 'u'; *q++ = '0'; *q++ = '0'; *q++ = hex[c >> 4]; *q++ = hex[c & 15];
        }
    }
    *q++ = '"';
    b->len = q - b->data;
    return 0;
}

/* Strict UTF-8, as Python's decoder takes it (no surrogates, no overlongs, <= U+10FFFF). */
static int utf8_valid(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return 0;
        if (i + len > n)
            return 0;
        for (int k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += len;
    }
    return 1;
}

/* base64.b64encode of bytes (one line, no newline) as a JSON string: {"base64": "..."} in
 * the JSON dialect, the bare string in Debezium's (binary.handling.mode=base64). */
static int put_b64(Buf *b, const unsigned char *s, Py_ssize_t n, int dialect) {
    if (put_s(b, dialect == D_JSON ? "{\"base64\": \"" : "\"") < 0 || buf_reserve(b, (n + 2) / 3 * 4 + 2) < 0)
        return -1;
    char *q = b->data + b->len;
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
        memcpy(q, &B64_PAIRS[v >> 12], 2);
        memcpy(q + 2, &B64_PAIRS[v & 4095], 2);
        q += 4;
    }
    if (i < n) {
        uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
        q[0] = B64[v >> 18];
        q[1] = B64[v >> 12 & 63];
        q[2] = i + 1 < n ? B64[v >> 6 & 63] : '=';
        q[3] = '=';
        q += 4;
    }
    b->len = q - b->data;
    return put_s(b, dialect == D_JSON ? "\"}" : "\"");
}

/* Text or bytes as jsonout.text_or_bytes: a string when valid UTF-8, else base64. */
static int put_text_or_bytes(Buf *b, const unsigned char *s, Py_ssize_t n, int dialect) {
    return utf8_valid(s, n) ? put_json_str(b, s, n) : put_b64(b, s, n, dialect);
}

/* ".ffffff" when the microseconds are not zero (jsonout._frac, MysqlTime.__str__). */
static int put_usec(Buf *b, long long usec) {
    if (!usec)
        return 0;
    return buf_put(b, ".", 1) < 0 || put_upad(b, (uint64_t)usec, 6) < 0 ? -1 : 0;
}

/* A packed DECIMAL as the server prints it, every stored digit (jsonout._decimal_json); 1 (fall
 * back) for a declaration or data no server writes. */
static int put_json_decimal(Buf *b, const unsigned char *p, long precision, long scale) {
    char text[MB_DECIMAL_TEXT_MAX];
    int len = mb_decimal_text(p, precision, scale, text);
    if (len < 0)
        return 1;
    if (buf_put(b, "\"", 1) < 0 || buf_put(b, text, len) < 0 || buf_put(b, "\"", 1) < 0)
        return -1;
    return 0;
}

/* ISO 8601 UTC of epoch seconds (jsonout._time_fields / _timestamp_json). */
static int put_utc(Buf *b, int64_t seconds) {
    time_t t = (time_t)seconds;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 1)
        return 1;
    uint64_t f[6] = {(uint64_t)tm.tm_year + 1900, (uint64_t)tm.tm_mon + 1, (uint64_t)tm.tm_mday,
                     (uint64_t)tm.tm_hour, (uint64_t)tm.tm_min, (uint64_t)tm.tm_sec};
    return put_fields(b, f, DT_WIDTHS, "--T::", 6) < 0 ? -1 : 0;
}

/* Days from 1970-01-01 to a proleptic Gregorian date (columns.epoch_days): 0 and *days set,
 * or 1 for a zero date or one no calendar has. */
static int epoch_days(long long year, long month, long day, long long *days) {
    static const int MDAYS[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12 || day < 1 || day > 31)
        return 1;
    int leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    if (day > (month == 2 && leap ? 29 : MDAYS[month - 1]))
        return 1;
    long long y = year - (month <= 2);
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    *days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    return 0;
}

/* Python's a // b for b > 0. */
static inline long long floor_div(long long a, long long b) {
    long long q = a / b;
    return q - (a % b < 0);
}

/* A BIT value in Debezium's encoding: a boolean for BIT(1), else base64 of its bytes
 * little-endian (packed.uint_image), the stored image being big-endian. */
static int put_debezium_bits(Buf *out, const unsigned char *p, Py_ssize_t nbytes, long nbits) {
    if (nbits == 1)
        return put_s(out, be(p, (int)nbytes) ? "true" : "false");
    unsigned char le_image[8];
    for (Py_ssize_t i = 0; i < nbytes; i++)
        le_image[i] = p[nbytes - 1 - i];
    return put_b64(out, le_image, nbytes, D_DEBEZIUM);
}

/* A SET's member names joined by commas, as one JSON string (Debezium); the members are
 * JSON strings, whose escapes join as the text does. */
static int put_set_text(Buf *out, PyObject *members, uint64_t v) {
    if (buf_put(out, "\"", 1) < 0)
        return -1;
    int first = 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(members) && i < 64; i++) {
        if (!(v >> i & 1))
            continue;
        PyObject *m = PyTuple_GET_ITEM(members, i);
        if ((!first && buf_put(out, ",", 1) < 0) || buf_put(out, PyBytes_AS_STRING(m) + 1, PyBytes_GET_SIZE(m) - 2) < 0)
            return -1;
        first = 0;
    }
    return buf_put(out, "\"", 1);
}

/* One value as jsonout.json_value (D_JSON) or debezium.encode_value (D_DEBEZIUM) writes the
 * row decoder's value: 0, 1 fall back, -1 error. */
static int put_json_value(Buf *out, const JCol *c, const unsigned char *d, Py_ssize_t *ppos, Py_ssize_t end,
                          int dialect) {
    Py_ssize_t pos = *ppos, need;
    long fb;
    switch (c->op) {
    case V_INT: need = c->a; break;
    case V_DECIMAL: need = mb_decimal_size(c->a, c->b); break;
    case V_FLOAT: need = 4; break;
    case V_DOUBLE: need = 8; break;
    case V_BIT: need = (c->a + 7) / 8; break;
    case V_SET: case V_ENUM: need = c->a; break;
    case V_TIMESTAMP2: need = 4 + (c->a + 1) / 2; break;
    case V_DATETIME2: need = 5 + (c->a + 1) / 2; break;
    case V_TIME2: need = 3 + (c->a + 1) / 2; break;
    case V_DATE: need = 3; break;
    case V_YEAR: need = 1; break;
    case V_STRING: {
        if (pos + c->a > end)
            return 1;
        uint64_t len = le(d + pos, (int)c->a);
        if ((uint64_t)(end - pos - c->a) < len)
            return 1;
        *ppos = pos + c->a + (Py_ssize_t)len;
        const unsigned char *s = d + pos + c->a;
        if (c->kind == J_ASCII) {
            for (uint64_t i = 0; i < len; i++)
                if (s[i] >= 0x80)
                    return 1;
            return put_json_str(out, s, (Py_ssize_t)len) < 0 ? -1 : 0;
        }
        return (c->kind == J_BINARY ? put_b64(out, s, (Py_ssize_t)len, dialect)
                                    : put_text_or_bytes(out, s, (Py_ssize_t)len, dialect)) < 0 ? -1 : 0;
    }
    default: return 1;
    }
    if (pos + need > end)
        return 1;
    const unsigned char *p = d + pos;
    *ppos = pos + need;
    switch (c->op) {
    case V_INT: {
        int bits = (int)(8 * c->a);
        uint64_t u = le(p, (int)c->a);
        if (c->kind == J_UNSIGNED)
            return put_u(out, u);
        int64_t v = bits == 64 ? (int64_t)u : (int64_t)(u << (64 - bits)) >> (64 - bits);
        return put_i64(out, v);
    }
    case V_DECIMAL:
        return put_json_decimal(out, p, c->a, c->b);
    case V_FLOAT: case V_DOUBLE: {
        double v;
        if (c->op == V_FLOAT) {
            float f;
            memcpy(&f, p, 4);
            v = (double)f;
        } else {
            memcpy(&v, p, 8);
        }
        char text[MB_DOUBLE_TEXT_MAX];
        int n = mb_double_repr(v, text);
        if (n < 0)
            return 1; /* NaN, infinities: strings, the Python writer's */
        return buf_put(out, text, n);
    }
    case V_BIT:
        if (dialect == D_DEBEZIUM)
            return put_debezium_bits(out, p, need, c->a);
        return put_u(out, be(p, (int)need));
    case V_ENUM: case V_SET: {
        uint64_t v = le(p, (int)need);
        if (c->members == NULL)
            return put_u(out, v);
        Py_ssize_t nm = PyTuple_GET_SIZE(c->members);
        if (!c->is_set) {
            if (v == 0 || v > (uint64_t)nm)
                return put_u(out, v);
            PyObject *m = PyTuple_GET_ITEM(c->members, (Py_ssize_t)v - 1);
            return buf_put(out, PyBytes_AS_STRING(m), PyBytes_GET_SIZE(m));
        }
        if (dialect == D_DEBEZIUM)
            return put_set_text(out, c->members, v);
        if (buf_put(out, "[", 1) < 0)
            return -1;
        int first = 1;
        for (Py_ssize_t i = 0; i < nm && i < 64; i++) {
            if (!(v >> i & 1))
                continue;
            PyObject *m = PyTuple_GET_ITEM(c->members, i);
            if ((!first && buf_put(out, ", ", 2) < 0) || buf_put(out, PyBytes_AS_STRING(m), PyBytes_GET_SIZE(m)) < 0)
                return -1;
            first = 0;
        }
        return buf_put(out, "]", 1);
    }
    case V_TIMESTAMP2: {
        fb = (c->a + 1) / 2;
        uint64_t v = be(p, (int)need);
        uint64_t secs = v >> (8 * fb);
        long long usec = (long long)(v & ((1ULL << (8 * fb)) - 1)) * FRAC_UNIT[c->a];
        if (secs == 0 && usec == 0)
            return put_s(out, dialect == D_JSON ? "\"0000-00-00T00:00:00Z\"" : "null");
        if (dialect == D_DEBEZIUM && usec > 999999)
            return put_s(out, "null"); /* no datetime has it: null, as an invalid date */
        int r;
        if (buf_put(out, "\"", 1) < 0 || (r = put_utc(out, (int64_t)secs)) < 0)
            return -1;
        if (r)
            return 1;
        return put_usec(out, usec) < 0 || put_s(out, "Z\"") < 0 ? -1 : 0;
    }
    case V_DATETIME2: {
        fb = (c->a + 1) / 2;
        uint64_t v = be(p, (int)need);
        long long intpart = (long long)(v >> (8 * fb)) - 0x8000000000LL;
        if (intpart < 0)
            intpart = -intpart;
        long long ymd = intpart >> 17, ym = ymd >> 5, hms = intpart & 0x1FFFF;
        uint64_t f[6] = {(uint64_t)(ym / 13), (uint64_t)(ym % 13), (uint64_t)(ymd & 31), (uint64_t)(hms >> 12),
                         (uint64_t)(hms >> 6 & 63), (uint64_t)(hms & 63)};
        long long usec = (long long)(v & ((1ULL << (8 * fb)) - 1)) * FRAC_UNIT[c->a];
        if (dialect == D_DEBEZIUM) { /* Timestamp (ms) up to fsp 3, MicroTimestamp (us) above */
            long long days;
            if (epoch_days((long long)f[0], (long)f[1], (long)f[2], &days) || f[3] > 23 || f[4] > 59 || f[5] > 59 ||
                usec > 999999)
                return put_s(out, "null");
            long long micros = ((days * 24 + (long long)f[3]) * 60 + (long long)f[4]) * 60000000LL +
                               (long long)f[5] * 1000000LL + usec;
            return put_i64(out, c->a > 3 ? micros : floor_div(micros, 1000));
        }
        return buf_put(out, "\"", 1) < 0 || put_fields(out, f, DT_WIDTHS, "--T::", 6) < 0 || put_usec(out, usec) < 0 ||
                       buf_put(out, "\"", 1) < 0 ? -1 : 0;
    }
    case V_TIME2: {
        fb = (c->a + 1) / 2;
        int shift = (int)(8 * fb);
        long long v = (long long)be(p, (int)need) - ((long long)0x800000 << shift);
        long long a = v < 0 ? -v : v;
        long long hms = a >> shift;
        uint64_t f[3] = {(uint64_t)(hms >> 12 & 1023), (uint64_t)(hms >> 6 & 63), (uint64_t)(hms & 63)};
        long long usec = (a & ((1LL << shift) - 1)) * FRAC_UNIT[c->a];
        if (dialect == D_DEBEZIUM) { /* MicroTime: signed microseconds */
            long long micros = ((long long)f[0] * 3600 + (long long)f[1] * 60 + (long long)f[2]) * 1000000LL + usec;
            return put_i64(out, v < 0 ? -micros : micros);
        }
        return buf_put(out, v < 0 ? "\"-" : "\"", v < 0 ? 2 : 1) < 0 || put_fields(out, f, T_WIDTHS, "::", 3) < 0 ||
                       put_usec(out, usec) < 0 || buf_put(out, "\"", 1) < 0 ? -1 : 0;
    }
    case V_DATE: {
        uint32_t v = (uint32_t)le(p, 3);
        uint64_t f[3] = {v >> 9, v >> 5 & 15, v & 31};
        if (dialect == D_DEBEZIUM) { /* Date: days since the epoch */
            long long days;
            return epoch_days((long long)f[0], (long)f[1], (long)f[2], &days) ? put_s(out, "null") : put_i64(out, days);
        }
        return buf_put(out, "\"", 1) < 0 || put_fields(out, f, DT_WIDTHS, "--", 3) < 0 || buf_put(out, "\"", 1) < 0 ? -1 : 0;
    }
    case V_YEAR:
        return put_u(out, p[0] ? p[0] + 1900 : 0);
    }
    return 1;
}

/* One row image as TableView.image (or DebeziumWriter._image): {"column": value, ...},
 * absent columns left out; spans, when given, gets each present column's value text as
 * (offset in out, length) at 2 * its index. */
static int put_json_image(Buf *out, const JCol *plan, const Py_ssize_t *cols, Py_ssize_t ncols, const unsigned char *d,
                          Py_ssize_t *ppos, Py_ssize_t end, int dialect, Py_ssize_t *spans) {
    Py_ssize_t pos = *ppos;
    Py_ssize_t nbytes = (ncols + 7) >> 3;
    if (ncols == 0 || pos + nbytes > end)
        return 1;
    const unsigned char *nulls = d + pos;
    pos += nbytes;
    if (buf_put(out, "{", 1) < 0)
        return -1;
    for (Py_ssize_t k = 0; k < ncols; k++) {
        const JCol *c = &plan[cols[k]];
        if ((k && buf_put(out, ", ", 2) < 0) || buf_put(out, c->key, c->key_len) < 0)
            return -1;
        Py_ssize_t at = out->len;
        if (nulls[k >> 3] >> (k & 7) & 1) {
            if (buf_put(out, "null", 4) < 0)
                return -1;
        } else {
            int r = put_json_value(out, c, d, &pos, end, dialect);
            if (r)
                return r;
        }
        if (spans != NULL) {
            spans[2 * cols[k]] = at;
            spans[2 * cols[k] + 1] = out->len - at;
        }
    }
    *ppos = pos;
    return buf_put(out, "}", 1);
}

/* The parsed JSON plans of the last tables met, by plan object (each entry holds a reference
 * to its plan, whose bytes the JCols point into): a plan is parsed once, not per event. */
#define JPLAN_CACHE 16
static struct {
    PyObject *plan;
    JCol *cols;
} jplan_cache[JPLAN_CACHE];
static int jplan_next;

/* The JCols of plan_obj (borrowed from the cache), or NULL with a Python error. */
static const JCol *json_plan(PyObject *plan_obj) {
    for (int i = 0; i < JPLAN_CACHE; i++)
        if (jplan_cache[i].plan == plan_obj)
            return jplan_cache[i].cols;
    Py_ssize_t nplan = PyTuple_GET_SIZE(plan_obj);
    JCol *plan = PyMem_Calloc(nplan + 1, sizeof(JCol));
    if (plan == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nplan; i++) {
        PyObject *t = PyTuple_GET_ITEM(plan_obj, i), *members;
        char *key;
        if (!PyArg_ParseTuple(t, "illiy#Op", &plan[i].op, &plan[i].a, &plan[i].b, &plan[i].kind, &key,
                              &plan[i].key_len, &members, &plan[i].is_set)) {
            PyMem_Free(plan);
            return NULL;
        }
        plan[i].key = key;
        plan[i].members = PyTuple_Check(members) ? members : NULL;
    }
    int slot = jplan_next;
    jplan_next = (jplan_next + 1) % JPLAN_CACHE;
    Py_XDECREF(jplan_cache[slot].plan);
    PyMem_Free(jplan_cache[slot].cols);
    Py_INCREF(plan_obj);
    jplan_cache[slot].plan = plan_obj;
    jplan_cache[slot].cols = plan;
    return plan;
}

/* The "rows" list of one event: 0, 1 fall back, -1 error. */
static int put_json_rows(Buf *out, PyObject *plan_obj, int op, const EvRows *r, const unsigned char *d, Py_ssize_t end) {
    Py_ssize_t nplan = PyTuple_GET_SIZE(plan_obj);
    if (r->width != nplan)
        return 1;
    int status = 1;
    const JCol *plan = json_plan(plan_obj);
    Py_ssize_t *cols = PyMem_Malloc(sizeof(Py_ssize_t) * (nplan + 1));
    Py_ssize_t *cols_ai = PyMem_Malloc(sizeof(Py_ssize_t) * (nplan + 1));
    if (plan == NULL || !cols || !cols_ai) {
        if (plan != NULL)
            PyErr_NoMemory();
        status = -1;
        goto done;
    }
    Py_ssize_t ncols = present_columns(r->cols, r->nbytes, r->width, cols);
    Py_ssize_t ncols_ai = r->cols_ai != NULL ? present_columns(r->cols_ai, r->nbytes, r->width, cols_ai) : 0;
    Py_ssize_t pos = 0;
    if (end == 0 || ncols == 0 || (r->cols_ai != NULL && ncols_ai == 0))
        goto done;
    if (buf_put(out, "[", 1) < 0) {
        status = -1;
        goto done;
    }
    for (int first = 1; pos < end; first = 0) {
        int st;
        if ((!first && buf_put(out, ", ", 2) < 0) ||
            put_s(out, op == 0 ? "{\"after\": " : "{\"before\": ") < 0) {
            status = -1;
            goto done;
        }
        st = put_json_image(out, plan, cols, ncols, d, &pos, end, D_JSON, NULL);
        if (!st && op == 1) {
            if (put_s(out, ", \"after\": ") < 0) {
                status = -1;
                goto done;
            }
            st = put_json_image(out, plan, cols_ai, ncols_ai, d, &pos, end, D_JSON, NULL);
        }
        if (st) {
            status = st;
            goto done;
        }
        if (buf_put(out, "}", 1) < 0) {
            status = -1;
            goto done;
        }
    }
    status = buf_put(out, "]", 1) < 0 ? -1 : 0;
done:
    PyMem_Free(cols);
    PyMem_Free(cols_ai);
    return status;
}

/* The common fields of an event's line, up to and including '"gtid": "..."': 0, 1 (a time
 * out of the ISO range: the Python writer's), -1 error. */
static int put_json_head(Buf *b, JsonCfg *c, const EvHeader *h, Py_ssize_t pos, const char *gtid, Py_ssize_t gtid_len) {
    PyObject *key = PyLong_FromUnsignedLong(h->type);
    if (key == NULL)
        return -1;
    PyObject *type = PyDict_GetItemWithError(c->types, key);
    Py_DECREF(key);
    if (type == NULL || !PyBytes_Check(type)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_KeyError, "json_groups: no type fields for an event type");
        return -1;
    }
    if (c->ts_len < 0 || h->when != c->ts_when) {
        Buf tb = {NULL, 0, 0};
        int r = put_s(&tb, "\"timestamp\": ") < 0 || put_u(&tb, h->when) < 0 || put_s(&tb, ", \"time\": \"") < 0 ? -1 : 0;
        if (!r)
            r = put_utc(&tb, (int64_t)h->when);
        if (!r)
            r = put_s(&tb, "Z\"");
        if (!r && tb.len > (Py_ssize_t)sizeof c->ts_text)
            r = 1;
        if (!r) {
            memcpy(c->ts_text, tb.data, tb.len);
            c->ts_len = tb.len;
            c->ts_when = h->when;
        }
        PyMem_Free(tb.data);
        if (r)
            return r;
    }
    if (put_s(b, "{\"file\": ") < 0 || buf_put(b, c->file, c->file_len) < 0 || put_s(b, ", \"pos\": ") < 0 ||
        put_u(b, (uint64_t)pos) < 0 || put_s(b, ", \"end_log_pos\": ") < 0 || put_u(b, h->log_pos) < 0 ||
        put_s(b, ", ") < 0 || buf_put(b, c->ts_text, c->ts_len) < 0 || put_s(b, ", ") < 0 ||
        buf_put(b, PyBytes_AS_STRING(type), PyBytes_GET_SIZE(type)) < 0 || put_s(b, ", \"server_id\": ") < 0 ||
        put_u(b, h->server_id) < 0 || put_s(b, ", \"flags\": ") < 0 || put_u(b, h->flags) < 0 ||
        put_s(b, ", \"gtid\": \"") < 0 || buf_put(b, gtid, gtid_len) < 0 || buf_put(b, "\"", 1) < 0)
        return -1;
    return 0;
}

/* One event of an ordinary group, as walk_group hands it to a writer. */
struct GroupEv {
    EvHeader h;
    Py_ssize_t pos;         /* its offset */
    const unsigned char *b; /* its body: n bytes, CRC left out */
    Py_ssize_t n;
    EvGtid g;               /* the group's GTID (every event) */
    PyObject *entry;        /* Table_map: the writer's entry (table_id, its fields, view) */
    PyObject *plan;         /* rows: the view's rows plan (its plan_attr), a tuple */
    int op;                 /* rows: 0 write, 1 update, 2 delete */
    EvRows r;               /* rows: the layout */
};

/* The ordinary group at d[pos:limit], event by event into write(state, event, out): the
 * headers walked first (a group too big or with another event is not written at all), CRCs
 * checked, each Table_map found among the writer's (and put in its views by table id), each
 * rows event's view found by its table id; a GroupWriter of write_groups.  0 (*gend its end,
 * *gout and *gserver its GTID), 1 not for this path (out may hold part of it), -1 error. */
static int walk_group(void *state, const unsigned char *d, Py_ssize_t pos, Py_ssize_t limit, Buf *out,
                      Py_ssize_t *gend, EvGtid *gout, uint32_t *gserver) {
    GroupWalk *s = state;
    int crc_len = s->checksum ? 4 : 0;
    Py_ssize_t group_limit = ev_ordinary_group_end(d, pos, limit - pos > MAX_GROUP_BYTES ? pos + MAX_GROUP_BYTES : limit);
    if (group_limit < 0)
        return 1;
    int saw_table = 0;
    GroupEv e;
    for (int first = 1;; first = 0) {
        const unsigned char *p = d + pos;
        ev_header(p, &e.h);
        Py_ssize_t end = pos + (Py_ssize_t)e.h.length;
        if (crc_len && s->verify && crc32_of(p, e.h.length - 4) != le32(d + end - 4))
            return 1;
        e.pos = pos;
        e.b = p + EV_HEADER_LEN;
        e.n = (Py_ssize_t)e.h.length - EV_HEADER_LEN - crc_len;
        e.entry = e.plan = NULL;
        e.op = -1;
        if (first) {
            if (ev_gtid(e.b, e.n, &e.g) || (e.g.flags2 & EV_FL_STANDALONE))
                return 1;
            s->gtid_len = snprintf(s->gtid, sizeof s->gtid, "%u-%u-%llu", (unsigned)e.g.domain_id,
                                   (unsigned)e.h.server_id, (unsigned long long)e.g.seq_no);
            *gout = e.g;
            *gserver = e.h.server_id;
        } else if (e.h.type == EV_TABLE_MAP) {
            PyObject *key = PyBytes_FromStringAndSize((const char *)e.b, e.n);
            if (key == NULL)
                return -1;
            e.entry = PyDict_GetItemWithError(s->tables, key);
            Py_DECREF(key);
            if (e.entry == NULL)
                return PyErr_Occurred() ? -1 : 1;
            if (!PyTuple_Check(e.entry) || PyTuple_GET_SIZE(e.entry) != 3 || !PyBytes_Check(PyTuple_GET_ITEM(e.entry, 1)))
                return 1;
            if (PyDict_SetItem(s->views, PyTuple_GET_ITEM(e.entry, 0), PyTuple_GET_ITEM(e.entry, 2)) < 0)
                return -1;
            saw_table = 1;
        } else if ((e.op = ev_rows_op(e.h.type)) >= 0) {
            if (ev_rows(e.b, e.n, s->rows_post[e.h.type <= 25 ? e.op : 3 + e.op], e.op == 1, &e.r))
                return 1;
            PyObject *id = PyLong_FromUnsignedLongLong(e.r.table_id);
            if (id == NULL)
                return -1;
            PyObject *view = PyDict_GetItemWithError(s->views, id);
            Py_DECREF(id);
            if (view == NULL)
                return PyErr_Occurred() ? -1 : 1;
            if ((e.plan = info_attr(view, s->plan_attr, &PyTuple_Type)) == NULL)
                return 1;
        } else if (e.h.type == EV_XID) {
            if (e.n < 8 || !saw_table)
                return 1; /* a group without a table map: the Python writer's (it follows the schema there) */
        } else if (e.h.type != EV_ANNOTATE_ROWS) {
            return 1;
        }
        int st = s->write(s->writer, &e, out);
        if (st)
            return st;
        if (e.h.type == EV_XID) {
            *gend = end;
            return 0;
        }
        pos = end;
    }
}

/* Called when accept let the group just walked stay: its GTID is the last kept. */
static void walk_kept(void *state, const EvGtid *g) {
    GroupWalk *w = state;
    w->flags2 = g->flags2;
    memcpy(w->last, w->gtid, w->gtid_len);
    w->last_len = w->gtid_len;
}

/* The walk's groups from pos (write_groups), as (pos, text, stopped, flags2, gtid) of the
 * last group kept; post holds the rows' six post-header lengths. */
static PyObject *walk_groups(GroupWalk *w, Py_buffer *data, Py_buffer *post, PyObject *accept, Py_ssize_t pos,
                             Py_ssize_t limit, Py_ssize_t soft) {
    if (post->len != 6) {
        PyErr_SetString(PyExc_ValueError, "6 post-header lengths");
        return NULL;
    }
    w->rows_post = post->buf;
    w->flags2 = -1;
    w->gtid_len = w->last_len = 0;
    Buf out = {NULL, 0, 0};
    int stopped = 0;
    PyObject *result = NULL;
    if (write_groups(walk_group, walk_kept, w, accept, data->buf, &pos, limit < data->len ? limit : data->len, soft,
                     &out, &stopped) == 0)
        result = Py_BuildValue("(ny#Ols#)", pos, out.data ? out.data : "", out.len, stopped ? Py_True : Py_False,
                               w->flags2, w->last, w->last_len);
    PyMem_Free(out.data);
    return result;
}

/* One event's line as JsonSink.print_event writes it: 0, 1 not for this path, -1 error. */
static int json_event(void *writer, const GroupEv *e, Buf *out) {
    JsonCfg *c = writer;
    const EvHeader *h = &e->h;
    int st;
    if ((st = put_json_head(out, c, h, e->pos, c->walk->gtid, c->walk->gtid_len)) != 0)
        return st;
    switch (h->type) {
    case EV_GTID:
        if (put_s(out, ", \"domain_id\": ") < 0 || put_u(out, e->g.domain_id) < 0 || put_s(out, ", \"seq_no\": ") < 0 ||
            put_u(out, e->g.seq_no) < 0 || put_s(out, ", \"standalone\": false, \"flags2\": ") < 0 ||
            put_u(out, e->g.flags2) < 0)
            return -1;
        if ((e->g.flags2 & EV_FL_GROUP_COMMIT_ID) && (put_s(out, ", \"commit_id\": ") < 0 || put_u(out, e->g.commit_id) < 0))
            return -1;
        break;
    case EV_ANNOTATE_ROWS:
        if (put_s(out, ", \"query\": ") < 0 || put_text_or_bytes(out, e->b, e->n, D_JSON) < 0)
            return -1;
        break;
    case EV_TABLE_MAP: {
        PyObject *fields = PyTuple_GET_ITEM(e->entry, 1);
        if (put_s(out, ", ") < 0 || buf_put(out, PyBytes_AS_STRING(fields), PyBytes_GET_SIZE(fields)) < 0)
            return -1;
        break;
    }
    case EV_XID:
        if (put_s(out, ", \"xid\": ") < 0 || put_u(out, le64(e->b)) < 0)
            return -1;
        break;
    default: { /* rows; the plan is (names_json, column plan) */
        static const char *const kinds[3] = {"insert", "update", "delete"};
        if (PyTuple_GET_SIZE(e->plan) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(e->plan, 0)) ||
            !PyTuple_Check(PyTuple_GET_ITEM(e->plan, 1)))
            return 1;
        PyObject *names = PyTuple_GET_ITEM(e->plan, 0);
        if (put_s(out, ", ") < 0 || buf_put(out, PyBytes_AS_STRING(names), PyBytes_GET_SIZE(names)) < 0 ||
            put_s(out, ", \"kind\": \"") < 0 || put_s(out, kinds[e->op]) < 0 ||
            put_s(out, (e->r.flags & 1) ? "\", \"stmt_end\": true, \"rows\": " : "\", \"stmt_end\": false, \"rows\": ") < 0)
            return -1;
        if ((st = put_json_rows(out, PyTuple_GET_ITEM(e->plan, 1), e->op, &e->r, e->b + e->r.rows_at, e->n - e->r.rows_at)))
            return st;
    }
    }
    return put_s(out, "}\n");
}

/* json_groups(data, pos, limit, soft, cfg, tables, views, types, accept) -> (pos, text, stopped, flags2, gtid)
 * As print_groups, for the JSON writer: cfg is (checksum, verify, file_json, rows_post);
 * tables the writer's fast Table_map entries by body (table_id, fields, view); views its
 * views by table id (updated); types the '"type": ..., "type_code": N' text by type code;
 * flags2 and gtid those of the last group printed (-1 and "": none). */
static PyObject *json_groups(PyObject *self, PyObject *args) {
    Py_buffer data, post;
    Py_ssize_t pos, limit, soft;
    PyObject *accept;
    GroupWalk w = {.plan_attr = "fast", .write = json_event};
    JsonCfg c = {.walk = &w, .ts_len = -1};
    w.writer = &c;
    if (!PyArg_ParseTuple(args, "y*nnn(ppy#y*)O!O!O!O", &data, &pos, &limit, &soft, &w.checksum, &w.verify, &c.file,
                          &c.file_len, &post, &PyDict_Type, &w.tables, &PyDict_Type, &w.views, &PyDict_Type, &c.types,
                          &accept))
        return NULL;
    PyObject *result = walk_groups(&w, &data, &post, accept, pos, limit, soft);
    PyBuffer_Release(&data);
    PyBuffer_Release(&post);
    return result;
}

/* ------------------------------------------------------------------ debezium_groups */

/* The Debezium writer's twin of json_groups: debezium.DebeziumWriter.lines over whole
 * ordinary groups, one change event per row change (a primary key change as a delete and
 * a create), the values encoded as debezium.encode_value encodes the row decoder's.  The
 * GTID, Annotate_rows, Table_map and Xid events give no line: they set the records' gtid,
 * query and table. */
typedef struct {
    GroupWalk *walk;
    const char *prefix;           /* '"version": ..., "connector": "mariadb", "name": ...' of every source */
    Py_ssize_t prefix_len;
    const char *file;             /* the "file" value, JSON */
    Py_ssize_t file_len;
    const unsigned char *query;   /* its Annotate_rows text (UTF-8), or NULL */
    Py_ssize_t query_len;
    Buf before, after;            /* one row's images */
    Py_ssize_t *spans_b, *spans_a; /* their values' text by column: (offset, length), length -1 absent */
    Py_ssize_t nspans;
} DbzGroups;

/* The key object of one row change: the key columns' values from the first image that has
 * each (Buf a then b, either NULL), "null" without any. */
static int put_dbz_key(Buf *out, PyObject *keys, const JCol *plan, const Buf *a, const Py_ssize_t *sa, const Buf *b,
                       const Py_ssize_t *sb) {
    int any = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++) {
        Py_ssize_t col = PyLong_AsSsize_t(PyTuple_GET_ITEM(keys, i));
        const Buf *img = NULL;
        const Py_ssize_t *span = NULL;
        if (a != NULL && sa[2 * col + 1] >= 0)
            img = a, span = sa + 2 * col;
        else if (b != NULL && sb[2 * col + 1] >= 0)
            img = b, span = sb + 2 * col;
        if (img == NULL)
            continue;
        if (buf_put(out, any ? ", " : "{", any ? 2 : 1) < 0 || buf_put(out, plan[col].key, plan[col].key_len) < 0 ||
            buf_put(out, img->data + span[0], span[1]) < 0)
            return -1;
        any = 1;
    }
    return any ? buf_put(out, "}", 1) : put_s(out, "null");
}

/* One change event's line. */
static int put_dbz_record(Buf *out, DbzGroups *z, const GroupEv *e, PyObject *view_plan, const Buf *key_buf,
                          Py_ssize_t key_at, Py_ssize_t key_len, const Buf *before, const Buf *after, long row, char op) {
    PyObject *topic = PyTuple_GET_ITEM(view_plan, 0), *names = PyTuple_GET_ITEM(view_plan, 1);
    uint64_t when = (uint64_t)e->h.when * 1000;
    char op_text[] = {'"', op, '"', 0};
    if (buf_put(out, PyBytes_AS_STRING(topic), PyBytes_GET_SIZE(topic)) < 0 ||
        buf_put(out, key_buf->data + key_at, key_len) < 0 || put_s(out, ", \"value\": {\"before\": ") < 0 ||
        (before ? buf_put(out, before->data, before->len) : put_s(out, "null")) < 0 || put_s(out, ", \"after\": ") < 0 ||
        (after ? buf_put(out, after->data, after->len) : put_s(out, "null")) < 0 || put_s(out, ", \"source\": {") < 0 ||
        buf_put(out, z->prefix, z->prefix_len) < 0 || put_s(out, ", \"ts_ms\": ") < 0 || put_u(out, when) < 0 ||
        put_s(out, ", \"snapshot\": \"false\", ") < 0 || buf_put(out, PyBytes_AS_STRING(names), PyBytes_GET_SIZE(names)) < 0 ||
        put_s(out, ", \"server_id\": ") < 0 || put_u(out, e->h.server_id) < 0 || put_s(out, ", \"gtid\": \"") < 0 ||
        buf_put(out, z->walk->gtid, z->walk->gtid_len) < 0 || put_s(out, "\", \"file\": ") < 0 || buf_put(out, z->file, z->file_len) < 0 ||
        put_s(out, ", \"pos\": ") < 0 || put_u(out, (uint64_t)e->pos) < 0 || put_s(out, ", \"row\": ") < 0 ||
        put_u(out, (uint64_t)row) < 0 || put_s(out, ", \"thread\": null, \"query\": ") < 0 ||
        (z->query ? put_json_str(out, z->query, z->query_len) : put_s(out, "null")) < 0 || put_s(out, "}, \"op\": ") < 0 ||
        put_s(out, op_text) < 0 || put_s(out, ", \"ts_ms\": ") < 0 || put_u(out, when) < 0 ||
        put_s(out, ", \"transaction\": null}}\n") < 0)
        return -1;
    return 0;
}

/* The change events of one rows event: 0, 1 fall back, -1 error.  The view's plan is
 * (topic head, db and table fields, column plan, key column indexes). */
static int dbz_rows(DbzGroups *z, const GroupEv *e, Buf *out) {
    PyObject *vp = e->plan;
    if (PyTuple_GET_SIZE(vp) != 4 || !PyBytes_Check(PyTuple_GET_ITEM(vp, 0)) || !PyBytes_Check(PyTuple_GET_ITEM(vp, 1)) ||
        !PyTuple_Check(PyTuple_GET_ITEM(vp, 2)) || !PyTuple_Check(PyTuple_GET_ITEM(vp, 3)))
        return 1;
    PyObject *plan_obj = PyTuple_GET_ITEM(vp, 2), *keys = PyTuple_GET_ITEM(vp, 3);
    const EvRows *r = &e->r;
    Py_ssize_t width = PyTuple_GET_SIZE(plan_obj);
    if (r->width != width)
        return 1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++) {
        PyObject *k = PyTuple_GET_ITEM(keys, i);
        if (!PyLong_Check(k) || PyLong_AsSsize_t(k) < 0 || PyLong_AsSsize_t(k) >= width) {
            PyErr_Clear();
            return 1;
        }
    }
    const JCol *plan = json_plan(plan_obj);
    if (plan == NULL)
        return -1;
    if (z->nspans < 2 * width) {
        Py_ssize_t *sb = PyMem_Realloc(z->spans_b, sizeof(Py_ssize_t) * 2 * width);
        if (sb == NULL)
            return PyErr_NoMemory(), -1;
        z->spans_b = sb;
        Py_ssize_t *sa = PyMem_Realloc(z->spans_a, sizeof(Py_ssize_t) * 2 * width);
        if (sa == NULL)
            return PyErr_NoMemory(), -1;
        z->spans_a = sa;
        z->nspans = 2 * width;
    }
    Py_ssize_t cols[256], cols_ai[256];
    Py_ssize_t ncols = present_columns(r->cols, r->nbytes, r->width, cols);
    Py_ssize_t ncols_ai = r->cols_ai != NULL ? present_columns(r->cols_ai, r->nbytes, r->width, cols_ai) : 0;
    const unsigned char *d = e->b + r->rows_at;
    Py_ssize_t end = e->n - r->rows_at, pos = 0;
    if (end == 0 || ncols == 0 || (r->cols_ai != NULL && ncols_ai == 0))
        return 1;
    Buf keys_buf = {NULL, 0, 0};
    int st = 0;
    for (long row = 0; pos < end && !st; row++) {
        Buf *before = NULL, *after = NULL;
        z->before.len = z->after.len = 0;
        for (Py_ssize_t i = 0; i < 2 * width; i += 2)
            z->spans_b[i + 1] = z->spans_a[i + 1] = -1;
        if (e->op != 0) { /* the first image: the before image of updates and deletes */
            before = &z->before;
            st = put_json_image(before, plan, cols, ncols, d, &pos, end, D_DEBEZIUM, z->spans_b);
        }
        if (!st && e->op != 2) {
            after = &z->after;
            st = e->op == 1 ? put_json_image(after, plan, cols_ai, ncols_ai, d, &pos, end, D_DEBEZIUM, z->spans_a)
                            : put_json_image(after, plan, cols, ncols, d, &pos, end, D_DEBEZIUM, z->spans_a);
        }
        if (st)
            break;
        keys_buf.len = 0;
        if (put_dbz_key(&keys_buf, keys, plan, after, z->spans_a, before, z->spans_b) < 0)
            return PyMem_Free(keys_buf.data), -1;
        Py_ssize_t key_len = keys_buf.len;
        if (e->op == 1) { /* the old key, from the before image: a key change is a delete and a create */
            if (put_dbz_key(&keys_buf, keys, plan, NULL, NULL, before, z->spans_b) < 0)
                return PyMem_Free(keys_buf.data), -1;
            Py_ssize_t old_len = keys_buf.len - key_len;
            const char *k = keys_buf.data, *old = keys_buf.data + key_len;
            if (k[0] == '{' && old[0] == '{' &&
                (old_len != key_len || memcmp(k, old, key_len) != 0)) {
                st = put_dbz_record(out, z, e, vp, &keys_buf, key_len, old_len, before, NULL, row, 'd') < 0 ||
                     put_dbz_record(out, z, e, vp, &keys_buf, 0, key_len, NULL, after, row, 'c') < 0 ? -1 : 0;
                continue;
            }
        }
        st = put_dbz_record(out, z, e, vp, &keys_buf, 0, key_len, before, after, row, "cud"[e->op]) < 0 ? -1 : 0;
    }
    PyMem_Free(keys_buf.data);
    return st;
}

/* One event of a group: the rows' change events; the others set the group's state. */
static int dbz_event(void *writer, const GroupEv *e, Buf *out) {
    DbzGroups *z = writer;
    switch (e->h.type) {
    case EV_GTID:
        z->query = NULL;
        return 0;
    case EV_ANNOTATE_ROWS:
        if (!utf8_valid(e->b, e->n))
            return 1; /* decoded with replacement characters: the Python writer's */
        z->query = e->b;
        z->query_len = e->n;
        return 0;
    case EV_TABLE_MAP: case EV_XID:
        return 0;
    default:
        return dbz_rows(z, e, out);
    }
}

/* debezium_groups(data, pos, limit, soft, cfg, tables, views, accept) -> (pos, text, stopped, flags2, gtid)
 * As json_groups, for the Debezium writer: cfg is (checksum, verify, source_prefix, file_json,
 * rows_post); tables its fast Table_map entries by body (table_id, b"", view); views its
 * views by table id (updated), each view's rows plan in its fast_debezium attribute. */
static PyObject *debezium_groups(PyObject *self, PyObject *args) {
    Py_buffer data, post;
    Py_ssize_t pos, limit, soft;
    PyObject *accept;
    GroupWalk w = {.plan_attr = "fast_debezium", .write = dbz_event};
    DbzGroups z = {.walk = &w};
    w.writer = &z;
    if (!PyArg_ParseTuple(args, "y*nnn(ppy#y#y*)O!O!O", &data, &pos, &limit, &soft, &w.checksum, &w.verify, &z.prefix,
                          &z.prefix_len, &z.file, &z.file_len, &post, &PyDict_Type, &w.tables, &PyDict_Type, &w.views,
                          &accept))
        return NULL;
    PyObject *result = walk_groups(&w, &data, &post, accept, pos, limit, soft);
    PyMem_Free(z.before.data);
    PyMem_Free(z.after.data);
    PyMem_Free(z.spans_b);
    PyMem_Free(z.spans_a);
    PyBuffer_Release(&data);
    PyBuffer_Release(&post);
    return result;
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"base64_lines", base64_lines, METH_O, "base64 of a buffer in 76-character lines, each ending with a newline."},
    {"count_rows", count_rows, METH_VARARGS, "Rows_log_event::count_row_events over rows data."},
    {"verbose_rows", verbose_rows, METH_VARARGS, "The ### lines of -v/-vv and the row count, or None (fall back)."},
    {"print_groups", print_groups, METH_VARARGS, "Whole ordinary groups as the printer prints them: (pos, text, stopped)."},
    {"json_groups", json_groups, METH_VARARGS, "Whole ordinary groups as the JSON writer writes them: (pos, text, stopped, flags2, gtid)."},
    {"debezium_groups", debezium_groups, METH_VARARGS, "Whole ordinary groups as the Debezium writer writes them: (pos, text, stopped, flags2, gtid)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dumpfast", NULL, -1, methods};

PyMODINIT_FUNC PyInit__dumpfast(void) {
    init_b64_pairs();
    crc_init();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "FAST_VERSION", FAST_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
