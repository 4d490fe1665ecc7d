/* The compiled event path: framing, CRC32, GTID and group assembly in one pass.
 *
 * mariabinlog.codec.framing is the pure-Python twin with the same API and results (one test
 * suite runs both; MARIABINLOG_PURE_PYTHON=1 forces the pure one).  A Scanner walks legacy
 * events (a file's bytes) or a dump stream's event packets, checks each event's CRC32 footer,
 * and cuts them into event groups by the codec's one rule (codec/groups.py ends_group): one
 * Python object per group, none per event.  Anything it does not handle itself (a control
 * event, a damaged event, a packet that is not an event, a group cut off) stops the scan at
 * that event, so the caller's slow path deals with it exactly as before.
 * encode_dump() is the way back: a group's events as dump-stream packets with positions and
 * CRC32 footers, for the binlog server.  For the `.ibb` readers and the archive: a page's
 * one-chunk records in one call (page_records), a stored COMMIT record's events as a group
 * (stored_events), and a received group as the engine stores it (stored_group).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_event.h"

/* Bump with FRAMEFAST_VERSION in codec/native.py whenever the API or the results change. */
#define FAST_VERSION 6

enum {
    START_EVENT_V3 = 1, QUERY_EVENT = 2, STOP_EVENT = 3, ROTATE_EVENT = 4, FORMAT_DESCRIPTION_EVENT = 15,
    XID_EVENT = 16, HEARTBEAT_LOG_EVENT = 27, XA_PREPARE_LOG_EVENT = 38, ANNOTATE_ROWS_EVENT = 160,
    BINLOG_CHECKPOINT_EVENT = 161, GTID_EVENT = 162, GTID_LIST_EVENT = 163, START_ENCRYPTION_EVENT = 164,
    QUERY_COMPRESSED_EVENT = 165,
};
#define FL_STANDALONE 0x01
#define FL_COMPLETED_XA 0x80
#define FL_GROUP_COMMIT_ID 0x02
#define FL_PREPARED_XA 0x40
#define GTID_BODY_MIN 19
#define HEADER_LEN 19
#define GTID_BODY_LEN 13
#define MAX_PAYLOAD 0xFFFFFF

/* Why a scan returned (framing.py has the same names). */
enum { SCAN_END = 0, SCAN_MORE = 1, SCAN_EVENT = 2, SCAN_CUT = 3, SCAN_LIMIT = 4 };

static PyObject *framefast_crc32(PyObject *Py_UNUSED(self), PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t c = crc32_of(view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

/* ------------------------------------------------------------------------------- Scanner */

typedef struct {
    PyObject_HEAD
    int checksum;          /* events end with a CRC32 footer */
    int verify;            /* check it */
    int query_header_len;  /* Query post-header length (13 for binlog v4) */
    int open;              /* a group is open */
    int standalone, xa_complete;
    uint64_t seq;
    uint32_t domain, server, timestamp, end_log_pos;
    unsigned flags2;
    unsigned char *buf;    /* the open group's events as stored: no footers, log_pos 0 */
    Py_ssize_t len, cap;
    Py_ssize_t *offs;      /* their start offsets */
    Py_ssize_t noffs, offcap;
} Scanner;

static int Scanner_init(Scanner *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"checksum", "verify", "query_header_len", NULL};
    int checksum = 0, verify = 1, qhl = 13;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|ppi", kwlist, &checksum, &verify, &qhl)) return -1;
    if (qhl < 13) {
        PyErr_SetString(PyExc_ValueError, "query_header_len must be at least 13 (binlog v4)");
        return -1;
    }
    self->checksum = checksum;
    self->verify = verify;
    self->query_header_len = qhl;
    self->open = 0;
    self->len = 0;
    self->noffs = 0;
    return 0;
}

static void Scanner_dealloc(Scanner *self) {
    PyMem_Free(self->buf);
    PyMem_Free(self->offs);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Append one event (``n`` bytes without footer) to the open group: length fixed, log_pos 0. */
static int append_event(Scanner *s, const unsigned char *ev, Py_ssize_t n) {
    if (s->len + n > s->cap) {
        Py_ssize_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n) cap *= 2;
        unsigned char *grown = PyMem_Realloc(s->buf, cap);
        if (!grown) { PyErr_NoMemory(); return -1; }
        s->buf = grown;
        s->cap = cap;
    }
    if (s->noffs + 1 > s->offcap) {
        Py_ssize_t cap = s->offcap ? s->offcap * 2 : 16;
        Py_ssize_t *grown = PyMem_Realloc(s->offs, cap * sizeof(Py_ssize_t));
        if (!grown) { PyErr_NoMemory(); return -1; }
        s->offs = grown;
        s->offcap = cap;
    }
    unsigned char *dst = s->buf + s->len;
    memcpy(dst, ev, n);
    put32(dst + 9, (uint32_t)n);
    memset(dst + 13, 0, 4);
    s->offs[s->noffs++] = s->len;
    s->len += n;
    return 0;
}

/* The finished group: (data, offsets, domain, server, seq, flags2, timestamp, end_log_pos). */
static PyObject *take_group(Scanner *s) {
    PyObject *data = PyBytes_FromStringAndSize((const char *)s->buf, s->len);
    PyObject *offsets = PyTuple_New(s->noffs + 1);
    if (!data || !offsets) goto fail;
    for (Py_ssize_t i = 0; i <= s->noffs; i++) {
        PyObject *v = PyLong_FromSsize_t(i < s->noffs ? s->offs[i] : s->len);
        if (!v) goto fail;
        PyTuple_SET_ITEM(offsets, i, v);
    }
    PyObject *group = Py_BuildValue("(NNkkKIkk)", data, offsets, (unsigned long)s->domain, (unsigned long)s->server,
                                    (unsigned long long)s->seq, s->flags2, (unsigned long)s->timestamp,
                                    (unsigned long)s->end_log_pos);
    s->open = 0;
    s->len = 0;
    s->noffs = 0;
    return group;
fail:
    Py_XDECREF(data);
    Py_XDECREF(offsets);
    return NULL;
}

static int upper_is(const unsigned char *p, const char *word, int n) {
    for (int i = 0; i < n; i++) {
        unsigned char c = p[i];
        if (c >= 'a' && c <= 'z') c -= 32;
        if (c != (unsigned char)word[i]) return 0;
    }
    return 1;
}

/* One framed event of ``n`` bytes (footer included when the stream has one): 0 when taken
 * (a finished group appended to ``groups``), a SCAN_* code to leave it to the caller, -1 on error. */
static int take_event(Scanner *s, const unsigned char *ev, Py_ssize_t n, PyObject *groups) {
    if (n < HEADER_LEN || le32(ev + 9) != (uint32_t)n) return SCAN_EVENT;
    Py_ssize_t end = n;
    if (s->checksum) {
        if (n < HEADER_LEN + 4) return SCAN_EVENT;
        end = n - 4;
        if (s->verify && crc32_of(ev, end) != le32(ev + end)) return SCAN_EVENT;
    }
    unsigned code = ev[4];
    switch (code) {
    case START_EVENT_V3: case STOP_EVENT: case ROTATE_EVENT: case FORMAT_DESCRIPTION_EVENT:
    case HEARTBEAT_LOG_EVENT: case BINLOG_CHECKPOINT_EVENT: case GTID_LIST_EVENT: case START_ENCRYPTION_EVENT:
        return SCAN_EVENT;
    }
    if (code == GTID_EVENT) {
        if (s->open) {
            /* a GTID event that does not end after the open group's last event is a repeated
               one, not a new group after a crash: the slow path names it */
            uint32_t gtid_pos = le32(ev + 13);
            return gtid_pos && s->end_log_pos && gtid_pos <= s->end_log_pos ? SCAN_EVENT : SCAN_CUT;
        }
        if (end < HEADER_LEN + GTID_BODY_LEN) return SCAN_EVENT;
        s->seq = le64(ev + 19);
        s->domain = le32(ev + 27);
        s->flags2 = ev[31];
        s->server = le32(ev + 5);
        s->timestamp = le32(ev);
        s->standalone = (s->flags2 & FL_STANDALONE) != 0;
        s->xa_complete = (s->flags2 & FL_COMPLETED_XA) != 0;
        s->len = 0;
        s->noffs = 0;
        if (append_event(s, ev, end) < 0) return -1;
        s->end_log_pos = le32(ev + 13);
        s->open = 1;
        return 0;
    }
    if (!s->open) return SCAN_EVENT;
    /* An event that does not end after the previous one of its group (a repeated or
       reordered event): the slow path names it. */
    uint32_t log_pos = le32(ev + 13);
    if (log_pos && s->end_log_pos && log_pos <= s->end_log_pos) return SCAN_EVENT;
    int ends = 0;
    if (code == XID_EVENT || code == XA_PREPARE_LOG_EVENT) {
        ends = 1;
    } else if (code == QUERY_EVENT || code == QUERY_COMPRESSED_EVENT) {
        if (s->standalone) {
            ends = 1;
        } else {
            if (code == QUERY_COMPRESSED_EVENT) return SCAN_EVENT; /* the slow path decompresses it */
            Py_ssize_t post = HEADER_LEN + s->query_header_len;
            if (end < post) return SCAN_EVENT;
            Py_ssize_t db_len = ev[HEADER_LEN + 8];
            Py_ssize_t q = post + (Py_ssize_t)le16(ev + HEADER_LEN + 11) + db_len;
            if (q >= end || ev[q] != 0) return SCAN_EVENT;
            q++;
            const unsigned char *text = ev + q;
            Py_ssize_t len = end - q;
            ends = (len == 6 && memcmp(text, "COMMIT", 6) == 0) || (len == 8 && memcmp(text, "ROLLBACK", 8) == 0) ||
                   (s->xa_complete && len >= 9 && (upper_is(text, "XA COMMIT", 9) || upper_is(text, "XA ROLLBA", 9)));
        }
    }
    if (append_event(s, ev, end) < 0) return -1;
    s->end_log_pos = le32(ev + 13);
    if (!ends) return 0;
    PyObject *group = take_group(s);
    if (!group) return -1;
    int rc = PyList_Append(groups, group);
    Py_DECREF(group);
    return rc < 0 ? -1 : 0;
}

/* scan_events(buf, pos, end, limit) -> (groups, pos, stop): legacy events one after another. */
static PyObject *Scanner_scan_events(Scanner *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t pos, end, limit = PY_SSIZE_T_MAX;
    if (!PyArg_ParseTuple(args, "Onn|n", &obj, &pos, &end, &limit)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *groups = PyList_New(0);
    if (!groups) { PyBuffer_Release(&view); return NULL; }
    if (end > view.len) end = view.len;
    const unsigned char *buf = view.buf;
    int stop = SCAN_END;
    while (pos < end) {
        if (PyList_GET_SIZE(groups) >= limit) { stop = SCAN_LIMIT; break; }
        if (end - pos < HEADER_LEN) { stop = SCAN_MORE; break; }
        uint32_t length = le32(buf + pos + 9);
        if (length < HEADER_LEN) { stop = SCAN_EVENT; break; }
        if ((Py_ssize_t)length > end - pos) { stop = SCAN_MORE; break; }
        int rc = take_event(self, buf + pos, length, groups);
        if (rc < 0) { Py_DECREF(groups); PyBuffer_Release(&view); return NULL; }
        if (rc) { stop = rc; break; }
        pos += length;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nni)", groups, pos, stop);
}

/* scan_packets(buf, pos, end, seq, limit) -> (groups, pos, seq, stop): the event packets of a
 * dump stream (``00`` + event each).  ``seq`` is the sequence id the next packet must carry, -1
 * to take any; the result's ``seq`` is the id after the last packet taken (-1 if none). */
static PyObject *Scanner_scan_packets(Scanner *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t pos, end, limit = PY_SSIZE_T_MAX;
    int seq;
    if (!PyArg_ParseTuple(args, "Onni|n", &obj, &pos, &end, &seq, &limit)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *groups = PyList_New(0);
    if (!groups) { PyBuffer_Release(&view); return NULL; }
    if (end > view.len) end = view.len;
    const unsigned char *buf = view.buf;
    int stop = SCAN_END, next = -1;
    while (pos < end) {
        if (PyList_GET_SIZE(groups) >= limit) { stop = SCAN_LIMIT; break; }
        if (end - pos < 4) { stop = SCAN_MORE; break; }
        uint32_t length = le24(buf + pos);
        int packet_seq = buf[pos + 3];
        if (length >= MAX_PAYLOAD || length < 1 + HEADER_LEN) { stop = SCAN_EVENT; break; }
        if ((Py_ssize_t)length + 4 > end - pos) { stop = SCAN_MORE; break; }
        if ((seq >= 0 && packet_seq != seq) || buf[pos + 4] != 0x00) { stop = SCAN_EVENT; break; }
        int rc = take_event(self, buf + pos + 5, (Py_ssize_t)length - 1, groups);
        if (rc < 0) { Py_DECREF(groups); PyBuffer_Release(&view); return NULL; }
        if (rc) { stop = rc; break; }
        pos += 4 + length;
        next = (packet_seq + 1) & 0xFF;
        if (seq >= 0) seq = next;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nnii)", groups, pos, next, stop);
}

/* discard() -> the open group's events so far, as a group tuple, or None: the scan drops it (a
 * group cut off), or hands it to the caller's slow path to go on with. */
static PyObject *Scanner_discard(Scanner *self, PyObject *Py_UNUSED(unused)) {
    if (!self->open) Py_RETURN_NONE;
    return take_group(self);
}

static PyObject *Scanner_get_open(Scanner *self, void *Py_UNUSED(closure)) { return PyBool_FromLong(self->open); }

static PyObject *Scanner_get_checksum(Scanner *self, void *Py_UNUSED(closure)) { return PyBool_FromLong(self->checksum); }

static int Scanner_set_checksum(Scanner *self, PyObject *value, void *Py_UNUSED(closure)) {
    if (value == NULL) { PyErr_SetString(PyExc_AttributeError, "cannot delete checksum"); return -1; }
    int on = PyObject_IsTrue(value);
    if (on < 0) return -1;
    self->checksum = on;
    return 0;
}

static PyMethodDef Scanner_methods[] = {
    {"scan_events", (PyCFunction)Scanner_scan_events, METH_VARARGS,
     "scan_events(buf, pos, end, limit=...) -> (groups, pos, stop): groups of legacy events."},
    {"scan_packets", (PyCFunction)Scanner_scan_packets, METH_VARARGS,
     "scan_packets(buf, pos, end, seq, limit=...) -> (groups, pos, seq, stop): groups of dump packets."},
    {"discard", (PyCFunction)Scanner_discard, METH_NOARGS, "Drop the open group; its events so far (a group tuple) or None."},
    {NULL},
};

static PyGetSetDef Scanner_getset[] = {
    {"open", (getter)Scanner_get_open, NULL, "True while a group is open.", NULL},
    {"checksum", (getter)Scanner_get_checksum, (setter)Scanner_set_checksum, "Events end with CRC32.", NULL},
    {NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mariabinlog.codec._framefast.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Cuts legacy events or dump packets into event groups (see framing.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
};

/* ------------------------------------------------------------------------------- encode_dump */

/* encode_dump(data, offsets, log_pos, checksum, seq, skip_annotate) -> (bytes, log_pos, seq):
 * the group's events as dump packets (``00`` + event), each event's log_pos the end of the
 * event in the virtual file that starts counting at ``log_pos`` (0: keep 0), with a CRC32
 * footer when ``checksum``; Annotate_rows events left out when ``skip_annotate``. */
static PyObject *framefast_encode_dump(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *offsets;
    unsigned long long log_pos;
    int checksum, seq, skip_annotate;
    if (!PyArg_ParseTuple(args, "OO!Kpip", &obj, &PyTuple_Type, &offsets, &log_pos, &checksum, &seq, &skip_annotate))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t count = PyTuple_GET_SIZE(offsets) - 1, size = 0;
    int foot = checksum ? 4 : 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t a = PyLong_AsSsize_t(PyTuple_GET_ITEM(offsets, i));
        Py_ssize_t b = PyLong_AsSsize_t(PyTuple_GET_ITEM(offsets, i + 1));
        if (PyErr_Occurred()) goto fail;
        if (a < 0 || b > view.len || b - a < HEADER_LEN) {
            PyErr_SetString(PyExc_ValueError, "offsets do not frame the data");
            goto fail;
        }
        if (b - a + 1 + foot >= MAX_PAYLOAD) {
            PyErr_SetString(PyExc_ValueError, "an event too large for one packet");
            goto fail;
        }
        size += 4 + 1 + (b - a) + foot;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (!out) goto fail;
    unsigned char *dst = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t used = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t a = PyLong_AsSsize_t(PyTuple_GET_ITEM(offsets, i));
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(offsets, i + 1)) - a;
        const unsigned char *ev = data + a;
        if (skip_annotate && ev[4] == ANNOTATE_ROWS_EVENT) continue;
        Py_ssize_t total = n + foot;
        unsigned char *p = dst + used;
        put32(p, (uint32_t)(total + 1));
        p[3] = (unsigned char)seq;
        seq = (seq + 1) & 0xFF;
        p[4] = 0;
        memcpy(p + 5, ev, n);
        put32(p + 5 + 9, (uint32_t)total);
        if (log_pos) log_pos += total;
        put32(p + 5 + 13, (uint32_t)log_pos);
        if (foot) put32(p + 5 + n, crc32_of(p + 5, n));
        used += 5 + total;
    }
    PyBuffer_Release(&view);
    if (used != size && _PyBytes_Resize(&out, used) < 0) return NULL;
    return Py_BuildValue("(NKi)", out, log_pos, seq);
fail:
    PyBuffer_Release(&view);
    return NULL;
}

/* The start offsets of the events framing d[0:n] and its end, as a tuple; None (a new
 * reference) when the events do not frame it; NULL on a Python error. */
static PyObject *offsets_tuple(const unsigned char *d, Py_ssize_t n) {
    Py_ssize_t count = 0, pos = 0;
    while (pos < n) {
        if (n - pos < HEADER_LEN) break;
        uint32_t length = le32(d + pos + 9);
        if (length < HEADER_LEN || (Py_ssize_t)length > n - pos) break;
        pos += length;
        count++;
    }
    if (pos != n) Py_RETURN_NONE;
    PyObject *out = PyTuple_New(count + 1);
    if (!out) return NULL;
    pos = 0;
    for (Py_ssize_t i = 0; i <= count; i++) {
        PyObject *v = PyLong_FromSsize_t(pos);
        if (!v) { Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(out, i, v);
        if (i < count) pos += le32(d + pos + 9);
    }
    return out;
}

/* event_offsets(data) -> the start offsets of the events of a stored group and its end, or None
 * when the events do not frame the data (the pure split_events() then names the error). */
static PyObject *framefast_event_offsets(PyObject *Py_UNUSED(self), PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = offsets_tuple(view.buf, view.len);
    PyBuffer_Release(&view);
    return out;
}

/* stored_group(data, length, prefix) -> prefix + the group's events with the GTID event's
 * header flags cleared, when that GTID event (its first ``length`` bytes) has the fixed layout
 * a writer that makes its own GTID events writes; else None (transaction.py's
 * py_stored_group, the pure twin, says which). */
static PyObject *framefast_stored_group(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view, prefix;
    Py_ssize_t length;
    if (!PyArg_ParseTuple(args, "y*ny*", &view, &length, &prefix)) return NULL;
    const unsigned char *d = view.buf;
    PyObject *out = NULL;
    if (length < HEADER_LEN + GTID_BODY_MIN || length > view.len || d[4] != GTID_EVENT) goto none;
    unsigned flags2 = d[31];
    if (flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA)) goto none;
    Py_ssize_t used = GTID_BODY_LEN + ((flags2 & FL_GROUP_COMMIT_ID) ? 8 : 0);
    if (length != HEADER_LEN + (used > GTID_BODY_MIN ? used : GTID_BODY_MIN)) goto none;
    for (Py_ssize_t i = HEADER_LEN + used; i < length; i++)
        if (d[i]) goto none;
    out = PyBytes_FromStringAndSize(NULL, prefix.len + view.len);
    if (out) {
        unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
        memcpy(o, prefix.buf, prefix.len);
        memcpy(o + prefix.len, d, view.len);
        o[prefix.len + 17] = o[prefix.len + 18] = 0; /* header flags: the writer's own */
    }
    PyBuffer_Release(&view);
    PyBuffer_Release(&prefix);
    return out;
none:
    PyBuffer_Release(&view);
    PyBuffer_Release(&prefix);
    Py_RETURN_NONE;
}

/* statement_events(data, offsets) -> the indices of a group's Query events after its first event,
 * except those whose text is BEGIN, COMMIT or ROLLBACK (the statements a schema history looks at;
 * groups.py's py_statement_events is the pure twin). */
static PyObject *framefast_statement_events(PyObject *Py_UNUSED(self), PyObject *args) {
    static const struct { const char *text; Py_ssize_t len; } tails[] = {
        {"\0BEGIN", 6}, {"\0COMMIT", 7}, {"\0ROLLBACK", 9}};
    PyObject *offsets;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*O!", &view, &PyTuple_Type, &offsets)) return NULL;
    const unsigned char *d = view.buf;
    Py_ssize_t count = PyTuple_GET_SIZE(offsets);
    PyObject *found = PyList_New(0);
    if (!found) goto fail;
    for (Py_ssize_t i = 1; i + 1 < count; i++) {
        Py_ssize_t a = PyLong_AsSsize_t(PyTuple_GET_ITEM(offsets, i));
        Py_ssize_t b = PyLong_AsSsize_t(PyTuple_GET_ITEM(offsets, i + 1));
        if (PyErr_Occurred()) goto fail;
        if (a < 0 || b > view.len || b - a < 5) {
            PyErr_SetString(PyExc_ValueError, "offsets do not frame the data");
            goto fail;
        }
        if (d[a + 4] != QUERY_EVENT && d[a + 4] != QUERY_COMPRESSED_EVENT) continue;
        int tail = 0;
        for (size_t t = 0; t < sizeof tails / sizeof tails[0] && !tail; t++)
            tail = b - a >= tails[t].len && !memcmp(d + b - tails[t].len, tails[t].text, tails[t].len);
        if (tail) continue;
        PyObject *index = PyLong_FromSsize_t(i);
        if (!index || PyList_Append(found, index) < 0) { Py_XDECREF(index); goto fail; }
        Py_DECREF(index);
    }
    PyBuffer_Release(&view);
    PyObject *out = PyList_AsTuple(found);
    Py_DECREF(found);
    return out;
fail:
    Py_XDECREF(found);
    PyBuffer_Release(&view);
    return NULL;
}

/* stored_events(buf, pos) -> the events of buf[pos:] (a stored group: no footers) as a Scanner
 * group tuple (data, offsets, domain, server, seq, flags2, timestamp, 0), when they frame it
 * and the first is a GTID event long enough for its head; else None (framing.py's
 * py_stored_events is the pure twin). */
static PyObject *framefast_stored_events(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "y*n", &view, &pos)) return NULL;
    if (pos < 0 || pos > view.len) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    const unsigned char *d = (const unsigned char *)view.buf + pos;
    Py_ssize_t n = view.len - pos;
    PyObject *data = NULL, *offsets = offsets_tuple(d, n);
    if (!offsets) goto fail;
    if (offsets == Py_None || PyTuple_GET_SIZE(offsets) < 2 || d[4] != GTID_EVENT ||
        le32(d + 9) < HEADER_LEN + GTID_BODY_LEN) {
        Py_DECREF(offsets);
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    data = PyBytes_FromStringAndSize((const char *)d, n);
    if (!data) goto fail;
    PyObject *group = Py_BuildValue("(NNkkKIkk)", data, offsets, (unsigned long)le32(d + 27), (unsigned long)le32(d + 5),
                                    (unsigned long long)le64(d + 19), (unsigned)d[31], (unsigned long)le32(d), 0UL);
    PyBuffer_Release(&view);
    return group;
fail:
    Py_XDECREF(data);
    Py_XDECREF(offsets);
    PyBuffer_Release(&view);
    return NULL;
}

/* page_records(page, offset) -> (records, stop): the `.ibb` records from ``offset`` of a page
 * that are each one whole chunk, as (type, payload, chunk offset, offset after it), and the
 * offset of the first chunk that is not one (ibb/page.py's py_page_records is the pure twin). */
#define IBB_PAGE_SIZE 16384
#define IBB_READER_PAGE_END (IBB_PAGE_SIZE - 7)
#define IBB_FLAG_CONT 0x80
#define IBB_FLAG_LAST 0x40
#define IBB_TYPE_MASK 0x3F
static PyObject *framefast_page_records(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    Py_ssize_t offset;
    if (!PyArg_ParseTuple(args, "y*n", &view, &offset)) return NULL;
    const unsigned char *page = view.buf;
    PyObject *found = PyList_New(0);
    if (!found) goto fail;
    if (offset < 0 || view.len < IBB_PAGE_SIZE) {
        PyErr_SetString(PyExc_ValueError, "not a page, or an offset outside it");
        goto fail;
    }
    while (offset < IBB_READER_PAGE_END) {
        unsigned flags = page[offset];
        if (flags & IBB_FLAG_CONT || !(flags & IBB_FLAG_LAST) || !(flags & IBB_TYPE_MASK)) break;
        Py_ssize_t length = le16(page + offset + 1);
        if (length + 3 + 4 > IBB_PAGE_SIZE - offset) break;
        Py_ssize_t end = offset + 3 + length;
        PyObject *item = Py_BuildValue("(iy#nn)", (int)(flags & IBB_TYPE_MASK), (const char *)page + offset + 3, length,
                                       offset, end);
        if (!item || PyList_Append(found, item) < 0) { Py_XDECREF(item); goto fail; }
        Py_DECREF(item);
        offset = end;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nn)", found, offset);
fail:
    Py_XDECREF(found);
    PyBuffer_Release(&view);
    return NULL;
}

/* rows_layout(buf, pos, post, update, end) -> (table_id, flags, flags_at, extra_at, width,
 * columns, columns_after, rows_at) of the rows event body from pos to end, for the ordinary
 * case (_event.h's ev_rows); None for anything else, which events/rows.py's py_rows_layout,
 * the pure twin, reads or reports. */
static PyObject *framefast_rows_layout(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, end;
    int post, update;
    if (!PyArg_ParseTuple(args, "y*nipn", &view, &pos, &post, &update, &end)) return NULL;
    EvRows r;
    if (pos < 0 || end > view.len || end < pos || post < 0 ||
        ev_rows((const unsigned char *)view.buf + pos, end - pos, post, update, &r)) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    PyObject *after;
    if (r.cols_ai != NULL)
        after = PyBytes_FromStringAndSize((const char *)r.cols_ai, r.nbytes);
    else {
        after = Py_None;
        Py_INCREF(after);
    }
    PyObject *out = after == NULL ? NULL : Py_BuildValue(
        "(KInnny#Nn)", (unsigned long long)r.table_id, r.flags, pos + (post == 6 ? 4 : 6),
        post == 10 ? pos + 8 : (Py_ssize_t)-1, r.width, (const char *)r.cols, r.nbytes, after,
        (Py_ssize_t)(r.rows_at + pos));
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"crc32", framefast_crc32, METH_O, "zlib's CRC-32 of a buffer."},
    {"stored_group", framefast_stored_group, METH_VARARGS,
     "stored_group(data, length, prefix) -> prefix + the events as a writer of its own GTID events stores them, or None."},
    {"statement_events", framefast_statement_events, METH_VARARGS,
     "statement_events(data, offsets) -> indices of a group's Query events that are not BEGIN/COMMIT/ROLLBACK."},
    {"stored_events", framefast_stored_events, METH_VARARGS,
     "stored_events(buf, pos) -> a stored group's events as a Scanner group tuple, or None."},
    {"page_records", framefast_page_records, METH_VARARGS,
     "page_records(page, offset) -> (records, stop): a page's one-chunk .ibb records from offset."},
    {"rows_layout", framefast_rows_layout, METH_VARARGS,
     "rows_layout(buf, pos, post, update, end) -> a rows event's layout tuple, or None (the pure twin's case)."},
    {"event_offsets", framefast_event_offsets, METH_O, "Start offsets of a stored group's events and its end, or None."},
    {"encode_dump", framefast_encode_dump, METH_VARARGS,
     "encode_dump(data, offsets, log_pos, checksum, seq, skip_annotate) -> (packets, log_pos, seq)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_framefast", "The compiled event path.", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__framefast(void) {
    crc_init();
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0 ||
        PyModule_AddIntConstant(m, "FAST_VERSION", FAST_VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
