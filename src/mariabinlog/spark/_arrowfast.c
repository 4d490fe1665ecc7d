/* Compiled fast path of the Spark rows view: row images straight into Arrow buffers.
 *
 * The C half of spark/read.py's columnar rows view (its pure twin: MapColumn and the
 * rows view's reference path, values rendered by spark/schema.render).  MapBuilder reads
 * the row images of rows events with the codec's image programs (codec/rows/_rowimage.h,
 * the Image objects of codec/rows/_rowsfast) and renders each value as map text into the
 * buffers of two Arrow map<string,string> arrays; repeat() repeats the per-event columns
 * per row.  Rendering is Spark's: dates, times, DECIMAL, FLOAT/DOUBLE (codec/rows/_shortest.h,
 * as float.__repr__), UTF-8 checks and hex of binary values; values it does not render
 * natively go through the render callable (spark.schema.render) on the value the codec's
 * primitives build.  Errors in an image go through the codec's error hook, as decoding does.
 */
#include "../codec/rows/_rowimage.h"
#include "../codec/rows/_digits.h"
#include "../codec/rows/_shortest.h"

/* ------------------------------------------------------------ MapBuilder
 *
 * Columnar output for the Spark ``rows`` view: the before/after images of
 * rows events straight into the buffers of two Arrow ``map<string,string>``
 * arrays (validity bitmaps, int32 offsets, UTF-8 data), with no Python object
 * per value.  Values are rendered as spark.schema.render renders them; the
 * values this module does not render natively (other text codecs, invalid
 * UTF-8 text, Python conversions, DECIMAL in exponent form) are built as
 * Python values and rendered by the ``render`` callable the builder was given,
 * so both paths agree by construction there.  Per row the builder also records
 * the caller's event number and the row's index in its event, from which the
 * caller repeats the per-event columns.
 */

/* A growing buffer kept in a bytes object, so that take() hands it over without a copy;
 * the next one starts at the size the last one reached (one allocation per batch). */
typedef struct {
    PyObject *obj;
    char *p;
    Py_ssize_t len, cap, hint;
} Buf;

static int
buf_reserve(Buf *b, Py_ssize_t extra)
{
    if (b->len + extra <= b->cap) {
        return 0;
    }
    Py_ssize_t cap = b->cap ? b->cap : (b->hint > 256 ? b->hint : 256);
    while (cap < b->len + extra) {
        cap *= 2;
    }
    if (b->obj == NULL) {
        b->obj = PyBytes_FromStringAndSize(NULL, cap);
    }
    else if (_PyBytes_Resize(&b->obj, cap) < 0) {  /* frees the old one and clears obj */
        b->obj = NULL;
    }
    if (b->obj == NULL) {
        b->p = NULL;
        b->len = b->cap = 0;
        return -1;
    }
    b->p = PyBytes_AS_STRING(b->obj);
    b->cap = cap;
    return 0;
}

static void
buf_free(Buf *b)
{
    Py_CLEAR(b->obj);
    b->p = NULL;
    b->len = b->cap = 0;
}

static inline int
buf_put(Buf *b, const void *src, Py_ssize_t n)
{
    if (n == 0) {  /* nothing to copy; an empty buffer may have no storage yet (p NULL) */
        return 0;
    }
    if (buf_reserve(b, n) < 0) {
        return -1;
    }
    memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

/* The error for an Arrow array past int32 offsets (2 GiB): the batch limits keep well below it. */
static int
arrow_too_big(void)
{
    PyErr_SetString(PyExc_OverflowError, "_arrowfast: Arrow batch over 2 GiB (lower the batch byte limit)");
    return -1;
}

/* Append v as an int32 Arrow offset into room already reserved (see arrow_too_big). */
static inline int
put_i32(Buf *b, Py_ssize_t v)
{
    if (v > INT32_MAX) {
        return arrow_too_big();
    }
    int32_t x = (int32_t)v;
    memcpy(b->p + b->len, &x, 4);
    b->len += 4;
    return 0;
}

static inline int
buf_i32(Buf *b, Py_ssize_t v)
{
    return buf_reserve(b, 4) < 0 ? -1 : put_i32(b, v);
}

/* Append bit `v` as bit number `n` of bitmap b (LSB first, as Arrow) into room already
 * reserved (a new byte every eighth bit). */
static inline void
put_bit(Buf *b, Py_ssize_t n, int v)
{
    if ((n & 7) == 0) {
        b->p[b->len++] = 0;
    }
    if (v) {
        b->p[n >> 3] |= (char)(1 << (n & 7));
    }
}

static inline int
buf_bit(Buf *b, Py_ssize_t n, int v)
{
    if ((n & 7) == 0 && buf_reserve(b, 1) < 0) {
        return -1;
    }
    put_bit(b, n, v);
    return 0;
}

/* The bytes so far (the buffer itself, cut to its length); the Buf starts empty. */
static PyObject *
buf_take(Buf *b)
{
    PyObject *out = b->obj;
    Py_ssize_t len = b->len;
    b->hint = b->cap;
    b->obj = NULL;
    b->p = NULL;
    b->len = b->cap = 0;
    if (out == NULL) {
        return PyBytes_FromStringAndSize("", 0);
    }
    return _PyBytes_Resize(&out, len) < 0 ? NULL : out;
}

/* One map<string,string> column. */
typedef struct {
    Py_ssize_t rows, entries;
    Buf valid, offsets, key_offsets, keys, value_valid, value_offsets, values;
} MapCol;

enum { MC_BUFS = 7 };

static Buf *
mapcol_bufs(MapCol *m, int i)
{
    Buf *all[MC_BUFS] = {&m->valid, &m->offsets, &m->key_offsets, &m->keys, &m->value_valid, &m->value_offsets,
                         &m->values};
    return all[i];
}

static int
mapcol_reset(MapCol *m)
{
    m->rows = m->entries = 0;
    for (int i = 0; i < MC_BUFS; i++) {
        mapcol_bufs(m, i)->len = 0;
    }
    return buf_i32(&m->offsets, 0) < 0 || buf_i32(&m->key_offsets, 0) < 0 || buf_i32(&m->value_offsets, 0) < 0
               ? -1 : 0;
}

typedef struct {
    PyObject_HEAD
    PyObject *render;  /* value -> str | None, for the values rendered in Python */
    MapCol before, after;
    Buf event_no, row_index;
    Py_ssize_t rows;
} MapBuilder;

static PyTypeObject MapBuilderType;

static void
MapBuilder_dealloc(MapBuilder *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->render);
    for (int i = 0; i < MC_BUFS; i++) {
        buf_free(mapcol_bufs(&self->before, i));
        buf_free(mapcol_bufs(&self->after, i));
    }
    buf_free(&self->event_no);
    buf_free(&self->row_index);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
MapBuilder_traverse(MapBuilder *self, visitproc visit, void *arg)
{
    Py_VISIT(self->render);
    return 0;
}

static int
MapBuilder_clear(MapBuilder *self)
{
    Py_CLEAR(self->render);
    return 0;
}

static PyObject *
MapBuilder_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *render;
    static char *kwlist[] = {"render", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", kwlist, &render)) {
        return NULL;
    }
    if (!PyCallable_Check(render)) {
        PyErr_SetString(PyExc_TypeError, "render must be callable");
        return NULL;
    }
    MapBuilder *self = (MapBuilder *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(render);
    self->render = render;
    if (mapcol_reset(&self->before) < 0 || mapcol_reset(&self->after) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* Strict UTF-8 (as Python's decoder: no overlongs, surrogates or code points past U+10FFFF). */
static int
utf8_valid(const unsigned char *p, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            while (i + 8 <= n) {  /* ASCII eight bytes at a time */
                uint64_t w;
                memcpy(&w, p + i, 8);
                if (w & 0x8080808080808080ULL) {
                    break;
                }
                i += 8;
            }
            continue;
        }
        Py_ssize_t k;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
        }
        else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0) {
                lo = 0xA0;
            }
            else if (c == 0xED) {
                hi = 0x9F;
            }
        }
        else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0) {
                lo = 0x90;
            }
            else if (c == 0xF4) {
                hi = 0x8F;
            }
        }
        else {
            return 0;
        }
        if (k > n - i - 1 || p[i + 1] < lo || p[i + 1] > hi) {
            return 0;
        }
        for (Py_ssize_t j = 2; j <= k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) {
                return 0;
            }
        }
        i += k + 1;
    }
    return 1;
}

static int
all_ascii(const unsigned char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p[i] >= 0x80) {
            return 0;
        }
    }
    return 1;
}

/* Whether a VAR value renders as its own bytes: UTF-8 bytes (binary, or text in UTF-8), or
 * ASCII text in a codec that maps ASCII to itself. */
static int
text_as_is(const char *codec, const unsigned char *p, Py_ssize_t n)
{
    if (codec == NULL || strcmp(codec, "utf_8") == 0) {
        return utf8_valid(p, n);
    }
    if (strcmp(codec, "ascii") == 0 || strcmp(codec, "latin_1") == 0 || strcmp(codec, "cp1252") == 0) {
        return all_ascii(p, n);
    }
    return 0;
}

static int
put_text(Buf *b, const char *s)
{
    return buf_put(b, s, (Py_ssize_t)strlen(s));
}

/* Days since 1970-01-01 -> civil date (proleptic Gregorian; H. Hinnant's algorithm). */
static void
civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

/* v with at least `width` (<= 20) digits, zero-padded as %0Nd. */
static char *
fmt_pad(char *out, uint64_t v, int width)
{
    char tmp[24];
    const char *start = mb_digits_padded(tmp + 24, v, width);
    size_t n = (size_t)(tmp + 24 - start);
    memcpy(out, start, n);
    return out + n;
}

/* Decimal text of v into out; returns the end. */
static char *
fmt_u64(char *out, uint64_t v)
{
    return fmt_pad(out, v, 1);
}

/* Decimal text of v (with '-' when negative) into out; returns the end. */
static char *
fmt_i64(char *out, int64_t v)
{
    if (v < 0) {
        *out++ = '-';
        return fmt_u64(out, (uint64_t)0 - (uint64_t)v);
    }
    return fmt_u64(out, (uint64_t)v);
}

/* v < 100 as two digits. */
static inline char *
put2(char *o, uint64_t v)
{
    memcpy(o, MB_DIGIT_PAIRS + v * 2, 2);
    return o + 2;
}

/* v zero-padded to two digits (more when v >= 100). */
static inline char *
pad2(char *o, uint64_t v)
{
    return v < 100 ? put2(o, v) : fmt_pad(o, v, 2);
}

/* "[-]HH:MM:SS[.ffffff]" */
static char *
fmt_time(char *o, int negative, uint64_t hh, uint64_t mi, uint64_t ss, uint64_t micro)
{
    if (negative) {
        *o++ = '-';
    }
    o = pad2(o, hh);
    *o++ = ':';
    o = pad2(o, mi);
    *o++ = ':';
    o = pad2(o, ss);
    if (micro) {
        *o++ = '.';
        o = micro < 1000000 ? put2(put2(put2(o, micro / 10000), micro / 100 % 100), micro % 100)
                            : fmt_pad(o, micro, 6);
    }
    return o;
}

/* "YYYY-MM-DD" then, when `time`, " HH:MM:SS" and ".ffffff" when micro is not 0. */
static char *
fmt_datetime(char *o, uint64_t y, uint64_t m, uint64_t d, int time, uint64_t hh, uint64_t mi, uint64_t ss,
             uint64_t micro)
{
    o = y < 10000 ? put2(put2(o, y / 100), y % 100) : fmt_pad(o, y, 4);
    *o++ = '-';
    o = pad2(o, m);
    *o++ = '-';
    o = pad2(o, d);
    if (time) {
        *o++ = ' ';
        o = fmt_time(o, 0, hh, mi, ss, micro);
    }
    return o;
}

/* Render fixed-size column c at p into b natively; 1 done, 0 = not natively (caller uses Python), -1 error. */
static int
render_fixed(Buf *b, const Column *c, const unsigned char *p)
{
    char text[96];
    char *o = text;
    Py_ssize_t size = c->size;
    switch (c->op) {
    case OP_INT: {
        uint64_t v = read_le(p, size);
        if (c->flag) {
            if (size < 8 && (v >> (8 * size - 1)) & 1) {
                v |= ~(uint64_t)0 << (8 * size);
            }
            o = fmt_i64(o, (int64_t)v);
        }
        else {
            o = fmt_u64(o, v);
        }
        break;
    }
    case OP_UINT_BE:
        o = fmt_u64(o, read_be(p, size));
        break;
    case OP_YEAR:
        o = fmt_u64(o, p[0] ? p[0] + 1900u : 0u);
        break;
    case OP_FLOAT:
    case OP_DOUBLE: {
        double d = c->op == OP_FLOAT ? PyFloat_Unpack4((const char *)p, 1) : PyFloat_Unpack8((const char *)p, 1);
        if (d == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        char repr[MB_DOUBLE_TEXT_MAX];
        int n = mb_double_repr(d, repr);  /* float.__repr__ */
        if (n >= 0) {
            return buf_put(b, repr, n) < 0 ? -1 : 1;
        }
        char *r = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);  /* inf, nan */
        if (r == NULL) {
            return -1;
        }
        int rc = put_text(b, r);
        PyMem_Free(r);
        return rc < 0 ? -1 : 1;
    }
    case OP_DATE: {
        uint32_t v = (uint32_t)read_le(p, 3);
        o = fmt_datetime(o, v >> 9, v >> 5 & 15, v & 31, 0, 0, 0, 0, 0);
        break;
    }
    case OP_TIME: {
        int64_t v = (int64_t)read_le(p, 3);
        if (v & 0x800000) {
            v -= 0x1000000;
        }
        uint64_t a = (uint64_t)(v < 0 ? -v : v);
        o = fmt_time(o, v < 0, a / 10000, a / 100 % 100, a % 100, 0);
        break;
    }
    case OP_DATETIME: {
        uint64_t v = read_le(p, 8);
        uint64_t d = v / 1000000, t = v % 1000000;
        o = fmt_datetime(o, d / 10000, d / 100 % 100, d % 100, 1, t / 10000, t / 100 % 100, t % 100, 0);
        break;
    }
    case OP_TIMESTAMP:
    case OP_TIMESTAMP2: {
        uint64_t seconds, micro = 0;
        if (c->op == OP_TIMESTAMP) {
            seconds = read_le(p, 4);
        }
        else {
            int shift = 8 * (int)c->a;
            uint64_t v = read_be(p, size);
            seconds = v >> shift;
            micro = (v & (((uint64_t)1 << shift) - 1)) * (uint64_t)c->b;
        }
        if (!seconds && !micro) {
            return put_text(b, "0000-00-00 00:00:00") < 0 ? -1 : 1;
        }
        if (micro > 999999) {
            return 0;  /* Python says what such a value renders as */
        }
        int64_t y;
        unsigned m, d;
        civil_from_days((int64_t)(seconds / 86400), &y, &m, &d);
        uint64_t s = seconds % 86400;
        o = fmt_datetime(o, (uint64_t)y, m, d, 1, s / 3600, s / 60 % 60, s % 60, micro);
        break;
    }
    case OP_DATETIME2: {
        int shift = 8 * (int)c->a;
        uint64_t v = read_be(p, size);
        int64_t intpart = (int64_t)(v >> shift) - INT64_C(0x8000000000);
        if (intpart < 0) {
            intpart = -intpart;
        }
        uint64_t ymd = (uint64_t)intpart >> 17, ym = ymd >> 5, hms = (uint64_t)intpart & 0x1FFFF;
        uint64_t micro = (v & (((uint64_t)1 << shift) - 1)) * (uint64_t)c->b;
        o = fmt_datetime(o, ym / 13, ym % 13, ymd & 31, 1, hms >> 12, hms >> 6 & 63, hms & 63, micro);
        break;
    }
    case OP_TIME2: {
        int shift = 8 * (int)c->a;
        int64_t v = (int64_t)read_be(p, size) - ((int64_t)0x800000 << shift);
        uint64_t a = (uint64_t)(v < 0 ? -v : v);
        uint64_t hms = a >> shift;
        uint64_t micro = (a & (((uint64_t)1 << shift) - 1)) * (uint64_t)c->b;
        o = fmt_time(o, v < 0, hms >> 12 & 1023, hms >> 6 & 63, hms & 63, micro);
        break;
    }
    default:
        return 0;  /* DECIMAL (see render_decimal), Python conversions */
    }
    return buf_put(b, text, o - text) < 0 ? -1 : 1;
}

/* Packed DECIMAL as str(Decimal) prints it, when that is the plain notation; 0 = use Python.
 * The digits are _decimal.h's; only the notation check is str(Decimal)'s. */
static int
render_decimal(Buf *b, const Column *c, const unsigned char *p)
{
    char text[MB_DECIMAL_TEXT_MAX];
    int len = mb_decimal_text(p, c->a, c->b, text);
    if (len < 0) {
        return 0;
    }
    const char *digits = text + (text[0] == '-'), *end = text + len;
    if (c->b && digits[0] == '0' && digits[1] == '.') {
        /* str(Decimal) switches to exponent form when the adjusted exponent is below -6 */
        const char *f = digits + 2;
        while (f < end && *f == '0') {
            f++;
        }
        Py_ssize_t coefficient = f == end ? 1 : end - f;
        if (coefficient - 1 - (Py_ssize_t)c->b < -6) {
            return 0;
        }
    }
    return buf_put(b, text, len) < 0 ? -1 : 1;
}

/* Render through Python: the value as the row decoder builds it, then render(value). */
static int
render_python(MapBuilder *self, Buf *b, PyObject *value, int *is_null)
{
    if (value == NULL) {
        return -1;
    }
    PyObject *s = PyObject_CallOneArg(self->render, value);
    Py_DECREF(value);
    if (s == NULL) {
        return -1;
    }
    if (s == Py_None) {
        Py_DECREF(s);
        *is_null = 1;
        return 0;
    }
    Py_ssize_t n;
    const char *u = PyUnicode_Check(s) ? PyUnicode_AsUTF8AndSize(s, &n) : NULL;
    if (u == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "render must return str or None");
        }
        Py_DECREF(s);
        return -1;
    }
    int rc = buf_put(b, u, n);
    Py_DECREF(s);
    return rc;
}

static const char HEX[] = "0123456789abcdef";

/* Close the row of m whose entries were appended (`valid` 0: a null map, no entries). */
static int
map_end_row(MapCol *m, int valid)
{
    if (buf_bit(&m->valid, m->rows, valid) < 0 || buf_i32(&m->offsets, m->entries) < 0) {
        return -1;
    }
    m->rows++;
    return 0;
}

/* The keys of one image's entries, the same for every row of a rows event: their UTF-8
 * text joined, and where each ends in it (built once per add() call, copied per row). */
typedef struct {
    char *text;
    int32_t *ends;
    Py_ssize_t len;
} Keys;

static void
keys_free(Keys *k)
{
    PyMem_Free(k->text);
    PyMem_Free(k->ends);
    k->text = NULL;
    k->ends = NULL;
}

static int
keys_build(Keys *k, PyObject *names, const Image *img)
{
    Py_ssize_t total = 0;
    k->text = NULL;
    k->ends = PyMem_Malloc((size_t)(img->ncols ? img->ncols : 1) * sizeof(int32_t));
    if (k->ends == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < img->ncols; i++) {
        Py_ssize_t n;
        if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(names, img->cols[i].index), &n) == NULL) {
            keys_free(k);
            return -1;
        }
        total += n;
        if (total > INT32_MAX) {
            keys_free(k);
            PyErr_SetString(PyExc_OverflowError, "column names too long");
            return -1;
        }
        k->ends[i] = (int32_t)total;
    }
    k->text = PyMem_Malloc((size_t)(total ? total : 1));
    if (k->text == NULL) {
        keys_free(k);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0, at = 0; i < img->ncols; i++) {
        Py_ssize_t n;
        const char *t = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(names, img->cols[i].index), &n);
        memcpy(k->text + at, t, (size_t)n);
        at += n;
    }
    k->len = total;
    return 0;
}

/* One image into map column m; returns 0 and advances *pos, or -1 (error set). */
static int
map_image(MapBuilder *self, MapCol *m, const Keys *keys, const Image *img, PyObject *data, const unsigned char *buf,
          Py_ssize_t len, Py_ssize_t *pos)
{
    Py_ssize_t start = *pos, p = start;
    if (img->null_bytes > len - p) {
        raise_at(data, img->reader, start, p);
        return -1;
    }
    const unsigned char *nulls = buf + p;
    p += img->null_bytes;
    /* The row's keys in one copy; its key offsets, value offsets and validity bits have
     * room made here once (the values' own text grows as it is rendered). */
    Py_ssize_t base = m->keys.len, ncols = img->ncols;
    if (buf_put(&m->keys, keys->text, keys->len) < 0 || buf_reserve(&m->key_offsets, 4 * ncols) < 0
        || buf_reserve(&m->value_offsets, 4 * ncols) < 0 || buf_reserve(&m->value_valid, ncols / 8 + 1) < 0) {
        return -1;
    }
    for (Py_ssize_t k = 0; k < ncols; k++) {
        if (put_i32(&m->key_offsets, base + keys->ends[k]) < 0) {
            return -1;
        }
    }
    Py_ssize_t run_start = -1;
    for (Py_ssize_t k = 0; k < ncols; k++) {
        const Column *c = &img->cols[k];
        int is_null = 0, rc = 0;
        if (nulls[k >> 3] >> (k & 7) & 1) {
            is_null = 1;
        }
        else if (c->fixed) {
            if (run_start < 0) {
                run_start = p;
            }
            if (c->size > len - p) {
                raise_at(data, img->reader, start, run_start);
                return -1;
            }
            rc = c->op == OP_DECIMAL ? render_decimal(&m->values, c, buf + p) : render_fixed(&m->values, c, buf + p);
            if (rc == 0) {
                rc = render_python(self, &m->values, fixed_value(c, buf + p), &is_null);
            }
            p += c->size;
        }
        else {
            run_start = -1;
            if (c->op == OP_VAR) {
                Py_ssize_t prefix = c->size;
                if (prefix > len - p) {
                    raise_at(data, img->reader, start, p);
                    return -1;
                }
                uint64_t n = read_le(buf + p, prefix);
                if (n > (uint64_t)(len - p - prefix)) {
                    raise_at(data, img->reader, start, p);
                    return -1;
                }
                const unsigned char *v = buf + p + prefix;
                if (text_as_is(c->codec, v, (Py_ssize_t)n)) {
                    rc = buf_put(&m->values, v, (Py_ssize_t)n);
                }
                else if (c->codec == NULL) {  /* bytes that are not UTF-8: 0x + hex */
                    rc = buf_reserve(&m->values, 2 + 2 * (Py_ssize_t)n);
                    if (rc == 0) {
                        char *o = m->values.p + m->values.len;
                        *o++ = '0';
                        *o++ = 'x';
                        for (uint64_t i = 0; i < n; i++) {
                            *o++ = HEX[v[i] >> 4];
                            *o++ = HEX[v[i] & 15];
                        }
                        m->values.len += 2 + 2 * (Py_ssize_t)n;
                    }
                }
                else {
                    rc = render_python(self, &m->values, text_value(c, v, (Py_ssize_t)n), &is_null);
                }
                p += prefix + (Py_ssize_t)n;
            }
            else if (c->op == OP_NONE) {
                is_null = 1;
            }
            else {
                raise_at(data, img->reader, start, p);
                return -1;
            }
        }
        /* room made above: render_* grow only m->values */
        if (rc < 0 || put_i32(&m->value_offsets, m->values.len) < 0) {
            return -1;
        }
        put_bit(&m->value_valid, m->entries, !is_null);
        m->entries++;
    }
    if (map_end_row(m, 1) < 0) {
        return -1;
    }
    *pos = p;
    return 0;
}

static int
map_null(MapCol *m)
{
    return map_end_row(m, 0);
}

static Py_ssize_t
MapBuilder_bytes(MapBuilder *self)
{
    Py_ssize_t n = self->event_no.len + self->row_index.len;
    for (int i = 0; i < MC_BUFS; i++) {
        n += mapcol_bufs(&self->before, i)->len + mapcol_bufs(&self->after, i)->len;
    }
    return n;
}

/* add(data, pos, first, second, kind, names, event_no, row_index, max_rows, max_bytes) -> (pos, row_index)
 *
 * Appends the rows of a rows event's rows_data from offset pos until the data
 * ends or the builder holds max_rows rows or max_bytes bytes; returns where it
 * stopped and the next row's index in its event. */
static PyObject *
MapBuilder_add(MapBuilder *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError,
                        "add(data, pos, first, second, kind, names, event_no, row_index, max_rows, max_bytes)");
        return NULL;
    }
    PyObject *data = args[0], *kind = args[4], *names = args[5];
    if (g_error == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_arrowfast.configure() was not called");
        return NULL;
    }
    if (!PyBytes_Check(data) || !PyObject_TypeCheck(args[2], g_image_type) || !PyUnicode_Check(kind)
        || !PyTuple_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "add(bytes, int, Image, Image | None, str, tuple, int, int, int, int)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    long long event_no = PyLong_AsLongLong(args[6]);
    Py_ssize_t row_index = PyLong_AsSsize_t(args[7]), max_rows = PyLong_AsSsize_t(args[8]),
               max_bytes = PyLong_AsSsize_t(args[9]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    const Image *first = (const Image *)args[2], *second = NULL;
    int mode = parse_kind(kind, args[3], &second);
    if (mode < 0) {
        return NULL;
    }
    if (first->width > PyTuple_GET_SIZE(names) || (second != NULL && second->width > PyTuple_GET_SIZE(names))) {
        PyErr_SetString(PyExc_ValueError, "fewer names than columns");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "names must be str");
            return NULL;
        }
    }
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t len = PyBytes_GET_SIZE(data);
    if (pos < 0 || pos > len) {
        PyErr_SetString(PyExc_ValueError, "pos outside the data");
        return NULL;
    }
    Keys first_keys = {NULL, NULL, 0}, second_keys = {NULL, NULL, 0};
    if (keys_build(&first_keys, names, first) < 0 || (second != NULL && keys_build(&second_keys, names, second) < 0)) {
        keys_free(&first_keys);
        return NULL;
    }
    Py_INCREF(data);  /* render() runs Python code: keep the buffer alive */
    while (pos < len && self->rows < max_rows && MapBuilder_bytes(self) < max_bytes) {
        Py_ssize_t start = pos;
        int rc;
        if (mode == 0) {
            rc = map_null(&self->before) < 0 ? -1 : map_image(self, &self->after, &first_keys, first, data, buf, len, &pos);
        }
        else if (mode == 2) {
            rc = map_image(self, &self->before, &first_keys, first, data, buf, len, &pos) < 0
                     ? -1 : map_null(&self->after);
        }
        else {
            rc = map_image(self, &self->before, &first_keys, first, data, buf, len, &pos) < 0
                     ? -1 : map_image(self, &self->after, &second_keys, second, data, buf, len, &pos);
        }
        if (rc < 0) {
            goto fail;
        }
        if (pos == start) {
            raise_at(data, Py_None, start, pos);
            goto fail;
        }
        int32_t ev = (int32_t)event_no, ri = (int32_t)row_index;
        if (buf_put(&self->event_no, &ev, 4) < 0 || buf_put(&self->row_index, &ri, 4) < 0) {
            goto fail;
        }
        row_index++;
        self->rows++;
    }
    Py_DECREF(data);
    keys_free(&first_keys);
    keys_free(&second_keys);
    return Py_BuildValue("nn", pos, row_index);
fail:
    Py_DECREF(data);
    keys_free(&first_keys);
    keys_free(&second_keys);
    return NULL;
}

static PyObject *
mapcol_take(MapCol *m)
{
    PyObject *out = PyTuple_New(MC_BUFS + 2);
    if (out == NULL) {
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, PyLong_FromSsize_t(m->rows));
    PyTuple_SET_ITEM(out, 1, PyLong_FromSsize_t(m->entries));
    for (int i = 0; i < MC_BUFS; i++) {
        PyObject *b = buf_take(mapcol_bufs(m, i));
        if (b == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, 2 + i, b);
    }
    if (PyErr_Occurred() || mapcol_reset(m) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* take() -> (rows, event_no, row_index, before, after); before/after are
 * (rows, entries, valid, offsets, key_offsets, keys, value_valid, value_offsets, values). */
static PyObject *
MapBuilder_take(MapBuilder *self, PyObject *unused)
{
    PyObject *before = mapcol_take(&self->before);
    PyObject *after = before == NULL ? NULL : mapcol_take(&self->after);
    PyObject *ev = after == NULL ? NULL : buf_take(&self->event_no);
    PyObject *ri = ev == NULL ? NULL : buf_take(&self->row_index);
    if (ri == NULL) {
        Py_XDECREF(before);
        Py_XDECREF(after);
        Py_XDECREF(ev);
        return NULL;
    }
    PyObject *out = Py_BuildValue("nNNNN", self->rows, ev, ri, before, after);
    self->rows = 0;
    return out;
}

static PyObject *
MapBuilder_get_rows(MapBuilder *self, void *closure)
{
    return PyLong_FromSsize_t(self->rows);
}

static PyObject *
MapBuilder_get_nbytes(MapBuilder *self, void *closure)
{
    return PyLong_FromSsize_t(MapBuilder_bytes(self));
}

static PyMethodDef MapBuilder_methods[] = {
    {"add", (PyCFunction)(void (*)(void))MapBuilder_add, METH_FASTCALL,
     "add(data, pos, first, second, kind, names, event_no, row_index, max_rows, max_bytes) -> (pos, row_index)"},
    {"take", (PyCFunction)MapBuilder_take, METH_NOARGS,
     "take() -> (rows, event_no, row_index, before, after): the buffers so far; the builder starts empty again."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef MapBuilder_getset[] = {
    {"rows", (getter)MapBuilder_get_rows, NULL, "rows held", NULL},
    {"nbytes", (getter)MapBuilder_get_nbytes, NULL, "bytes held in the buffers", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject MapBuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mariabinlog.spark._arrowfast.MapBuilder",
    .tp_doc = "MapBuilder(render): rows events' images as the buffers of two Arrow map<string,string> arrays.",
    .tp_basicsize = sizeof(MapBuilder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = MapBuilder_new,
    .tp_dealloc = (destructor)MapBuilder_dealloc,
    .tp_traverse = (traverseproc)MapBuilder_traverse,
    .tp_clear = (inquiry)MapBuilder_clear,
    .tp_methods = MapBuilder_methods,
    .tp_getset = MapBuilder_getset,
};

/* configure(Image, absent, MysqlDate, MysqlTime, MysqlDateTime, MysqlTimestamp, Decimal, error_hook):
 * the codec's compiled Image type, value classes and error hook (codec.rows.compiled_images()). */
static PyObject *
arrowfast_configure(PyObject *module, PyObject *args)
{
    PyObject *image, *absent, *date, *time, *datetime, *timestamp, *decimal, *error;
    if (!PyArg_ParseTuple(args, "OOOOOOOO:configure", &image, &absent, &date, &time, &datetime, &timestamp,
                          &decimal, &error)) {
        return NULL;
    }
    if (!PyType_Check(image) || ((PyTypeObject *)image)->tp_basicsize != (Py_ssize_t)sizeof(Image)
        || strcmp(((PyTypeObject *)image)->tp_name, "mariabinlog.codec.rows._rowsfast.Image") != 0) {
        PyErr_SetString(PyExc_TypeError, "Image must be the codec's _rowsfast.Image built from the same _rowimage.h");
        return NULL;
    }
    if (set_values(absent, date, time, datetime, timestamp, decimal, error) < 0) {
        return NULL;
    }
    Py_INCREF(image);
    Py_XSETREF(g_image_type, (PyTypeObject *)image);
    Py_RETURN_NONE;
}

/* repeat(events, kinds, index) -> list: per-event values repeated per row, as Arrow buffers.
 *
 * Row r of column c is events[index[r]][c] (index: the int32 event numbers
 * MapBuilder.take returns).  kinds has one letter per column: 'q' int64 and
 * 'i' int32 give (valid | None, null_count, data); 's' str gives (valid | None,
 * null_count, offsets, data); 'l' list of str gives (valid | None, null_count,
 * offsets, child_offsets, child_data).  None is null.  This is what Arrow's
 * take does after pa.array on each column, without building either. */

/* Value c of event e (a list or tuple, as arrowfast_repeat checked). */
#define REP_ITEM(events, e, c) PySequence_Fast_GET_ITEM(PyList_GET_ITEM((events), (e)), (c))

/* The validity bitmap of the rows whose event has null[e] set: None when no row is null. */
static PyObject *
rep_valid(const int32_t *index, Py_ssize_t rows, const char *null, Py_ssize_t events, Py_ssize_t *nulls)
{
    *nulls = 0;
    if (memchr(null, 1, (size_t)events) == NULL) {
        Py_RETURN_NONE;
    }
    for (Py_ssize_t r = 0; r < rows; r++) {
        *nulls += null[index[r]];
    }
    if (*nulls == 0) {
        Py_RETURN_NONE;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (rows + 7) >> 3);
    if (out == NULL) {
        return NULL;
    }
    unsigned char *bits = (unsigned char *)PyBytes_AS_STRING(out);
    memset(bits, 0, (size_t)((rows + 7) >> 3));
    for (Py_ssize_t r = 0; r < rows; r++) {
        if (!null[index[r]]) {
            bits[r >> 3] |= (unsigned char)(1 << (r & 7));
        }
    }
    return out;
}

static int
rep_str(PyObject *v, const char **text, Py_ssize_t *len)
{
    if (!PyUnicode_Check(v)) {
        PyErr_SetString(PyExc_TypeError, "repeat: a 's' or 'l' column holds a value that is not str");
        return -1;
    }
    *text = PyUnicode_AsUTF8AndSize(v, len);
    return *text == NULL ? -1 : 0;
}

/* The offsets (int32) and data of rows' strings; strings[e] / lens[e] per event. */
static int
rep_strings(const int32_t *index, Py_ssize_t rows, const char *const *strings, const Py_ssize_t *lens,
            PyObject **offsets, PyObject **data)
{
    Py_ssize_t total = 0;
    for (Py_ssize_t r = 0; r < rows; r++) {
        total += lens[index[r]];
    }
    if (total > INT32_MAX) {
        return arrow_too_big();
    }
    *offsets = PyBytes_FromStringAndSize(NULL, (rows + 1) * 4);
    *data = *offsets == NULL ? NULL : PyBytes_FromStringAndSize(NULL, total);
    if (*data == NULL) {
        Py_CLEAR(*offsets);
        return -1;
    }
    int32_t *off = (int32_t *)PyBytes_AS_STRING(*offsets);
    char *out = PyBytes_AS_STRING(*data);
    int32_t at = 0;
    off[0] = 0;
    for (Py_ssize_t r = 0; r < rows; r++) {
        int32_t e = index[r];
        if (lens[e]) {
            memcpy(out + at, strings[e], (size_t)lens[e]);
        }
        at += (int32_t)lens[e];
        off[r + 1] = at;
    }
    return 0;
}

/* An int64 ('q') or int32 ('i') column: the rows' values, `width` bytes each. */
static int
rep_ints(PyObject *events, Py_ssize_t c, int width, const int32_t *index, Py_ssize_t rows, char *null,
         PyObject **data)
{
    Py_ssize_t n = PyList_GET_SIZE(events);
    int64_t *vals = PyMem_Calloc((size_t)(n ? n : 1), sizeof(int64_t));
    if (vals == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t e = 0; e < n; e++) {
        PyObject *v = REP_ITEM(events, e, c);
        null[e] = v == Py_None;
        if (v == Py_None) {
            continue;
        }
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) {
            PyMem_Free(vals);
            return -1;
        }
        if (width == 4 && (x > INT32_MAX || x < INT32_MIN)) {
            PyMem_Free(vals);
            PyErr_SetString(PyExc_OverflowError, "repeat: value out of int32 range");
            return -1;
        }
        vals[e] = x;
    }
    *data = PyBytes_FromStringAndSize(NULL, rows * width);
    if (*data != NULL) {
        char *p = PyBytes_AS_STRING(*data);
        for (Py_ssize_t r = 0; r < rows; r++) {
            int64_t x = vals[index[r]];
            int32_t y = (int32_t)x;
            memcpy(p + r * width, width == 8 ? (void *)&x : (void *)&y, (size_t)width);
        }
    }
    PyMem_Free(vals);
    return *data == NULL ? -1 : 0;
}

/* A str ('s') column: the rows' string offsets and data. */
static int
rep_text(PyObject *events, Py_ssize_t c, const int32_t *index, Py_ssize_t rows, char *null,
         PyObject **offsets, PyObject **data)
{
    Py_ssize_t n = PyList_GET_SIZE(events);
    const char **strings = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
    Py_ssize_t *lens = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));
    int ok = strings != NULL && lens != NULL;
    if (!ok) {
        PyErr_NoMemory();
    }
    for (Py_ssize_t e = 0; ok && e < n; e++) {
        PyObject *v = REP_ITEM(events, e, c);
        null[e] = v == Py_None;
        ok = v == Py_None || rep_str(v, &strings[e], &lens[e]) == 0;
    }
    ok = ok && rep_strings(index, rows, strings, lens, offsets, data) == 0;
    PyMem_Free((void *)strings);
    PyMem_Free(lens);
    return ok ? 0 : -1;
}

/* A list-of-str ('l') column: the rows' list offsets, then their strings' offsets and data
 * (each event's strings laid out once, every row pointing at its event's). */
static int
rep_lists(PyObject *events, Py_ssize_t c, const int32_t *index, Py_ssize_t rows, char *null,
          PyObject **offsets, PyObject **item_offsets, PyObject **data)
{
    Py_ssize_t n = PyList_GET_SIZE(events), items = 0, total_items = 0;
    Py_ssize_t *counts = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));
    Py_ssize_t *first = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));  /* event e's first item */
    const char **strings = NULL;
    Py_ssize_t *lens = NULL;
    int32_t *flat = NULL;  /* the item numbers of every row's strings, in row order */
    int ok = counts != NULL && first != NULL;
    if (!ok) {
        PyErr_NoMemory();
    }
    for (Py_ssize_t e = 0; ok && e < n; e++) {
        PyObject *v = REP_ITEM(events, e, c);
        null[e] = v == Py_None;
        if (v != Py_None && !PyList_Check(v) && !PyTuple_Check(v)) {
            PyErr_SetString(PyExc_TypeError, "repeat: an 'l' column holds a value that is not a list");
            ok = 0;
            break;
        }
        first[e] = items;
        counts[e] = v == Py_None ? 0 : PySequence_Fast_GET_SIZE(v);
        items += counts[e];
    }
    if (ok) {
        strings = PyMem_Calloc((size_t)(items ? items : 1), sizeof(char *));
        lens = PyMem_Calloc((size_t)(items ? items : 1), sizeof(Py_ssize_t));
        ok = strings != NULL && lens != NULL;
        if (!ok) {
            PyErr_NoMemory();
        }
    }
    for (Py_ssize_t e = 0; ok && e < n; e++) {
        for (Py_ssize_t i = 0; ok && i < counts[e]; i++) {
            PyObject *v = REP_ITEM(events, e, c);
            ok = rep_str(PySequence_Fast_GET_ITEM(v, i), &strings[first[e] + i], &lens[first[e] + i]) == 0;
        }
    }
    for (Py_ssize_t r = 0; ok && r < rows; r++) {
        total_items += counts[index[r]];
    }
    if (ok && total_items > INT32_MAX) {
        ok = arrow_too_big() == 0;
    }
    if (ok) {
        flat = PyMem_Malloc((size_t)(total_items ? total_items : 1) * sizeof(int32_t));
        *offsets = flat == NULL ? NULL : PyBytes_FromStringAndSize(NULL, (rows + 1) * 4);
        ok = *offsets != NULL;
        if (flat == NULL) {
            PyErr_NoMemory();
        }
    }
    if (ok) {
        int32_t *off = (int32_t *)PyBytes_AS_STRING(*offsets);
        int32_t at = 0;
        off[0] = 0;
        for (Py_ssize_t r = 0; r < rows; r++) {
            int32_t e = index[r];
            for (Py_ssize_t i = 0; i < counts[e]; i++) {
                flat[at++] = (int32_t)(first[e] + i);
            }
            off[r + 1] = at;
        }
        ok = rep_strings(flat, total_items, strings, lens, item_offsets, data) == 0;
    }
    PyMem_Free(flat);
    PyMem_Free(first);
    PyMem_Free(counts);
    PyMem_Free((void *)strings);
    PyMem_Free(lens);
    return ok ? 0 : -1;
}

/* One column of repeat(): (valid | None, null_count, *buffers), buffers as the kind has. */
static PyObject *
rep_column(PyObject *events, Py_ssize_t c, char kind, const int32_t *index, Py_ssize_t rows, char *null)
{
    PyObject *bufs[3] = {NULL, NULL, NULL}, *valid = NULL, *out = NULL;
    int count = kind == 'l' ? 3 : kind == 's' ? 2 : 1, ok;
    if (kind == 'l') {
        ok = rep_lists(events, c, index, rows, null, &bufs[0], &bufs[1], &bufs[2]);
    }
    else if (kind == 's') {
        ok = rep_text(events, c, index, rows, null, &bufs[0], &bufs[1]);
    }
    else {
        ok = rep_ints(events, c, kind == 'q' ? 8 : 4, index, rows, null, &bufs[0]);
    }
    Py_ssize_t nulls;
    if (ok == 0) {
        valid = rep_valid(index, rows, null, PyList_GET_SIZE(events), &nulls);
    }
    if (valid != NULL) {
        out = count == 1 ? Py_BuildValue("OnO", valid, nulls, bufs[0])
              : count == 2 ? Py_BuildValue("OnOO", valid, nulls, bufs[0], bufs[1])
                           : Py_BuildValue("OnOOO", valid, nulls, bufs[0], bufs[1], bufs[2]);
    }
    Py_XDECREF(valid);
    for (int i = 0; i < 3; i++) {
        Py_XDECREF(bufs[i]);
    }
    return out;
}

static PyObject *
arrowfast_repeat(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_Check(args[0]) || !PyUnicode_Check(args[1]) || !PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "repeat(events: list, kinds: str, index: bytes)");
        return NULL;
    }
    PyObject *events = args[0];
    Py_ssize_t width;
    const char *kinds = PyUnicode_AsUTF8AndSize(args[1], &width);
    if (kinds == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(events), rows = PyBytes_GET_SIZE(args[2]) / 4;
    const int32_t *index = (const int32_t *)PyBytes_AS_STRING(args[2]);
    for (Py_ssize_t c = 0; c < width; c++) {
        if (strchr("qisl", kinds[c]) == NULL || kinds[c] == '\0') {
            PyErr_Format(PyExc_ValueError, "repeat: unknown column kind %R", args[1]);
            return NULL;
        }
    }
    for (Py_ssize_t e = 0; e < n; e++) {
        PyObject *event = PyList_GET_ITEM(events, e);
        if ((!PyList_Check(event) && !PyTuple_Check(event)) || PySequence_Fast_GET_SIZE(event) < width) {
            PyErr_SetString(PyExc_TypeError, "repeat: every event must be a list or tuple of a value per kind");
            return NULL;
        }
    }
    for (Py_ssize_t r = 0; r < rows; r++) {
        if (index[r] < 0 || index[r] >= n) {
            PyErr_SetString(PyExc_IndexError, "repeat: an event number outside events");
            return NULL;
        }
    }
    char *null = PyMem_Calloc((size_t)(n ? n : 1), 1);
    PyObject *out = null == NULL ? PyErr_NoMemory() : PyList_New(width);
    for (Py_ssize_t c = 0; out != NULL && c < width; c++) {
        PyObject *column = rep_column(events, c, kinds[c], index, rows, null);
        if (column == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, c, column);
    }
    PyMem_Free(null);
    return out;
}

/* double_repr(x): float.__repr__(x) by the compiled conversion the map builder uses. */
static PyObject *
arrowfast_double_repr(PyObject *self, PyObject *arg)
{
    double d = PyFloat_AsDouble(arg);
    if (d == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    char text[MB_DOUBLE_TEXT_MAX];
    int n = mb_double_repr(d, text);
    if (n < 0) {
        return PyObject_Repr(arg);
    }
    return PyUnicode_FromStringAndSize(text, n);
}

static PyMethodDef methods[] = {
    {"repeat", (PyCFunction)(void (*)(void))arrowfast_repeat, METH_FASTCALL,
     "repeat(events, kinds, index) -> list: per-event values repeated per row as Arrow buffers."},
    {"double_repr", arrowfast_double_repr, METH_O,
     "double_repr(x) -> str: float.__repr__(x) as the map builder renders FLOAT/DOUBLE values."},
    {"configure", arrowfast_configure, METH_VARARGS,
     "configure(Image, absent, MysqlDate, MysqlTime, MysqlDateTime, MysqlTimestamp, Decimal, error_hook)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "mariabinlog.spark._arrowfast",
    .m_doc = "Compiled Arrow builder of the Spark rows view (the same batches as spark.read's pure path).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__arrowfast(void)
{
    if (PyType_Ready(&MapBuilderType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "PLAN_VERSION", PLAN_VERSION) < 0
        || PyModule_AddObjectRef(m, "MapBuilder", (PyObject *)&MapBuilderType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
