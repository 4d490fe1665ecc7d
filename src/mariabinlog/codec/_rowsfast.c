/* Compiled fast path of mariabinlog.codec.rows: decode a rows event's row images.
 *
 * A small interpreter.  Python (rows.py) compiles, once per table map and column
 * bitmap, an image program: one opcode entry per present column (what to read,
 * its size and parameters).  This module walks the program over every row
 * image of ``rows_data``: NULL bitmap, then each present non-NULL value, and
 * builds exactly the values the pure-Python decoder builds (ints, floats,
 * Decimal, bytes/str, the Mysql* NamedTuples, None, ABSENT).
 *
 * Column-type knowledge (which type reads how, charsets, signedness) stays in
 * rows.py; values that this module does not build natively go through a
 * Python conversion function given in the program.  Errors: every read is
 * bounds-checked; on bad data this module computes the offset of the failing
 * read and calls rows.py's error hook, which runs the Python plan of that one
 * image to raise the pure decoder's DecodeError (class, offset and message;
 * the hook checks that the offsets agree).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_decimal.h"

/* Bump together with rows._FAST_PLAN_VERSION whenever opcodes or arguments change. */
#define PLAN_VERSION 1

enum {
    OP_INT = 1,        /* little-endian integer, size 1..8, flag = signed */
    OP_UINT_BE = 2,    /* big-endian unsigned integer, size 0..8 (BIT) */
    OP_FLOAT = 3,      /* IEEE float, 4 bytes */
    OP_DOUBLE = 4,     /* IEEE double, 8 bytes */
    OP_YEAR = 5,       /* 1 byte: 0, or 1900 + byte */
    OP_DATE = 6,       /* 3 bytes LE: MysqlDate */
    OP_TIME = 7,       /* 3 bytes LE signed HHMMSS: MysqlTime */
    OP_DATETIME = 8,   /* 8 bytes LE YYYYMMDDHHMMSS: MysqlDateTime */
    OP_TIMESTAMP = 9,  /* 4 bytes LE seconds: MysqlTimestamp */
    OP_TIMESTAMP2 = 10, /* BE seconds + a frac bytes; b = microseconds per unit */
    OP_DATETIME2 = 11, /* BE packed datetime + a frac bytes; b = unit */
    OP_TIME2 = 12,     /* BE packed time + a frac bytes; b = unit */
    OP_DECIMAL = 13,   /* packed DECIMAL(a, b); obj: Python conversion for odd digit groups */
    OP_CONV = 14,      /* any fixed-size value: obj(bytes) */
    OP_VAR = 20,       /* size-byte LE length then data; obj: None (bytes) or a codec name */
    OP_NONE = 21,      /* MYSQL_TYPE_NULL: None, no bytes */
    OP_FAIL = 22,      /* a column this codec cannot read: an error when it holds a value */
};

typedef struct {
    Py_ssize_t index;  /* slot in the row tuple */
    int op;
    int fixed;         /* part of a fixed-size run (the pure decoder's struct runs) */
    Py_ssize_t size;   /* fixed size, or length-prefix bytes of OP_VAR */
    int flag;
    long long a, b;
    PyObject *obj;     /* owned or NULL */
    const char *codec; /* OP_VAR with a text codec: UTF-8 of obj */
} Column;

typedef struct {
    PyObject_HEAD
    Py_ssize_t width;
    Py_ssize_t ncols;
    Py_ssize_t null_bytes;
    Column *cols;
    Py_ssize_t nabsent;
    Py_ssize_t *absent;  /* row slots not in the image */
    PyObject *reader;    /* the Python reader, handed to the error hook */
} Image;

/* Configured once by rows.py. */
static PyObject *g_absent, *g_date, *g_time, *g_datetime, *g_timestamp, *g_rowchange, *g_decimal, *g_error;


static PyTypeObject ImageType;

/* ------------------------------------------------------------------ Image */

static void
Image_dealloc(Image *self)
{
    PyObject_GC_UnTrack(self);
    if (self->cols != NULL) {
        for (Py_ssize_t k = 0; k < self->ncols; k++) {
            Py_XDECREF(self->cols[k].obj);
        }
        PyMem_Free(self->cols);
    }
    PyMem_Free(self->absent);
    Py_XDECREF(self->reader);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Image_traverse(Image *self, visitproc visit, void *arg)
{
    for (Py_ssize_t k = 0; self->cols != NULL && k < self->ncols; k++) {
        Py_VISIT(self->cols[k].obj);
    }
    Py_VISIT(self->reader);
    return 0;
}

static int
Image_clear(Image *self)
{
    for (Py_ssize_t k = 0; self->cols != NULL && k < self->ncols; k++) {
        Py_CLEAR(self->cols[k].obj);
    }
    Py_CLEAR(self->reader);
    return 0;
}

static int
check_column(Column *c, Py_ssize_t k)
{
    Py_ssize_t size = c->size;
    int ok;
    switch (c->op) {
    case OP_INT: ok = size >= 1 && size <= 8; break;
    case OP_UINT_BE: ok = size >= 0 && size <= 8; break;  /* BIT(0) reads no bytes */
    case OP_FLOAT: ok = size == 4; break;
    case OP_DOUBLE: ok = size == 8; break;
    case OP_YEAR: ok = size == 1; break;
    case OP_DATE:
    case OP_TIME: ok = size == 3; break;
    case OP_DATETIME: ok = size == 8; break;
    case OP_TIMESTAMP: ok = size == 4; break;
    case OP_TIMESTAMP2: ok = c->a >= 0 && c->a <= 3 && size == 4 + c->a; break;
    case OP_DATETIME2: ok = c->a >= 0 && c->a <= 3 && size == 5 + c->a; break;
    case OP_TIME2: ok = c->a >= 0 && c->a <= 3 && size == 3 + c->a; break;
    case OP_DECIMAL: {
        long long p = c->a, s = c->b;
        ok = p > 0 && p <= 65 && s >= 0 && s <= p && c->obj != NULL && PyCallable_Check(c->obj)
             && size == mb_decimal_size(p, s);
        break;
    }
    case OP_CONV: ok = size >= 0 && c->obj != NULL && PyCallable_Check(c->obj); break;
    case OP_VAR: ok = size >= 1 && size <= 4 && (c->obj == NULL || PyUnicode_Check(c->obj)); break;
    case OP_NONE:
    case OP_FAIL: ok = 1; break;
    default: ok = 0;
    }
    if (ok && c->fixed != (c->op < OP_VAR)) {
        ok = 0;
    }
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "bad program entry %zd (op %d, size %zd)", k, c->op, size);
        return -1;
    }
    return 0;
}

/* Image(width, program, reader): program is a sequence of
 * (slot, fixed, op, size, flag, a, b, obj) tuples, one per present column. */
static PyObject *
Image_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Py_ssize_t width;
    PyObject *program, *reader;
    static char *kwlist[] = {"width", "program", "reader", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "nOO", kwlist, &width, &program, &reader)) {
        return NULL;
    }
    if (width < 0) {
        PyErr_SetString(PyExc_ValueError, "negative width");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(program, "program must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > width) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "more program entries than columns");
        return NULL;
    }
    Image *self = (Image *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    self->width = width;
    self->null_bytes = (n + 7) >> 3;
    self->cols = PyMem_Calloc(n ? n : 1, sizeof(Column));
    self->absent = PyMem_Calloc(width ? width : 1, sizeof(Py_ssize_t));
    char *used = PyMem_Calloc(width ? width : 1, 1);
    if (self->cols == NULL || self->absent == NULL || used == NULL) {
        PyMem_Free(used);
        Py_DECREF(seq);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    Py_INCREF(reader);
    self->reader = reader;
    for (Py_ssize_t k = 0; k < n; k++) {
        Column *c = &self->cols[k];
        PyObject *obj = NULL;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, k), "npinpLLO;program entry", &c->index, &c->fixed,
                              &c->op, &c->size, &c->flag, &c->a, &c->b, &obj)) {
            goto fail;
        }
        self->ncols = k + 1;
        if (obj != Py_None) {
            Py_INCREF(obj);
            c->obj = obj;
        }
        if (c->index < 0 || c->index >= width || used[c->index]) {
            PyErr_Format(PyExc_ValueError, "program entry %zd: bad or repeated slot %zd", k, c->index);
            goto fail;
        }
        used[c->index] = 1;
        if (check_column(c, k) < 0) {
            goto fail;
        }
        if (c->op == OP_VAR && c->obj != NULL) {
            c->codec = PyUnicode_AsUTF8(c->obj);
            if (c->codec == NULL) {
                goto fail;
            }
        }
    }
    for (Py_ssize_t i = 0; i < width; i++) {
        if (!used[i]) {
            self->absent[self->nabsent++] = i;
        }
    }
    PyMem_Free(used);
    Py_DECREF(seq);
    return (PyObject *)self;
fail:
    PyMem_Free(used);
    Py_DECREF(seq);
    Py_DECREF(self);
    return NULL;
}

static PyObject *
Image_get_null_bytes(Image *self, void *closure)
{
    return PyLong_FromSsize_t(self->null_bytes);
}

static PyGetSetDef Image_getset[] = {
    {"null_bytes", (getter)Image_get_null_bytes, NULL, "Bytes of the NULL bitmap of each image.", NULL},
    {NULL},
};

static PyTypeObject ImageType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mariabinlog.codec._rowsfast.Image",
    .tp_basicsize = sizeof(Image),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Image(width, program, reader): the compiled reader of images with one column bitmap.",
    .tp_new = Image_new,
    .tp_dealloc = (destructor)Image_dealloc,
    .tp_traverse = (traverseproc)Image_traverse,
    .tp_clear = (inquiry)Image_clear,
    .tp_getset = Image_getset,
};

/* ----------------------------------------------------------------- values */

/* True when `v` cannot be part of a reference cycle that the GC must find: not a
 * tracked container, or a permanent singleton.  Tuples holding only such values
 * are untracked at creation, as the GC itself would untrack them on its first
 * pass (_PyTuple_MaybeUntrack); millions of rows then cost the collector nothing. */
static inline int
is_atomic(PyObject *v)
{
    return v == Py_None || v == g_absent || !PyObject_IS_GC(v) || !PyObject_GC_IsTracked(v);
}

/* A NamedTuple (tuple subclass) instance from n new references (stolen; all
 * non-NULL, and atomic when `atomic`). */
static PyObject *
named(PyObject *cls, Py_ssize_t n, PyObject **items, int atomic)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (items[i] == NULL) {
            for (Py_ssize_t j = 0; j < n; j++) {
                Py_XDECREF(items[j]);
            }
            return NULL;
        }
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    PyObject *t = type->tp_alloc(type, n);
    if (t == NULL) {
        for (Py_ssize_t j = 0; j < n; j++) {
            Py_DECREF(items[j]);
        }
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(t, i, items[i]);
    }
    if (atomic) {
        PyObject_GC_UnTrack(t);
    }
    return t;
}

static inline uint64_t
read_le(const unsigned char *p, Py_ssize_t n)
{
    uint64_t v = 0;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

static inline uint64_t
read_be(const unsigned char *p, Py_ssize_t n)
{
    uint64_t v = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

static PyObject *
py_bool(int v)
{
    PyObject *b = v ? Py_True : Py_False;
    Py_INCREF(b);
    return b;
}

static PyObject *
call_conv(PyObject *conv, const unsigned char *p, Py_ssize_t n)
{
    PyObject *raw = PyBytes_FromStringAndSize((const char *)p, n);
    if (raw == NULL) {
        return NULL;
    }
    PyObject *v = PyObject_CallOneArg(conv, raw);
    Py_DECREF(raw);
    return v;
}

/* Packed DECIMAL(precision, scale) -> Decimal(text), as rows._decimal_codec's conv. */
static PyObject *
decimal_value(const Column *c, const unsigned char *p)
{
    char text[MB_DECIMAL_TEXT_MAX];
    int len = mb_decimal_text(p, c->a, c->b, text);
    if (len < 0) {
        /* a digit group beyond its digits (bad data): the Python conversion says what it means */
        return call_conv(c->obj, p, c->size);
    }
    PyObject *s = PyUnicode_New(len, 127);
    if (s == NULL) {
        return NULL;
    }
    memcpy(PyUnicode_1BYTE_DATA(s), text, (size_t)len);
    PyObject *v = PyObject_CallOneArg(g_decimal, s);
    Py_DECREF(s);
    return v;
}

/* The value of fixed-size column c at p (c->size bytes, already bounds-checked). */
static PyObject *
fixed_value(const Column *c, const unsigned char *p)
{
    Py_ssize_t size = c->size;
    switch (c->op) {
    case OP_INT: {
        uint64_t v = read_le(p, size);
        if (c->flag) {
            if (size < 8 && (v >> (8 * size - 1)) & 1) {
                v |= ~(uint64_t)0 << (8 * size);
            }
            return PyLong_FromLongLong((long long)v);
        }
        return PyLong_FromUnsignedLongLong(v);
    }
    case OP_UINT_BE:
        return PyLong_FromUnsignedLongLong(read_be(p, size));
    case OP_FLOAT: {
        double d = PyFloat_Unpack4((const char *)p, 1);
        if (d == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        return PyFloat_FromDouble(d);
    }
    case OP_DOUBLE: {
        double d = PyFloat_Unpack8((const char *)p, 1);
        if (d == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        return PyFloat_FromDouble(d);
    }
    case OP_YEAR:
        return PyLong_FromLong(p[0] ? p[0] + 1900 : 0);
    case OP_DATE: {
        uint32_t v = (uint32_t)read_le(p, 3);
        PyObject *items[3] = {PyLong_FromLong(v >> 9), PyLong_FromLong(v >> 5 & 15), PyLong_FromLong(v & 31)};
        return named(g_date, 3, items, 1);
    }
    case OP_TIME: {
        int64_t v = (int64_t)read_le(p, 3);
        if (v & 0x800000) {
            v -= 0x1000000;
        }
        int64_t a = v < 0 ? -v : v;
        PyObject *items[5] = {py_bool(v < 0), PyLong_FromLongLong(a / 10000), PyLong_FromLongLong(a / 100 % 100),
                              PyLong_FromLongLong(a % 100), PyLong_FromLong(0)};
        return named(g_time, 5, items, 1);
    }
    case OP_DATETIME: {
        uint64_t v = read_le(p, 8);
        uint64_t d = v / 1000000, t = v % 1000000;
        PyObject *items[7] = {
            PyLong_FromUnsignedLongLong(d / 10000), PyLong_FromUnsignedLongLong(d / 100 % 100),
            PyLong_FromUnsignedLongLong(d % 100), PyLong_FromUnsignedLongLong(t / 10000),
            PyLong_FromUnsignedLongLong(t / 100 % 100), PyLong_FromUnsignedLongLong(t % 100), PyLong_FromLong(0),
        };
        return named(g_datetime, 7, items, 1);
    }
    case OP_TIMESTAMP: {
        PyObject *items[2] = {PyLong_FromUnsignedLongLong(read_le(p, 4)), PyLong_FromLong(0)};
        return named(g_timestamp, 2, items, 1);
    }
    case OP_TIMESTAMP2: {
        int shift = 8 * (int)c->a;
        uint64_t v = read_be(p, size);
        uint64_t frac = v & (((uint64_t)1 << shift) - 1);
        PyObject *items[2] = {PyLong_FromUnsignedLongLong(v >> shift),
                              PyLong_FromUnsignedLongLong(frac * (uint64_t)c->b)};
        return named(g_timestamp, 2, items, 1);
    }
    case OP_DATETIME2: {
        int shift = 8 * (int)c->a;
        uint64_t v = read_be(p, size);
        int64_t intpart = (int64_t)(v >> shift) - INT64_C(0x8000000000);
        if (intpart < 0) {
            intpart = -intpart;
        }
        int64_t ymd = intpart >> 17, ym = ymd >> 5, hms = intpart & 0x1FFFF;
        uint64_t frac = v & (((uint64_t)1 << shift) - 1);
        PyObject *items[7] = {
            PyLong_FromLongLong(ym / 13), PyLong_FromLongLong(ym % 13), PyLong_FromLongLong(ymd & 31),
            PyLong_FromLongLong(hms >> 12), PyLong_FromLongLong(hms >> 6 & 63), PyLong_FromLongLong(hms & 63),
            PyLong_FromUnsignedLongLong(frac * (uint64_t)c->b),
        };
        return named(g_datetime, 7, items, 1);
    }
    case OP_TIME2: {
        int shift = 8 * (int)c->a;
        int64_t v = (int64_t)read_be(p, size) - ((int64_t)0x800000 << shift);
        int64_t a = v < 0 ? -v : v;
        int64_t hms = a >> shift;
        int64_t frac = a & (((int64_t)1 << shift) - 1);
        PyObject *items[5] = {py_bool(v < 0), PyLong_FromLongLong(hms >> 12 & 1023),
                              PyLong_FromLongLong(hms >> 6 & 63), PyLong_FromLongLong(hms & 63),
                              PyLong_FromLongLong(frac * c->b)};
        return named(g_time, 5, items, 1);
    }
    case OP_DECIMAL:
        return decimal_value(c, p);
    case OP_CONV:
        return call_conv(c->obj, p, size);
    }
    PyErr_SetString(PyExc_SystemError, "_rowsfast: unknown opcode");
    return NULL;
}

static PyObject *
text_value(const Column *c, const unsigned char *p, Py_ssize_t n)
{
    if (c->codec == NULL) {
        return PyBytes_FromStringAndSize((const char *)p, n);
    }
    PyObject *s = PyUnicode_Decode((const char *)p, n, c->codec, "surrogateescape");
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        /* e.g. odd-length UCS-2: no lossless text form, keep the bytes */
        PyErr_Clear();
        return PyBytes_FromStringAndSize((const char *)p, n);
    }
    return s;
}

/* ------------------------------------------------------------------ decode */

/* Raise through rows.py's hook: the error of the image of `reader` at `image_pos`, failing at `offset`. */
static void
raise_at(PyObject *data, PyObject *reader, Py_ssize_t image_pos, Py_ssize_t offset)
{
    PyObject *r = PyObject_CallFunction(g_error, "OOnn", reader, data, image_pos, offset);
    if (r != NULL) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_SystemError, "_rowsfast: the error hook returned instead of raising");
    }
}

/* Decode the image at *pos; returns the row tuple (new reference) and advances *pos, or NULL. */
static PyObject *
read_image(const Image *img, PyObject *data, const unsigned char *buf, Py_ssize_t len, Py_ssize_t *pos)
{
    Py_ssize_t start = *pos, p = start;
    if (img->null_bytes > len - p) {
        raise_at(data, img->reader, start, p);
        return NULL;
    }
    const unsigned char *nulls = buf + p;
    p += img->null_bytes;
    PyObject *row = PyTuple_New(img->width);
    if (row == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < img->nabsent; i++) {
        Py_INCREF(g_absent);
        PyTuple_SET_ITEM(row, img->absent[i], g_absent);
    }
    Py_ssize_t run_start = -1;  /* start of the current run of fixed-size values, -1 = none */
    int atomic = 1;
    for (Py_ssize_t k = 0; k < img->ncols; k++) {
        const Column *c = &img->cols[k];
        PyObject *value;
        if (nulls[k >> 3] >> (k & 7) & 1) {
            Py_INCREF(Py_None);
            PyTuple_SET_ITEM(row, c->index, Py_None);
            continue;  /* NULLs take no bytes and do not end a run */
        }
        if (c->fixed) {
            if (run_start < 0) {
                run_start = p;
            }
            if (c->size > len - p) {
                raise_at(data, img->reader, start, run_start);
                goto fail;
            }
            value = fixed_value(c, buf + p);
            p += c->size;
        }
        else {
            run_start = -1;
            if (c->op == OP_VAR) {
                Py_ssize_t prefix = c->size;
                if (prefix > len - p) {
                    raise_at(data, img->reader, start, p);
                    goto fail;
                }
                uint64_t n = read_le(buf + p, prefix);
                if (n > (uint64_t)(len - p - prefix)) {
                    raise_at(data, img->reader, start, p);
                    goto fail;
                }
                value = text_value(c, buf + p + prefix, (Py_ssize_t)n);
                p += prefix + (Py_ssize_t)n;
            }
            else if (c->op == OP_NONE) {
                Py_INCREF(Py_None);
                value = Py_None;
            }
            else {
                raise_at(data, img->reader, start, p);
                goto fail;
            }
        }
        if (value == NULL) {
            goto fail;
        }
        if (atomic && (c->op == OP_CONV || c->op == OP_DECIMAL) && !is_atomic(value)) {
            atomic = 0;  /* only Python conversions can give containers */
        }
        PyTuple_SET_ITEM(row, c->index, value);
    }
    if (atomic) {
        PyObject_GC_UnTrack(row);
    }
    *pos = p;
    return row;
fail:
    Py_DECREF(row);
    return NULL;
}

static PyObject *
change(PyObject *kind, PyObject *before, PyObject *after)
{
    PyObject *items[3] = {kind, before, after};
    Py_INCREF(kind);
    return named(g_rowchange, 3, items, is_atomic(before) && is_atomic(after));
}

/* decode(data, first, second, kind) -> list of RowChange
 *
 * kind is 'insert', 'update' or 'delete' (stored as given); `second` reads
 * the after images of updates and is ignored otherwise. */
static PyObject *
rowsfast_decode(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "decode(data, first, second, kind) takes 4 arguments");
        return NULL;
    }
    PyObject *data = args[0], *kind = args[3];
    if (g_error == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_rowsfast.configure() was not called");
        return NULL;
    }
    if (!PyBytes_Check(data) || !PyObject_TypeCheck(args[1], &ImageType) || !PyUnicode_Check(kind)) {
        PyErr_SetString(PyExc_TypeError, "decode(bytes, Image, Image | None, str)");
        return NULL;
    }
    const Image *first = (const Image *)args[1], *second = NULL;
    int mode;  /* 0 insert, 1 update, 2 delete */
    if (PyUnicode_CompareWithASCIIString(kind, "insert") == 0) {
        mode = 0;
    }
    else if (PyUnicode_CompareWithASCIIString(kind, "delete") == 0) {
        mode = 2;
    }
    else if (PyUnicode_CompareWithASCIIString(kind, "update") == 0) {
        mode = 1;
        if (!PyObject_TypeCheck(args[2], &ImageType)) {
            PyErr_SetString(PyExc_TypeError, "an update needs the after-image Image");
            return NULL;
        }
        second = (const Image *)args[2];
    }
    else {
        PyErr_SetString(PyExc_ValueError, "kind must be 'insert', 'update' or 'delete'");
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t len = PyBytes_GET_SIZE(data), pos = 0;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    Py_INCREF(data);  /* callbacks run Python code: keep the buffer alive */
    while (pos < len) {
        Py_ssize_t start = pos;
        PyObject *row = read_image(first, data, buf, len, &pos);
        if (row == NULL) {
            goto fail;
        }
        if (pos == start) {
            Py_DECREF(row);
            raise_at(data, Py_None, start, pos);
            goto fail;
        }
        PyObject *ch;
        if (mode == 0) {
            Py_INCREF(Py_None);
            ch = change(kind, Py_None, row);
        }
        else if (mode == 2) {
            Py_INCREF(Py_None);
            ch = change(kind, row, Py_None);
        }
        else {
            PyObject *after = read_image(second, data, buf, len, &pos);
            if (after == NULL) {
                Py_DECREF(row);
                goto fail;
            }
            ch = change(kind, row, after);
        }
        if (ch == NULL) {
            goto fail;
        }
        int rc = PyList_Append(out, ch);
        Py_DECREF(ch);
        if (rc < 0) {
            goto fail;
        }
    }
    Py_DECREF(data);
    return out;
fail:
    Py_DECREF(data);
    Py_DECREF(out);
    return NULL;
}

static int
check_tuple_class(PyObject *cls, const char *what)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)
        || ((PyTypeObject *)cls)->tp_itemsize != PyTuple_Type.tp_itemsize) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple subclass (a NamedTuple)", what);
        return -1;
    }
    return 0;
}

/* configure(absent, MysqlDate, MysqlTime, MysqlDateTime, MysqlTimestamp, RowChange, Decimal, error_hook) */
static PyObject *
rowsfast_configure(PyObject *module, PyObject *args)
{
    PyObject *absent, *date, *time, *datetime, *timestamp, *rowchange, *decimal, *error;
    if (!PyArg_ParseTuple(args, "OOOOOOOO:configure", &absent, &date, &time, &datetime, &timestamp, &rowchange,
                          &decimal, &error)) {
        return NULL;
    }
    if (check_tuple_class(date, "MysqlDate") < 0 || check_tuple_class(time, "MysqlTime") < 0
        || check_tuple_class(datetime, "MysqlDateTime") < 0 || check_tuple_class(timestamp, "MysqlTimestamp") < 0
        || check_tuple_class(rowchange, "RowChange") < 0) {
        return NULL;
    }
    if (!PyCallable_Check(decimal) || !PyCallable_Check(error)) {
        PyErr_SetString(PyExc_TypeError, "Decimal and the error hook must be callable");
        return NULL;
    }
    PyObject **slots[8] = {&g_absent, &g_date, &g_time, &g_datetime, &g_timestamp, &g_rowchange, &g_decimal, &g_error};
    PyObject *values[8] = {absent, date, time, datetime, timestamp, rowchange, decimal, error};
    for (int i = 0; i < 8; i++) {
        Py_INCREF(values[i]);
        Py_XSETREF(*slots[i], values[i]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"decode", (PyCFunction)(void (*)(void))rowsfast_decode, METH_FASTCALL,
     "decode(data, first, second, kind) -> list of RowChange: every row image of a rows event."},
    {"configure", rowsfast_configure, METH_VARARGS,
     "configure(absent, MysqlDate, MysqlTime, MysqlDateTime, MysqlTimestamp, RowChange, Decimal, error_hook)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "mariabinlog.codec._rowsfast",
    .m_doc = "Compiled row-image decoder behind mariabinlog.codec.rows (same values, same errors).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__rowsfast(void)
{
    if (PyType_Ready(&ImageType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&ImageType);
    if (PyModule_AddObject(m, "Image", (PyObject *)&ImageType) < 0 ||
        PyModule_AddIntConstant(m, "PLAN_VERSION", PLAN_VERSION) < 0) {
        Py_DECREF(&ImageType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
