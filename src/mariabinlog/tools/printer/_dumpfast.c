/* Compiled fast paths of mariabinlog.tools.printer (``mariabinlog dump``).
 *
 * Three loops that dominate a dump of a large ROW-format binlog, each the exact
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
 *
 * The column plan of verbose_rows comes from rows.py's _verbose_plan (one tuple per column:
 * opcode, two parameters, the "###   @N=" label and the -vv comments); all
 * column-type knowledge stays there.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../codec/rows/_decimal.h"

/* Bump together with base._FAST_VERSION whenever the plan or a signature changes. */
#define FAST_VERSION 1

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

static PyObject *base64_lines(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *src = view.buf;
    Py_ssize_t n = view.len;
    Py_ssize_t full = n / 57, rest = n % 57;
    Py_ssize_t size = full * 77 + (rest ? (rest + 2) / 3 * 4 + 1 : 0);
    if (n == 0)
        size = 1; /* b2a_base64(b"") is b"\n" */
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    char *dst = PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
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
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return out;
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

static PyObject *count_rows(PyObject *self, PyObject *args) {
    Py_buffer view, cols_view, ai_view;
    Py_ssize_t pos, end, width;
    PyObject *sizes_obj, *ai_obj;
    if (!PyArg_ParseTuple(args, "y*nnO!ny*O", &view, &pos, &end, &PyTuple_Type, &sizes_obj, &width, &cols_view,
                          &ai_obj))
        return NULL;
    long *sizes = NULL;
    Py_ssize_t *cols = NULL, *cols_ai = NULL;
    Py_ssize_t ncols = 0, ncols_ai = 0;
    int have_ai = ai_obj != Py_None;
    PyObject *result = NULL;
    if (have_ai && PyObject_GetBuffer(ai_obj, &ai_view, PyBUF_SIMPLE) < 0)
        goto done_noai;
    Py_ssize_t nsizes = PyTuple_GET_SIZE(sizes_obj);
    if (width > nsizes)
        width = nsizes;
    sizes = PyMem_Malloc(sizeof(long) * (nsizes + 1));
    cols = PyMem_Malloc(sizeof(Py_ssize_t) * (width + 1));
    cols_ai = PyMem_Malloc(sizeof(Py_ssize_t) * (width + 1));
    if (!sizes || !cols || !cols_ai) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nsizes; i++) {
        sizes[i] = PyLong_AsLong(PyTuple_GET_ITEM(sizes_obj, i));
        if (sizes[i] == -1 && PyErr_Occurred())
            goto done;
    }
    ncols = present_columns(cols_view.buf, cols_view.len, width, cols);
    if (have_ai)
        ncols_ai = present_columns(ai_view.buf, ai_view.len, width, cols_ai);
    if (end > view.len)
        end = view.len;
    {
        const unsigned char *d = view.buf;
        long long n = 0;
        while (pos < end) {
            n++;
            if (count_image(d, &pos, end, sizes, cols, ncols))
                break;
            if (have_ai && count_image(d, &pos, end, sizes, cols_ai, ncols_ai))
                break;
        }
        result = PyLong_FromLongLong(n);
    }
done:
    if (have_ai)
        PyBuffer_Release(&ai_view);
done_noai:
    PyMem_Free(sizes);
    PyMem_Free(cols);
    PyMem_Free(cols_ai);
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
    VCol *plan = NULL;
    Py_ssize_t *cols = NULL, *cols_ai = NULL;
    Buf out = {NULL, 0, 0};
    if (have_ai && PyObject_GetBuffer(ai_obj, &ai_view, PyBUF_SIMPLE) < 0) {
        have_ai = 0;
        goto done;
    }
    Py_ssize_t nplan = PyTuple_GET_SIZE(plan_obj);
    if (width > nplan || (kind == 2) != have_ai || end > view.len || pos >= end)
        goto fallback;
    plan = PyMem_Calloc(nplan + 1, sizeof(VCol));
    cols = PyMem_Malloc(sizeof(Py_ssize_t) * (width + 1));
    cols_ai = PyMem_Malloc(sizeof(Py_ssize_t) * (width + 1));
    if (!plan || !cols || !cols_ai) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nplan; i++) {
        PyObject *t = PyTuple_GET_ITEM(plan_obj, i);
        char *label, *comment, *null_comment;
        Py_ssize_t label_len, comment_len, null_comment_len;
        if (!PyArg_ParseTuple(t, "illy#y#y#", &plan[i].op, &plan[i].a, &plan[i].b, &label, &label_len, &comment,
                              &comment_len, &null_comment, &null_comment_len))
            goto done;
        plan[i].label = label;
        plan[i].label_len = label_len;
        plan[i].comment = comment;
        plan[i].comment_len = comment_len;
        plan[i].null_comment = null_comment;
        plan[i].null_comment_len = null_comment_len;
    }
    Py_ssize_t ncols = present_columns(cols_view.buf, cols_view.len, width, cols);
    Py_ssize_t ncols_ai = have_ai ? present_columns(ai_view.buf, ai_view.len, width, cols_ai) : 0;
    if (ncols == 0 || (have_ai && ncols_ai == 0))
        goto fallback;
    static const char *clause1[] = {"### SET\n", "### WHERE\n", "### WHERE\n"};
    const unsigned char *d = view.buf;
    long long nrows = 0;
    while (pos < end) {
        if (buf_put(&out, header_view.buf, header_view.len) < 0 || buf_put(&out, clause1[kind], strlen(clause1[kind])) < 0)
            goto done;
        int r = put_image(&out, plan, cols, ncols, d, &pos, end, verbose);
        if (r < 0)
            goto done;
        if (r)
            goto fallback;
        if (kind == 2) {
            if (buf_put(&out, "### SET\n", 8) < 0)
                goto done;
            r = put_image(&out, plan, cols_ai, ncols_ai, d, &pos, end, verbose);
            if (r < 0)
                goto done;
            if (r)
                goto fallback;
        }
        nrows++;
    }
    {
        PyObject *text = PyBytes_FromStringAndSize(out.data, out.len);
        if (text != NULL) {
            result = Py_BuildValue("(NL)", text, nrows);
        }
    }
    goto done;
fallback:
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(out.data);
    PyMem_Free(plan);
    PyMem_Free(cols);
    PyMem_Free(cols_ai);
    if (have_ai)
        PyBuffer_Release(&ai_view);
    PyBuffer_Release(&view);
    PyBuffer_Release(&cols_view);
    PyBuffer_Release(&header_view);
    return result;
}

/* ------------------------------------------------------------------ module */

static PyMethodDef methods[] = {
    {"base64_lines", base64_lines, METH_O, "base64 of a buffer in 76-character lines, each ending with a newline."},
    {"count_rows", count_rows, METH_VARARGS, "Rows_log_event::count_row_events over rows data."},
    {"verbose_rows", verbose_rows, METH_VARARGS, "The ### lines of -v/-vv and the row count, or None (fall back)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dumpfast", NULL, -1, methods};

PyMODINIT_FUNC PyInit__dumpfast(void) {
    init_b64_pairs();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "FAST_VERSION", FAST_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
