/* Compiled fast path of mariabinlog.codec.rows: decode a rows event's row images.
 *
 * A small interpreter.  Python (codec/rows/__init__.py, from the columns of
 * codec/rows/packed.py) compiles, once per table map and column
 * bitmap, an image program: one opcode entry per present column (what to read,
 * its size and parameters).  This module walks the program over every row
 * image of ``rows_data``: NULL bitmap, then each present non-NULL value, and
 * builds exactly the values the pure-Python decoder builds (ints, floats,
 * Decimal, bytes/str, the Mysql* NamedTuples, None, ABSENT).
 *
 * Column-type knowledge (which type reads how, charsets, signedness) stays in
 * codec/rows/packed.py; values that this module does not build natively go through a
 * Python conversion function given in the program.  Errors: every read is
 * bounds-checked; on bad data this module computes the offset of the failing
 * read and calls the rows package's error hook, which runs the Python plan of that one
 * image to raise the pure decoder's DecodeError (class, offset and message;
 * the hook checks that the offsets agree).
 *
 * This module owns the Image type (programs built and checked) and decoding to Python
 * values.  The opcodes, the Column/Image structs and the value-reading primitives are in
 * _rowimage.h, which spark/_arrowfast.c (the Spark rows view's Arrow builder) includes too
 * to read the same Image programs; rendering and Arrow buffers are Spark's, not here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_rowimage.h"

/* The class of the rows decode() returns (configured; _arrowfast builds no RowChange). */
static PyObject *g_rowchange;

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
    .tp_name = "mariabinlog.codec.rows._rowsfast.Image",
    .tp_basicsize = sizeof(Image),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Image(width, program, reader): the compiled reader of images with one column bitmap.",
    .tp_new = Image_new,
    .tp_dealloc = (destructor)Image_dealloc,
    .tp_traverse = (traverseproc)Image_traverse,
    .tp_clear = (inquiry)Image_clear,
    .tp_getset = Image_getset,
};

/* ------------------------------------------------------------------ decode */

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
    int mode = parse_kind(kind, args[2], &second);  /* 0 insert, 1 update, 2 delete */
    if (mode < 0) {
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

/* configure(absent, MysqlDate, MysqlTime, MysqlDateTime, MysqlTimestamp, RowChange, Decimal, error_hook) */
static PyObject *
rowsfast_configure(PyObject *module, PyObject *args)
{
    PyObject *absent, *date, *time, *datetime, *timestamp, *rowchange, *decimal, *error;
    if (!PyArg_ParseTuple(args, "OOOOOOOO:configure", &absent, &date, &time, &datetime, &timestamp, &rowchange,
                          &decimal, &error)) {
        return NULL;
    }
    if (check_tuple_class(rowchange, "RowChange") < 0
        || set_values(absent, date, time, datetime, timestamp, decimal, error) < 0) {
        return NULL;
    }
    Py_INCREF(rowchange);
    Py_XSETREF(g_rowchange, rowchange);
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
    .m_name = "mariabinlog.codec.rows._rowsfast",
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
    g_image_type = &ImageType;
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
