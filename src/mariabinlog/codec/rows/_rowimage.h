/* Row images in C: what the compiled decoder and the compiled Arrow builder both read.
 *
 * Included by codec/rows/_rowsfast.c (the codec: row images to Python values) and by
 * spark/_arrowfast.c (the Spark rows view: row images to Arrow map buffers).  Holds the
 * opcodes of the image programs that codec/rows/packed.py compiles, the Column and Image
 * structs (the Image type itself, its construction and checks, is _rowsfast's), the value
 * classes and error hook each module is configured with, and the reading primitives: fixed
 * and variable-size values as the pure decoder builds them (fixed_value, decimal_value,
 * text_value), the error hook (raise_at), the kind of a rows event (parse_kind).
 * Everything is static: each includer gets its own copy, so the two modules share no state.
 */
#ifndef MARIABINLOG_ROWIMAGE_H
#define MARIABINLOG_ROWIMAGE_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_decimal.h"

/* Bump together with rows.packed.FAST_PLAN_VERSION whenever opcodes, arguments or the structs below
 * change: both modules export it, and a stale build of either is refused (codec/native.py). */
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

/* Configured once per module (each includer has its own copies): by codec/rows/__init__.py for
 * _rowsfast, by spark/read.py for _arrowfast (the codec's classes, from rows.compiled_images()). */
static PyObject *g_absent, *g_date, *g_time, *g_datetime, *g_timestamp, *g_decimal, *g_error;
/* The codec's Image type: _rowsfast's own, or the one _arrowfast was configured with. */
static PyTypeObject *g_image_type;

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

/* n (<= 8) bytes little-endian; 1, 2 and 4 bytes in one step. */
static inline uint64_t
read_le(const unsigned char *p, Py_ssize_t n)
{
    switch (n) {
    case 1:
        return p[0];
    case 2:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8;
    case 4:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
    default: {
        uint64_t v = 0;
        for (Py_ssize_t i = n - 1; i >= 0; i--) {
            v = v << 8 | p[i];
        }
        return v;
    }
    }
}

/* n (<= 8) bytes big-endian. */
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

/* Packed DECIMAL(precision, scale) -> Decimal(text), as rows.packed._decimal_codec's conv. */
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

/* ------------------------------------------------------------------ errors */

/* Raise through the rows package's hook (_fast_error): the error of the image of `reader` at `image_pos`, failing at `offset`. */
static void
raise_at(PyObject *data, PyObject *reader, Py_ssize_t image_pos, Py_ssize_t offset)
{
    PyObject *r = PyObject_CallFunction(g_error, "OOnn", reader, data, image_pos, offset);
    if (r != NULL) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_SystemError, "the row decoder's error hook returned instead of raising");
    }
}

/* The mode of a rows event kind: 0 insert, 1 update (*second: its after-image Image), 2 delete; -1 error. */
static int
parse_kind(PyObject *kind, PyObject *after_image, const Image **second)
{
    if (PyUnicode_CompareWithASCIIString(kind, "insert") == 0) {
        return 0;
    }
    if (PyUnicode_CompareWithASCIIString(kind, "delete") == 0) {
        return 2;
    }
    if (PyUnicode_CompareWithASCIIString(kind, "update") == 0) {
        if (!PyObject_TypeCheck(after_image, g_image_type)) {
            PyErr_SetString(PyExc_TypeError, "an update needs the after-image Image");
            return -1;
        }
        *second = (const Image *)after_image;
        return 1;
    }
    PyErr_SetString(PyExc_ValueError, "kind must be 'insert', 'update' or 'delete'");
    return -1;
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

/* Check and keep the value classes and the error hook a module is configured with. */
static int
set_values(PyObject *absent, PyObject *date, PyObject *time, PyObject *datetime, PyObject *timestamp,
           PyObject *decimal, PyObject *error)
{
    if (check_tuple_class(date, "MysqlDate") < 0 || check_tuple_class(time, "MysqlTime") < 0
        || check_tuple_class(datetime, "MysqlDateTime") < 0 || check_tuple_class(timestamp, "MysqlTimestamp") < 0) {
        return -1;
    }
    if (!PyCallable_Check(decimal) || !PyCallable_Check(error)) {
        PyErr_SetString(PyExc_TypeError, "Decimal and the error hook must be callable");
        return -1;
    }
    PyObject **slots[7] = {&g_absent, &g_date, &g_time, &g_datetime, &g_timestamp, &g_decimal, &g_error};
    PyObject *values[7] = {absent, date, time, datetime, timestamp, decimal, error};
    for (int i = 0; i < 7; i++) {
        Py_INCREF(values[i]);
        Py_XSETREF(*slots[i], values[i]);
    }
    return 0;
}

#endif /* MARIABINLOG_ROWIMAGE_H */
